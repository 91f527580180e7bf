/* Autograd on tensors and custom autograd functions with C callbacks. */
#include <math.h>
#include <pthread.h>

#include "test_util.h"

/* ---- Small helpers: ops through ctorch. --------------------------------- */

static ct_tensor *call1(const char *name, const ct_tensor *a, const ct_tensor *b) {
  ct_value *va = NULL, *vb = NULL, *out = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&va, a));
  if (b) CT_OK_OR_FAIL(ct_value_from_tensor(&vb, b));
  const ct_value *args[2] = {va, vb};
  CT_OK_OR_FAIL(ct_op_call_name(&out, name, args, b ? 2 : 1, NULL, NULL, 0));
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, out));
  ct_value_free(out);
  ct_value_free(va);
  ct_value_free(vb);
  return t;
}
static ct_tensor *mul(const ct_tensor *a, const ct_tensor *b) {
  return call1("aten::mul.Tensor", a, b);
}
static ct_tensor *add(const ct_tensor *a, const ct_tensor *b) {
  return call1("aten::add.Tensor", a, b);
}
static ct_tensor *tsum(const ct_tensor *a) { return call1("aten::sum", a, NULL); }
static ct_tensor *tsin(const ct_tensor *a) { return call1("aten::sin", a, NULL); }
static ct_tensor *tcos(const ct_tensor *a) { return call1("aten::cos", a, NULL); }

static ct_tensor *f64(const double *x, int64_t n, int32_t requires_grad) {
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_data(&t, x, &n, 1, CT_FLOAT64, CT_DEVICE_CPU, -1));
  if (requires_grad) CT_OK_OR_FAIL(ct_tensor_set_requires_grad(t, 1));
  return t;
}
static double d_at(const ct_tensor *t, int64_t i) {
  return ((const double *)ct_tensor_data_ptr(t))[i];
}
static double scalar(const ct_tensor *t) { return d_at(t, 0); }

/* ---- Plain autograd. ------------------------------------------------------ */

static void test_requires_grad_and_backward(void **state) {
  (void)state;
  const double xs[3] = {1, 2, 3};
  ct_tensor *x = f64(xs, 3, 0);
  assert_int_equal(ct_tensor_requires_grad(x), 0);
  CT_OK_OR_FAIL(ct_tensor_set_requires_grad(x, 1));
  assert_int_equal(ct_tensor_requires_grad(x), 1);
  assert_int_equal(ct_tensor_is_leaf(x), 1);

  ct_tensor *y = mul(x, x);
  ct_tensor *l = tsum(y);
  assert_int_equal(ct_tensor_is_leaf(y), 0);
  assert_int_equal(ct_tensor_is_leaf(NULL), 0);
  char *name = NULL;
  CT_OK_OR_FAIL(ct_tensor_grad_fn_name(&name, l));
  assert_string_equal(name, "SumBackward0");
  ct_free(name);
  name = (char *)"sentinel";
  CT_OK_OR_FAIL(ct_tensor_grad_fn_name(&name, x));
  assert_null(name);

  ct_tensor *g = (ct_tensor *)1;
  CT_OK_OR_FAIL(ct_tensor_grad(&g, x));
  assert_null(g);

  /* Errors. */
  CT_EXPECT_ERROR(ct_tensor_set_requires_grad(y, 0), CT_ERR_INVALID_ARGUMENT, "leaf");
  CT_EXPECT_ERROR(ct_tensor_set_requires_grad(NULL, 1), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_tensor_set_requires_grad(x, 2), CT_ERR_INVALID_ARGUMENT, "0 or 1");
  int64_t n3 = 3;
  ct_tensor *it = NULL;
  CT_OK_OR_FAIL(ct_tensor_zeros(&it, &n3, 1, CT_INT64, CT_DEVICE_CPU, -1, 0));
  CT_EXPECT_ERROR(ct_tensor_set_requires_grad(it, 1), CT_ERR_TYPE, "floating point");
  CT_EXPECT_ERROR(ct_tensor_backward(y, NULL, 0, 0), CT_ERR_INVALID_ARGUMENT, "one element");
  CT_EXPECT_ERROR(ct_tensor_backward(it, NULL, 0, 0), CT_ERR_INVALID_ARGUMENT,
                  "does not require grad");
  CT_EXPECT_ERROR(ct_tensor_backward(y, l, 0, 0), CT_ERR_INVALID_ARGUMENT, "shape");
  CT_EXPECT_ERROR(ct_tensor_backward(NULL, NULL, 0, 0), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_tensor_grad(NULL, x), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_tensor_grad(&g, NULL), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_tensor_grad_fn_name(NULL, x), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_tensor_grad_fn_name(&name, NULL), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_tensor_zero_grad(NULL), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_tensor_set_grad(NULL, x), CT_ERR_INVALID_ARGUMENT, "NULL");

  /* backward with retain_graph, twice: gradients accumulate. */
  CT_OK_OR_FAIL(ct_tensor_backward(l, NULL, 1, 0));
  CT_OK_OR_FAIL(ct_tensor_grad(&g, x));
  assert_non_null(g);
  for (int i = 0; i < 3; ++i) assert_float_equal(d_at(g, i), 2 * xs[i], 1e-12);
  ct_tensor_free(g);
  CT_OK_OR_FAIL(ct_tensor_backward(l, NULL, 0, 0));
  CT_OK_OR_FAIL(ct_tensor_grad(&g, x));
  for (int i = 0; i < 3; ++i) assert_float_equal(d_at(g, i), 4 * xs[i], 1e-12);
  /* The graph is freed now: a third backward fails inside torch. */
  CT_EXPECT_ERROR(ct_tensor_backward(l, NULL, 0, 0), CT_ERR_TORCH, "second time");
  /* Non-leaf .grad is NULL (and torch prints no warning). */
  ct_tensor *gy = (ct_tensor *)1;
  CT_OK_OR_FAIL(ct_tensor_grad(&gy, y));
  assert_null(gy);

  /* zero_grad keeps the same gradient tensor, zeroed. */
  CT_OK_OR_FAIL(ct_tensor_zero_grad(x));
  for (int i = 0; i < 3; ++i) assert_float_equal(d_at(g, i), 0, 0);
  ct_tensor_free(g);

  /* backward with an explicit gradient. */
  const double ones[3] = {1, 10, 100};
  ct_tensor *go = f64(ones, 3, 0);
  ct_tensor *y2 = mul(x, x);
  CT_OK_OR_FAIL(ct_tensor_backward(y2, go, 0, 0));
  CT_OK_OR_FAIL(ct_tensor_grad(&g, x));
  for (int i = 0; i < 3; ++i) assert_float_equal(d_at(g, i), 2 * xs[i] * ones[i], 1e-12);
  ct_tensor_free(g);

  /* set_grad: checked, NULL clears. */
  CT_OK_OR_FAIL(ct_tensor_set_grad(x, go));
  CT_OK_OR_FAIL(ct_tensor_grad(&g, x));
  assert_float_equal(d_at(g, 2), 100, 0);
  ct_tensor_free(g);
  CT_EXPECT_ERROR(ct_tensor_set_grad(x, l), CT_ERR_INVALID_ARGUMENT, "shape");
  CT_EXPECT_ERROR(ct_tensor_set_grad(x, it), CT_ERR_TYPE, "dtype");
  CT_OK_OR_FAIL(ct_tensor_set_grad(x, NULL));
  CT_OK_OR_FAIL(ct_tensor_grad(&g, x));
  assert_null(g);
  CT_OK_OR_FAIL(ct_tensor_zero_grad(x)); /* no grad: nothing to do */

  ct_tensor_free(y2);
  ct_tensor_free(go);
  ct_tensor_free(it);
  ct_tensor_free(l);
  ct_tensor_free(y);
  ct_tensor_free(x);
}

static void test_autograd_grad(void **state) {
  (void)state;
  const double xs[2] = {0.5, -1.5};
  ct_tensor *x = f64(xs, 2, 1);
  ct_tensor *u = f64(xs, 2, 1); /* unused */
  ct_tensor *x2 = mul(x, x);
  ct_tensor *x3 = mul(x2, x);
  ct_tensor *l = tsum(x3);

  /* First derivative with create_graph, then the second. */
  ct_tensor *g1[1] = {NULL};
  const ct_tensor *outs[1] = {l};
  const ct_tensor *ins[1] = {x};
  CT_OK_OR_FAIL(ct_autograd_grad(g1, outs, 1, ins, 1, NULL, 0, 1, 0));
  assert_non_null(g1[0]);
  for (int i = 0; i < 2; ++i) assert_float_equal(d_at(g1[0], i), 3 * xs[i] * xs[i], 1e-12);
  assert_int_equal(ct_tensor_requires_grad(g1[0]), 1);
  ct_tensor *s = tsum(g1[0]);
  ct_tensor *g2[1] = {NULL};
  const ct_tensor *outs2[1] = {s};
  CT_OK_OR_FAIL(ct_autograd_grad(g2, outs2, 1, ins, 1, NULL, 1, 0, 0));
  for (int i = 0; i < 2; ++i) assert_float_equal(d_at(g2[0], i), 6 * xs[i], 1e-12);

  /* allow_unused: NULL for an input the output does not depend on. */
  ct_tensor *g3[2] = {(ct_tensor *)1, (ct_tensor *)1};
  const ct_tensor *ins2[2] = {x, u};
  CT_OK_OR_FAIL(ct_autograd_grad(g3, outs, 1, ins2, 2, NULL, 1, 0, 1));
  assert_non_null(g3[0]);
  assert_null(g3[1]);
  ct_tensor_free(g3[0]);
  ct_tensor *keep[2] = {(ct_tensor *)1, (ct_tensor *)1};
  CT_EXPECT_ERROR(ct_autograd_grad(keep, outs, 1, ins2, 2, NULL, 1, 0, 0), CT_ERR_TORCH,
                  "not have been used");
  assert_ptr_equal(keep[0], (ct_tensor *)1); /* untouched on failure */

  /* grad_outputs for a non-scalar output. */
  const double w[2] = {2, 3};
  ct_tensor *gw = f64(w, 2, 0);
  const ct_tensor *outs3[1] = {x3};
  const ct_tensor *gos[1] = {gw};
  CT_OK_OR_FAIL(ct_autograd_grad(g3, outs3, 1, ins, 1, gos, 1, 0, 0));
  for (int i = 0; i < 2; ++i) assert_float_equal(d_at(g3[0], i), 3 * xs[i] * xs[i] * w[i], 1e-12);
  ct_tensor_free(g3[0]);
  CT_EXPECT_ERROR(ct_autograd_grad(g3, outs3, 1, ins, 1, NULL, 1, 0, 0), CT_ERR_INVALID_ARGUMENT,
                  "grad_outputs is NULL");
  CT_EXPECT_ERROR(ct_autograd_grad(g3, outs3, 1, ins, 1, (const ct_tensor *const *)outs, 1, 0, 0),
                  CT_ERR_INVALID_ARGUMENT, "shape");
  CT_EXPECT_ERROR(ct_autograd_grad(NULL, outs, 1, ins, 1, NULL, 0, 0, 0), CT_ERR_INVALID_ARGUMENT,
                  "NULL");
  CT_EXPECT_ERROR(ct_autograd_grad(g3, NULL, 1, ins, 1, NULL, 0, 0, 0), CT_ERR_INVALID_ARGUMENT,
                  "NULL");
  CT_EXPECT_ERROR(ct_autograd_grad(g3, outs, 0, ins, 1, NULL, 0, 0, 0), CT_ERR_INVALID_ARGUMENT,
                  "n_outputs");
  const ct_tensor *nullin[1] = {NULL};
  CT_EXPECT_ERROR(ct_autograd_grad(g3, outs, 1, nullin, 1, NULL, 0, 0, 0), CT_ERR_INVALID_ARGUMENT,
                  "inputs[0]");
  const ct_tensor *nograd[1] = {gw};
  CT_EXPECT_ERROR(ct_autograd_grad(g3, outs, 1, nograd, 1, NULL, 0, 0, 0), CT_ERR_INVALID_ARGUMENT,
                  "does not require grad");

  ct_tensor_free(gw);
  ct_tensor_free(g2[0]);
  ct_tensor_free(s);
  ct_tensor_free(g1[0]);
  ct_tensor_free(l);
  ct_tensor_free(x3);
  ct_tensor_free(x2);
  ct_tensor_free(u);
  ct_tensor_free(x);
}

/* ---- Custom autograd functions. -------------------------------------------
 * f(a, b) = (a * sin(b), a + b): two inputs, two outputs. The ctx keeps
 * references to the inputs for backward; destroy frees them and counts. */

typedef struct {
  ct_tensor *a, *b;
  int forward_calls, backward_calls;
  int fail_forward, fail_backward, bad_shape, null_grad_b, null_output;
  pthread_t backward_thread;
} fctx;

static int g_destroyed;

static fctx *fctx_new(void) {
  fctx *c = (fctx *)calloc(1, sizeof *c);
  return c;
}
static void fctx_destroy(void *p) {
  fctx *c = (fctx *)p;
  ct_tensor_free(c->a);
  ct_tensor_free(c->b);
  free(c);
  ++g_destroyed;
}

static ct_status f_forward(void *ctx, const ct_tensor *const *in, size_t n_in, ct_tensor **out,
                           size_t n_out) {
  fctx *c = (fctx *)ctx;
  c->forward_calls++;
  if (n_in != 2 || n_out != 2) return ct_set_error(CT_ERR_CALLBACK, "bad counts");
  if (c->fail_forward) {
    /* A partial output is taken (and freed) by ctorch. */
    CT_OK_OR_FAIL(ct_tensor_ref(&out[0], in[0]));
    return ct_set_error(CT_ERR_CALLBACK, "forward exploded on purpose");
  }
  if (ct_grad_mode_is_enabled()) return ct_set_error(CT_ERR_CALLBACK, "grad mode is on in forward");
  if (!c->a) {
    CT_OK_OR_FAIL(ct_tensor_ref(&c->a, in[0]));
    CT_OK_OR_FAIL(ct_tensor_ref(&c->b, in[1]));
  }
  ct_tensor *sb = tsin(in[1]);
  out[0] = mul(in[0], sb);
  ct_tensor_free(sb);
  out[1] = c->null_output ? NULL : add(in[0], in[1]);
  return CT_OK;
}

static ct_status f_backward(void *ctx, const ct_tensor *const *gout, size_t n_out, ct_tensor **gin,
                            size_t n_in) {
  fctx *c = (fctx *)ctx;
  c->backward_calls++;
  c->backward_thread = pthread_self();
  if (n_in != 2 || n_out != 2) return ct_set_error(CT_ERR_CALLBACK, "bad counts");
  if (c->fail_backward) return ct_set_error(CT_ERR_CALLBACK, "backward exploded on purpose");
  /* da = g0 * sin(b) + g1 ; db = g0 * a * cos(b) + g1 */
  ct_tensor *sb = tsin(c->b), *cb = tcos(c->b);
  ct_tensor *t0 = mul(gout[0], sb);
  gin[0] = add(t0, gout[1]);
  ct_tensor *t1 = mul(gout[0], c->a);
  ct_tensor *t2 = mul(t1, cb);
  gin[1] = c->null_grad_b ? NULL : add(t2, gout[1]);
  if (c->bad_shape) {
    ct_tensor_free(gin[0]);
    gin[0] = tsum(t0); /* shape [] instead of [3] */
  }
  ct_tensor_free(sb);
  ct_tensor_free(cb);
  ct_tensor_free(t0);
  ct_tensor_free(t1);
  ct_tensor_free(t2);
  return CT_OK;
}

/* L = sum(w0 * y0 + w1 * y1) through the custom function (graph or not). */
static const double W0[3] = {0.3, -1.1, 2.0}, W1[3] = {1.7, 0.4, -0.6};

static ct_tensor *loss_of(ct_tensor *y0, ct_tensor *y1) {
  ct_tensor *w0 = f64(W0, 3, 0), *w1 = f64(W1, 3, 0);
  ct_tensor *p0 = mul(w0, y0), *p1 = mul(w1, y1);
  ct_tensor *s = add(p0, p1);
  ct_tensor *l = tsum(s);
  ct_tensor_free(w0);
  ct_tensor_free(w1);
  ct_tensor_free(p0);
  ct_tensor_free(p1);
  ct_tensor_free(s);
  return l;
}

static double custom_loss_value(const double *a, const double *b) {
  ct_tensor *ta = f64(a, 3, 0), *tb = f64(b, 3, 0);
  const ct_tensor *in[2] = {ta, tb};
  ct_tensor *out[2] = {NULL, NULL};
  fctx *c = fctx_new();
  int before = g_destroyed;
  CT_OK_OR_FAIL(
      ct_autograd_function_apply(out, 2, in, 2, "F", f_forward, f_backward, c, fctx_destroy));
  /* No input requires grad: no graph, destroy already ran. */
  assert_int_equal(g_destroyed, before + 1);
  ct_tensor *l = loss_of(out[0], out[1]);
  double v = scalar(l);
  ct_tensor_free(l);
  ct_tensor_free(out[0]);
  ct_tensor_free(out[1]);
  ct_tensor_free(ta);
  ct_tensor_free(tb);
  return v;
}

static void test_custom_function_gradcheck(void **state) {
  (void)state;
  const double a0[3] = {0.7, -0.2, 1.3}, b0[3] = {0.1, 2.2, -0.9};
  int before = g_destroyed;
  ct_tensor *a = f64(a0, 3, 1), *b = f64(b0, 3, 1);
  const ct_tensor *in[2] = {a, b};
  ct_tensor *out[2] = {NULL, NULL};
  fctx *c = fctx_new();
  CT_OK_OR_FAIL(ct_autograd_function_apply(out, 2, in, 2, "MyFunction", f_forward, f_backward, c,
                                           fctx_destroy));
  assert_int_equal(c->forward_calls, 1);
  assert_int_equal(g_destroyed, before); /* the graph holds the ctx */
  char *name = NULL;
  CT_OK_OR_FAIL(ct_tensor_grad_fn_name(&name, out[0]));
  assert_string_equal(name, "MyFunction");
  ct_free(name);
  assert_int_equal(ct_tensor_requires_grad(out[1]), 1);
  assert_int_equal(ct_tensor_is_leaf(out[0]), 0);

  ct_tensor *l = loss_of(out[0], out[1]);
  CT_OK_OR_FAIL(ct_tensor_backward(l, NULL, 0, 0));
  assert_int_equal(c->backward_calls, 1);
  assert_true(pthread_equal(c->backward_thread, pthread_self()));
  ct_tensor *ga = NULL, *gb = NULL;
  CT_OK_OR_FAIL(ct_tensor_grad(&ga, a));
  CT_OK_OR_FAIL(ct_tensor_grad(&gb, b));

  /* Finite differences (central, float64). */
  const double eps = 1e-6;
  for (int i = 0; i < 3; ++i) {
    double ap[3], am[3], bp[3], bm[3];
    memcpy(ap, a0, sizeof ap);
    memcpy(am, a0, sizeof am);
    memcpy(bp, b0, sizeof bp);
    memcpy(bm, b0, sizeof bm);
    ap[i] += eps;
    am[i] -= eps;
    bp[i] += eps;
    bm[i] -= eps;
    double na = (custom_loss_value(ap, b0) - custom_loss_value(am, b0)) / (2 * eps);
    double nb = (custom_loss_value(a0, bp) - custom_loss_value(a0, bm)) / (2 * eps);
    assert_float_equal(d_at(ga, i), na, 1e-6);
    assert_float_equal(d_at(gb, i), nb, 1e-6);
  }

  /* Against the same function written with torch ops. */
  ct_tensor *a2 = f64(a0, 3, 1), *b2 = f64(b0, 3, 1);
  ct_tensor *sb = tsin(b2);
  ct_tensor *y0 = mul(a2, sb), *y1 = add(a2, b2);
  ct_tensor *l2 = loss_of(y0, y1);
  CT_OK_OR_FAIL(ct_tensor_backward(l2, NULL, 0, 0));
  ct_tensor *ga2 = NULL, *gb2 = NULL;
  CT_OK_OR_FAIL(ct_tensor_grad(&ga2, a2));
  CT_OK_OR_FAIL(ct_tensor_grad(&gb2, b2));
  for (int i = 0; i < 3; ++i) {
    assert_float_equal(d_at(ga, i), d_at(ga2, i), 1e-12);
    assert_float_equal(d_at(gb, i), d_at(gb2, i), 1e-12);
  }
  assert_float_equal(scalar(l), scalar(l2), 1e-12);

  ct_tensor_free(ga2);
  ct_tensor_free(gb2);
  ct_tensor_free(l2);
  ct_tensor_free(y0);
  ct_tensor_free(y1);
  ct_tensor_free(sb);
  ct_tensor_free(a2);
  ct_tensor_free(b2);
  ct_tensor_free(ga);
  ct_tensor_free(gb);

  /* destroy runs once, when the outputs and the graph are gone (the finite
   * differences ran 12 graph-less applies, each destroyed at once). */
  assert_int_equal(g_destroyed, before + 12);
  before += 12;
  ct_tensor_free(l);
  ct_tensor_free(out[0]);
  assert_int_equal(g_destroyed, before);
  ct_tensor_free(out[1]);
  assert_int_equal(g_destroyed, before + 1);
  ct_tensor_free(a);
  ct_tensor_free(b);
  assert_int_equal(g_destroyed, before + 1);
}

static void test_custom_function_paths(void **state) {
  (void)state;
  const double a0[3] = {1, 2, 3}, b0[3] = {0.5, 0.25, 0.125};
  ct_tensor *a = f64(a0, 3, 1), *b = f64(b0, 3, 0);
  const ct_tensor *in[2] = {a, b};
  ct_tensor *out[2] = {NULL, NULL};
  int before;

  /* Grad mode off: no graph, destroy before apply returns. */
  before = g_destroyed;
  ct_grad_mode_set_enabled(0);
  fctx *c = fctx_new();
  CT_OK_OR_FAIL(
      ct_autograd_function_apply(out, 2, in, 2, NULL, f_forward, f_backward, c, fctx_destroy));
  ct_grad_mode_set_enabled(1);
  assert_int_equal(g_destroyed, before + 1);
  assert_int_equal(ct_tensor_requires_grad(out[0]), 0);
  ct_tensor_free(out[0]);
  ct_tensor_free(out[1]);

  /* Forward fails: CT_ERR_CALLBACK with its message, destroy once, outputs untouched. */
  before = g_destroyed;
  c = fctx_new();
  c->fail_forward = 1;
  out[0] = out[1] = (ct_tensor *)1;
  CT_EXPECT_ERROR(
      ct_autograd_function_apply(out, 2, in, 2, "Boom", f_forward, f_backward, c, fctx_destroy),
      CT_ERR_CALLBACK, "forward exploded on purpose");
  assert_int_equal(g_destroyed, before + 1);
  assert_ptr_equal(out[0], (ct_tensor *)1);

  /* Forward stores no tensor. */
  before = g_destroyed;
  c = fctx_new();
  c->null_output = 1;
  CT_EXPECT_ERROR(
      ct_autograd_function_apply(out, 2, in, 2, NULL, f_forward, f_backward, c, fctx_destroy),
      CT_ERR_CALLBACK, "forward stored no tensor in outputs[1]");
  assert_int_equal(g_destroyed, before + 1);

  /* Invalid arguments: destroy still runs exactly once. */
  before = g_destroyed;
  CT_EXPECT_ERROR(
      ct_autograd_function_apply(out, 2, in, 2, NULL, NULL, f_backward, fctx_new(), fctx_destroy),
      CT_ERR_INVALID_ARGUMENT, "forward");
  CT_EXPECT_ERROR(ct_autograd_function_apply(NULL, 2, in, 2, NULL, f_forward, f_backward,
                                             fctx_new(), fctx_destroy),
                  CT_ERR_INVALID_ARGUMENT, "outputs");
  CT_EXPECT_ERROR(ct_autograd_function_apply(out, 0, in, 2, NULL, f_forward, f_backward, fctx_new(),
                                             fctx_destroy),
                  CT_ERR_INVALID_ARGUMENT, "n_outputs");
  const ct_tensor *badin[2] = {a, NULL};
  CT_EXPECT_ERROR(ct_autograd_function_apply(out, 2, badin, 2, NULL, f_forward, f_backward,
                                             fctx_new(), fctx_destroy),
                  CT_ERR_INVALID_ARGUMENT, "inputs[1]");
  CT_EXPECT_ERROR(
      ct_autograd_function_apply(out, 2, in, 2, NULL, f_forward, NULL, fctx_new(), fctx_destroy),
      CT_ERR_INVALID_ARGUMENT, "backward");
  assert_int_equal(g_destroyed, before + 5);
  assert_ptr_equal(out[0], (ct_tensor *)1);
  /* destroy may be NULL. */
  fctx *nc = fctx_new();
  CT_OK_OR_FAIL(ct_autograd_function_apply(out, 2, in, 2, NULL, f_forward, f_backward, nc, NULL));
  char *name = NULL;
  CT_OK_OR_FAIL(ct_tensor_grad_fn_name(&name, out[0]));
  assert_string_equal(name, "CTorchFunction");
  ct_free(name);
  ct_tensor_free(out[0]);
  ct_tensor_free(out[1]);
  fctx_destroy(nc);

  /* Backward fails: the message reaches ct_tensor_backward. */
  before = g_destroyed;
  c = fctx_new();
  c->fail_backward = 1;
  CT_OK_OR_FAIL(
      ct_autograd_function_apply(out, 2, in, 2, "Bad", f_forward, f_backward, c, fctx_destroy));
  ct_tensor *l = loss_of(out[0], out[1]);
  CT_EXPECT_ERROR(ct_tensor_backward(l, NULL, 0, 0), CT_ERR_CALLBACK,
                  "backward exploded on purpose");
  ct_tensor_free(l);
  ct_tensor_free(out[0]);
  ct_tensor_free(out[1]);
  assert_int_equal(g_destroyed, before + 1);

  /* Backward returns a gradient of the wrong shape. */
  c = fctx_new();
  c->bad_shape = 1;
  CT_OK_OR_FAIL(
      ct_autograd_function_apply(out, 2, in, 2, "Shape", f_forward, f_backward, c, fctx_destroy));
  l = loss_of(out[0], out[1]);
  CT_EXPECT_ERROR(ct_tensor_backward(l, NULL, 0, 0), CT_ERR_CALLBACK, "shape [] for input 0");
  ct_tensor_free(l);
  ct_tensor_free(out[0]);
  ct_tensor_free(out[1]);
  assert_int_equal(g_destroyed, before + 2);

  /* NULL gradient for an input that needs one: it gets none. Both inputs
   * require grad here. */
  ct_tensor *b2 = f64(b0, 3, 1);
  const ct_tensor *in2[2] = {a, b2};
  c = fctx_new();
  c->null_grad_b = 1;
  CT_OK_OR_FAIL(
      ct_autograd_function_apply(out, 2, in2, 2, "Half", f_forward, f_backward, c, fctx_destroy));
  l = loss_of(out[0], out[1]);
  CT_OK_OR_FAIL(ct_tensor_backward(l, NULL, 0, 0));
  ct_tensor *g = (ct_tensor *)1;
  CT_OK_OR_FAIL(ct_tensor_grad(&g, b2));
  assert_null(g);
  CT_OK_OR_FAIL(ct_tensor_grad(&g, a));
  assert_non_null(g);
  ct_tensor_free(g);
  ct_tensor_free(l);
  ct_tensor_free(out[0]);
  ct_tensor_free(out[1]);
  assert_int_equal(g_destroyed, before + 3);

  /* Only one output used: the other's gradient arrives as zeros. */
  c = fctx_new();
  CT_OK_OR_FAIL(
      ct_autograd_function_apply(out, 2, in2, 2, "One", f_forward, f_backward, c, fctx_destroy));
  l = tsum(out[1]);
  CT_OK_OR_FAIL(ct_tensor_set_grad(a, NULL));
  CT_OK_OR_FAIL(ct_tensor_backward(l, NULL, 0, 0));
  CT_OK_OR_FAIL(ct_tensor_grad(&g, a));
  for (int i = 0; i < 3; ++i) assert_float_equal(d_at(g, i), 1.0, 1e-12);
  ct_tensor_free(g);
  ct_tensor_free(l);
  ct_tensor_free(out[0]);
  ct_tensor_free(out[1]);
  assert_int_equal(g_destroyed, before + 4);

  ct_tensor_free(b2);
  ct_tensor_free(a);
  ct_tensor_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_requires_grad_and_backward),
      cmocka_unit_test(test_autograd_grad),
      cmocka_unit_test(test_custom_function_gradcheck),
      cmocka_unit_test(test_custom_function_paths),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
