/* Text, JSON and argument parsing helpers of the `ctorch` command. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c == '\n')
      fputs("\\n", f);
    else if (c == '\t')
      fputs("\\t", f);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

void shape_str(char *buf, size_t n, const ct_tensor *t) {
  int64_t d, nd = ct_tensor_ndim(t);
  const int64_t *s = ct_tensor_sizes(t);
  size_t used = (size_t)snprintf(buf, n, "[");
  for (d = 0; d < nd && used < n; d++)
    used += (size_t)snprintf(buf + used, n - used, "%s%lld", d ? ", " : "", (long long)s[d]);
  if (used < n) snprintf(buf + used, n - used, "]");
}

void json_shape(FILE *f, const ct_tensor *t) {
  char buf[512];
  shape_str(buf, sizeof buf, t);
  fputs(buf, f);
}

/* A scalar string value (dict keys, names). Borrowed from v. */
const char *value_str(const ct_value *v) {
  const char *s = NULL;
  size_t len = 0;
  return ct_value_to_string(&s, &len, v) == CT_OK ? s : "?";
}

char *value_type(const ct_value *v) {
  char *s = NULL;
  if (ct_value_type_str(&s, v) != CT_OK) return NULL;
  return s;
}

/* ---- parsing helpers ---- */

int parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

/* "cpu", "cuda", "cuda:1" */
int parse_device(const char *s, int32_t *type, int32_t *index) {
  long idx;
  if (!strcmp(s, "cpu")) {
    *type = CT_DEVICE_CPU;
    *index = -1;
    return 1;
  }
  if (!strcmp(s, "cuda")) {
    *type = CT_DEVICE_CUDA;
    *index = -1;
    return 1;
  }
  if (!strncmp(s, "cuda:", 5) && parse_long(s + 5, 0, 1024, &idx)) {
    *type = CT_DEVICE_CUDA;
    *index = (int32_t)idx;
    return 1;
  }
  return 0;
}

int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}
