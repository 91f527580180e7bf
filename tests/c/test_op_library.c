/* Operators in torch's dispatcher with C kernels (ct_library_*): per-key
 * kernels (CPU, Meta, composite), autograd through a C backward checked
 * against finite differences, TorchScript calling the op, every bad input,
 * freeing (handles fail cleanly, destroy counted), the same-thread flag, and
 * registrations while other threads call ops. Kernels: tests/kernels. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "test_util.h"

extern int64_t ctk_counts[4];
ct_status ctk_softsign(void *, const ct_value *const *, size_t, ct_value **);
ct_status ctk_softsign_meta(void *, const ct_value *const *, size_t, ct_value **);
ct_status ctk_softsign_backward(void *, const ct_value *const *, size_t, const ct_value *,
                                const ct_tensor *const *, size_t, ct_tensor **);
void ctk_destroy(void *);
ct_status ctk_register_softsign(ct_library *lib, const char *schema);

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
/* Calls a one-tensor op by name; returns the result tensor. */
static ct_tensor *call1(const char *name, const ct_tensor *x) {
  ct_value *a = tv(x), *out = NULL;
  const ct_value *args[1] = {a};
  CT_OK_OR_FAIL(ct_op_call_name(&out, name, args, 1, NULL, NULL, 0));
  ct_tensor *r = vt(out);
  ct_value_free(out);
  ct_value_free(a);
  return r;
}
static ct_tensor *f64(const double *d, int64_t n, int requires_grad) {
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_empty(&t, &n, 1, CT_FLOAT64, CT_DEVICE_CPU, 0, 0));
  memcpy(ct_tensor_data_ptr(t), d, (size_t)n * sizeof(double));
  if (requires_grad) CT_OK_OR_FAIL(ct_tensor_set_requires_grad(t, 1));
  return t;
}
static int listed(const char *name) {
  ct_value *l = NULL;
  CT_OK_OR_FAIL(ct_op_list(&l));
  size_t n = 0;
  CT_OK_OR_FAIL(ct_value_length(&n, l));
  int found = 0;
  for (size_t i = 0; i < n && !found; ++i) {
    ct_value *s = NULL;
    const char *str = NULL;
    CT_OK_OR_FAIL(ct_value_get(&s, l, i));
    CT_OK_OR_FAIL(ct_value_as_string(&str, NULL, s));
    found = strcmp(str, name) == 0;
    ct_value_free(s);
  }
  ct_value_free(l);
  return found;
}

static const double X[5] = {-2.5, -0.5, 0.0, 0.75, 3.0};

static void test_kernels_and_autograd(void **state) {
  (void)state;
  memset(ctk_counts, 0, sizeof ctk_counts);
  ct_library *lib = NULL;
  CT_OK_OR_FAIL(ct_library_new(&lib, "ctlib"));
  CT_OK_OR_FAIL(ctk_register_softsign(lib, "softsign(Tensor x) -> Tensor"));
  assert_true(listed("ctlib::softsign"));

  /* CPU kernel by name, values as the formula. */
  ct_tensor *x = f64(X, 5, 0);
  ct_tensor *y = call1("ctlib::softsign", x);
  const double *py = ct_tensor_data_ptr(y);
  for (int i = 0; i < 5; ++i) assert_float_equal(py[i], X[i] / (1 + fabs(X[i])), 1e-15);
  assert_int_equal(ctk_counts[0], 1);
  ct_tensor_free(y);

  /* Meta inputs: shapes only, the CPU kernel does not run. */
  int64_t sz[2] = {3, 7};
  ct_tensor *m = NULL;
  CT_OK_OR_FAIL(ct_tensor_empty(&m, sz, 2, CT_FLOAT32, CT_DEVICE_META, 0, 0));
  ct_tensor *my = call1("ctlib::softsign", m);
  assert_int_equal(ct_tensor_device_type(my), CT_DEVICE_META);
  assert_int_equal(ct_tensor_ndim(my), 2);
  assert_int_equal(ct_tensor_sizes(my)[1], 7);
  assert_int_equal(ctk_counts[0], 1);
  assert_int_equal(ctk_counts[1], 1);
  ct_tensor_free(my);
  ct_tensor_free(m);

  /* Autograd: the C backward against central differences of the kernel. */
  ct_tensor *xg = f64(X, 5, 1);
  ct_tensor *yg = call1("ctlib::softsign", xg);
  char *node = NULL;
  CT_OK_OR_FAIL(ct_tensor_grad_fn_name(&node, yg));
  assert_string_equal(node, "ctlib::softsign");
  ct_free(node);
  ct_tensor *s = call1("aten::sum", yg);
  CT_OK_OR_FAIL(ct_tensor_backward(s, NULL, 0, 0));
  assert_int_equal(ctk_counts[2], 1);
  ct_tensor *g = NULL;
  CT_OK_OR_FAIL(ct_tensor_grad(&g, xg));
  const double *pg = ct_tensor_data_ptr(g);
  for (int i = 0; i < 5; ++i) {
    const double h = 1e-6;
    double xp = X[i] + h, xm = X[i] - h;
    double fd = (xp / (1 + fabs(xp)) - xm / (1 + fabs(xm))) / (2 * h);
    if (X[i] != 0.0) assert_float_equal(pg[i], fd, 1e-7);
    assert_float_equal(pg[i], 1 / ((1 + fabs(X[i])) * (1 + fabs(X[i]))), 1e-15);
  }
  ct_tensor_free(g);
  ct_tensor_free(s);

  /* The graph outlives the library: backward still runs, and the backward
   * kernel's ctx is destroyed only with the graph. */
  ct_tensor *s2 = call1("aten::sum", yg);
  ct_op *stale = NULL; /* found before the free, never called before it */
  CT_OK_OR_FAIL(ct_op_find(&stale, "ctlib::softsign", NULL));
  ct_library_free(lib);
  {
    ct_value *a = tv(x), *out = NULL;
    const ct_value *args[1] = {a};
    CT_EXPECT_ERROR(ct_op_call(&out, stale, args, 1, NULL, NULL, 0), CT_ERR_NOT_FOUND,
                    "ctlib::softsign was removed");
    ct_tensor *r = NULL;
    const ct_tensor *ins[1] = {x};
    CT_EXPECT_ERROR(ct_op_call_tensors(&r, 1, stale, ins, 1), CT_ERR_NOT_FOUND, "was removed");
    const char *schema = NULL;
    CT_OK_OR_FAIL(ct_op_schema(&schema, stale, 0));
    assert_string_equal(schema, "ctlib::softsign(Tensor x) -> Tensor");
    ct_value_free(a);
    ct_op_free(stale);
  }
  assert_int_equal(ctk_counts[3], 2); /* CPU and Meta kernels */
  assert_false(listed("ctlib::softsign"));
  CT_OK_OR_FAIL(ct_tensor_backward(s2, NULL, 0, 0));
  assert_int_equal(ctk_counts[2], 2);
  ct_tensor_free(s2);
  ct_tensor_free(yg);
  assert_int_equal(ctk_counts[3], 3);
  ct_tensor_free(xg);
  ct_tensor_free(x);
}

static int64_t g_composite_calls;
/* twice(Tensor x) -> Tensor as x + x through aten ops (autograd flows
 * through them: CompositeImplicitAutograd). */
static ct_status twice_fn(void *ctx, const ct_value *const *args, size_t n, ct_value **out) {
  (void)ctx;
  (void)n;
  ++g_composite_calls;
  const ct_value *a[2] = {args[0], args[0]};
  return ct_op_call_name(out, "aten::add.Tensor", a, 2, NULL, NULL, 0);
}
static ct_status fail_fn(void *ctx, const ct_value *const *args, size_t n, ct_value **out) {
  (void)ctx;
  (void)args;
  (void)n;
  (void)out;
  return ct_set_error(CT_ERR_CALLBACK, "kernel says no");
}

static void test_composite_and_script(void **state) {
  (void)state;
  ct_library *lib = NULL;
  CT_OK_OR_FAIL(ct_library_new(&lib, "ctlib2"));
  CT_OK_OR_FAIL(ct_library_define(lib, "twice(Tensor x) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(
      ct_library_impl(lib, "twice", "CompositeImplicitAutograd", twice_fn, NULL, NULL, 0));
  CT_OK_OR_FAIL(ct_library_define(lib, "ctlib2::fails(Tensor x) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_impl(lib, "fails", "CompositeExplicitAutograd", fail_fn, NULL, NULL, 0));

  ct_tensor *x = f64(X, 5, 1);
  ct_tensor *y = call1("ctlib2::twice", x);
  ct_tensor *s = call1("aten::sum", y);
  CT_OK_OR_FAIL(ct_tensor_backward(s, NULL, 0, 0));
  ct_tensor *g = NULL;
  CT_OK_OR_FAIL(ct_tensor_grad(&g, x));
  for (int i = 0; i < 5; ++i) assert_float_equal(((double *)ct_tensor_data_ptr(g))[i], 2.0, 0);
  ct_tensor_free(g);
  ct_tensor_free(s);
  ct_tensor_free(y);

  /* A failing kernel: CT_ERR_CALLBACK with its message. */
  ct_value *a = tv(x), *out = NULL;
  const ct_value *args[1] = {a};
  CT_EXPECT_ERROR(ct_op_call_name(&out, "ctlib2::fails", args, 1, NULL, NULL, 0), CT_ERR_CALLBACK,
                  "kernel says no");

  /* TorchScript compiled from source calls the op; a handle found before
   * the library is freed fails cleanly after it. */
  ct_script *sc = NULL;
  CT_OK_OR_FAIL(ct_script_compile(
      &sc, "def f(x: Tensor) -> Tensor:\n    return torch.ops.ctlib2.twice(x) + 1\n"));
  CT_OK_OR_FAIL(ct_script_call(&out, sc, "f", args, 1, NULL, NULL, 0));
  ct_tensor *r = vt(out);
  assert_float_equal(((double *)ct_tensor_data_ptr(r))[4], 7.0, 0);
  ct_tensor_free(r);
  ct_value_free(out);
  ct_op *op = NULL;
  CT_OK_OR_FAIL(ct_op_find(&op, "ctlib2::twice", NULL));
  int64_t before = g_composite_calls;
  ct_library_free(lib);
  CT_EXPECT_ERROR(ct_op_call(&out, op, args, 1, NULL, NULL, 0), CT_ERR_NOT_FOUND,
                  "ctlib2::twice was removed");
  /* a compiled function's graph: CT_ERR_NOT_FOUND naming the operator (LibTorch's
   * alias analysis asserts; issue 40, item 16) */
  CT_EXPECT_ERROR(ct_script_call(&out, sc, "f", args, 1, NULL, NULL, 0), CT_ERR_NOT_FOUND,
                  "operator ctlib2::twice is not registered");
  CT_EXPECT_ERROR(ct_op_call_name(&out, "ctlib2::twice", args, 1, NULL, NULL, 0), CT_ERR_NOT_FOUND,
                  "ctlib2::twice");
  assert_int_equal(g_composite_calls, before);

  /* Defined again (another library): the old handle works again. */
  CT_OK_OR_FAIL(ct_library_new(&lib, "ctlib2"));
  CT_OK_OR_FAIL(ct_library_define(lib, "twice(Tensor x) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_impl(lib, "twice", "CPU", twice_fn, NULL, NULL, 0));
  CT_OK_OR_FAIL(ct_op_call(&out, op, args, 1, NULL, NULL, 0));
  ct_value_free(out);
  assert_int_equal(g_composite_calls, before + 1);
  ct_library_free(lib);
  ct_op_free(op);
  ct_script_free(sc);
  ct_value_free(a);
  ct_tensor_free(x);
}

static int64_t g_destroyed;
static void count_destroy(void *ctx) {
  (void)ctx;
  ++g_destroyed;
}

static void test_errors(void **state) {
  (void)state;
  ct_library *lib = NULL;
  CT_EXPECT_ERROR(ct_library_new(NULL, "x"), CT_ERR_INVALID_ARGUMENT, "out");
  CT_EXPECT_ERROR(ct_library_new(&lib, NULL), CT_ERR_INVALID_ARGUMENT, "ns");
  CT_EXPECT_ERROR(ct_library_new(&lib, "aten"), CT_ERR_INVALID_ARGUMENT, "belongs to torch");
  CT_EXPECT_ERROR(ct_library_new(&lib, "my-ns"), CT_ERR_INVALID_ARGUMENT, "letters, digits");
  CT_EXPECT_ERROR(ct_library_new(&lib, ""), CT_ERR_INVALID_ARGUMENT, "letters, digits");
  ct_library_free(NULL);

  CT_OK_OR_FAIL(ct_library_new(&lib, "ctlib3"));
  CT_EXPECT_ERROR(ct_library_define(NULL, "f(Tensor x) -> Tensor", NULL, 0),
                  CT_ERR_INVALID_ARGUMENT, "lib");
  CT_EXPECT_ERROR(ct_library_define(lib, NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT, "schema");
  CT_EXPECT_ERROR(ct_library_define(lib, "f(Tensor x -> Tensor", NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "bad schema");
  CT_EXPECT_ERROR(ct_library_define(lib, "other::f(Tensor x) -> Tensor", NULL, 0),
                  CT_ERR_INVALID_ARGUMENT, "not in this library's namespace 'ctlib3'");
  CT_EXPECT_ERROR(ct_library_define(lib, "f(Tensor x, ...) -> Tensor", NULL, 0),
                  CT_ERR_INVALID_ARGUMENT, "variadic");
  const char *bad_tag[1] = {"no_such_tag"};
  CT_EXPECT_ERROR(ct_library_define(lib, "f(Tensor x) -> Tensor", bad_tag, 1),
                  CT_ERR_INVALID_ARGUMENT, "unknown tag 'no_such_tag'");
  CT_EXPECT_ERROR(ct_library_define(lib, "f(Tensor x) -> Tensor", NULL, 1), CT_ERR_INVALID_ARGUMENT,
                  "tags");
  const char *tag[1] = {"nondeterministic_seeded"};
  CT_OK_OR_FAIL(ct_library_define(lib, "f(Tensor x) -> Tensor", tag, 1));
  CT_EXPECT_ERROR(ct_library_define(lib, "f(Tensor y) -> Tensor", NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "'ctlib3::f' is already defined");
  /* A name ct_op_register holds. */
  CT_OK_OR_FAIL(ct_op_register("ctlib3::jitonly(Tensor x) -> Tensor", ctk_softsign, NULL));
  CT_EXPECT_ERROR(ct_library_define(lib, "jitonly(Tensor x) -> Tensor", NULL, 0),
                  CT_ERR_INVALID_ARGUMENT, "already registered");

  /* Kernels: every failure destroys the ctx at once. */
  g_destroyed = 0;
  CT_EXPECT_ERROR(ct_library_impl(lib, "f", "XLA", ctk_softsign, NULL, count_destroy, 0),
                  CT_ERR_INVALID_ARGUMENT, "dispatch key 'XLA'");
  CT_EXPECT_ERROR(ct_library_impl(lib, "f", "Autograd", ctk_softsign, NULL, count_destroy, 0),
                  CT_ERR_INVALID_ARGUMENT, "ct_library_impl_autograd");
  CT_EXPECT_ERROR(ct_library_impl(lib, "nope", "CPU", ctk_softsign, NULL, count_destroy, 0),
                  CT_ERR_NOT_FOUND, "'ctlib3::nope' is not defined");
  CT_EXPECT_ERROR(ct_library_impl(lib, "aten::add", "CPU", ctk_softsign, NULL, count_destroy, 0),
                  CT_ERR_INVALID_ARGUMENT, "namespace");
  CT_EXPECT_ERROR(ct_library_impl(lib, "f", "CPU", NULL, NULL, count_destroy, 0),
                  CT_ERR_INVALID_ARGUMENT, "kernel");
  CT_EXPECT_ERROR(ct_library_impl(lib, "f", "CPU", ctk_softsign, NULL, count_destroy, 8),
                  CT_ERR_INVALID_ARGUMENT, "unknown flags");
  CT_EXPECT_ERROR(ct_library_impl(NULL, "f", "CPU", ctk_softsign, NULL, count_destroy, 0),
                  CT_ERR_INVALID_ARGUMENT, "lib");
  assert_int_equal(g_destroyed, 7);
  CT_OK_OR_FAIL(ct_library_impl(lib, "f", "CPU", ctk_softsign, NULL, count_destroy, 0));
  CT_EXPECT_ERROR(ct_library_impl(lib, "ctlib3::f", "CPU", ctk_softsign, NULL, count_destroy, 0),
                  CT_ERR_INVALID_ARGUMENT, "already has a ctorch kernel for CPU");
  CT_OK_OR_FAIL(ct_library_define(lib, "pair(Tensor x) -> (Tensor, int)", NULL, 0));
  CT_EXPECT_ERROR(
      ct_library_impl_autograd(lib, "pair", ctk_softsign_backward, NULL, count_destroy, 0),
      CT_ERR_INVALID_ARGUMENT, "needs every return of 'ctlib3::pair' to be a Tensor");
  CT_EXPECT_ERROR(ct_library_impl_autograd(lib, "f", NULL, NULL, count_destroy, 0),
                  CT_ERR_INVALID_ARGUMENT, "backward");
  assert_int_equal(g_destroyed, 10);
  ct_library_free(lib);
  assert_int_equal(g_destroyed, 11);
}

/* The same-thread flag: a call from another thread fails before the kernel
 * is entered. */
/* Tensors-only kernels (ct_library_impl_tensors): handles in, handles out. */
static int64_t g_tk_calls, g_tk_meta_calls;
static const void *g_tk_seen_data;
/* sum_prod(a, b) -> (a + b, a * b), float64 loops; ctx selects a fault. */
static ct_status sum_prod_tk(void *ctx, const ct_tensor *const *in, size_t n, ct_tensor **out,
                             size_t m) {
  intptr_t fault = (intptr_t)ctx;
  g_tk_calls++;
  if (n != 2 || m != 2) return ct_set_error(CT_ERR_INTERNAL, "wrong arity");
  g_tk_seen_data = ct_tensor_data_ptr(in[0]);
  const int64_t k = ct_tensor_numel(in[0]);
  const int meta = ct_tensor_device_type(in[0]) == CT_DEVICE_META;
  if (meta) g_tk_meta_calls++;
  if (fault == 5) return CT_ERR_INTERNAL; /* fails without ct_set_error */
  if (fault == 3 || fault == 4) { /* issue 40 item 8: one handle in two slots, an input */
    ct_status st = ct_tensor_ref(&out[0], in[0]);
    out[1] = fault == 3 ? out[0] : (ct_tensor *)in[1];
    return st;
  }
  for (size_t j = 0; j < 2; ++j) {
    if (fault == 2 && j == 1) return CT_OK; /* leaves outputs[1] NULL */
    ct_status st = ct_tensor_empty(&out[j], ct_tensor_sizes(in[0]), (size_t)ct_tensor_ndim(in[0]),
                                   CT_FLOAT64, ct_tensor_device_type(in[0]), 0, 0);
    if (st != CT_OK) return st;
  }
  if (fault == 1) return ct_set_error(CT_ERR_INVALID_ARGUMENT, "sum_prod refuses");
  if (meta) return CT_OK;
  const double *a = ct_tensor_data_ptr(in[0]), *b = ct_tensor_data_ptr(in[1]);
  double *s = ct_tensor_data_ptr(out[0]), *p = ct_tensor_data_ptr(out[1]);
  for (int64_t i = 0; i < k; ++i) {
    s[i] = a[i] + b[i];
    p[i] = a[i] * b[i];
  }
  return CT_OK;
}

static ct_status no_backward(void *ctx, const ct_value *const *args, size_t n_args,
                             const ct_value *result, const ct_tensor *const *grads, size_t n_out,
                             ct_tensor **grad_inputs) {
  (void)ctx, (void)args, (void)n_args, (void)result, (void)grads, (void)n_out, (void)grad_inputs;
  return CT_OK;
}

static void test_tensors_kernel(void **state) {
  (void)state;
  ct_library *lib = NULL;
  CT_OK_OR_FAIL(ct_library_new(&lib, "ctlibt"));
  CT_OK_OR_FAIL(
      ct_library_define(lib, "sum_prod(Tensor a, Tensor b) -> (Tensor, Tensor)", NULL, 0));
  CT_OK_OR_FAIL(ct_library_define(lib, "refuses(Tensor a, Tensor b) -> (Tensor, Tensor)", NULL, 0));
  CT_OK_OR_FAIL(ct_library_define(lib, "half(Tensor a, Tensor b) -> (Tensor, Tensor)", NULL, 0));
  CT_OK_OR_FAIL(ct_library_define(lib, "twice(Tensor a, Tensor b) -> (Tensor, Tensor)", NULL, 0));
  CT_OK_OR_FAIL(ct_library_define(lib, "silent(Tensor a, Tensor b) -> (Tensor, Tensor)", NULL, 0));
  CT_OK_OR_FAIL(ct_library_define(lib, "aliased(Tensor a, Tensor b) -> (Tensor, Tensor)", NULL, 0));
  CT_OK_OR_FAIL(ct_library_define(lib, "scaled(Tensor a, float s) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_define(lib, "opt(Tensor a, Tensor? b) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_define(lib, "listy(Tensor a) -> Tensor[]", NULL, 0));
  g_destroyed = 0;
  CT_OK_OR_FAIL(
      ct_library_impl_tensors(lib, "sum_prod", "CPU", sum_prod_tk, NULL, count_destroy, 0));
  CT_OK_OR_FAIL(
      ct_library_impl_tensors(lib, "sum_prod", "Meta", sum_prod_tk, NULL, count_destroy, 0));
  /* LibTorch 1.13 has no fallthrough for AutogradMeta: an autograd kernel. */
  CT_OK_OR_FAIL(ct_library_impl_autograd(lib, "sum_prod", no_backward, NULL, NULL, 0));
  CT_OK_OR_FAIL(
      ct_library_impl_tensors(lib, "refuses", "CPU", sum_prod_tk, (void *)1, count_destroy, 0));
  CT_OK_OR_FAIL(
      ct_library_impl_tensors(lib, "half", "CPU", sum_prod_tk, (void *)2, count_destroy, 0));
  CT_OK_OR_FAIL(
      ct_library_impl_tensors(lib, "twice", "CPU", sum_prod_tk, (void *)3, count_destroy, 0));
  CT_OK_OR_FAIL(
      ct_library_impl_tensors(lib, "silent", "CPU", sum_prod_tk, (void *)5, count_destroy, 0));
  CT_OK_OR_FAIL(
      ct_library_impl_tensors(lib, "aliased", "CPU", sum_prod_tk, (void *)4, count_destroy, 0));
  /* Only plain Tensor arguments and returns; every failure destroys ctx. */
  CT_EXPECT_ERROR(
      ct_library_impl_tensors(lib, "scaled", "CPU", sum_prod_tk, NULL, count_destroy, 0),
      CT_ERR_INVALID_ARGUMENT, "'s' is float");
  CT_EXPECT_ERROR(ct_library_impl_tensors(lib, "opt", "CPU", sum_prod_tk, NULL, count_destroy, 0),
                  CT_ERR_INVALID_ARGUMENT, "every argument and return of 'ctlibt::opt'");
  CT_EXPECT_ERROR(ct_library_impl_tensors(lib, "listy", "CPU", sum_prod_tk, NULL, count_destroy, 0),
                  CT_ERR_INVALID_ARGUMENT, "use ct_library_impl");
  CT_EXPECT_ERROR(ct_library_impl_tensors(lib, "sum_prod", "CPU", NULL, NULL, count_destroy, 0),
                  CT_ERR_INVALID_ARGUMENT, "kernel");
  CT_EXPECT_ERROR(
      ct_library_impl_tensors(lib, "sum_prod", "CPU", sum_prod_tk, NULL, count_destroy, 0),
      CT_ERR_INVALID_ARGUMENT, "already has a ctorch kernel for CPU");
  CT_EXPECT_ERROR(
      ct_library_impl_tensors(lib, "sum_prod", "Autograd", sum_prod_tk, NULL, count_destroy, 0),
      CT_ERR_INVALID_ARGUMENT, "ct_library_impl_autograd");
  CT_EXPECT_ERROR(
      ct_library_impl_tensors(NULL, "sum_prod", "CPU", sum_prod_tk, NULL, count_destroy, 0),
      CT_ERR_INVALID_ARGUMENT, "lib");
  CT_EXPECT_ERROR(
      ct_library_impl_tensors(lib, "sum_prod", "CPU", sum_prod_tk, NULL, count_destroy, 4),
      CT_ERR_INVALID_ARGUMENT, "unknown flags");
  assert_int_equal(g_destroyed, 8);

  /* Values, and the inputs are the caller's memory (no copy). */
  const double A[5] = {1, 2, 3, 4, 5}, B[5] = {-1, 0.5, 2, 0, 10};
  ct_tensor *a = f64(A, 5, 0), *b = f64(B, 5, 0);
  ct_op *op = NULL;
  CT_OK_OR_FAIL(ct_op_find(&op, "ctlibt::sum_prod", ""));
  const ct_tensor *ins[2] = {a, b};
  ct_tensor *outs[2] = {NULL, NULL};
  g_tk_calls = 0;
  CT_OK_OR_FAIL(ct_op_call_tensors(outs, 2, op, ins, 2));
  assert_int_equal(g_tk_calls, 1);
  assert_ptr_equal(g_tk_seen_data, ct_tensor_data_ptr(a));
  const double *s = ct_tensor_data_ptr(outs[0]), *p = ct_tensor_data_ptr(outs[1]);
  for (int i = 0; i < 5; ++i) {
    assert_true(s[i] == A[i] + B[i]);
    assert_true(p[i] == A[i] * B[i]);
  }
  ct_tensor_free(outs[0]);
  ct_tensor_free(outs[1]);
  /* An input that requires grad reaches a device kernel detached, with its data. */
  ct_tensor *ag = f64(A, 5, 1);
  const ct_tensor *ins_g[2] = {ag, b};
  CT_OK_OR_FAIL(ct_op_call_tensors(outs, 2, op, ins_g, 2));
  assert_ptr_equal(g_tk_seen_data, ct_tensor_data_ptr(ag));
  ct_tensor_free(outs[0]);
  ct_tensor_free(outs[1]);
  ct_tensor_free(ag);
  /* Meta inputs: the Meta kernel gives shapes without data. */
  int64_t sz[2] = {3, 7};
  ct_tensor *ma = NULL, *mb = NULL;
  CT_OK_OR_FAIL(ct_tensor_empty(&ma, sz, 2, CT_FLOAT64, CT_DEVICE_META, 0, 0));
  CT_OK_OR_FAIL(ct_tensor_empty(&mb, sz, 2, CT_FLOAT64, CT_DEVICE_META, 0, 0));
  const ct_tensor *mins[2] = {ma, mb};
  g_tk_meta_calls = 0;
  CT_OK_OR_FAIL(ct_op_call_tensors(outs, 2, op, mins, 2));
  assert_int_equal(g_tk_meta_calls, 1);
  assert_int_equal(ct_tensor_device_type(outs[1]), CT_DEVICE_META);
  assert_int_equal(ct_tensor_sizes(outs[1])[1], 7);
  ct_tensor_free(outs[0]);
  ct_tensor_free(outs[1]);
  ct_tensor_free(ma);
  ct_tensor_free(mb);
  ct_op_free(op);
  /* A failing kernel and a missing output: the caller gets CT_ERR_CALLBACK with
   * the message; what the kernel stored is freed (ASan leg). */
  CT_OK_OR_FAIL(ct_op_find(&op, "ctlibt::refuses", ""));
  CT_EXPECT_ERROR(ct_op_call_tensors(outs, 2, op, ins, 2), CT_ERR_CALLBACK, "sum_prod refuses");
  ct_op_free(op);
  CT_OK_OR_FAIL(ct_op_find(&op, "ctlibt::half", ""));
  CT_EXPECT_ERROR(ct_op_call_tensors(outs, 2, op, ins, 2), CT_ERR_CALLBACK,
                  "stored no tensor in outputs[1]");
  ct_op_free(op);
  /* The same handle in two slots, an input handle as an output: refused, and
   * nothing freed twice (ASan leg); the inputs stay usable. */
  CT_OK_OR_FAIL(ct_op_find(&op, "ctlibt::twice", ""));
  CT_EXPECT_ERROR(ct_op_call_tensors(outs, 2, op, ins, 2), CT_ERR_CALLBACK,
                  "outputs[0] and outputs[1] are the same handle");
  ct_op_free(op);
  CT_OK_OR_FAIL(ct_op_find(&op, "ctlibt::aliased", ""));
  CT_EXPECT_ERROR(ct_op_call_tensors(outs, 2, op, ins, 2), CT_ERR_CALLBACK,
                  "outputs[1] is the input handle inputs[1]");
  ct_op_free(op);
  assert_true(((const double *)ct_tensor_data_ptr(b))[4] == 10);
  /* A kernel failing without a message gets its own, not the thread's last
   * unrelated error (issue 40). */
  assert_int_equal(ct_tensor_zeros(NULL, NULL, 0, CT_FLOAT32, CT_DEVICE_CPU, -1, 0),
                   CT_ERR_INVALID_ARGUMENT);
  CT_OK_OR_FAIL(ct_op_find(&op, "ctlibt::silent", ""));
  for (int k = 0; k < 2; ++k) /* the message does not grow with each failure */
    CT_EXPECT_ERROR(ct_op_call_tensors(outs, 2, op, ins, 2), CT_ERR_CALLBACK,
                    "kernel failed (status 10): (no message: the callback did not call");
  assert_null(strstr(ct_last_error(), "'out' is NULL"));
  assert_null(strstr(ct_last_error(), "kernel failed (status 10): ctlibt"));
  ct_op_free(op);
  /* Through the value path too (ct_op_call_name), and in TorchScript. */
  ct_value *va = tv(a), *vb = tv(b), *res = NULL;
  const ct_value *args[2] = {va, vb};
  CT_OK_OR_FAIL(ct_op_call_name(&res, "ctlibt::sum_prod", args, 2, NULL, NULL, 0));
  size_t len = 0;
  CT_OK_OR_FAIL(ct_value_length(&len, res));
  assert_int_equal(len, 2);
  ct_value_free(res);
  ct_value_free(va);
  ct_value_free(vb);
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_library_free(lib);
  assert_int_equal(g_destroyed, 15);
}

static int64_t g_same_calls;
static ct_status same_fn(void *ctx, const ct_value *const *args, size_t n, ct_value **out) {
  (void)ctx;
  (void)n;
  ++g_same_calls;
  return ct_op_call_name(out, "aten::neg", args, 1, NULL, NULL, 0);
}
static void *call_other_thread(void *arg) {
  ct_value *a = arg, *out = NULL;
  const ct_value *args[1] = {a};
  ct_status st = ct_op_call_name(&out, "ctlib4::same", args, 1, NULL, NULL, 0);
  static char msg[512];
  snprintf(msg, sizeof msg, "%d %s", (int)st, ct_last_error());
  ct_value_free(out);
  return msg;
}
/* Issue 40 item 10: ct_library_free held its lock while destroy callbacks ran,
 * so a destroy that called ct_library_impl waited forever. Now the callbacks
 * run after the lock: re-entering the library being freed fails cleanly,
 * another library takes the kernel. */
static ct_library *g_reenter_self, *g_reenter_other;
static ct_status g_reenter_self_status = -1, g_reenter_other_status = -1;
static char g_reenter_msg[256];
static void reentering_destroy(void *ctx) {
  (void)ctx;
  g_reenter_self_status =
      ct_library_impl(g_reenter_self, "g", "CPU", ctk_softsign, NULL, NULL, 0);
  snprintf(g_reenter_msg, sizeof g_reenter_msg, "%s", ct_last_error());
  g_reenter_other_status =
      ct_library_impl(g_reenter_other, "h", "CPU", ctk_softsign, NULL, NULL, 0);
  ct_op *op = NULL; /* a lookup inside destroy works too */
  if (ct_op_find(&op, "aten::add", "Tensor") == CT_OK) ct_op_free(op);
}

static void test_destroy_may_reenter(void **state) {
  (void)state;
  CT_OK_OR_FAIL(ct_library_new(&g_reenter_self, "ctlibre1"));
  CT_OK_OR_FAIL(ct_library_new(&g_reenter_other, "ctlibre2"));
  CT_OK_OR_FAIL(ct_library_define(g_reenter_self, "f(Tensor x) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_define(g_reenter_self, "g(Tensor x) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_define(g_reenter_other, "h(Tensor x) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_impl(g_reenter_self, "f", "CPU", ctk_softsign, NULL,
                                reentering_destroy, 0));
  ct_library_free(g_reenter_self); /* hung here before */
  assert_int_equal(g_reenter_self_status, CT_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(g_reenter_msg, "is being freed"));
  assert_int_equal(g_reenter_other_status, CT_OK);
  ct_op *h = NULL;
  CT_OK_OR_FAIL(ct_op_find(&h, "ctlibre2::h", ""));
  ct_op_free(h);
  ct_library_free(g_reenter_other);
}

static void test_same_thread(void **state) {
  (void)state;
  ct_library *lib = NULL;
  CT_OK_OR_FAIL(ct_library_new(&lib, "ctlib4"));
  CT_OK_OR_FAIL(ct_library_define(lib, "same(Tensor x) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_impl(lib, "same", "CPU", same_fn, NULL, NULL, CT_KERNEL_SAME_THREAD));
  ct_tensor *x = f64(X, 5, 0);
  ct_tensor *y = call1("ctlib4::same", x);
  assert_float_equal(((double *)ct_tensor_data_ptr(y))[0], 2.5, 0);
  ct_tensor_free(y);
  ct_value *a = tv(x);
  pthread_t th;
  void *res = NULL;
  assert_int_equal(pthread_create(&th, NULL, call_other_thread, a), 0);
  pthread_join(th, &res);
  assert_non_null(strstr((char *)res, "runs only on the thread that registered it"));
  assert_int_equal(atoi((char *)res), CT_ERR_NOT_SUPPORTED);
  assert_int_equal(g_same_calls, 1);
  ct_value_free(a);
  ct_tensor_free(x);
  ct_library_free(lib);
}

/* Registrations and frees while other threads call ops (run under TSan). */
static atomic_int g_stop;
static atomic_long g_calls, g_failures;
static void *caller(void *arg) {
  ct_value *a = NULL, *y = NULL, *z = NULL;
  if (ct_value_from_tensor(&a, arg) != CT_OK) return NULL;
  while (!atomic_load(&g_stop)) {
    const ct_value *args[1] = {a};
    if (ct_op_call_name(&y, "ctlib5::keep", args, 1, NULL, NULL, 0) != CT_OK) {
      atomic_fetch_add(&g_failures, 1);
      continue;
    }
    args[0] = y;
    if (ct_op_call_name(&z, "ctlib5::softsign", args, 1, NULL, NULL, 0) != CT_OK)
      atomic_fetch_add(&g_failures, 1);
    ct_value_free(z);
    ct_value_free(y);
    z = y = NULL;
    atomic_fetch_add(&g_calls, 1);
  }
  ct_value_free(a);
  return NULL;
}
static void test_concurrent_registration(void **state) {
  (void)state;
  ct_library *keep = NULL;
  CT_OK_OR_FAIL(ct_library_new(&keep, "ctlib5"));
  CT_OK_OR_FAIL(ctk_register_softsign(keep, "softsign(Tensor x) -> Tensor"));
  CT_OK_OR_FAIL(ct_library_define(keep, "keep(Tensor x) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_impl(keep, "keep", "CPU", ctk_softsign, NULL, NULL, 0));
  ct_tensor *x = f64(X, 5, 0);
  atomic_store(&g_stop, 0);
  pthread_t th[2];
  for (int i = 0; i < 2; ++i) assert_int_equal(pthread_create(&th[i], NULL, caller, x), 0);
  for (int round = 0; round < 30 || atomic_load(&g_calls) < 200; ++round) {
    ct_library *lib = NULL;
    char name[16], schema[64];
    snprintf(name, sizeof name, "op%d", round % 3);
    snprintf(schema, sizeof schema, "%s(Tensor x) -> Tensor", name);
    CT_OK_OR_FAIL(ct_library_new(&lib, "ctlib6"));
    CT_OK_OR_FAIL(ct_library_define(lib, schema, NULL, 0));
    CT_OK_OR_FAIL(ct_library_impl(lib, name, "CPU", twice_fn, NULL, NULL, 0));
    char qname[32];
    snprintf(qname, sizeof qname, "ctlib6::%s", name);
    ct_tensor_free(call1(qname, x));
    ct_library_free(lib);
  }
  atomic_store(&g_stop, 1);
  for (int i = 0; i < 2; ++i) pthread_join(th[i], NULL);
  assert_int_equal(atomic_load(&g_failures), 0);
  ct_tensor_free(x);
  ct_library_free(keep);
}

/* Kernels per device: a CPU input reaches the CPU kernel only; with a GPU, a
 * CUDA input reaches the CUDA kernel (device-agnostic: it calls aten ops). */
static int64_t g_device_calls[2];
static ct_status per_device_fn(void *ctx, const ct_value *const *args, size_t n, ct_value **out) {
  (void)n;
  ++g_device_calls[(intptr_t)ctx];
  return ct_op_call_name(out, "aten::neg", args, 1, NULL, NULL, 0);
}
static void test_per_device_kernels(void **state) {
  (void)state;
  ct_library *lib = NULL;
  CT_OK_OR_FAIL(ct_library_new(&lib, "ctlib7"));
  CT_OK_OR_FAIL(ct_library_define(lib, "neg(Tensor x) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_impl(lib, "neg", "CPU", per_device_fn, (void *)0, NULL, 0));
  CT_OK_OR_FAIL(ct_library_impl(lib, "neg", "CUDA", per_device_fn, (void *)1, NULL, 0));
  ct_tensor *x = f64(X, 5, 0);
  ct_tensor *y = call1("ctlib7::neg", x);
  assert_float_equal(((double *)ct_tensor_data_ptr(y))[0], 2.5, 0);
  assert_int_equal(g_device_calls[0], 1);
  assert_int_equal(g_device_calls[1], 0);
  ct_tensor_free(y);
  if (ct_cuda_is_available()) {
    ct_tensor *xc = NULL, *yc = NULL, *back = NULL;
    CT_OK_OR_FAIL(ct_tensor_to(&xc, x, CT_DEVICE_CUDA, 0, CT_DTYPE_KEEP, 0, 0));
    yc = call1("ctlib7::neg", xc);
    assert_int_equal(ct_tensor_device_type(yc), CT_DEVICE_CUDA);
    CT_OK_OR_FAIL(ct_tensor_to(&back, yc, CT_DEVICE_CPU, -1, CT_DTYPE_KEEP, 0, 0));
    assert_float_equal(((double *)ct_tensor_data_ptr(back))[4], -3.0, 0);
    assert_int_equal(g_device_calls[1], 1);
    ct_tensor_free(back);
    ct_tensor_free(yc);
    ct_tensor_free(xc);
  }
  ct_tensor_free(x);
  ct_library_free(lib);
}

/* Inside an AOTInductor package (LibTorch >= 2.6): custom_op.pt2 calls
 * ctaoti::softsign (made by tests/models/make_packages.py, which defines only
 * its schema and fake kernel); the real kernel comes from ctorch here. */
static void test_in_package(void **state) {
  (void)state;
  const char *dir = getenv("CTORCH_TEST_PACKAGES");
  char path[4096], io_path[4096], why[4096];
  if (!dir) skip();
  snprintf(path, sizeof path, "%s/custom_op.pt2", dir);
  snprintf(io_path, sizeof io_path, "%s/custom_op_io.pt", dir);
  snprintf(why, sizeof why, "%s/custom_op_unsupported.txt", dir);
  if (access(path, R_OK) != 0) {
    /* 1.13 makes no packages; a newer torch that could not compile it says why. */
    FILE *f = fopen(why, "r");
    if (f) {
      char line[1024] = "";
      if (fgets(line, sizeof line, f)) fprintf(stderr, "custom_op.pt2 not made: %s", line);
      fclose(f);
    }
    skip();
  }
  memset(ctk_counts, 0, sizeof ctk_counts);
  ct_library *lib = NULL;
  CT_OK_OR_FAIL(ct_library_new(&lib, "ctaoti"));
  /* The package's torch defined the schema in its own process only. */
  CT_OK_OR_FAIL(ctk_register_softsign(lib, "softsign(Tensor x) -> Tensor"));
  ct_package *p = NULL;
  CT_OK_OR_FAIL(ct_package_load(&p, path, NULL));
  ct_value *io = NULL, *ins = NULL, *outs = NULL, *xin = NULL, *want_v = NULL;
  CT_OK_OR_FAIL(ct_pickle_load(&io, io_path));
  CT_OK_OR_FAIL(ct_value_dict_get_str(&ins, io, "inputs"));
  CT_OK_OR_FAIL(ct_value_dict_get_str(&outs, io, "outputs"));
  CT_OK_OR_FAIL(ct_value_get(&xin, ins, 0));
  CT_OK_OR_FAIL(ct_value_get(&want_v, outs, 0));
  ct_tensor *x = vt(xin), *want = vt(want_v), *got = NULL;
  CT_OK_OR_FAIL(ct_package_run(&got, 1, NULL, p, (const ct_tensor *const *)&x, 1));
  assert_int_equal(ctk_counts[0], 1); /* the C kernel ran inside the package */
  const float *a = ct_tensor_data_ptr(got), *b = ct_tensor_data_ptr(want);
  for (int64_t i = 0; i < ct_tensor_numel(want); ++i) assert_float_equal(a[i], b[i], 1e-6);
  ct_tensor_free(got);
  ct_tensor_free(want);
  ct_tensor_free(x);
  ct_value_free(want_v);
  ct_value_free(xin);
  ct_value_free(outs);
  ct_value_free(ins);
  ct_value_free(io);
  ct_package_free(p);
  ct_library_free(lib);
}


/* A kernel that registers or frees while TorchScript compiles (constant
 * folding runs it with constant arguments) must not deadlock: registering
 * fails with a message, a free is done when the compile ends (issue 40,
 * item 9). alarm() turns a hang into a failure. */
static ct_library *g_fold_lib, *g_fold_victim;
static ct_status g_fold_define_status = CT_OK;
static int g_fold_calls;
static ct_status folding_kernel(void *ctx, const ct_value *const *args, size_t n, ct_value **out) {
  (void)ctx;
  (void)n;
  g_fold_calls++;
  g_fold_define_status = ct_library_define(g_fold_lib, "late(Tensor x) -> Tensor", NULL, 0);
  ct_status reg = ct_op_register("ctfold_late::op(Tensor x) -> Tensor", twice_fn, NULL);
  if (reg == CT_OK) return ct_set_error(CT_ERR_INTERNAL, "ct_op_register succeeded");
  if (g_fold_victim) {
    ct_library_free(g_fold_victim); /* deferred until the compile ends */
    g_fold_victim = NULL;
  }
  return ct_value_ref(out, args[0]);
}

static void test_register_while_compiling(void **state) {
  (void)state;
  alarm(60);
  CT_OK_OR_FAIL(ct_library_new(&g_fold_lib, "ctfold"));
  CT_OK_OR_FAIL(ct_library_new(&g_fold_victim, "ctfoldv"));
  CT_OK_OR_FAIL(ct_library_define(g_fold_victim, "v(Tensor x) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_define(g_fold_lib, "k(Tensor x) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_impl(g_fold_lib, "k", "CompositeExplicitAutograd", folding_kernel,
                                NULL, NULL, 0));
  ct_script *sc = NULL;
  CT_OK_OR_FAIL(ct_script_compile(
      &sc, "def f() -> Tensor:\n    return torch.ops.ctfold.k(torch.ones([2]))\n"));
  ct_value *out = NULL;
  CT_OK_OR_FAIL(ct_script_call(&out, sc, "f", NULL, 0, NULL, NULL, 0));
  ct_value_free(out);
  print_message("kernel ran %d time(s)\n", g_fold_calls);
  assert_true(g_fold_calls >= 1);
  if (g_fold_define_status == CT_OK) {
    /* the kernel ran outside a compile (no folding here): define worked */
    assert_true(g_fold_victim == NULL);
  } else {
    assert_int_equal(g_fold_define_status, CT_ERR_INVALID_ARGUMENT);
  }
  /* the deferred free happened: the victim's operator is gone */
  ct_op *gone = NULL;
  CT_EXPECT_ERROR(ct_op_find(&gone, "ctfoldv::v", NULL), CT_ERR_NOT_FOUND, "ctfoldv::v");
  ct_script_free(sc);
  ct_library_free(g_fold_lib);
  alarm(0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernels_and_autograd),
      cmocka_unit_test(test_composite_and_script),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_tensors_kernel),
      cmocka_unit_test(test_same_thread),
      cmocka_unit_test(test_destroy_may_reenter),
      cmocka_unit_test(test_concurrent_registration),
      cmocka_unit_test(test_per_device_kernels),
      cmocka_unit_test(test_in_package),
      cmocka_unit_test(test_register_while_compiling),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
