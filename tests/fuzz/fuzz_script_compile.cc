// ct_script_compile on arbitrary source text, then the function list.
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
  std::string src(reinterpret_cast<const char *>(data), size);
  ct_script *s = nullptr;
  ct_status st = ct_script_compile(&s, src.c_str());
  check_clean(st);
  if (st != CT_OK) return 0;
  ct_value *v = nullptr;
  if (ct_script_functions(&v, s) == CT_OK) ct_value_free(v);
  ct_script_free(s);
  return 0;
}
