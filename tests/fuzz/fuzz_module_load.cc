// ct_module_load_buffer on arbitrary bytes, then what a user reads first.
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ct_module *m = nullptr;
  ct_status s = ct_module_load_buffer(&m, data, size, CT_DEVICE_CPU, -1);
  check_clean(s);
  if (s != CT_OK) return 0;
  ct_value *v = nullptr;
  if (ct_module_named_parameters(&v, m, 1) == CT_OK) ct_value_free(v);
  if (ct_module_methods(&v, m) == CT_OK) ct_value_free(v);
  ct_module_free(m);
  return 0;
}
