// What the Python callables a torch.save file names mean to ctorch's reader:
// tensor and parameter rebuilds (plain, quantized, meta, sparse, subclasses),
// TorchScript's tagged lists, torch.Size/device, builtins (dict, set,
// complex, bytes), numpy arrays and scalars; every other callable makes a
// generic object (objects.cpp). Nothing here runs Python code.
#include "pickle/reader.h"

#include "checks.h"
#include "internal.h"

#include <algorithm>
#include <cstring>

namespace ct {
namespace pickle {
namespace {

const char *const kDtypeNames[][2] = {{"float32", "Float"},
                                      {"float", "Float"},
                                      {"float64", "Double"},
                                      {"double", "Double"},
                                      {"float16", "Half"},
                                      {"half", "Half"},
                                      {"bfloat16", "BFloat16"},
                                      {"int64", "Long"},
                                      {"long", "Long"},
                                      {"int32", "Int"},
                                      {"int", "Int"},
                                      {"int16", "Short"},
                                      {"short", "Short"},
                                      {"int8", "Char"},
                                      {"uint8", "Byte"},
                                      {"bool", "Bool"},
                                      {"complex64", "ComplexFloat"},
                                      {"cfloat", "ComplexFloat"},
                                      {"complex128", "ComplexDouble"},
                                      {"cdouble", "ComplexDouble"},
                                      {"qint8", "QInt8"},
                                      {"quint8", "QUInt8"},
                                      {"qint32", "QInt32"},
                                      {"quint4x2", "QUInt4x2"}};

// "torch.float32" -> Float.
bool torch_dtype(const std::string &global, c10::ScalarType *out) {
  if (global.compare(0, 6, "torch.") != 0) return false;
  std::string n = global.substr(6);
  for (const auto &p : kDtypeNames)
    if (n == p[0]) {
      for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i)
        if (std::strcmp(c10::toString(static_cast<c10::ScalarType>(i)), p[1]) == 0) {
          *out = static_cast<c10::ScalarType>(i);
          return true;
        }
    }
  return false;
}

std::vector<int64_t> int_vec(const c10::IValue &v) {
  std::vector<int64_t> out;
  if (v.isTuple())
    for (const auto &x : v.toTupleRef().elements()) out.push_back(x.toInt());
  else if (v.isList())
    for (const auto &x : v.toListRef()) out.push_back(x.toInt());
  else if (v.isIntList())
    out = v.toIntVector();
  else
    fail("expected a tuple of ints");
  return out;
}

std::vector<c10::IValue> tuple_items(const c10::IValue &v) {
  if (!v.isTuple()) fail("expected a tuple");
  const auto &e = v.toTupleRef().elements();
  return std::vector<c10::IValue>(e.begin(), e.end());
}

// Bytes from a pickled bytes value (strings hold raw bytes here).
const std::string &bytes_of(const c10::IValue &v) {
  if (!v.isString()) fail("expected bytes");
  return v.toStringRef();
}

// numpy dtype string ("f8", "<i4", ...) -> scalar type.
c10::ScalarType numpy_dtype(const c10::IValue &dtype_obj, bool *swap) {
  *swap = false;
  if (!dtype_obj.isObject()) fail("expected a numpy dtype");
  auto obj = dtype_obj.toObject();
  std::vector<c10::IValue> args = tuple_items(obj->getSlot(0));
  if (args.empty() || !args[0].isString()) fail("unreadable numpy dtype");
  std::string s = args[0].toStringRef();
  c10::IValue state = obj->getSlot(1);
  if (state.isTuple() && state.toTupleRef().elements().size() > 1 &&
      state.toTupleRef().elements()[1].isString())
    *swap = state.toTupleRef().elements()[1].toStringRef() == ">";
  if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=')) {
    if (s[0] == '>') *swap = true;
    s = s.substr(1);
  }
  static const std::pair<const char *, c10::ScalarType> map[] = {
      {"f8", c10::kDouble},       {"f4", c10::kFloat},         {"f2", c10::kHalf},
      {"i8", c10::kLong},         {"i4", c10::kInt},           {"i2", c10::kShort},
      {"i1", c10::kChar},         {"u1", c10::kByte},          {"b1", c10::kBool},
      {"c8", c10::kComplexFloat}, {"c16", c10::kComplexDouble}};
  for (const auto &p : map)
    if (s == p.first) return p.second;
  fail("numpy dtype '" + s + "' has no tensor equivalent");
}

at::Tensor tensor_from_bytes(const std::string &raw, c10::ScalarType st, bool swap,
                             at::IntArrayRef shape) {
  // The shape comes from the file: compare it with the data before allocating.
  uint64_t numel = 1, n = 0;
  for (int64_t s : shape)
    if (s < 0 || __builtin_mul_overflow(numel, static_cast<uint64_t>(s), &numel))
      fail("numpy array with an invalid shape");
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(c10::elementSize(st)), &n) ||
      raw.size() != n)
    fail("numpy data has the wrong size");
  at::Tensor t = at::empty(shape, at::TensorOptions().dtype(st));
  if (n) std::memcpy(t.data_ptr(), raw.data(), n);
  if (swap && t.element_size() > 1) {
    auto *p = static_cast<char *>(t.data_ptr());
    size_t es = c10::isComplexType(st) ? t.element_size() / 2 : t.element_size();
    for (size_t i = 0; i < n; i += es) std::reverse(p + i, p + i + es);
  }
  return t;
}

c10::IValue scalar_of(const at::Tensor &t) {
  at::Scalar s = t.item();
  if (s.isBoolean()) return s.toBool();
  if (s.isIntegral(false)) return s.toLong();
  if (s.isComplex()) return c10::IValue(s.toComplexDouble());
  return s.toDouble();
}

std::vector<int64_t> reverse_dims(size_t n) {
  std::vector<int64_t> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<int64_t>(n - 1 - i);
  return d;
}

}  // namespace

// Every item of the file is checked for type and count before use: a
// malformed file fails with a message, never reads past a tuple.
Item call_global(const std::string &g, Item args, Keep &owned, int calls) {
  // _rebuild_from_type_v2 calls the function it is given: bounded like nesting.
  if (calls >= ct::kMaxNesting) refuse(ct::nesting_too_deep());
  const int args_depth = args.depth;
  c10::IValue args_v = value(std::move(args));
  std::vector<c10::IValue> a = tuple_items(args_v);
  auto arg = [&](size_t i) -> const c10::IValue & {
    if (i >= a.size()) fail(g + ": too few arguments");
    return a[i];
  };
  auto string_arg = [&](size_t i) -> const std::string & {
    if (!arg(i).isString()) fail(g + ": argument " + std::to_string(i) + " is not a string");
    return a[i].toStringRef();
  };
  auto tensor_arg = [&](size_t i) -> const at::Tensor & {
    if (!arg(i).isTensor())
      fail(g + ": argument " + std::to_string(i) + " is not a tensor or storage");
    return a[i].toTensor();
  };
  // A view of a storage tensor; the geometry comes from the file.
  auto view = [&](const at::Tensor &storage, size_t first) {
    int64_t offset = arg(first).toInt();
    std::vector<int64_t> sizes = int_vec(arg(first + 1)), strides = int_vec(arg(first + 2));
    if (sizes.size() != strides.size()) fail(g + ": sizes and strides differ in length");
    // Checked before set_(), which would grow a resizable storage to fit.
    std::string why = ct::storage_misfit(sizes, strides, offset, storage.element_size(),
                                         storage.storage().nbytes());
    if (!why.empty()) refuse("a tensor does not fit its storage (" + why + ")");
    return at::empty({0}, storage.options()).set_(storage.storage(), offset, sizes, strides);
  };
  if (g == "collections.OrderedDict" || g == "builtins.dict") {
    // ([(key, value), ...],): the dict is two levels less deep than its arguments.
    c10::impl::GenericDict d(c10::AnyType::get(), c10::AnyType::get());
    owned(d);
    if (!a.empty() && a[0].isList())
      for (const auto &kv : a[0].toListRef()) {
        c10::ArrayRef<c10::IValue> e;
        if (kv.isTuple())
          e = kv.toTupleRef().elements();
        else if (kv.isList())
          e = kv.toListRef();
        if (e.size() != 2) fail(g + ": an item is not a (key, value) pair");
        d.insert_or_assign(e[0], e[1]);
      }
    return Item{d, {}, std::max(1, args_depth - 2)};
  }
  if (g == "builtins.set" || g == "builtins.frozenset" || g == "builtins.list") {
    c10::impl::GenericList l(c10::AnyType::get());
    if (!a.empty() && a[0].isList())
      for (const auto &x : a[0].toListRef()) l.push_back(x);
    return Item{owned(l), {}, std::max(1, args_depth - 1)};
  }
  if (g == "builtins.complex")
    return Item{c10::complex<double>(arg(0).toDouble(), a.size() > 1 ? a[1].toDouble() : 0.0), {}};
  if (g == "_codecs.encode") {
    // Protocol 2's bytes: _codecs.encode(text, "latin1"): code points -> bytes.
    const std::string &s = string_arg(0);
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      auto c = static_cast<uint8_t>(s[i]);
      if (c < 0x80)
        out.push_back(static_cast<char>(c));
      else if (i + 1 < s.size()) {
        out.push_back(
            static_cast<char>(((c & 0x1f) << 6) | (static_cast<uint8_t>(s[i + 1]) & 0x3f)));
        ++i;
      }
    }
    return Item{out, {}};
  }
  if (g == "torch.Size") return Item{c10::IValue(int_vec(arg(0))), {}, 1};
  if (g == "torch.device") {
    std::string s = string_arg(0);
    if (a.size() > 1 && a[1].isInt()) s += ":" + std::to_string(a[1].toInt());
    return Item{c10::Device(s), {}};
  }
  if (g == "torch._utils._rebuild_tensor_v2" || g == "torch._utils._rebuild_tensor") {
    // (storage, offset, sizes, strides[, requires_grad, hooks...])
    at::Tensor r = view(tensor_arg(0), 1);
    if (a.size() > 4 && a[4].isBool() && a[4].toBool()) r.set_requires_grad(true);
    return Item{r, {}};
  }
  if (g == "torch._utils._rebuild_parameter" || g == "torch._utils._rebuild_parameter_with_state") {
    at::Tensor t = tensor_arg(0);
    if (arg(1).toBool() && (t.is_floating_point() || t.is_complex())) t.set_requires_grad(true);
    return Item{t, {}};
  }
  if (g == "torch._utils._rebuild_qtensor") {
    // (storage, offset, sizes, strides, (scheme, ...), ...)
    std::vector<c10::IValue> q = tuple_items(arg(4));
    if (q.empty() || !q[0].isString()) fail(g + ": unreadable quantization parameters");
    std::string scheme = q[0].toStringRef();
    size_t want = scheme == "torch.per_tensor_affine"    ? 3
                  : scheme == "torch.per_channel_affine" ? 4
                                                         : 0;
    if (!want) fail("quantization scheme " + scheme + " is not supported");
    if (q.size() < want) fail(g + ": too few quantization parameters");
    // The storage tensor holds the integers (uint8 for quint8, int8, int32).
    at::Tensor ints = view(tensor_arg(0), 1);
    if (want == 3)
      return Item{at::_make_per_tensor_quantized_tensor(ints, q[1].toDouble(), q[2].toInt()), {}};
    return Item{at::_make_per_channel_quantized_tensor(ints, q[1].toTensor(), q[2].toTensor(),
                                                       q[3].toInt()),
                {}};
  }
  if (g == "torch._utils._rebuild_meta_tensor_no_storage") {
    c10::ScalarType st;
    if (!torch_dtype(string_arg(0), &st)) fail("unknown dtype " + a[0].toStringRef());
    return Item{at::empty_strided(int_vec(arg(1)), int_vec(arg(2)),
                                  at::TensorOptions().dtype(st).device(c10::kMeta)),
                {}};
  }
  if (g == "torch._tensor._rebuild_from_type_v2" || g == "torch._tensor._rebuild_from_type") {
    // (func, type, args, state): rebuild the plain tensor, drop the subclass.
    if (!arg(0).isString()) fail(g + ": unexpected arguments");
    return call_global(a[0].toStringRef(), Item{arg(2), {}, args_depth - 1}, owned, calls + 1);
  }
  // A layout ("torch.sparse_coo"): its name, as a layout pickled as a global is.
  if (g == "torch.serialization._get_layout") return Item{string_arg(0), {}};
  if (g == "torch._utils._rebuild_sparse_tensor" ||
      g == "torch._utils._rebuild_sparse_csr_tensor") {  // the latter: torch 1.13's CSR
    // (layout, (indices, values, size[, is_coalesced])) or, compressed,
    // (layout, (compressed_indices, plain_indices, values, size)); checked
    // as Python's torch.load checks them, since the indices come from the file.
    const std::string &layout = string_arg(0);
    std::vector<c10::IValue> d = tuple_items(arg(1));
    auto item = [&](size_t i) -> const c10::IValue & {
      if (i >= d.size()) fail(g + ": too few components");
      return d[i];
    };
    auto tensor_item = [&](size_t i) -> at::Tensor {
      if (!item(i).isTensor()) fail(g + ": component " + std::to_string(i) + " is not a tensor");
      return d[i].toTensor();
    };
    if (layout == "torch.sparse_coo") {
      at::Tensor indices = tensor_item(0), values = tensor_item(1);
      std::vector<int64_t> size = int_vec(item(2));
      at::_validate_sparse_coo_tensor_args(indices, values, size);
      at::Tensor t = at::_sparse_coo_tensor_unsafe(indices, values, size);
      if (d.size() > 3 && d[3].isBool()) t._coalesced_(d[3].toBool());
      return Item{t, {}};
    }
    static const std::pair<const char *, c10::Layout> compressed[] = {
        {"torch.sparse_csr", c10::kSparseCsr},
        {"torch.sparse_csc", c10::kSparseCsc},
        {"torch.sparse_bsr", c10::kSparseBsr},
        {"torch.sparse_bsc", c10::kSparseBsc}};
    for (const auto &c : compressed)
      if (layout == c.first) {
        at::Tensor ci = tensor_item(0), pi = tensor_item(1), values = tensor_item(2);
        std::vector<int64_t> size = int_vec(item(3));
        at::_validate_sparse_compressed_tensor_args(ci, pi, values, size, c.second);
        return Item{at::_sparse_compressed_tensor_unsafe(ci, pi, values, size,
                                                         values.options().layout(c.second)),
                    {}};
      }
    fail(g + ": unknown sparse layout " + layout);
  }
  // What LibTorch's own Pickler writes (torch::pickle_save): typed lists
  // and type tags on containers.
  static const std::pair<const char *, c10::TypePtr (*)()> typed_lists[] = {
      {"torch.jit._pickle.build_intlist", [] { return c10::TypePtr(c10::IntType::get()); }},
      {"torch.jit._pickle.build_doublelist", [] { return c10::TypePtr(c10::FloatType::get()); }},
      {"torch.jit._pickle.build_boollist", [] { return c10::TypePtr(c10::BoolType::get()); }},
      {"torch.jit._pickle.build_tensorlist", [] { return c10::TypePtr(c10::TensorType::get()); }}};
  for (const auto &tl : typed_lists)
    if (g == tl.first) {
      if (!arg(0).isList()) fail(g + ": argument 0 is not a list");
      c10::TypePtr type = tl.second();
      c10::impl::GenericList l(type);
      for (const c10::IValue &x : a[0].toListRef()) {
        if (!x.type()->isSubtypeOf(*type))
          fail(g + ": an item is a " + x.tagKind() + ", not a " + type->str());
        l.push_back(x);
      }
      return Item{owned(l), {}, std::max(1, args_depth - 1)};
    }
  if (g == "torch.jit._pickle.restore_type_tag")  // (container, type string): the container
    return Item{arg(0), {}, std::max(0, args_depth - 1)};
  if (g == "numpy.core.multiarray.scalar" || g == "numpy._core.multiarray.scalar") {
    bool swap;
    c10::ScalarType st = numpy_dtype(arg(0), &swap);
    return Item{scalar_of(tensor_from_bytes(bytes_of(arg(1)), st, swap, {})), {}};
  }
  if (g == "numpy.core.multiarray._reconstruct" || g == "numpy._core.multiarray._reconstruct")
    return Item{owned(make_object("numpy.ndarray", args_v)), {}, nest(args_depth)};
  if (g == "copyreg._reconstructor")
    return Item{
        owned(make_object(string_arg(0), c10::ivalue::Tuple::create(std::vector<c10::IValue>{}))),
        {},
        2};
  return Item{owned(make_object(g, std::move(args_v))), {}, nest(args_depth)};
}

c10::IValue build_object(Item &it, Item state_item) {
  if (!it.v.isObject())
    return c10::IValue();  // OrderedDict's _metadata, Parameters' state: dropped
  const int depth = nest(state_item.depth);
  c10::IValue state = value(std::move(state_item));
  auto obj = it.v.toObject();
  if (obj->type()->name()->qualifiedName() == "numpy.ndarray" && state.isTuple()) {
    // (version, shape, dtype, is_fortran, raw bytes)
    std::vector<c10::IValue> e = tuple_items(state);
    if (e.size() < 5) fail("unreadable numpy array");
    bool swap;
    c10::ScalarType st = numpy_dtype(e[2], &swap);
    std::vector<int64_t> shape = int_vec(e[1]);
    at::Tensor t;
    if (e[3].toBool()) {  // Fortran order: reversed shape, then transposed
      std::vector<int64_t> rev(shape.rbegin(), shape.rend());
      t = tensor_from_bytes(bytes_of(e[4]), st, swap, rev)
              .permute(reverse_dims(shape.size()))
              .contiguous();
    } else {
      t = tensor_from_bytes(bytes_of(e[4]), st, swap, shape);
    }
    return t;
  }
  obj->setSlot(1, std::move(state));
  it.depth = std::max(it.depth, depth);
  return c10::IValue();
}

}  // namespace pickle
}  // namespace ct
