/* Printing model outputs and loaded values without losing anything: integers exactly (int64
 * too), floats with the shortest text that reads back the same, bools as True/False,
 * complex numbers as (re+imj); as short text lines (run) and as JSON (run --json, inspect). */
#include "cli.h"

#include <math.h>
#include <string.h>

/* Element i of a CPU contiguous tensor (float16/bfloat16 converted to float32 first). */
static void element_str(char *buf, size_t n, const void *p, int32_t dt, int64_t i) {
  char re[40], im[40];
  switch (dt) {
    case CT_BOOL: snprintf(buf, n, "%s", ((const uint8_t *)p)[i] ? "True" : "False"); return;
    case CT_UINT8: snprintf(buf, n, "%u", (unsigned)((const uint8_t *)p)[i]); return;
    case CT_INT8: snprintf(buf, n, "%d", (int)((const int8_t *)p)[i]); return;
    case CT_INT16: snprintf(buf, n, "%d", (int)((const int16_t *)p)[i]); return;
    case CT_INT32: snprintf(buf, n, "%ld", (long)((const int32_t *)p)[i]); return;
    case CT_INT64: snprintf(buf, n, "%lld", (long long)((const int64_t *)p)[i]); return;
    case CT_FLOAT32: double_str(buf, n, ((const float *)p)[i], 1); return;
    case CT_FLOAT64: double_str(buf, n, ((const double *)p)[i], 0); return;
    case CT_COMPLEX64:
    case CT_COMPLEX128: {
      int f32 = dt == CT_COMPLEX64;
      double x = f32 ? ((const float *)p)[2 * i] : ((const double *)p)[2 * i];
      double y = f32 ? ((const float *)p)[2 * i + 1] : ((const double *)p)[2 * i + 1];
      double_str(re, sizeof re, x, f32);
      double_str(im, sizeof im, fabs(y), f32);
      snprintf(buf, n, "(%s%s%sj)", re, signbit(y) ? "-" : "+", im);
      return;
    }
    default: snprintf(buf, n, "?");
  }
}

static cJSON *element_json(const void *p, int32_t dt, int64_t i) {
  switch (dt) {
    case CT_BOOL: return cJSON_CreateBool(((const uint8_t *)p)[i]);
    case CT_UINT8: return json_int(((const uint8_t *)p)[i]);
    case CT_INT8: return json_int(((const int8_t *)p)[i]);
    case CT_INT16: return json_int(((const int16_t *)p)[i]);
    case CT_INT32: return json_int(((const int32_t *)p)[i]);
    case CT_INT64: return json_int(((const int64_t *)p)[i]);
    case CT_FLOAT32: return json_double(((const float *)p)[i], 1);
    case CT_FLOAT64: return json_double(((const double *)p)[i], 0);
    case CT_COMPLEX64:
    case CT_COMPLEX128: { /* [re, im] */
      int f32 = dt == CT_COMPLEX64;
      cJSON *a = cJSON_CreateArray();
      cJSON_AddItemToArray(
          a, json_double(f32 ? ((const float *)p)[2 * i] : ((const double *)p)[2 * i], f32));
      cJSON_AddItemToArray(
          a,
          json_double(f32 ? ((const float *)p)[2 * i + 1] : ((const double *)p)[2 * i + 1], f32));
      return a;
    }
    default: return cJSON_CreateNull();
  }
}

/* t on the CPU, contiguous, float16/bfloat16 as float32: a new tensor in *out. */
static ct_status readable(ct_tensor **out, const ct_tensor *t) {
  ct_tensor *c = NULL;
  int32_t dt = ct_tensor_dtype(t);
  int32_t conv = (dt == CT_FLOAT16 || dt == CT_BFLOAT16) ? CT_FLOAT32 : CT_DTYPE_KEEP;
  ct_status st = ct_tensor_to(&c, t, CT_DEVICE_CPU, -1, conv, 0, 0);
  if (st == CT_OK) st = ct_tensor_contiguous(out, c);
  ct_tensor_free(c);
  return st;
}

/* Short form: dtype[shape] device, then up to 3 leading and 3 trailing elements. */
int print_tensor(const char *label, const ct_tensor *t) {
  ct_tensor *c = NULL;
  char shape[512], e[96];
  int64_t i, n = ct_tensor_numel(t);
  ct_status st;
  shape_str(shape, sizeof shape, t);
  printf("%s: %s%s %s%s", label, dtype_name(ct_tensor_dtype(t)), shape,
         ct_device_type_name(ct_tensor_device_type(t)),
         ct_tensor_requires_grad(t) ? " requires_grad" : "");
  if ((st = readable(&c, t)) != CT_OK) {
    printf("\n");
    return fail_ct(st, label);
  }
  printf(" = [");
  for (i = 0; i < n; i++) {
    if (n > 6 && i == 3) {
      printf(", ...");
      i = n - 3;
    }
    element_str(e, sizeof e, ct_tensor_data_ptr(c), ct_tensor_dtype(c), i);
    printf("%s%s", i ? ", " : "", e);
  }
  printf("]\n");
  ct_tensor_free(c);
  return 0;
}

int print_first(const ct_tensor *t, int64_t k) {
  ct_tensor *c = NULL;
  char e[96];
  int64_t i, n = ct_tensor_numel(t);
  ct_status st = readable(&c, t);
  if (st != CT_OK) return fail_ct(st, "values");
  printf("[");
  for (i = 0; i < n && i < k; i++) {
    element_str(e, sizeof e, ct_tensor_data_ptr(c), ct_tensor_dtype(c), i);
    printf("%s%s", i ? ", " : "", e);
  }
  printf("%s]", n > k ? (k ? ", ..." : "...") : "");
  ct_tensor_free(c);
  return 0;
}

cJSON *json_first(const ct_tensor *t, int64_t k) {
  ct_tensor *c = NULL;
  cJSON *a;
  int64_t i, n = ct_tensor_numel(t);
  ct_status st = readable(&c, t);
  if (st != CT_OK) {
    fail_ct(st, "values");
    return NULL;
  }
  a = cJSON_CreateArray();
  for (i = 0; a && i < n && i < k; i++)
    cJSON_AddItemToArray(a, element_json(ct_tensor_data_ptr(c), ct_tensor_dtype(c), i));
  ct_tensor_free(c);
  return a;
}

static int is_scalar_list(int32_t tag) {
  return tag == CT_VALUE_INT_LIST || tag == CT_VALUE_DOUBLE_LIST || tag == CT_VALUE_BOOL_LIST;
}

void scalar_str(char *buf, size_t n, const ct_value *v) {
  int32_t tag = ct_value_tag(v), b = 0;
  int64_t i64 = 0;
  double d = 0;
  char *repr = NULL;
  size_t len = 0, i, used;
  if (tag == CT_VALUE_INT && ct_value_to_int(&i64, v) == CT_OK) {
    snprintf(buf, n, "%lld", (long long)i64);
  } else if (tag == CT_VALUE_DOUBLE && ct_value_to_double(&d, v) == CT_OK) {
    double_str(buf, n, d, 0);
  } else if (tag == CT_VALUE_BOOL && ct_value_to_bool(&b, v) == CT_OK) {
    snprintf(buf, n, "%s", b ? "True" : "False");
  } else if (tag == CT_VALUE_NONE) {
    snprintf(buf, n, "None");
  } else if (is_scalar_list(tag) && ct_value_length(&len, v) == CT_OK) {
    used = (size_t)snprintf(buf, n, "[");
    for (i = 0; i < len && used + 1 < n; i++) {
      ct_value *item = NULL;
      if (ct_value_get(&item, v, i) != CT_OK) break;
      if (i) used += (size_t)snprintf(buf + used, n - used, ", ");
      if (used + 1 < n) scalar_str(buf + used, n - used, item);
      used += strlen(buf + used);
      ct_value_free(item);
    }
    if (used + 1 < n) snprintf(buf + used, n - used, "]");
  } else if (ct_value_to_repr(&repr, v) == CT_OK) {
    snprintf(buf, n, "%s", repr);
  } else {
    snprintf(buf, n, "?");
  }
  ct_free(repr);
}

cJSON *json_scalar(const ct_value *v) {
  int32_t tag = ct_value_tag(v), b = 0;
  int64_t i64 = 0;
  double d = 0;
  const char *s = NULL;
  char *repr = NULL;
  size_t len = 0, i;
  cJSON *j;
  if (tag == CT_VALUE_INT && ct_value_to_int(&i64, v) == CT_OK) return json_int(i64);
  if (tag == CT_VALUE_DOUBLE && ct_value_to_double(&d, v) == CT_OK) return json_double(d, 0);
  if (tag == CT_VALUE_BOOL && ct_value_to_bool(&b, v) == CT_OK) return cJSON_CreateBool(b);
  if (tag == CT_VALUE_NONE) return cJSON_CreateNull();
  if (tag == CT_VALUE_STRING && ct_value_as_string(&s, &len, v) == CT_OK)
    return cJSON_CreateString(s);
  if (is_scalar_list(tag) && ct_value_length(&len, v) == CT_OK) {
    j = cJSON_CreateArray();
    for (i = 0; i < len; i++) {
      ct_value *item = NULL;
      if (ct_value_get(&item, v, i) != CT_OK) break;
      cJSON_AddItemToArray(j, json_scalar(item));
      ct_value_free(item);
    }
    return j;
  }
  j = cJSON_CreateString(ct_value_to_repr(&repr, v) == CT_OK ? repr : "?");
  ct_free(repr);
  return j;
}

int print_value(const char *label, const ct_value *v) {
  char *type = value_type(v), buf[4096];
  scalar_str(buf, sizeof buf, v);
  printf("%s: %s = %s\n", label, type ? type : "?", buf);
  ct_free(type);
  return 0;
}

cJSON *json_tensor(const char *label, const ct_tensor *t) {
  ct_tensor *c = NULL;
  cJSON *o, *vals;
  int64_t i, n = ct_tensor_numel(t);
  ct_status st = readable(&c, t);
  if (st != CT_OK) {
    fail_ct(st, label);
    return NULL;
  }
  o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", label);
  cJSON_AddStringToObject(o, "type", "Tensor");
  cJSON_AddStringToObject(o, "dtype", dtype_name(ct_tensor_dtype(t)));
  cJSON_AddItemToObject(o, "shape", json_shape(t));
  cJSON_AddStringToObject(o, "device", ct_device_type_name(ct_tensor_device_type(t)));
  cJSON_AddBoolToObject(o, "requires_grad", ct_tensor_requires_grad(t));
  vals = cJSON_AddArrayToObject(o, "values");
  for (i = 0; i < n; i++)
    cJSON_AddItemToArray(vals, element_json(ct_tensor_data_ptr(c), ct_tensor_dtype(c), i));
  ct_tensor_free(c);
  return o;
}

cJSON *json_value(const char *label, const ct_value *v) {
  cJSON *o;
  char *type;
  if (ct_value_tag(v) == CT_VALUE_TENSOR) {
    ct_tensor *t = NULL;
    ct_status st = ct_value_to_tensor(&t, v);
    if (st != CT_OK) {
      fail_ct(st, label);
      return NULL;
    }
    o = json_tensor(label, t);
    ct_tensor_free(t);
    return o;
  }
  o = cJSON_CreateObject();
  type = value_type(v);
  cJSON_AddStringToObject(o, "name", label);
  cJSON_AddStringToObject(o, "type", type ? type : "?");
  cJSON_AddItemToObject(o, "value", json_scalar(v));
  ct_free(type);
  return o;
}
