// torch.save / torch.load interop (ct_pickle_*): file and buffer I/O, the
// opcode rewriter that lets LibTorch 1.13 read what Python writes, the
// unpickler glue (shared storages), and re-typing of unpickled dicts.
#include "checkpoint.h"
#include "checks.h"
#include "file_io.h"

#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/csrc/jit/serialization/storage_context.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

namespace {

using ct::unify_or_any;
using ct::value_type;

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
  size_t start;  // offset of the first opcode that produced this item
  PkKind kind;
};

struct PkEdit {
  size_t pos;          // offset in the original stream
  size_t erase;        // bytes replaced at pos (0: pure insertion)
  std::string insert;  // bytes written at pos
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
    return uint32_t(p[at]) | uint32_t(p[at + 1]) << 8 | uint32_t(p[at + 2]) << 16 |
           uint32_t(p[at + 3]) << 24;
  };
  // Pops k items (none of them a mark); returns the start of the deepest.
  auto pop_n = [&](size_t k, size_t *start) -> bool {
    if (stack.size() < k) return false;
    for (size_t j = stack.size() - k; j < stack.size(); ++j)
      if (stack[j].kind == PkKind::Mark) return false;
    if (k > 0) *start = stack[stack.size() - k].start;
    stack.resize(stack.size() - k);
    return true;
  };
  // Pops everything down to and including the topmost mark.
  auto pop_mark = [&](size_t *start) -> bool {
    while (!stack.empty() && stack.back().kind != PkKind::Mark) stack.pop_back();
    if (stack.empty()) return false;
    *start = stack.back().start;
    stack.pop_back();
    return true;
  };
  auto top_kind = [&](size_t from_top) {
    return stack.size() > from_top ? stack[stack.size() - 1 - from_top].kind : PkKind::Mark;
  };

  while (i < n) {
    const size_t at = i;
    const unsigned char op = p[i++];
    size_t s = 0;
    switch (op) {
      case 0x80:  // PROTO
        if (!need(1)) return false;
        i += 1;
        break;
      case '.':  // STOP
        if (stack.size() != 1 || stack[0].kind == PkKind::Mark) return false;
        i = n + 1;  // done
        break;
      case '(':  // MARK
        stack.push_back({at, PkKind::Mark});
        break;
      case ')':  // EMPTY_TUPLE
        stack.push_back({at, PkKind::EmptyTuple});
        break;
      case ']':   // EMPTY_LIST
      case 'N':   // NONE
      case 0x88:  // NEWTRUE
      case 0x89:  // NEWFALSE
        stack.push_back({at, PkKind::Other});
        break;
      case '}':  // EMPTY_DICT
        stack.push_back({at, PkKind::Dict});
        break;
      case 'K':    // BININT1
      case 'M':    // BININT2
      case 'J':    // BININT
      case 'G': {  // BINFLOAT
        size_t k = op == 'K' ? 1 : op == 'M' ? 2 : op == 'J' ? 4 : 8;
        if (!need(k)) return false;
        i += k;
        stack.push_back({at, PkKind::Other});
        break;
      }
      case 0x8a:  // LONG1
      case 'U':   // SHORT_BINSTRING
      case 'C':   // SHORT_BINBYTES
      case 0x8c:  // SHORT_BINUNICODE
        if (!need(1) || !need(1 + size_t(p[i]))) return false;
        i += 1 + size_t(p[i]);
        stack.push_back({at, PkKind::Other});
        break;
      case 0x8b:   // LONG4
      case 'T':    // BINSTRING
      case 'B':    // BINBYTES
      case 'X': {  // BINUNICODE
        if (!need(4)) return false;
        size_t len = le32(i);
        if (!need(4 + len)) return false;
        i += 4 + len;
        stack.push_back({at, PkKind::Other});
        break;
      }
      case 'c': {  // GLOBAL "module\nname\n"
        const void *nl1 = std::memchr(p + i, '\n', n - i);
        if (!nl1) return false;
        size_t e1 = static_cast<const unsigned char *>(nl1) - p;
        const void *nl2 = std::memchr(p + e1 + 1, '\n', n - e1 - 1);
        if (!nl2) return false;
        size_t e2 = static_cast<const unsigned char *>(nl2) - p;
        std::string mod(data + i, e1 - i), name(data + e1 + 1, e2 - e1 - 1);
        i = e2 + 1;
        stack.push_back({at, mod == "collections" && name == "OrderedDict"
                                 ? PkKind::OrderedDictClass
                                 : PkKind::Other});
        break;
      }
      case 'q':    // BINPUT
      case 'r': {  // LONG_BINPUT
        size_t k = op == 'q' ? 1 : 4;
        if (!need(k) || stack.empty() || stack.back().kind == PkKind::Mark) return false;
        memo[op == 'q' ? p[i] : le32(i)] = stack.back().kind;
        i += k;
        break;
      }
      case 'h':    // BINGET
      case 'j': {  // LONG_BINGET
        size_t k = op == 'h' ? 1 : 4;
        if (!need(k)) return false;
        auto it = memo.find(op == 'h' ? p[i] : le32(i));
        if (it == memo.end()) return false;
        i += k;
        // A memoized dict may have been filled since: only the class and the
        // empty tuple keep their meaning.
        PkKind kind = it->second == PkKind::OrderedDictClass || it->second == PkKind::EmptyTuple
                          ? it->second
                          : PkKind::Other;
        stack.push_back({at, kind});
        break;
      }
      case 'R': {  // REDUCE: callable args -> result
        bool odict = top_kind(1) == PkKind::OrderedDictClass && top_kind(0) == PkKind::EmptyTuple;
        if (!pop_n(2, &s)) return false;
        if (odict) edits.push_back({at, 1, std::string("\x81\x81}", 3)});
        stack.push_back({s, odict ? PkKind::Dict : PkKind::Other});
        break;
      }
      case 0x81:  // NEWOBJ: cls args -> obj
        if (!pop_n(2, &s)) return false;
        stack.push_back({s, PkKind::Other});
        break;
      case 'b': {  // BUILD: obj state -> obj
        bool odict = top_kind(1) == PkKind::Dict && top_kind(0) != PkKind::Mark;
        if (!pop_n(1, &s)) return false;
        if (odict) edits.push_back({at, 1, std::string("\x81", 1)});
        if (stack.empty() || stack.back().kind == PkKind::Mark) return false;
        break;
      }
      case 'Q':  // BINPERSID: pid -> obj
        if (!pop_n(1, &s)) return false;
        stack.push_back({s, PkKind::Other});
        break;
      case 0x85:  // TUPLE1
      case 0x86:  // TUPLE2
      case 0x87:  // TUPLE3
        if (!pop_n(size_t(op - 0x84), &s)) return false;
        stack.push_back({s, PkKind::Other});
        break;
      case 't':  // TUPLE
      case 'l':  // LIST
        if (!pop_mark(&s)) return false;
        stack.push_back({s, PkKind::Other});
        break;
      case 'd':  // DICT
        if (!pop_mark(&s)) return false;
        stack.push_back({s, PkKind::Dict});
        break;
      case 'a': {  // APPEND: list item -> list
        if (!pop_n(1, &s)) return false;
        if (stack.empty() || stack.back().kind == PkKind::Mark) return false;
        edits.push_back({s, 0, std::string("(", 1)});
        edits.push_back({at, 1, std::string("e", 1)});
        break;
      }
      case 'e':  // APPENDS: list MARK items -> list
      case 'u':  // SETITEMS: dict MARK k v ... -> dict
        if (!pop_mark(&s) || stack.empty() || stack.back().kind == PkKind::Mark) return false;
        break;
      case 's':  // SETITEM: dict k v -> dict
        if (!pop_n(2, &s) || stack.empty() || stack.back().kind == PkKind::Mark) return false;
        edits.push_back({s, 0, std::string("(", 1)});
        edits.push_back({at, 1, std::string("u", 1)});
        break;
      default:  // anything else: leave the stream alone
        return false;
    }
  }
  if (i != n + 1 || edits.empty()) return false;  // no STOP, or nothing to change

  // Insertions at an offset go before a replacement at the same offset.
  std::stable_sort(edits.begin(), edits.end(), [](const PkEdit &a, const PkEdit &b) {
    if (a.pos != b.pos) return a.pos < b.pos;
    return a.erase < b.erase;
  });
  std::vector<char> res;
  res.reserve(n + edits.size() * 2);
  size_t copied = 0;
  for (const PkEdit &e : edits) {
    if (e.pos < copied) return false;  // overlapping edits: cannot happen, but be safe
    res.insert(res.end(), data + copied, data + e.pos);
    res.insert(res.end(), e.insert.begin(), e.insert.end());
    copied = e.pos + e.erase;
  }
  res.insert(res.end(), data + copied, data + n);
  *out = std::move(res);
  return true;
}

// Unpickles one pickle stream of the archive, reading tensor data from
// data/<key> records (what torch::jit::pickle_load does, plus shared
// storages).
c10::IValue unpickle_stream(caffe2::serialize::PyTorchStreamReader &reader, const char *pkl,
                            size_t size, ct::RecordSizes *records) {
  records->clear();
  size_t pos = 0;
  auto read = [&](char *buf, size_t len) -> size_t {
    if (pos >= size) return 0;
    len = std::min(size - pos, len);
    std::memcpy(buf, pkl + pos, len);
    pos += len;
    return len;
  };
  auto read_record = [&](const std::string &name) -> at::DataPtr {
    auto rec = reader.getRecord("data/" + name);
    // The unpickler sizes the storage from the pickle, not from the record:
    // remember the record's real size for check_loaded_tensors.
    (*records)[std::get<0>(rec).get()] = std::get<1>(rec);
    return std::move(std::get<0>(rec));
  };
  // The storage context makes tensors with one storage key (views) share one
  // storage, as Python's torch.load does; without it every view gets a copy.
  torch::jit::Unpickler unpickler(
      read, /*type_resolver=*/nullptr, /*obj_loader=*/nullptr, read_record,
      /*device=*/{}, /*use_storage_device=*/false, torch::jit::Unpickler::defaultTypeParser,
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
    if (!(v.isGenericDict() || v.isList() || v.isTuple())) continue;
    if (!seen.insert(v.internalToPointer()).second) continue;
    if (v.isList()) {
      for (const c10::IValue &x : v.toListRef()) todo.push_back(x);
    } else if (v.isTuple()) {
      for (const c10::IValue &x : v.toTupleRef().elements()) todo.push_back(x);
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
        c10::TypePtr kt =
            all_str ? c10::TypePtr(c10::StringType::get()) : c10::TypePtr(c10::IntType::get());
        d.unsafeSetKeyType(kt);
        if (d.valueType()->kind() == c10::AnyType::Kind) d.unsafeSetValueType(unify_or_any(vtypes));
      }
    }
  }
}

// The checks every loaded value passes before it is handed out, whichever
// reader made it: nesting (ctorch's own reader checked it already), then
// tensors against their storages.
ct_status accept(const char *func, const char *what, c10::IValue v, const ct::RecordSizes *records,
                 ct_value **out) {
  std::string why = ct::loaded_nesting_problem(v);
  if (!why.empty()) {
    ct::release_value(std::move(v));
    return ct::set_error(CT_ERR_IO, "%s: cannot load %s: %s", func, what, why.c_str());
  }
  ct_status fit = ct::check_loaded_tensors(func, what, {{std::string(), v}}, records);
  if (fit != CT_OK) return fit;
  retag_dicts(v);
  *out = ct::new_value(std::move(v));
  return CT_OK;
}

ct_status unpickle(const char *func, const char *data, size_t size, ct_value **out,
                   const char *what) {
  // Why LibTorch's Unpickler did not read it (its message is the one shown
  // for a zip archive that neither reader can read).
  std::string libtorch_error;
  try {
    caffe2::serialize::PyTorchStreamReader reader(std::make_shared<ct::BorrowedReader>(data, size));
    at::DataPtr pkl;
    size_t pkl_size = 0;
    std::tie(pkl, pkl_size) = reader.getRecord("data.pkl");
    const char *pkl_data = static_cast<const char *>(pkl.get());
    std::vector<char> fixed;
    bool rewritten = rewrite_pickle(pkl_data, pkl_size, &fixed);
    // LibTorch's Unpickler crashes on deep input (its destructor and dict
    // keys recurse per level): it only gets streams checked before.
    ct::PickleScan scan = ct::scan_pickle_nesting(pkl_data, pkl_size);
    ct::PickleScan scan_fixed =
        rewritten ? ct::scan_pickle_nesting(fixed.data(), fixed.size()) : ct::PickleScan::kUnsure;
    if (scan == ct::PickleScan::kTooDeep || scan_fixed == ct::PickleScan::kTooDeep)
      return ct::set_error(CT_ERR_IO, "%s: cannot load %s: %s", func, what,
                           ct::nesting_too_deep().c_str());
    ct::RecordSizes records;
    c10::IValue v;
    bool done = false;
    if (scan_fixed == ct::PickleScan::kFine) {
      try {
        v = unpickle_stream(reader, fixed.data(), fixed.size(), &records);
        done = true;
      } catch (const std::bad_alloc &) {
        throw;
      } catch (const std::exception &e) {
        // Never worse than before: retry with the original bytes below.
        libtorch_error = ct::exception_text(e);
      }
    }
    if (!done && scan == ct::PickleScan::kFine) {
      try {
        v = unpickle_stream(reader, pkl_data, pkl_size, &records);
        done = true;
      } catch (const std::bad_alloc &) {
        throw;
      } catch (const std::exception &e) {
        // The rewritten stream got further than the original one.
        if (libtorch_error.empty()) libtorch_error = ct::exception_text(e);
      }
    }
    // A malformed file loads tensors that reach past their storages (#10).
    if (done) return accept(func, what, std::move(v), &records, out);
  } catch (const std::bad_alloc &) {
    throw;
  } catch (const std::exception &e) {
    libtorch_error = ct::exception_text(e);  // not an archive, or no data.pkl
  }
  // Legacy files, Python objects, numpy values, and what the Unpickler
  // could not read or was not given: ctorch's own reader.
  std::string msg = libtorch_error;
  try {
    return accept(func, what, ct::load_checkpoint(data, size), nullptr, out);
  } catch (const std::bad_alloc &) {
    throw;
  } catch (const ct::Error &e2) {
    // Refused on purpose (nesting, a tensor outside its storage).
    return ct::set_error(e2.code, "%s: cannot load %s: %s", func, what, e2.msg.c_str());
  } catch (const std::exception &e2) {
    if (msg.empty() || size < 4 || std::memcmp(data, "PK\x03\x04", 4) != 0)
      msg = ct::exception_text(e2);
  }
  return ct::set_error(CT_ERR_IO, "%s: %s is not a readable torch.save file\n%s", func, what,
                       msg.c_str());
}

// torch.save's format for ct_pickle_save, with containers as Python writes
// them: plain lists and dicts, no torch.jit._pickle globals (restore_type_tag,
// build_intlist, ...), which torch.load's default weights_only=True (torch
// >= 2.6) refuses. torch::jit::pickle_save tags every list and dict.
c10::IValue untyped(const c10::IValue &v) {
  if (v.isList()) {
    c10::impl::GenericList l(c10::AnyType::get());
    for (const c10::IValue &e : v.toListRef()) l.push_back(untyped(e));
    return l;
  }
  if (v.isGenericDict()) {
    auto d = v.toGenericDict();
    c10::impl::GenericDict out(d.keyType(), c10::AnyType::get());
    for (const auto &kv : d) out.insert(kv.key(), untyped(kv.value()));
    return out;
  }
  if (v.isTuple()) {
    std::vector<c10::IValue> items;
    for (const c10::IValue &e : v.toTuple()->elements()) items.push_back(untyped(e));
    return c10::ivalue::Tuple::create(std::move(items));
  }
  return v;
}

std::vector<char> pickle_save_plain(const c10::IValue &v) {
  // untyped() and LibTorch's Pickler recurse per level and forever on a
  // value that contains itself; ct_pickle_load would refuse the file anyway.
  std::string why = ct::saved_nesting_problem(v);
  if (!why.empty()) throw ct::Error(CT_ERR_INVALID_ARGUMENT, "cannot save: " + why);
  std::vector<char> pkl;
  torch::jit::Pickler pickler(
      [&](const char *buf, size_t n) { pkl.insert(pkl.end(), buf, buf + n); },
      /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
      /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(untyped(v));
  pickler.stop();
  std::vector<char> out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void *buf, size_t n) {
    const char *b = static_cast<const char *>(buf);
    out.insert(out.end(), b, b + n);
    return n;
  });
  torch::jit::writeArchiveAndTensors("data", pkl.data(), pkl.size(), pickler.tensorData(), writer);
  writer.writeEndOfFile();
  return out;
}

}  // namespace

extern "C" {

ct_status ct_pickle_load(ct_value **out, const char *path) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(path);
    std::vector<char> bytes;
    ct_status st = ct::read_file(ct_fn_, path, &bytes);
    if (st != CT_OK) return st;
    std::string what = std::string("'") + path + "'";
    return unpickle(ct_fn_, bytes.data(), bytes.size(), out, what.c_str());
  });
}

ct_status ct_pickle_load_buffer(ct_value **out, const void *data, size_t size) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(data);
    return unpickle(ct_fn_, static_cast<const char *>(data), size, out, "the buffer");
  });
}

ct_status ct_pickle_save(const ct_value *v, const char *path) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(v);
    CT_CHECK_NOT_NULL(path);
    std::vector<char> bytes = pickle_save_plain(v->v);
    return ct::write_file(ct_fn_, path, bytes.data(), bytes.size());
  });
}

ct_status ct_pickle_save_buffer(void **data_out, size_t *size_out, const ct_value *v) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(data_out);
    CT_CHECK_NOT_NULL(size_out);
    CT_CHECK_NOT_NULL(v);
    std::vector<char> bytes = pickle_save_plain(v->v);
    ct::copy_out(bytes.data(), bytes.size(), data_out, size_out);
    return CT_OK;
  });
}

}  // extern "C"
