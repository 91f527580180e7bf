/* Dtype names of the `ctorch` command: as torch spells them, with numpy .npy descrs. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const struct cli_dtype dtypes[] = {
    {CT_BOOL, "bool", "|b1"},           {CT_UINT8, "uint8", "|u1"},
    {CT_INT8, "int8", "|i1"},           {CT_INT16, "int16", "<i2"},
    {CT_INT32, "int32", "<i4"},         {CT_INT64, "int64", "<i8"},
    {CT_FLOAT16, "float16", "<f2"},     {CT_BFLOAT16, "bfloat16", NULL},
    {CT_FLOAT32, "float32", "<f4"},     {CT_FLOAT64, "float64", "<f8"},
    {CT_COMPLEX64, "complex64", "<c8"}, {CT_COMPLEX128, "complex128", "<c16"},
};
const size_t n_dtypes = sizeof dtypes / sizeof dtypes[0];

int32_t dtype_from_name(const char *s) {
  static const struct {
    const char *alias;
    int32_t code;
  } aliases[] = {{"float", CT_FLOAT32}, {"f32", CT_FLOAT32},   {"double", CT_FLOAT64},
                 {"f64", CT_FLOAT64},   {"half", CT_FLOAT16},  {"f16", CT_FLOAT16},
                 {"long", CT_INT64},    {"int", CT_INT32},     {"i64", CT_INT64},
                 {"i32", CT_INT32},     {"bf16", CT_BFLOAT16}, {"u8", CT_UINT8}};
  size_t i;
  for (i = 0; i < n_dtypes; i++)
    if (!strcmp(s, dtypes[i].name)) return dtypes[i].code;
  for (i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (!strcmp(s, aliases[i].alias)) return aliases[i].code;
  return 0;
}

const char *dtype_name(int32_t code) {
  size_t i;
  for (i = 0; i < n_dtypes; i++)
    if (dtypes[i].code == code) return dtypes[i].name;
  return ct_dtype_name(code);
}

int dtype_is_float(int32_t d) {
  return d == CT_FLOAT16 || d == CT_BFLOAT16 || d == CT_FLOAT32 || d == CT_FLOAT64 ||
         d == CT_COMPLEX64 || d == CT_COMPLEX128;
}
