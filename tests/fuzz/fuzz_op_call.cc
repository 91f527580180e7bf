// ct_op_call_name with an operator and arguments decoded from the bytes:
// tags pick None, bool, int, double, string, small tensors, int lists and
// tensor lists; any int may be extreme.
#include "fuzz_util.h"

#include <vector>

static const char *const kOps[] = {
    "aten::add",         "aten::mul",          "aten::cat",        "aten::reshape",
    "aten::view",        "aten::index_select", "aten::sum",        "aten::matmul",
    "aten::zeros",       "aten::slice",        "aten::narrow",     "aten::expand",
    "aten::as_strided",  "aten::unsqueeze",    "aten::transpose",  "aten::select",
    "aten::gather",      "aten::conv1d",       "aten::max_pool1d", "aten::repeat",
    "aten::flatten",     "aten::permute",      "aten::squeeze",    "aten::to",
    "aten::linspace",    "aten::arange",       "aten::full",       "aten::index_put_",
    "aten::masked_fill", "aten::topk",         "aten::sort",       "aten::split",
    "aten::empty",       "aten::softmax",      "aten::embedding",  "aten::scatter",
};

static int64_t any_int(Bytes &in) {
  uint8_t k = in.get<uint8_t>();
  switch (k & 3) {
    case 0: return (int8_t)in.get<uint8_t>() % 5;
    case 1: return in.get<int64_t>();
    case 2: return (k & 4) ? INT64_MAX : INT64_MIN;
    default: return (int8_t)in.get<uint8_t>();
  }
}

static ct_value *decode(Bytes &in, int depth) {
  ct_value *v = nullptr;
  uint8_t tag = in.get<uint8_t>() % 8;
  switch (tag) {
    case 0: ct_value_none(&v); break;
    case 1: ct_value_from_bool(&v, in.get<uint8_t>() & 1); break;
    case 2: ct_value_from_int(&v, any_int(in)); break;
    case 3: ct_value_from_double(&v, in.get<double>()); break;
    case 4: {
      std::string s = in.str(16);
      ct_value_from_string(&v, s.data(), s.size());
      break;
    }
    case 5: {  // a small float or int tensor, up to 3-d, at most 64 elements
      int64_t sizes[3];
      size_t nd = in.get<uint8_t>() % 4;
      int64_t numel = 1;
      for (size_t i = 0; i < nd; ++i) numel *= (sizes[i] = in.get<uint8_t>() % 5);
      std::vector<double> vals(numel > 0 ? numel : 1);
      for (auto &x : vals) x = (int8_t)in.get<uint8_t>();
      ct_tensor *t = nullptr;
      int32_t dt = (in.get<uint8_t>() & 1) ? CT_FLOAT64 : CT_INT64;
      std::vector<int64_t> ivals(vals.begin(), vals.end());
      const void *p = dt == CT_FLOAT64 ? (const void *)vals.data() : (const void *)ivals.data();
      if (ct_tensor_from_data(&t, p, sizes, nd, dt, CT_DEVICE_CPU, -1) == CT_OK) {
        ct_value_from_tensor(&v, t);
        ct_tensor_free(t);
      }
      break;
    }
    case 6: {
      int64_t items[6];
      size_t n = in.get<uint8_t>() % 7;
      for (size_t i = 0; i < n; ++i) items[i] = any_int(in);
      ct_value_int_list(&v, items, n);
      break;
    }
    default: {
      if (depth > 1) {
        ct_value_none(&v);
        break;
      }
      size_t n = in.get<uint8_t>() % 4;
      std::vector<ct_value *> items;
      for (size_t i = 0; i < n; ++i)
        if (ct_value *x = decode(in, depth + 1)) items.push_back(x);
      ct_value_list(&v, items.data(), items.size());
      for (ct_value *x : items) ct_value_free(x);
    }
  }
  return v;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Bytes in{data, size};
  const char *op = kOps[in.get<uint8_t>() % (sizeof kOps / sizeof kOps[0])];
  std::vector<ct_value *> args;
  size_t n = in.get<uint8_t>() % 6;
  for (size_t i = 0; i < n; ++i)
    if (ct_value *v = decode(in, 0)) args.push_back(v);
  ct_value *out = nullptr;
  ct_status s = ct_op_call_name(&out, op, args.data(), args.size(), nullptr, nullptr, 0);
  check_clean(s);
  if (s == CT_OK) {
    char *repr = nullptr;
    if (ct_value_to_repr(&repr, out) == CT_OK) ct_free(repr);
    ct_value_free(out);
  }
  for (ct_value *v : args) ct_value_free(v);
  return 0;
}
