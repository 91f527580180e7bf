/* Foreign operators written in C: registered with ct_op_register, called by
 * ct_op_call / ct_op_call_name and from TorchScript compiled from source. */
#include "test_util.h"

static const int64_t S4[1] = {4};

static ct_value *tv(const ct_tensor *t) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&v, t));
  return v;
}
static ct_tensor *vt(const ct_value *v) {
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, v));
  return t;
}
static void expect_f32(const ct_tensor *t, const float *want, size_t n) {
  assert_int_equal(ct_tensor_numel(t), (int64_t)n);
  const float *p = (const float *)ct_tensor_data_ptr(t);
  for (size_t i = 0; i < n; ++i) assert_float_equal(p[i], want[i], 1e-5);
}

/* myns::scale(Tensor x, float a) -> Tensor, computed with ctorch ops (so
 * the callback itself calls back into ctorch). ctx counts calls. */
static ct_status scale_fn(void *ctx, const ct_value *const *args, size_t n, ct_value **out) {
  int *calls = (int *)ctx;
  ++*calls;
  if (n != 2) return ct_set_error(CT_ERR_CALLBACK, "scale: expected 2 arguments");
  if (ct_value_tag(args[1]) != CT_VALUE_DOUBLE)
    return ct_set_error(CT_ERR_CALLBACK, "scale: a is not a float");
  const ct_value *margs[2] = {args[0], args[1]};
  return ct_op_call_name(out, "aten::mul.Scalar", margs, 2, NULL, NULL, 0);
}

static ct_status fail_fn(void *ctx, const ct_value *const *args, size_t n, ct_value **out) {
  (void)ctx;
  (void)args;
  (void)n;
  (void)out;
  return ct_set_error(CT_ERR_CALLBACK, "boom from C");
}

/* Stores an int where the schema promises a Tensor. */
static ct_status wrong_fn(void *ctx, const ct_value *const *args, size_t n, ct_value **out) {
  (void)ctx;
  (void)args;
  (void)n;
  return ct_value_from_int(out, 42);
}

/* myns::pair(Tensor x) -> (Tensor, Tensor): (x, -x). */
static ct_status pair_fn(void *ctx, const ct_value *const *args, size_t n, ct_value **out) {
  (void)ctx;
  (void)n;
  ct_value *neg = NULL;
  ct_status st = ct_op_call_name(&neg, "aten::neg", args, 1, NULL, NULL, 0);
  if (st != CT_OK) return st;
  const ct_value *items[2] = {args[0], neg};
  st = ct_value_tuple(out, items, 2);
  ct_value_free(neg);
  return st;
}

static int g_scale_calls;
static int g_registered;

static int setup(void **state) {
  (void)state;
  if (g_registered) return 0;
  if (ct_op_register("myns::scale(Tensor x, float a) -> Tensor", scale_fn, &g_scale_calls) != CT_OK)
    return -1;
  if (ct_op_register("myns::fail(Tensor x) -> Tensor", fail_fn, NULL) != CT_OK) return -1;
  if (ct_op_register("myns::wrong(Tensor x) -> Tensor", wrong_fn, NULL) != CT_OK) return -1;
  if (ct_op_register("myns::pair(Tensor x) -> (Tensor, Tensor)", pair_fn, NULL) != CT_OK) return -1;
  g_registered = 1;
  return 0;
}

static void test_register_errors(void **state) {
  (void)state;
  CT_EXPECT_ERROR(ct_op_register("myns::scale(Tensor x, float a) -> Tensor", scale_fn, NULL),
                  CT_ERR_INVALID_ARGUMENT, "already registered");
  CT_EXPECT_ERROR(
      ct_op_register("aten::add.Tensor(Tensor self, Tensor other) -> Tensor", scale_fn, NULL),
      CT_ERR_INVALID_ARGUMENT, "already registered");
  CT_EXPECT_ERROR(ct_op_register("myns::bad(Tensor x", scale_fn, NULL), CT_ERR_INVALID_ARGUMENT,
                  "bad schema");
  CT_EXPECT_ERROR(ct_op_register("noname(Tensor x) -> Tensor", scale_fn, NULL),
                  CT_ERR_INVALID_ARGUMENT, "namespaced");
  CT_EXPECT_ERROR(ct_op_register(NULL, scale_fn, NULL), CT_ERR_INVALID_ARGUMENT, "schema");
  CT_EXPECT_ERROR(ct_op_register("myns::nofn(Tensor x) -> Tensor", NULL, NULL),
                  CT_ERR_INVALID_ARGUMENT, "fn");
}

static void test_call_foreign(void **state) {
  (void)state;
  float x[4] = {1, 2, 3, 4};
  ct_tensor *t = test_tensor_f32(x, S4, 1);
  ct_value *a = NULL;
  CT_OK_OR_FAIL(ct_value_from_double(&a, 2.5));
  ct_value *args[2] = {tv(t), a};
  ct_value *out = NULL;

  ct_op *op = NULL;
  CT_OK_OR_FAIL(ct_op_find(&op, "myns::scale", ""));
  const char *schema = NULL;
  CT_OK_OR_FAIL(ct_op_schema(&schema, op, 0));
  assert_string_equal(schema, "myns::scale(Tensor x, float a) -> Tensor");
  int before = g_scale_calls;
  CT_OK_OR_FAIL(ct_op_call(&out, op, (const ct_value *const *)args, 2, NULL, NULL, 0));
  assert_int_equal(g_scale_calls, before + 1);
  ct_tensor *r = vt(out);
  const float w[4] = {2.5f, 5, 7.5f, 10};
  expect_f32(r, w, 4);
  ct_tensor_free(r);
  ct_value_free(out);

  /* By name, with an int for the float (coerced) and as a keyword. */
  ct_value *two = NULL;
  CT_OK_OR_FAIL(ct_value_from_int(&two, 2));
  const char *kn[1] = {"a"};
  CT_OK_OR_FAIL(ct_op_call_name(&out, "myns::scale", (const ct_value *const *)args, 1, kn,
                                (const ct_value *const *)&two, 1));
  r = vt(out);
  const float w2[4] = {2, 4, 6, 8};
  expect_f32(r, w2, 4);
  ct_tensor_free(r);
  ct_value_free(out);

  /* Wrong types are caught before the callback runs, with the schema. */
  out = NULL;
  before = g_scale_calls;
  ct_value *swapped[2] = {a, args[0]};
  CT_EXPECT_ERROR(ct_op_call(&out, op, (const ct_value *const *)swapped, 2, NULL, NULL, 0),
                  CT_ERR_TYPE, "myns::scale: argument 'x' expected Tensor but got float");
  assert_non_null(strstr(ct_last_error(), "schema: myns::scale(Tensor x, float a) -> Tensor"));
  CT_EXPECT_ERROR(ct_op_call(&out, op, (const ct_value *const *)args, 1, NULL, NULL, 0),
                  CT_ERR_INVALID_ARGUMENT, "missing argument 'a'");
  assert_int_equal(g_scale_calls, before);

  /* Failing callback: CT_ERR_CALLBACK with its message. */
  CT_EXPECT_ERROR(
      ct_op_call_name(&out, "myns::fail", (const ct_value *const *)args, 1, NULL, NULL, 0),
      CT_ERR_CALLBACK, "boom from C");
  /* Result of the wrong type. */
  CT_EXPECT_ERROR(
      ct_op_call_name(&out, "myns::wrong", (const ct_value *const *)args, 1, NULL, NULL, 0),
      CT_ERR_CALLBACK, "expected Tensor but the kernel returned int");
  assert_null(out);

  /* Several results. */
  CT_OK_OR_FAIL(
      ct_op_call_name(&out, "myns::pair", (const ct_value *const *)args, 1, NULL, NULL, 0));
  assert_int_equal(ct_value_tag(out), CT_VALUE_TUPLE);
  ct_value *second = NULL;
  CT_OK_OR_FAIL(ct_value_get(&second, out, 1));
  r = vt(second);
  const float w3[4] = {-1, -2, -3, -4};
  expect_f32(r, w3, 4);
  ct_tensor_free(r);
  ct_value_free(second);
  ct_value_free(out);

  /* Listed with the others. */
  ct_value *l = NULL;
  CT_OK_OR_FAIL(ct_op_list(&l));
  size_t n = 0;
  CT_OK_OR_FAIL(ct_value_length(&n, l));
  int found = 0;
  for (size_t i = 0; i < n; ++i) {
    ct_value *s = NULL;
    const char *str = NULL;
    CT_OK_OR_FAIL(ct_value_get(&s, l, i));
    CT_OK_OR_FAIL(ct_value_as_string(&str, NULL, s));
    if (strcmp(str, "myns::scale") == 0) found = 1;
    ct_value_free(s);
  }
  ct_value_free(l);
  assert_true(found);

  ct_value_free(two);
  ct_op_free(op);
  ct_value_free(args[0]);
  ct_value_free(a);
  ct_tensor_free(t);
}

static void test_from_torchscript(void **state) {
  (void)state;
  float x[4] = {1, 2, 3, 4};
  ct_tensor *t = test_tensor_f32(x, S4, 1);
  ct_value *arg = tv(t);
  ct_value *out = NULL;

  ct_script *s = NULL;
  CT_OK_OR_FAIL(ct_script_compile(&s,
                                  "def f(x):\n"
                                  "    return myns.scale(x, 3.0) + 1\n"
                                  "def g(x):\n"
                                  "    return torch.ops.myns.scale(x, 0.5)\n"
                                  "def h(x):\n"
                                  "    return myns.fail(x)\n"));
  int before = g_scale_calls;
  CT_OK_OR_FAIL(ct_script_call(&out, s, "f", (const ct_value *const *)&arg, 1, NULL, NULL, 0));
  assert_int_equal(g_scale_calls, before + 1);
  ct_tensor *r = vt(out);
  const float w[4] = {4, 7, 10, 13};
  expect_f32(r, w, 4);
  ct_tensor_free(r);
  ct_value_free(out);
  CT_OK_OR_FAIL(ct_script_call(&out, s, "g", (const ct_value *const *)&arg, 1, NULL, NULL, 0));
  r = vt(out);
  const float w2[4] = {0.5f, 1, 1.5f, 2};
  expect_f32(r, w2, 4);
  ct_tensor_free(r);
  ct_value_free(out);
  /* A failing callback inside TorchScript: the message comes through. */
  ct_status st = ct_script_call(&out, s, "h", (const ct_value *const *)&arg, 1, NULL, NULL, 0);
  assert_int_not_equal(st, CT_OK);
  assert_non_null(strstr(ct_last_error(), "boom from C"));
  ct_script_free(s);

  /* In a module method. */
  ct_module *m = NULL;
  CT_OK_OR_FAIL(ct_module_new(&m, "Scaler"));
  CT_OK_OR_FAIL(ct_module_define(m, "def forward(self, x):\n    return myns.scale(x, 2.0)\n"));
  CT_OK_OR_FAIL(ct_module_forward(&out, m, (const ct_value *const *)&arg, 1));
  r = vt(out);
  const float w3[4] = {2, 4, 6, 8};
  expect_f32(r, w3, 4);
  ct_tensor_free(r);
  ct_value_free(out);
  ct_module_free(m);

  ct_value_free(arg);
  ct_tensor_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_register_errors),
      cmocka_unit_test(test_call_foreign),
      cmocka_unit_test(test_from_torchscript),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
