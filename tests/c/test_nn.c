/* torch.nn's layers from C (ct_module_new_nn, ct_tensor_nn_init,
 * ct_module_state_dict / _load_state_dict / _zero_grad): a model built from
 * layers runs, trains, saves and loads; initial parameters follow the seed and
 * torch.nn's bounds; every bad input gets a status and torch.nn's message.
 * (Bit-for-bit equality with torch.nn itself: bindings/python/tests/test_nn.py.) */
#include "test_util.h"

#include <math.h>

static ct_value *v_int(int64_t i) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_from_int(&v, i));
  return v;
}
static ct_value *v_str(const char *s) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_from_string(&v, s, strlen(s)));
  return v;
}
static ct_value *v_mod(const ct_module *m) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_from_module(&v, m));
  return v;
}

/* Linear(in, out) */
static ct_module *linear(int64_t in, int64_t out) {
  ct_value *a[2] = {v_int(in), v_int(out)};
  ct_module *m = NULL;
  CT_OK_OR_FAIL(ct_module_new_nn(&m, "Linear", (const ct_value *const *)a, 2, NULL, NULL, 0));
  ct_value_free(a[0]);
  ct_value_free(a[1]);
  return m;
}
static ct_module *plain(const char *layer) {
  ct_module *m = NULL;
  CT_OK_OR_FAIL(ct_module_new_nn(&m, layer, NULL, 0, NULL, NULL, 0));
  return m;
}

static ct_tensor *param(const ct_module *m, const char *name) {
  ct_value *d = NULL, *v = NULL;
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_module_state_dict(&d, m));
  CT_OK_OR_FAIL(ct_value_dict_get_str(&v, d, name));
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, v));
  ct_value_free(v);
  ct_value_free(d);
  return t;
}

static ct_tensor *forward1(ct_module *m, const ct_tensor *x) {
  ct_tensor *y = NULL;
  size_t n = 0;
  CT_OK_OR_FAIL(ct_module_forward_tensors(&y, 1, &n, m, NULL, &x, 1));
  assert_int_equal(n, 1);
  return y;
}

/* Linear's weight after a seed: within kaiming_uniform(a=sqrt(5))'s bound
 * 1/sqrt(in), the same after the same seed, different after another. */
static void test_linear_init_follows_seed(void **state) {
  (void)state;
  CT_OK_OR_FAIL(ct_manual_seed(3));
  ct_module *a = linear(16, 8);
  CT_OK_OR_FAIL(ct_manual_seed(3));
  ct_module *b = linear(16, 8);
  ct_module *c = linear(16, 8);
  ct_tensor *wa = param(a, "weight"), *wb = param(b, "weight"), *wc = param(c, "weight");
  const float *pa = ct_tensor_data_ptr(wa), *pb = ct_tensor_data_ptr(wb),
              *pc = ct_tensor_data_ptr(wc);
  int same_c = 1;
  float biggest = 0;
  for (int i = 0; i < 128; i++) {
    assert_true(pa[i] == pb[i]);
    if (pa[i] != pc[i]) same_c = 0;
    if (fabsf(pa[i]) > biggest) biggest = fabsf(pa[i]);
  }
  assert_false(same_c);
  assert_true(biggest <= 0.25f && biggest > 0.2f); /* 1/sqrt(16), 128 draws */
  ct_tensor_free(wa);
  ct_tensor_free(wb);
  ct_tensor_free(wc);
  ct_module_free(a);
  ct_module_free(b);
  ct_module_free(c);
}

/* Sequential(Linear(4, 8), ReLU(), Linear(8, 1)) learns y = sum(x) with
 * MSELoss and plain gradient steps; it saves and loads with the same output. */
static void test_sequential_trains_saves_loads(void **state) {
  (void)state;
  CT_OK_OR_FAIL(ct_manual_seed(0));
  ct_module *l1 = linear(4, 8), *relu = plain("ReLU"), *l2 = linear(8, 1), *mse = plain("MSELoss");
  ct_value *items[3] = {v_mod(l1), v_mod(relu), v_mod(l2)};
  ct_module *net = NULL;
  CT_OK_OR_FAIL(ct_module_new_nn(&net, "Sequential", (const ct_value *const *)items, 3, NULL, NULL, 0));
  for (int i = 0; i < 3; i++) ct_value_free(items[i]);

  ct_value *sd = NULL;
  CT_OK_OR_FAIL(ct_module_state_dict(&sd, net));
  size_t n = 0;
  CT_OK_OR_FAIL(ct_value_length(&n, sd));
  assert_int_equal(n, 4);
  ct_value *k = NULL, *v = NULL;
  const char *want[4] = {"0.weight", "0.bias", "2.weight", "2.bias"};
  for (size_t i = 0; i < 4; i++) {
    CT_OK_OR_FAIL(ct_value_dict_item(&k, &v, sd, i));
    const char *s = NULL;
    size_t len = 0;
    CT_OK_OR_FAIL(ct_value_as_string(&s, &len, k));
    assert_string_equal(s, want[i]);
    ct_value_free(k);
    ct_value_free(v);
  }

  int64_t xs[2] = {32, 4}, ys[2] = {32, 1};
  ct_tensor *x = NULL, *y = NULL;
  CT_OK_OR_FAIL(ct_tensor_randn(&x, xs, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_tensor_zeros(&y, ys, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  float *px = ct_tensor_data_ptr(x), *py = ct_tensor_data_ptr(y);
  for (int i = 0; i < 32; i++) py[i] = px[4 * i] + px[4 * i + 1] + px[4 * i + 2] + px[4 * i + 3];

  double first = 0, last = 0;
  ct_value *params = NULL;
  CT_OK_OR_FAIL(ct_module_named_parameters(&params, net, 1));
  size_t np = 0;
  CT_OK_OR_FAIL(ct_value_length(&np, params));
  assert_int_equal(np, 4);
  ct_tensor *ps[4];
  for (size_t i = 0; i < np; i++) {
    ct_value *pk = NULL, *pv = NULL;
    CT_OK_OR_FAIL(ct_value_dict_item(&pk, &pv, params, i));
    CT_OK_OR_FAIL(ct_value_to_tensor(&ps[i], pv));
    ct_value_free(pk);
    ct_value_free(pv);
  }
  ct_optimizer *opt = NULL;
  ct_value *lr_key = v_str("lr"), *lr = NULL, *options = NULL;
  CT_OK_OR_FAIL(ct_value_from_double(&lr, 0.05));
  CT_OK_OR_FAIL(ct_value_dict(&options, (const ct_value *const *)&lr_key,
                              (const ct_value *const *)&lr, 1));
  CT_OK_OR_FAIL(ct_optimizer_new(&opt, "sgd", (const ct_tensor *const *)ps, np, options));
  ct_value_free(options);
  ct_value_free(lr);
  ct_value_free(lr_key);
  for (int step = 0; step < 200; step++) {
    CT_OK_OR_FAIL(ct_module_zero_grad(net, 1));
    ct_tensor *out = forward1(net, x), *loss = NULL;
    size_t got = 0;
    const ct_tensor *in[2] = {out, y};
    CT_OK_OR_FAIL(ct_module_forward_tensors(&loss, 1, &got, mse, NULL, in, 2));
    double lv = *(const float *)ct_tensor_data_ptr(loss);
    if (step == 0) first = lv;
    last = lv;
    CT_OK_OR_FAIL(ct_tensor_backward(loss, NULL, 0, 0));
    ct_tensor *g = NULL;
    CT_OK_OR_FAIL(ct_tensor_grad(&g, ps[0]));
    assert_non_null(g); /* the layers' parameters are leaves that get gradients */
    ct_tensor_free(g);
    CT_OK_OR_FAIL(ct_optimizer_step(opt));
    ct_tensor_free(loss);
    ct_tensor_free(out);
  }
  ct_optimizer_free(opt);
  for (size_t i = 0; i < np; i++) ct_tensor_free(ps[i]);
  print_message("MSE %g -> %g\n", first, last);
  assert_true(last < first * 0.05);

  /* zero_grad(set_to_none=0) zeroes; set_to_none=1 removes */
  ct_tensor *w = param(net, "0.weight"), *g = NULL;
  CT_OK_OR_FAIL(ct_module_zero_grad(net, 0));
  CT_OK_OR_FAIL(ct_tensor_grad(&g, w));
  assert_non_null(g);
  assert_true(((float *)ct_tensor_data_ptr(g))[0] == 0.0f);
  ct_tensor_free(g);
  CT_OK_OR_FAIL(ct_module_zero_grad(net, 1));
  CT_OK_OR_FAIL(ct_tensor_grad(&g, w));
  assert_null(g);
  ct_tensor_free(w);

  /* save, load, same output; state_dict loads into a fresh net */
  void *buf = NULL;
  size_t size = 0;
  CT_OK_OR_FAIL(ct_module_save_buffer(&buf, &size, net, NULL));
  ct_module *back = NULL;
  CT_OK_OR_FAIL(ct_module_load_buffer(&back, buf, size, CT_DEVICE_CPU, -1));
  ct_free(buf);
  ct_tensor *o1 = forward1(net, x), *o2 = forward1(back, x);
  assert_memory_equal(ct_tensor_data_ptr(o1), ct_tensor_data_ptr(o2), 32 * sizeof(float));

  CT_OK_OR_FAIL(ct_manual_seed(99));
  ct_module *f1 = linear(4, 8), *f2 = linear(8, 1), *fr = plain("ReLU");
  ct_value *fi[3] = {v_mod(f1), v_mod(fr), v_mod(f2)};
  ct_module *fresh = NULL;
  CT_OK_OR_FAIL(ct_module_new_nn(&fresh, "Sequential", (const ct_value *const *)fi, 3, NULL, NULL, 0));
  for (int i = 0; i < 3; i++) ct_value_free(fi[i]);
  ct_value *inc = NULL;
  CT_OK_OR_FAIL(ct_module_load_state_dict(&inc, fresh, sd, 1));
  ct_tensor *o3 = forward1(fresh, x);
  assert_memory_equal(ct_tensor_data_ptr(o1), ct_tensor_data_ptr(o3), 32 * sizeof(float));
  ct_value_free(inc);

  ct_tensor_free(o1);
  ct_tensor_free(o2);
  ct_tensor_free(o3);
  ct_module_free(back);
  ct_module_free(fresh);
  ct_module_free(f1);
  ct_module_free(f2);
  ct_module_free(fr);
  ct_value_free(params);
  ct_value_free(sd);
  ct_tensor_free(x);
  ct_tensor_free(y);
  ct_module_free(net);
  ct_module_free(l1);
  ct_module_free(relu);
  ct_module_free(l2);
  ct_module_free(mse);
}

/* Keyword arguments, "same" padding and BatchNorm's buffers and modes. */
static void test_conv_batchnorm_keywords(void **state) {
  (void)state;
  ct_value *a[3] = {v_int(3), v_int(8), v_int(3)};
  const char *kn[2] = {"padding", "bias"};
  ct_value *kv[2] = {v_str("same"), NULL};
  CT_OK_OR_FAIL(ct_value_from_bool(&kv[1], 0));
  ct_module *conv = NULL, *bn = NULL;
  CT_OK_OR_FAIL(ct_module_new_nn(&conv, "Conv2d", (const ct_value *const *)a, 3, kn,
                                 (const ct_value *const *)kv, 2));
  ct_value *b1[1] = {v_int(8)};
  CT_OK_OR_FAIL(ct_module_new_nn(&bn, "BatchNorm2d", (const ct_value *const *)b1, 1, NULL, NULL, 0));
  int64_t xs[4] = {2, 3, 5, 5};
  ct_tensor *x = NULL;
  CT_OK_OR_FAIL(ct_tensor_randn(&x, xs, 4, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  ct_tensor *y = forward1(conv, x);
  assert_int_equal(ct_tensor_ndim(y), 4);
  const int64_t *sizes = ct_tensor_sizes(y);
  assert_true(sizes[0] == 2 && sizes[1] == 8 && sizes[2] == 5 && sizes[3] == 5);
  ct_value *sd = NULL, *none = NULL;
  CT_OK_OR_FAIL(ct_module_state_dict(&sd, conv));
  CT_EXPECT_ERROR(ct_value_dict_get_str(&none, sd, "bias"), CT_ERR_NOT_FOUND, "bias");
  ct_value_free(sd);

  ct_tensor *z = forward1(bn, y), *nbt = param(bn, "num_batches_tracked");
  assert_int_equal(((int64_t *)ct_tensor_data_ptr(nbt))[0], 1);
  CT_OK_OR_FAIL(ct_module_eval(bn));
  ct_tensor *z2 = forward1(bn, y);
  assert_int_equal(((int64_t *)ct_tensor_data_ptr(nbt))[0], 1); /* eval: no update */
  ct_tensor_free(z2);
  ct_tensor_free(nbt);
  ct_tensor_free(z);
  ct_tensor_free(y);
  ct_tensor_free(x);
  ct_module_free(conv);
  ct_module_free(bn);
  for (int i = 0; i < 3; i++) ct_value_free(a[i]);
  ct_value_free(kv[0]);
  ct_value_free(kv[1]);
  ct_value_free(b1[0]);
}

static void test_init(void **state) {
  (void)state;
  int64_t s[2] = {3, 3};
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_empty(&t, s, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_tensor_nn_init(t, "eye_", NULL, 0, NULL, NULL, 0));
  const float *p = ct_tensor_data_ptr(t);
  for (int i = 0; i < 9; i++) assert_true(p[i] == (i % 4 == 0 ? 1.0f : 0.0f));
  ct_value *c = NULL;
  CT_OK_OR_FAIL(ct_value_from_double(&c, 0.5));
  CT_OK_OR_FAIL(ct_tensor_nn_init(t, "constant_", (const ct_value *const *)&c, 1, NULL, NULL, 0));
  assert_true(p[4] == 0.5f);
  const char *kn[1] = {"mode"};
  ct_value *mode = v_str("fan_sideways");
  CT_EXPECT_ERROR(ct_tensor_nn_init(t, "kaiming_uniform_", NULL, 0, kn,
                                    (const ct_value *const *)&mode, 1),
                  CT_ERR_INVALID_ARGUMENT, "Mode fan_sideways not supported");
  CT_EXPECT_ERROR(ct_tensor_nn_init(t, "kaiming_uniforms_", NULL, 0, NULL, NULL, 0),
                  CT_ERR_INVALID_ARGUMENT, "unknown initializer 'kaiming_uniforms_'");
  CT_EXPECT_ERROR(ct_tensor_nn_init(NULL, "eye_", NULL, 0, NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "NULL");
  ct_tensor *v1 = NULL;
  int64_t one = 4;
  CT_OK_OR_FAIL(ct_tensor_empty(&v1, &one, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_EXPECT_ERROR(ct_tensor_nn_init(v1, "xavier_uniform_", NULL, 0, NULL, NULL, 0),
                  CT_ERR_INVALID_ARGUMENT, "fewer than 2 dimensions");
  ct_value *list = NULL;
  CT_OK_OR_FAIL(ct_tensor_nn_init_methods(&list));
  CT_EXPECT_ERROR(ct_tensor_nn_init_methods(NULL), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_module_nn_layers(NULL), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  ct_value *sig = NULL;
  CT_OK_OR_FAIL(ct_value_dict_get_str(&sig, list, "orthogonal_"));
  ct_value_free(sig);
  ct_value_free(list);
  ct_value_free(mode);
  ct_value_free(c);
  ct_tensor_free(v1);
  ct_tensor_free(t);
}

static void test_bad_input(void **state) {
  (void)state;
  ct_module *m = NULL;
  ct_value *a[3] = {v_int(3), v_int(4), v_int(3)};
  const ct_value *const *args = (const ct_value *const *)a;
  CT_EXPECT_ERROR(ct_module_new_nn(NULL, "Linear", args, 2, NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "'out' is NULL");
  CT_EXPECT_ERROR(ct_module_new_nn(&m, NULL, args, 2, NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "'layer' is NULL");
  CT_EXPECT_ERROR(ct_module_new_nn(&m, "Lineaar", args, 2, NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "unknown layer 'Lineaar' (known: Linear, ");
  CT_EXPECT_ERROR(ct_module_new_nn(&m, "Linear", NULL, 2, NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "'args' is NULL but n is 2");
  CT_EXPECT_ERROR(ct_module_new_nn(&m, "Linear", args, 1, NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "out_features");
  CT_EXPECT_ERROR(ct_module_new_nn(&m, "Identity", args, 1, NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT,
                  "too many positional arguments");
  ct_value *s = v_str("x");
  const ct_value *bad[2] = {s, a[0]};
  CT_EXPECT_ERROR(ct_module_new_nn(&m, "Linear", bad, 2, NULL, NULL, 0), CT_ERR_TYPE, "in_features");
  const char *kn[1] = {"groups"};
  ct_value *zero = v_int(0);
  CT_EXPECT_ERROR(ct_module_new_nn(&m, "Conv2d", args, 3, kn, (const ct_value *const *)&zero, 1),
                  CT_ERR_INVALID_ARGUMENT, "groups must be a positive integer");
  const ct_value *seq[2] = {s, s};
  CT_EXPECT_ERROR(ct_module_new_nn(&m, "Sequential", seq, 2, NULL, NULL, 0), CT_ERR_TYPE,
                  "not a module");
  assert_null(m);
  /* load_state_dict: NULL, a non-dict, a bad key type */
  ct_module *lin = linear(2, 2);
  CT_EXPECT_ERROR(ct_module_load_state_dict(NULL, lin, NULL, 1), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_module_load_state_dict(NULL, lin, s, 1), CT_ERR_TYPE, "must be a dict");
  ct_value *empty = NULL;
  CT_OK_OR_FAIL(ct_value_dict(&empty, NULL, NULL, 0));
  CT_EXPECT_ERROR(ct_module_load_state_dict(NULL, lin, empty, 1), CT_ERR_INVALID_ARGUMENT,
                  "Missing key(s) in state_dict: \"weight\", \"bias\".");
  CT_OK_OR_FAIL(ct_module_load_state_dict(NULL, lin, empty, 0));
  CT_EXPECT_ERROR(ct_module_zero_grad(NULL, 1), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_EXPECT_ERROR(ct_module_state_dict(NULL, lin), CT_ERR_INVALID_ARGUMENT, "NULL");
  ct_value_free(empty);
  ct_module_free(lin);
  ct_value_free(zero);
  ct_value_free(s);
  for (int i = 0; i < 3; i++) ct_value_free(a[i]);
}


/* A C operator inside a model: with its TorchScript twin, ct_module_to_pytorch
 * makes a copy that no longer calls it (it runs after the library is freed,
 * while the original fails); without one, it names the operator. */
static ct_status twice_kernel(void *ctx, const ct_tensor *const *in, size_t n_in, ct_tensor **out,
                              size_t n_out) {
  (void)ctx;
  (void)n_in;
  (void)n_out;
  ct_tensor *y = NULL;
  ct_status st = ct_tensor_clone(&y, in[0]);
  if (st != CT_OK) return st;
  float *p = ct_tensor_data_ptr(y);
  for (int64_t i = 0; i < ct_tensor_numel(y); i++) p[i] *= 2.0f;
  out[0] = y;
  return CT_OK;
}

static void test_model_with_c_layer_to_pytorch(void **state) {
  (void)state;
  ct_library *lib = NULL;
  CT_OK_OR_FAIL(ct_library_new(&lib, "nntwinc"));
  CT_OK_OR_FAIL(ct_library_define(lib, "twice(Tensor x) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_define(lib, "other(Tensor x) -> Tensor", NULL, 0));
  CT_OK_OR_FAIL(ct_library_impl_tensors(lib, "twice", "CPU", twice_kernel, NULL, NULL, 0));
  ct_module *layer = NULL;
  CT_OK_OR_FAIL(ct_module_new(&layer, "Twice"));
  CT_OK_OR_FAIL(ct_module_define(layer, "def forward(self, x):\n    return torch.ops.nntwinc.twice(x)\n"));
  ct_module *lin = linear(3, 2);
  ct_value *items[2] = {v_mod(lin), v_mod(layer)};
  ct_module *net = NULL, *pt = NULL;
  CT_OK_OR_FAIL(ct_module_new_nn(&net, "Sequential", (const ct_value *const *)items, 2, NULL, NULL, 0));
  CT_EXPECT_ERROR(ct_module_to_pytorch(&pt, net), CT_ERR_NOT_SUPPORTED, "nntwinc::twice");
  assert_null(pt);
  /* twins are checked against the operator */
  CT_EXPECT_ERROR(ct_library_set_twin(lib, "twice", "def twice(x: Tensor, y: Tensor) -> Tensor:\n    return x\n"),
                  CT_ERR_INVALID_ARGUMENT, "takes 2 arguments");
  CT_EXPECT_ERROR(ct_library_set_twin(lib, "nope", "def nope(x: Tensor) -> Tensor:\n    return x\n"),
                  CT_ERR_INVALID_ARGUMENT, "not defined by this library");
  CT_EXPECT_ERROR(ct_library_set_twin(lib, "twice", "def twice(x: Tensor) -> Tensor:\n    return x +\n"),
                  CT_ERR_TORCH, "");
  CT_EXPECT_ERROR(ct_library_set_twin(NULL, "twice", ""), CT_ERR_INVALID_ARGUMENT, "NULL");
  CT_OK_OR_FAIL(ct_library_set_twin(lib, "twice", "def twice(x: Tensor) -> Tensor:\n    return x * 2\n"));
  CT_OK_OR_FAIL(ct_module_to_pytorch(&pt, net));
  int64_t xs[2] = {4, 3};
  ct_tensor *x = NULL;
  CT_OK_OR_FAIL(ct_tensor_randn(&x, xs, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  ct_tensor *a = forward1(net, x), *b = forward1(pt, x);
  assert_memory_equal(ct_tensor_data_ptr(a), ct_tensor_data_ptr(b), 8 * sizeof(float));
  ct_library_free(lib);
  ct_tensor *c = forward1(pt, x), *none = NULL;
  size_t got = 0;
  assert_memory_equal(ct_tensor_data_ptr(a), ct_tensor_data_ptr(c), 8 * sizeof(float));
  CT_EXPECT_ERROR(ct_module_forward_tensors(&none, 1, &got, net, NULL, (const ct_tensor *const *)&x, 1),
                  CT_ERR_NOT_FOUND, "nntwinc::twice");
  /* a saved copy loads back and runs without the operator */
  void *buf = NULL;
  size_t size = 0;
  CT_OK_OR_FAIL(ct_module_save_buffer(&buf, &size, pt, NULL));
  ct_module *back = NULL;
  CT_OK_OR_FAIL(ct_module_load_buffer(&back, buf, size, CT_DEVICE_CPU, -1));
  ct_free(buf);
  ct_tensor *d = forward1(back, x);
  assert_memory_equal(ct_tensor_data_ptr(a), ct_tensor_data_ptr(d), 8 * sizeof(float));
  CT_EXPECT_ERROR(ct_module_to_pytorch(NULL, net), CT_ERR_INVALID_ARGUMENT, "NULL");
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(c);
  ct_tensor_free(d);
  ct_tensor_free(x);
  ct_module_free(back);
  ct_module_free(pt);
  ct_module_free(net);
  ct_module_free(lin);
  ct_module_free(layer);
  ct_value_free(items[0]);
  ct_value_free(items[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_linear_init_follows_seed),
      cmocka_unit_test(test_sequential_trains_saves_loads),
      cmocka_unit_test(test_conv_batchnorm_keywords),
      cmocka_unit_test(test_init),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_model_with_c_layer_to_pytorch),
  };
  return cmocka_run_group_tests_name("nn", tests, NULL, NULL);
}
