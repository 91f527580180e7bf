/* ct_module_* and ct_script_*: modules built from TorchScript source (no
 * Python needed), calls, introspection, save/load, freeze, threads. */
#include "test_util.h"

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *NET_SRC =
    "def forward(self, x):\n"
    "    if bool(x.sum() > 0):\n"
    "        return torch.matmul(x, self.lin.weight) * self.scale + self.bias\n"
    "    else:\n"
    "        return x - self.bias\n"
    "def scaled(self, x, factor: float = 2.0, offset: int = 1):\n"
    "    return x * factor + offset\n"
    "def pair(self, x):\n"
    "    return x + 1, x.sum()\n"
    "def boom(self, x):\n"
    "    if bool(x.sum() > 0):\n"
    "        raise RuntimeError('boom happened')\n"
    "    return x\n"
    "def ops(self, x):\n"
    "    return aten.relu(x) + torch.ops.aten.relu(x)\n"
    "def lists(self, xs: List[Tensor], n: List[float]):\n"
    "    return len(xs) + len(n)\n";

static ct_tensor *tensor2x2(float a, float b, float c, float d) {
  float data[4] = {a, b, c, d};
  int64_t sizes[2] = {2, 2};
  return test_tensor_f32(data, sizes, 2);
}

/* Net with parameters bias (2), lin.weight (2x2), buffer scale, int attr count.
 */
static ct_module *make_net(void) {
  ct_module *m = NULL, *lin = NULL;
  CT_OK_OR_FAIL(ct_module_new(&m, "Net"));
  CT_OK_OR_FAIL(ct_module_new(&lin, "Lin"));
  ct_tensor *w = tensor2x2(1, 2, 3, 4);
  CT_OK_OR_FAIL(ct_module_register_parameter(lin, "weight", w, 1));
  CT_OK_OR_FAIL(ct_module_register_module(m, "lin", lin));
  float bd[2] = {0.5f, -0.5f};
  int64_t bs[1] = {2};
  ct_tensor *b = test_tensor_f32(bd, bs, 1);
  CT_OK_OR_FAIL(ct_module_register_parameter(m, "bias", b, 1));
  float sd[1] = {2.0f};
  ct_tensor *s = test_tensor_f32(sd, NULL, 0);
  CT_OK_OR_FAIL(ct_module_register_buffer(m, "scale", s));
  ct_tensor_free(w);
  ct_tensor_free(b);
  ct_tensor_free(s);
  ct_module_free(lin);
  return m;
}

static ct_module *make_net_full(void) {
  ct_module *m = make_net();
  CT_OK_OR_FAIL(ct_module_define(m, NET_SRC));
  return m;
}

static ct_value *tensor_value(ct_tensor *t) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&v, t));
  return v;
}

static void expect_tensor(const ct_value *v, const float *expected, int64_t n) {
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, v));
  assert_int_equal(ct_tensor_numel(t), n);
  ct_tensor *c = NULL;
  CT_OK_OR_FAIL(ct_tensor_contiguous(&c, t));
  const float *p = (const float *)ct_tensor_data_ptr(c);
  for (int64_t i = 0; i < n; ++i)
    if (p[i] != expected[i]) fail_msg("element %ld: %f != %f", (long)i, p[i], expected[i]);
  ct_tensor_free(c);
  ct_tensor_free(t);
}

static void test_build_and_forward(void **state) {
  (void)state;
  ct_module *m = NULL;
  CT_OK_OR_FAIL(ct_module_new(&m, "Net"));
  ct_module_free(m);
  m = make_net();
  /* Without the source, there is no forward yet. */
  ct_value *out = NULL;
  CT_EXPECT_ERROR(ct_module_forward(&out, m, NULL, 0), CT_ERR_NOT_FOUND, "has no method 'forward'");
  CT_OK_OR_FAIL(ct_module_define(m, NET_SRC));
  ct_tensor *x = tensor2x2(1, 0, 0, 1);
  ct_value *xv = tensor_value(x);
  const ct_value *args[1] = {xv};
  CT_OK_OR_FAIL(ct_module_forward(&out, m, args, 1));
  /* I @ W * 2 + b */
  const float e1[4] = {2.5f, 3.5f, 6.5f, 7.5f};
  expect_tensor(out, e1, 4);
  ct_value_free(out);
  out = NULL;
  /* Data-dependent branch. */
  ct_tensor *nx = tensor2x2(-1, 0, 0, -1);
  ct_value *nxv = tensor_value(nx);
  const ct_value *nargs[1] = {nxv};
  CT_OK_OR_FAIL(ct_module_forward(&out, m, nargs, 1));
  const float e2[4] = {-1.5f, 0.5f, -0.5f, -0.5f};
  expect_tensor(out, e2, 4);
  ct_value_free(out);
  out = NULL;

  /* Argument errors. */
  CT_EXPECT_ERROR(ct_module_forward(&out, m, NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "missing argument 'x'");
  const ct_value *two[2] = {xv, xv};
  CT_EXPECT_ERROR(ct_module_forward(&out, m, two, 2), CT_ERR_INVALID_ARGUMENT,
                  "too many positional arguments: expected at most 1, got 2");
  ct_value *iv = NULL;
  CT_OK_OR_FAIL(ct_value_from_int(&iv, 3));
  const ct_value *bad[1] = {iv};
  CT_EXPECT_ERROR(ct_module_forward(&out, m, bad, 1), CT_ERR_TYPE,
                  "forward: argument 'x' expected Tensor but got int");
  assert_non_null(
      strstr(ct_last_error(), "schema: forward(__torch__.Net self, Tensor x) -> Tensor"));
  CT_EXPECT_ERROR(ct_module_forward(NULL, m, args, 1), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_module_forward(&out, NULL, args, 1), CT_ERR_INVALID_ARGUMENT, "'m' is NULL");
  CT_EXPECT_ERROR(ct_module_forward(&out, m, NULL, 1), CT_ERR_INVALID_ARGUMENT, "'args' is NULL");
  const ct_value *holes[1] = {NULL};
  CT_EXPECT_ERROR(ct_module_forward(&out, m, holes, 1), CT_ERR_INVALID_ARGUMENT, "args[0] is NULL");
  assert_null(out);

  ct_value_free(iv);
  ct_value_free(xv);
  ct_value_free(nxv);
  ct_tensor_free(x);
  ct_tensor_free(nx);
  ct_module_free(m);
  ct_module_free(NULL);
}

static void test_call_kwargs(void **state) {
  (void)state;
  ct_module *m = make_net_full();
  ct_tensor *x = tensor2x2(1, 2, 3, 4);
  ct_value *xv = tensor_value(x), *out = NULL, *f = NULL, *o = NULL, *s = NULL;
  const ct_value *args[1] = {xv};
  /* Defaults: factor 2.0, offset 1. */
  CT_OK_OR_FAIL(ct_module_call(&out, m, "scaled", args, 1, NULL, NULL, 0));
  const float e1[4] = {3, 5, 7, 9};
  expect_tensor(out, e1, 4);
  ct_value_free(out);
  /* Keywords, with an int where a float is expected. */
  CT_OK_OR_FAIL(ct_value_from_int(&f, 3));
  CT_OK_OR_FAIL(ct_value_from_int(&o, 0));
  const char *kn[2] = {"offset", "factor"};
  const ct_value *kv[2] = {o, f};
  CT_OK_OR_FAIL(ct_module_call(&out, m, "scaled", args, 1, kn, kv, 2));
  const float e2[4] = {3, 6, 9, 12};
  expect_tensor(out, e2, 4);
  ct_value_free(out);
  /* x as a keyword too. */
  const char *kn3[2] = {"x", "offset"};
  const ct_value *kv3[2] = {xv, o};
  CT_OK_OR_FAIL(ct_module_call(&out, m, "scaled", NULL, 0, kn3, kv3, 2));
  const float e3[4] = {2, 4, 6, 8};
  expect_tensor(out, e3, 4);
  ct_value_free(out);
  out = NULL;

  /* Keyword errors. */
  const char *kbad[1] = {"nope"};
  const ct_value *kvb[1] = {o};
  CT_EXPECT_ERROR(ct_module_call(&out, m, "scaled", args, 1, kbad, kvb, 1), CT_ERR_INVALID_ARGUMENT,
                  "scaled: unknown keyword argument 'nope'");
  const char *kx[1] = {"x"};
  CT_EXPECT_ERROR(ct_module_call(&out, m, "scaled", args, 1, kx, args, 1), CT_ERR_INVALID_ARGUMENT,
                  "multiple values for argument 'x'");
  CT_OK_OR_FAIL(ct_value_from_string(&s, "a", 1));
  const char *kf[1] = {"factor"};
  const ct_value *kvs[1] = {s};
  CT_EXPECT_ERROR(ct_module_call(&out, m, "scaled", args, 1, kf, kvs, 1), CT_ERR_TYPE,
                  "argument 'factor' expected float but got str");
  CT_EXPECT_ERROR(ct_module_call(&out, m, "scaled", args, 1, NULL, NULL, 1),
                  CT_ERR_INVALID_ARGUMENT, "'kwnames' or 'kwvalues' is NULL");
  const char *knull[1] = {NULL};
  CT_EXPECT_ERROR(ct_module_call(&out, m, "scaled", args, 1, knull, kvs, 1),
                  CT_ERR_INVALID_ARGUMENT, "kwnames[0]");
  CT_EXPECT_ERROR(ct_module_call(&out, m, "missing", args, 1, NULL, NULL, 0), CT_ERR_NOT_FOUND,
                  "no method 'missing'");
  CT_EXPECT_ERROR(ct_module_call(&out, m, NULL, args, 1, NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "'method' is NULL");
  assert_null(out);

  /* Tuple results, None results, side effects. */
  CT_OK_OR_FAIL(ct_module_call(&out, m, "pair", args, 1, NULL, NULL, 0));
  assert_int_equal(ct_value_tag(out), CT_VALUE_TUPLE);
  ct_value_free(out);
  out = NULL;

  /* Errors inside the model: short first line, traceback after. */
  CT_EXPECT_ERROR(ct_module_call(&out, m, "boom", args, 1, NULL, NULL, 0), CT_ERR_TORCH,
                  "boom happened");
  const char *msg = ct_last_error();
  const char *nl = strchr(msg, '\n');
  assert_non_null(nl);
  assert_true(strstr(msg, "boom happened") < nl); /* on the first line */
  assert_non_null(strstr(nl, "Traceback"));
  assert_null(out);

  /* Operator namespaces in source: aten.relu and torch.ops.aten.relu. */
  ct_tensor *nx = tensor2x2(-1, 2, -3, 4);
  ct_value *nxv = tensor_value(nx);
  const ct_value *nargs[1] = {nxv};
  CT_OK_OR_FAIL(ct_module_call(&out, m, "ops", nargs, 1, NULL, NULL, 0));
  const float e4[4] = {0, 4, 0, 8};
  expect_tensor(out, e4, 4);
  ct_value_free(out);

  /* Empty generic lists take the schema's types; int list for List[float]. */
  ct_value *empty = NULL, *ints = NULL;
  CT_OK_OR_FAIL(ct_value_list(&empty, NULL, 0));
  int64_t iv[3] = {1, 2, 3};
  CT_OK_OR_FAIL(ct_value_int_list(&ints, iv, 3));
  const ct_value *largs[2] = {empty, ints};
  CT_OK_OR_FAIL(ct_module_call(&out, m, "lists", largs, 2, NULL, NULL, 0));
  int64_t n;
  CT_OK_OR_FAIL(ct_value_to_int(&n, out));
  assert_int_equal(n, 3);
  ct_value_free(out);
  const ct_value *largs2[2] = {ints, ints};
  out = NULL;
  CT_EXPECT_ERROR(ct_module_call(&out, m, "lists", largs2, 2, NULL, NULL, 0), CT_ERR_TYPE,
                  "argument 'xs' expected Tensor[] but got List[int]");

  ct_value_free(empty);
  ct_value_free(ints);
  ct_value_free(nxv);
  ct_tensor_free(nx);
  ct_value_free(s);
  ct_value_free(f);
  ct_value_free(o);
  ct_value_free(xv);
  ct_tensor_free(x);
  ct_module_free(m);
}

static int dict_has(const ct_value *d, const char *key) {
  ct_value *v = NULL;
  if (ct_value_dict_get_str(&v, d, key) != CT_OK) return 0;
  ct_value_free(v);
  return 1;
}

static void test_introspection(void **state) {
  (void)state;
  ct_module *m = make_net_full();
  ct_value *d = NULL, *v = NULL;
  size_t len;

  CT_OK_OR_FAIL(ct_module_methods(&d, m));
  assert_true(dict_has(d, "forward"));
  assert_true(dict_has(d, "scaled"));
  CT_OK_OR_FAIL(ct_value_dict_get_str(&v, d, "scaled"));
  const char *s;
  CT_OK_OR_FAIL(ct_value_as_string(&s, NULL, v));
  assert_string_equal(s,
                      "scaled(__torch__.Net self, Tensor x, float "
                      "factor=2., int offset=1) -> Tensor");
  ct_value_free(v);
  ct_value_free(d);

  CT_OK_OR_FAIL(ct_module_named_parameters(&d, m, 1));
  CT_OK_OR_FAIL(ct_value_length(&len, d));
  assert_int_equal(len, 2);
  assert_true(dict_has(d, "bias"));
  assert_true(dict_has(d, "lin.weight"));
  ct_value_free(d);
  CT_OK_OR_FAIL(ct_module_named_parameters(&d, m, 0));
  CT_OK_OR_FAIL(ct_value_length(&len, d));
  assert_int_equal(len, 1);
  ct_value_free(d);

  CT_OK_OR_FAIL(ct_module_named_buffers(&d, m, 1));
  CT_OK_OR_FAIL(ct_value_length(&len, d));
  assert_int_equal(len, 1);
  assert_true(dict_has(d, "scale"));
  ct_value_free(d);

  CT_OK_OR_FAIL(ct_module_named_attributes(&d, m, 1));
  assert_true(dict_has(d, "lin"));
  assert_true(dict_has(d, "lin.weight"));
  assert_true(dict_has(d, "training"));
  ct_value_free(d);

  CT_OK_OR_FAIL(ct_module_named_children(&d, m, 0));
  CT_OK_OR_FAIL(ct_value_length(&len, d));
  assert_int_equal(len, 1);
  CT_OK_OR_FAIL(ct_value_dict_get_str(&v, d, "lin"));
  assert_int_equal(ct_value_tag(v), CT_VALUE_OBJECT);
  ct_module *lin = NULL;
  CT_OK_OR_FAIL(ct_value_to_module(&lin, v));
  ct_value *lp = NULL;
  CT_OK_OR_FAIL(ct_module_named_parameters(&lp, lin, 1));
  assert_true(dict_has(lp, "weight"));
  ct_value_free(lp);
  ct_module_free(lin);
  ct_value_free(v);
  ct_value_free(d);
  CT_OK_OR_FAIL(ct_module_named_children(&d, m, 1));
  assert_true(dict_has(d, "lin"));
  ct_value_free(d);

  /* Parameters are the module's own tensors and require grad. */
  CT_OK_OR_FAIL(ct_module_get_attr(&v, m, "lin.weight"));
  ct_tensor *w = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&w, v));
  assert_int_equal(ct_tensor_requires_grad(w), 1);
  assert_true(((float *)ct_tensor_data_ptr(w))[3] == 4.0f);
  ct_tensor_free(w);
  ct_value_free(v);
  v = NULL;

  CT_EXPECT_ERROR(ct_module_get_attr(&v, m, "lin.nope"), CT_ERR_NOT_FOUND,
                  "no attribute 'lin.nope'");
  CT_EXPECT_ERROR(ct_module_get_attr(&v, m, "nope.weight"), CT_ERR_NOT_FOUND,
                  "no attribute 'nope'");
  CT_EXPECT_ERROR(ct_module_get_attr(&v, m, "bias.x"), CT_ERR_NOT_FOUND, "'bias' is not a module");
  CT_EXPECT_ERROR(ct_module_get_attr(&v, m, ""), CT_ERR_NOT_FOUND, "no attribute");
  CT_EXPECT_ERROR(ct_module_get_attr(&v, m, NULL), CT_ERR_INVALID_ARGUMENT, "'name' is NULL");
  CT_EXPECT_ERROR(ct_module_get_attr(&v, NULL, "x"), CT_ERR_INVALID_ARGUMENT, "'m' is NULL");
  CT_EXPECT_ERROR(ct_module_methods(NULL, m), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_module_named_parameters(&v, NULL, 1), CT_ERR_INVALID_ARGUMENT, "'m' is NULL");
  CT_EXPECT_ERROR(ct_module_named_buffers(NULL, m, 1), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_module_named_attributes(NULL, m, 1), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_module_named_children(NULL, m, 1), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_module_extra_files(NULL, m), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  assert_null(v);
  CT_OK_OR_FAIL(ct_module_extra_files(&d, m));
  CT_OK_OR_FAIL(ct_value_length(&len, d));
  assert_int_equal(len, 0);
  ct_value_free(d);
  ct_module_free(m);
}

static void test_set_attr_train_to(void **state) {
  (void)state;
  ct_module *m = make_net_full();
  ct_tensor *nb = NULL;
  float bd[2] = {10, 20};
  int64_t bs[1] = {2};
  nb = test_tensor_f32(bd, bs, 1);
  ct_value *nbv = tensor_value(nb), *v = NULL, *iv = NULL;
  CT_OK_OR_FAIL(ct_module_set_attr(m, "bias", nbv));
  CT_OK_OR_FAIL(ct_module_get_attr(&v, m, "bias"));
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, v));
  assert_true(((float *)ct_tensor_data_ptr(t))[1] == 20.0f);
  ct_tensor_free(t);
  ct_value_free(v);
  CT_OK_OR_FAIL(ct_value_from_int(&iv, 1));
  CT_EXPECT_ERROR(ct_module_set_attr(m, "bias", iv), CT_ERR_TYPE,
                  "attribute 'bias' has type Tensor, got int");
  CT_EXPECT_ERROR(ct_module_set_attr(m, "lin.nope", iv), CT_ERR_NOT_FOUND,
                  "no attribute 'lin.nope'");
  CT_EXPECT_ERROR(ct_module_set_attr(m, "bias", NULL), CT_ERR_INVALID_ARGUMENT, "'v' is NULL");
  CT_EXPECT_ERROR(ct_module_set_attr(NULL, "bias", iv), CT_ERR_INVALID_ARGUMENT, "'m' is NULL");
  /* Dotted set on a child. */
  ct_tensor *nw = tensor2x2(0, 0, 0, 0);
  ct_value *nwv = tensor_value(nw);
  CT_OK_OR_FAIL(ct_module_set_attr(m, "lin.weight", nwv));

  /* train / eval, recursively. */
  assert_int_equal(ct_module_is_training(m), 1);
  CT_OK_OR_FAIL(ct_module_eval(m));
  assert_int_equal(ct_module_is_training(m), 0);
  CT_OK_OR_FAIL(ct_module_get_attr(&v, m, "lin.training"));
  int32_t b;
  CT_OK_OR_FAIL(ct_value_to_bool(&b, v));
  assert_int_equal(b, 0);
  ct_value_free(v);
  CT_OK_OR_FAIL(ct_module_train(m, 1));
  assert_int_equal(ct_module_is_training(m), 1);
  assert_int_equal(ct_module_is_training(NULL), -1);
  CT_EXPECT_ERROR(ct_module_train(NULL, 1), CT_ERR_INVALID_ARGUMENT, "'m' is NULL");
  CT_EXPECT_ERROR(ct_module_eval(NULL), CT_ERR_INVALID_ARGUMENT, "'m' is NULL");

  /* to(float64): floating parameters and buffers change dtype. */
  CT_OK_OR_FAIL(ct_module_to(m, CT_DEVICE_KEEP, -1, CT_FLOAT64, 0));
  CT_OK_OR_FAIL(ct_module_get_attr(&v, m, "lin.weight"));
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, v));
  assert_int_equal(ct_tensor_dtype(t), CT_FLOAT64);
  ct_tensor_free(t);
  ct_value_free(v);
  /* Parameters stay parameters (requires_grad kept). */
  {
    ct_module *m2 = make_net_full();
    CT_OK_OR_FAIL(ct_module_to(m2, CT_DEVICE_CPU, -1, CT_FLOAT64, 0));
    CT_OK_OR_FAIL(ct_module_get_attr(&v, m2, "lin.weight"));
    CT_OK_OR_FAIL(ct_value_to_tensor(&t, v));
    assert_int_equal(ct_tensor_dtype(t), CT_FLOAT64);
    assert_int_equal(ct_tensor_requires_grad(t), 1);
    assert_int_equal(ct_tensor_is_leaf(t), 1);
    ct_tensor_free(t);
    ct_value_free(v);
    ct_module_free(m2);
  }
  CT_OK_OR_FAIL(ct_module_to(m, CT_DEVICE_CPU, -1, CT_DTYPE_KEEP, 0));
  CT_OK_OR_FAIL(ct_module_to(m, CT_DEVICE_KEEP, -1, CT_DTYPE_KEEP, 0));
  CT_EXPECT_ERROR(ct_module_to(m, CT_DEVICE_KEEP, -1, CT_INT32, 0), CT_ERR_TYPE,
                  "dtype must be floating");
  assert_int_not_equal(ct_module_to(m, CT_DEVICE_KEEP, -1, 999, 0), CT_OK);
  assert_int_not_equal(ct_module_to(m, 77, 0, CT_DTYPE_KEEP, 0), CT_OK);
  CT_EXPECT_ERROR(ct_module_to(NULL, CT_DEVICE_CPU, -1, CT_DTYPE_KEEP, 0), CT_ERR_INVALID_ARGUMENT,
                  "'m' is NULL");

  ct_value_free(nwv);
  ct_tensor_free(nw);
  ct_value_free(iv);
  ct_value_free(nbv);
  ct_tensor_free(nb);
  ct_module_free(m);
}

static void test_register_errors(void **state) {
  (void)state;
  ct_module *m = make_net(), *c = NULL;
  ct_tensor *t = tensor2x2(1, 1, 1, 1);
  CT_EXPECT_ERROR(ct_module_register_parameter(m, "bias", t, 0), CT_ERR_INVALID_ARGUMENT,
                  "name 'bias' is already in use");
  CT_EXPECT_ERROR(ct_module_register_buffer(m, "lin", t), CT_ERR_INVALID_ARGUMENT,
                  "already in use");
  CT_EXPECT_ERROR(ct_module_register_buffer(m, "a.b", t), CT_ERR_INVALID_ARGUMENT,
                  "not a valid attribute name");
  CT_EXPECT_ERROR(ct_module_register_parameter(m, "", t, 0), CT_ERR_INVALID_ARGUMENT,
                  "not a valid attribute name");
  CT_EXPECT_ERROR(ct_module_register_parameter(m, "p", NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "'t' is NULL");
  CT_EXPECT_ERROR(ct_module_register_parameter(NULL, "p", t, 0), CT_ERR_INVALID_ARGUMENT,
                  "'m' is NULL");
  CT_EXPECT_ERROR(ct_module_register_buffer(m, NULL, t), CT_ERR_INVALID_ARGUMENT, "'name' is NULL");
  CT_EXPECT_ERROR(ct_module_register_module(m, "self_", m), CT_ERR_INVALID_ARGUMENT,
                  "cannot contain itself");
  CT_EXPECT_ERROR(ct_module_register_module(m, "x", NULL), CT_ERR_INVALID_ARGUMENT,
                  "'child' is NULL");
  ct_tensor *it = NULL;
  int64_t sz[1] = {2};
  CT_OK_OR_FAIL(ct_tensor_zeros(&it, sz, 1, CT_INT64, CT_DEVICE_CPU, -1, 0));
  CT_EXPECT_ERROR(ct_module_register_parameter(m, "ip", it, 1), CT_ERR_TYPE, "can require grad");
  CT_OK_OR_FAIL(ct_module_register_parameter(m, "ip", it, 0));
  CT_EXPECT_ERROR(ct_module_new(&c, "bad name"), CT_ERR_INVALID_ARGUMENT, "not a valid class name");
  CT_EXPECT_ERROR(ct_module_new(&c, NULL), CT_ERR_INVALID_ARGUMENT, "'class_name' is NULL");
  CT_EXPECT_ERROR(ct_module_new(NULL, "X"), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  assert_null(c);
  /* Bad source: the compiler's message. */
  CT_EXPECT_ERROR(ct_module_define(m, "def f(self):\n    return undefined_thing\n"), CT_ERR_TORCH,
                  "undefined_thing");
  CT_EXPECT_ERROR(ct_module_define(m, "def f(self) return\n"), CT_ERR_TORCH, "ct_module_define");
  CT_EXPECT_ERROR(ct_module_define(m, NULL), CT_ERR_INVALID_ARGUMENT, "'source' is NULL");
  CT_EXPECT_ERROR(ct_module_define(NULL, "x"), CT_ERR_INVALID_ARGUMENT, "'m' is NULL");
  ct_tensor_free(it);
  ct_tensor_free(t);
  ct_module_free(m);
}

static void forward_once(ct_module *m, float a, float *out4) {
  ct_tensor *x = tensor2x2(a, 1, 0, 1);
  ct_value *xv = tensor_value(x), *out = NULL;
  const ct_value *args[1] = {xv};
  CT_OK_OR_FAIL(ct_module_forward(&out, m, args, 1));
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, out));
  memcpy(out4, ct_tensor_data_ptr(t), 4 * sizeof(float));
  ct_tensor_free(t);
  ct_value_free(out);
  ct_value_free(xv);
  ct_tensor_free(x);
}

static void test_clone_save_load(void **state) {
  (void)state;
  ct_module *m = make_net_full(), *c = NULL, *l = NULL;
  float ref[4], got[4];
  forward_once(m, 3, ref);

  /* Clone is deep: changing the clone's parameter leaves m alone. */
  CT_OK_OR_FAIL(ct_module_clone(&c, m));
  ct_tensor *z = tensor2x2(0, 0, 0, 0);
  ct_value *zv = tensor_value(z);
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_module_get_attr(&v, c, "lin.weight"));
  ct_tensor *cw = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&cw, v));
  CT_OK_OR_FAIL(ct_tensor_fill_(cw, 0.0));
  ct_tensor_free(cw);
  ct_value_free(v);
  forward_once(m, 3, got);
  assert_memory_equal(ref, got, sizeof ref);
  forward_once(c, 3, got);
  assert_true(got[0] == 0.5f);
  ct_module_free(c);
  c = NULL;
  CT_EXPECT_ERROR(ct_module_clone(&c, NULL), CT_ERR_INVALID_ARGUMENT, "'m' is NULL");
  CT_EXPECT_ERROR(ct_module_clone(NULL, m), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");

  /* Save with extra files, load from path and from buffer. */
  char path[] = "/tmp/ct_test_module_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  ct_value *k = NULL, *val = NULL, *extra = NULL;
  CT_OK_OR_FAIL(ct_value_from_string(&k, "meta.json", 9));
  CT_OK_OR_FAIL(ct_value_from_string(&val, "{\"v\": 1}", 8));
  const ct_value *keys[1] = {k}, *vals[1] = {val};
  CT_OK_OR_FAIL(ct_value_dict(&extra, keys, vals, 1));
  CT_OK_OR_FAIL(ct_module_save(m, path, extra));
  CT_OK_OR_FAIL(ct_module_load(&l, path, CT_DEVICE_KEEP, -1));
  forward_once(l, 3, got);
  assert_memory_equal(ref, got, sizeof ref);
  ct_value *ef = NULL, *meta = NULL;
  CT_OK_OR_FAIL(ct_module_extra_files(&ef, l));
  CT_OK_OR_FAIL(ct_value_dict_get_str(&meta, ef, "meta.json"));
  const char *s;
  CT_OK_OR_FAIL(ct_value_as_string(&s, NULL, meta));
  assert_string_equal(s, "{\"v\": 1}");
  ct_value_free(meta);
  ct_value_free(ef);
  /* Methods with defaults survive the round trip. */
  ct_tensor *x = tensor2x2(1, 2, 3, 4);
  ct_value *xv = tensor_value(x), *out = NULL;
  const ct_value *args[1] = {xv};
  CT_OK_OR_FAIL(ct_module_call(&out, l, "scaled", args, 1, NULL, NULL, 0));
  const float e1[4] = {3, 5, 7, 9};
  expect_tensor(out, e1, 4);
  ct_value_free(out);
  ct_module_free(l);
  l = NULL;
  CT_OK_OR_FAIL(ct_module_load(&l, path, CT_DEVICE_CPU, -1)); /* map_location */
  ct_module_free(l);
  l = NULL;

  void *buf = NULL;
  size_t size = 0;
  CT_OK_OR_FAIL(ct_module_save_buffer(&buf, &size, m, NULL));
  CT_OK_OR_FAIL(ct_module_load_buffer(&l, buf, size, CT_DEVICE_KEEP, -1));
  forward_once(l, 3, got);
  assert_memory_equal(ref, got, sizeof ref);
  ct_module_free(l);
  l = NULL;
  /* Truncated buffer. */
  CT_EXPECT_ERROR(ct_module_load_buffer(&l, buf, size / 2, CT_DEVICE_KEEP, -1), CT_ERR_IO,
                  "ct_module_load_buffer");
  CT_EXPECT_ERROR(ct_module_load_buffer(&l, buf, 0, CT_DEVICE_KEEP, -1), CT_ERR_IO,
                  "the buffer is empty");
  CT_EXPECT_ERROR(ct_module_load_buffer(&l, NULL, 10, CT_DEVICE_KEEP, -1), CT_ERR_INVALID_ARGUMENT,
                  "'data' is NULL");
  CT_EXPECT_ERROR(ct_module_load_buffer(NULL, buf, size, CT_DEVICE_KEEP, -1),
                  CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  assert_int_not_equal(ct_module_load_buffer(&l, buf, size, 99, 0), CT_OK);
  /* Truncated file. */
  FILE *f = fopen(path, "wb");
  fwrite(buf, 1, size - 100, f);
  fclose(f);
  CT_EXPECT_ERROR(ct_module_load(&l, path, CT_DEVICE_KEEP, -1), CT_ERR_IO, "ct_module_load");
  assert_null(l);
  ct_free(buf);

  /* Save errors. */
  CT_EXPECT_ERROR(ct_module_save(m, "/nonexistent/dir/m.pt", NULL), CT_ERR_IO,
                  "cannot save to '/nonexistent/dir/m.pt'");
  CT_EXPECT_ERROR(ct_module_save(m, path, k), CT_ERR_TYPE, "extra_files must be a Dict[str, str]");
  CT_EXPECT_ERROR(ct_module_save(NULL, path, NULL), CT_ERR_INVALID_ARGUMENT, "'m' is NULL");
  CT_EXPECT_ERROR(ct_module_save(m, NULL, NULL), CT_ERR_INVALID_ARGUMENT, "'path' is NULL");
  CT_EXPECT_ERROR(ct_module_save_buffer(NULL, &size, m, NULL), CT_ERR_INVALID_ARGUMENT,
                  "'data_out'");
  CT_EXPECT_ERROR(ct_module_save_buffer(&buf, &size, m, zv), CT_ERR_TYPE, "extra_files");

  unlink(path);
  ct_value_free(xv);
  ct_tensor_free(x);
  ct_value_free(extra);
  ct_value_free(k);
  ct_value_free(val);
  ct_value_free(zv);
  ct_tensor_free(z);
  ct_module_free(m);
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (n) fwrite(data, 1, n, f);
  fclose(f);
}

static void test_bad_files(void **state) {
  (void)state;
  ct_module *l = NULL;
  char path[] = "/tmp/ct_test_bad_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  CT_EXPECT_ERROR(ct_module_load(&l, "/nonexistent/model.pt", CT_DEVICE_KEEP, -1), CT_ERR_NOT_FOUND,
                  "cannot open '/nonexistent/model.pt'");
  CT_EXPECT_ERROR(ct_module_load(&l, "/tmp", CT_DEVICE_KEEP, -1), CT_ERR_IO, "is a directory");
  write_file(path, "", 0);
  CT_EXPECT_ERROR(ct_module_load(&l, path, CT_DEVICE_KEEP, -1), CT_ERR_IO, "is empty");
  unsigned char junk[4096];
  srand(1234);
  for (size_t i = 0; i < sizeof junk; ++i) junk[i] = (unsigned char)rand();
  write_file(path, junk, sizeof junk);
  CT_EXPECT_ERROR(ct_module_load(&l, path, CT_DEVICE_KEEP, -1), CT_ERR_IO, "ct_module_load");
  write_file(path, "PK\x03\x04 not really a zip", 22);
  CT_EXPECT_ERROR(ct_module_load(&l, path, CT_DEVICE_KEEP, -1), CT_ERR_IO, "ct_module_load");
  /* A torch.save pickle made from C. */
  ct_value *iv = NULL;
  CT_OK_OR_FAIL(ct_value_from_int(&iv, 5));
  CT_OK_OR_FAIL(ct_pickle_save(iv, path));
  CT_EXPECT_ERROR(ct_module_load(&l, path, CT_DEVICE_KEEP, -1), CT_ERR_IO,
                  "is a torch.save pickle, not a TorchScript archive");
  ct_value_free(iv);
  CT_EXPECT_ERROR(ct_module_load(&l, NULL, CT_DEVICE_KEEP, -1), CT_ERR_INVALID_ARGUMENT,
                  "'path' is NULL");
  CT_EXPECT_ERROR(ct_module_load(NULL, path, CT_DEVICE_KEEP, -1), CT_ERR_INVALID_ARGUMENT,
                  "'out' is NULL");
  assert_null(l);
  unlink(path);
}

static void test_freeze_optimize(void **state) {
  (void)state;
  ct_module *m = make_net_full(), *fz = NULL, *op = NULL;
  float ref[4], got[4];
  forward_once(m, 3, ref);
  CT_OK_OR_FAIL(ct_module_freeze(&fz, m));
  assert_int_equal(ct_module_is_training(m), 1); /* input unchanged */
  forward_once(fz, 3, got);
  assert_memory_equal(ref, got, sizeof ref);
  ct_value *d = NULL;
  size_t len;
  CT_OK_OR_FAIL(ct_module_named_parameters(&d, fz, 1));
  CT_OK_OR_FAIL(ct_value_length(&len, d));
  assert_int_equal(len, 0); /* folded into constants */
  ct_value_free(d);
  CT_OK_OR_FAIL(ct_module_optimize_for_inference(&op, m));
  forward_once(op, 3, got);
  assert_memory_equal(ref, got, sizeof ref);
  ct_module_free(op);
  op = NULL;
  CT_OK_OR_FAIL(ct_module_optimize_for_inference(&op, fz)); /* already frozen */
  forward_once(op, 3, got);
  assert_memory_equal(ref, got, sizeof ref);
  ct_module_free(op);
  ct_module_free(fz);
  fz = NULL;
  CT_EXPECT_ERROR(ct_module_freeze(&fz, NULL), CT_ERR_INVALID_ARGUMENT, "'m' is NULL");
  CT_EXPECT_ERROR(ct_module_optimize_for_inference(NULL, m), CT_ERR_INVALID_ARGUMENT,
                  "'out' is NULL");
  ct_module_free(m);
}

/* ---- Threads: 8 threads run one module's forward at once. */
#define NTHREADS 8
#define NITER 200
struct thread_arg {
  ct_module *m;
  ct_value *x;
  const float *expected;
  int64_t n;
  int failures;
};

static void *thread_main(void *p) {
  struct thread_arg *a = (struct thread_arg *)p;
  const ct_value *args[1] = {a->x};
  for (int it = 0; it < NITER; ++it) {
    ct_value *out = NULL;
    if (ct_module_forward(&out, a->m, args, 1) != CT_OK) {
      a->failures++;
      continue;
    }
    ct_tensor *t = NULL;
    if (ct_value_to_tensor(&t, out) != CT_OK) {
      a->failures++;
    } else {
      const float *q = (const float *)ct_tensor_data_ptr(t);
      if (ct_tensor_numel(t) != a->n || memcmp(q, a->expected, (size_t)a->n * sizeof(float)))
        a->failures++;
      ct_tensor_free(t);
    }
    ct_value_free(out);
  }
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  ct_module *m = NULL;
  CT_OK_OR_FAIL(ct_module_new(&m, "Mlp"));
  ct_tensor *w1 = NULL, *w2 = NULL;
  int64_t s1[2] = {64, 64};
  CT_OK_OR_FAIL(ct_manual_seed(7));
  CT_OK_OR_FAIL(ct_tensor_randn(&w1, s1, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_tensor_randn(&w2, s1, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_module_register_parameter(m, "w1", w1, 0));
  CT_OK_OR_FAIL(ct_module_register_parameter(m, "w2", w2, 0));
  CT_OK_OR_FAIL(ct_module_define(m,
                                 "def forward(self, x):\n"
                                 "    h = torch.relu(torch.matmul(x, self.w1))\n"
                                 "    for i in range(3):\n"
                                 "        h = torch.tanh(torch.matmul(h, self.w2))\n"
                                 "    return h\n"));
  struct thread_arg args[NTHREADS];
  ct_tensor *xs[NTHREADS];
  float *expected[NTHREADS];
  int64_t sx[2] = {4, 64};
  for (int i = 0; i < NTHREADS; ++i) {
    CT_OK_OR_FAIL(ct_tensor_randn(&xs[i], sx, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
    args[i].m = m;
    args[i].x = tensor_value(xs[i]);
    args[i].n = 4 * 64;
    args[i].failures = 0;
    /* Single-threaded reference. */
    const ct_value *a1[1] = {args[i].x};
    ct_value *out = NULL;
    CT_OK_OR_FAIL(ct_module_forward(&out, m, a1, 1));
    ct_tensor *t = NULL;
    CT_OK_OR_FAIL(ct_value_to_tensor(&t, out));
    expected[i] = malloc(4 * 64 * sizeof(float));
    memcpy(expected[i], ct_tensor_data_ptr(t), 4 * 64 * sizeof(float));
    args[i].expected = expected[i];
    ct_tensor_free(t);
    ct_value_free(out);
  }
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; ++i)
    assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
  for (int i = 0; i < NTHREADS; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < NTHREADS; ++i) {
    assert_int_equal(args[i].failures, 0);
    ct_value_free(args[i].x);
    ct_tensor_free(xs[i]);
    free(expected[i]);
  }
  ct_tensor_free(w1);
  ct_tensor_free(w2);
  ct_module_free(m);
}

static void test_script(void **state) {
  (void)state;
  ct_script *s = NULL;
  CT_OK_OR_FAIL(ct_script_compile(&s,
                                  "def add(a: int, b: int = 10) -> int:\n"
                                  "    return a + b\n"
                                  "def relu2(x):\n"
                                  "    return aten.relu(x) * 2\n"
                                  "def twice(x: float):\n"
                                  "    return x * 2\n"
                                  "def fail(x: int) -> int:\n"
                                  "    if x > 0:\n"
                                  "        raise ValueError('positive ' + str(x))\n"
                                  "    return x\n"));
  ct_value *names = NULL;
  CT_OK_OR_FAIL(ct_script_functions(&names, s));
  size_t len;
  CT_OK_OR_FAIL(ct_value_length(&len, names));
  assert_int_equal(len, 4);
  ct_value *n0 = NULL;
  CT_OK_OR_FAIL(ct_value_get(&n0, names, 0));
  const char *str;
  CT_OK_OR_FAIL(ct_value_as_string(&str, NULL, n0));
  assert_string_equal(str, "add");
  ct_value_free(n0);
  ct_value_free(names);

  ct_value *a = NULL, *b = NULL, *out = NULL;
  CT_OK_OR_FAIL(ct_value_from_int(&a, 5));
  CT_OK_OR_FAIL(ct_value_from_int(&b, 1));
  const ct_value *args[1] = {a};
  CT_OK_OR_FAIL(ct_script_call(&out, s, "add", args, 1, NULL, NULL, 0));
  int64_t r;
  CT_OK_OR_FAIL(ct_value_to_int(&r, out));
  assert_int_equal(r, 15);
  ct_value_free(out);
  const char *kn[1] = {"b"};
  const ct_value *kv[1] = {b};
  CT_OK_OR_FAIL(ct_script_call(&out, s, "add", args, 1, kn, kv, 1));
  CT_OK_OR_FAIL(ct_value_to_int(&r, out));
  assert_int_equal(r, 6);
  ct_value_free(out);
  CT_OK_OR_FAIL(ct_script_call(&out, s, "twice", args, 1, NULL, NULL, 0)); /* int -> float */
  double d;
  CT_OK_OR_FAIL(ct_value_to_double(&d, out));
  assert_true(d == 10.0);
  ct_value_free(out);
  ct_tensor *x = tensor2x2(-1, 1, -2, 2);
  ct_value *xv = tensor_value(x);
  const ct_value *xa[1] = {xv};
  CT_OK_OR_FAIL(ct_script_call(&out, s, "relu2", xa, 1, NULL, NULL, 0));
  const float e[4] = {0, 2, 0, 4};
  expect_tensor(out, e, 4);
  ct_value_free(out);
  out = NULL;
  CT_EXPECT_ERROR(ct_script_call(&out, s, "fail", args, 1, NULL, NULL, 0), CT_ERR_TORCH,
                  "positive 5");
  CT_EXPECT_ERROR(ct_script_call(&out, s, "nope", args, 1, NULL, NULL, 0), CT_ERR_NOT_FOUND,
                  "no function 'nope'");
  CT_EXPECT_ERROR(ct_script_call(&out, s, "add", xa, 1, NULL, NULL, 0), CT_ERR_TYPE,
                  "argument 'a' expected int but got Tensor");
  CT_EXPECT_ERROR(ct_script_call(&out, s, "add", NULL, 0, NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "missing argument 'a'");
  CT_EXPECT_ERROR(ct_script_call(&out, NULL, "add", args, 1, NULL, NULL, 0),
                  CT_ERR_INVALID_ARGUMENT, "'s' is NULL");
  CT_EXPECT_ERROR(ct_script_call(&out, s, NULL, args, 1, NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "'function' is NULL");
  CT_EXPECT_ERROR(ct_script_functions(NULL, s), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  assert_null(out);
  ct_script *bad = NULL;
  CT_EXPECT_ERROR(ct_script_compile(&bad, "def f(x):\n    return nonexistent_ns.foo(x)\n"),
                  CT_ERR_TORCH, "nonexistent_ns");
  CT_EXPECT_ERROR(ct_script_compile(&bad, NULL), CT_ERR_INVALID_ARGUMENT, "'source' is NULL");
  CT_EXPECT_ERROR(ct_script_compile(NULL, "def f(x):\n    return x\n"), CT_ERR_INVALID_ARGUMENT,
                  "'out' is NULL");
  assert_null(bad);
  ct_value_free(xv);
  ct_tensor_free(x);
  ct_value_free(a);
  ct_value_free(b);
  ct_script_free(s);
  ct_script_free(NULL);
}

/* ct_module_forward_tensors: tensors in, tensors out, the same results as
 * ct_module_forward / ct_module_call; no copies; every error path. */
static const char *TENSORS_SRC =
    "def forward(self, x):\n"
    "    return x\n"
    "def three(self, x):\n"
    "    return x, x + 1, x * 2\n"
    "def listed(self, x, y):\n"
    "    return [x + y, x - y]\n"
    "def count(self, x):\n"
    "    return x.numel()\n"
    "def nothing(self, x):\n"
    "    return None\n"
    "def mixed(self, x):\n"
    "    return x, 1\n";

static void delete_count(void *data, void *ctx) {
  (void)data;
  ++*(int *)ctx;
}

static void expect_same_tensor(const ct_tensor *a, const ct_value *v) {
  ct_tensor *b = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&b, v));
  int32_t eq = 0;
  CT_OK_OR_FAIL(ct_tensor_equal(&eq, a, b));
  assert_int_equal(eq, 1);
  ct_tensor_free(b);
}

static void test_forward_tensors(void **state) {
  (void)state;
  ct_module *m = make_net_full();
  ct_tensor *x = tensor2x2(1, 2, 3, 4);
  ct_value *xv = tensor_value(x), *ref = NULL, *item = NULL;
  const ct_tensor *in[2] = {x, x};
  const ct_value *args[1] = {xv};
  ct_tensor *outs[3] = {NULL, NULL, NULL};
  size_t nret = 99;

  /* forward (method NULL): the same result as ct_module_forward. */
  CT_OK_OR_FAIL(ct_module_forward_tensors(outs, 1, &nret, m, NULL, in, 1));
  assert_int_equal(nret, 1);
  CT_OK_OR_FAIL(ct_module_forward(&ref, m, args, 1));
  expect_same_tensor(outs[0], ref);
  ct_value_free(ref);
  ct_tensor_free(outs[0]);
  /* A named method with defaults, as ct_module_call; n_returned may be NULL. */
  CT_OK_OR_FAIL(ct_module_forward_tensors(outs, 1, NULL, m, "scaled", in, 1));
  CT_OK_OR_FAIL(ct_module_call(&ref, m, "scaled", args, 1, NULL, NULL, 0));
  expect_same_tensor(outs[0], ref);
  ct_value_free(ref);
  ct_tensor_free(outs[0]);
  /* A tuple: one output per element; spare slots are set to NULL. */
  outs[0] = outs[1] = outs[2] = (ct_tensor *)&nret; /* garbage sentinels */
  CT_OK_OR_FAIL(ct_module_forward_tensors(outs, 3, &nret, m, "pair", in, 1));
  assert_int_equal(nret, 2);
  assert_null(outs[2]);
  CT_OK_OR_FAIL(ct_module_call(&ref, m, "pair", args, 1, NULL, NULL, 0));
  for (size_t i = 0; i < 2; ++i) {
    CT_OK_OR_FAIL(ct_value_get(&item, ref, i));
    expect_same_tensor(outs[i], item);
    ct_value_free(item);
    ct_tensor_free(outs[i]);
  }
  ct_value_free(ref);
  outs[0] = outs[1] = outs[2] = NULL;

  /* Errors: too many results for the slots (count reported, slots untouched). */
  CT_EXPECT_ERROR(ct_module_forward_tensors(outs, 1, &nret, m, "pair", in, 1),
                  CT_ERR_INVALID_ARGUMENT, "pair returns 2 tensors, n_outputs is 1 (not run)");
  assert_int_equal(nret, 2);
  assert_null(outs[0]);
  /* Arguments: the same binder and messages as ct_module_call. */
  CT_EXPECT_ERROR(ct_module_forward_tensors(outs, 1, &nret, m, NULL, in, 0),
                  CT_ERR_INVALID_ARGUMENT, "missing argument 'x'");
  CT_EXPECT_ERROR(ct_module_forward_tensors(outs, 1, &nret, m, NULL, in, 2),
                  CT_ERR_INVALID_ARGUMENT, "forward(__torch__.Net self, Tensor x) -> Tensor");
  CT_EXPECT_ERROR(ct_module_forward_tensors(outs, 1, &nret, m, "nope", in, 1), CT_ERR_NOT_FOUND,
                  "has no method 'nope'");
  CT_EXPECT_ERROR(ct_module_forward_tensors(outs, 1, &nret, NULL, NULL, in, 1),
                  CT_ERR_INVALID_ARGUMENT, "ct_module_forward_tensors: argument 'm' is NULL");
  CT_EXPECT_ERROR(ct_module_forward_tensors(NULL, 1, &nret, m, NULL, in, 1),
                  CT_ERR_INVALID_ARGUMENT, "argument 'outputs' is NULL");
  CT_EXPECT_ERROR(ct_module_forward_tensors(outs, 1, &nret, m, NULL, NULL, 1),
                  CT_ERR_INVALID_ARGUMENT, "argument 'inputs' is NULL");
  const ct_tensor *with_null[1] = {NULL};
  CT_EXPECT_ERROR(ct_module_forward_tensors(outs, 1, &nret, m, NULL, with_null, 1),
                  CT_ERR_INVALID_ARGUMENT, "inputs[0] is NULL");
  /* Errors inside the model keep their code and short first line. */
  CT_EXPECT_ERROR(ct_module_forward_tensors(outs, 1, &nret, m, "boom", in, 1), CT_ERR_TORCH,
                  "boom happened");
  assert_null(outs[0]);
  ct_value_free(xv);
  ct_module_free(m);

  /* A module whose methods return the input itself, lists, and non-tensors. */
  CT_OK_OR_FAIL(ct_module_new(&m, "Tensors"));
  CT_OK_OR_FAIL(ct_module_define(m, TENSORS_SRC));
  /* Zero-copy: the input's memory comes back, writes are seen, and the
   * memory is released exactly once, after the last handle. */
  float data[3] = {1, 2, 3};
  int64_t n3[1] = {3};
  int deleted = 0;
  ct_tensor *blob = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_blob(&blob, data, n3, 1, NULL, CT_FLOAT32, CT_DEVICE_CPU, -1,
                                    delete_count, &deleted));
  const ct_tensor *bin[2] = {blob, blob};
  CT_OK_OR_FAIL(ct_module_forward_tensors(outs, 1, &nret, m, NULL, bin, 1));
  assert_ptr_equal(ct_tensor_data_ptr(outs[0]), data);
  data[1] = 20;
  assert_true(((const float *)ct_tensor_data_ptr(outs[0]))[1] == 20);
  /* Three results, one of them the input. */
  ct_tensor *three[3] = {NULL, NULL, NULL};
  CT_OK_OR_FAIL(ct_module_forward_tensors(three, 3, &nret, m, "three", bin, 1));
  assert_int_equal(nret, 3);
  assert_ptr_equal(ct_tensor_data_ptr(three[0]), data);
  assert_true(((const float *)ct_tensor_data_ptr(three[1]))[1] == 21);
  assert_true(((const float *)ct_tensor_data_ptr(three[2]))[2] == 6);
  for (size_t i = 0; i < 3; ++i) ct_tensor_free(three[i]);
  /* A list of tensors counts as that many results. */
  CT_OK_OR_FAIL(ct_module_forward_tensors(three, 3, &nret, m, "listed", bin, 2));
  assert_int_equal(nret, 2);
  assert_true(((const float *)ct_tensor_data_ptr(three[0]))[1] == 40);
  assert_true(((const float *)ct_tensor_data_ptr(three[1]))[1] == 0);
  assert_null(three[2]);
  ct_tensor_free(three[0]);
  ct_tensor_free(three[1]);
  three[0] = three[1] = NULL;
  /* Results that are not all tensors: CT_ERR_TYPE (callers use ct_module_call). */
  CT_EXPECT_ERROR(ct_module_forward_tensors(three, 3, &nret, m, "count", bin, 1), CT_ERR_TYPE,
                  "count returns int, not a Tensor or a tuple or list of Tensors (not run");
  CT_EXPECT_ERROR(ct_module_forward_tensors(three, 3, &nret, m, "nothing", bin, 1), CT_ERR_TYPE,
                  "nothing returns NoneType");
  CT_EXPECT_ERROR(ct_module_forward_tensors(three, 3, &nret, m, "mixed", bin, 1), CT_ERR_TYPE,
                  "mixed returns Tuple[Tensor, int]");
  assert_null(three[0]);
  ct_tensor_free(blob);
  assert_int_equal(deleted, 0); /* outs[0] still holds the memory */
  ct_tensor_free(outs[0]);
  assert_int_equal(deleted, 1);
  ct_tensor_free(x);
  ct_module_free(m);
}

/* Issue 21: ct_module_forward_tensors decides from the schema before it runs,
 * so a model with side effects runs exactly once per call, whatever its
 * result: a tensor, a tuple, a list, a dict, none, or more tensors than slots. */
static const char *COUNTED_SRC =
    "def one(self, x):\n"
    "    self.calls.add_(1)\n"
    "    return x\n"
    "def pair(self, x):\n"
    "    self.calls.add_(1)\n"
    "    return x, x\n"
    "def listed(self, x):\n"
    "    self.calls.add_(1)\n"
    "    return [x, x, x]\n"
    "def named(self, x):\n"
    "    self.calls.add_(1)\n"
    "    return {'a': x}\n"
    "def nothing(self, x):\n"
    "    self.calls.add_(1)\n"
    "def many(self, x):\n"
    "    self.calls.add_(1)\n"
    "    return x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x\n";

static int64_t calls_of(ct_module *m) {
  ct_value *v = NULL;
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_module_get_attr(&v, m, "calls"));
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, v));
  int64_t n = *(const int64_t *)ct_tensor_data_ptr(t);
  ct_tensor_free(t);
  ct_value_free(v);
  return n;
}

static void test_forward_tensors_runs_once(void **state) {
  (void)state;
  ct_module *m = NULL;
  ct_tensor *calls = NULL, *x = tensor2x2(1, 2, 3, 4), *outs[20];
  const int64_t one[1] = {1};
  CT_OK_OR_FAIL(ct_tensor_zeros(&calls, one, 1, CT_INT64, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_module_new(&m, "Counted"));
  CT_OK_OR_FAIL(ct_module_register_buffer(m, "calls", calls));
  CT_OK_OR_FAIL(ct_module_define(m, COUNTED_SRC));
  const ct_tensor *in[1] = {x};
  size_t nret = 0;
  const struct {
    const char *method;
    int32_t kind;
    int64_t count;
    ct_status st; /* with 16 slots */
    size_t n;
  } cases[] = {
      {"one", CT_RESULT_TENSOR, 1, CT_OK, 1},
      {"pair", CT_RESULT_TUPLE, 2, CT_OK, 2},
      {"listed", CT_RESULT_LIST, -1, CT_OK, 3},
      {"named", CT_RESULT_OTHER, -1, CT_ERR_TYPE, 0},
      {"nothing", CT_RESULT_OTHER, -1, CT_ERR_TYPE, 0},
      {"many", CT_RESULT_TUPLE, 20, CT_ERR_INVALID_ARGUMENT, 20},
  };
  int64_t expected = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    int32_t kind = -1;
    int64_t count = 0;
    CT_OK_OR_FAIL(ct_module_method_results(&kind, &count, m, cases[i].method));
    assert_int_equal(kind, cases[i].kind);
    assert_int_equal(count, cases[i].count);
    nret = 0;
    ct_status st = ct_module_forward_tensors(outs, 16, &nret, m, cases[i].method, in, 1);
    if (st != cases[i].st) fail_msg("%s: status %d (%s)", cases[i].method, st, ct_last_error());
    if (st == CT_OK) {
      ++expected;
      for (size_t k = 0; k < nret; ++k) ct_tensor_free(outs[k]);
    } else {
      assert_non_null(strstr(ct_last_error(), "not run"));
    }
    assert_int_equal(nret, cases[i].n);
    if (calls_of(m) != expected)
      fail_msg("%s ran %lld times in all, expected %lld", cases[i].method,
               (long long)calls_of(m), (long long)expected);
  }
  /* Enough slots: more than 16 results come back. */
  CT_OK_OR_FAIL(ct_module_forward_tensors(outs, 20, &nret, m, "many", in, 1));
  assert_int_equal(nret, 20);
  for (size_t k = 0; k < 20; ++k) ct_tensor_free(outs[k]);
  assert_int_equal(calls_of(m), expected + 1);
  /* forward is the default method; unknown methods and NULLs. */
  int32_t kind = 0;
  CT_EXPECT_ERROR(ct_module_method_results(&kind, NULL, m, NULL), CT_ERR_NOT_FOUND,
                  "has no method 'forward'");
  CT_EXPECT_ERROR(ct_module_method_results(NULL, NULL, m, "one"), CT_ERR_INVALID_ARGUMENT,
                  "'kind' is NULL");
  CT_OK_OR_FAIL(ct_module_method_results(&kind, NULL, m, "pair"));
  assert_int_equal(kind, CT_RESULT_TUPLE);
  ct_tensor_free(calls);
  ct_tensor_free(x);
  ct_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_build_and_forward), cmocka_unit_test(test_call_kwargs),
      cmocka_unit_test(test_introspection),     cmocka_unit_test(test_set_attr_train_to),
      cmocka_unit_test(test_register_errors),   cmocka_unit_test(test_clone_save_load),
      cmocka_unit_test(test_bad_files),         cmocka_unit_test(test_freeze_optimize),
      cmocka_unit_test(test_threads),           cmocka_unit_test(test_script),
      cmocka_unit_test(test_forward_tensors),   cmocka_unit_test(test_forward_tensors_runs_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
