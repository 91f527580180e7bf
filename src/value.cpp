// Values (c10::IValue behind a ct_value handle): constructors, accessors,
// containers, printing, and torch.save/torch.load interop (pickle).
#include "internal.h"

// Inside the guard lambdas __func__ is "operator()": every exported function
// names itself in ct_fn_, and the NULL check uses that name.

#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/storage_context.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

int32_t tag_of(const c10::IValue &v) {
  if (v.isNone())
    return CT_VALUE_NONE;
  if (v.isBool())
    return CT_VALUE_BOOL;
  if (v.isInt())
    return CT_VALUE_INT;
  if (v.isDouble())
    return CT_VALUE_DOUBLE;
  if (v.isString())
    return CT_VALUE_STRING;
  if (v.isTensor())
    return CT_VALUE_TENSOR;
  if (v.isDevice())
    return CT_VALUE_DEVICE;
  if (v.isList()) {
    if (v.isIntList())
      return CT_VALUE_INT_LIST;
    if (v.isDoubleList())
      return CT_VALUE_DOUBLE_LIST;
    if (v.isBoolList())
      return CT_VALUE_BOOL_LIST;
    if (v.isTensorList())
      return CT_VALUE_TENSOR_LIST;
    return CT_VALUE_LIST;
  }
  if (v.isTuple())
    return CT_VALUE_TUPLE;
  if (v.isGenericDict())
    return CT_VALUE_DICT;
  if (v.isObject())
    return CT_VALUE_OBJECT;
  return CT_VALUE_OTHER;
}

const char *tag_name(int32_t tag) {
  switch (tag) {
  case CT_VALUE_NONE:
    return "none";
  case CT_VALUE_BOOL:
    return "bool";
  case CT_VALUE_INT:
    return "int";
  case CT_VALUE_DOUBLE:
    return "double";
  case CT_VALUE_STRING:
    return "string";
  case CT_VALUE_TENSOR:
    return "tensor";
  case CT_VALUE_DEVICE:
    return "device";
  case CT_VALUE_LIST:
    return "list";
  case CT_VALUE_TUPLE:
    return "tuple";
  case CT_VALUE_DICT:
    return "dict";
  case CT_VALUE_INT_LIST:
    return "int list";
  case CT_VALUE_DOUBLE_LIST:
    return "double list";
  case CT_VALUE_BOOL_LIST:
    return "bool list";
  case CT_VALUE_TENSOR_LIST:
    return "tensor list";
  case CT_VALUE_OBJECT:
    return "object";
  default:
    return "other";
  }
}

std::string type_string(const c10::IValue &v) {
  try {
    return v.type()->annotation_str();
  } catch (...) {
    return v.tagKind();
  }
}

// "expected X, got <tag> (<type>)"
ct_status type_error(const char *func, const char *expected,
                     const c10::IValue &v) {
  return ct::set_error(CT_ERR_TYPE, "%s: expected %s, got %s (%s)", func,
                       expected, tag_name(tag_of(v)), type_string(v).c_str());
}

// Element type of a list or value type of a dict built from these types:
// their unified type (tensor types without shapes). Items that do not unify
// (e.g. a tensor and a string) give Any, which TorchScript also accepts.
c10::TypePtr unify_or_any(const std::vector<c10::TypePtr> &types) {
  if (types.empty())
    return c10::AnyType::get();
  std::ostringstream why;
  auto t = c10::unifyTypeList(types, why);
  if (!t)
    return c10::AnyType::get();
  return c10::unshapedType(*t);
}

c10::TypePtr value_type(const c10::IValue &v) {
  if (v.isTensor())
    return c10::TensorType::get();
  return c10::unshapedType(v.type());
}

// Reads a whole file. NOT_FOUND for a missing path, IO otherwise.
ct_status read_file(const char *func, const char *path,
                    std::vector<char> *out) {
  struct stat st;
  if (::stat(path, &st) != 0)
    return ct::set_error(errno == ENOENT ? CT_ERR_NOT_FOUND : CT_ERR_IO,
                         "%s: cannot open '%s': %s", func, path,
                         std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    return ct::set_error(CT_ERR_IO, "%s: '%s' is a directory", func, path);
  FILE *f = std::fopen(path, "rb");
  if (!f)
    return ct::set_error(CT_ERR_IO, "%s: cannot open '%s': %s", func, path,
                         std::strerror(errno));
  std::vector<char> buf;
  char chunk[1 << 16];
  size_t k;
  while ((k = std::fread(chunk, 1, sizeof chunk, f)) > 0)
    buf.insert(buf.end(), chunk, chunk + k);
  bool bad = std::ferror(f) != 0;
  std::fclose(f);
  if (bad)
    return ct::set_error(CT_ERR_IO, "%s: error reading '%s'", func, path);
  *out = std::move(buf);
  return CT_OK;
}

std::string first_line(const std::exception &e) {
  const char *w = e.what();
  if (auto *ce = dynamic_cast<const c10::Error *>(&e))
    w = ce->what_without_backtrace();
  std::string s(w ? w : "");
  return s;
}

// ---- torch.save files (zip archive: <name>/data.pkl + <name>/data/<key>) ----
//
// LibTorch's Unpickler understands only part of what Python's pickler writes
// for torch.save (protocol 2):
//  - APPEND ('a', one item appended to a list; Python uses it for every
//    one-element list) and SETITEM ('s', one key/value; every one-element
//    dict, e.g. in a state_dict's _metadata) are missing in LibTorch 1.13
//    (added in 2.x, pytorch PR #104027 and neighbours);
//  - collections.OrderedDict() becomes None (it expects it only as a tensor's
//    backward hooks), so SETITEMS into a state_dict and the BUILD that sets
//    its _metadata attribute fail.
// rewrite_pickle() walks the opcode stream once and rewrites exactly these
// spots into opcodes every Unpickler version handles:
//  - APPEND          -> MARK (before the item) ... APPENDS
//  - SETITEM         -> MARK (before the key) ... SETITEMS
//  - OrderedDict() R -> NEWOBJ NEWOBJ EMPTY_DICT   (drops callable and (),
//                       pushes {}; the Unpickler's NEWOBJ just pops one item)
//  - <that dict> <state> BUILD -> NEWOBJ           (drops the state, i.e.
//                       _metadata: a C++ dict has no attributes)
// The walker keeps, for every stack item, the byte offset where the opcodes
// that produced it start, so a MARK inserted there sits right below the item.
// Any opcode it does not know, or an inconsistent stream, leaves the bytes
// unchanged (the Unpickler then reports what it reports today).

// Stack item kinds the rewriter cares about.
enum class PkKind : uint8_t { Other, Mark, OrderedDictClass, EmptyTuple, Dict };

struct PkItem {
  size_t start; // offset of the first opcode that produced this item
  PkKind kind;
};

struct PkEdit {
  size_t pos;         // offset in the original stream
  size_t erase;       // bytes replaced at pos (0: pure insertion)
  std::string insert; // bytes written at pos
};

// Returns true and fills *out when the stream was rewritten; false when it
// needs no change or cannot be walked safely (then use the original bytes).
bool rewrite_pickle(const char *data, size_t n, std::vector<char> *out) {
  const auto *p = reinterpret_cast<const unsigned char *>(data);
  std::vector<PkItem> stack;
  std::unordered_map<uint32_t, PkKind> memo;
  std::vector<PkEdit> edits;
  size_t i = 0;

  auto need = [&](size_t k) { return k <= n - i; };
  auto le32 = [&](size_t at) -> uint32_t {
    return uint32_t(p[at]) | uint32_t(p[at + 1]) << 8 |
           uint32_t(p[at + 2]) << 16 | uint32_t(p[at + 3]) << 24;
  };
  // Pops k items (none of them a mark); returns the start of the deepest.
  auto pop_n = [&](size_t k, size_t *start) -> bool {
    if (stack.size() < k)
      return false;
    for (size_t j = stack.size() - k; j < stack.size(); ++j)
      if (stack[j].kind == PkKind::Mark)
        return false;
    if (k > 0)
      *start = stack[stack.size() - k].start;
    stack.resize(stack.size() - k);
    return true;
  };
  // Pops everything down to and including the topmost mark.
  auto pop_mark = [&](size_t *start) -> bool {
    while (!stack.empty() && stack.back().kind != PkKind::Mark)
      stack.pop_back();
    if (stack.empty())
      return false;
    *start = stack.back().start;
    stack.pop_back();
    return true;
  };
  auto top_kind = [&](size_t from_top) {
    return stack.size() > from_top ? stack[stack.size() - 1 - from_top].kind
                                   : PkKind::Mark;
  };

  while (i < n) {
    const size_t at = i;
    const unsigned char op = p[i++];
    size_t s = 0;
    switch (op) {
    case 0x80: // PROTO
      if (!need(1))
        return false;
      i += 1;
      break;
    case '.': // STOP
      if (stack.size() != 1 || stack[0].kind == PkKind::Mark)
        return false;
      i = n + 1; // done
      break;
    case '(': // MARK
      stack.push_back({at, PkKind::Mark});
      break;
    case ')': // EMPTY_TUPLE
      stack.push_back({at, PkKind::EmptyTuple});
      break;
    case ']':  // EMPTY_LIST
    case 'N':  // NONE
    case 0x88: // NEWTRUE
    case 0x89: // NEWFALSE
      stack.push_back({at, PkKind::Other});
      break;
    case '}': // EMPTY_DICT
      stack.push_back({at, PkKind::Dict});
      break;
    case 'K':   // BININT1
    case 'M':   // BININT2
    case 'J':   // BININT
    case 'G': { // BINFLOAT
      size_t k = op == 'K' ? 1 : op == 'M' ? 2 : op == 'J' ? 4 : 8;
      if (!need(k))
        return false;
      i += k;
      stack.push_back({at, PkKind::Other});
      break;
    }
    case 0x8a: // LONG1
    case 'U':  // SHORT_BINSTRING
    case 'C':  // SHORT_BINBYTES
    case 0x8c: // SHORT_BINUNICODE
      if (!need(1) || !need(1 + size_t(p[i])))
        return false;
      i += 1 + size_t(p[i]);
      stack.push_back({at, PkKind::Other});
      break;
    case 0x8b:  // LONG4
    case 'T':   // BINSTRING
    case 'B':   // BINBYTES
    case 'X': { // BINUNICODE
      if (!need(4))
        return false;
      size_t len = le32(i);
      if (!need(4 + len))
        return false;
      i += 4 + len;
      stack.push_back({at, PkKind::Other});
      break;
    }
    case 'c': { // GLOBAL "module\nname\n"
      const void *nl1 = std::memchr(p + i, '\n', n - i);
      if (!nl1)
        return false;
      size_t e1 = static_cast<const unsigned char *>(nl1) - p;
      const void *nl2 = std::memchr(p + e1 + 1, '\n', n - e1 - 1);
      if (!nl2)
        return false;
      size_t e2 = static_cast<const unsigned char *>(nl2) - p;
      std::string mod(data + i, e1 - i), name(data + e1 + 1, e2 - e1 - 1);
      i = e2 + 1;
      stack.push_back({at, mod == "collections" && name == "OrderedDict"
                               ? PkKind::OrderedDictClass
                               : PkKind::Other});
      break;
    }
    case 'q':   // BINPUT
    case 'r': { // LONG_BINPUT
      size_t k = op == 'q' ? 1 : 4;
      if (!need(k) || stack.empty() || stack.back().kind == PkKind::Mark)
        return false;
      memo[op == 'q' ? p[i] : le32(i)] = stack.back().kind;
      i += k;
      break;
    }
    case 'h':   // BINGET
    case 'j': { // LONG_BINGET
      size_t k = op == 'h' ? 1 : 4;
      if (!need(k))
        return false;
      auto it = memo.find(op == 'h' ? p[i] : le32(i));
      if (it == memo.end())
        return false;
      i += k;
      // A memoized dict may have been filled since: only the class and the
      // empty tuple keep their meaning.
      PkKind kind = it->second == PkKind::OrderedDictClass ||
                            it->second == PkKind::EmptyTuple
                        ? it->second
                        : PkKind::Other;
      stack.push_back({at, kind});
      break;
    }
    case 'R': { // REDUCE: callable args -> result
      bool odict = top_kind(1) == PkKind::OrderedDictClass &&
                   top_kind(0) == PkKind::EmptyTuple;
      if (!pop_n(2, &s))
        return false;
      if (odict)
        edits.push_back({at, 1, std::string("\x81\x81}", 3)});
      stack.push_back({s, odict ? PkKind::Dict : PkKind::Other});
      break;
    }
    case 0x81: // NEWOBJ: cls args -> obj
      if (!pop_n(2, &s))
        return false;
      stack.push_back({s, PkKind::Other});
      break;
    case 'b': { // BUILD: obj state -> obj
      bool odict = top_kind(1) == PkKind::Dict && top_kind(0) != PkKind::Mark;
      if (!pop_n(1, &s))
        return false;
      if (odict)
        edits.push_back({at, 1, std::string("\x81", 1)});
      if (stack.empty() || stack.back().kind == PkKind::Mark)
        return false;
      break;
    }
    case 'Q': // BINPERSID: pid -> obj
      if (!pop_n(1, &s))
        return false;
      stack.push_back({s, PkKind::Other});
      break;
    case 0x85: // TUPLE1
    case 0x86: // TUPLE2
    case 0x87: // TUPLE3
      if (!pop_n(size_t(op - 0x84), &s))
        return false;
      stack.push_back({s, PkKind::Other});
      break;
    case 't': // TUPLE
    case 'l': // LIST
      if (!pop_mark(&s))
        return false;
      stack.push_back({s, PkKind::Other});
      break;
    case 'd': // DICT
      if (!pop_mark(&s))
        return false;
      stack.push_back({s, PkKind::Dict});
      break;
    case 'a': { // APPEND: list item -> list
      if (!pop_n(1, &s))
        return false;
      if (stack.empty() || stack.back().kind == PkKind::Mark)
        return false;
      edits.push_back({s, 0, std::string("(", 1)});
      edits.push_back({at, 1, std::string("e", 1)});
      break;
    }
    case 'e': // APPENDS: list MARK items -> list
    case 'u': // SETITEMS: dict MARK k v ... -> dict
      if (!pop_mark(&s) || stack.empty() || stack.back().kind == PkKind::Mark)
        return false;
      break;
    case 's': // SETITEM: dict k v -> dict
      if (!pop_n(2, &s) || stack.empty() || stack.back().kind == PkKind::Mark)
        return false;
      edits.push_back({s, 0, std::string("(", 1)});
      edits.push_back({at, 1, std::string("u", 1)});
      break;
    default: // anything else: leave the stream alone
      return false;
    }
  }
  if (i != n + 1 || edits.empty())
    return false; // no STOP, or nothing to change

  // Insertions at an offset go before a replacement at the same offset.
  std::stable_sort(edits.begin(), edits.end(),
                   [](const PkEdit &a, const PkEdit &b) {
                     if (a.pos != b.pos)
                       return a.pos < b.pos;
                     return a.erase < b.erase;
                   });
  std::vector<char> res;
  res.reserve(n + edits.size() * 2);
  size_t copied = 0;
  for (const PkEdit &e : edits) {
    if (e.pos < copied)
      return false; // overlapping edits: cannot happen, but be safe
    res.insert(res.end(), data + copied, data + e.pos);
    res.insert(res.end(), e.insert.begin(), e.insert.end());
    copied = e.pos + e.erase;
  }
  res.insert(res.end(), data + copied, data + n);
  *out = std::move(res);
  return true;
}

// A borrowed byte range as PyTorchStreamReader input (reads past the end
// return fewer bytes; the reader then reports a corrupt archive).
class BorrowedReader final : public caffe2::serialize::ReadAdapterInterface {
public:
  BorrowedReader(const char *data, size_t size) : data_(data), size_(size) {}
  size_t size() const override { return size_; }
  size_t read(uint64_t pos, void *buf, size_t n,
              const char *what = "") const override {
    (void)what;
    if (pos >= size_)
      return 0;
    size_t k = std::min<uint64_t>(n, size_ - pos);
    std::memcpy(buf, data_ + pos, k);
    return k;
  }

private:
  const char *data_;
  size_t size_;
};

// Unpickles one pickle stream of the archive, reading tensor data from
// data/<key> records (what torch::jit::pickle_load does, plus shared
// storages).
c10::IValue unpickle_stream(caffe2::serialize::PyTorchStreamReader &reader,
                            const char *pkl, size_t size) {
  size_t pos = 0;
  auto read = [&](char *buf, size_t len) -> size_t {
    if (pos >= size)
      return 0;
    len = std::min(size - pos, len);
    std::memcpy(buf, pkl + pos, len);
    pos += len;
    return len;
  };
  auto read_record = [&](const std::string &name) -> at::DataPtr {
    return std::get<0>(reader.getRecord("data/" + name));
  };
  // The storage context makes tensors with one storage key (views) share one
  // storage, as Python's torch.load does; without it every view gets a copy.
  torch::jit::Unpickler unpickler(
      read, /*type_resolver=*/nullptr, /*obj_loader=*/nullptr, read_record,
      /*device=*/{}, /*use_storage_device=*/false,
      torch::jit::Unpickler::defaultTypeParser,
      std::make_shared<torch::jit::DeserializationStorageContext>());
  unpickler.set_version(reader.version());
  return unpickler.parse_ivalue();
}

// Unpickled dicts are Dict[Any, Any]. Give those whose keys are all strings
// (or all ints) that key type and the unified type of their values, e.g. a
// state_dict becomes Dict[str, Tensor] as in TorchScript. Lists keep their
// tags (what torch::jit::pickle_load gives).
void retag_dicts(const c10::IValue &root) {
  std::vector<c10::IValue> todo{root};
  std::unordered_set<const void *> seen;
  while (!todo.empty()) {
    c10::IValue v = std::move(todo.back());
    todo.pop_back();
    if (!(v.isGenericDict() || v.isList() || v.isTuple()))
      continue;
    if (!seen.insert(v.internalToPointer()).second)
      continue;
    if (v.isList()) {
      for (const c10::IValue &x : v.toListRef())
        todo.push_back(x);
    } else if (v.isTuple()) {
      for (const c10::IValue &x : v.toTupleRef().elements())
        todo.push_back(x);
    } else {
      auto d = v.toGenericDict();
      bool all_str = d.size() > 0, all_int = d.size() > 0;
      std::vector<c10::TypePtr> vtypes;
      vtypes.reserve(d.size());
      for (const auto &kv : d) {
        all_str = all_str && kv.key().isString();
        all_int = all_int && kv.key().isInt();
        vtypes.push_back(value_type(kv.value()));
        todo.push_back(kv.value());
      }
      if (d.keyType()->kind() == c10::AnyType::Kind && (all_str || all_int)) {
        c10::TypePtr kt = all_str ? c10::TypePtr(c10::StringType::get())
                                  : c10::TypePtr(c10::IntType::get());
        d.unsafeSetKeyType(kt);
        if (d.valueType()->kind() == c10::AnyType::Kind)
          d.unsafeSetValueType(unify_or_any(vtypes));
      }
    }
  }
}

ct_status unpickle(const char *func, const char *data, size_t size,
                   ct_value **out, const char *what) {
  std::string fixed_error;
  try {
    caffe2::serialize::PyTorchStreamReader reader(
        std::make_shared<BorrowedReader>(data, size));
    at::DataPtr pkl;
    size_t pkl_size = 0;
    std::tie(pkl, pkl_size) = reader.getRecord("data.pkl");
    const char *pkl_data = static_cast<const char *>(pkl.get());
    std::vector<char> fixed;
    c10::IValue v;
    bool done = false;
    if (rewrite_pickle(pkl_data, pkl_size, &fixed)) {
      try {
        v = unpickle_stream(reader, fixed.data(), fixed.size());
        done = true;
      } catch (const std::bad_alloc &) {
        throw;
      } catch (const std::exception &e) {
        // Never worse than before: retry with the original bytes below.
        fixed_error = first_line(e);
      }
    }
    if (!done)
      v = unpickle_stream(reader, pkl_data, pkl_size);
    retag_dicts(v);
    *out = ct::new_value(std::move(v));
    return CT_OK;
  } catch (const std::bad_alloc &) {
    throw;
  } catch (const std::exception &e) {
    // The rewritten stream got further than the original one.
    std::string msg = fixed_error.empty() ? first_line(e) : fixed_error;
    return ct::set_error(CT_ERR_IO,
                         "%s: %s is not a readable torch.save file\n%s", func,
                         what, msg.c_str());
  }
}

} // namespace

extern "C" {

void ct_value_free(ct_value *v) { delete v; }

int32_t ct_value_tag(const ct_value *v) { return v ? tag_of(v->v) : -1; }

ct_status ct_value_ref(ct_value **out, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    *out = ct::new_value(v->v);
    return CT_OK;
  });
}

ct_status ct_value_none(ct_value **out) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = ct::new_value(c10::IValue());
    return CT_OK;
  });
}

ct_status ct_value_from_bool(ct_value **out, int32_t b) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = ct::new_value(c10::IValue(b != 0));
    return CT_OK;
  });
}

ct_status ct_value_from_int(ct_value **out, int64_t i) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = ct::new_value(c10::IValue(i));
    return CT_OK;
  });
}

ct_status ct_value_from_double(ct_value **out, double d) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = ct::new_value(c10::IValue(d));
    return CT_OK;
  });
}

ct_status ct_value_from_string(ct_value **out, const char *s, size_t len) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_ARG(s != nullptr || len == 0,
                 "%s: argument 's' is NULL with len %zu", ct_fn_, len);
    *out = ct::new_value(c10::IValue(std::string(s ? s : "", len)));
    return CT_OK;
  });
}

ct_status ct_value_from_tensor(ct_value **out, const ct_tensor *t) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(t);
    *out = ct::new_value(c10::IValue(t->t));
    return CT_OK;
  });
}

ct_status ct_value_from_device(ct_value **out, int32_t device_type,
                               int32_t device_index) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    c10::Device d(c10::kCPU);
    ct_status st = ct::to_device(ct_fn_, device_type, device_index, &d);
    if (st != CT_OK)
      return st;
    *out = ct::new_value(c10::IValue(d));
    return CT_OK;
  });
}

// Element type: the unified type of the items (tensor shapes dropped; None
// with T gives Optional[T]). Items that do not unify give List[Any]. An empty
// list is List[Any], coerced to the schema's list type when passed to a
// method, function or op.
ct_status ct_value_list(ct_value **out, const ct_value *const *items,
                        size_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_ARG(items != nullptr || n == 0,
                 "%s: argument 'items' is NULL with n %zu", ct_fn_, n);
    std::vector<c10::TypePtr> types;
    types.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (!items[i])
        return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: items[%zu] is NULL",
                             ct_fn_, i);
      types.push_back(value_type(items[i]->v));
    }
    c10::impl::GenericList list(unify_or_any(types));
    list.reserve(n);
    for (size_t i = 0; i < n; ++i)
      list.push_back(items[i]->v);
    *out = ct::new_value(c10::IValue(std::move(list)));
    return CT_OK;
  });
}

ct_status ct_value_int_list(ct_value **out, const int64_t *items, size_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_ARG(items != nullptr || n == 0,
                 "%s: argument 'items' is NULL with n %zu", ct_fn_, n);
    c10::List<int64_t> l;
    l.reserve(n);
    for (size_t i = 0; i < n; ++i)
      l.push_back(items[i]);
    *out = ct::new_value(c10::IValue(std::move(l)));
    return CT_OK;
  });
}

ct_status ct_value_double_list(ct_value **out, const double *items, size_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_ARG(items != nullptr || n == 0,
                 "%s: argument 'items' is NULL with n %zu", ct_fn_, n);
    c10::List<double> l;
    l.reserve(n);
    for (size_t i = 0; i < n; ++i)
      l.push_back(items[i]);
    *out = ct::new_value(c10::IValue(std::move(l)));
    return CT_OK;
  });
}

ct_status ct_value_bool_list(ct_value **out, const int32_t *items, size_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_ARG(items != nullptr || n == 0,
                 "%s: argument 'items' is NULL with n %zu", ct_fn_, n);
    c10::List<bool> l;
    l.reserve(n);
    for (size_t i = 0; i < n; ++i)
      l.push_back(items[i] != 0);
    *out = ct::new_value(c10::IValue(std::move(l)));
    return CT_OK;
  });
}

ct_status ct_value_tensor_list(ct_value **out, const ct_tensor *const *items,
                               size_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_ARG(items != nullptr || n == 0,
                 "%s: argument 'items' is NULL with n %zu", ct_fn_, n);
    c10::List<at::Tensor> l;
    l.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (!items[i])
        return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: items[%zu] is NULL",
                             ct_fn_, i);
      l.push_back(items[i]->t);
    }
    *out = ct::new_value(c10::IValue(std::move(l)));
    return CT_OK;
  });
}

ct_status ct_value_tuple(ct_value **out, const ct_value *const *items,
                         size_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_ARG(items != nullptr || n == 0,
                 "%s: argument 'items' is NULL with n %zu", ct_fn_, n);
    std::vector<c10::IValue> elems;
    elems.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (!items[i])
        return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: items[%zu] is NULL",
                             ct_fn_, i);
      elems.push_back(items[i]->v);
    }
    *out = ct::new_value(
        c10::IValue(c10::ivalue::Tuple::create(std::move(elems))));
    return CT_OK;
  });
}

// Key type: str, int or Tensor (all keys the same kind). Value type: the
// unified type of the values, or Any when they do not unify (also for n == 0:
// an empty dict is Dict[str, Any]).
ct_status ct_value_dict(ct_value **out, const ct_value *const *keys,
                        const ct_value *const *values, size_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_ARG((keys != nullptr && values != nullptr) || n == 0,
                 "%s: argument 'keys' or 'values' is NULL with n %zu", ct_fn_,
                 n);
    c10::TypePtr key_type = c10::StringType::get();
    std::vector<c10::TypePtr> vtypes;
    vtypes.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (!keys[i] || !values[i])
        return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: keys[%zu] or values[%zu] is NULL", ct_fn_, i,
                             i);
      const c10::IValue &k = keys[i]->v;
      c10::TypePtr kt;
      if (k.isString())
        kt = c10::StringType::get();
      else if (k.isInt())
        kt = c10::IntType::get();
      else if (k.isTensor())
        kt = c10::TensorType::get();
      else
        return ct::set_error(CT_ERR_TYPE,
                             "%s: dict keys must be strings, ints or tensors; "
                             "keys[%zu] is %s (%s)",
                             ct_fn_, i, tag_name(tag_of(k)),
                             type_string(k).c_str());
      if (i == 0)
        key_type = kt;
      else if (kt->kind() != key_type->kind())
        return ct::set_error(CT_ERR_TYPE,
                             "%s: dict keys must all have one type: keys[0] is "
                             "%s, keys[%zu] is %s",
                             ct_fn_, key_type->annotation_str().c_str(), i,
                             kt->annotation_str().c_str());
      vtypes.push_back(value_type(values[i]->v));
    }
    c10::impl::GenericDict d(key_type, unify_or_any(vtypes));
    d.reserve(n);
    for (size_t i = 0; i < n; ++i)
      d.insert_or_assign(keys[i]->v, values[i]->v);
    *out = ct::new_value(c10::IValue(std::move(d)));
    return CT_OK;
  });
}

ct_status ct_value_to_bool(int32_t *out, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    if (!v->v.isBool())
      return type_error(ct_fn_, "bool", v->v);
    *out = v->v.toBool() ? 1 : 0;
    return CT_OK;
  });
}

ct_status ct_value_to_int(int64_t *out, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    if (!v->v.isInt())
      return type_error(ct_fn_, "int", v->v);
    *out = v->v.toInt();
    return CT_OK;
  });
}

ct_status ct_value_to_double(double *out, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    if (v->v.isDouble())
      *out = v->v.toDouble();
    else if (v->v.isInt())
      *out = static_cast<double>(v->v.toInt());
    else
      return type_error(ct_fn_, "double (or int)", v->v);
    return CT_OK;
  });
}

ct_status ct_value_to_string(const char **out, size_t *len, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    if (!v->v.isString())
      return type_error(ct_fn_, "string", v->v);
    const std::string &s = v->v.toStringRef();
    *out = s.c_str();
    if (len)
      *len = s.size();
    return CT_OK;
  });
}

ct_status ct_value_to_tensor(ct_tensor **out, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    if (!v->v.isTensor())
      return type_error(ct_fn_, "tensor", v->v);
    *out = ct::new_tensor(v->v.toTensor());
    return CT_OK;
  });
}

ct_status ct_value_to_device(int32_t *device_type, int32_t *device_index,
                             const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(device_type);
    CT_CHECK_NOT_NULL(device_index);
    CT_CHECK_NOT_NULL(v);
    if (!v->v.isDevice())
      return type_error(ct_fn_, "device", v->v);
    c10::Device d = v->v.toDevice();
    int32_t code = ct::device_type_code(d.type());
    if (code == 0)
      return ct::set_error(CT_ERR_NOT_SUPPORTED,
                           "%s: device '%s' has no ctorch device code", ct_fn_,
                           d.str().c_str());
    *device_type = code;
    *device_index = d.index();
    return CT_OK;
  });
}

ct_status ct_value_to_module(ct_module **out, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    if (!v->v.isObject() || !v->v.toObjectRef().type()->is_module())
      return type_error(ct_fn_, "a module object", v->v);
    *out = new ct_module{torch::jit::Module(v->v.toObject()), {}};
    return CT_OK;
  });
}

ct_status ct_value_from_module(ct_value **out, const ct_module *m) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(m);
    *out = ct::new_value(c10::IValue(m->m._ivalue()));
    return CT_OK;
  });
}

ct_status ct_value_len(size_t *out, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    const c10::IValue &x = v->v;
    if (x.isList())
      *out = x.toListRef().size();
    else if (x.isTuple())
      *out = x.toTupleRef().elements().size();
    else if (x.isGenericDict())
      *out = x.toGenericDict().size();
    else if (x.isString())
      *out = x.toStringRef().size();
    else
      return type_error(ct_fn_, "list, tuple, dict or string", x);
    return CT_OK;
  });
}

ct_status ct_value_get(ct_value **out, const ct_value *v, size_t i) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    const c10::IValue &x = v->v;
    if (x.isList()) {
      auto ref = x.toListRef();
      if (i >= ref.size())
        return ct::set_error(
            CT_ERR_INDEX, "%s: index %zu out of range for list of length %zu",
            ct_fn_, i, ref.size());
      *out = ct::new_value(ref[i]);
    } else if (x.isTuple()) {
      const auto &el = x.toTupleRef().elements();
      if (i >= el.size())
        return ct::set_error(
            CT_ERR_INDEX, "%s: index %zu out of range for tuple of length %zu",
            ct_fn_, i, el.size());
      *out = ct::new_value(el[i]);
    } else {
      return type_error(ct_fn_, "list or tuple", x);
    }
    return CT_OK;
  });
}

ct_status ct_value_dict_item(ct_value **key, ct_value **value,
                             const ct_value *v, size_t i) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(v);
    if (!v->v.isGenericDict())
      return type_error(ct_fn_, "dict", v->v);
    auto d = v->v.toGenericDict();
    if (i >= d.size())
      return ct::set_error(CT_ERR_INDEX,
                           "%s: index %zu out of range for dict of length %zu",
                           ct_fn_, i, d.size());
    auto it = d.begin();
    for (size_t k = 0; k < i; ++k)
      ++it;
    std::unique_ptr<ct_value> kv(key ? ct::new_value(it->key()) : nullptr);
    std::unique_ptr<ct_value> vv(value ? ct::new_value(it->value()) : nullptr);
    if (key)
      *key = kv.release();
    if (value)
      *value = vv.release();
    return CT_OK;
  });
}

ct_status ct_value_dict_get(ct_value **out, const ct_value *v,
                            const ct_value *key) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    CT_CHECK_NOT_NULL(key);
    if (!v->v.isGenericDict())
      return type_error(ct_fn_, "dict", v->v);
    auto d = v->v.toGenericDict();
    const c10::IValue &k = key->v;
    if (!(k.isString() || k.isInt() || k.isTensor() || k.isDouble() ||
          k.isBool()))
      return type_error(ct_fn_, "a string, int or tensor key", k);
    auto it = d.find(k);
    if (it == d.end()) {
      std::ostringstream os;
      if (k.isTensor())
        os << "<tensor>";
      else
        os << k;
      return ct::set_error(CT_ERR_NOT_FOUND, "%s: key %s not found", ct_fn_,
                           os.str().c_str());
    }
    *out = ct::new_value(it->value());
    return CT_OK;
  });
}

ct_status ct_value_dict_get_str(ct_value **out, const ct_value *v,
                                const char *key) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    CT_CHECK_NOT_NULL(key);
    if (!v->v.isGenericDict())
      return type_error(ct_fn_, "dict", v->v);
    auto d = v->v.toGenericDict();
    if (d.keyType()->kind() != c10::StringType::Kind &&
        d.keyType()->kind() != c10::AnyType::Kind && d.size() > 0)
      return ct::set_error(CT_ERR_TYPE, "%s: dict has %s keys, not str", ct_fn_,
                           d.keyType()->annotation_str().c_str());
    auto it = d.find(c10::IValue(std::string(key)));
    if (it == d.end())
      return ct::set_error(CT_ERR_NOT_FOUND, "%s: key '%s' not found", ct_fn_,
                           key);
    *out = ct::new_value(it->value());
    return CT_OK;
  });
}

ct_status ct_value_to_repr(char **out, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    std::ostringstream os;
    os << v->v;
    *out = ct::dup_string(os.str());
    return CT_OK;
  });
}

ct_status ct_value_type_str(char **out, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    std::string s =
        v->v.isTensor() ? std::string("Tensor") : v->v.type()->annotation_str();
    *out = ct::dup_string(s);
    return CT_OK;
  });
}

ct_status ct_pickle_load(ct_value **out, const char *path) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(path);
    std::vector<char> bytes;
    ct_status st = read_file(ct_fn_, path, &bytes);
    if (st != CT_OK)
      return st;
    std::string what = std::string("'") + path + "'";
    return unpickle(ct_fn_, bytes.data(), bytes.size(), out, what.c_str());
  });
}

ct_status ct_pickle_load_buffer(ct_value **out, const void *data, size_t size) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(data);
    return unpickle(ct_fn_, static_cast<const char *>(data), size, out,
                    "the buffer");
  });
}

ct_status ct_pickle_save(const ct_value *v, const char *path) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(v);
    CT_CHECK_NOT_NULL(path);
    std::vector<char> bytes = torch::jit::pickle_save(v->v);
    FILE *f = std::fopen(path, "wb");
    if (!f)
      return ct::set_error(CT_ERR_IO, "%s: cannot open '%s' for writing: %s",
                           ct_fn_, path, std::strerror(errno));
    size_t w = std::fwrite(bytes.data(), 1, bytes.size(), f);
    int rc = std::fclose(f);
    if (w != bytes.size() || rc != 0)
      return ct::set_error(CT_ERR_IO, "%s: error writing '%s'", ct_fn_, path);
    return CT_OK;
  });
}

ct_status ct_pickle_save_buffer(void **data_out, size_t *size_out,
                                const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(data_out);
    CT_CHECK_NOT_NULL(size_out);
    CT_CHECK_NOT_NULL(v);
    std::vector<char> bytes = torch::jit::pickle_save(v->v);
    void *p = std::malloc(bytes.empty() ? 1 : bytes.size());
    if (!p)
      throw std::bad_alloc();
    std::memcpy(p, bytes.data(), bytes.size());
    *data_out = p;
    *size_out = bytes.size();
    return CT_OK;
  });
}

} // extern "C"
