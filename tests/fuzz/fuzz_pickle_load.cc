// ct_pickle_load_buffer on arbitrary bytes, then the loaded value printed.
//
// Structure-aware: two thirds of the mutations edit the pickle opcode by opcode
// (insert, delete or replace a whole opcode, or a short run of them, at an
// opcode boundary), so that the fuzzer explores programs of the pickle
// machine rather than byte noise; the rest are libFuzzer's own byte
// mutations (with tests/fuzz/pickle_load.dict). What loads is also given to
// an optimizer as its state_dict and as option values (feed_optimizer).
#include "fuzz_util.h"

#include <algorithm>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

namespace {

// Length of the opcode at p (with its argument), or 0 when the bytes left do
// not hold it or the opcode takes a text line (those end at the next '\n').
size_t opcode_length(const uint8_t *p, size_t left) {
  auto line = [&](size_t from) -> size_t {
    for (size_t i = from; i < left; ++i)
      if (p[i] == '\n') return i + 1;
    return 0;
  };
  auto fixed = [&](size_t n) -> size_t { return n <= left ? n : 0; };
  auto counted = [&](size_t head, size_t width) -> size_t {
    if (head + width > left) return 0;
    size_t n = 0;
    for (size_t i = 0; i < width; ++i) n |= static_cast<size_t>(p[head + i]) << (8 * i);
    return head + width + n <= left ? head + width + n : 0;
  };
  switch (p[0]) {
    case 'c': {  // GLOBAL module\nname\n
      size_t a = line(1);
      return a ? line(a) : 0;
    }
    case 'I': case 'L': case 'F': case 'S': case 'V': case 'P': case 'p': case 'g':
      return line(1);
    case 'K': case 'q': case 'h': case 0x80: return fixed(2);
    case 'M': return fixed(3);
    case 'J': case 'r': case 'j': return fixed(5);
    case 'G': case 0x95: return fixed(9);
    case 'U': case 'C': return counted(1, 1);
    case 'T': case 'X': case 'B': return counted(1, 4);
    case 0x8a: return counted(1, 1);  // LONG1
    case 0x8b: return counted(1, 4);  // LONG4
    case 0x8c: return counted(1, 1);  // SHORT_BINUNICODE
    case 0x8d: case 0x8e: case 0x96: return counted(1, 8);
    default: return 1;  // no argument (or unknown: treated as one byte)
  }
}

// Short opcode runs the mutator inserts: containers, items, calls.
struct Snippet {
  const char *bytes;
  size_t size;
};
#define SNIPPET(lit) {lit, sizeof(lit) - 1}
const Snippet kSnippets[] = {
    SNIPPET(")"), SNIPPET("]"), SNIPPET("}"), SNIPPET("("), SNIPPET("N"), SNIPPET("\x88"),
    SNIPPET("K\x01"), SNIPPET("K\x00"), SNIPPET("J\xff\xff\xff\xff"),
    SNIPPET("X\x01\x00\x00\x00a"), SNIPPET("\x85"), SNIPPET("\x86"), SNIPPET("\x87"),
    SNIPPET("t"), SNIPPET("l"), SNIPPET("d"), SNIPPET("a"), SNIPPET("e"), SNIPPET("s"),
    SNIPPET("u"), SNIPPET("R"), SNIPPET("b"), SNIPPET("\x81"), SNIPPET("0"), SNIPPET("2"),
    SNIPPET("q\x00"), SNIPPET("h\x00"), SNIPPET("Q"), SNIPPET(")a"), SNIPPET("]a"),
    SNIPPET("Na"), SNIPPET("K\x01a"), SNIPPET("(t"), SNIPPET("(l"), SNIPPET("(d"),
    SNIPPET("ccollections\nOrderedDict\n"), SNIPPET("ctorch._utils\n_rebuild_tensor_v2\n"),
    SNIPPET("ctorch\nFloatStorage\n"),
};
#undef SNIPPET

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::srand(seed);
  if (size == 0 || std::rand() % 3 == 0) return LLVMFuzzerMutate(data, size, max_size);
  std::vector<size_t> starts;  // opcode boundaries
  for (size_t at = 0; at < size;) {
    starts.push_back(at);
    size_t n = opcode_length(data + at, size - at);
    at += n ? n : 1;
  }
  starts.push_back(size);
  std::vector<uint8_t> out(data, data + size);
  size_t pick = starts[static_cast<size_t>(std::rand()) % starts.size()];
  switch (std::rand() % 3) {
    case 0: {  // insert a snippet before an opcode
      const Snippet &s =
          kSnippets[static_cast<size_t>(std::rand()) % (sizeof kSnippets / sizeof *kSnippets)];
      out.insert(out.begin() + static_cast<long>(pick), s.bytes, s.bytes + s.size);
      break;
    }
    case 1:  // delete the opcode that starts there
      if (pick < size)
        out.erase(out.begin() + static_cast<long>(pick),
                  out.begin() + static_cast<long>(pick + std::max<size_t>(
                                                           1, opcode_length(data + pick, size - pick))));
      break;
    default: {  // duplicate the opcode that starts there
      if (pick < size) {
        size_t len = std::max<size_t>(1, opcode_length(data + pick, size - pick));
        std::vector<uint8_t> op(data + pick, data + pick + len);
        out.insert(out.begin() + static_cast<long>(pick), op.begin(), op.end());
      }
    }
  }
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

namespace {

// What the reader decoded, given to an optimizer (the algorithm picked by
// the input's size) over one 2-element parameter with a gradient: as a whole
// state_dict (ct_optimizer_load_state_dict), then a dict's entries (the
// first 16, or those of its first "param_groups" group) as option values
// (ct_optimizer_set), then one step with whatever was accepted.
void feed_optimizer(const ct_value *v, size_t size) {
  static const char *const kAlgorithms[] = {"sgd", "adam", "adamw", "rmsprop", "adagrad"};
  double data[2] = {1.0, -2.0}, grad_data[2] = {0.5, 0.25};
  int64_t sizes[1] = {2};
  ct_tensor *p = nullptr, *g = nullptr;
  ct_optimizer *opt = nullptr;
  const ct_tensor *params[1];
  if (ct_tensor_from_data(&p, data, sizes, 1, CT_FLOAT64, CT_DEVICE_CPU, -1) != CT_OK ||
      ct_tensor_from_data(&g, grad_data, sizes, 1, CT_FLOAT64, CT_DEVICE_CPU, -1) != CT_OK ||
      ct_tensor_set_requires_grad(p, 1) != CT_OK || ct_tensor_set_grad(p, g) != CT_OK)
    __builtin_trap();
  params[0] = p;
  if (ct_optimizer_new(&opt, kAlgorithms[size % 5], params, 1, nullptr) != CT_OK) __builtin_trap();
  check_clean(ct_optimizer_load_state_dict(opt, v));
  ct_value *options = nullptr, *groups = nullptr;
  if (ct_value_dict_get_str(&groups, v, "param_groups") == CT_OK) ct_value_get(&options, groups, 0);
  const ct_value *dict = options ? options : v;
  size_t n = 0;
  if (ct_value_length(&n, dict) == CT_OK)
    for (size_t i = 0; i < n && i < 16; ++i) {
      ct_value *k = nullptr, *x = nullptr;
      if (ct_value_dict_item(&k, &x, dict, i) != CT_OK) break;
      const char *name = nullptr;
      size_t len = 0;
      if (ct_value_as_string(&name, &len, k) == CT_OK && std::strlen(name) == len)
        check_clean(ct_optimizer_set(opt, 0, name, x));
      ct_value_free(k);
      ct_value_free(x);
    }
  check_clean(ct_optimizer_step(opt));
  ct_value_free(options);
  ct_value_free(groups);
  ct_optimizer_free(opt);
  ct_tensor_free(g);
  ct_tensor_free(p);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ct_value *v = nullptr;
  ct_status s = ct_pickle_load_buffer(&v, data, size);
  check_clean(s);
  if (s != CT_OK) return 0;
  char *repr = nullptr;
  if (ct_value_to_repr(&repr, v) == CT_OK) ct_free(repr);
  feed_optimizer(v, size);
  ct_value_free(v);
  return 0;
}
