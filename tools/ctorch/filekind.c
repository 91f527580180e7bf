/* The kind of a model file from its contents (zip entry names, a pickle's first byte, the
 * .npy magic): TorchScript archive, torch.save file, AOTInductor package or .npy array. Used by
 * inspect, run, bench and verify, so each reads a file with the one reader made for it. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *kind_name(int kind) {
  return kind == KIND_MODULE    ? "TorchScript archive"
         : kind == KIND_PICKLE  ? "torch.save file"
         : kind == KIND_PACKAGE ? "AOTInductor package"
         : kind == KIND_NPY     ? "NumPy .npy file"
                                : "unknown";
}

static uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  while (n--) v = (v << 8) | p[n];
  return v;
}

/* Whether a zip entry name has the path component `part` ("code") or ends in `tail`. */
static int has_component(const char *name, size_t n, const char *part) {
  size_t k = strlen(part), i;
  for (i = 0; i + k <= n; i++)
    if ((i == 0 || name[i - 1] == '/') && !memcmp(name + i, part, k) &&
        (i + k == n || name[i + k] == '/'))
      return 1;
  return 0;
}

/* The kind of the zip archive at f (size bytes) from its central directory's names:
 * KIND_PACKAGE (an "aotinductor" folder), KIND_MODULE (a "code" folder or constants.pkl),
 * KIND_PICKLE (data.pkl alone), 0 unreadable or none of these. */
static int zip_kind(FILE *f, long size) {
  unsigned char tail[65557], *e = NULL, z[56];
  long n = size < (long)sizeof tail ? size : (long)sizeof tail, i;
  uint64_t entries, cd_size, cd_off, k;
  unsigned char *cd, *p;
  int module = 0, pickle = 0, package = 0;
  if (fseek(f, size - n, SEEK_SET) || fread(tail, 1, (size_t)n, f) != (size_t)n) return 0;
  for (i = n - 22; i >= 0 && !e; i--)
    if (le(tail + i, 4) == 0x06054b50) e = tail + i;
  if (!e) return 0;
  entries = le(e + 10, 2), cd_size = le(e + 12, 4), cd_off = le(e + 16, 4);
  if ((entries == 0xffff || cd_size == 0xffffffffu || cd_off == 0xffffffffu) && e - tail >= 20 &&
      le(e - 20, 4) == 0x07064b50) { /* zip64: the locator points at the zip64 record */
    uint64_t at = le(e - 20 + 8, 8);
    if (at > (uint64_t)size - 56 || fseek(f, (long)at, SEEK_SET) || fread(z, 1, 56, f) != 56 ||
        le(z, 4) != 0x06064b50)
      return 0;
    entries = le(z + 32, 8), cd_size = le(z + 40, 8), cd_off = le(z + 48, 8);
  }
  if (cd_off > (uint64_t)size || cd_size > (uint64_t)size - cd_off || cd_size > (1u << 28))
    return 0;
  cd = malloc(cd_size ? (size_t)cd_size : 1);
  if (!cd) return 0;
  if (fseek(f, (long)cd_off, SEEK_SET) || fread(cd, 1, (size_t)cd_size, f) != (size_t)cd_size) {
    free(cd);
    return 0;
  }
  for (p = cd, k = 0; k < entries && p + 46 <= cd + cd_size && le(p, 4) == 0x02014b50; k++) {
    size_t name_len = (size_t)le(p + 28, 2), skip = 46 + name_len + le(p + 30, 2) + le(p + 32, 2);
    const char *name = (const char *)p + 46;
    if ((size_t)(cd + cd_size - p) < skip) break;
    if (has_component(name, name_len, "aotinductor")) package = 1;
    if (has_component(name, name_len, "code") || has_component(name, name_len, "constants.pkl"))
      module = 1;
    if (has_component(name, name_len, "data.pkl")) pickle = 1;
    p += skip;
  }
  free(cd);
  return package ? KIND_PACKAGE : module ? KIND_MODULE : pickle ? KIND_PICKLE : 0;
}

/* KIND_* of the file at path from its contents; 0 none of them; -1 unreadable (the
 * library reports why). A non-zip file is a legacy torch.save file when it starts as
 * a binary pickle does (0x80, the protocol opcode); a .npy file starts with \x93NUMPY. */
int file_kind(const char *path) {
  unsigned char head[6] = {0};
  size_t n;
  long size;
  int kind = 0;
  struct stat sb;
  FILE *f;
  if (stat(path, &sb) || !S_ISREG(sb.st_mode)) return -1; /* opening a FIFO would block */
  if (!(f = fopen(path, "rb"))) return -1;
  n = fread(head, 1, sizeof head, f);
  if (n >= 4 && !memcmp(head, "PK\003\004", 4)) {
    if (!fseek(f, 0, SEEK_END) && (size = ftell(f)) > 0) kind = zip_kind(f, size);
  } else if (n == 6 && !memcmp(head, "\x93NUMPY", 6)) {
    kind = KIND_NPY;
  } else if (n >= 2 && head[0] == 0x80) {
    kind = KIND_PICKLE;
  }
  fclose(f);
  return kind;
}
