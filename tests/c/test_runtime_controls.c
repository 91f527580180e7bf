/* Backend flags, float32 matmul precision and random generators
 * (src/backends.cpp, src/generator.cpp): each flag reads back what was set;
 * generator states restore the same draws; every bad input is refused with
 * its status and message. The Python suite checks the same against PyTorch
 * (test_runtime_controls.py). */
#include "test_util.h"

/* Draws n floats from aten::rand with generator g (NULL: the default). */
static void draw(float *out, size_t n, const ct_generator *g) {
  const int64_t size[1] = {(int64_t)n};
  ct_value *sizes = NULL, *gen = NULL, *res = NULL;
  CT_OK_OR_FAIL(ct_value_int_list(&sizes, size, 1));
  if (g) {
    CT_OK_OR_FAIL(ct_value_from_generator(&gen, g));
  } else {
    CT_OK_OR_FAIL(ct_value_none(&gen));
  }
  const char *kw[1] = {"generator"};
  CT_OK_OR_FAIL(ct_op_call_name(&res, "aten::rand", (const ct_value *const *)&sizes, 1, kw,
                                (const ct_value *const *)&gen, 1));
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, res));
  assert_int_equal(ct_tensor_numel(t), (int64_t)n);
  memcpy(out, ct_tensor_data_ptr(t), n * sizeof(float));
  ct_tensor_free(t);
  ct_value_free(res);
  ct_value_free(gen);
  ct_value_free(sizes);
}

static void test_flags_read_back(void **state) {
  (void)state;
  for (int32_t flag = CT_FLAG_CUDNN_ENABLED; flag <= CT_FLAG_SDPA_CUDNN; ++flag) {
    int32_t was = -1, now = -1;
    ct_status s = ct_backend_flag(&was, flag);
    if (s == CT_ERR_NOT_SUPPORTED) {
      assert_non_null(strstr(ct_last_error(), "needs LibTorch >= "));
      CT_EXPECT_ERROR(ct_set_backend_flag(flag, 1), CT_ERR_NOT_SUPPORTED, "needs LibTorch >= ");
      continue;
    }
    CT_OK_OR_FAIL(s);
    assert_true(was == 0 || was == 1);
    CT_OK_OR_FAIL(ct_set_backend_flag(flag, !was));
    CT_OK_OR_FAIL(ct_backend_flag(&now, flag));
    if (now != !was) fail_msg("flag %d: set to %d, reads %d", flag, !was, now);
    CT_OK_OR_FAIL(ct_set_backend_flag(flag, was));
    CT_OK_OR_FAIL(ct_backend_flag(&now, flag));
    assert_int_equal(now, was);
  }
  /* Defaults every LibTorch has. */
  int32_t v = -1;
  CT_OK_OR_FAIL(ct_backend_flag(&v, CT_FLAG_CUDNN_ENABLED));
  assert_int_equal(v, 1);
  CT_OK_OR_FAIL(ct_backend_flag(&v, CT_FLAG_DETERMINISTIC_ALGORITHMS));
  assert_int_equal(v, 0);
  /* The two deterministic settings are one torch call: setting one keeps the other. */
  CT_OK_OR_FAIL(ct_set_backend_flag(CT_FLAG_DETERMINISTIC_WARN_ONLY, 1));
  CT_OK_OR_FAIL(ct_set_backend_flag(CT_FLAG_DETERMINISTIC_ALGORITHMS, 1));
  CT_OK_OR_FAIL(ct_backend_flag(&v, CT_FLAG_DETERMINISTIC_WARN_ONLY));
  assert_int_equal(v, 1);
  CT_OK_OR_FAIL(ct_set_backend_flag(CT_FLAG_DETERMINISTIC_WARN_ONLY, 0));
  CT_OK_OR_FAIL(ct_backend_flag(&v, CT_FLAG_DETERMINISTIC_ALGORITHMS));
  assert_int_equal(v, 1);
  CT_OK_OR_FAIL(ct_set_backend_flag(CT_FLAG_DETERMINISTIC_ALGORITHMS, 0));
}

static void test_flags_refused(void **state) {
  (void)state;
  int32_t v = 7;
  CT_EXPECT_ERROR(ct_backend_flag(&v, 14), CT_ERR_INVALID_ARGUMENT,
                  "ct_backend_flag: unknown flag 14");
  CT_EXPECT_ERROR(ct_backend_flag(&v, -1), CT_ERR_INVALID_ARGUMENT, "unknown flag -1");
  assert_int_equal(v, 7);
  CT_EXPECT_ERROR(ct_backend_flag(NULL, CT_FLAG_CUDNN_ENABLED), CT_ERR_INVALID_ARGUMENT,
                  "ct_backend_flag: ");
  CT_EXPECT_ERROR(ct_set_backend_flag(CT_FLAG_CUDNN_BENCHMARK, 2), CT_ERR_INVALID_ARGUMENT,
                  "ct_set_backend_flag: value must be 0 or 1, not 2");
  CT_EXPECT_ERROR(ct_set_backend_flag(99, 1), CT_ERR_INVALID_ARGUMENT, "unknown flag 99");
}

static void test_matmul_precision(void **state) {
  (void)state;
  const char *p = NULL;
  CT_OK_OR_FAIL(ct_float32_matmul_precision(&p));
  assert_string_equal(p, "highest");
  int32_t tf32 = -1;
  CT_OK_OR_FAIL(ct_backend_flag(&tf32, CT_FLAG_MATMUL_ALLOW_TF32));
  assert_int_equal(tf32, 0);
  CT_OK_OR_FAIL(ct_set_float32_matmul_precision("high"));
  CT_OK_OR_FAIL(ct_float32_matmul_precision(&p));
  assert_string_equal(p, "high");
  CT_OK_OR_FAIL(ct_backend_flag(&tf32, CT_FLAG_MATMUL_ALLOW_TF32));
  assert_int_equal(tf32, 1); /* as in torch: "high" allows TF32 */
  CT_OK_OR_FAIL(ct_set_float32_matmul_precision("medium"));
  CT_OK_OR_FAIL(ct_float32_matmul_precision(&p));
  assert_string_equal(p, "medium");
  CT_EXPECT_ERROR(ct_set_float32_matmul_precision("fast"), CT_ERR_INVALID_ARGUMENT,
                  "ct_set_float32_matmul_precision: precision must be \"highest\", \"high\" or "
                  "\"medium\", not \"fast\"");
  CT_EXPECT_ERROR(ct_set_float32_matmul_precision(NULL), CT_ERR_INVALID_ARGUMENT,
                  "ct_set_float32_matmul_precision: ");
  CT_EXPECT_ERROR(ct_float32_matmul_precision(NULL), CT_ERR_INVALID_ARGUMENT,
                  "ct_float32_matmul_precision: ");
  CT_OK_OR_FAIL(ct_float32_matmul_precision(&p));
  assert_string_equal(p, "medium"); /* refused sets change nothing */
  CT_OK_OR_FAIL(ct_set_float32_matmul_precision("highest"));
  CT_OK_OR_FAIL(ct_backend_flag(&tf32, CT_FLAG_MATMUL_ALLOW_TF32));
  assert_int_equal(tf32, 0);
}

static void test_generator_state_restores_draws(void **state) {
  (void)state;
  ct_generator *g = NULL;
  CT_OK_OR_FAIL(ct_generator_new(&g, CT_DEVICE_CPU, -1));
  uint64_t seed = 0;
  CT_OK_OR_FAIL(ct_generator_initial_seed(&seed, g));
  assert_true(seed == 67280421310721ULL); /* torch.Generator()'s default seed */
  CT_OK_OR_FAIL(ct_generator_manual_seed(g, 1234));
  CT_OK_OR_FAIL(ct_generator_initial_seed(&seed, g));
  assert_true(seed == 1234);
  ct_tensor *saved = NULL;
  CT_OK_OR_FAIL(ct_generator_state(&saved, g));
  assert_int_equal(ct_tensor_dtype(saved), CT_UINT8);
  assert_int_equal(ct_tensor_numel(saved), 5056); /* CPU generator: mt19937 + normal cache */
  float a[8], b[8], c[8];
  draw(a, 8, g);
  draw(b, 8, g);
  assert_true(memcmp(a, b, sizeof a) != 0); /* the state moved on */
  CT_OK_OR_FAIL(ct_generator_set_state(g, saved));
  draw(c, 8, g);
  assert_memory_equal(a, c, sizeof a);
  /* Reseeding gives the same stream again; another generator is independent. */
  CT_OK_OR_FAIL(ct_generator_manual_seed(g, 1234));
  draw(c, 8, g);
  assert_memory_equal(a, c, sizeof a);
  ct_generator *other = NULL;
  CT_OK_OR_FAIL(ct_generator_new(&other, CT_DEVICE_CPU, 0));
  CT_OK_OR_FAIL(ct_generator_manual_seed(other, 1234));
  CT_OK_OR_FAIL(ct_generator_manual_seed(g, 99));
  draw(c, 8, other);
  assert_memory_equal(a, c, sizeof a);
  /* seed(): a fresh seed, reported and in effect. */
  uint64_t fresh = 0, init = 1;
  CT_OK_OR_FAIL(ct_generator_seed(&fresh, g));
  CT_OK_OR_FAIL(ct_generator_initial_seed(&init, g));
  assert_true(fresh == init);
  int32_t dt = -1, di = 5;
  CT_OK_OR_FAIL(ct_generator_device(&dt, &di, g));
  assert_int_equal(dt, CT_DEVICE_CPU);
  assert_true(di == -1 || di == 0);
  ct_tensor_free(saved);
  ct_generator_free(other);
  ct_generator_free(g);
}

static void test_default_generator_is_torchs(void **state) {
  (void)state;
  ct_generator *d = NULL, *d2 = NULL;
  CT_OK_OR_FAIL(ct_generator_default(&d, CT_DEVICE_CPU, -1));
  CT_OK_OR_FAIL(ct_manual_seed(42));
  uint64_t seed = 0;
  CT_OK_OR_FAIL(ct_generator_initial_seed(&seed, d));
  assert_true(seed == 42);
  /* Ops without a generator draw from it: same numbers as through the handle. */
  float a[6], b[6];
  draw(a, 6, NULL);
  CT_OK_OR_FAIL(ct_generator_manual_seed(d, 42));
  draw(b, 6, d);
  assert_memory_equal(a, b, sizeof a);
  /* Freeing a handle leaves the default generator; a second handle sees it. */
  ct_generator_free(d);
  CT_OK_OR_FAIL(ct_generator_default(&d2, CT_DEVICE_CPU, 0));
  CT_OK_OR_FAIL(ct_generator_initial_seed(&seed, d2));
  assert_true(seed == 42);
  ct_generator_free(d2);
  ct_generator_free(NULL);
}

static void test_generator_refusals(void **state) {
  (void)state;
  ct_generator *g = (ct_generator *)0x1;
  CT_EXPECT_ERROR(ct_generator_new(&g, 99, -1), CT_ERR_INVALID_ARGUMENT,
                  "ct_generator_new: generators are for CT_DEVICE_CPU or CT_DEVICE_CUDA, not "
                  "device type 99");
  CT_EXPECT_ERROR(ct_generator_default(&g, CT_DEVICE_CPU, 1), CT_ERR_INVALID_ARGUMENT,
                  "ct_generator_default: the CPU has one generator (device_index -1 or 0, not 1)");
  assert_ptr_equal(g, (ct_generator *)0x1);
  if (!ct_cuda_is_available()) {
    CT_EXPECT_ERROR(ct_generator_new(&g, CT_DEVICE_CUDA, -1), CT_ERR_NOT_SUPPORTED,
                    "ct_generator_new: ");
    assert_true(strstr(ct_last_error(), "CUDA") != NULL);
  }
  CT_EXPECT_ERROR(ct_generator_new(NULL, CT_DEVICE_CPU, -1), CT_ERR_INVALID_ARGUMENT,
                  "ct_generator_new: ");
  CT_OK_OR_FAIL(ct_generator_new(&g, CT_DEVICE_CPU, -1));
  CT_OK_OR_FAIL(ct_generator_manual_seed(g, 5));
  float a[4], b[4];
  ct_tensor *saved = NULL;
  CT_OK_OR_FAIL(ct_generator_state(&saved, g));
  /* Wrong dtype, wrong size, NULL: refused, and the generator is unchanged. */
  ct_tensor *wrong = NULL;
  const int64_t n = 5056, short_n = 100;
  CT_OK_OR_FAIL(ct_tensor_zeros(&wrong, &n, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  CT_EXPECT_ERROR(ct_generator_set_state(g, wrong), CT_ERR_TYPE,
                  "ct_generator_set_state: a generator state is a uint8 tensor, not Float");
  ct_tensor_free(wrong);
  CT_OK_OR_FAIL(ct_tensor_zeros(&wrong, &short_n, 1, CT_UINT8, CT_DEVICE_CPU, -1, 0));
  CT_EXPECT_ERROR(ct_generator_set_state(g, wrong), CT_ERR_INVALID_ARGUMENT,
                  "ct_generator_set_state: ");
  ct_tensor_free(wrong);
  CT_EXPECT_ERROR(ct_generator_set_state(g, NULL), CT_ERR_INVALID_ARGUMENT,
                  "ct_generator_set_state: ");
  CT_EXPECT_ERROR(ct_generator_set_state(NULL, saved), CT_ERR_INVALID_ARGUMENT,
                  "ct_generator_set_state: ");
  draw(a, 4, g);
  CT_OK_OR_FAIL(ct_generator_set_state(g, saved));
  draw(b, 4, g);
  assert_memory_equal(a, b, sizeof a);
  uint64_t u = 0;
  CT_EXPECT_ERROR(ct_generator_seed(NULL, g), CT_ERR_INVALID_ARGUMENT, "ct_generator_seed: ");
  CT_EXPECT_ERROR(ct_generator_initial_seed(&u, NULL), CT_ERR_INVALID_ARGUMENT,
                  "ct_generator_initial_seed: ");
  CT_EXPECT_ERROR(ct_generator_manual_seed(NULL, 1), CT_ERR_INVALID_ARGUMENT,
                  "ct_generator_manual_seed: ");
  ct_value *v = NULL;
  CT_EXPECT_ERROR(ct_value_from_generator(&v, NULL), CT_ERR_INVALID_ARGUMENT,
                  "ct_value_from_generator: ");
  ct_tensor_free(saved);
  ct_generator_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flags_read_back),
      cmocka_unit_test(test_flags_refused),
      cmocka_unit_test(test_matmul_precision),
      cmocka_unit_test(test_generator_state_restores_draws),
      cmocka_unit_test(test_default_generator_is_torchs),
      cmocka_unit_test(test_generator_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
