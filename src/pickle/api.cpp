// The ct_pickle_* entry points: torch.save files and buffers read by
// ctorch's own reader (this folder) and checked before they are handed out,
// and values written as Python's torch.save writes them (LibTorch's Pickler,
// untagged containers), so torch.load reads them with weights_only=True.
#include "pickle/reader.h"

#include "checks.h"
#include "file_io.h"
#include "internal.h"

#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <caffe2/serialize/inline_container.h>

#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

namespace {

using ct::unify_or_any;
using ct::value_type;

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

// Reads a file or buffer and checks what it holds: nesting (checked while
// reading, and exactly at its end), then tensors against their storages.
ct_status unpickle(const char *func, const char *data, size_t size, ct_value **out,
                   const char *what) {
  c10::IValue v;
  try {
    v = ct::pickle::load(data, size);
  } catch (const std::bad_alloc &) {
    throw;
  } catch (const ct::Error &e) {
    // Refused on purpose (nesting, a tensor outside its storage).
    return ct::set_error(e.code, "%s: cannot load %s: %s", func, what, e.msg.c_str());
  } catch (const std::exception &e) {
    return ct::set_error(CT_ERR_IO, "%s: %s is not a readable torch.save file\n%s", func, what,
                         ct::exception_text(e).c_str());
  }
  ct_status fit = ct::check_loaded_tensors(func, what, {{std::string(), v}});
  if (fit != CT_OK) return fit;
  retag_dicts(v);
  *out = ct::new_value(std::move(v));
  return CT_OK;
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
