/* Models made by PyTorch (tests/models/make_models.py): load each, run it on
 * the saved inputs and compare with PyTorch's outputs; parameter names match
 * Python's; torch.save pickles load. Also saves a module built in C for
 * tests/models/check_c_module.py. Skips (77) without CTORCH_TEST_MODELS. */
#include "test_util.h"

#include <pthread.h>
#include <unistd.h>

static char g_dir[4096];

static const char *model_path(const char *name, const char *suffix) {
  static __thread char buf[4300];
  snprintf(buf, sizeof buf, "%s/%s%s", g_dir, name, suffix);
  return buf;
}

static ct_module *load_model(const char *name) {
  ct_module *m = NULL;
  CT_OK_OR_FAIL(ct_module_load(&m, model_path(name, ".pt"), CT_DEVICE_KEEP, -1));
  return m;
}

static ct_value *load_io(const char *name) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_pickle_load(&v, model_path(name, "_io.pt")));
  return v;
}

static ct_value *io_get(const ct_value *io, const char *key) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_dict_get_str(&v, io, key));
  return v;
}

static int is_seq(int32_t tag) {
  return tag == CT_VALUE_LIST || tag == CT_VALUE_TUPLE || tag == CT_VALUE_INT_LIST ||
         tag == CT_VALUE_DOUBLE_LIST || tag == CT_VALUE_BOOL_LIST || tag == CT_VALUE_TENSOR_LIST;
}

/* Structural comparison; tensors within float tolerance and same dtype. */
static void compare(const ct_value *got, const ct_value *want, const char *where) {
  int32_t tg = ct_value_tag(got), tw = ct_value_tag(want);
  if (is_seq(tg) && is_seq(tw)) {
    size_t ng, nw;
    CT_OK_OR_FAIL(ct_value_length(&ng, got));
    CT_OK_OR_FAIL(ct_value_length(&nw, want));
    if (ng != nw) fail_msg("%s: length %zu != %zu", where, ng, nw);
    if ((tg == CT_VALUE_TUPLE) != (tw == CT_VALUE_TUPLE))
      fail_msg("%s: tuple vs list (%d, %d)", where, tg, tw);
    for (size_t i = 0; i < ng; ++i) {
      ct_value *a = NULL, *b = NULL;
      CT_OK_OR_FAIL(ct_value_get(&a, got, i));
      CT_OK_OR_FAIL(ct_value_get(&b, want, i));
      char w[256];
      snprintf(w, sizeof w, "%s[%zu]", where, i);
      compare(a, b, w);
      ct_value_free(a);
      ct_value_free(b);
    }
    return;
  }
  if (tg != tw) fail_msg("%s: tag %d != %d", where, tg, tw);
  switch (tg) {
    case CT_VALUE_NONE: return;
    case CT_VALUE_BOOL:
    case CT_VALUE_INT: {
      int64_t a, b;
      if (tg == CT_VALUE_BOOL) {
        int32_t x, y;
        CT_OK_OR_FAIL(ct_value_to_bool(&x, got));
        CT_OK_OR_FAIL(ct_value_to_bool(&y, want));
        a = x, b = y;
      } else {
        CT_OK_OR_FAIL(ct_value_to_int(&a, got));
        CT_OK_OR_FAIL(ct_value_to_int(&b, want));
      }
      if (a != b) fail_msg("%s: %ld != %ld", where, (long)a, (long)b);
      return;
    }
    case CT_VALUE_DOUBLE: {
      double a, b;
      CT_OK_OR_FAIL(ct_value_to_double(&a, got));
      CT_OK_OR_FAIL(ct_value_to_double(&b, want));
      if (a != b) fail_msg("%s: %g != %g", where, a, b);
      return;
    }
    case CT_VALUE_STRING: {
      const char *a, *b;
      CT_OK_OR_FAIL(ct_value_as_string(&a, NULL, got));
      CT_OK_OR_FAIL(ct_value_as_string(&b, NULL, want));
      if (strcmp(a, b)) fail_msg("%s: '%s' != '%s'", where, a, b);
      return;
    }
    case CT_VALUE_TENSOR: {
      ct_tensor *a = NULL, *b = NULL;
      CT_OK_OR_FAIL(ct_value_to_tensor(&a, got));
      CT_OK_OR_FAIL(ct_value_to_tensor(&b, want));
      if (ct_tensor_dtype(a) != ct_tensor_dtype(b))
        fail_msg("%s: dtype %d != %d", where, ct_tensor_dtype(a), ct_tensor_dtype(b));
      if (ct_tensor_ndim(a) != ct_tensor_ndim(b)) fail_msg("%s: ndim differs", where);
      for (int64_t d = 0; d < ct_tensor_ndim(a); ++d)
        if (ct_tensor_sizes(a)[d] != ct_tensor_sizes(b)[d]) fail_msg("%s: shape differs", where);
      int32_t ok = 0;
      if (ct_tensor_dtype(a) == CT_FLOAT32 || ct_tensor_dtype(a) == CT_FLOAT64)
        CT_OK_OR_FAIL(ct_tensor_allclose(&ok, a, b, 1e-4, 1e-5, 0));
      else
        CT_OK_OR_FAIL(ct_tensor_equal(&ok, a, b));
      if (!ok) fail_msg("%s: tensors differ", where);
      ct_tensor_free(a);
      ct_tensor_free(b);
      return;
    }
    case CT_VALUE_DICT: {
      size_t ng, nw;
      CT_OK_OR_FAIL(ct_value_length(&ng, got));
      CT_OK_OR_FAIL(ct_value_length(&nw, want));
      if (ng != nw) fail_msg("%s: dict size %zu != %zu", where, ng, nw);
      for (size_t i = 0; i < nw; ++i) {
        ct_value *k = NULL, *b = NULL, *a = NULL;
        CT_OK_OR_FAIL(ct_value_dict_item(&k, &b, want, i));
        CT_OK_OR_FAIL(ct_value_dict_get(&a, got, k));
        char w[256];
        snprintf(w, sizeof w, "%s{%zu}", where, i);
        compare(a, b, w);
        ct_value_free(k);
        ct_value_free(a);
        ct_value_free(b);
      }
      return;
    }
    default: fail_msg("%s: cannot compare tag %d", where, tg);
  }
}

/* Runs `method` on io[inputs_key] and compares with io[output_key]. */
static void run_and_compare(ct_module *m, const ct_value *io, const char *inputs_key,
                            const char *output_key) {
  ct_value *inputs = io_get(io, inputs_key), *want = io_get(io, output_key);
  size_t n;
  CT_OK_OR_FAIL(ct_value_length(&n, inputs));
  ct_value *args[8] = {0};
  assert_true(n <= 8);
  for (size_t i = 0; i < n; ++i) CT_OK_OR_FAIL(ct_value_get(&args[i], inputs, i));
  ct_value *got = NULL;
  CT_OK_OR_FAIL(ct_module_forward(&got, m, (const ct_value *const *)args, n));
  compare(got, want, output_key);
  ct_value_free(got);
  for (size_t i = 0; i < n; ++i) ct_value_free(args[i]);
  ct_value_free(inputs);
  ct_value_free(want);
}

/* Names in dict `d` (in order) equal the strings in list io[key]. */
static void check_names(const ct_value *d, const ct_value *io, const char *key) {
  ct_value *names = io_get(io, key);
  size_t n, nd;
  CT_OK_OR_FAIL(ct_value_length(&n, names));
  CT_OK_OR_FAIL(ct_value_length(&nd, d));
  assert_int_equal(n, nd);
  for (size_t i = 0; i < n; ++i) {
    ct_value *a = NULL, *b = NULL;
    CT_OK_OR_FAIL(ct_value_dict_item(&a, NULL, d, i));
    CT_OK_OR_FAIL(ct_value_get(&b, names, i));
    const char *sa, *sb;
    CT_OK_OR_FAIL(ct_value_as_string(&sa, NULL, a));
    CT_OK_OR_FAIL(ct_value_as_string(&sb, NULL, b));
    assert_string_equal(sa, sb);
    ct_value_free(a);
    ct_value_free(b);
  }
  ct_value_free(names);
}

static void simple_model(const char *name) {
  ct_module *m = load_model(name);
  ct_value *io = load_io(name);
  run_and_compare(m, io, "inputs", "output");
  ct_value *d = NULL;
  CT_OK_OR_FAIL(ct_module_named_parameters(&d, m, 1));
  check_names(d, io, "param_names");
  ct_value_free(d);
  CT_OK_OR_FAIL(ct_module_named_buffers(&d, m, 1));
  check_names(d, io, "buffer_names");
  ct_value_free(d);
  ct_value_free(io);
  ct_module_free(m);
}

static void test_resnet18(void **state) {
  (void)state;
  if (access(model_path("resnet18", ".pt"), R_OK) != 0) skip();
  simple_model("resnet18");
}

static void test_gate(void **state) {
  (void)state;
  simple_model("gate");
  ct_module *m = load_model("gate");
  ct_value *io = load_io("gate");
  run_and_compare(m, io, "inputs_neg", "output_neg");
  ct_value_free(io);
  ct_module_free(m);
}

static void test_lstm(void **state) {
  (void)state;
  simple_model("lstm");
}

static void test_containers(void **state) {
  (void)state;
  simple_model("containers");
  ct_module *m = load_model("containers");
  ct_value *io = load_io("containers");
  run_and_compare(m, io, "inputs_opt", "output_opt");
  ct_value_free(io);
  ct_module_free(m);
}

static void test_multi(void **state) {
  (void)state;
  simple_model("multi");
  ct_module *m = load_model("multi");
  ct_value *io = load_io("multi");
  ct_value *methods = NULL, *v = NULL;
  CT_OK_OR_FAIL(ct_module_methods(&methods, m));
  CT_OK_OR_FAIL(ct_value_dict_get_str(&v, methods, "decode"));
  const char *schema;
  CT_OK_OR_FAIL(ct_value_as_string(&schema, NULL, v));
  assert_non_null(strstr(schema, "float scale=1."));
  assert_non_null(strstr(schema, "int shift=0"));
  ct_value_free(v);
  CT_OK_OR_FAIL(ct_value_dict_get_str(&v, methods, "encode"));
  ct_value_free(v);
  ct_value_free(methods);

  ct_value *inputs = io_get(io, "inputs"), *x = NULL, *z = NULL, *out = NULL;
  CT_OK_OR_FAIL(ct_value_get(&x, inputs, 0));
  const ct_value *a1[1] = {x};
  CT_OK_OR_FAIL(ct_module_call(&z, m, "encode", a1, 1, NULL, NULL, 0));
  ct_value *want = io_get(io, "encode_out");
  compare(z, want, "encode");
  ct_value_free(want);
  /* decode with defaults, then with keywords from the Python dict. */
  const ct_value *a2[1] = {z};
  CT_OK_OR_FAIL(ct_module_call(&out, m, "decode", a2, 1, NULL, NULL, 0));
  want = io_get(io, "decode_default_out");
  compare(out, want, "decode_default");
  ct_value_free(want);
  ct_value_free(out);
  ct_value *kw = io_get(io, "decode_kwargs");
  size_t nkw;
  CT_OK_OR_FAIL(ct_value_length(&nkw, kw));
  assert_int_equal(nkw, 2);
  ct_value *keys[2], *vals[2];
  const char *names[2];
  for (size_t i = 0; i < nkw; ++i) {
    CT_OK_OR_FAIL(ct_value_dict_item(&keys[i], &vals[i], kw, i));
    CT_OK_OR_FAIL(ct_value_as_string(&names[i], NULL, keys[i]));
  }
  CT_OK_OR_FAIL(
      ct_module_call(&out, m, "decode", a2, 1, names, (const ct_value *const *)vals, nkw));
  want = io_get(io, "decode_out");
  compare(out, want, "decode");
  ct_value_free(want);
  ct_value_free(out);
  for (size_t i = 0; i < nkw; ++i) {
    ct_value_free(keys[i]);
    ct_value_free(vals[i]);
  }
  ct_value_free(kw);
  ct_value_free(x);
  ct_value_free(z);
  ct_value_free(inputs);
  ct_value_free(io);
  ct_module_free(m);
}

static void test_convbn(void **state) {
  (void)state;
  simple_model("convbn");
  /* Frozen and optimized give the same numbers. */
  ct_module *m = load_model("convbn"), *f = NULL, *o = NULL;
  ct_value *io = load_io("convbn");
  CT_OK_OR_FAIL(ct_module_freeze(&f, m));
  run_and_compare(f, io, "inputs", "output");
  CT_OK_OR_FAIL(ct_module_optimize_for_inference(&o, m));
  run_and_compare(o, io, "inputs", "output");
  ct_module_free(o);
  ct_module_free(f);
  ct_value_free(io);
  ct_module_free(m);
}

static void test_dtypes(void **state) {
  (void)state;
  simple_model("dtypes");
}

static void test_noncontig(void **state) {
  (void)state;
  simple_model("noncontig");
  ct_module *m = load_model("noncontig");
  ct_value *io = load_io("noncontig"), *inputs = io_get(io, "inputs"), *x = NULL, *out = NULL;
  CT_OK_OR_FAIL(ct_value_get(&x, inputs, 0));
  const ct_value *a[1] = {x};
  CT_OK_OR_FAIL(ct_module_forward(&out, m, a, 1));
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, out));
  assert_int_equal(ct_tensor_is_contiguous(t), 0);
  assert_int_equal(ct_tensor_strides(t)[0], 1);
  ct_tensor_free(t);
  ct_value_free(out);
  ct_value_free(x);
  ct_value_free(inputs);
  ct_value_free(io);
  ct_module_free(m);
}

static void test_extra_files(void **state) {
  (void)state;
  simple_model("with_meta");
  ct_module *m = load_model("with_meta");
  ct_value *io = load_io("with_meta"), *meta = io_get(io, "meta"), *ef = NULL, *v = NULL;
  CT_OK_OR_FAIL(ct_module_extra_files(&ef, m));
  size_t n;
  CT_OK_OR_FAIL(ct_value_length(&n, ef));
  assert_int_equal(n, 2);
  CT_OK_OR_FAIL(ct_value_dict_get_str(&v, ef, "meta.json"));
  compare(v, meta, "meta.json");
  ct_value_free(v);
  CT_OK_OR_FAIL(ct_value_dict_get_str(&v, ef, "notes.txt"));
  const char *s;
  CT_OK_OR_FAIL(ct_value_as_string(&s, NULL, v));
  assert_string_equal(s, "hello");
  ct_value_free(v);
  /* Also from a buffer. */
  FILE *f = fopen(model_path("with_meta", ".pt"), "rb");
  assert_non_null(f);
  char *buf = malloc(1 << 20);
  size_t size = fread(buf, 1, 1 << 20, f);
  fclose(f);
  ct_module *mb = NULL;
  CT_OK_OR_FAIL(ct_module_load_buffer(&mb, buf, size, CT_DEVICE_CPU, -1));
  free(buf);
  ct_value *ef2 = NULL;
  CT_OK_OR_FAIL(ct_module_extra_files(&ef2, mb));
  CT_OK_OR_FAIL(ct_value_length(&n, ef2));
  assert_int_equal(n, 2);
  ct_value_free(ef2);
  run_and_compare(mb, io, "inputs", "output");
  ct_module_free(mb);
  ct_value_free(ef);
  ct_value_free(meta);
  ct_value_free(io);
  ct_module_free(m);
}

static void test_pickles(void **state) {
  (void)state;
  ct_value *v = NULL, *e = NULL;
  size_t n;
  /* state_dict */
  CT_OK_OR_FAIL(ct_pickle_load(&v, model_path("state_dict", ".pt")));
  assert_int_equal(ct_value_tag(v), CT_VALUE_DICT);
  CT_OK_OR_FAIL(ct_value_dict_get_str(&e, v, "weight"));
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, e));
  assert_int_equal(ct_tensor_numel(t), 16);
  ct_tensor_free(t);
  ct_value_free(e);
  ct_value_free(v);
  /* tensor */
  CT_OK_OR_FAIL(ct_pickle_load(&v, model_path("tensor", ".pt")));
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, v));
  assert_int_equal(ct_tensor_numel(t), 12);
  assert_true(((float *)ct_tensor_data_ptr(t))[11] == 11.0f);
  ct_tensor_free(t);
  ct_value_free(v);
  /* list */
  CT_OK_OR_FAIL(ct_pickle_load(&v, model_path("tensor_list", ".pt")));
  CT_OK_OR_FAIL(ct_value_length(&n, v));
  assert_int_equal(n, 3);
  CT_OK_OR_FAIL(ct_value_get(&e, v, 2));
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, e));
  assert_int_equal(ct_tensor_dtype(t), CT_INT64);
  ct_tensor_free(t);
  ct_value_free(e);
  ct_value_free(v);
  /* tuple with a transposed view */
  CT_OK_OR_FAIL(ct_pickle_load(&v, model_path("tensor_tuple", ".pt")));
  assert_int_equal(ct_value_tag(v), CT_VALUE_TUPLE);
  CT_OK_OR_FAIL(ct_value_get(&e, v, 1));
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, e));
  assert_int_equal(ct_tensor_sizes(t)[0], 4);
  assert_int_equal(ct_tensor_is_contiguous(t), 0);
  ct_tensor_free(t);
  ct_value_free(e);
  ct_value_free(v);
  /* A pickle is not a module; a module is not a pickle of data. */
  ct_module *m = NULL;
  CT_EXPECT_ERROR(ct_module_load(&m, model_path("state_dict", ".pt"), CT_DEVICE_KEEP, -1),
                  CT_ERR_IO, "torch.save pickle");
  assert_null(m);
}

/* 8 threads run resnet18 at once; results equal the single-thread ones. */
struct targ {
  ct_module *m;
  const ct_value *x;
  const ct_value *want;
  int fails;
};
static void *resnet_thread(void *p) {
  struct targ *a = p;
  for (int i = 0; i < 3; ++i) {
    ct_value *out = NULL;
    const ct_value *args[1] = {a->x};
    if (ct_module_forward(&out, a->m, args, 1) != CT_OK) {
      a->fails++;
      continue;
    }
    ct_tensor *g = NULL, *w = NULL;
    int32_t eq = 0;
    ct_value_to_tensor(&g, out);
    ct_value_to_tensor(&w, a->want);
    if (ct_tensor_equal(&eq, g, w) != CT_OK || !eq) a->fails++;
    ct_tensor_free(g);
    ct_tensor_free(w);
    ct_value_free(out);
  }
  return NULL;
}

static void test_resnet_threads(void **state) {
  (void)state;
  if (access(model_path("resnet18", ".pt"), R_OK) != 0) skip();
  ct_module *m = load_model("resnet18");
  ct_value *io = load_io("resnet18"), *inputs = io_get(io, "inputs"), *x = NULL, *ref = NULL;
  CT_OK_OR_FAIL(ct_value_get(&x, inputs, 0));
  const ct_value *a[1] = {x};
  CT_OK_OR_FAIL(ct_module_forward(&ref, m, a, 1));
  struct targ args[8];
  pthread_t th[8];
  for (int i = 0; i < 8; ++i) {
    args[i].m = m, args[i].x = x, args[i].want = ref, args[i].fails = 0;
    assert_int_equal(pthread_create(&th[i], NULL, resnet_thread, &args[i]), 0);
  }
  for (int i = 0; i < 8; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < 8; ++i) assert_int_equal(args[i].fails, 0);
  ct_value_free(ref);
  ct_value_free(x);
  ct_value_free(inputs);
  ct_value_free(io);
  ct_module_free(m);
}

/* A module built in C, saved for tests/models/check_c_module.py (Python's
 * torch.jit.load must read it and reproduce the output). */
static void test_c_module_for_python(void **state) {
  (void)state;
  ct_module *m = NULL;
  CT_OK_OR_FAIL(ct_module_new(&m, "CModule"));
  ct_tensor *w = NULL, *x = NULL;
  int64_t ws[2] = {3, 2}, xs[2] = {4, 3};
  CT_OK_OR_FAIL(ct_manual_seed(3));
  CT_OK_OR_FAIL(ct_tensor_randn(&w, ws, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_tensor_randn(&x, xs, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_module_register_parameter(m, "weight", w, 1));
  CT_OK_OR_FAIL(ct_module_define(m,
                                 "def forward(self, x, k: int = 2):\n"
                                 "    return torch.relu(torch.matmul(x, self.weight)) * k\n"));
  ct_value *xv = NULL, *out = NULL, *inputs = NULL, *io = NULL, *kin = NULL, *kout = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&xv, x));
  const ct_value *args[1] = {xv};
  CT_OK_OR_FAIL(ct_module_forward(&out, m, args, 1));
  CT_OK_OR_FAIL(ct_value_list(&inputs, args, 1));
  CT_OK_OR_FAIL(ct_value_from_string(&kin, "inputs", 6));
  CT_OK_OR_FAIL(ct_value_from_string(&kout, "output", 6));
  const ct_value *keys[2] = {kin, kout}, *vals[2] = {inputs, out};
  CT_OK_OR_FAIL(ct_value_dict(&io, keys, vals, 2));
  CT_OK_OR_FAIL(ct_module_save(m, model_path("c_module", ".pt"), NULL));
  CT_OK_OR_FAIL(ct_pickle_save(io, model_path("c_module", "_io.pt")));
  /* What was saved loads back here and gives the same output (Python's
   * torch.jit.load reads it in models.check_c_module, which needs this test). */
  ct_module *back = NULL;
  ct_value *again = NULL;
  CT_OK_OR_FAIL(ct_module_load(&back, model_path("c_module", ".pt"), CT_DEVICE_CPU, -1));
  CT_OK_OR_FAIL(ct_module_forward(&again, back, args, 1));
  ct_tensor *t1 = NULL, *t2 = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&t1, out));
  CT_OK_OR_FAIL(ct_value_to_tensor(&t2, again));
  int32_t same = 0;
  CT_OK_OR_FAIL(ct_tensor_equal(&same, t1, t2));
  assert_int_equal(same, 1);
  ct_tensor_free(t1);
  ct_tensor_free(t2);
  ct_value_free(again);
  ct_module_free(back);
  ct_value_free(io);
  ct_value_free(kin);
  ct_value_free(kout);
  ct_value_free(inputs);
  ct_value_free(out);
  ct_value_free(xv);
  ct_tensor_free(w);
  ct_tensor_free(x);
  ct_module_free(m);
}

int main(void) {
  const char *d = test_models_dir();
  if (!d) {
    fprintf(stderr, "CTORCH_TEST_MODELS not set; skipping\n");
    return 77;
  }
  snprintf(g_dir, sizeof g_dir, "%s", d);
  if (access(model_path("gate", ".pt"), R_OK) != 0) {
    fprintf(stderr, "no models in %s (run tests/models/make_models.py); skipping\n", g_dir);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resnet18),       cmocka_unit_test(test_gate),
      cmocka_unit_test(test_lstm),           cmocka_unit_test(test_containers),
      cmocka_unit_test(test_multi),          cmocka_unit_test(test_convbn),
      cmocka_unit_test(test_dtypes),         cmocka_unit_test(test_noncontig),
      cmocka_unit_test(test_extra_files),    cmocka_unit_test(test_pickles),
      cmocka_unit_test(test_resnet_threads), cmocka_unit_test(test_c_module_for_python),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
