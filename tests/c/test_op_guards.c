/* Guards in front of LibTorch operators that crash, hang or read out of
 * bounds (src/op_guards.cpp; issue 20): each call below killed or hung the
 * process before, by name (ct_op_call_name) or from TorchScript. */
#include "test_util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static ct_value *int_value(int64_t i) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_from_int(&v, i));
  return v;
}

static ct_value *str_value(const char *s) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_from_string(&v, s, strlen(s)));
  return v;
}

/* Calls `op` on args (freed here); the status, and *out on success. */
static ct_status call(ct_value **out, const char *op, ct_value **args, size_t n) {
  *out = NULL;
  ct_status st = ct_op_call_name(out, op, (const ct_value *const *)args, n, NULL, NULL, 0);
  for (size_t i = 0; i < n; ++i) ct_value_free(args[i]);
  return st;
}

static void expect_refused(const char *op, ct_value **args, size_t n, const char *needle) {
  ct_value *out = NULL;
  ct_status st = call(&out, op, args, n);
  if (st != CT_ERR_INVALID_ARGUMENT)
    fail_msg("%s: expected CT_ERR_INVALID_ARGUMENT, got %d (%s)", op, (int)st, ct_last_error());
  if (!strstr(ct_last_error(), needle))
    fail_msg("%s: message '%s' lacks '%s'", op, ct_last_error(), needle);
  if (!strstr(ct_last_error(), op)) fail_msg("%s: message '%s' lacks the op", op, ct_last_error());
  assert_null(out);
}

static int64_t call_int(const char *op, ct_value **args, size_t n) {
  ct_value *out = NULL;
  CT_OK_OR_FAIL(call(&out, op, args, n));
  int64_t r = 0;
  CT_OK_OR_FAIL(ct_value_to_int(&r, out));
  ct_value_free(out);
  return r;
}

/* x86's idiv traps (SIGFPE) on 7 % 0 and on INT64_MIN / -1. */
static void test_int_division(void **state) {
  (void)state;
  const char *ops[] = {"aten::remainder.int", "aten::floordiv.int", "aten::divmod.int",
                       "aten::__round_to_zero_floordiv.int", "aten::remainder",
                       "aten::floordiv"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i) {
    ct_value *a[2] = {int_value(7), int_value(0)};
    expect_refused(ops[i], a, 2, "integer division or modulo by zero");
    ct_value *b[2] = {int_value(INT64_MIN), int_value(-1)};
    expect_refused(ops[i], b, 2, "integer overflow");
  }
  /* Everything else is LibTorch's own result. */
  ct_value *a[2] = {int_value(-7), int_value(2)};
  assert_int_equal(call_int("aten::remainder.int", a, 2), 1); /* Python's sign rule */
  ct_value *b[2] = {int_value(-7), int_value(2)};
  assert_int_equal(call_int("aten::floordiv.int", b, 2), -4);
  ct_value *c[2] = {int_value(INT64_MIN), int_value(1)};
  assert_int_equal(call_int("aten::floordiv.int", c, 2), INT64_MIN);
  /* gcd(-2**63, -1) trapped in Euclid's first step; a gcd with -1 is 1. */
  ct_value *g1[2] = {int_value(INT64_MIN), int_value(-1)};
  assert_int_equal(call_int("aten::gcd.int", g1, 2), 1);
  ct_value *g2[2] = {int_value(-1), int_value(INT64_MIN)};
  assert_int_equal(call_int("aten::gcd.int", g2, 2), 1);
  ct_value *g3[2] = {int_value(12), int_value(18)};
  assert_int_equal(call_int("aten::gcd.int", g3, 2), 6);
}

/* The same from TorchScript: a constant folded at compile time (the compiler
 * ran 7 % 0 and died), and at run time. */
static void test_int_division_in_torchscript(void **state) {
  (void)state;
  ct_script *s = NULL;
  CT_OK_OR_FAIL(ct_script_compile(&s,
                                  "def folded() -> int:\n    return 7 % 0\n"
                                  "def floor(x: int, y: int) -> int:\n    return x // y\n"));
  ct_value *out = (ct_value *)0x1;
  ct_status st = ct_script_call(&out, s, "folded", NULL, 0, NULL, NULL, 0);
  assert_int_not_equal(st, CT_OK);
  assert_non_null(strstr(ct_last_error(), "integer division or modulo by zero"));
  assert_ptr_equal(out, (ct_value *)0x1);
  ct_value *args[2] = {int_value(INT64_MIN), int_value(-1)};
  st = ct_script_call(&out, s, "floor", (const ct_value *const *)args, 2, NULL, NULL, 0);
  assert_int_not_equal(st, CT_OK);
  assert_non_null(strstr(ct_last_error(), "integer overflow"));
  ct_value_free(args[0]);
  ct_value_free(args[1]);
  ct_script_free(s);
}

static void test_local_scalar_dense_empty(void **state) {
  (void)state;
  ct_tensor *t = NULL;
  const int64_t zero = 0;
  CT_OK_OR_FAIL(ct_tensor_empty(&t, &zero, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  ct_value *a[1] = {NULL};
  CT_OK_OR_FAIL(ct_value_from_tensor(&a[0], t));
  expect_refused("aten::_local_scalar_dense", a, 1, "a tensor with no elements has no value");
  ct_tensor_free(t);
}

static ct_value *int_list(const int64_t *v, size_t n) {
  ct_value *l = NULL;
  CT_OK_OR_FAIL(ct_value_int_list(&l, v, n));
  return l;
}

/* as_strided(x, [4], [1], INT64_MAX): LibTorch's extent check overflowed and
 * the view read before its storage. */
static void test_as_strided_extent(void **state) {
  (void)state;
  ct_tensor *t = NULL;
  const int64_t four = 4;
  CT_OK_OR_FAIL(ct_tensor_zeros(&t, &four, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  const int64_t size[1] = {4}, stride[1] = {1}, big_stride[1] = {INT64_MAX / 2};
  const int64_t offsets[] = {INT64_MAX, INT64_MAX - 2, 1};
  const char *ops[] = {"aten::as_strided", "aten::as_strided_"};
  for (size_t k = 0; k < 2; ++k)
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; ++i) {
      ct_value *a[4] = {NULL, int_list(size, 1), int_list(stride, 1), int_value(offsets[i])};
      CT_OK_OR_FAIL(ct_value_from_tensor(&a[0], t));
      expect_refused(ops[k], a, 4, offsets[i] == 1 ? "does not fit its storage" : "");
    }
  ct_value *b[4] = {NULL, int_list(size, 1), int_list(big_stride, 1), int_value(0)};
  CT_OK_OR_FAIL(ct_value_from_tensor(&b[0], t));
  expect_refused("aten::as_strided", b, 4, "");
  /* A view inside the storage works. */
  const int64_t two[1] = {2}, s2[1] = {2};
  ct_value *c[4] = {NULL, int_list(two, 1), int_list(s2, 1), int_value(0)}, *out = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&c[0], t));
  CT_OK_OR_FAIL(call(&out, "aten::as_strided", c, 4));
  ct_value_free(out);
  ct_tensor_free(t);
}

/* 'abc'.replace('', 'x') looped forever; ljust(2**62) grew until memory ran
 * out. Python's answers, or a refusal. */
static void test_string_blowups(void **state) {
  (void)state;
  ct_value *a[4] = {str_value("abc"), str_value(""), str_value("x"), int_value(-1)}, *out = NULL;
  CT_OK_OR_FAIL(call(&out, "aten::replace", a, 4));
  const char *s = NULL;
  size_t len = 0;
  CT_OK_OR_FAIL(ct_value_as_string(&s, &len, out));
  assert_string_equal(s, "xaxbxcx");
  ct_value_free(out);
  ct_value *b[4] = {str_value("abc"), str_value(""), str_value("-"), int_value(2)};
  CT_OK_OR_FAIL(call(&out, "aten::replace", b, 4));
  CT_OK_OR_FAIL(ct_value_as_string(&s, &len, out));
  assert_string_equal(s, "-a-bc");
  ct_value_free(out);
  const char *widths[] = {"aten::ljust", "aten::rjust", "aten::center"};
  for (size_t i = 0; i < 3; ++i) {
    ct_value *c[3] = {str_value("abc"), int_value(INT64_MAX), str_value(" ")};
    expect_refused(widths[i], c, 3, "is more than");
  }
  ct_value *z[2] = {str_value("7"), int_value((int64_t)1 << 40)};
  expect_refused("aten::zfill", z, 2, "is more than");
  ct_value *e[2] = {str_value("a\tb\t"), int_value(INT64_MAX)};
  expect_refused("aten::expandtabs", e, 2, "characters");
  /* str.count('') looped forever: Python's answer (positions in the slice). */
  const struct {
    const char *s;
    int64_t start, end, want;
  } counts[] = {{"abc", 0, -1, 4}, {"abc", 1, -1, 3}, {"abc", 5, -1, 0},
                {"abc", 0, 1, 2},  {"", 0, -1, 1},   {"abc", -2, -1, 3}};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; ++i) {
    ct_value *k[4] = {str_value(counts[i].s), str_value(""), int_value(counts[i].start),
                      int_value(counts[i].end)};
    assert_int_equal(call_int("aten::count", k, 4), counts[i].want);
  }
  ct_value *k2[4] = {str_value("abab"), str_value("ab"), int_value(0), int_value(-1)};
  assert_int_equal(call_int("aten::count", k2, 4), 2);
  /* A negative width read as a huge unsigned one; Python pads nothing. */
  ct_value *zn[2] = {str_value("abc"), int_value(INT64_MIN)};
  CT_OK_OR_FAIL(call(&out, "aten::zfill", zn, 2));
  CT_OK_OR_FAIL(ct_value_as_string(&s, &len, out));
  assert_string_equal(s, "abc");
  ct_value_free(out);
  ct_value *ln[3] = {str_value("abc"), int_value(-1), str_value(" ")};
  CT_OK_OR_FAIL(call(&out, "aten::ljust", ln, 3));
  CT_OK_OR_FAIL(ct_value_as_string(&s, &len, out));
  assert_string_equal(s, "abc");
  ct_value_free(out);
  ct_value *rs[3] = {str_value("a b"), str_value(""), int_value(-1)};
  expect_refused("aten::rsplit", rs, 3, "empty separator");
  ct_value *ok[3] = {str_value("ab"), int_value(5), str_value("*")};
  CT_OK_OR_FAIL(call(&out, "aten::ljust", ok, 3));
  CT_OK_OR_FAIL(ct_value_as_string(&s, &len, out));
  assert_string_equal(s, "ab***");
  ct_value_free(out);
}

/* prim::ReductionSizes indexed its sizes with every axis unchecked. */
static void test_reduction_axes(void **state) {
  (void)state;
  const int64_t sizes[2] = {2, 3}, bad[][2] = {{2, 0}, {-1, 0}, {INT64_MAX, 0}, {1, 1}};
  for (size_t i = 0; i < 4; ++i) {
    ct_value *a[3] = {int_list(sizes, 2), int_list(bad[i], 2), NULL};
    CT_OK_OR_FAIL(ct_value_from_bool(&a[2], 0));
    expect_refused("prim::ReductionSizes", a, 3, i == 3 ? "repeated" : "out of range");
  }
  const int64_t one[1] = {1};
  ct_value *a[3] = {int_list(sizes, 2), int_list(one, 1), NULL}, *out = NULL;
  CT_OK_OR_FAIL(ct_value_from_bool(&a[2], 0));
  CT_OK_OR_FAIL(call(&out, "prim::ReductionSizes", a, 3));
  char *repr = NULL;
  CT_OK_OR_FAIL(ct_value_to_repr(&repr, out));
  assert_string_equal(repr, "[2]");
  ct_free(repr);
  ct_value_free(out);
}

/* max_pool1d(ones(1, 4), [3], [1], [0], [2^62]) crashed inside LibTorch 1.13
 * (the output length wraps; found by fuzz_op_call). Sizes past 2^31 - 1 are
 * refused for every pooling op; ordinary pooling still works. */
static void test_pooling_sizes(void **state) {
  (void)state;
  ct_tensor *t = NULL;
  const int64_t shape[3] = {1, 1, 4};
  CT_OK_OR_FAIL(ct_tensor_ones(&t, shape, 3, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  const int64_t k3[1] = {3}, one[1] = {1}, zero[1] = {0}, huge[1] = {(int64_t)1 << 62};
  const char *ops[] = {"aten::max_pool1d", "aten::max_pool1d_with_indices"};
  for (size_t i = 0; i < 2; ++i) {
    ct_value *a[6] = {NULL, int_list(k3, 1), int_list(one, 1), int_list(zero, 1),
                      int_list(huge, 1), NULL};
    CT_OK_OR_FAIL(ct_value_from_tensor(&a[0], t));
    CT_OK_OR_FAIL(ct_value_from_bool(&a[5], 0));
    expect_refused(ops[i], a, 6, "dilation 4611686018427387904 is out of range");
  }
  ct_value *b[6] = {NULL, int_list(k3, 1), int_list(one, 1), int_list(zero, 1), int_list(one, 1),
                    NULL};
  CT_OK_OR_FAIL(ct_value_from_tensor(&b[0], t));
  CT_OK_OR_FAIL(ct_value_from_bool(&b[5], 0));
  ct_value *out = NULL;
  CT_OK_OR_FAIL(call(&out, "aten::max_pool1d", b, 6));
  ct_tensor *r = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&r, out));
  assert_int_equal(ct_tensor_numel(r), 2); /* (4 - 3) / 1 + 1 */
  ct_tensor_free(r);
  ct_value_free(out);
  ct_tensor_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_int_division),
      cmocka_unit_test(test_int_division_in_torchscript),
      cmocka_unit_test(test_local_scalar_dense_empty),
      cmocka_unit_test(test_as_strided_extent),
      cmocka_unit_test(test_string_blowups),
      cmocka_unit_test(test_reduction_axes),
      cmocka_unit_test(test_pooling_sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
