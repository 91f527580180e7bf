/* Optimizers, gradient clipping, autocast and the loss scaler through the C
 * ABI (src/optim.cpp, src/clip_grad.cpp, src/amp.cpp): steps against the
 * formulas written out here, a state saved with ct_pickle_save resuming in a
 * new optimizer exactly, concurrent steps and option changes from several
 * threads, and every bad input refused with its status and message. The
 * Python suite checks the same against torch.optim (test_optim.py). */
#include "test_util.h"

#include <math.h>
#include <pthread.h>

/* A 1-D float32 leaf of n values, requiring grad. */
static ct_tensor *param(const float *v, int64_t n) {
  ct_tensor *t = test_tensor_f32(v, &n, 1);
  CT_OK_OR_FAIL(ct_tensor_set_requires_grad(t, 1));
  return t;
}

static void set_grad(ct_tensor *p, const float *g, int64_t n) {
  ct_tensor *gt = test_tensor_f32(g, &n, 1);
  CT_OK_OR_FAIL(ct_tensor_set_grad(p, gt));
  ct_tensor_free(gt);
}

/* op(x) or op(x, x) by qualified name, tensors only. */
static ct_tensor *call(const char *name, const ct_tensor *x, size_t n_inputs) {
  ct_op *op = NULL;
  CT_OK_OR_FAIL(ct_op_find(&op, name, ""));
  const ct_tensor *in[2] = {x, x};
  ct_tensor *out = NULL;
  CT_OK_OR_FAIL(ct_op_call_tensors(&out, 1, op, in, n_inputs));
  ct_op_free(op);
  return out;
}

static float at(const ct_tensor *t, int i) { return ((const float *)ct_tensor_data_ptr(t))[i]; }

static ct_value *dict1(const char *k, ct_value *v) {
  ct_value *key = NULL, *d = NULL;
  CT_OK_OR_FAIL(ct_value_from_string(&key, k, strlen(k)));
  CT_OK_OR_FAIL(ct_value_dict(&d, (const ct_value *const *)&key, (const ct_value *const *)&v, 1));
  ct_value_free(key);
  ct_value_free(v);
  return d;
}

static ct_value *dbl(double x) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_from_double(&v, x));
  return v;
}

static void test_sgd_momentum_follows_the_formula(void **state) {
  (void)state;
  const float w0[3] = {1, -2, 3}, g[3] = {0.5f, 0.25f, -1};
  ct_tensor *w = param(w0, 3);
  ct_value *opts = dict1("momentum", dbl(0.9));
  ct_optimizer *opt = NULL;
  CT_OK_OR_FAIL(ct_optimizer_new(&opt, "SGD", (const ct_tensor *const *)&w, 1, opts));
  CT_OK_OR_FAIL(ct_optimizer_set_double(opt, 0, "lr", 0.1));
  const char *name = NULL;
  CT_OK_OR_FAIL(ct_optimizer_algorithm(&name, opt));
  assert_string_equal(name, "sgd");
  float expect[3], buf[3];
  memcpy(expect, w0, sizeof expect);
  for (int step = 0; step < 3; ++step) {
    set_grad(w, g, 3);
    CT_OK_OR_FAIL(ct_optimizer_step(opt));
    for (int i = 0; i < 3; ++i) {
      buf[i] = step == 0 ? g[i] : 0.9f * buf[i] + g[i];
      expect[i] -= 0.1f * buf[i];
      assert_float_equal(at(w, i), expect[i], 1e-6);
    }
  }
  double lr = 0;
  CT_OK_OR_FAIL(ct_optimizer_get_double(&lr, opt, 0, "lr"));
  assert_true(lr == 0.1);
  /* zero_grad: zeroed in place, then gone */
  CT_OK_OR_FAIL(ct_optimizer_zero_grad(opt, 0));
  ct_tensor *gr = NULL;
  CT_OK_OR_FAIL(ct_tensor_grad(&gr, w));
  assert_non_null(gr);
  assert_true(at(gr, 0) == 0 && at(gr, 2) == 0);
  ct_tensor_free(gr);
  CT_OK_OR_FAIL(ct_optimizer_zero_grad(opt, 1));
  CT_OK_OR_FAIL(ct_tensor_grad(&gr, w));
  assert_null(gr);
  ct_optimizer_free(opt);
  ct_optimizer_free(NULL);
  ct_value_free(opts);
  ct_tensor_free(w);
}

static void test_adam_follows_the_formula(void **state) {
  (void)state;
  const float w0[2] = {0.5f, -1.5f}, g[2] = {0.3f, -0.7f};
  ct_tensor *w = param(w0, 2);
  ct_optimizer *opt = NULL;
  CT_OK_OR_FAIL(ct_optimizer_new(&opt, "adam", (const ct_tensor *const *)&w, 1, NULL));
  double m[2] = {0}, v[2] = {0}, x[2] = {w0[0], w0[1]};
  for (int t = 1; t <= 4; ++t) {
    set_grad(w, g, 2);
    CT_OK_OR_FAIL(ct_optimizer_step(opt));
    for (int i = 0; i < 2; ++i) {
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.999 * v[i] + 0.001 * (double)g[i] * g[i];
      double mh = m[i] / (1 - pow(0.9, t)), vh = sqrt(v[i]) / sqrt(1 - pow(0.999, t));
      x[i] -= 1e-3 * mh / (vh + 1e-8);
      assert_float_equal(at(w, i), x[i], 1e-6);
    }
  }
  ct_optimizer_free(opt);
  ct_tensor_free(w);
}

/* Issue 40 item 1: the optimizer kept the caller's betas list itself; emptying
 * it afterwards (aten::clear) made adam_step read past an empty vector, and
 * writing 5.0 into it gave beta = 5 unchecked. The optimizer's betas are its
 * own, by every way in (new, set, load_state_dict). */
static void test_betas_are_the_optimizers_own(void **state) {
  (void)state;
  const float w0[2] = {0.5f, -1.5f}, g[2] = {0.3f, -0.7f};
  ct_tensor *w = param(w0, 2);
  const double b[2] = {0.9, 0.999};
  ct_value *list = NULL, *dropped = NULL, *five = dbl(5.0), *idx = NULL, *setres = NULL;
  CT_OK_OR_FAIL(ct_value_double_list(&list, b, 2));
  ct_value *opts = NULL;
  CT_OK_OR_FAIL(ct_value_ref(&opts, list));
  opts = dict1("betas", opts);
  ct_optimizer *opt = NULL;
  CT_OK_OR_FAIL(ct_optimizer_new(&opt, "adam", (const ct_tensor *const *)&w, 1, opts));
  CT_OK_OR_FAIL(ct_optimizer_set(opt, 0, "betas", list));
  /* The caller's list changes: the optimizer's betas do not. */
  CT_OK_OR_FAIL(ct_value_from_int(&idx, 0));
  const ct_value *set_args[3] = {list, idx, five};
  CT_OK_OR_FAIL(ct_op_call_name(&setres, "aten::_set_item", set_args, 3, NULL, NULL, 0));
  const ct_value *clear_args[1] = {list};
  CT_OK_OR_FAIL(ct_op_call_name(&dropped, "aten::clear", clear_args, 1, NULL, NULL, 0));
  size_t n = 99;
  CT_OK_OR_FAIL(ct_value_length(&n, list));
  assert_int_equal(n, 0);
  set_grad(w, g, 2);
  CT_OK_OR_FAIL(ct_optimizer_step(opt));
  ct_value *got = NULL, *first = NULL;
  CT_OK_OR_FAIL(ct_optimizer_get(&got, opt, 0, "betas"));
  CT_OK_OR_FAIL(ct_value_length(&n, got));
  assert_int_equal(n, 2);
  CT_OK_OR_FAIL(ct_value_get(&first, got, 0));
  double b0 = 0;
  CT_OK_OR_FAIL(ct_value_to_double(&b0, first));
  assert_true(b0 == 0.9);
  /* one Adam step from w0 moves each weight by lr against its gradient's sign */
  assert_float_equal(at(w, 0), w0[0] - 1e-3, 1e-6);
  ct_value_free(first);
  ct_value_free(got);
  ct_value_free(dropped);
  ct_value_free(setres);
  ct_value_free(idx);
  ct_value_free(five);
  ct_value_free(opts);
  ct_value_free(list);
  ct_optimizer_free(opt);
  ct_tensor_free(w);
}

/* Trains two steps, saves the state through ct_pickle_save, loads it into a
 * fresh optimizer over a copy of the parameters: both continue identically. */
static void test_state_saved_and_loaded_resumes_exactly(void **state) {
  (void)state;
  const char *algos[] = {"sgd", "adam", "adamw", "rmsprop", "adagrad"};
  for (size_t a = 0; a < sizeof algos / sizeof *algos; ++a) {
    const float w0[4] = {1, 2, -3, 0.5f}, g1[4] = {0.1f, -0.2f, 0.3f, 0.4f};
    ct_tensor *w = param(w0, 4);
    ct_optimizer *opt = NULL;
    ct_value *opts = dict1("momentum", dbl(0.5));
    if (!strcmp(algos[a], "adam") || !strcmp(algos[a], "adamw") || !strcmp(algos[a], "adagrad")) {
      ct_value_free(opts);
      opts = NULL;
    }
    CT_OK_OR_FAIL(ct_optimizer_new(&opt, algos[a], (const ct_tensor *const *)&w, 1, opts));
    for (int s = 0; s < 2; ++s) {
      set_grad(w, g1, 4);
      CT_OK_OR_FAIL(ct_optimizer_step(opt));
    }
    ct_value *sd = NULL, *loaded = NULL;
    CT_OK_OR_FAIL(ct_optimizer_state_dict(&sd, opt));
    void *buf = NULL;
    size_t n = 0;
    CT_OK_OR_FAIL(ct_pickle_save_buffer(&buf, &n, sd));
    CT_OK_OR_FAIL(ct_pickle_load_buffer(&loaded, buf, n));
    ct_free(buf);
    float now[4];
    for (int i = 0; i < 4; ++i) now[i] = at(w, i);
    ct_tensor *w2 = param(now, 4);
    ct_optimizer *opt2 = NULL;
    CT_OK_OR_FAIL(ct_optimizer_new(&opt2, algos[a], (const ct_tensor *const *)&w2, 1, NULL));
    CT_OK_OR_FAIL(ct_optimizer_load_state_dict(opt2, loaded));
    for (int s = 0; s < 3; ++s) {
      set_grad(w, g1, 4);
      set_grad(w2, g1, 4);
      CT_OK_OR_FAIL(ct_optimizer_step(opt));
      CT_OK_OR_FAIL(ct_optimizer_step(opt2));
      for (int i = 0; i < 4; ++i)
        if (at(w, i) != at(w2, i))
          fail_msg("%s step %d: %g != %g after resuming", algos[a], s, at(w, i), at(w2, i));
    }
    /* the loaded options came along (momentum 0.5 was only given to the first) */
    if (opts) {
      double mom = 0;
      CT_OK_OR_FAIL(ct_optimizer_get_double(&mom, opt2, 0, "momentum"));
      assert_true(mom == 0.5);
    }
    ct_value_free(sd);
    ct_value_free(loaded);
    ct_value_free(opts);
    ct_optimizer_free(opt);
    ct_optimizer_free(opt2);
    ct_tensor_free(w);
    ct_tensor_free(w2);
  }
}

static void test_bad_inputs_are_refused(void **state) {
  (void)state;
  const float w0[2] = {1, 2};
  ct_tensor *w = param(w0, 2);
  const ct_tensor *ws[2] = {w, w};
  ct_optimizer *opt = NULL;
  CT_EXPECT_ERROR(ct_optimizer_new(&opt, "lion", ws, 1, NULL), CT_ERR_INVALID_ARGUMENT,
                  "unknown algorithm 'lion'");
  CT_EXPECT_ERROR(ct_optimizer_new(&opt, "sgd", ws, 0, NULL), CT_ERR_INVALID_ARGUMENT,
                  "empty parameter list");
  CT_EXPECT_ERROR(ct_optimizer_new(&opt, "sgd", NULL, 1, NULL), CT_ERR_INVALID_ARGUMENT,
                  "'params' is NULL");
  CT_EXPECT_ERROR(ct_optimizer_new(&opt, "sgd", ws, 2, NULL), CT_ERR_INVALID_ARGUMENT,
                  "appears twice");
  CT_EXPECT_ERROR(ct_optimizer_new(NULL, "sgd", ws, 1, NULL), CT_ERR_INVALID_ARGUMENT,
                  "argument 'out' is NULL");
  ct_value *bad = dict1("lr", dbl(-0.5));
  CT_EXPECT_ERROR(ct_optimizer_new(&opt, "adam", ws, 1, bad), CT_ERR_INVALID_ARGUMENT,
                  "Invalid learning rate: -0.5");
  ct_value_free(bad);
  bad = dict1("momentum_", dbl(0.5));
  CT_EXPECT_ERROR(ct_optimizer_new(&opt, "sgd", ws, 1, bad), CT_ERR_INVALID_ARGUMENT,
                  "sgd has no option 'momentum_'");
  ct_value_free(bad);
  ct_value *yes = NULL;
  CT_OK_OR_FAIL(ct_value_from_bool(&yes, 1));
  bad = dict1("fused", yes);
  CT_EXPECT_ERROR(ct_optimizer_new(&opt, "adam", ws, 1, bad), CT_ERR_NOT_SUPPORTED,
                  "fused=True is not supported");
  ct_value_free(bad);
  assert_null(opt);
  ct_tensor *nonleaf = call("aten::neg", w, 1);
  CT_EXPECT_ERROR(ct_optimizer_new(&opt, "sgd", (const ct_tensor *const *)&nonleaf, 1, NULL),
                  CT_ERR_INVALID_ARGUMENT, "non-leaf");
  ct_tensor_free(nonleaf);

  CT_OK_OR_FAIL(ct_optimizer_new(&opt, "sgd", ws, 1, NULL));
  CT_EXPECT_ERROR(ct_optimizer_set_double(opt, 1, "lr", 0.1), CT_ERR_INDEX, "group 1 out of range");
  CT_EXPECT_ERROR(ct_optimizer_set_double(opt, 0, "momentum", -1), CT_ERR_INVALID_ARGUMENT,
                  "Invalid momentum value: -1");
  CT_OK_OR_FAIL(ct_optimizer_set_double(opt, 0, "momentum", 0.9));
  CT_OK_OR_FAIL(ct_value_from_bool(&yes, 1));
  CT_OK_OR_FAIL(ct_optimizer_set(opt, 0, "nesterov", yes));
  /* momentum 0 would leave nesterov without one: refused, and nothing changes */
  CT_EXPECT_ERROR(ct_optimizer_set_double(opt, 0, "momentum", 0), CT_ERR_INVALID_ARGUMENT,
                  "Nesterov momentum requires");
  double mom = 0;
  CT_OK_OR_FAIL(ct_optimizer_get_double(&mom, opt, 0, "momentum"));
  assert_true(mom == 0.9);
  CT_EXPECT_ERROR(ct_optimizer_get_double(&mom, opt, 0, "nesterov"), CT_ERR_TYPE, "not a number");
  ct_value *v = NULL;
  CT_EXPECT_ERROR(ct_optimizer_get(&v, opt, 0, "lrr"), CT_ERR_NOT_FOUND, "no option 'lrr'");
  CT_EXPECT_ERROR(ct_optimizer_set(opt, 0, "params", yes), CT_ERR_INVALID_ARGUMENT,
                  "'params' is not an option");
  CT_EXPECT_ERROR(ct_optimizer_add_param_group(opt, ws, 1, NULL), CT_ERR_INVALID_ARGUMENT,
                  "appears twice");
  size_t ng = 0;
  CT_OK_OR_FAIL(ct_optimizer_num_groups(&ng, opt));
  assert_int_equal(ng, 1);
  /* load_state_dict: not a state dict, and a tensor in place of the dict */
  CT_EXPECT_ERROR(ct_optimizer_load_state_dict(opt, yes), CT_ERR_INVALID_ARGUMENT,
                  "must be a dict");
  ct_value *empty = NULL;
  CT_OK_OR_FAIL(ct_value_dict(&empty, NULL, NULL, 0));
  CT_EXPECT_ERROR(ct_optimizer_load_state_dict(opt, empty), CT_ERR_INVALID_ARGUMENT,
                  "no 'param_groups'");
  /* a sparse gradient */
  ct_tensor *wd = NULL;
  CT_OK_OR_FAIL(ct_tensor_detach(&wd, w));
  ct_tensor *sp = call("aten::to_sparse", wd, 1);
  ct_tensor_free(wd);
  CT_OK_OR_FAIL(ct_tensor_set_grad(w, sp));
  CT_EXPECT_ERROR(ct_optimizer_step(opt), CT_ERR_NOT_SUPPORTED, "sparse gradients");
  ct_tensor_free(sp);
  ct_value_free(empty);
  ct_value_free(yes);
  ct_optimizer_free(opt);
  ct_tensor_free(w);
}

static void test_clip_grad(void **state) {
  (void)state;
  const float a0[2] = {0, 0}, b0[1] = {0}, ga[2] = {3, 0}, gb[1] = {4};
  ct_tensor *a = param(a0, 2), *b = param(b0, 1), *c = param(b0, 1);
  const ct_tensor *ps[3] = {a, b, c}; /* c has no gradient: skipped */
  set_grad(a, ga, 2);
  set_grad(b, gb, 1);
  ct_tensor *norm = NULL;
  CT_OK_OR_FAIL(ct_clip_grad_norm(&norm, ps, 3, 1.0, 2.0, 1));
  assert_float_equal(at(norm, 0), 5.0, 1e-6);
  ct_tensor *g = NULL;
  CT_OK_OR_FAIL(ct_tensor_grad(&g, a));
  assert_float_equal(at(g, 0), 3.0 / (5.0 + 1e-6), 1e-6);
  ct_tensor_free(g);
  ct_tensor_free(norm);
  CT_OK_OR_FAIL(ct_clip_grad_norm(&norm, ps, 3, 10.0, INFINITY, 0));
  assert_float_equal(at(norm, 0), 4.0 / (5.0 + 1e-6), 1e-6);
  ct_tensor_free(norm);
  CT_OK_OR_FAIL(ct_clip_grad_value(ps, 3, 0.1));
  CT_OK_OR_FAIL(ct_tensor_grad(&g, b));
  assert_float_equal(at(g, 0), 0.1, 1e-7);
  ct_tensor_free(g);
  const float inf1[1] = {INFINITY};
  set_grad(b, inf1, 1);
  CT_EXPECT_ERROR(ct_clip_grad_norm(NULL, ps, 3, 1.0, 2.0, 1), CT_ERR_INVALID_ARGUMENT,
                  "non-finite");
  CT_OK_OR_FAIL(ct_tensor_grad(&g, b));
  assert_true(isinf(at(g, 0))); /* left alone */
  ct_tensor_free(g);
  CT_EXPECT_ERROR(ct_clip_grad_norm(NULL, NULL, 2, 1.0, 2.0, 0), CT_ERR_INVALID_ARGUMENT,
                  "'params' is NULL");
  const ct_tensor *holes[2] = {a, NULL};
  CT_EXPECT_ERROR(ct_clip_grad_value(holes, 2, 1.0), CT_ERR_INVALID_ARGUMENT, "params[1] is NULL");
  CT_OK_OR_FAIL(ct_clip_grad_norm(&norm, NULL, 0, 1.0, 2.0, 1)); /* nothing: norm 0 */
  assert_true(at(norm, 0) == 0);
  ct_tensor_free(norm);
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(c);
}

static ct_tensor *mm(const ct_tensor *x) { return call("aten::mm", x, 2); }

static void test_autocast_scopes(void **state) {
  (void)state;
  const float v[4] = {1, 2, 3, 4};
  const int64_t sz[2] = {2, 2};
  ct_tensor *x = test_tensor_f32(v, sz, 2);
  int32_t on = -1, dt = 0;
  CT_OK_OR_FAIL(ct_autocast_is_enabled(&on, CT_DEVICE_CPU));
  assert_int_equal(on, 0);
  CT_OK_OR_FAIL(ct_autocast_push(CT_DEVICE_CPU, 0, 1, 1));
  CT_OK_OR_FAIL(ct_autocast_dtype(&dt, CT_DEVICE_CPU));
  assert_int_equal(dt, CT_BFLOAT16);
  ct_tensor *y = mm(x);
  assert_int_equal(ct_tensor_dtype(y), CT_BFLOAT16);
  ct_tensor_free(y);
  CT_OK_OR_FAIL(ct_autocast_push(CT_DEVICE_CPU, 0, 0, 1)); /* off inside */
  y = mm(x);
  assert_int_equal(ct_tensor_dtype(y), CT_FLOAT32);
  ct_tensor_free(y);
  CT_OK_OR_FAIL(ct_autocast_pop());
  CT_OK_OR_FAIL(ct_autocast_is_enabled(&on, CT_DEVICE_CPU));
  assert_int_equal(on, 1);
  CT_OK_OR_FAIL(ct_autocast_pop());
  y = mm(x);
  assert_int_equal(ct_tensor_dtype(y), CT_FLOAT32);
  ct_tensor_free(y);
  CT_EXPECT_ERROR(ct_autocast_pop(), CT_ERR_INVALID_ARGUMENT, "no autocast was pushed");
  CT_EXPECT_ERROR(ct_autocast_push(CT_DEVICE_CPU, CT_FLOAT64, 1, 1), CT_ERR_INVALID_ARGUMENT,
                  "CT_FLOAT16 or CT_BFLOAT16");
  CT_EXPECT_ERROR(ct_autocast_push(99, 0, 1, 1), CT_ERR_INVALID_ARGUMENT, "not device type 99");
  CT_EXPECT_ERROR(ct_autocast_is_enabled(NULL, CT_DEVICE_CPU), CT_ERR_INVALID_ARGUMENT,
                  "is NULL");
  /* CUDA's state can be set without a device, as in torch */
  CT_OK_OR_FAIL(ct_autocast_push(CT_DEVICE_CUDA, 0, 1, 1));
  CT_OK_OR_FAIL(ct_autocast_dtype(&dt, CT_DEVICE_CUDA));
  assert_int_equal(dt, CT_FLOAT16);
  CT_OK_OR_FAIL(ct_autocast_pop());
  ct_tensor_free(x);
}

/* Issue 40 items 13 and 14: unscale scaled a coalesced copy of an uncoalesced
 * sparse gradient (the gradient stayed scaled); a state_dict whose
 * _growth_tracker does not fit failed with CT_ERR_TORCH after changing the
 * scaler. */
static void test_grad_scaler_sparse_and_bad_state(void **state) {
  (void)state;
  const float w0[2] = {1, 1};
  ct_tensor *w = param(w0, 2);
  ct_optimizer *opt = NULL;
  CT_OK_OR_FAIL(ct_optimizer_new(&opt, "sgd", (const ct_tensor *const *)&w, 1, NULL));
  /* two entries at index 0 (uncoalesced): 2 + 2, scaled by 4 */
  const int64_t idx[2] = {0, 0}, isz[2] = {1, 2}, vsz[1] = {2}, dense[1] = {2};
  const float vals[2] = {2, 2};
  ct_tensor *it = NULL, *vt = test_tensor_f32(vals, vsz, 1), *sp = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_data(&it, idx, isz, 2, CT_INT64, CT_DEVICE_CPU, -1));
  ct_value *a[3] = {NULL, NULL, NULL}, *res = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&a[0], it));
  CT_OK_OR_FAIL(ct_value_from_tensor(&a[1], vt));
  CT_OK_OR_FAIL(ct_value_int_list(&a[2], dense, 1));
  CT_OK_OR_FAIL(ct_op_call_name(&res, "aten::sparse_coo_tensor", (const ct_value *const *)a, 3,
                                NULL, NULL, 0));
  CT_OK_OR_FAIL(ct_value_to_tensor(&sp, res));
  CT_OK_OR_FAIL(ct_tensor_set_grad(w, sp));
  ct_grad_scaler *s = NULL;
  CT_OK_OR_FAIL(ct_grad_scaler_new(&s, CT_DEVICE_CPU, 4.0, 2.0, 0.5, 100, 1));
  CT_OK_OR_FAIL(ct_grad_scaler_unscale(s, opt));
  ct_tensor *gr = NULL, *gd = NULL;
  CT_OK_OR_FAIL(ct_tensor_grad(&gr, w));
  CT_OK_OR_FAIL(ct_tensor_to_dense(&gd, gr));
  assert_float_equal(at(gd, 0), 1.0, 1e-7); /* (2 + 2) / 4, not 4 */
  assert_float_equal(at(gd, 1), 0.0, 1e-7);
  /* a state_dict with a _growth_tracker past int32: refused, nothing changed */
  const char *keys[5] = {"scale", "growth_factor", "backoff_factor", "growth_interval",
                         "_growth_tracker"};
  const double nums[5] = {1024.0, 3.0, 0.25, 7.0, 3e9};
  ct_value *kv[5], *vv[5], *sd = NULL;
  for (int i = 0; i < 5; ++i) {
    CT_OK_OR_FAIL(ct_value_from_string(&kv[i], keys[i], strlen(keys[i])));
    vv[i] = dbl(nums[i]);
  }
  CT_OK_OR_FAIL(ct_value_dict(&sd, (const ct_value *const *)kv, (const ct_value *const *)vv, 5));
  double before = 0, after = 0;
  CT_OK_OR_FAIL(ct_grad_scaler_current_scale(&before, s));
  CT_EXPECT_ERROR(ct_grad_scaler_load_state_dict(s, sd), CT_ERR_INVALID_ARGUMENT,
                  "_growth_tracker");
  CT_OK_OR_FAIL(ct_grad_scaler_current_scale(&after, s));
  assert_true(before == 4.0 && after == 4.0);
  ct_value *now = NULL, *gf = NULL;
  CT_OK_OR_FAIL(ct_grad_scaler_state_dict(&now, s));
  CT_OK_OR_FAIL(ct_value_dict_get_str(&gf, now, "growth_factor"));
  double growth = 0;
  CT_OK_OR_FAIL(ct_value_to_double(&growth, gf));
  assert_true(growth == 2.0);
  for (int i = 0; i < 5; ++i) ct_value_free(kv[i]), ct_value_free(vv[i]);
  for (int i = 0; i < 3; ++i) ct_value_free(a[i]);
  ct_value_free(gf), ct_value_free(now), ct_value_free(sd), ct_value_free(res);
  ct_tensor_free(gd), ct_tensor_free(gr), ct_tensor_free(sp), ct_tensor_free(it), ct_tensor_free(vt);
  ct_grad_scaler_free(s);
  ct_optimizer_free(opt);
  ct_tensor_free(w);
}

static void test_grad_scaler_skips_and_backs_off(void **state) {
  (void)state;
  const float w0[2] = {1, 1}, g[2] = {8, 16}, bad[2] = {NAN, 1};
  ct_tensor *w = param(w0, 2);
  ct_optimizer *opt = NULL;
  CT_OK_OR_FAIL(ct_optimizer_new(&opt, "sgd", (const ct_tensor *const *)&w, 1, NULL));
  CT_OK_OR_FAIL(ct_optimizer_set_double(opt, 0, "lr", 1.0));
  ct_grad_scaler *s = NULL;
  CT_OK_OR_FAIL(ct_grad_scaler_new(&s, CT_DEVICE_CPU, 8.0, 2.0, 0.5, 1, 1));
  set_grad(w, g, 2);
  int32_t stepped = -1;
  CT_OK_OR_FAIL(ct_grad_scaler_step(&stepped, s, opt));
  assert_int_equal(stepped, 1);
  assert_float_equal(at(w, 0), 0.0, 1e-7); /* 1 - 8/8 */
  assert_float_equal(at(w, 1), -1.0, 1e-7);
  CT_OK_OR_FAIL(ct_grad_scaler_update(s));
  double scale = 0;
  CT_OK_OR_FAIL(ct_grad_scaler_current_scale(&scale, s));
  assert_true(scale == 16.0); /* growth_interval 1 */
  set_grad(w, bad, 2);
  CT_OK_OR_FAIL(ct_grad_scaler_step(&stepped, s, opt));
  assert_int_equal(stepped, 0);
  assert_float_equal(at(w, 0), 0.0, 1e-7); /* skipped */
  CT_EXPECT_ERROR(ct_grad_scaler_step(&stepped, s, opt), CT_ERR_INVALID_ARGUMENT,
                  "step() has already been called");
  CT_EXPECT_ERROR(ct_grad_scaler_unscale(s, opt), CT_ERR_INVALID_ARGUMENT, "after step()");
  CT_OK_OR_FAIL(ct_grad_scaler_update(s));
  CT_OK_OR_FAIL(ct_grad_scaler_current_scale(&scale, s));
  assert_true(scale == 8.0);
  CT_EXPECT_ERROR(ct_grad_scaler_update(s), CT_ERR_INVALID_ARGUMENT, "No inf checks");
  ct_grad_scaler *t = NULL;
  CT_EXPECT_ERROR(ct_grad_scaler_new(&t, CT_DEVICE_CPU, 8.0, 1.0, 0.5, 1, 1),
                  CT_ERR_INVALID_ARGUMENT, "growth factor must be > 1.0");
  CT_EXPECT_ERROR(ct_grad_scaler_new(&t, CT_DEVICE_CPU, NAN, 2.0, 0.5, 1, 1),
                  CT_ERR_INVALID_ARGUMENT, "init_scale");
  CT_EXPECT_ERROR(ct_grad_scaler_new(&t, CT_DEVICE_CPU, 8.0, 2.0, 0.5, 0, 1),
                  CT_ERR_INVALID_ARGUMENT, "growth_interval");
  assert_null(t);
  ct_grad_scaler_free(s);
  ct_grad_scaler_free(NULL);
  ct_optimizer_free(opt);
  ct_tensor_free(w);
}

/* Several threads step one optimizer and change its rate at once: every call
 * locks it, so all steps land (TSan checks the rest). */
struct shared {
  ct_optimizer *opt;
  ct_tensor *w;
};

static void *stepper(void *arg) {
  struct shared *sh = arg;
  for (int i = 0; i < 50; ++i) {
    if (ct_optimizer_step(sh->opt) != CT_OK) return (void *)1;
    if (ct_optimizer_set_double(sh->opt, 0, "lr", 0.001) != CT_OK) return (void *)1;
    double lr;
    if (ct_optimizer_get_double(&lr, sh->opt, 0, "lr") != CT_OK) return (void *)1;
  }
  return NULL;
}

static void test_threads_share_an_optimizer(void **state) {
  (void)state;
  const float w0[2] = {0, 0}, g[2] = {1, 1};
  struct shared sh;
  sh.w = param(w0, 2);
  set_grad(sh.w, g, 2);
  CT_OK_OR_FAIL(ct_optimizer_new(&sh.opt, "sgd", (const ct_tensor *const *)&sh.w, 1, NULL));
  pthread_t th[4];
  for (int i = 0; i < 4; ++i) pthread_create(&th[i], NULL, stepper, &sh);
  for (int i = 0; i < 4; ++i) {
    void *r = NULL;
    pthread_join(th[i], &r);
    assert_null(r);
  }
  assert_float_equal(at(sh.w, 0), -200 * 0.001, 1e-5); /* 200 steps of lr 1e-3 */
  ct_optimizer_free(sh.opt);
  ct_tensor_free(sh.w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sgd_momentum_follows_the_formula),
      cmocka_unit_test(test_adam_follows_the_formula),
      cmocka_unit_test(test_betas_are_the_optimizers_own),
      cmocka_unit_test(test_state_saved_and_loaded_resumes_exactly),
      cmocka_unit_test(test_bad_inputs_are_refused),
      cmocka_unit_test(test_clip_grad),
      cmocka_unit_test(test_autocast_scopes),
      cmocka_unit_test(test_grad_scaler_skips_and_backs_off),
      cmocka_unit_test(test_grad_scaler_sparse_and_bad_state),
      cmocka_unit_test(test_threads_share_an_optimizer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
