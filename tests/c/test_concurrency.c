/* Concurrency: forward on one module from 8 threads, op registrations while
 * other threads look up and call ops, the release queue fed from many
 * threads, per-thread errors and warnings. Also run under ThreadSanitizer
 * (tests/tsan/tsan.cmake), where any report in a ctorch frame fails. */
#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>

#define NTHREADS 8

static ct_module *g_module;
static ct_tensor *g_input;
static ct_tensor *g_expected;

static void *forward_worker(void *arg) {
  (void)arg;
  ct_value *in = NULL;
  if (ct_value_from_tensor(&in, g_input)) return (void *)1;
  for (int i = 0; i < 50; ++i) {
    ct_value *out = NULL;
    ct_tensor *t = NULL;
    int32_t eq = 0;
    if (ct_module_forward(&out, g_module, (const ct_value *const *)&in, 1) ||
        ct_value_to_tensor(&t, out) || ct_tensor_equal(&eq, t, g_expected) || !eq)
      return (void *)1;
    ct_tensor_free(t);
    ct_value_free(out);
  }
  ct_value_free(in);
  return NULL;
}

static void test_forward_from_8_threads(void **state) {
  (void)state;
  const int64_t s[2] = {4, 16}, ws[2] = {16, 16};
  ct_tensor *w = NULL;
  CT_OK_OR_FAIL(ct_tensor_randn(&w, ws, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_OK_OR_FAIL(ct_module_new(&g_module, "Conc"));
  CT_OK_OR_FAIL(ct_module_register_parameter(g_module, "w", w, 0));
  CT_OK_OR_FAIL(ct_module_define(g_module,
                                 "def forward(self, x):\n"
                                 "    return torch.relu(x.matmul(self.w) + 1.0)\n"));
  CT_OK_OR_FAIL(ct_tensor_randn(&g_input, s, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  ct_value *in = NULL, *out = NULL;
  CT_OK_OR_FAIL(ct_value_from_tensor(&in, g_input));
  CT_OK_OR_FAIL(ct_module_forward(&out, g_module, (const ct_value *const *)&in, 1));
  CT_OK_OR_FAIL(ct_value_to_tensor(&g_expected, out));
  ct_value_free(in);
  ct_value_free(out);
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; ++i) pthread_create(&th[i], NULL, forward_worker, NULL);
  for (int i = 0; i < NTHREADS; ++i) {
    void *r = NULL;
    pthread_join(th[i], &r);
    assert_null(r);
  }
  ct_tensor_free(g_expected);
  ct_tensor_free(g_input);
  ct_module_free(g_module);
  ct_tensor_free(w);
}

/* ---- registrations racing lookups and calls by name ------------------------ */
static atomic_int registering_done;

static ct_status identity_op(void *ctx, const ct_value *const *args, size_t n, ct_value **out) {
  (void)ctx;
  (void)n;
  return ct_value_ref(out, args[0]);
}

static void *register_worker(void *arg) {
  (void)arg;
  char schema[128];
  for (int i = 0; i < 200; ++i) {
    snprintf(schema, sizeof schema, "conc::op%d(Tensor x) -> Tensor", i);
    if (ct_op_register(schema, identity_op, NULL)) return (void *)1;
  }
  atomic_store(&registering_done, 1);
  return NULL;
}

static void *lookup_worker(void *arg) {
  (void)arg;
  ct_tensor *t = NULL;
  const int64_t s[1] = {3};
  if (ct_tensor_ones(&t, s, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0)) return (void *)1;
  ct_value *v = NULL;
  ct_value_from_tensor(&v, t);
  int rounds = 0;
  while (!atomic_load(&registering_done) || rounds < 20) {
    ct_op *op = NULL;
    ct_value *out = NULL;
    if (ct_op_find(&op, "aten::neg", "")) return (void *)1;
    ct_op_free(op);
    if (ct_op_call_name(&out, "aten::add.Tensor", (const ct_value *const *)(ct_value *[]){v, v}, 2,
                        NULL, NULL, 0))
      return (void *)1;
    ct_value_free(out);
    /* A lookup of an op that may or may not be registered yet. */
    if (ct_op_find(&op, "conc::op5", "") == CT_OK) ct_op_free(op);
    rounds++;
  }
  ct_value_free(v);
  ct_tensor_free(t);
  return NULL;
}

static void test_register_while_calling(void **state) {
  (void)state;
  pthread_t reg, look[4];
  atomic_store(&registering_done, 0);
  for (int i = 0; i < 4; ++i) pthread_create(&look[i], NULL, lookup_worker, NULL);
  pthread_create(&reg, NULL, register_worker, NULL);
  void *r = NULL;
  pthread_join(reg, &r);
  assert_null(r);
  for (int i = 0; i < 4; ++i) {
    pthread_join(look[i], &r);
    assert_null(r);
  }
  ct_op *op = NULL;
  CT_OK_OR_FAIL(ct_op_find(&op, "conc::op199", ""));
  ct_op_free(op);
}

/* ---- the release queue fed from many threads -------------------------------- */
static float blob[NTHREADS][4];

static void *queue_worker(void *arg) {
  intptr_t k = (intptr_t)arg;
  const int64_t s[1] = {4};
  for (int i = 0; i < 100; ++i) {
    ct_tensor *t = NULL, *c = NULL;
    if (ct_tensor_from_blob_queued(&t, blob[k], s, 1, NULL, CT_FLOAT32, CT_DEVICE_CPU, -1,
                                   (void *)(k * 1000 + i + 1)))
      return (void *)1;
    if (ct_tensor_ref(&c, t)) return (void *)1;
    ct_tensor_free(t);
    ct_tensor_free(c); /* the last free queues the ctx */
  }
  return NULL;
}

static void *queue_poller(void *arg) {
  size_t *total = arg;
  void *ctxs[16];
  while (*total < NTHREADS * 100) {
    size_t n = 0;
    if (ct_release_queue_poll(ctxs, 16, &n)) return (void *)1;
    *total += n;
  }
  return NULL;
}

static void test_release_queue_threads(void **state) {
  (void)state;
  size_t drained = 0;
  void *ctxs[64];
  size_t n = 0;
  do CT_OK_OR_FAIL(ct_release_queue_poll(ctxs, 64, &n));
  while (n > 0);
  pthread_t th[NTHREADS], poller;
  pthread_create(&poller, NULL, queue_poller, &drained);
  for (intptr_t i = 0; i < NTHREADS; ++i) pthread_create(&th[i], NULL, queue_worker, (void *)i);
  void *r = NULL;
  for (int i = 0; i < NTHREADS; ++i) {
    pthread_join(th[i], &r);
    assert_null(r);
  }
  pthread_join(poller, &r);
  assert_null(r);
  assert_int_equal(drained, NTHREADS * 100);
  assert_int_equal(ct_release_queue_length(), 0);
}

/* ---- per-thread errors and warnings ------------------------------------------- */
static void *error_worker(void *arg) {
  intptr_t k = (intptr_t)arg;
  for (int i = 0; i < 200; ++i) {
    int64_t bad = -(int64_t)(k + 1);
    ct_tensor *t = NULL;
    char needle[64];
    snprintf(needle, sizeof needle, "negative size %lld", (long long)bad);
    if (ct_tensor_zeros(&t, &bad, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0) != CT_ERR_INVALID_ARGUMENT ||
        !strstr(ct_last_error(), needle))
      return (void *)1;
    if (ct_set_error(CT_ERR_CALLBACK, needle) != CT_ERR_CALLBACK ||
        strcmp(ct_last_error(), needle) != 0)
      return (void *)1;
    ct_warnings_clear();
    if (ct_warnings_count() != 0) return (void *)1;
  }
  return NULL;
}

static void test_per_thread_errors(void **state) {
  (void)state;
  pthread_t th[NTHREADS];
  for (intptr_t i = 0; i < NTHREADS; ++i) pthread_create(&th[i], NULL, error_worker, (void *)i);
  for (int i = 0; i < NTHREADS; ++i) {
    void *r = NULL;
    pthread_join(th[i], &r);
    assert_null(r);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward_from_8_threads),
      cmocka_unit_test(test_register_while_calling),
      cmocka_unit_test(test_release_queue_threads),
      cmocka_unit_test(test_per_thread_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
