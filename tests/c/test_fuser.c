/* TorchScript CPU fusion switch (ct_cpu_fuser_set_enabled / CTORCH_CPU_FUSER): off by
 * default on LibTorch 2.x, whose NNC/LLVM code generator can hang (Debian 13's
 * LibTorch 2.6); a fusable scripted function then runs to the end. */
#include "test_util.h"

#include <math.h>
#include <sys/wait.h>

static const char *self_path;

/* Elementwise chains: the tensorexpr fuser groups these once the profiling
 * executor has seen shapes (after two runs). */
static const char *FUSABLE_SRC =
    "def f(x, y):\n"
    "    a = x * y + 1.0\n"
    "    b = torch.sigmoid(a) * torch.tanh(x - y)\n"
    "    return b * b + a\n";

static double expected_f(double x, double y) {
  double a = x * y + 1.0;
  double b = 1.0 / (1.0 + exp(-a)) * tanh(x - y);
  return b * b + a;
}

static int torch_major(void) { return atoi(ct_torch_version()); }

static void test_default_is_off(void **state) {
  (void)state;
  /* Off after load on LibTorch 2.x; Debian's 1.13 leaves it off by default. */
  assert_int_equal(ct_cpu_fuser_is_enabled(), 0);
}

static void run_fusable(int times) {
  ct_script *s = NULL;
  CT_OK_OR_FAIL(ct_script_compile(&s, FUSABLE_SRC));
  float xd[6] = {-1.5f, -0.5f, 0.0f, 0.25f, 1.0f, 2.0f};
  float yd[6] = {0.5f, 1.5f, -2.0f, 0.75f, -1.0f, 0.125f};
  int64_t sizes[2] = {2, 3};
  ct_tensor *x = test_tensor_f32(xd, sizes, 2), *y = test_tensor_f32(yd, sizes, 2);
  ct_value *args[2] = {NULL, NULL};
  CT_OK_OR_FAIL(ct_value_from_tensor(&args[0], x));
  CT_OK_OR_FAIL(ct_value_from_tensor(&args[1], y));
  for (int k = 0; k < times; ++k) {
    ct_value *out = NULL;
    CT_OK_OR_FAIL(ct_script_call(&out, s, "f", (const ct_value *const *)args, 2, NULL, NULL, 0));
    ct_tensor *r = NULL;
    CT_OK_OR_FAIL(ct_value_to_tensor(&r, out));
    assert_int_equal(ct_tensor_numel(r), 6);
    const float *p = (const float *)ct_tensor_data_ptr(r);
    for (int i = 0; i < 6; ++i)
      if (fabs(p[i] - expected_f(xd[i], yd[i])) > 1e-5)
        fail_msg("run %d element %d: %f != %f", k, i, p[i], expected_f(xd[i], yd[i]));
    ct_tensor_free(r);
    ct_value_free(out);
  }
  ct_value_free(args[0]);
  ct_value_free(args[1]);
  ct_tensor_free(x);
  ct_tensor_free(y);
  ct_script_free(s);
}

/* Without PYTORCH_TENSOREXPR=0 (the leg never sets it): runs past the
 * profiling runs into the optimized graph, where the fuser would hang. */
static void test_fusable_function_runs(void **state) {
  (void)state;
  assert_null(getenv("PYTORCH_TENSOREXPR"));
  run_fusable(6);
}

static void test_switch(void **state) {
  (void)state;
  CT_OK_OR_FAIL(ct_cpu_fuser_set_enabled(0));
  assert_int_equal(ct_cpu_fuser_is_enabled(), 0);
  ct_status st = ct_cpu_fuser_set_enabled(1);
  if (st == CT_OK) {
    /* A LibTorch with an LLVM backend: the switch works both ways. */
    assert_int_equal(ct_cpu_fuser_is_enabled(), 1);
    CT_OK_OR_FAIL(ct_cpu_fuser_set_enabled(0));
    assert_int_equal(ct_cpu_fuser_is_enabled(), 0);
  } else {
    assert_int_equal(st, CT_ERR_NOT_SUPPORTED);
    assert_non_null(strstr(ct_last_error(), "no TorchScript CPU fusion backend"));
    assert_non_null(strstr(ct_last_error(), ct_torch_version()));
    assert_int_equal(ct_cpu_fuser_is_enabled(), 0);
  }
  if (torch_major() >= 2)
    print_message("CPU fusion backend present: %s\n", st == CT_OK ? "yes" : "no");
}

/* CTORCH_CPU_FUSER=1 turns fusion on where LibTorch has a backend, =0 off;
 * checked in child processes, since the variable is read at load. */
static void test_env_switch(void **state) {
  (void)state;
  int has_backend = ct_cpu_fuser_set_enabled(1) == CT_OK;
  CT_OK_OR_FAIL(ct_cpu_fuser_set_enabled(0));
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "CTORCH_CPU_FUSER=1 '%s' --print-fuser", self_path);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  int child = -1;
  assert_int_equal(fscanf(f, "%d", &child), 1);
  assert_int_equal(WEXITSTATUS(pclose(f)), 0);
  assert_int_equal(child, has_backend);
  snprintf(cmd, sizeof cmd, "CTORCH_CPU_FUSER=0 '%s' --print-fuser", self_path);
  f = popen(cmd, "r");
  assert_non_null(f);
  assert_int_equal(fscanf(f, "%d", &child), 1);
  assert_int_equal(WEXITSTATUS(pclose(f)), 0);
  assert_int_equal(child, 0);
}

int main(int argc, char **argv) {
  self_path = argv[0];
  if (argc > 1 && strcmp(argv[1], "--print-fuser") == 0) {
    printf("%d\n", (int)ct_cpu_fuser_is_enabled());
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_is_off),
      cmocka_unit_test(test_fusable_function_runs),
      cmocka_unit_test(test_switch),
      cmocka_unit_test(test_env_switch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
