/* ct_package_*: AOTInductor packages (.pt2) made at test time by
 * tests/models/make_packages.py (CTORCH_TEST_PACKAGES), each output checked
 * against PyTorch's eager result; bad packages; on a LibTorch without
 * AOTInductor (1.13) every function's not-supported status and message. */
#include "test_util.h"

#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *packages_dir(void) {
  const char *d = getenv("CTORCH_TEST_PACKAGES");
  return (d && *d) ? d : NULL;
}

static int aoti_supported(void) {
  int major = 0, minor = 0;
  sscanf(ct_torch_version(), "%d.%d", &major, &minor);
  return major > 2 || (major == 2 && minor >= 6);
}

static const char *pkg_path(const char *file) {
  static char buf[4096];
  const char *d = packages_dir();
  snprintf(buf, sizeof buf, "%s/%s", d ? d : ".", file);
  return buf;
}

/* Skips unless this LibTorch has AOTInductor and CTORCH_TEST_PACKAGES is set
 * (CTest always sets it; the GPU script's direct runs do not). */
static void require_packages(void) {
  if (!aoti_supported() || !packages_dir()) skip();
  if (access(pkg_path("mlp.pt2"), R_OK) != 0)
    fail_msg("CTORCH_TEST_PACKAGES has no mlp.pt2 on LibTorch %s", ct_torch_version());
}

static ct_value *load_io(const char *name) {
  char file[256];
  snprintf(file, sizeof file, "%s_io.pt", name);
  ct_value *io = NULL;
  CT_OK_OR_FAIL(ct_pickle_load(&io, pkg_path(file)));
  return io;
}

static ct_value *io_get(const ct_value *io, const char *key) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_dict_get_str(&v, io, key));
  return v;
}

static ct_tensor *seq_tensor(const ct_value *seq, size_t i) {
  ct_value *v = NULL;
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_get(&v, seq, i));
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, v));
  ct_value_free(v);
  return t;
}

/* Same dtype, sizes and values (float tolerance 1e-5 abs + 1e-4 rel). */
static void assert_close(const ct_tensor *got, const ct_tensor *want, const char *what) {
  if (ct_tensor_dtype(got) != ct_tensor_dtype(want))
    fail_msg("%s: dtype %d != %d", what, ct_tensor_dtype(got), ct_tensor_dtype(want));
  int64_t nd = ct_tensor_ndim(got);
  if (nd != ct_tensor_ndim(want))
    fail_msg("%s: ndim %ld != %ld", what, (long)nd, (long)ct_tensor_ndim(want));
  for (int64_t d = 0; d < nd; ++d)
    if (ct_tensor_sizes(got)[d] != ct_tensor_sizes(want)[d])
      fail_msg("%s: size[%ld] %ld != %ld", what, (long)d, (long)ct_tensor_sizes(got)[d],
               (long)ct_tensor_sizes(want)[d]);
  ct_tensor *a = NULL, *b = NULL;
  CT_OK_OR_FAIL(ct_tensor_to(&a, got, CT_DEVICE_CPU, -1, CT_FLOAT64, 0, 1));
  CT_OK_OR_FAIL(ct_tensor_to(&b, want, CT_DEVICE_CPU, -1, CT_FLOAT64, 0, 1));
  ct_tensor *ac = NULL, *bc = NULL;
  CT_OK_OR_FAIL(ct_tensor_contiguous(&ac, a));
  CT_OK_OR_FAIL(ct_tensor_contiguous(&bc, b));
  const double *pa = (const double *)ct_tensor_data_ptr(ac),
               *pb = (const double *)ct_tensor_data_ptr(bc);
  int64_t n = ct_tensor_numel(ac);
  assert_true(n > 0);
  for (int64_t i = 0; i < n; ++i)
    if (fabs(pa[i] - pb[i]) > 1e-5 + 1e-4 * fabs(pb[i]))
      fail_msg("%s: element %ld: %g != %g", what, (long)i, pa[i], pb[i]);
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(ac);
  ct_tensor_free(bc);
}

/* Runs p on inputs (a sequence value) and checks each output against want. */
static void run_and_check(ct_package *p, const ct_value *inputs, const ct_value *want,
                          const char *what) {
  size_t n_in = 0, n_want = 0;
  CT_OK_OR_FAIL(ct_value_length(&n_in, inputs));
  CT_OK_OR_FAIL(ct_value_length(&n_want, want));
  ct_tensor *in[8] = {0}, *out[8] = {0};
  assert_true(n_in <= 8 && n_want <= 8);
  for (size_t i = 0; i < n_in; ++i) in[i] = seq_tensor(inputs, i);
  size_t n_ret = 99;
  CT_OK_OR_FAIL(ct_package_run(out, 8, &n_ret, p, (const ct_tensor *const *)in, n_in));
  assert_int_equal(n_ret, n_want);
  for (size_t i = 0; i < n_want; ++i) {
    ct_tensor *w = seq_tensor(want, i);
    char buf[128];
    snprintf(buf, sizeof buf, "%s output %zu", what, i);
    assert_close(out[i], w, buf);
    ct_tensor_free(w);
    ct_tensor_free(out[i]);
  }
  for (size_t i = 0; i < n_in; ++i) ct_tensor_free(in[i]);
}

static ct_package *load_pkg(const char *name) {
  char file[256];
  snprintf(file, sizeof file, "%s.pt2", name);
  ct_package *p = NULL;
  CT_OK_OR_FAIL(ct_package_load(&p, pkg_path(file), NULL));
  assert_non_null(p);
  return p;
}

static void check_model(const char *name) {
  ct_package *p = load_pkg(name);
  ct_value *io = load_io(name);
  ct_value *in = io_get(io, "inputs"), *want = io_get(io, "outputs");
  run_and_check(p, in, want, name);
  run_and_check(p, in, want, name); /* twice: the runner is reusable */
  ct_value_free(in);
  ct_value_free(want);
  ct_value_free(io);
  ct_package_free(p);
}

static void test_mlp(void **state) {
  (void)state;
  require_packages();
  check_model("mlp");
}

static void test_multi(void **state) {
  (void)state;
  require_packages();
  check_model("multi");
}

static void test_dynamic_batch(void **state) {
  (void)state;
  require_packages();
  ct_package *p = load_pkg("multi");
  ct_value *io = load_io("multi");
  ct_value *batches = io_get(io, "batches");
  size_t nb = 0;
  CT_OK_OR_FAIL(ct_value_length(&nb, batches));
  assert_int_equal(nb, 3);
  for (size_t b = 0; b < nb; ++b) {
    ct_value *pair = NULL, *in = NULL, *want = NULL;
    CT_OK_OR_FAIL(ct_value_get(&pair, batches, b));
    CT_OK_OR_FAIL(ct_value_get(&in, pair, 0));
    CT_OK_OR_FAIL(ct_value_get(&want, pair, 1));
    run_and_check(p, in, want, "multi (dynamic batch)");
    ct_value_free(pair);
    ct_value_free(in);
    ct_value_free(want);
  }
  ct_value_free(batches);
  ct_value_free(io);
  ct_package_free(p);
}

static void test_update_constants(void **state) {
  (void)state;
  require_packages();
  ct_package *p = load_pkg("mlp");
  ct_value *io = load_io("mlp");
  ct_value *in = io_get(io, "inputs");
  ct_value *before = io_get(io, "outputs"), *after = io_get(io, "new_outputs");
  run_and_check(p, in, before, "mlp before");

  /* Sorted dotted names: the list torch's own loader gives (make_packages.py
     records it; inductor may fold some state_dict entries, torch 2.6 folds
     fc2.bias, never the weights). */
  ct_value *names = NULL, *new_names = io_get(io, "new_names");
  CT_OK_OR_FAIL(ct_package_constant_names(&names, p));
  size_t n = 0, n_torch = 0;
  CT_OK_OR_FAIL(ct_value_length(&n, names));
  CT_OK_OR_FAIL(ct_value_length(&n_torch, new_names));
  assert_int_equal(n, n_torch);
  assert_true(n >= 3 && n <= 4);
  const char *given[4];
  for (size_t i = 0; i < n; ++i) {
    ct_value *s = NULL, *g = NULL;
    const char *str = NULL;
    CT_OK_OR_FAIL(ct_value_get(&s, names, i));
    CT_OK_OR_FAIL(ct_value_as_string(&str, NULL, s));
    CT_OK_OR_FAIL(ct_value_get(&g, new_names, i));
    CT_OK_OR_FAIL(ct_value_as_string(&given[i], NULL, g));
    assert_string_equal(str, given[i]);
    assert_true(strncmp(str, "fc1.", 4) == 0 || strncmp(str, "fc2.", 4) == 0);
    ct_value_free(s);
    ct_value_free(g);
  }
  ct_value_free(names);

  ct_value *new_t = io_get(io, "new_tensors");
  ct_tensor *t[4];
  for (size_t i = 0; i < n; ++i) t[i] = seq_tensor(new_t, i);
  const char *bad_names[2] = {"fc1.bias", "nope"};
  CT_EXPECT_ERROR(ct_package_update_constants(p, bad_names, (const ct_tensor *const *)t, 2),
                  CT_ERR_NOT_FOUND, "no constant 'nope'");
  const char *dup_names[2] = {"fc1.bias", "fc1.bias"};
  CT_EXPECT_ERROR(ct_package_update_constants(p, dup_names, (const ct_tensor *const *)t, 2),
                  CT_ERR_INVALID_ARGUMENT, "given twice");
  CT_EXPECT_ERROR(ct_package_update_constants(p, NULL, NULL, 1), CT_ERR_INVALID_ARGUMENT,
                  "must not be NULL");
  ct_tensor *d64 = NULL;
  CT_OK_OR_FAIL(ct_tensor_to(&d64, t[0], CT_DEVICE_KEEP, -1, CT_FLOAT64, 0, 0));
  const char *fc1_bias[1] = {"fc1.bias"};
  CT_EXPECT_ERROR(ct_package_update_constants(p, fc1_bias, (const ct_tensor *const *)&d64, 1),
                  CT_ERR_TYPE, "the package expects Float");
  ct_tensor_free(d64);
  run_and_check(p, in, before, "mlp after failed updates"); /* nothing changed */

  /* LibTorch 2.6's runtime cannot replace some constants and keep the others
     until every one has been replaced once (src/package.cpp). */
  if (strncmp(ct_torch_version(), "2.6", 3) == 0) {
    CT_EXPECT_ERROR(ct_package_update_constants(p, given, (const ct_tensor *const *)t, 1),
                    CT_ERR_NOT_SUPPORTED, "must replace all");
    run_and_check(p, in, before, "mlp after a refused partial update");
  }

  CT_OK_OR_FAIL(ct_package_update_constants(p, given, (const ct_tensor *const *)t, n));
  run_and_check(p, in, after, "mlp after the swap");
  for (size_t i = 0; i < n; ++i) ct_tensor_free(t[i]);
  run_and_check(p, in, after, "mlp after freeing the handles"); /* package keeps them */

  /* A partial update has an effect, and another one undoes it. */
  ct_tensor *orig0 = seq_tensor(new_t, 0), *zero0 = NULL;
  CT_OK_OR_FAIL(ct_tensor_zeros(&zero0, ct_tensor_sizes(orig0), (size_t)ct_tensor_ndim(orig0),
                                CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_package_update_constants(p, given, (const ct_tensor *const *)&zero0, 1));
  {
    ct_tensor *x = seq_tensor(in, 0), *y = NULL, *w = seq_tensor(after, 0);
    size_t n_ret = 0;
    CT_OK_OR_FAIL(ct_package_run(&y, 1, &n_ret, p, (const ct_tensor *const *)&x, 1));
    const float *a = ct_tensor_data_ptr(y), *b = ct_tensor_data_ptr(w);
    double diff = 0;
    for (int64_t i = 0; i < ct_tensor_numel(y); ++i) diff += fabs((double)a[i] - b[i]);
    assert_true(diff > 1e-3); /* the zeroed constant changed the result */
    ct_tensor_free(x);
    ct_tensor_free(y);
    ct_tensor_free(w);
  }
  CT_OK_OR_FAIL(ct_package_update_constants(p, given, (const ct_tensor *const *)&orig0, 1));
  run_and_check(p, in, after, "mlp after a partial update and its undo");
  ct_tensor_free(orig0);
  ct_tensor_free(zero0);
  ct_value_free(new_names);
  ct_value_free(new_t);
  ct_value_free(in);
  ct_value_free(before);
  ct_value_free(after);
  ct_value_free(io);
  ct_package_free(p);
}

static void test_metadata_spec_device(void **state) {
  (void)state;
  require_packages();
  ct_package *p = load_pkg("multi");
  ct_value *md = NULL, *dev = NULL;
  CT_OK_OR_FAIL(ct_package_metadata(&md, p));
  CT_OK_OR_FAIL(ct_value_dict_get_str(&dev, md, "AOTI_DEVICE_KEY"));
  const char *s = NULL;
  CT_OK_OR_FAIL(ct_value_as_string(&s, NULL, dev));
  assert_string_equal(s, "cpu");
  ct_value_free(dev);
  ct_value_free(md);

  ct_value *spec = NULL;
  CT_OK_OR_FAIL(ct_package_call_spec(&spec, p));
  size_t n = 0;
  CT_OK_OR_FAIL(ct_value_length(&n, spec));
  assert_int_equal(n, 2);
  ct_value *in_spec = NULL;
  CT_OK_OR_FAIL(ct_value_get(&in_spec, spec, 0));
  CT_OK_OR_FAIL(ct_value_as_string(&s, NULL, in_spec));
  assert_non_null(strstr(s, "builtins.tuple"));
  ct_value_free(in_spec);
  ct_value_free(spec);

  int32_t type = -5, index = -5;
  CT_OK_OR_FAIL(ct_package_device(&type, &index, p));
  assert_int_equal(type, CT_DEVICE_CPU);
  assert_int_equal(index, -1);

  ct_value *names = NULL;
  CT_OK_OR_FAIL(ct_package_constant_names(&names, p));
  CT_OK_OR_FAIL(ct_value_length(&n, names));
  assert_int_equal(n, 1); /* w */
  ct_value_free(names);
  ct_package_free(p);
}

static void test_run_errors(void **state) {
  (void)state;
  require_packages();
  ct_package *p = load_pkg("multi");
  ct_value *io = load_io("multi");
  ct_value *in = io_get(io, "inputs");
  ct_tensor *t[3] = {seq_tensor(in, 0), seq_tensor(in, 1), seq_tensor(in, 2)};
  ct_tensor *out[3] = {NULL, NULL, NULL};
  size_t n_ret = 42;
  CT_EXPECT_ERROR(ct_package_run(out, 3, &n_ret, p, (const ct_tensor *const *)t, 2),
                  CT_ERR_INVALID_ARGUMENT, "takes 3 input tensors, got 2");
  CT_EXPECT_ERROR(ct_package_run(out, 2, &n_ret, p, (const ct_tensor *const *)t, 3),
                  CT_ERR_INVALID_ARGUMENT, "returned 3 tensors, more than n_outputs (2)");
  assert_int_equal(n_ret, 42); /* untouched on failure */
  assert_null(out[0]);
  ct_tensor *with_null[3] = {t[0], NULL, t[2]};
  CT_EXPECT_ERROR(ct_package_run(out, 3, NULL, p, (const ct_tensor *const *)with_null, 3),
                  CT_ERR_INVALID_ARGUMENT, "inputs[1] is NULL");
  CT_EXPECT_ERROR(ct_package_run(out, 3, NULL, NULL, (const ct_tensor *const *)t, 3),
                  CT_ERR_INVALID_ARGUMENT, "'p' is NULL");
  CT_OK_OR_FAIL(ct_package_run(out, 3, NULL, p, (const ct_tensor *const *)t, 3));
  for (int i = 0; i < 3; ++i) {
    ct_tensor_free(out[i]);
    ct_tensor_free(t[i]);
  }
  ct_value_free(in);
  ct_value_free(io);
  ct_package_free(p);
}

static void test_load_buffer(void **state) {
  (void)state;
  require_packages();
  size_t len = 0;
  char *buf = test_read_file(pkg_path("mlp.pt2"), &len);
  ct_package *p = NULL;
  CT_OK_OR_FAIL(ct_package_load_buffer(&p, buf, len, NULL));
  free(buf); /* borrowed, not kept */
  ct_value *io = load_io("mlp");
  ct_value *in = io_get(io, "inputs"), *want = io_get(io, "outputs");
  run_and_check(p, in, want, "mlp from buffer");
  ct_value_free(in);
  ct_value_free(want);
  ct_value_free(io);
  ct_package_free(p);
  CT_EXPECT_ERROR(ct_package_load_buffer(&p, "PK", 2, NULL), CT_ERR_IO, "not a zip archive");
  CT_EXPECT_ERROR(ct_package_load_buffer(&p, NULL, 5, NULL), CT_ERR_INVALID_ARGUMENT,
                  "'data' is NULL");
}

static void test_bad_packages(void **state) {
  (void)state;
  require_packages();
  ct_package *p = NULL;
  CT_EXPECT_ERROR(ct_package_load(&p, pkg_path("does_not_exist.pt2"), NULL), CT_ERR_NOT_FOUND,
                  "does_not_exist.pt2");
  CT_EXPECT_ERROR(ct_package_load(&p, pkg_path("not_a_zip.pt2"), NULL), CT_ERR_IO,
                  "not a zip archive");
  CT_EXPECT_ERROR(ct_package_load(&p, pkg_path("wrong_contents.pt2"), NULL), CT_ERR_IO,
                  "not a loadable AOTInductor package");
  CT_EXPECT_ERROR(ct_package_load(&p, pkg_path("mlp.pt2"), "no_such_model"), CT_ERR_IO,
                  "model 'no_such_model'");
  /* A package for a device this CPU-only LibTorch cannot run. */
  if (!ct_cuda_is_compiled())
    CT_EXPECT_ERROR(ct_package_load(&p, pkg_path("cuda_device.pt2"), NULL), CT_ERR_NOT_SUPPORTED,
                    "cuda");
  CT_EXPECT_ERROR(ct_package_load(&p, NULL, NULL), CT_ERR_INVALID_ARGUMENT, "'path' is NULL");
  CT_EXPECT_ERROR(ct_package_load(NULL, pkg_path("mlp.pt2"), NULL), CT_ERR_INVALID_ARGUMENT,
                  "'out' is NULL");
  assert_null(p);
  ct_package_free(NULL);
}

/* LibTorch 1.13: every function exists and says which version it needs. */
static void test_not_supported(void **state) {
  (void)state;
  if (aoti_supported()) skip();
  const char *needle = "need LibTorch >= 2.6";
  ct_package *p = NULL;
  ct_value *v = NULL;
  CT_EXPECT_ERROR(ct_package_load(&p, "model.pt2", NULL), CT_ERR_NOT_SUPPORTED, needle);
  assert_non_null(strstr(ct_last_error(), ct_torch_version()));
  CT_EXPECT_ERROR(ct_package_load_buffer(&p, "PK", 2, "model"), CT_ERR_NOT_SUPPORTED, needle);
  assert_null(p);
  /* A handle can never exist here; the others still report the version when
   * given a (dummy) one. */
  ct_package *dummy = (ct_package *)&v;
  ct_tensor *out[1];
  CT_EXPECT_ERROR(ct_package_run(out, 1, NULL, dummy, NULL, 0), CT_ERR_NOT_SUPPORTED, needle);
  CT_EXPECT_ERROR(ct_package_metadata(&v, dummy), CT_ERR_NOT_SUPPORTED, needle);
  CT_EXPECT_ERROR(ct_package_call_spec(&v, dummy), CT_ERR_NOT_SUPPORTED, needle);
  CT_EXPECT_ERROR(ct_package_constant_names(&v, dummy), CT_ERR_NOT_SUPPORTED, needle);
  CT_EXPECT_ERROR(ct_package_update_constants(dummy, NULL, NULL, 0), CT_ERR_NOT_SUPPORTED, needle);
  int32_t a, b;
  CT_EXPECT_ERROR(ct_package_device(&a, &b, dummy), CT_ERR_NOT_SUPPORTED, needle);
  assert_null(v);
  ct_package_free(NULL);
}

/* On every LibTorch, a NULL argument is CT_ERR_INVALID_ARGUMENT (the header
 * says so): argument checks come before the version check. */
static void test_null_arguments(void **state) {
  (void)state;
  ct_package *p = NULL;
  ct_value *v = NULL;
  int32_t a, b;
  CT_EXPECT_ERROR(ct_package_load(NULL, "model.pt2", NULL), CT_ERR_INVALID_ARGUMENT, "'out' is NULL");
  CT_EXPECT_ERROR(ct_package_load(&p, NULL, NULL), CT_ERR_INVALID_ARGUMENT, "'path' is NULL");
  CT_EXPECT_ERROR(ct_package_metadata(&v, NULL), CT_ERR_INVALID_ARGUMENT, "'p' is NULL");
  CT_EXPECT_ERROR(ct_package_device(&a, &b, NULL), CT_ERR_INVALID_ARGUMENT, "'p' is NULL");
  assert_null(p);
  assert_null(v);
}

/* A FIFO would block the read forever: refused before opening. */
static void test_fifo_refused(void **state) {
  (void)state;
  char path[32];
  test_make_fifo(path);
  ct_package *p = NULL;
  ct_status st = ct_package_load(&p, path, NULL);
  assert_null(p);
  if (aoti_supported()) {
    assert_int_equal(st, CT_ERR_IO);
    assert_non_null(strstr(ct_last_error(), "not a regular file"));
  }
  unlink(path);
}

/* ---- Runners: one package handle serving several threads at once. */

static int torch_at_least(int want_major, int want_minor) {
  int major = 0, minor = 0;
  sscanf(ct_torch_version(), "%d.%d", &major, &minor);
  return major > want_major || (major == want_major && minor >= want_minor);
}

typedef struct {
  ct_package *p;
  ct_tensor *in;         /* shared input (read only) */
  const float *want;     /* the serial result */
  int64_t n;
  int iterations;
  ct_status status;      /* first failure */
  char msg[256];
  double max_diff;
} runner_job;

static void *run_many(void *arg) {
  runner_job *j = (runner_job *)arg;
  for (int i = 0; i < j->iterations; ++i) {
    ct_tensor *out = NULL;
    size_t n_ret = 0;
    ct_status s = ct_package_run(&out, 1, &n_ret, j->p, (const ct_tensor *const *)&j->in, 1);
    if (s != CT_OK || n_ret != 1) {
      j->status = s != CT_OK ? s : CT_ERR_INTERNAL;
      snprintf(j->msg, sizeof j->msg, "%s", s != CT_OK ? ct_last_error() : "not one output");
      return NULL;
    }
    const float *got = (const float *)ct_tensor_data_ptr(out);
    for (int64_t k = 0; k < j->n; ++k) {
      double d = fabs((double)got[k] - (double)j->want[k]);
      if (d > j->max_diff) j->max_diff = d;
    }
    ct_tensor_free(out);
  }
  return NULL;
}

static void test_runners(void **state) {
  (void)state;
  require_packages();
  ct_package *p = NULL;
  if (!torch_at_least(2, 7)) {
    CT_EXPECT_ERROR(ct_package_load_ext(&p, pkg_path("mlp.pt2"), NULL, 2, -1),
                    CT_ERR_NOT_SUPPORTED, "package loader has one runner");
    assert_null(p);
    CT_OK_OR_FAIL(ct_package_load_ext(&p, pkg_path("mlp.pt2"), NULL, 1, -1));
    ct_package_free(p);
    return;
  }
  CT_OK_OR_FAIL(ct_package_load_ext(&p, pkg_path("mlp.pt2"), NULL, 3, -1));
  size_t runners = 0;
  CT_OK_OR_FAIL(ct_package_num_runners(&runners, p));
  assert_int_equal(runners, 3);
  ct_value *io = load_io("mlp");
  ct_value *inputs = io_get(io, "inputs"), *want_seq = io_get(io, "outputs");
  ct_tensor *in = seq_tensor(inputs, 0), *want = seq_tensor(want_seq, 0);
  /* The serial result first, checked against PyTorch's eager one. */
  ct_tensor *serial = NULL;
  size_t n_ret = 0;
  CT_OK_OR_FAIL(ct_package_run(&serial, 1, &n_ret, p, (const ct_tensor *const *)&in, 1));
  assert_close(serial, want, "mlp, 3 runners");
  ct_tensor *serial_c = NULL;
  CT_OK_OR_FAIL(ct_tensor_contiguous(&serial_c, serial));
  assert_int_equal(ct_tensor_dtype(serial_c), CT_FLOAT32);
  /* Four threads at once on three runners, each 25 runs: all agree. */
  enum { kThreads = 4 };
  runner_job jobs[kThreads];
  pthread_t th[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    jobs[i] = (runner_job){p, in, (const float *)ct_tensor_data_ptr(serial_c),
                           ct_tensor_numel(serial_c), 25, CT_OK, "", 0.0};
    assert_int_equal(pthread_create(&th[i], NULL, run_many, &jobs[i]), 0);
  }
  for (int i = 0; i < kThreads; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < kThreads; ++i) {
    if (jobs[i].status != CT_OK) fail_msg("thread %d: %d %s", i, jobs[i].status, jobs[i].msg);
    if (jobs[i].max_diff > 1e-6) fail_msg("thread %d: differs by %g", i, jobs[i].max_diff);
  }
  /* A stream is for CUDA packages; NULL means torch's current one. */
  ct_tensor *out = NULL;
  CT_EXPECT_ERROR(ct_package_run_on_stream(&out, 1, NULL, p, (const ct_tensor *const *)&in, 1,
                                           (void *)0x1234),
                  CT_ERR_INVALID_ARGUMENT, "a stream is for CUDA packages");
  CT_OK_OR_FAIL(
      ct_package_run_on_stream(&out, 1, &n_ret, p, (const ct_tensor *const *)&in, 1, NULL));
  assert_close(out, want, "mlp on the current stream");
  ct_tensor_free(out);
  ct_tensor_free(serial_c);
  ct_tensor_free(serial);
  ct_tensor_free(want);
  ct_tensor_free(in);
  ct_value_free(want_seq);
  ct_value_free(inputs);
  ct_value_free(io);
  ct_package_free(p);
}

static void test_runner_arguments(void **state) {
  (void)state;
  ct_package *p = NULL;
  size_t n = 0;
  CT_EXPECT_ERROR(ct_package_load_ext(&p, "model.pt2", NULL, 0, -1), CT_ERR_INVALID_ARGUMENT,
                  "ct_package_load_ext: num_runners must be between 1 and 1024, not 0");
  CT_EXPECT_ERROR(ct_package_load_ext(&p, "model.pt2", NULL, 1025, -1), CT_ERR_INVALID_ARGUMENT,
                  "not 1025");
  CT_EXPECT_ERROR(ct_package_load_ext(&p, "model.pt2", NULL, 1, -2), CT_ERR_INVALID_ARGUMENT,
                  "ct_package_load_ext: device_index must be -1 or a device, not -2");
  CT_EXPECT_ERROR(ct_package_load_ext(NULL, "model.pt2", NULL, 1, -1), CT_ERR_INVALID_ARGUMENT,
                  "'out' is NULL");
  CT_EXPECT_ERROR(ct_package_num_runners(&n, NULL), CT_ERR_INVALID_ARGUMENT, "'p' is NULL");
  CT_EXPECT_ERROR(ct_package_run_on_stream(NULL, 0, NULL, NULL, NULL, 0, NULL),
                  CT_ERR_INVALID_ARGUMENT, "'p' is NULL");
  assert_null(p);
  if (!aoti_supported()) {
    CT_EXPECT_ERROR(ct_package_load_ext(&p, "model.pt2", NULL, 2, -1), CT_ERR_NOT_SUPPORTED,
                    "need LibTorch >= 2.6");
    ct_package *dummy = (ct_package *)&n;
    CT_EXPECT_ERROR(ct_package_num_runners(&n, dummy), CT_ERR_NOT_SUPPORTED,
                    "need LibTorch >= 2.6");
    ct_tensor *out[1];
    CT_EXPECT_ERROR(ct_package_run_on_stream(out, 1, NULL, dummy, NULL, 0, NULL),
                    CT_ERR_NOT_SUPPORTED, "need LibTorch >= 2.6");
  } else {
    CT_EXPECT_ERROR(ct_package_load_ext(&p, pkg_path("does_not_exist.pt2"), NULL, 1, -1),
                    CT_ERR_NOT_FOUND, "does_not_exist.pt2");
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mlp),
      cmocka_unit_test(test_multi),
      cmocka_unit_test(test_dynamic_batch),
      cmocka_unit_test(test_update_constants),
      cmocka_unit_test(test_metadata_spec_device),
      cmocka_unit_test(test_run_errors),
      cmocka_unit_test(test_load_buffer),
      cmocka_unit_test(test_bad_packages),
      cmocka_unit_test(test_not_supported),
      cmocka_unit_test(test_null_arguments),
      cmocka_unit_test(test_fifo_refused),
      cmocka_unit_test(test_runners),
      cmocka_unit_test(test_runner_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
