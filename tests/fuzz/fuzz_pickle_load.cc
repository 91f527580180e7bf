// ct_pickle_load_buffer on arbitrary bytes, then the loaded value printed.
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ct_value *v = nullptr;
  ct_status s = ct_pickle_load_buffer(&v, data, size);
  check_clean(s);
  if (s != CT_OK) return 0;
  char *repr = nullptr;
  if (ct_value_to_repr(&repr, v) == CT_OK) ct_free(repr);
  ct_value_free(v);
  return 0;
}
