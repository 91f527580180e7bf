/* `ctorch verify`: a file checked in a child process (ct_module_verify / ct_pickle_verify),
 * its kind read from its contents. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- the kind of a model file, from its contents ---- */

#define KIND_MODULE 'm'  /* TorchScript archive (torch.jit.save) */
#define KIND_PICKLE 'p'  /* torch.save file, zip or legacy */
#define KIND_PACKAGE 'k' /* AOTInductor package (.pt2) */

static uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  while (n--) v = (v << 8) | p[n];
  return v;
}

/* Whether a zip entry name has the path component `part` ("code") or ends in `tail`. */
static int has_component(const char *name, size_t n, const char *part) {
  size_t k = strlen(part), i;
  for (i = 0; i + k <= n; i++)
    if ((i == 0 || name[i - 1] == '/') && !memcmp(name + i, part, k) && (i + k == n || name[i + k] == '/'))
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
 * a binary pickle does (0x80, the protocol opcode). */
static int file_kind(const char *path) {
  unsigned char head[4] = {0};
  size_t n;
  long size;
  int kind = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  n = fread(head, 1, sizeof head, f);
  if (n == 4 && !memcmp(head, "PK\003\004", 4)) {
    if (!fseek(f, 0, SEEK_END) && (size = ftell(f)) > 0) kind = zip_kind(f, size);
  } else if (n >= 2 && head[0] == 0x80) {
    kind = KIND_PICKLE;
  }
  fclose(f);
  return kind;
}

static int verify_ok(const char *path, int kind) {
  printf("%s: ok: %s\n", path,
         kind == KIND_MODULE ? "TorchScript archive (loaded and inspected in a separate process)"
                             : "torch.save file (loaded in a separate process)");
  return 0;
}

/* Checks one file; 0 if it loads, else EXIT_ERROR with the library's message printed.
 * forced: KIND_MODULE or KIND_PICKLE (--module, --pickle), or 0: the kind the contents
 * say. One check per file: a file that crashes the check of its kind is never reported
 * as ok by another reader. */
static int verify_one(const char *path, int forced) {
  ct_status st;
  int kind = forced ? forced : file_kind(path);
  if (kind == KIND_PACKAGE || (!forced && kind <= 0 && is_package(path)))
    return fail(
        "%s: AOTInductor packages (.pt2) hold compiled native code that loading runs; "
        "no check can make an untrusted one safe (use --module or --pickle to check the "
        "file as another kind)",
        path);
  if (kind == 0)
    return fail("%s: not a TorchScript archive, a torch.save file or an AOTInductor package "
                "(use --module or --pickle to check it as one kind)",
                path);
  if (kind == -1) kind = KIND_MODULE; /* unreadable: the library says why */
  st = kind == KIND_MODULE ? ct_module_verify(path) : ct_pickle_verify(path);
  if (st != CT_OK) return fail_ct(st, path);
  return verify_ok(path, kind);
}

int cmd_verify(int argc, char **argv) {
  int i, kind = 0, rc = 0, nfiles = 0;
  long v;
  for (i = 0; i < argc; i++)
    if (is_help(argv[i])) {
      printf(
          "Usage: %s verify [--module | --pickle] [--timeout S] FILE...\n\n"
          "Checks untrusted model files without risking this process: each FILE is loaded\n"
          "(and a module inspected: methods, attributes, parameters, children, its code\n"
          "printed again) in a short-lived child process (ct_module_verify,\n"
          "ct_pickle_verify). A file that loads is reported as ok; a load error, a crash\n"
          "of the child or a timeout is reported with the library's message. The file is\n"
          "not kept: load it again afterwards.\n\n"
          "By default the kind of each FILE is read from its contents (a zip archive's\n"
          "entry names, a pickle's first byte) and only that kind's check runs:\n"
          "a TorchScript archive (torch.jit.save) or a torch.save file. AOTInductor\n"
          "packages (.pt2) are refused: loading one runs its compiled code.\n\n"
          "  --module                  check as a TorchScript archive only\n"
          "  --pickle                  check as a torch.save file only\n"
          "  --timeout S               kill a check after S seconds (default 120;\n"
          "                            sets CTORCH_VERIFY_TIMEOUT)\n\n"
          "Exit status: 0 every FILE is ok, 1 one or more failed, 2 bad usage.\n",
          prog);
      return 0;
    }
  for (i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--module") || !strcmp(a, "--pickle")) {
      int k = a[2] == 'm' ? KIND_MODULE : KIND_PICKLE;
      if (kind && kind != k)
        return usage_error("verify", "--module and --pickle exclude each other");
      kind = k;
    } else if (!strcmp(a, "--timeout")) {
      if (i + 1 >= argc) return usage_error("verify", "--timeout needs a value");
      if (!parse_long(argv[++i], 1, 86399, &v))
        return usage_error("verify", "bad timeout '%s'", argv[i]);
      setenv("CTORCH_VERIFY_TIMEOUT", argv[i], 1);
    } else if (a[0] == '-' && a[1]) {
      return usage_error("verify", "unknown option '%s'", a);
    } else {
      nfiles++;
    }
  }
  if (!nfiles) return usage_error("verify", "no file given");
  fflush(stdout); /* the checks fork: nothing buffered may be written twice */
  for (i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--timeout")) {
      i++;
      continue;
    }
    if (argv[i][0] == '-' && argv[i][1]) continue;
    if (verify_one(argv[i], kind)) rc = EXIT_ERROR;
    fflush(stdout);
  }
  return rc;
}
