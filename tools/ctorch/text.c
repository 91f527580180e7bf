/* Text, JSON (cJSON) and argument parsing helpers of the `ctorch` command. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void shape_str(char *buf, size_t n, const ct_tensor *t) {
  int64_t d, nd = ct_tensor_ndim(t);
  const int64_t *s = ct_tensor_sizes(t);
  size_t used = (size_t)snprintf(buf, n, "[");
  for (d = 0; d < nd && used < n; d++)
    used += (size_t)snprintf(buf + used, n - used, "%s%lld", d ? ", " : "", (long long)s[d]);
  if (used < n) snprintf(buf + used, n - used, "]");
}

void bytes_str(char *buf, size_t n, size_t bytes) {
  if (bytes >= 1u << 30)
    snprintf(buf, n, "%.1f GiB", bytes / 1073741824.0);
  else if (bytes >= 1u << 20)
    snprintf(buf, n, "%.1f MiB", bytes / 1048576.0);
  else if (bytes >= 1u << 10)
    snprintf(buf, n, "%.1f KiB", bytes / 1024.0);
  else
    snprintf(buf, n, "%zu bytes", bytes);
}

void double_str(char *buf, size_t n, double x, int is_float32) {
  int prec;
  if (isnan(x)) {
    snprintf(buf, n, "nan");
    return;
  }
  if (isinf(x)) {
    snprintf(buf, n, x > 0 ? "inf" : "-inf");
    return;
  }
  for (prec = 1; prec < 17; prec++) {
    snprintf(buf, n, "%.*g", prec, x);
    if (is_float32 ? (float)strtod(buf, NULL) == (float)x : strtod(buf, NULL) == x) break;
  }
  if (prec == 17) snprintf(buf, n, "%.17g", x);
  /* a float reads as one: 2 -> 2.0 (as Python prints it) */
  if (!strpbrk(buf, ".eni") && strlen(buf) + 3 <= n) strcat(buf, ".0");
}

void duration_str(char *buf, size_t n, double s) {
  static const struct {
    double scale;
    const char *unit;
  } units[] = {{1e9, "ns"}, {1e6, "\xc2\xb5s"}, {1e3, "ms"}, {1, "s"}};
  size_t u = 0;
  double v;
  while (u + 1 < sizeof units / sizeof units[0] && s * units[u].scale >= 999.5) u++;
  v = s * units[u].scale;
  snprintf(buf, n, v >= 99.95 ? "%.0f %s" : v >= 9.995 ? "%.1f %s" : "%.2f %s", v, units[u].unit);
}

cJSON *json_int(int64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", (long long)v);
  return cJSON_CreateRaw(buf);
}

cJSON *json_double(double x, int is_float32) {
  char buf[40];
  double_str(buf, sizeof buf, x, is_float32);
  return isfinite(x) ? cJSON_CreateRaw(buf) : cJSON_CreateString(buf);
}

cJSON *json_shape(const ct_tensor *t) {
  int64_t d, nd = ct_tensor_ndim(t);
  cJSON *a = cJSON_CreateArray();
  for (d = 0; a && d < nd; d++)
    if (!cJSON_AddItemToArray(a, json_int(ct_tensor_sizes(t)[d]))) {
      cJSON_Delete(a);
      return NULL;
    }
  return a;
}

int json_print(cJSON *root) {
  char *s = root ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  if (!s) return fail("out of memory while writing JSON");
  puts(s);
  cJSON_free(s);
  return 0;
}

/* A scalar string value (dict keys, names). Borrowed from v. */
const char *value_str(const ct_value *v) {
  const char *s = NULL;
  size_t len = 0;
  return ct_value_as_string(&s, &len, v) == CT_OK ? s : "?";
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
