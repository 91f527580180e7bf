// ct_op_register on arbitrary schema text; an accepted op is looked up,
// described and called once.
#include "fuzz_util.h"

static ct_status echo(void *, const ct_value *const *, size_t, ct_value **out) {
  return ct_value_none(out);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  std::string schema(reinterpret_cast<const char *>(data), size);
  ct_status st = ct_op_register(schema.c_str(), echo, nullptr);
  check_clean(st);
  if (st != CT_OK) return 0;
  ct_value *all = nullptr;  // listing every op walks the new schema too
  check_clean(ct_op_list(&all));
  ct_value_free(all);
  std::string name = schema.substr(0, schema.find('('));
  ct_op *op = nullptr;
  if (ct_op_find(&op, name.c_str(), nullptr) == CT_OK) {
    const char *s = nullptr;
    check_clean(ct_op_schema(&s, op, 0));
    size_t n = 0;
    if (ct_op_num_arguments(&n, op, 0) == CT_OK)
      for (size_t i = 0; i < n; ++i) {
        const char *an, *ty, *dv;
        int32_t kw;
        check_clean(ct_op_argument(&an, &ty, &dv, &kw, op, 0, i));
      }
    ct_value *out = nullptr;
    st = ct_op_call(&out, op, nullptr, 0, nullptr, nullptr, 0);
    check_clean(st);
    ct_value_free(out);
    ct_op_free(op);
  }
  return 0;
}
