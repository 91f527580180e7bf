/* ct_load_library: a model calling torchvision::nms fails to load until
 * torchvision's op library is loaded, then loads and matches PyTorch. */
#include "test_util.h"

static char g_model[4096], g_io[4096], g_lib[4096];

static int setup(void **state) {
  (void)state;
  const char *dir = test_models_dir();
  if (!dir) return 0;
  snprintf(g_model, sizeof g_model, "%s/nms.pt", dir);
  snprintf(g_io, sizeof g_io, "%s/nms_io.pt", dir);
  char p[4096];
  snprintf(p, sizeof p, "%s/torchvision_lib.txt", dir);
  FILE *f = fopen(p, "r");
  if (!f) return 0;
  size_t n = fread(g_lib, 1, sizeof g_lib - 1, f);
  g_lib[n] = '\0';
  fclose(f);
  return 0;
}

static void test_custom_op_library(void **state) {
  (void)state;
  /* No torchvision, or one that needs Python (PyPI's links libtorch_python):
   * reported as skipped. */
  if (!g_lib[0]) skip();
  ct_module *m = NULL;
  CT_EXPECT_ERROR(ct_module_load(&m, g_model, CT_DEVICE_KEEP, -1), CT_ERR_IO, "torchvision::nms");
  assert_null(m);
  CT_EXPECT_ERROR(ct_load_library("/nonexistent/libtorchvision.so"), CT_ERR_IO, "cannot load");
  CT_OK_OR_FAIL(ct_load_library(g_lib));
  CT_OK_OR_FAIL(ct_module_load(&m, g_model, CT_DEVICE_KEEP, -1));

  ct_value *io = NULL, *inputs = NULL, *want = NULL, *got = NULL, *a = NULL, *b = NULL;
  ct_tensor *tw = NULL, *tg = NULL;
  CT_OK_OR_FAIL(ct_pickle_load(&io, g_io));
  CT_OK_OR_FAIL(ct_value_dict_get_str(&inputs, io, "inputs"));
  CT_OK_OR_FAIL(ct_value_dict_get_str(&want, io, "output"));
  CT_OK_OR_FAIL(ct_value_get(&a, inputs, 0));
  CT_OK_OR_FAIL(ct_value_get(&b, inputs, 1));
  const ct_value *args[2] = {a, b};
  CT_OK_OR_FAIL(ct_module_forward(&got, m, args, 2));
  CT_OK_OR_FAIL(ct_value_to_tensor(&tg, got));
  CT_OK_OR_FAIL(ct_value_to_tensor(&tw, want));
  int32_t eq = 0;
  CT_OK_OR_FAIL(ct_tensor_equal(&eq, tg, tw));
  assert_int_equal(eq, 1);
  assert_int_equal(ct_tensor_numel(tg), 2); /* box 1 suppressed by box 0 */
  ct_value *vals[] = {io, inputs, want, got, a, b};
  for (size_t i = 0; i < 6; ++i) ct_value_free(vals[i]);
  ct_tensor_free(tw);
  ct_tensor_free(tg);
  ct_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_custom_op_library)};
  return cmocka_run_group_tests(tests, setup, NULL);
}
