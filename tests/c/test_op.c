/* Operators by name: lookup, schemas, calls with kwargs/defaults, overload
 * sets, in-place and out= variants, errors. */
#include <pthread.h>

#include "test_util.h"

static const int64_t S4[1] = {4};

static ct_value *tv(ct_tensor *t) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&v, t));
  return v;
}
static ct_value *iv(int64_t i) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_from_int(&v, i));
  return v;
}
static ct_value *dv(double d) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_from_double(&v, d));
  return v;
}
static ct_value *bv(int32_t b) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_from_bool(&v, b));
  return v;
}
static ct_value *sv(const char *s) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_from_string(&v, s, strlen(s)));
  return v;
}
/* The tensor in a value (new handle); fails the test otherwise. */
static ct_tensor *vt(const ct_value *v) {
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, v));
  return t;
}
static ct_tensor *f32(float a, float b, float c, float d) {
  float x[4] = {a, b, c, d};
  return test_tensor_f32(x, S4, 1);
}
static void expect_f32(const ct_tensor *t, const float *want, size_t n) {
  assert_int_equal(ct_tensor_dtype(t), CT_FLOAT32);
  assert_int_equal(ct_tensor_numel(t), (int64_t)n);
  const float *p = (const float *)ct_tensor_data_ptr(t);
  assert_non_null(p);
  for (size_t i = 0; i < n; ++i) assert_float_equal(p[i], want[i], 1e-6);
}

static void test_find_and_schema(void **state) {
  (void)state;
  ct_op *op = NULL;
  CT_OK_OR_FAIL(ct_op_find(&op, "aten::add", "Tensor"));
  assert_int_equal(ct_op_num_overloads(op), 1);
  const char *s = NULL;
  CT_OK_OR_FAIL(ct_op_schema(&s, op, 0));
  assert_string_equal(s,
                      "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  size_t n = 0;
  CT_OK_OR_FAIL(ct_op_num_arguments(&n, op, 0));
  assert_int_equal(n, 3);
  const char *name = NULL, *type = NULL, *def = "x";
  int32_t kw = -1;
  CT_OK_OR_FAIL(ct_op_argument(&name, &type, &def, &kw, op, 0, 0));
  assert_string_equal(name, "self");
  assert_string_equal(type, "Tensor");
  assert_null(def);
  assert_int_equal(kw, 0);
  CT_OK_OR_FAIL(ct_op_argument(&name, &type, &def, &kw, op, 0, 2));
  assert_string_equal(name, "alpha");
  assert_string_equal(type, "Scalar");
  assert_string_equal(def, "1");
  assert_int_equal(kw, 1);
  /* Every out-parameter may be NULL. */
  CT_OK_OR_FAIL(ct_op_argument(NULL, NULL, NULL, NULL, op, 0, 1));
  CT_OK_OR_FAIL(ct_op_num_returns(&n, op, 0));
  assert_int_equal(n, 1);
  CT_OK_OR_FAIL(ct_op_return(&name, &type, op, 0, 0));
  assert_string_equal(type, "Tensor");

  CT_EXPECT_ERROR(ct_op_argument(&name, NULL, NULL, NULL, op, 0, 3), CT_ERR_INDEX, "out of range");
  CT_EXPECT_ERROR(ct_op_argument(&name, NULL, NULL, NULL, op, 1, 0), CT_ERR_INDEX,
                  "overload index");
  CT_EXPECT_ERROR(ct_op_schema(&s, op, 1), CT_ERR_INDEX, "aten::add");
  CT_EXPECT_ERROR(ct_op_return(&name, &type, op, 0, 1), CT_ERR_INDEX, "return index");
  CT_EXPECT_ERROR(ct_op_schema(NULL, op, 0), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_op_schema(&s, NULL, 0), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_op_num_arguments(NULL, op, 0), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_op_num_returns(&n, NULL, 0), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_op_argument(&name, NULL, NULL, NULL, NULL, 0, 0), CT_ERR_INVALID_ARGUMENT,
                  "NULL");
  CT_EXPECT_ERROR(ct_op_return(&name, NULL, NULL, 0, 0), CT_ERR_INVALID_ARGUMENT, "NULL");
  assert_int_equal(ct_op_num_overloads(NULL), 0);
  ct_op_free(op);
  ct_op_free(NULL);

  /* ScalarType and sized list types print as in the schema. */
  CT_OK_OR_FAIL(ct_op_find(&op, "aten::sum", "dim_IntList"));
  CT_OK_OR_FAIL(ct_op_argument(&name, &type, &def, &kw, op, 0, 1));
  assert_string_equal(name, "dim");
  assert_string_equal(type, "int[1]?");
  CT_OK_OR_FAIL(ct_op_argument(&name, &type, &def, &kw, op, 0, 2));
  assert_string_equal(name, "keepdim");
  assert_string_equal(def, "False");
  CT_OK_OR_FAIL(ct_op_argument(&name, &type, &def, &kw, op, 0, 3));
  assert_string_equal(name, "dtype");
  assert_string_equal(type, "ScalarType?");
  assert_string_equal(def, "None");
  assert_int_equal(kw, 1);
  ct_op_free(op);

  /* Default overload "" and the whole overload set. */
  CT_OK_OR_FAIL(ct_op_find(&op, "aten::relu", ""));
  assert_int_equal(ct_op_num_overloads(op), 1);
  ct_op_free(op);
  CT_OK_OR_FAIL(ct_op_find(&op, "aten::add", NULL));
  assert_true(ct_op_num_overloads(op) > 3);
  ct_op_free(op);
}

static void test_find_errors(void **state) {
  (void)state;
  ct_op *op = NULL;
  CT_EXPECT_ERROR(ct_op_find(&op, "aten::definitely_not_an_op", NULL), CT_ERR_NOT_FOUND,
                  "aten::definitely_not_an_op");
  CT_EXPECT_ERROR(ct_op_find(&op, "aten::add", "NoSuchOverload"), CT_ERR_NOT_FOUND,
                  "aten::add.Tensor(Tensor self");
  assert_non_null(strstr(ct_last_error(), "NoSuchOverload"));
  CT_EXPECT_ERROR(ct_op_find(&op, "add", NULL), CT_ERR_NOT_FOUND, "qualified name");
  CT_EXPECT_ERROR(ct_op_find(&op, NULL, NULL), CT_ERR_INVALID_ARGUMENT, "name");
  CT_EXPECT_ERROR(ct_op_find(NULL, "aten::add", NULL), CT_ERR_INVALID_ARGUMENT, "out");
  assert_null(op);
}

static void test_call_positional_and_kwargs(void **state) {
  (void)state;
  ct_op *op = NULL;
  CT_OK_OR_FAIL(ct_op_find(&op, "aten::add", "Tensor"));
  ct_tensor *a = f32(1, 2, 3, 4), *b = f32(10, 20, 30, 40);
  ct_value *args[2] = {tv(a), tv(b)};
  ct_value *out = NULL;
  CT_OK_OR_FAIL(ct_op_call(&out, op, (const ct_value *const *)args, 2, NULL, NULL, 0));
  assert_int_equal(ct_value_tag(out), CT_VALUE_TENSOR);
  ct_tensor *r = vt(out);
  const float w1[4] = {11, 22, 33, 44};
  expect_f32(r, w1, 4);
  ct_tensor_free(r);
  ct_value_free(out);

  /* alpha=2 as keyword; also an int (Scalar) and a double. */
  const char *kn[1] = {"alpha"};
  ct_value *kv[1] = {iv(2)};
  CT_OK_OR_FAIL(
      ct_op_call(&out, op, (const ct_value *const *)args, 2, kn, (const ct_value *const *)kv, 1));
  r = vt(out);
  const float w2[4] = {21, 42, 63, 84};
  expect_f32(r, w2, 4);
  ct_tensor_free(r);
  ct_value_free(out);
  ct_value_free(kv[0]);

  /* Keyword for a positional parameter. */
  const char *kn2[2] = {"other", "alpha"};
  ct_value *kv2[2] = {tv(b), dv(0.5)};
  CT_OK_OR_FAIL(
      ct_op_call(&out, op, (const ct_value *const *)args, 1, kn2, (const ct_value *const *)kv2, 2));
  r = vt(out);
  const float w3[4] = {6, 12, 18, 24};
  expect_f32(r, w3, 4);
  ct_tensor_free(r);
  ct_value_free(out);

  /* Errors name the op and show the schema. */
  ct_value *bad[3] = {args[0], sv("hello"), iv(1)};
  out = NULL;
  CT_EXPECT_ERROR(ct_op_call(&out, op, (const ct_value *const *)bad, 2, NULL, NULL, 0), CT_ERR_TYPE,
                  "aten::add.Tensor: argument 'other' expected Tensor but got str");
  assert_non_null(strstr(ct_last_error(),
                         "schema: aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)"));
  CT_EXPECT_ERROR(ct_op_call(&out, op, (const ct_value *const *)args, 1, NULL, NULL, 0),
                  CT_ERR_INVALID_ARGUMENT, "aten::add.Tensor: missing argument 'other'");
  assert_non_null(strstr(ct_last_error(), "schema: aten::add.Tensor("));
  ct_value *three[3] = {args[0], args[1], bad[2]};
  CT_EXPECT_ERROR(ct_op_call(&out, op, (const ct_value *const *)three, 3, NULL, NULL, 0),
                  CT_ERR_INVALID_ARGUMENT,
                  "too many positional arguments: expected at most 2, got 3");
  assert_non_null(strstr(ct_last_error(), "schema: aten::add.Tensor("));
  const char *kn3[1] = {"beta"};
  CT_EXPECT_ERROR(ct_op_call(&out, op, (const ct_value *const *)args, 2, kn3,
                             (const ct_value *const *)&bad[2], 1),
                  CT_ERR_INVALID_ARGUMENT, "unknown keyword argument 'beta'");
  const char *kn4[1] = {"self"};
  CT_EXPECT_ERROR(
      ct_op_call(&out, op, (const ct_value *const *)args, 2, kn4, (const ct_value *const *)args, 1),
      CT_ERR_INVALID_ARGUMENT, "multiple values for argument 'self'");
  CT_EXPECT_ERROR(ct_op_call(&out, op, (const ct_value *const *)args, 2, kn,
                             (const ct_value *const *)&bad[1], 1),
                  CT_ERR_TYPE, "argument 'alpha' expected Scalar but got str");
  ct_value *withnull[2] = {args[0], NULL};
  CT_EXPECT_ERROR(ct_op_call(&out, op, (const ct_value *const *)withnull, 2, NULL, NULL, 0),
                  CT_ERR_INVALID_ARGUMENT, "is NULL");
  CT_EXPECT_ERROR(ct_op_call(&out, op, NULL, 2, NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_op_call(NULL, op, (const ct_value *const *)args, 2, NULL, NULL, 0),
                  CT_ERR_INVALID_ARGUMENT, "out");
  CT_EXPECT_ERROR(ct_op_call(&out, NULL, (const ct_value *const *)args, 2, NULL, NULL, 0),
                  CT_ERR_INVALID_ARGUMENT, "op");
  CT_EXPECT_ERROR(ct_op_call(&out, op, (const ct_value *const *)args, 2, NULL, NULL, 1),
                  CT_ERR_INVALID_ARGUMENT, "kwnames");
  assert_null(out);

  /* Errors raised inside LibTorch (shapes that do not broadcast). */
  float x3[3] = {1, 2, 3};
  const int64_t s3[1] = {3};
  ct_tensor *c = test_tensor_f32(x3, s3, 1);
  ct_value *mism[2] = {args[0], tv(c)};
  CT_EXPECT_ERROR(ct_op_call(&out, op, (const ct_value *const *)mism, 2, NULL, NULL, 0),
                  CT_ERR_TORCH, "size of tensor a (4)");
  ct_value_free(mism[1]);
  ct_tensor_free(c);

  ct_value_free(bad[1]);
  ct_value_free(bad[2]);
  ct_value_free(kv2[0]);
  ct_value_free(kv2[1]);
  ct_value_free(args[0]);
  ct_value_free(args[1]);
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_op_free(op);
}

static void test_call_name_and_overload_sets(void **state) {
  (void)state;
  ct_tensor *a = f32(1, 2, 3, 4), *b = f32(1, 1, 1, 1);
  ct_value *args[2] = {tv(a), tv(b)};
  ct_value *out = NULL;
  for (int rep = 0; rep < 2; ++rep) { /* second round hits the cache */
    CT_OK_OR_FAIL(
        ct_op_call_name(&out, "aten::add.Tensor", (const ct_value *const *)args, 2, NULL, NULL, 0));
    ct_tensor *r = vt(out);
    const float w[4] = {2, 3, 4, 5};
    expect_f32(r, w, 4);
    ct_tensor_free(r);
    ct_value_free(out);
  }
  /* Overload set: (Tensor, int) resolves to add.Scalar. */
  ct_value *ts[2] = {args[0], iv(10)};
  CT_OK_OR_FAIL(ct_op_call_name(&out, "aten::add", (const ct_value *const *)ts, 2, NULL, NULL, 0));
  ct_tensor *r = vt(out);
  const float w2[4] = {11, 12, 13, 14};
  expect_f32(r, w2, 4);
  ct_tensor_free(r);
  ct_value_free(out);
  /* (int, int) -> aten::add.int; (float, int) -> a float overload. */
  ct_value *ii[2] = {iv(2), iv(3)};
  CT_OK_OR_FAIL(ct_op_call_name(&out, "aten::add", (const ct_value *const *)ii, 2, NULL, NULL, 0));
  assert_int_equal(ct_value_tag(out), CT_VALUE_INT);
  int64_t i = 0;
  CT_OK_OR_FAIL(ct_value_to_int(&i, out));
  assert_int_equal(i, 5);
  ct_value_free(out);
  ct_value *fi[2] = {dv(2.5), ii[1]};
  CT_OK_OR_FAIL(ct_op_call_name(&out, "aten::add", (const ct_value *const *)fi, 2, NULL, NULL, 0));
  double d = 0;
  CT_OK_OR_FAIL(ct_value_to_double(&d, out));
  assert_float_equal(d, 5.5, 1e-12);
  ct_value_free(out);

  /* No overload accepts (Tensor, str): every candidate is listed. */
  ct_value *tsv[2] = {args[0], sv("x")};
  out = NULL;
  CT_EXPECT_ERROR(
      ct_op_call_name(&out, "aten::add", (const ct_value *const *)tsv, 2, NULL, NULL, 0),
      CT_ERR_TYPE, "no overload of aten::add accepts these arguments");
  assert_non_null(strstr(ct_last_error(), "aten::add.Tensor(Tensor self, Tensor other"));
  assert_non_null(strstr(ct_last_error(), "argument 'other' expected Tensor but got str"));
  CT_EXPECT_ERROR(
      ct_op_call_name(&out, "aten::no_such_op", (const ct_value *const *)args, 2, NULL, NULL, 0),
      CT_ERR_NOT_FOUND, "aten::no_such_op");
  CT_EXPECT_ERROR(
      ct_op_call_name(&out, "aten::add.NoSuch", (const ct_value *const *)args, 2, NULL, NULL, 0),
      CT_ERR_NOT_FOUND, "NoSuch");
  out = NULL;
  CT_EXPECT_ERROR(ct_op_call_name(&out, NULL, NULL, 0, NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "qualified_name");
  CT_EXPECT_ERROR(ct_op_call_name(NULL, "aten::add", NULL, 0, NULL, NULL, 0),
                  CT_ERR_INVALID_ARGUMENT, "out");
  assert_null(out);

  ct_value_free(tsv[1]);
  ct_value_free(fi[0]);
  ct_value_free(ii[0]);
  ct_value_free(ii[1]);
  ct_value_free(ts[1]);
  ct_value_free(args[0]);
  ct_value_free(args[1]);
  ct_tensor_free(a);
  ct_tensor_free(b);
}

static void test_defaults_lists_dtype(void **state) {
  (void)state;
  float x[6] = {1, 2, 3, 4, 5, 6};
  const int64_t s23[2] = {2, 3};
  ct_tensor *t = test_tensor_f32(x, s23, 2);
  ct_value *self = tv(t);
  ct_value *out = NULL;

  /* sum.dim_IntList(self, dim=[1], keepdim=True) with dim as a generic list. */
  ct_value *one = iv(1);
  ct_value *dim = NULL;
  CT_OK_OR_FAIL(ct_value_list(&dim, (const ct_value *const *)&one, 1));
  ct_value *kt = bv(1);
  const char *kn[1] = {"keepdim"};
  ct_value *args[2] = {self, dim};
  CT_OK_OR_FAIL(ct_op_call_name(&out, "aten::sum.dim_IntList", (const ct_value *const *)args, 2, kn,
                                (const ct_value *const *)&kt, 1));
  ct_tensor *r = vt(out);
  assert_int_equal(ct_tensor_ndim(r), 2);
  assert_int_equal(ct_tensor_sizes(r)[0], 2);
  assert_int_equal(ct_tensor_sizes(r)[1], 1);
  const float w[2] = {6, 15};
  expect_f32(r, w, 2);
  ct_tensor_free(r);
  ct_value_free(out);
  /* keepdim defaults to False; a bare int for int[1]; a typed int list. */
  ct_value *args2[2] = {self, one};
  CT_OK_OR_FAIL(ct_op_call_name(&out, "aten::sum.dim_IntList", (const ct_value *const *)args2, 2,
                                NULL, NULL, 0));
  r = vt(out);
  assert_int_equal(ct_tensor_ndim(r), 1);
  expect_f32(r, w, 2);
  ct_tensor_free(r);
  ct_value_free(out);
  int64_t d0 = 0;
  ct_value *il = NULL;
  CT_OK_OR_FAIL(ct_value_int_list(&il, &d0, 1));
  ct_value *args3[2] = {self, il};
  CT_OK_OR_FAIL(ct_op_call_name(&out, "aten::sum.dim_IntList", (const ct_value *const *)args3, 2,
                                NULL, NULL, 0));
  r = vt(out);
  const float w0[3] = {5, 7, 9};
  expect_f32(r, w0, 3);
  ct_tensor_free(r);
  ct_value_free(out);
  ct_value_free(il);
  /* A list of strings is not an int[]. */
  ct_value *str = sv("a");
  ct_value *sl = NULL;
  CT_OK_OR_FAIL(ct_value_list(&sl, (const ct_value *const *)&str, 1));
  ct_value *args4[2] = {self, sl};
  CT_EXPECT_ERROR(ct_op_call_name(&out, "aten::sum.dim_IntList", (const ct_value *const *)args4, 2,
                                  NULL, NULL, 0),
                  CT_ERR_TYPE, "argument 'dim' expected int[1]? but got List[str]");
  ct_value_free(sl);
  ct_value_free(str);

  /* mean(self, *, dtype=float64) takes ctorch dtype codes. */
  ct_value *dt = iv(CT_FLOAT64);
  const char *kd[1] = {"dtype"};
  CT_OK_OR_FAIL(ct_op_call_name(&out, "aten::mean", (const ct_value *const *)&self, 1, kd,
                                (const ct_value *const *)&dt, 1));
  r = vt(out);
  assert_int_equal(ct_tensor_dtype(r), CT_FLOAT64);
  assert_float_equal(*(const double *)ct_tensor_data_ptr(r), 3.5, 1e-12);
  ct_tensor_free(r);
  ct_value_free(out);
  ct_value *baddt = iv(999);
  CT_EXPECT_ERROR(ct_op_call_name(&out, "aten::mean", (const ct_value *const *)&self, 1, kd,
                                  (const ct_value *const *)&baddt, 1),
                  CT_ERR_TYPE, "unknown dtype code 999");
  ct_value_free(baddt);
  ct_value_free(dt);

  /* int -> float coercion: dropout(input, float p, bool train). */
  ct_value *zero = iv(0), *fls = bv(0);
  ct_value *args5[3] = {self, zero, fls};
  CT_OK_OR_FAIL(
      ct_op_call_name(&out, "aten::dropout", (const ct_value *const *)args5, 3, NULL, NULL, 0));
  r = vt(out);
  int32_t eq = 0;
  CT_OK_OR_FAIL(ct_tensor_equal(&eq, r, t));
  assert_int_equal(eq, 1);
  ct_tensor_free(r);
  ct_value_free(out);
  ct_value_free(zero);
  ct_value_free(fls);

  /* Several returns come back as a tuple. */
  ct_value *args6[2] = {self, one};
  CT_OK_OR_FAIL(
      ct_op_call_name(&out, "aten::max.dim", (const ct_value *const *)args6, 2, NULL, NULL, 0));
  assert_int_equal(ct_value_tag(out), CT_VALUE_TUPLE);
  size_t len = 0;
  CT_OK_OR_FAIL(ct_value_length(&len, out));
  assert_int_equal(len, 2);
  ct_value *idx = NULL;
  CT_OK_OR_FAIL(ct_value_get(&idx, out, 1));
  r = vt(idx);
  assert_int_equal(ct_tensor_dtype(r), CT_INT64);
  assert_int_equal(((const int64_t *)ct_tensor_data_ptr(r))[0], 2);
  ct_tensor_free(r);
  ct_value_free(idx);
  ct_value_free(out);

  /* Tensor[] from a generic list of tensors: cat. */
  ct_value *tl = NULL;
  ct_value *items[2] = {self, self};
  CT_OK_OR_FAIL(ct_value_list(&tl, (const ct_value *const *)items, 2));
  CT_OK_OR_FAIL(ct_op_call_name(&out, "aten::cat", (const ct_value *const *)&tl, 1, NULL, NULL, 0));
  r = vt(out);
  assert_int_equal(ct_tensor_sizes(r)[0], 4);
  ct_tensor_free(r);
  ct_value_free(out);
  ct_value_free(tl);

  ct_value_free(kt);
  ct_value_free(dim);
  ct_value_free(one);
  ct_value_free(self);
  ct_tensor_free(t);
}

static void test_inplace_and_out(void **state) {
  (void)state;
  ct_tensor *a = f32(1, 2, 3, 4), *b = f32(1, 1, 1, 1);
  void *pa = ct_tensor_data_ptr(a);
  ct_value *args[2] = {tv(a), tv(b)};
  ct_value *out = NULL;
  CT_OK_OR_FAIL(
      ct_op_call_name(&out, "aten::add_.Tensor", (const ct_value *const *)args, 2, NULL, NULL, 0));
  ct_tensor *r = vt(out);
  /* Same tensor: same data, and the caller's handle sees the change. */
  assert_ptr_equal(ct_tensor_data_ptr(r), pa);
  const float w[4] = {2, 3, 4, 5};
  expect_f32(a, w, 4);
  ct_tensor_fill_(r, 7.0);
  const float w7[4] = {7, 7, 7, 7};
  expect_f32(a, w7, 4);
  ct_tensor_free(r);
  ct_value_free(out);

  /* out= variant. */
  ct_tensor *z = f32(0, 0, 0, 0);
  void *pz = ct_tensor_data_ptr(z);
  ct_value *zv = tv(z);
  const char *kn[1] = {"out"};
  CT_OK_OR_FAIL(ct_op_call_name(&out, "aten::add.out", (const ct_value *const *)args, 2, kn,
                                (const ct_value *const *)&zv, 1));
  r = vt(out);
  assert_ptr_equal(ct_tensor_data_ptr(r), pz);
  const float w8[4] = {8, 8, 8, 8};
  expect_f32(z, w8, 4);
  ct_tensor_free(r);
  ct_value_free(out);
  /* out is required for the out overload. */
  CT_EXPECT_ERROR(
      ct_op_call_name(&out, "aten::add.out", (const ct_value *const *)args, 2, NULL, NULL, 0),
      CT_ERR_INVALID_ARGUMENT, "missing argument 'out'");

  ct_value_free(zv);
  ct_tensor_free(z);
  ct_value_free(args[0]);
  ct_value_free(args[1]);
  ct_tensor_free(a);
  ct_tensor_free(b);
}

static void test_list(void **state) {
  (void)state;
  ct_value *l = NULL;
  CT_OK_OR_FAIL(ct_op_list(&l));
  size_t n = 0;
  CT_OK_OR_FAIL(ct_value_length(&n, l));
  assert_true(n > 1000);
  int found_add = 0, found_relu = 0;
  for (size_t i = 0; i < n; ++i) {
    ct_value *s = NULL;
    CT_OK_OR_FAIL(ct_value_get(&s, l, i));
    const char *str = NULL;
    CT_OK_OR_FAIL(ct_value_as_string(&str, NULL, s));
    if (strcmp(str, "aten::add.Tensor") == 0) found_add = 1;
    if (strcmp(str, "aten::relu") == 0) found_relu = 1;
    ct_value_free(s);
  }
  assert_true(found_add);
  assert_true(found_relu);
  ct_value_free(l);
  CT_EXPECT_ERROR(ct_op_list(NULL), CT_ERR_INVALID_ARGUMENT, "out");
}

/* Many threads share one op handle. */
static ct_op *g_shared_op;
static void *thread_body(void *arg) {
  (void)arg;
  float x[4] = {1, 2, 3, 4};
  ct_tensor *t = NULL;
  if (ct_tensor_from_data(&t, x, S4, 1, CT_FLOAT32, CT_DEVICE_CPU, -1) != CT_OK) return (void *)1;
  ct_value *v = NULL;
  ct_value_from_tensor(&v, t);
  const ct_value *args[2] = {v, v};
  intptr_t bad = 0;
  for (int i = 0; i < 500; ++i) {
    ct_value *out = NULL;
    if (ct_op_call(&out, g_shared_op, args, 2, NULL, NULL, 0) != CT_OK) {
      bad = 1;
      break;
    }
    ct_tensor *r = NULL;
    ct_value_to_tensor(&r, out);
    const float *p = (const float *)ct_tensor_data_ptr(r);
    if (p[3] != 8.0f) bad = 1;
    ct_tensor_free(r);
    ct_value_free(out);
  }
  ct_value_free(v);
  ct_tensor_free(t);
  return (void *)bad;
}

static void test_threads(void **state) {
  (void)state;
  CT_OK_OR_FAIL(ct_op_find(&g_shared_op, "aten::add", "Tensor"));
  pthread_t th[4];
  for (int i = 0; i < 4; ++i) assert_int_equal(pthread_create(&th[i], NULL, thread_body, NULL), 0);
  for (int i = 0; i < 4; ++i) {
    void *r = NULL;
    pthread_join(th[i], &r);
    assert_null(r);
  }
  ct_op_free(g_shared_op);
}

static void test_call_tensors(void **state) {
  (void)state;
  ct_tensor *a = f32(1, 2, 3, 4), *b = f32(10, 20, 30, 40), *out[2] = {NULL, NULL};
  ct_op *add = NULL, *neg = NULL, *set = NULL, *sort = NULL, *size = NULL;
  CT_OK_OR_FAIL(ct_op_find(&add, "aten::add", "Tensor"));
  const ct_tensor *ab[2] = {a, b};
  CT_OK_OR_FAIL(ct_op_call_tensors(out, 1, add, ab, 2)); /* alpha takes its default */
  const float sum[4] = {11, 22, 33, 44};
  expect_f32(out[0], sum, 4);
  ct_tensor_free(out[0]);
  /* Overload sets and the general path. */
  CT_OK_OR_FAIL(ct_op_find(&set, "aten::mul", NULL));
  CT_OK_OR_FAIL(ct_op_call_tensors(out, 1, set, ab, 2));
  const float prod[4] = {10, 40, 90, 160};
  expect_f32(out[0], prod, 4);
  ct_tensor_free(out[0]);
  CT_OK_OR_FAIL(ct_op_find(&neg, "aten::neg", ""));
  CT_OK_OR_FAIL(ct_op_call_tensors(out, 1, neg, ab, 1));
  const float n[4] = {-1, -2, -3, -4};
  expect_f32(out[0], n, 4);
  ct_tensor_free(out[0]);
  out[0] = NULL;
  /* Several results. */
  CT_OK_OR_FAIL(ct_op_find(&sort, "aten::sort", ""));
  CT_OK_OR_FAIL(ct_op_call_tensors(out, 2, sort, ab + 1, 1));
  assert_int_equal(ct_tensor_dtype(out[1]), CT_INT64);
  ct_tensor_free(out[0]);
  ct_tensor_free(out[1]);
  out[0] = out[1] = NULL;
  /* Errors. */
  CT_EXPECT_ERROR(ct_op_call_tensors(out, 1, sort, ab + 1, 1), CT_ERR_INVALID_ARGUMENT,
                  "returns 2 values, n_outputs is 1");
  CT_OK_OR_FAIL(ct_op_find(&size, "aten::size", "int"));
  CT_EXPECT_ERROR(ct_op_call_tensors(out, 1, add, ab, 1), CT_ERR_INVALID_ARGUMENT, "other");
  CT_EXPECT_ERROR(ct_op_call_tensors(out, 1, add, NULL, 2), CT_ERR_INVALID_ARGUMENT,
                  "ct_op_call_tensors: argument 'inputs' is NULL");
  CT_EXPECT_ERROR(ct_op_call_tensors(out, 1, NULL, ab, 2), CT_ERR_INVALID_ARGUMENT,
                  "argument 'op' is NULL");
  CT_EXPECT_ERROR(ct_op_call_tensors(NULL, 1, add, ab, 2), CT_ERR_INVALID_ARGUMENT,
                  "argument 'outputs' is NULL");
  const ct_tensor *with_null[2] = {a, NULL};
  CT_EXPECT_ERROR(ct_op_call_tensors(out, 1, add, with_null, 2), CT_ERR_INVALID_ARGUMENT,
                  "inputs[1] is NULL");
  assert_null(out[0]);
  ct_op_free(add);
  ct_op_free(neg);
  ct_op_free(set);
  ct_op_free(sort);
  ct_op_free(size);
  ct_tensor_free(a);
  ct_tensor_free(b);
}

/* ct_op_call_tensors_values: leading tensors, then values; tensors out. Every
 * path: typed kernels (add.Scalar), the exact boxed path (select.int), the
 * general path (coercions, overload sets, defaults), several results, errors. */
static void test_call_tensors_values(void **state) {
  (void)state;
  ct_tensor *a = f32(1, 2, 3, 4), *b = f32(10, 20, 30, 40), *out[2] = {NULL, NULL};
  ct_op *select = NULL, *add_s = NULL, *add = NULL, *add_set = NULL, *sort = NULL, *size = NULL,
        *clamp = NULL, *sum = NULL;
  ct_value *zero = iv(0), *two = iv(2), *one_half = dv(1.5), *none = NULL, *s = sv("x");
  ct_value *neg_one = iv(-1), *yes = bv(1);
  CT_OK_OR_FAIL(ct_value_none(&none));
  const ct_tensor *ta[1] = {a};
  const ct_tensor *tab[2] = {a, b};

  /* x[2]: aten::select.int(Tensor, int, int), the exact boxed path */
  CT_OK_OR_FAIL(ct_op_find(&select, "aten::select", "int"));
  const ct_value *dim_idx[2] = {zero, two};
  CT_OK_OR_FAIL(ct_op_call_tensors_values(out, 1, select, ta, 1, dim_idx, 2));
  assert_int_equal(ct_tensor_ndim(out[0]), 0);
  assert_float_equal(*(const float *)ct_tensor_data_ptr(out[0]), 3.0f, 0);
  ct_tensor_free(out[0]);
  /* the same through ct_op_call (the unboxed (Tensor, int, int) kernel) */
  {
    ct_value *av = tv(a), *res = NULL;
    const ct_value *args3[3] = {av, zero, two};
    CT_OK_OR_FAIL(ct_op_call(&res, select, args3, 3, NULL, NULL, 0));
    ct_tensor *r = vt(res);
    assert_float_equal(*(const float *)ct_tensor_data_ptr(r), 3.0f, 0);
    /* a view: the same memory */
    assert_ptr_equal(ct_tensor_data_ptr(r), (const float *)ct_tensor_data_ptr(a) + 2);
    ct_tensor_free(r);
    ct_value_free(res);
    ct_value_free(av);
  }
  /* negative index, as x[-1] */
  const ct_value *dim_neg[2] = {zero, neg_one};
  CT_OK_OR_FAIL(ct_op_call_tensors_values(out, 1, select, ta, 1, dim_neg, 2));
  assert_float_equal(*(const float *)ct_tensor_data_ptr(out[0]), 4.0f, 0);
  ct_tensor_free(out[0]);

  /* transpose.int(Tensor(a), int, int): a view through the same kernel shape */
  {
    ct_op *tr = NULL;
    float m6[6] = {1, 2, 3, 4, 5, 6};
    int64_t s23[2] = {2, 3};
    ct_tensor *m = test_tensor_f32(m6, s23, 2);
    const ct_tensor *mm[1] = {m};
    ct_value *one = iv(1);
    const ct_value *d01[2] = {zero, one};
    CT_OK_OR_FAIL(ct_op_find(&tr, "aten::transpose", "int"));
    CT_OK_OR_FAIL(ct_op_call_tensors_values(out, 1, tr, mm, 1, d01, 2));
    assert_int_equal(ct_tensor_sizes(out[0])[0], 3);
    assert_int_equal(ct_tensor_strides(out[0])[0], 1);
    assert_ptr_equal(ct_tensor_data_ptr(out[0]), ct_tensor_data_ptr(m));
    ct_tensor_free(out[0]);
    ct_value_free(one);
    ct_tensor_free(m);
    ct_op_free(tr);
  }

  /* x + 1.5: aten::add.Scalar(Tensor, Scalar, Scalar alpha=1), the typed kernel */
  CT_OK_OR_FAIL(ct_op_find(&add_s, "aten::add", "Scalar"));
  const ct_value *half[1] = {one_half};
  CT_OK_OR_FAIL(ct_op_call_tensors_values(out, 1, add_s, ta, 1, half, 1));
  const float plus[4] = {2.5f, 3.5f, 4.5f, 5.5f};
  expect_f32(out[0], plus, 4);
  ct_tensor_free(out[0]);
  /* with alpha given too: a + 2 * 1.5 */
  const ct_value *half_two[2] = {one_half, two};
  CT_OK_OR_FAIL(ct_op_call_tensors_values(out, 1, add_s, ta, 1, half_two, 2));
  const float plus2[4] = {4, 5, 6, 7};
  expect_f32(out[0], plus2, 4);
  ct_tensor_free(out[0]);

  /* a + b * 2 through add.Tensor: tensors then a keyword-only argument given
   * positionally is refused (alpha is keyword-only), as in ct_op_call */
  CT_OK_OR_FAIL(ct_op_find(&add, "aten::add", "Tensor"));
  const ct_value *alpha[1] = {two};
  CT_EXPECT_ERROR(ct_op_call_tensors_values(out, 1, add, tab, 2, alpha, 1), CT_ERR_INVALID_ARGUMENT,
                  "ct_op_call_tensors_values");
  /* no values at all is ct_op_call_tensors */
  CT_OK_OR_FAIL(ct_op_call_tensors_values(out, 1, add, tab, 2, NULL, 0));
  const float ab[4] = {11, 22, 33, 44};
  expect_f32(out[0], ab, 4);
  ct_tensor_free(out[0]);

  /* an overload set, resolved per call: add(Tensor, int) binds add.Scalar */
  CT_OK_OR_FAIL(ct_op_find(&add_set, "aten::add", NULL));
  const ct_value *two1[1] = {two};
  CT_OK_OR_FAIL(ct_op_call_tensors_values(out, 1, add_set, ta, 1, two1, 1));
  const float p2[4] = {3, 4, 5, 6};
  expect_f32(out[0], p2, 4);
  ct_tensor_free(out[0]);

  /* coercion and Optional: clamp.default(Tensor, Scalar? min, Scalar? max) with
   * None and an int */
  CT_OK_OR_FAIL(ct_op_find(&clamp, "aten::clamp", ""));
  const ct_value *none_two[2] = {none, two};
  CT_OK_OR_FAIL(ct_op_call_tensors_values(out, 1, clamp, ta, 1, none_two, 2));
  const float cl[4] = {1, 2, 2, 2};
  expect_f32(out[0], cl, 4);
  ct_tensor_free(out[0]);
  /* every other argument from its default: sum(Tensor, *, ScalarType? dtype=None) */
  CT_OK_OR_FAIL(ct_op_find(&sum, "aten::sum", ""));
  CT_OK_OR_FAIL(ct_op_call_tensors_values(out, 1, sum, ta, 1, NULL, 0));
  assert_float_equal(*(const float *)ct_tensor_data_ptr(out[0]), 10.0f, 0);
  ct_tensor_free(out[0]);

  /* several results: sort(Tensor, int dim=-1, bool descending=False) */
  CT_OK_OR_FAIL(ct_op_find(&sort, "aten::sort", ""));
  const ct_value *desc[2] = {zero, yes};
  CT_OK_OR_FAIL(ct_op_call_tensors_values(out, 2, sort, ta, 1, desc, 2));
  const float sorted[4] = {4, 3, 2, 1};
  expect_f32(out[0], sorted, 4);
  assert_int_equal(ct_tensor_dtype(out[1]), CT_INT64);
  ct_tensor_free(out[0]);
  ct_tensor_free(out[1]);
  out[0] = out[1] = NULL;

  /* Errors: wrong n_outputs, a non-tensor result, wrong value types, NULLs. */
  CT_EXPECT_ERROR(ct_op_call_tensors_values(out, 1, sort, ta, 1, desc, 2), CT_ERR_INVALID_ARGUMENT,
                  "returns 2 values, n_outputs is 1");
  CT_OK_OR_FAIL(ct_op_find(&size, "aten::size", "int"));
  const ct_value *zero1[1] = {zero};
  CT_EXPECT_ERROR(ct_op_call_tensors_values(out, 1, size, ta, 1, zero1, 1), CT_ERR_TYPE,
                  "not a Tensor");
  const ct_value *str2[2] = {s, two};
  CT_EXPECT_ERROR(ct_op_call_tensors_values(out, 1, select, ta, 1, str2, 2), CT_ERR_TYPE,
                  "ct_op_call_tensors_values");
  CT_EXPECT_ERROR(ct_op_call_tensors_values(out, 1, select, ta, 1, dim_idx, 1),
                  CT_ERR_INVALID_ARGUMENT, "index");
  CT_EXPECT_ERROR(ct_op_call_tensors_values(out, 1, select, NULL, 1, dim_idx, 2),
                  CT_ERR_INVALID_ARGUMENT, "ct_op_call_tensors_values: argument 'tensors' is NULL");
  CT_EXPECT_ERROR(ct_op_call_tensors_values(out, 1, select, ta, 1, NULL, 2),
                  CT_ERR_INVALID_ARGUMENT, "ct_op_call_tensors_values: argument 'values' is NULL");
  CT_EXPECT_ERROR(ct_op_call_tensors_values(out, 1, NULL, ta, 1, dim_idx, 2),
                  CT_ERR_INVALID_ARGUMENT, "argument 'op' is NULL");
  CT_EXPECT_ERROR(ct_op_call_tensors_values(NULL, 1, select, ta, 1, dim_idx, 2),
                  CT_ERR_INVALID_ARGUMENT, "argument 'outputs' is NULL");
  const ct_value *with_null[2] = {zero, NULL};
  CT_EXPECT_ERROR(ct_op_call_tensors_values(out, 1, select, ta, 1, with_null, 2),
                  CT_ERR_INVALID_ARGUMENT, "values[1] is NULL");
  const ct_tensor *t_null[1] = {NULL};
  CT_EXPECT_ERROR(ct_op_call_tensors_values(out, 1, select, t_null, 1, dim_idx, 2),
                  CT_ERR_INVALID_ARGUMENT, "tensors[0] is NULL");
  /* an index out of range: LibTorch's IndexError is CT_ERR_INDEX */
  ct_value *nine = iv(9);
  const ct_value *dim_nine[2] = {zero, nine};
  CT_EXPECT_ERROR(ct_op_call_tensors_values(out, 1, select, ta, 1, dim_nine, 2), CT_ERR_INDEX,
                  "out of range");
  assert_null(out[0]);
  assert_null(out[1]);

  ct_value_free(nine);
  ct_value_free(zero);
  ct_value_free(two);
  ct_value_free(one_half);
  ct_value_free(none);
  ct_value_free(s);
  ct_value_free(neg_one);
  ct_value_free(yes);
  ct_op_free(select);
  ct_op_free(add_s);
  ct_op_free(add);
  ct_op_free(add_set);
  ct_op_free(sort);
  ct_op_free(size);
  ct_op_free(clamp);
  ct_op_free(sum);
  ct_tensor_free(a);
  ct_tensor_free(b);
}

/* ct_op_tensors_only says whether ct_op_call_tensors with n tensors binds an
 * overload whose results are all tensors; checked against the call itself. */
static void expect_tensors_only(const char *name, const char *overload, size_t n,
                                int32_t expected) {
  ct_op *op = NULL;
  CT_OK_OR_FAIL(ct_op_find(&op, name, overload));
  int32_t got = -1;
  CT_OK_OR_FAIL(ct_op_tensors_only(&got, op, n));
  if (got != expected)
    fail_msg("%s.%s with %zu tensors: tensors_only %d, expected %d", name,
             overload ? overload : "(set)", n, (int)got, (int)expected);
  /* The call agrees: it succeeds exactly when tensors_only said 1. */
  float d[4] = {1, 2, 3, 4};
  int64_t s[1] = {4};
  ct_tensor *t = test_tensor_f32(d, s, 1);
  const ct_tensor *in[4] = {t, t, t, t};
  ct_tensor *outs[4] = {NULL, NULL, NULL, NULL};
  size_t nret = 0;
  for (size_t k = 1; k <= 4 && expected; ++k)
    if (ct_op_call_tensors(outs, k, op, in, n) == CT_OK) nret = k;
  if (expected) assert_true(nret >= 1);
  for (size_t i = 0; i < 4; ++i) ct_tensor_free(outs[i]);
  if (!expected) assert_int_not_equal(ct_op_call_tensors(outs, 1, op, in, n), CT_OK);
  ct_tensor_free(t);
  ct_op_free(op);
}

static void test_tensors_only(void **state) {
  (void)state;
  expect_tensors_only("aten::add", "Tensor", 2, 1); /* alpha has a default */
  expect_tensors_only("aten::add", "Tensor", 1, 0); /* other is missing */
  expect_tensors_only("aten::add", "Tensor", 3, 0); /* alpha is keyword-only */
  expect_tensors_only("aten::add", NULL, 2, 1);     /* the set resolves to add.Tensor */
  expect_tensors_only("aten::neg", "", 1, 1);
  expect_tensors_only("aten::neg", "", 0, 0);
  expect_tensors_only("aten::sort", "", 1, 1);        /* two Tensor results */
  expect_tensors_only("aten::clamp", "Tensor", 3, 1); /* Tensor? takes a tensor */
  expect_tensors_only("aten::size", "int", 1, 0);     /* dim has no default */
  expect_tensors_only("aten::size", "", 1, 0);        /* returns int[] */
  expect_tensors_only("aten::size", NULL, 1, 0);      /* the set binds size() -> int[] */
  expect_tensors_only("aten::unbind", "int", 1, 0);   /* returns Tensor[] */
  expect_tensors_only("aten::mul", "Scalar", 2, 0);   /* Scalar does not take a tensor */

  ct_op *op = NULL;
  int32_t got = -1;
  CT_OK_OR_FAIL(ct_op_find(&op, "aten::neg", ""));
  CT_EXPECT_ERROR(ct_op_tensors_only(NULL, op, 1), CT_ERR_INVALID_ARGUMENT,
                  "ct_op_tensors_only: argument 'out' is NULL");
  CT_EXPECT_ERROR(ct_op_tensors_only(&got, NULL, 1), CT_ERR_INVALID_ARGUMENT,
                  "ct_op_tensors_only: argument 'op' is NULL");
  assert_int_equal(got, -1);
  ct_op_free(op);
}

/* #20: schemas with type variables (t, t[]) bind to the value's type, as in
 * TorchScript; "expected t[] but got List[int]" before. */
static void test_type_variables(void **state) {
  (void)state;
  const int64_t items[3] = {4, 5, 6};
  ct_value *list = NULL, *two = NULL, *word = NULL, *out = NULL;
  CT_OK_OR_FAIL(ct_value_int_list(&list, items, 3));
  CT_OK_OR_FAIL(ct_value_from_int(&two, 2));
  CT_OK_OR_FAIL(ct_value_from_string(&word, "w", 1));
  int64_t n = 0;
  CT_OK_OR_FAIL(ct_op_call_name(&out, "aten::len.t", (const ct_value *const *)&list, 1, NULL,
                                NULL, 0));
  CT_OK_OR_FAIL(ct_value_to_int(&n, out));
  assert_int_equal(n, 3);
  ct_value_free(out);
  ct_value *lt[2] = {list, two};
  CT_OK_OR_FAIL(ct_op_call_name(&out, "aten::mul.left_t", (const ct_value *const *)lt, 2, NULL,
                                NULL, 0));
  size_t len = 0;
  CT_OK_OR_FAIL(ct_value_length(&len, out));
  assert_int_equal(len, 6);
  char *repr = NULL;
  CT_OK_OR_FAIL(ct_value_to_repr(&repr, out));
  assert_string_equal(repr, "[4, 5, 6, 4, 5, 6]");
  ct_free(repr);
  ct_value_free(out);
  CT_OK_OR_FAIL(ct_op_call_name(&out, "prim::unchecked_cast", (const ct_value *const *)&two, 1,
                                NULL, NULL, 0));
  CT_OK_OR_FAIL(ct_value_to_int(&n, out));
  assert_int_equal(n, 2);
  ct_value_free(out);
  /* One t for every argument: an int list and a string do not bind. */
  ct_value *mixed[2] = {list, word};
  out = (ct_value *)0x1;
  CT_EXPECT_ERROR(ct_op_call_name(&out, "aten::append.t", (const ct_value *const *)mixed, 2, NULL,
                                  NULL, 0),
                  CT_ERR_TYPE, "argument 'el' expected t but got str");
  assert_ptr_equal(out, (ct_value *)0x1);
  ct_value_free(word);
  ct_value_free(two);
  ct_value_free(list);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_find_and_schema),
      cmocka_unit_test(test_type_variables),
      cmocka_unit_test(test_find_errors),
      cmocka_unit_test(test_call_positional_and_kwargs),
      cmocka_unit_test(test_call_name_and_overload_sets),
      cmocka_unit_test(test_defaults_lists_dtype),
      cmocka_unit_test(test_inplace_and_out),
      cmocka_unit_test(test_list),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_call_tensors),
      cmocka_unit_test(test_call_tensors_values),
      cmocka_unit_test(test_tensors_only),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
