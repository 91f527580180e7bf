/* Dtype, layout and device codes of torch 2.x (issue 11 section 3): codes
 * that the LibTorch in use lacks fail cleanly; quantized tensors read and
 * made, checked against a quantized model and values made by PyTorch
 * (tests/models/make_dtype_models.py); layouts, memory formats, sparse
 * accessors; meta tensors; DLPack codes of the new dtypes. */
#include "test_util.h"

#include <math.h>

static const char *dtype_dir(void) {
  const char *d = getenv("CTORCH_TEST_DTYPE_MODELS");
  return (d && *d) ? d : NULL;
}

/* The dict in DIR/name, or NULL (the caller skips). */
static ct_value *load_ref(const char *name) {
  const char *d = dtype_dir();
  if (!d) return NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", d, name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fclose(f);
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_pickle_load(&v, path));
  return v;
}

static ct_tensor *ref_tensor(const ct_value *dict, const char *key) {
  ct_value *v = NULL;
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_dict_get_str(&v, dict, key));
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, v));
  ct_value_free(v);
  return t;
}

static double ref_double(const ct_value *dict, const char *key) {
  ct_tensor *t = ref_tensor(dict, key);
  double x = ct_tensor_dtype(t) == CT_FLOAT64 ? *(double *)ct_tensor_data_ptr(t)
                                              : (double)*(int64_t *)ct_tensor_data_ptr(t);
  ct_tensor_free(t);
  return x;
}

static void assert_equal(const ct_tensor *a, const ct_tensor *b) {
  int32_t eq = 0;
  CT_OK_OR_FAIL(ct_tensor_equal(&eq, a, b));
  if (!eq) {
    char *sa = NULL, *sb = NULL;
    ct_tensor_to_string(&sa, a);
    ct_tensor_to_string(&sb, b);
    fail_msg("tensors differ:\n%s\n%s", sa, sb);
  }
}

/* One-tensor op by name: op(t) or op(t, extra). */
static ct_tensor *call1(const char *op, const ct_tensor *t, ct_value *extra) {
  ct_value *args[2] = {NULL, extra};
  ct_value *out = NULL;
  ct_tensor *r = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&args[0], t));
  CT_OK_OR_FAIL(
      ct_op_call_name(&out, op, (const ct_value *const *)args, extra ? 2 : 1, NULL, NULL, 0));
  CT_OK_OR_FAIL(ct_value_to_tensor(&r, out));
  ct_value_free(out);
  ct_value_free(args[0]);
  return r;
}

/* ---- Codes ------------------------------------------------------------------ */

static void test_codes(void **state) {
  (void)state;
  static const struct {
    int32_t code;
    const char *name;
    size_t size;
  } dts[] = {{CT_UINT16, "uint16", 2},
             {CT_UINT32, "uint32", 4},
             {CT_UINT64, "uint64", 8},
             {CT_FLOAT8_E4M3FN, "float8_e4m3fn", 1},
             {CT_FLOAT8_E5M2, "float8_e5m2", 1},
             {CT_FLOAT8_E4M3FNUZ, "float8_e4m3fnuz", 1},
             {CT_FLOAT8_E5M2FNUZ, "float8_e5m2fnuz", 1},
             {CT_QINT8, "qint8", 1},
             {CT_QUINT8, "quint8", 1},
             {CT_QINT32, "qint32", 4},
             {CT_QUINT4X2, "quint4x2", 1}};
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; ++i) {
    assert_string_equal(ct_dtype_name(dts[i].code), dts[i].name);
    assert_int_equal(ct_dtype_element_size(dts[i].code), dts[i].size);
  }
  assert_string_equal(ct_dtype_name(24), "unknown");
  assert_int_equal(ct_dtype_element_size(24), 0);
  assert_int_equal(ct_dtype_is_supported(CT_FLOAT32), 1);
  assert_int_equal(ct_dtype_is_supported(CT_QUINT8), 1);
  assert_int_equal(ct_dtype_is_supported(0), 0);
  assert_int_equal(ct_dtype_is_supported(24), 0);
  /* 1.13 has none of the 2.x dtypes; 2.3+ has them all. */
  int major = 0, minor = 0;
  assert_int_equal(sscanf(ct_torch_version(), "%d.%d", &major, &minor), 2);
  int at_least_2_3 = major > 2 || (major == 2 && minor >= 3);
  for (int32_t c = CT_UINT16; c <= CT_FLOAT8_E5M2FNUZ; ++c)
    if (major < 2)
      assert_int_equal(ct_dtype_is_supported(c), 0);
    else if (at_least_2_3)
      assert_int_equal(ct_dtype_is_supported(c), 1);

  static const struct {
    int32_t code;
    const char *name;
  } devs[] = {{CT_DEVICE_META, "meta"},
              {CT_DEVICE_MPS, "mps"},
              {CT_DEVICE_XPU, "xpu"},
              {CT_DEVICE_HIP, "hip"},
              {CT_DEVICE_PRIVATEUSE1, "privateuseone"},
              {CT_DEVICE_XLA, "xla"},
              {CT_DEVICE_HPU, "hpu"},
              {CT_DEVICE_MTIA, "mtia"},
              {CT_DEVICE_LAZY, "lazy"},
              {CT_DEVICE_IPU, "ipu"},
              {CT_DEVICE_VE, "ve"},
              {CT_DEVICE_VULKAN, "vulkan"},
              {CT_DEVICE_METAL, "metal"},
              {CT_DEVICE_MAIA, "maia"}};
  for (size_t i = 0; i < sizeof devs / sizeof devs[0]; ++i)
    assert_string_equal(ct_device_type_name(devs[i].code), devs[i].name);
  assert_string_equal(ct_device_type_name(17), "unknown");
}

/* Quantized dtypes have no plain factories. */
static void test_quantized_factories_refused(void **state) {
  (void)state;
  ct_tensor *t = NULL;
  int64_t n = 3;
  CT_EXPECT_ERROR(ct_tensor_zeros(&t, &n, 1, CT_QINT8, CT_DEVICE_CPU, -1, 0), CT_ERR_TYPE,
                  "quantized dtype qint8");
  uint8_t raw[3] = {1, 2, 3};
  CT_EXPECT_ERROR(ct_tensor_from_data(&t, raw, &n, 1, CT_QUINT8, CT_DEVICE_CPU, -1), CT_ERR_TYPE,
                  "ct_tensor_quantize_per_tensor");
  CT_EXPECT_ERROR(ct_tensor_zeros(&t, &n, 1, 99, CT_DEVICE_CPU, -1, 0), CT_ERR_TYPE,
                  "unknown dtype code 99");
  assert_null(t);
}

/* ---- 2.x dtypes: not supported on 1.13, PyTorch's values on 2.x --------------- */

static void check_new_dtype(int32_t code, const char *name, const ct_value *ref, int is_float) {
  int64_t n = 6;
  ct_tensor *t = NULL;
  if (!ct_dtype_is_supported(code)) {
    CT_EXPECT_ERROR(ct_tensor_empty(&t, &n, 1, code, CT_DEVICE_CPU, -1, 0), CT_ERR_NOT_SUPPORTED,
                    "needs LibTorch >= 2.");
    assert_non_null(strstr(ct_last_error(), name));
    uint8_t raw[8] = {0};
    CT_EXPECT_ERROR(ct_tensor_from_data(&t, raw, &n, 1, code, CT_DEVICE_CPU, -1),
                    CT_ERR_NOT_SUPPORTED, "needs LibTorch");
    /* DLPack import of the same dtype: not supported, deleter still runs. */
    print_message("[ SKIPPED ] %s: LibTorch %s lacks it (not-supported checked)\n", name,
                  ct_torch_version());
    return;
  }
  char key[64];
  snprintf(key, sizeof key, "%s_bits", name);
  if (!ref) fail_msg("%s is supported but f8ref.pt is missing", name);
  ct_tensor *bits = ref_tensor(ref, key);
  int64_t nbytes = ct_tensor_numel(bits);
  int64_t count = nbytes / (int64_t)ct_dtype_element_size(code);
  CT_OK_OR_FAIL(
      ct_tensor_from_data(&t, ct_tensor_data_ptr(bits), &count, 1, code, CT_DEVICE_CPU, -1));
  assert_int_equal(ct_tensor_dtype(t), code);
  assert_int_equal(ct_tensor_element_size(t), ct_dtype_element_size(code));
  /* Converted by LibTorch = converted by PyTorch. */
  snprintf(key, sizeof key, is_float ? "%s_float" : "%s_int", name);
  ct_tensor *want = ref_tensor(ref, key);
  ct_tensor *conv = NULL;
  CT_OK_OR_FAIL(ct_tensor_to(&conv, t, CT_DEVICE_KEEP, -1, ct_tensor_dtype(want), 0, 0));
  assert_equal(conv, want);
  /* DLPack 1.1 codes, both ways. */
  DLManagedTensorVersioned *dl = NULL;
  CT_OK_OR_FAIL(ct_tensor_to_dlpack_versioned(&dl, t, 0, -1));
  assert_int_equal(dl->dl_tensor.dtype.bits, ct_dtype_element_size(code) * 8);
  static const struct {
    int32_t code;
    uint8_t dl;
  } map[] = {{CT_UINT16, kDLUInt},    {CT_UINT32, kDLUInt}, {CT_UINT64, kDLUInt},
             {CT_FLOAT8_E4M3FN, 10},  {CT_FLOAT8_E5M2, 12}, {CT_FLOAT8_E4M3FNUZ, 11},
             {CT_FLOAT8_E5M2FNUZ, 13}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; ++i)
    if (map[i].code == code) assert_int_equal(dl->dl_tensor.dtype.code, map[i].dl);
  assert_ptr_equal(dl->dl_tensor.data, ct_tensor_data_ptr(t));
  ct_tensor *back = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_dlpack_versioned(&back, dl));
  assert_int_equal(ct_tensor_dtype(back), code);
  assert_ptr_equal(ct_tensor_data_ptr(back), ct_tensor_data_ptr(t));
  ct_tensor_free(back);
  ct_tensor_free(conv);
  ct_tensor_free(want);
  ct_tensor_free(bits);
  ct_tensor_free(t);
}

static void test_new_dtypes(void **state) {
  (void)state;
  ct_value *ref = load_ref("f8ref.pt");
  if (ct_dtype_is_supported(CT_FLOAT8_E4M3FN) && !ref) {
    print_message("[ SKIPPED ] no PyTorch-made f8ref.pt (CTORCH_TEST_DTYPE_MODELS unset)\n");
    skip();
  }
  check_new_dtype(CT_FLOAT8_E4M3FN, "float8_e4m3fn", ref, 1);
  check_new_dtype(CT_FLOAT8_E5M2, "float8_e5m2", ref, 1);
  check_new_dtype(CT_FLOAT8_E4M3FNUZ, "float8_e4m3fnuz", ref, 1);
  check_new_dtype(CT_FLOAT8_E5M2FNUZ, "float8_e5m2fnuz", ref, 1);
  check_new_dtype(CT_UINT16, "uint16", ref, 0);
  check_new_dtype(CT_UINT32, "uint32", ref, 0);
  check_new_dtype(CT_UINT64, "uint64", ref, 0);
  ct_value_free(ref);
}

/* A DLPack tensor of a dtype this LibTorch lacks: not supported on 1.13,
 * the producer's deleter runs once. */
static int dl_deletes = 0;
static void dl_deleter(DLManagedTensorVersioned *self) {
  dl_deletes++;
  free(self);
}
static void test_dlpack_import_new_codes(void **state) {
  (void)state;
  static uint16_t data[4] = {1, 2, 3, 65535};
  static int64_t shape[1] = {4};
  DLManagedTensorVersioned *m = calloc(1, sizeof *m);
  m->version.major = 1;
  m->version.minor = 1;
  m->deleter = dl_deleter;
  m->dl_tensor.data = data;
  m->dl_tensor.device.device_type = kDLCPU;
  m->dl_tensor.ndim = 1;
  m->dl_tensor.shape = shape;
  m->dl_tensor.dtype.code = kDLUInt;
  m->dl_tensor.dtype.bits = 16;
  m->dl_tensor.dtype.lanes = 1;
  ct_tensor *t = NULL;
  dl_deletes = 0;
  if (ct_dtype_is_supported(CT_UINT16)) {
    CT_OK_OR_FAIL(ct_tensor_from_dlpack_versioned(&t, m));
    assert_int_equal(ct_tensor_dtype(t), CT_UINT16);
    assert_ptr_equal(ct_tensor_data_ptr(t), data);
    ct_tensor *i64 = NULL;
    CT_OK_OR_FAIL(ct_tensor_to(&i64, t, CT_DEVICE_KEEP, -1, CT_INT64, 0, 0));
    assert_int_equal(((int64_t *)ct_tensor_data_ptr(i64))[3], 65535);
    ct_tensor_free(i64);
    ct_tensor_free(t);
  } else {
    CT_EXPECT_ERROR(ct_tensor_from_dlpack_versioned(&t, m), CT_ERR_NOT_SUPPORTED,
                    "uint16 needs LibTorch >= 2.3");
  }
  assert_int_equal(dl_deletes, 1);
}

/* ---- Quantized tensors ---------------------------------------------------------- */

static void test_quantized_model(void **state) {
  (void)state;
  ct_value *ref = load_ref("qref.pt");
  if (!ref) {
    print_message("[ SKIPPED ] no PyTorch-made qref.pt (CTORCH_TEST_DTYPE_MODELS unset)\n");
    skip();
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/qlinear.pt", dtype_dir());
  ct_module *m = NULL;
  CT_OK_OR_FAIL(ct_module_load(&m, path, CT_DEVICE_KEEP, -1));

  ct_tensor *x = ref_tensor(ref, "x");
  ct_tensor *qx = NULL;
  CT_OK_OR_FAIL(ct_tensor_quantize_per_tensor(&qx, x, 0.02, 100, CT_QUINT8));
  assert_int_equal(ct_tensor_dtype(qx), CT_QUINT8);
  int32_t scheme = 0;
  double scale = 0;
  int64_t zp = 0;
  CT_OK_OR_FAIL(ct_tensor_q_scheme(&scheme, qx));
  assert_int_equal(scheme, CT_QSCHEME_PER_TENSOR_AFFINE);
  CT_OK_OR_FAIL(ct_tensor_q_scale(&scale, qx));
  CT_OK_OR_FAIL(ct_tensor_q_zero_point(&zp, qx));
  assert_true(scale == ref_double(ref, "x_scale"));
  assert_int_equal(zp, (int64_t)ref_double(ref, "x_zero_point"));

  /* The model's quantized output: what PyTorch computed. */
  ct_value *arg = NULL, *res = NULL;
  ct_tensor *y = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&arg, qx));
  CT_OK_OR_FAIL(ct_module_forward(&res, m, (const ct_value *const *)&arg, 1));
  CT_OK_OR_FAIL(ct_value_to_tensor(&y, res));
  assert_int_equal(ct_tensor_dtype(y), CT_QUINT8);
  CT_OK_OR_FAIL(ct_tensor_q_scale(&scale, y));
  CT_OK_OR_FAIL(ct_tensor_q_zero_point(&zp, y));
  assert_true(scale == ref_double(ref, "out_scale"));
  assert_int_equal(zp, (int64_t)ref_double(ref, "out_zero_point"));
  ct_tensor *yi = NULL, *yf = NULL, *want = ref_tensor(ref, "out_int");
  CT_OK_OR_FAIL(ct_tensor_int_repr(&yi, y));
  assert_int_equal(ct_tensor_dtype(yi), CT_UINT8);
  assert_equal(yi, want);
  CT_OK_OR_FAIL(ct_tensor_dequantize(&yf, y));
  ct_tensor *wantf = ref_tensor(ref, "out_float");
  assert_equal(yf, wantf);
  /* Rebuilt from its integers: the same quantized tensor. */
  ct_tensor *y2 = NULL, *y2i = NULL;
  CT_OK_OR_FAIL(ct_tensor_make_per_tensor_quantized(&y2, want, scale, zp));
  assert_int_equal(ct_tensor_dtype(y2), CT_QUINT8);
  CT_OK_OR_FAIL(ct_tensor_int_repr(&y2i, y2));
  assert_equal(y2i, want);
  /* Per-channel accessors on a per-tensor tensor: a clean type error. */
  int64_t axis = -1;
  CT_EXPECT_ERROR(ct_tensor_q_per_channel_axis(&axis, y), CT_ERR_TYPE, "per tensor");
  /* No DLPack form for quantized dtypes. */
  DLManagedTensor *dl = NULL;
  CT_EXPECT_ERROR(ct_tensor_to_dlpack(&dl, y, 0, -1), CT_ERR_TYPE, "no DLPack equivalent");

  /* The per-channel weight. */
  ct_value *wv = NULL;
  ct_tensor *w = NULL;
  CT_OK_OR_FAIL(ct_module_call(&wv, m, "weight", NULL, 0, NULL, NULL, 0));
  CT_OK_OR_FAIL(ct_value_to_tensor(&w, wv));
  assert_int_equal(ct_tensor_dtype(w), CT_QINT8);
  CT_OK_OR_FAIL(ct_tensor_q_scheme(&scheme, w));
  assert_int_equal(scheme, CT_QSCHEME_PER_CHANNEL_AFFINE);
  CT_OK_OR_FAIL(ct_tensor_q_per_channel_axis(&axis, w));
  assert_int_equal(axis, (int64_t)ref_double(ref, "w_axis"));
  ct_tensor *ws = NULL, *wz = NULL, *wi = NULL;
  ct_tensor *ws_ref = ref_tensor(ref, "w_scales"), *wz_ref = ref_tensor(ref, "w_zero_points");
  ct_tensor *wi_ref = ref_tensor(ref, "w_int");
  CT_OK_OR_FAIL(ct_tensor_q_per_channel_scales(&ws, w));
  CT_OK_OR_FAIL(ct_tensor_q_per_channel_zero_points(&wz, w));
  CT_OK_OR_FAIL(ct_tensor_int_repr(&wi, w));
  assert_equal(ws, ws_ref);
  assert_equal(wz, wz_ref);
  assert_equal(wi, wi_ref);
  CT_EXPECT_ERROR(ct_tensor_q_scale(&scale, w), CT_ERR_TYPE, "quantized per channel");
  /* Made again from float values and from integers. */
  ct_tensor *wf = NULL, *wq = NULL, *wqi = NULL, *wm = NULL, *wmi = NULL;
  CT_OK_OR_FAIL(ct_tensor_dequantize(&wf, w));
  CT_OK_OR_FAIL(ct_tensor_quantize_per_channel(&wq, wf, ws, wz, 0, CT_QINT8));
  CT_OK_OR_FAIL(ct_tensor_int_repr(&wqi, wq));
  assert_equal(wqi, wi_ref);
  CT_OK_OR_FAIL(ct_tensor_make_per_channel_quantized(&wm, wi_ref, ws, wz, 0));
  assert_int_equal(ct_tensor_dtype(wm), CT_QINT8);
  CT_OK_OR_FAIL(ct_tensor_int_repr(&wmi, wm));
  assert_equal(wmi, wi_ref);

  /* quantize_per_tensor to quint8 and quint4x2 (packed), as PyTorch. */
  ct_tensor *qt = NULL, *qti = NULL, *q4 = NULL, *q4i = NULL;
  ct_tensor *qt_ref = ref_tensor(ref, "qt_int"), *q4_ref = ref_tensor(ref, "q4_int");
  CT_OK_OR_FAIL(ct_tensor_quantize_per_tensor(&qt, x, 0.05, 10, CT_QUINT8));
  CT_OK_OR_FAIL(ct_tensor_int_repr(&qti, qt));
  assert_equal(qti, qt_ref);
  CT_OK_OR_FAIL(ct_tensor_quantize_per_tensor(&q4, x, 0.5, 3, CT_QUINT4X2));
  assert_int_equal(ct_tensor_dtype(q4), CT_QUINT4X2);
  CT_OK_OR_FAIL(ct_tensor_int_repr(&q4i, q4));
  assert_equal(q4i, q4_ref);

  /* Errors. */
  CT_EXPECT_ERROR(ct_tensor_q_scale(&scale, x), CT_ERR_TYPE, "not quantized");
  CT_EXPECT_ERROR(ct_tensor_int_repr(&qt, x), CT_ERR_TYPE, "not quantized");
  CT_EXPECT_ERROR(ct_tensor_quantize_per_tensor(&qt, x, 0.1, 0, CT_FLOAT32), CT_ERR_TYPE,
                  "not a quantized dtype");
  CT_EXPECT_ERROR(ct_tensor_q_scheme(NULL, x), CT_ERR_INVALID_ARGUMENT, "NULL");
  /* Scales that are not positive and finite, and axes that are not a
   * dimension: LibTorch accepted them (and divided by the scale). */
  const double bad_scales[] = {0.0, -1.0, NAN, INFINITY};
  ct_tensor *none = NULL;
  for (size_t i = 0; i < 4; ++i) {
    CT_EXPECT_ERROR(ct_tensor_quantize_per_tensor(&none, x, bad_scales[i], 0, CT_QUINT8),
                    CT_ERR_INVALID_ARGUMENT, "scale must be positive and finite");
    CT_EXPECT_ERROR(ct_tensor_make_per_tensor_quantized(&none, qti, bad_scales[i], 0),
                    CT_ERR_INVALID_ARGUMENT, "scale must be positive and finite");
  }
  const int64_t bad_axes[] = {2, 7, -3, INT64_MIN};
  for (size_t i = 0; i < 4; ++i) {
    CT_EXPECT_ERROR(ct_tensor_quantize_per_channel(&none, wf, ws, wz, bad_axes[i], CT_QINT8),
                    CT_ERR_INVALID_ARGUMENT, "is not a dimension");
    CT_EXPECT_ERROR(ct_tensor_make_per_channel_quantized(&none, wi_ref, ws, wz, bad_axes[i]),
                    CT_ERR_INVALID_ARGUMENT, "is not a dimension");
  }
  ct_tensor *neg_scales = NULL;
  int64_t nch = ct_tensor_numel(ws);
  double neg[64];
  assert_true(nch > 0 && nch <= 64);
  for (int64_t i = 0; i < nch; ++i) neg[i] = -((const double *)ct_tensor_data_ptr(ws))[i];
  CT_OK_OR_FAIL(ct_tensor_from_data(&neg_scales, neg, &nch, 1, CT_FLOAT64, CT_DEVICE_CPU, -1));
  CT_EXPECT_ERROR(ct_tensor_quantize_per_channel(&none, wf, neg_scales, wz, 0, CT_QINT8),
                  CT_ERR_INVALID_ARGUMENT, "every scale must be positive and finite");
  CT_EXPECT_ERROR(ct_tensor_make_per_channel_quantized(&none, wi_ref, neg_scales, wz, 0),
                  CT_ERR_INVALID_ARGUMENT, "every scale must be positive and finite");
  ct_tensor_free(neg_scales);
  assert_null(none);

  ct_tensor *all[] = {x,   qx, y,   yi, yf,     want,   wantf,  y2,     y2i,
                      w,   ws, wz,  wi, ws_ref, wz_ref, wi_ref, wf,     wq,
                      wqi, wm, wmi, qt, qti,    q4,     q4i,    qt_ref, q4_ref};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) ct_tensor_free(all[i]);
  ct_value_free(arg);
  ct_value_free(res);
  ct_value_free(wv);
  ct_value_free(ref);
  ct_module_free(m);
}

/* ---- Layouts, memory formats, sparse tensors ------------------------------------ */

static void test_memory_formats(void **state) {
  (void)state;
  int64_t s4[4] = {2, 3, 4, 5}, s5[5] = {2, 3, 2, 4, 5};
  ct_tensor *t = NULL, *cl = NULL, *t5 = NULL, *cl3 = NULL;
  CT_OK_OR_FAIL(ct_tensor_randn(&t, s4, 4, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  int32_t layout = -1, yes = -1, fmt = -1;
  CT_OK_OR_FAIL(ct_tensor_layout(&layout, t));
  assert_int_equal(layout, CT_LAYOUT_STRIDED);
  CT_OK_OR_FAIL(ct_tensor_is_contiguous_format(&yes, t, CT_MEMORY_FORMAT_CONTIGUOUS));
  assert_int_equal(yes, 1);
  CT_OK_OR_FAIL(ct_tensor_is_contiguous_format(&yes, t, CT_MEMORY_FORMAT_CHANNELS_LAST));
  assert_int_equal(yes, 0);
  CT_OK_OR_FAIL(ct_tensor_contiguous_format(&cl, t, CT_MEMORY_FORMAT_CHANNELS_LAST));
  CT_OK_OR_FAIL(ct_tensor_is_contiguous_format(&yes, cl, CT_MEMORY_FORMAT_CHANNELS_LAST));
  assert_int_equal(yes, 1);
  CT_OK_OR_FAIL(ct_tensor_is_contiguous_format(&yes, cl, CT_MEMORY_FORMAT_CONTIGUOUS));
  assert_int_equal(yes, 0);
  CT_OK_OR_FAIL(ct_tensor_suggest_memory_format(&fmt, cl));
  assert_int_equal(fmt, CT_MEMORY_FORMAT_CHANNELS_LAST);
  /* NHWC strides: C is the fastest dimension. */
  const int64_t *st = ct_tensor_strides(cl);
  assert_int_equal(st[1], 1);
  assert_int_equal(st[3], 3);
  assert_int_equal(st[2], 15);
  assert_int_equal(st[0], 60);
  assert_equal(cl, t);
  /* 4-d tensors are never channels_last_3d. */
  CT_OK_OR_FAIL(ct_tensor_is_contiguous_format(&yes, cl, CT_MEMORY_FORMAT_CHANNELS_LAST_3D));
  assert_int_equal(yes, 0);
  CT_OK_OR_FAIL(ct_tensor_randn(&t5, s5, 5, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_tensor_contiguous_format(&cl3, t5, CT_MEMORY_FORMAT_CHANNELS_LAST_3D));
  CT_OK_OR_FAIL(ct_tensor_is_contiguous_format(&yes, cl3, CT_MEMORY_FORMAT_CHANNELS_LAST_3D));
  assert_int_equal(yes, 1);
  CT_OK_OR_FAIL(ct_tensor_suggest_memory_format(&fmt, cl3));
  assert_int_equal(fmt, CT_MEMORY_FORMAT_CHANNELS_LAST_3D);
  assert_int_equal(ct_tensor_strides(cl3)[1], 1);
  assert_equal(cl3, t5);
  ct_tensor *bad = NULL;
  CT_EXPECT_ERROR(ct_tensor_is_contiguous_format(&yes, t, 7), CT_ERR_INVALID_ARGUMENT,
                  "unknown memory format 7");
  CT_EXPECT_ERROR(ct_tensor_contiguous_format(&bad, t5, CT_MEMORY_FORMAT_CHANNELS_LAST),
                  CT_ERR_TORCH, "");
  assert_null(bad);
  ct_tensor_free(t);
  ct_tensor_free(cl);
  ct_tensor_free(t5);
  ct_tensor_free(cl3);
}

static void test_sparse(void **state) {
  (void)state;
  /* [[0, 1, 0], [2, 0, 3]] */
  const float d[6] = {0, 1, 0, 2, 0, 3};
  const int64_t sz[2] = {2, 3};
  ct_tensor *dense = test_tensor_f32(d, sz, 2);
  int32_t layout = -1;

  ct_tensor *coo = call1("aten::to_sparse", dense, NULL);
  CT_OK_OR_FAIL(ct_tensor_layout(&layout, coo));
  assert_int_equal(layout, CT_LAYOUT_SPARSE_COO);
  ct_tensor *idx = NULL, *val = NULL, *back = NULL;
  CT_OK_OR_FAIL(ct_tensor_sparse_indices(&idx, coo));
  CT_OK_OR_FAIL(ct_tensor_sparse_values(&val, coo));
  const int64_t want_idx[6] = {0, 1, 1, 1, 0, 2};
  const float want_val[3] = {1, 2, 3};
  assert_int_equal(ct_tensor_dtype(idx), CT_INT64);
  assert_int_equal(ct_tensor_numel(idx), 6);
  assert_memory_equal(ct_tensor_data_ptr(idx), want_idx, sizeof want_idx);
  assert_memory_equal(ct_tensor_data_ptr(val), want_val, sizeof want_val);
  CT_OK_OR_FAIL(ct_tensor_to_dense(&back, coo));
  assert_equal(back, dense);
  /* No DLPack form, no leak (ASan run), a clean message. */
  DLManagedTensor *dl = NULL;
  DLManagedTensorVersioned *dlv = NULL;
  CT_EXPECT_ERROR(ct_tensor_to_dlpack(&dl, coo, 0, -1), CT_ERR_NOT_SUPPORTED, "layout sparse COO");
  CT_EXPECT_ERROR(ct_tensor_to_dlpack_versioned(&dlv, coo, 1, -1), CT_ERR_NOT_SUPPORTED,
                  "ct_tensor_to_dense");
  assert_null(dl);
  assert_null(dlv);
  assert_null(ct_tensor_data_ptr(coo));
  ct_tensor *x = NULL;
  CT_EXPECT_ERROR(ct_tensor_sparse_compressed_indices(&x, coo), CT_ERR_TYPE,
                  "needs a compressed sparse tensor");
  CT_EXPECT_ERROR(ct_tensor_sparse_indices(&x, dense), CT_ERR_TYPE, "layout Strided");

  ct_tensor *csr = call1("aten::to_sparse_csr", dense, NULL);
  CT_OK_OR_FAIL(ct_tensor_layout(&layout, csr));
  assert_int_equal(layout, CT_LAYOUT_SPARSE_CSR);
  ct_tensor *crow = NULL, *col = NULL, *cval = NULL, *cback = NULL;
  CT_OK_OR_FAIL(ct_tensor_sparse_compressed_indices(&crow, csr));
  CT_OK_OR_FAIL(ct_tensor_sparse_plain_indices(&col, csr));
  CT_OK_OR_FAIL(ct_tensor_sparse_values(&cval, csr));
  const int64_t want_crow[3] = {0, 1, 3}, want_col[3] = {1, 0, 2};
  assert_memory_equal(ct_tensor_data_ptr(crow), want_crow, sizeof want_crow);
  assert_memory_equal(ct_tensor_data_ptr(col), want_col, sizeof want_col);
  assert_memory_equal(ct_tensor_data_ptr(cval), want_val, sizeof want_val);
  CT_OK_OR_FAIL(ct_tensor_to_dense(&cback, csr));
  assert_equal(cback, dense);
  CT_EXPECT_ERROR(ct_tensor_sparse_indices(&x, csr), CT_ERR_TYPE, "needs a sparse COO tensor");

  ct_tensor *csc = call1("aten::to_sparse_csc", dense, NULL);
  CT_OK_OR_FAIL(ct_tensor_layout(&layout, csc));
  assert_int_equal(layout, CT_LAYOUT_SPARSE_CSC);
  ct_tensor *ccol = NULL, *row = NULL;
  CT_OK_OR_FAIL(ct_tensor_sparse_compressed_indices(&ccol, csc));
  CT_OK_OR_FAIL(ct_tensor_sparse_plain_indices(&row, csc));
  const int64_t want_ccol[4] = {0, 1, 2, 3}, want_row[3] = {1, 0, 1};
  assert_memory_equal(ct_tensor_data_ptr(ccol), want_ccol, sizeof want_ccol);
  assert_memory_equal(ct_tensor_data_ptr(row), want_row, sizeof want_row);

  /* BSR with 1x1 blocks: the CSR structure, values of shape (nnz, 1, 1). */
  ct_value *bs = NULL;
  const int64_t blk[2] = {1, 1};
  CT_OK_OR_FAIL(ct_value_int_list(&bs, blk, 2));
  ct_tensor *bsr = call1("aten::to_sparse_bsr", dense, bs);
  CT_OK_OR_FAIL(ct_tensor_layout(&layout, bsr));
  assert_int_equal(layout, CT_LAYOUT_SPARSE_BSR);
  ct_tensor *bcrow = NULL, *bval = NULL;
  CT_OK_OR_FAIL(ct_tensor_sparse_compressed_indices(&bcrow, bsr));
  assert_memory_equal(ct_tensor_data_ptr(bcrow), want_crow, sizeof want_crow);
  CT_OK_OR_FAIL(ct_tensor_sparse_values(&bval, bsr));
  assert_int_equal(ct_tensor_ndim(bval), 3);

  ct_tensor *all[] = {dense, coo,   idx, val,  back, csr, crow,  col,
                      cval,  cback, csc, ccol, row,  bsr, bcrow, bval};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) ct_tensor_free(all[i]);
  ct_value_free(bs);
}

static void test_mkldnn(void **state) {
  (void)state;
  const float d[4] = {1, 2, 3, 4};
  const int64_t sz[2] = {2, 2};
  ct_tensor *dense = test_tensor_f32(d, sz, 2), *mk = NULL, *back = NULL;
  ct_value *arg = NULL, *out = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&arg, dense));
  if (ct_op_call_name(&out, "aten::to_mkldnn", (const ct_value *const *)&arg, 1, NULL, NULL, 0) !=
      CT_OK) {
    print_message("[ SKIPPED ] this LibTorch has no mkldnn tensors: %s\n", ct_last_error());
    ct_value_free(arg);
    ct_tensor_free(dense);
    skip();
  }
  CT_OK_OR_FAIL(ct_value_to_tensor(&mk, out));
  int32_t layout = -1;
  CT_OK_OR_FAIL(ct_tensor_layout(&layout, mk));
  assert_int_equal(layout, CT_LAYOUT_MKLDNN);
  DLManagedTensor *dl = NULL;
  CT_EXPECT_ERROR(ct_tensor_to_dlpack(&dl, mk, 0, -1), CT_ERR_NOT_SUPPORTED, "layout mkldnn");
  CT_OK_OR_FAIL(ct_tensor_to_dense(&back, mk));
  assert_equal(back, dense);
  ct_value_free(arg);
  ct_value_free(out);
  ct_tensor_free(dense);
  ct_tensor_free(mk);
  ct_tensor_free(back);
}

/* ---- Devices --------------------------------------------------------------------- */

static void test_meta(void **state) {
  (void)state;
  int64_t sz[2] = {1000, 1000};
  ct_tensor *m = NULL, *cpu = NULL, *m2 = NULL;
  CT_OK_OR_FAIL(ct_tensor_empty(&m, sz, 2, CT_FLOAT32, CT_DEVICE_META, -1, 0));
  assert_int_equal(ct_tensor_device_type(m), CT_DEVICE_META);
  assert_int_equal(ct_tensor_numel(m), 1000000);
  assert_int_equal(ct_tensor_sizes(m)[1], 1000);
  assert_int_equal(ct_tensor_strides(m)[0], 1000);
  assert_null(ct_tensor_data_ptr(m));
  /* Shape inference without memory: (1000x1000) @ (1000x1000). */
  ct_tensor *in[2] = {m, m};
  ct_tensor *prod = NULL;
  ct_op *mm = NULL;
  CT_OK_OR_FAIL(ct_op_find(&mm, "aten::mm", NULL));
  CT_OK_OR_FAIL(ct_op_call_tensors(&prod, 1, mm, (const ct_tensor *const *)in, 2));
  assert_int_equal(ct_tensor_device_type(prod), CT_DEVICE_META);
  assert_int_equal(ct_tensor_numel(prod), 1000000);
  assert_null(ct_tensor_data_ptr(prod));
  /* CPU -> meta keeps the shape; meta values cannot be read. */
  CT_OK_OR_FAIL(ct_tensor_ones(&cpu, sz, 2, CT_FLOAT64, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_tensor_to(&m2, cpu, CT_DEVICE_META, -1, CT_DTYPE_KEEP, 0, 0));
  assert_int_equal(ct_tensor_device_type(m2), CT_DEVICE_META);
  assert_int_equal(ct_tensor_dtype(m2), CT_FLOAT64);
  assert_null(ct_tensor_data_ptr(m2));
  DLManagedTensor *dl = NULL;
  CT_EXPECT_ERROR(ct_tensor_to_dlpack(&dl, m, 0, -1), CT_ERR_NOT_SUPPORTED, "meta");
  /* Device values carry the code. */
  ct_value *dv = NULL;
  int32_t dt = 0, di = 0;
  CT_OK_OR_FAIL(ct_value_from_device(&dv, CT_DEVICE_META, -1));
  CT_OK_OR_FAIL(ct_value_to_device(&dt, &di, dv));
  assert_int_equal(dt, CT_DEVICE_META);
  ct_value_free(dv);
  ct_op_free(mm);
  ct_tensor_free(m);
  ct_tensor_free(prod);
  ct_tensor_free(cpu);
  ct_tensor_free(m2);
}

static void test_other_devices(void **state) {
  (void)state;
  int64_t n = 2;
  ct_tensor *t = NULL;
  int32_t tried = 0;
  for (int32_t d = CT_DEVICE_MPS; d <= CT_DEVICE_MAIA; ++d) {
    ct_status s = ct_tensor_empty(&t, &n, 1, CT_FLOAT32, d, 0, 0);
    if (s == CT_OK) { /* a backend for it is loaded: the tensor is there */
      assert_int_equal(ct_tensor_device_type(t), d);
      ct_tensor_free(t);
      t = NULL;
      print_message("device %s is available\n", ct_device_type_name(d));
      continue;
    }
    if (s == CT_ERR_TORCH) { /* a device guard is registered, kernels are not */
      assert_non_null(strstr(ct_last_error(), "Could not run"));
      print_message("device %s: registered without kernels\n", ct_device_type_name(d));
      continue;
    }
    assert_int_equal(s, CT_ERR_NOT_SUPPORTED);
    assert_non_null(strstr(ct_last_error(), ct_device_type_name(d)));
    assert_non_null(strstr(ct_last_error(), ct_torch_version()));
    tried++;
  }
  assert_true(tried > 0);
  CT_EXPECT_ERROR(ct_tensor_empty(&t, &n, 1, CT_FLOAT32, 17, 0, 0), CT_ERR_INVALID_ARGUMENT,
                  "unknown device type 17");
  assert_null(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_codes),
      cmocka_unit_test(test_quantized_factories_refused),
      cmocka_unit_test(test_new_dtypes),
      cmocka_unit_test(test_dlpack_import_new_codes),
      cmocka_unit_test(test_quantized_model),
      cmocka_unit_test(test_memory_formats),
      cmocka_unit_test(test_sparse),
      cmocka_unit_test(test_mkldnn),
      cmocka_unit_test(test_meta),
      cmocka_unit_test(test_other_devices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
