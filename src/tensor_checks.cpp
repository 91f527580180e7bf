// Tensor geometry against memory. Caller memory: sizes (check_sizes) and the
// extent of sizes and strides over a pointer (check_extent), before a tensor
// is made over it. Loaded tensors: a pickle sets a loaded tensor's sizes,
// strides and offset from the file without comparing them with its storage,
// so a malformed file loads and then reads (or writes) past the storage on
// first use. Every tensor reached from a loaded value or module is checked
// here (check_loaded_tensors, check_loaded_module), with the one geometry
// check every reader and the op guards use (storage_misfit): one pass over
// the value graph, a few integer operations per tensor, no data read. See
// docs/conventions.md ("Untrusted files").
#include "checks.h"
#include "internal.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include <string>
#include <unordered_set>
#include <vector>

namespace ct {

namespace {

std::string int_list(c10::IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

}  // namespace

std::string storage_misfit(c10::IntArrayRef sizes, c10::IntArrayRef strides, int64_t offset,
                           uint64_t item, uint64_t nbytes) {
  if (sizes.size() != strides.size()) return "sizes and strides differ in length";
  auto describe = [&] {
    return "sizes " + int_list(sizes) + ", strides " + int_list(strides) + ", offset " +
           std::to_string(offset) + ", " + std::to_string(item) + "-byte elements";
  };
  if (offset < 0) return describe() + ": negative storage offset";
  bool empty = false;
  for (int64_t s : sizes) {
    if (s < 0) return describe() + ": negative size";
    empty = empty || s == 0;
  }
  if (empty) return std::string();                // no element is ever read
  uint64_t last = static_cast<uint64_t>(offset);  // index of the last element
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (strides[i] < 0) return describe() + ": negative stride";
    uint64_t step;
    if (__builtin_mul_overflow(static_cast<uint64_t>(sizes[i] - 1),
                               static_cast<uint64_t>(strides[i]), &step) ||
        __builtin_add_overflow(last, step, &last))
      return describe() + ": extent overflows";
  }
  uint64_t need;
  if (__builtin_add_overflow(last, 1, &need) || __builtin_mul_overflow(need, item, &need))
    return describe() + ": extent overflows";
  if (need > nbytes)
    return describe() + " needs " + std::to_string(need) + " bytes but its storage has " +
           std::to_string(nbytes);
  return std::string();
}

namespace {

// Empty string when `t` fits its storage; else why not.
std::string tensor_misfit(const at::Tensor &t) {
  if (!t.has_storage()) return std::string();
  return storage_misfit(t.sizes(), t.strides(), t.storage_offset(), t.dtype().itemsize(),
                        t.storage().nbytes());
}

}  // namespace

ct_status check_loaded_tensors(const char *func, const char *what,
                               const std::vector<std::pair<std::string, c10::IValue>> &roots) {
  // Each value to visit remembers its parent's entry, the container it sits
  // in and where; the path ("[3]['w'].weight") is put together only for the
  // message, so the walk stays linear however deep the value nests.
  struct Step {
    size_t parent;      // index in steps, or npos for a root
    c10::IValue owner;  // the container, object or sparse tensor; None for a root
    int64_t at;         // item / attribute / dict entry (-1 - i: its key); root: index
  };
  constexpr size_t npos = static_cast<size_t>(-1);
  std::vector<Step> steps;
  std::vector<std::pair<size_t, c10::IValue>> todo;
  for (size_t i = roots.size(); i-- > 0;) {
    steps.push_back({npos, c10::IValue(), static_cast<int64_t>(i)});
    todo.emplace_back(steps.size() - 1, roots[i].second);
  }
  auto name = [&](const Step &s) -> std::string {
    const c10::IValue &o = s.owner;
    if (s.parent == npos) return roots[static_cast<size_t>(s.at)].first;
    if (o.isTuple() || o.isList()) return "[" + std::to_string(s.at) + "]";
    if (o.isObject()) return "." + o.toObjectRef().type()->getAttributeName(s.at);
    if (o.isTensor()) return s.at == 0 ? "._indices()" : "._values()";
    if (o.isGenericDict()) {
      if (s.at < 0) return "[<key>]";
      auto d = o.toGenericDict();
      auto it = d.begin();
      for (int64_t i = 0; i < s.at; ++i) ++it;
      const c10::IValue &k = it->key();
      return "[" +
             (k.isString() ? "'" + k.toStringRef() + "'"
              : k.isInt()  ? std::to_string(k.toInt())
                           : std::string("<key>")) +
             "]";
    }
    return "[?]";
  };
  auto path_of = [&](size_t i) {
    std::vector<std::string> names;
    for (; i != npos; i = steps[i].parent) names.push_back(name(steps[i]));
    std::string path;
    for (auto n = names.rbegin(); n != names.rend(); ++n) path += *n;
    if (!path.empty() && path[0] == '.') path.erase(0, 1);  // an attribute of the root
    return path;
  };
  std::unordered_set<const void *> seen;
  auto bad = [&](size_t at, const std::string &why) {
    std::string path = path_of(at);
    return set_error(CT_ERR_IO, "%s: cannot load %s: tensor '%s' does not fit its storage (%s)",
                     func, what, path.empty() ? "<root>" : path.c_str(), why.c_str());
  };
  // Only what can hold a tensor is visited.
  auto add = [&](size_t parent, const c10::IValue &owner, int64_t at, const c10::IValue &v) {
    if (!(v.isTensor() || v.isList() || v.isTuple() || v.isGenericDict() || v.isObject())) return;
    steps.push_back({parent, owner, at});
    todo.emplace_back(steps.size() - 1, v);
  };
  while (!todo.empty()) {
    const size_t at = todo.back().first;
    c10::IValue v = std::move(todo.back().second);
    todo.pop_back();
    if (!seen.insert(v.internalToPointer()).second) continue;
    if (v.isTensor()) {
      const at::Tensor &t = v.toTensor();
      if (!t.defined()) continue;
      if (t.is_sparse()) {
        add(at, v, 0, t._indices());
        add(at, v, 1, t._values());
        continue;
      }
      if (t.layout() != c10::kStrided || t.is_nested()) continue;
      std::string why = tensor_misfit(t);
      if (!why.empty()) return bad(at, why);
    } else if (v.isObject()) {
      const auto &obj = v.toObjectRef();
      size_t n = std::min(obj.slots().size(), obj.type()->numAttributes());
      for (size_t i = 0; i < n; ++i) add(at, v, static_cast<int64_t>(i), obj.getSlot(i));
    } else if (v.isTuple()) {
      const auto &el = v.toTupleRef().elements();
      for (size_t i = 0; i < el.size(); ++i) add(at, v, static_cast<int64_t>(i), el[i]);
    } else if (v.isList()) {
      if (v.isIntList() || v.isDoubleList() || v.isBoolList()) continue;
      auto l = v.toListRef();
      for (size_t i = 0; i < l.size(); ++i) add(at, v, static_cast<int64_t>(i), l[i]);
    } else if (v.isGenericDict()) {
      int64_t i = 0;
      for (const auto &kv : v.toGenericDict()) {
        add(at, v, i, kv.value());
        if (kv.key().isTensor()) add(at, v, -1 - i, kv.key());
        ++i;
      }
    }
  }
  return CT_OK;
}

ct_status check_loaded_module(const char *func, const char *what, const torch::jit::Module &m) {
  std::vector<std::pair<std::string, c10::IValue>> roots;
  roots.emplace_back(std::string(), c10::IValue(m._ivalue()));
  // Tensor constants of the code (constants.pkl) live in the graphs.
  std::vector<torch::jit::Block *> blocks;
  for (torch::jit::Function *fn : m._ivalue()->compilation_unit()->get_functions()) {
    if (!fn->isGraphFunction()) continue;
    std::shared_ptr<torch::jit::Graph> g = torch::jit::toGraphFunction(*fn).graph();
    if (!g) continue;
    blocks.assign(1, g->block());
    while (!blocks.empty()) {
      torch::jit::Block *b = blocks.back();
      blocks.pop_back();
      for (torch::jit::Node *n : b->nodes()) {
        for (torch::jit::Block *inner : n->blocks()) blocks.push_back(inner);
        if (n->kind() != c10::prim::Constant || n->outputs().size() != 1 ||
            n->output()->type()->kind() != c10::TypeKind::TensorType)
          continue;
        if (auto c = torch::jit::toIValue(n->output()))
          roots.emplace_back("constant in " + fn->qualname().qualifiedName(), std::move(*c));
      }
    }
  }
  return check_loaded_tensors(func, what, roots);
}

ct_status check_sizes(const char *func, const int64_t *sizes, size_t ndim) noexcept {
  if (ndim > 0 && sizes == nullptr)
    return set_error(CT_ERR_INVALID_ARGUMENT, "%s: sizes is NULL but ndim is %zu", func, ndim);
  if (ndim > 64) return set_error(CT_ERR_INVALID_ARGUMENT, "%s: ndim %zu exceeds 64", func, ndim);
  int64_t numel = 1;
  for (size_t i = 0; i < ndim; ++i) {
    if (sizes[i] < 0)
      return set_error(CT_ERR_INVALID_ARGUMENT, "%s: negative size %lld in dimension %zu", func,
                       static_cast<long long>(sizes[i]), i);
    if (__builtin_mul_overflow(numel, sizes[i], &numel))
      return set_error(CT_ERR_INVALID_ARGUMENT, "%s: the number of elements overflows int64", func);
  }
  return CT_OK;
}

ct_status check_extent(const char *func, const void *data, uint64_t byte_offset,
                       const int64_t *sizes, const int64_t *strides, size_t ndim,
                       size_t element_size, bool check_alignment) noexcept {
  int64_t numel = 1;
  for (size_t i = 0; i < ndim; ++i)
    if (__builtin_mul_overflow(numel, sizes[i], &numel))
      return set_error(CT_ERR_INVALID_ARGUMENT, "%s: the number of elements overflows int64", func);
  if (strides)
    for (size_t i = 0; i < ndim; ++i)
      if (strides[i] < 0)
        return set_error(CT_ERR_INVALID_ARGUMENT,
                         "%s: negative stride %lld in dimension %zu: torch tensors cannot have "
                         "negative strides; pass a contiguous copy (e.g. numpy.ascontiguousarray)",
                         func, static_cast<long long>(strides[i]), i);
  int64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<int64_t>(element_size), &nbytes))
    return set_error(CT_ERR_INVALID_ARGUMENT,
                     "%s: the byte size (%lld elements of %zu bytes) overflows int64", func,
                     static_cast<long long>(numel), element_size);
  if (byte_offset >= kMaxAddress)
    return set_error(CT_ERR_INVALID_ARGUMENT, "%s: byte_offset %llu is beyond any address", func,
                     static_cast<unsigned long long>(byte_offset));
  if (numel == 0) {
    // No element is read, but LibTorch still computes contiguous strides
    // (products of the sizes) and extents from sizes and strides: these
    // must not overflow either, or they come out negative and LibTorch
    // misreads them (found by fuzz_dlpack: a crash in clone()).
    int64_t prod = 1, reach = 0;
    for (size_t i = 0; i < ndim; ++i) {
      int64_t sz = sizes[i] > 0 ? sizes[i] : 1, step = 0;
      if (__builtin_mul_overflow(prod, sz, &prod) ||
          (strides && (__builtin_mul_overflow(sz - 1, strides[i], &step) ||
                       __builtin_add_overflow(reach, step, &reach))))
        return set_error(CT_ERR_INVALID_ARGUMENT,
                         "%s: the sizes or strides overflow int64 (dimension %zu), even though "
                         "the tensor is empty",
                         func, i);
    }
    return CT_OK;
  }
  // Highest element index reached: sum of (size - 1) * stride.
  int64_t last = 0;
  if (strides) {
    for (size_t i = 0; i < ndim; ++i) {
      int64_t step;
      if (__builtin_mul_overflow(sizes[i] - 1, strides[i], &step) ||
          __builtin_add_overflow(last, step, &last))
        return set_error(CT_ERR_INVALID_ARGUMENT,
                         "%s: the strides reach beyond int64 elements (dimension %zu)", func, i);
    }
  } else {
    last = numel - 1;
  }
  int64_t extent;
  if (__builtin_add_overflow(last, int64_t(1), &extent) ||
      __builtin_mul_overflow(extent, static_cast<int64_t>(element_size), &extent))
    return set_error(CT_ERR_INVALID_ARGUMENT,
                     "%s: the memory extent of the strides overflows int64 bytes", func);
  uint64_t start = reinterpret_cast<uintptr_t>(data) + byte_offset;
  if (start < byte_offset || start >= kMaxAddress ||
      static_cast<uint64_t>(extent) > kMaxAddress - start)
    return set_error(CT_ERR_INVALID_ARGUMENT,
                     "%s: the tensor's %lld bytes at address 0x%llx reach beyond any address", func,
                     static_cast<long long>(extent), static_cast<unsigned long long>(start));
  if (check_alignment && element_size > 1) {
    // The full element size, complex types included: c10::complex<T> is
    // alignas(2 * sizeof(T)), and LibTorch's kernels use aligned vector loads
    // on it (a complex128 at an 8-byte boundary crashed clone(); found by
    // fuzz_dlpack).
    uint64_t align = element_size;
    if (start % align != 0)
      return set_error(CT_ERR_INVALID_ARGUMENT,
                       "%s: data + byte_offset (0x%llx) is not aligned to the element type "
                       "(%llu bytes)",
                       func, static_cast<unsigned long long>(start),
                       static_cast<unsigned long long>(align));
  }
  return CT_OK;
}

}  // namespace ct
