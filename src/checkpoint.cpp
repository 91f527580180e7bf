// Checkpoints as people have them: a pickle reader of ctorch's own for
// torch.save files that LibTorch's Unpickler refuses -- legacy (pre-1.6,
// non-zip) files, plain Python objects (argparse.Namespace, whole nn.Modules),
// numpy scalars and arrays. It never runs Python code: tensors, containers and
// numbers become values as usual, numpy arrays tensors, numpy scalars numbers,
// and every other object a generic CT_VALUE_OBJECT of its class name holding
// the constructor arguments and the state it was pickled with.
#include "checkpoint.h"
#include "checks.h"
#include "internal.h"

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/csrc/jit/api/compilation_unit.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace {

[[noreturn]] void fail(const std::string &msg) { throw std::runtime_error(msg); }

// ---- Generic objects -----------------------------------------------------------

const std::shared_ptr<torch::jit::CompilationUnit> &object_unit() {
  static auto *cu = new std::shared_ptr<torch::jit::CompilationUnit>(
      std::make_shared<torch::jit::CompilationUnit>());
  return *cu;
}

// One class type per Python class name, with the slots "__args__" and "__state__".
std::mutex object_class_mutex;
ct::ForkSafe object_class_fork_safe(object_class_mutex);
c10::ClassTypePtr object_class(const std::string &name) {
  static std::mutex &mu = object_class_mutex;
  static auto *types = new std::unordered_map<std::string, c10::ClassTypePtr>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = types->find(name);
  if (it != types->end()) return it->second;
  auto cls = c10::ClassType::create(c10::QualifiedName(name), object_unit(), false);
  cls->addAttribute(ct::kObjectArgs, c10::AnyType::get());
  cls->addAttribute(ct::kObjectState, c10::AnyType::get());
  types->emplace(name, cls);
  return cls;
}

c10::IValue make_object(const std::string &cls, c10::IValue args) {
  auto obj = c10::ivalue::Object::create(c10::StrongTypePtr(object_unit(), object_class(cls)), 2);
  obj->setSlot(0, std::move(args));
  obj->setSlot(1, c10::IValue());
  return obj;
}

// ---- The stack machine ------------------------------------------------------------

// A stack or memo entry: a value, or a reference to a Python global
// ("module.name") that REDUCE/NEWOBJ/BUILD interpret.
struct Item {
  c10::IValue v;
  std::string global;
};

struct Storages {
  virtual ~Storages() = default;
  // The storage of a persistent id ('storage', type, key, location, numel, ...).
  virtual at::Tensor get(c10::ScalarType st, const std::string &key, int64_t numel,
                         const c10::IValue &view) = 0;
};

c10::ScalarType storage_dtype(const std::string &cls) {
  // "torch.FloatStorage" -> Float; "torch.storage.UntypedStorage" -> Byte.
  std::string n = cls.substr(cls.rfind('.') + 1);
  if (n == "UntypedStorage" || n == "TypedStorage") return c10::kByte;
  if (n.size() > 7 && n.compare(n.size() - 7, 7, "Storage") == 0) n.resize(n.size() - 7);
  for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
    auto st = static_cast<c10::ScalarType>(i);
    if (n == c10::toString(st)) return st;
  }
  fail("unknown storage type " + cls);
}

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
  at::Tensor t = at::empty(shape, at::TensorOptions().dtype(st));
  size_t n = static_cast<size_t>(t.numel()) * t.element_size();
  if (raw.size() != n) fail("numpy data has the wrong size");
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

class Machine {
 public:
  Machine(const char *data, size_t size, Storages *storages)
      : p_(data), end_(data + size), storages_(storages) {}

  const char *pos() const { return p_; }

  c10::IValue run() {
    stack_.clear();
    marks_.clear();
    memo_.clear();
    for (;;) {
      uint8_t op = u8();
      switch (op) {
        case 0x80: u8(); break;         // PROTO
        case 0x95: take(8); break;      // FRAME
        case '.': return value(pop());  // STOP
        case '(': marks_.push_back(stack_.size()); break;
        case '0': pop(); break;
        case '1': pop_mark(); break;
        case '2': stack_.push_back(top()); break;
        case 'N': push(c10::IValue()); break;
        case 0x88: push(true); break;
        case 0x89: push(false); break;
        case 'K': push(static_cast<int64_t>(u8())); break;
        case 'M': push(static_cast<int64_t>(le<uint16_t>())); break;
        case 'J': push(static_cast<int64_t>(le<int32_t>())); break;
        case 0x8a: push(long_n(u8())); break;
        case 0x8b: push(long_n(le<uint32_t>())); break;
        case 'I': {
          std::string s = line();
          if (s == "01" || s == "00")
            push(s == "01");
          else
            push(static_cast<int64_t>(std::stoll(s)));
          break;
        }
        case 'L': {
          std::string s = line();
          if (!s.empty() && s.back() == 'L') s.pop_back();
          push(static_cast<int64_t>(std::stoll(s)));
          break;
        }
        case 'F': push(std::stod(line())); break;
        case 'G': {
          uint64_t bits = 0;
          for (int i = 0; i < 8; ++i) bits = (bits << 8) | u8();
          double d;
          std::memcpy(&d, &bits, 8);
          push(d);
          break;
        }
        case 'X': push(str(le<uint32_t>())); break;
        case 0x8c: push(str(u8())); break;
        case 0x8d: push(str(le<uint64_t>())); break;
        case 'B':
        case 'T': push(str(le<uint32_t>())); break;
        case 'C':
        case 'U': push(str(u8())); break;
        case 0x8e:
        case 0x96: push(str(le<uint64_t>())); break;
        case 'S': {
          std::string s = line();
          if (s.size() >= 2 && (s[0] == '\'' || s[0] == '"')) s = s.substr(1, s.size() - 2);
          push(s);
          break;
        }
        case 'V': push(line()); break;
        case ']': push(c10::impl::GenericList(c10::AnyType::get())); break;
        case 'l': {
          auto items = pop_mark();
          c10::impl::GenericList l(c10::AnyType::get());
          for (auto &x : items) l.push_back(value(std::move(x)));
          push(std::move(l));
          break;
        }
        case 0x8f: push(c10::impl::GenericList(c10::AnyType::get())); break;  // EMPTY_SET
        case 'a': {
          c10::IValue x = value(pop());
          list_of(top()).push_back(std::move(x));
          break;
        }
        case 'e':
        case 0x90: {  // APPENDS, ADDITEMS
          auto items = pop_mark();
          auto l = list_of(top());
          for (auto &x : items) l.push_back(value(std::move(x)));
          break;
        }
        case 0x91: {  // FROZENSET
          auto items = pop_mark();
          c10::impl::GenericList l(c10::AnyType::get());
          for (auto &x : items) l.push_back(value(std::move(x)));
          push(std::move(l));
          break;
        }
        case ')': push(c10::ivalue::Tuple::create(std::vector<c10::IValue>{})); break;
        case 't': {
          auto items = pop_mark();
          push(tuple(items));
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {
          size_t n = op - 0x84;
          if (stack_.size() < n) fail("stack underflow");
          std::vector<Item> items(std::make_move_iterator(stack_.end() - n),
                                  std::make_move_iterator(stack_.end()));
          stack_.resize(stack_.size() - n);
          push(tuple(items));
          break;
        }
        case '}': push(new_dict()); break;
        case 'd': {
          auto items = pop_mark();
          auto d = new_dict();
          set_items(d, items);
          push(std::move(d));
          break;
        }
        case 's': {
          c10::IValue v = value(pop());
          c10::IValue k = value(pop());
          dict_of(top()).insert_or_assign(std::move(k), std::move(v));
          break;
        }
        case 'u': {
          auto items = pop_mark();
          auto d = dict_of(top());
          set_items(d, items);
          break;
        }
        case 'p': memo_[std::stoul(line())] = top(); break;
        case 'q': memo_[u8()] = top(); break;
        case 'r': memo_[le<uint32_t>()] = top(); break;
        case 0x94: memo_[memo_.size()] = top(); break;
        case 'g': stack_.push_back(memo(std::stoul(line()))); break;
        case 'h': stack_.push_back(memo(u8())); break;
        case 'j': stack_.push_back(memo(le<uint32_t>())); break;
        case 'c': {
          std::string mod = line();
          std::string name = line();
          stack_.push_back(Item{c10::IValue(), global_name(mod, name)});
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          std::string name = value(pop()).toStringRef();
          std::string mod = value(pop()).toStringRef();
          stack_.push_back(Item{c10::IValue(), global_name(mod, name)});
          break;
        }
        case 'R': {
          c10::IValue args = value(pop());
          Item fn = pop();
          push_item(call(fn, std::move(args)));
          break;
        }
        case 0x81: {  // NEWOBJ: cls.__new__(cls, *args)
          c10::IValue args = value(pop());
          Item cls = pop();
          push_item(call(cls, std::move(args)));
          break;
        }
        case 0x92: {  // NEWOBJ_EX
          pop();      // kwargs
          c10::IValue args = value(pop());
          Item cls = pop();
          push_item(call(cls, std::move(args)));
          break;
        }
        case 'o': {  // OBJ: mark cls args...
          auto items = pop_mark();
          if (items.empty()) fail("OBJ without a class");
          Item cls = std::move(items.front());
          items.erase(items.begin());
          push_item(call(cls, tuple(items)));
          break;
        }
        case 'i': {  // INST module name: mark args...
          std::string mod = line();
          std::string name = line();
          auto items = pop_mark();
          push_item(call(Item{c10::IValue(), global_name(mod, name)}, tuple(items)));
          break;
        }
        case 'b': {
          c10::IValue state = value(pop());
          build(std::move(state));
          break;
        }
        case 'Q': {
          c10::IValue pid = value(pop());
          push(persistent(pid));
          break;
        }
        case 'P': fail("text persistent ids are not supported");
        default: {
          char buf[64];
          std::snprintf(buf, sizeof buf, "unsupported pickle opcode 0x%02x", op);
          fail(buf);
        }
      }
    }
  }

 private:
  // ---- Reading ----
  uint8_t u8() {
    if (p_ >= end_) fail("truncated pickle");
    return static_cast<uint8_t>(*p_++);
  }
  const char *take(uint64_t n) {
    if (n > static_cast<uint64_t>(end_ - p_)) fail("truncated pickle");
    const char *s = p_;
    p_ += n;
    return s;
  }
  template <class T>
  T le() {
    T x;
    std::memcpy(&x, take(sizeof(T)), sizeof(T));
    return x;
  }
  std::string str(uint64_t n) {
    const char *s = take(n);
    return std::string(s, n);
  }
  std::string line() {
    const char *nl = static_cast<const char *>(std::memchr(p_, '\n', end_ - p_));
    if (!nl) fail("truncated pickle");
    std::string s(p_, nl);
    p_ = nl + 1;
    return s;
  }
  c10::IValue long_n(uint64_t n) {
    if (n > 8) fail("integer too large for int64");
    const char *s = take(n);
    int64_t x = 0;
    for (uint64_t i = 0; i < n; ++i)
      x |= static_cast<int64_t>(static_cast<uint8_t>(s[i])) << (8 * i);
    if (n > 0 && n < 8 && (static_cast<uint8_t>(s[n - 1]) & 0x80))
      x -= static_cast<int64_t>(1) << (8 * n);  // sign-extend
    return x;
  }

  // Python 2 names of protocol 2 (Python 3 maps them back when unpickling).
  static std::string global_name(const std::string &mod, const std::string &name) {
    if (mod == "__builtin__") return "builtins." + name;
    if (mod == "copy_reg") return "copyreg." + name;
    return mod + "." + name;
  }

  // ---- Stack ----
  void push(c10::IValue v) { stack_.push_back(Item{std::move(v), std::string()}); }
  void push_item(Item it) { stack_.push_back(std::move(it)); }
  Item pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back()))
      fail("stack underflow");
    Item it = std::move(stack_.back());
    stack_.pop_back();
    return it;
  }
  const Item &top() {
    if (stack_.empty()) fail("stack underflow");
    return stack_.back();
  }
  std::vector<Item> pop_mark() {
    if (marks_.empty()) fail("no mark");
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Item> items(std::make_move_iterator(stack_.begin() + m),
                            std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return items;
  }
  Item memo(size_t i) {
    auto it = memo_.find(i);
    if (it == memo_.end()) fail("bad memo reference");
    return it->second;
  }
  static c10::impl::GenericDict new_dict() {
    return c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get());
  }
  c10::impl::GenericList list_of(const Item &it) {
    if (!it.v.isList()) fail("APPEND to something that is not a list");
    return it.v.toList();
  }
  c10::impl::GenericDict dict_of(const Item &it) {
    if (!it.v.isGenericDict()) fail("SETITEM on something that is not a dict");
    return it.v.toGenericDict();
  }
  void set_items(c10::impl::GenericDict &d, std::vector<Item> &items) {
    if (items.size() % 2) fail("odd number of dict items");
    for (size_t i = 0; i < items.size(); i += 2)
      d.insert_or_assign(value(std::move(items[i])), value(std::move(items[i + 1])));
  }
  c10::IValue tuple(std::vector<Item> &items) {
    std::vector<c10::IValue> v;
    v.reserve(items.size());
    for (auto &x : items) v.push_back(value(std::move(x)));
    return c10::ivalue::Tuple::create(std::move(v));
  }
  // A global used as a value: its qualified name as a string.
  static c10::IValue value(Item it) {
    if (!it.global.empty()) return c10::IValue(it.global);
    return std::move(it.v);
  }

  // ---- REDUCE / NEWOBJ: known callables, else a generic object ----
  Item call(const Item &fn, c10::IValue args_v) {
    if (fn.global.empty()) fail("call of something that is not a global");
    const std::string &g = fn.global;
    std::vector<c10::IValue> a = tuple_items(args_v);
    auto arg = [&](size_t i) -> const c10::IValue & {
      if (i >= a.size()) fail(g + ": too few arguments");
      return a[i];
    };
    if (g == "collections.OrderedDict" || g == "builtins.dict") {
      auto d = new_dict();
      if (!a.empty() && a[0].isList())
        for (const auto &kv : a[0].toListRef()) {
          auto &e = kv.toTupleRef().elements();
          d.insert_or_assign(e[0], e[1]);
        }
      return Item{d, {}};
    }
    if (g == "builtins.set" || g == "builtins.frozenset" || g == "builtins.list") {
      c10::impl::GenericList l(c10::AnyType::get());
      if (!a.empty() && a[0].isList())
        for (const auto &x : a[0].toListRef()) l.push_back(x);
      return Item{l, {}};
    }
    if (g == "builtins.complex")
      return Item{c10::complex<double>(arg(0).toDouble(), a.size() > 1 ? a[1].toDouble() : 0.0),
                  {}};
    if (g == "_codecs.encode") {
      // Protocol 2's bytes: _codecs.encode(text, "latin1"): code points -> bytes.
      const std::string &s = arg(0).toStringRef();
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
    if (g == "torch.Size") return Item{c10::IValue(int_vec(arg(0))), {}};
    if (g == "torch.device") {
      std::string s = arg(0).toStringRef();
      if (a.size() > 1 && a[1].isInt()) s += ":" + std::to_string(a[1].toInt());
      return Item{c10::Device(s), {}};
    }
    if (g == "torch._utils._rebuild_tensor_v2" || g == "torch._utils._rebuild_tensor") {
      at::Tensor t = arg(0).toTensor();
      at::Tensor r = at::empty({0}, t.options())
                         .set_(t.storage(), arg(1).toInt(), int_vec(arg(2)), int_vec(arg(3)));
      if (a.size() > 4 && a[4].isBool() && a[4].toBool()) r.set_requires_grad(true);
      return Item{r, {}};
    }
    if (g == "torch._utils._rebuild_parameter" ||
        g == "torch._utils._rebuild_parameter_with_state") {
      at::Tensor t = arg(0).toTensor();
      if (arg(1).toBool() && (t.is_floating_point() || t.is_complex())) t.set_requires_grad(true);
      return Item{t, {}};
    }
    if (g == "torch._utils._rebuild_qtensor") {
      at::Tensor t = arg(0).toTensor();
      std::vector<c10::IValue> q = tuple_items(arg(4));
      // The storage tensor holds the integers (uint8 for quint8, int8, int32).
      at::Tensor ints = at::empty({0}, t.options())
                            .set_(t.storage(), arg(1).toInt(), int_vec(arg(2)), int_vec(arg(3)));
      std::string scheme = q.at(0).toStringRef();
      if (scheme == "torch.per_tensor_affine")
        return Item{
            at::_make_per_tensor_quantized_tensor(ints, q.at(1).toDouble(), q.at(2).toInt()), {}};
      if (scheme == "torch.per_channel_affine")
        return Item{at::_make_per_channel_quantized_tensor(ints, q.at(1).toTensor(),
                                                           q.at(2).toTensor(), q.at(3).toInt()),
                    {}};
      fail("quantization scheme " + scheme + " is not supported");
    }
    if (g == "torch._utils._rebuild_meta_tensor_no_storage") {
      c10::ScalarType st;
      if (!torch_dtype(arg(0).toStringRef(), &st)) fail("unknown dtype " + arg(0).toStringRef());
      return Item{at::empty_strided(int_vec(arg(1)), int_vec(arg(2)),
                                    at::TensorOptions().dtype(st).device(c10::kMeta)),
                  {}};
    }
    if (g == "torch._tensor._rebuild_from_type_v2" || g == "torch._tensor._rebuild_from_type") {
      // (func, type, args, state): rebuild the plain tensor, drop the subclass.
      if (!arg(0).isString()) fail(g + ": unexpected arguments");
      return call(Item{c10::IValue(), arg(0).toStringRef()}, arg(2));
    }
    if (g == "numpy.core.multiarray.scalar" || g == "numpy._core.multiarray.scalar") {
      bool swap;
      c10::ScalarType st = numpy_dtype(arg(0), &swap);
      return Item{scalar_of(tensor_from_bytes(bytes_of(arg(1)), st, swap, {})), {}};
    }
    if (g == "numpy.core.multiarray._reconstruct" || g == "numpy._core.multiarray._reconstruct")
      return Item{make_object("numpy.ndarray", args_v), {}};
    if (g == "copyreg._reconstructor")
      return Item{
          make_object(arg(0).toStringRef(), c10::ivalue::Tuple::create(std::vector<c10::IValue>{})),
          {}};
    return Item{make_object(g, std::move(args_v)), {}};
  }

  // ---- BUILD: state into the object on top of the stack ----
  void build(c10::IValue state) {
    if (stack_.empty()) fail("BUILD on an empty stack");
    Item &it = stack_.back();
    if (!it.v.isObject()) return;  // OrderedDict's _metadata, Parameters' state: dropped
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
      replace(it.v, t);
      return;
    }
    obj->setSlot(1, std::move(state));
  }
  static std::vector<int64_t> reverse_dims(size_t n) {
    std::vector<int64_t> d(n);
    for (size_t i = 0; i < n; ++i) d[i] = static_cast<int64_t>(n - 1 - i);
    return d;
  }
  // A placeholder object becomes a value everywhere it was memoized.
  void replace(const c10::IValue &old, const c10::IValue &now) {
    const void *p = old.internalToPointer();
    for (auto &kv : memo_)
      if (kv.second.v.isObject() && kv.second.v.internalToPointer() == p) kv.second.v = now;
    for (auto &s : stack_)
      if (s.v.isObject() && s.v.internalToPointer() == p) s.v = now;
  }

  c10::IValue persistent(const c10::IValue &pid) {
    if (!pid.isTuple()) fail("unexpected persistent id");
    std::vector<c10::IValue> e = tuple_items(pid);  // a vector: no -Warray-bounds noise
    if (e.size() < 5 || !e[0].isString() || e[0].toStringRef() != "storage")
      fail("unexpected persistent id");
    if (!storages_) fail("this pickle refers to tensor data it does not have");
    c10::ScalarType st = storage_dtype(e[1].toStringRef());
    return storages_->get(st, e[2].toStringRef(), e[4].toInt(),
                          e.size() > 5 ? e[5] : c10::IValue());
  }

  const char *p_;
  const char *end_;
  Storages *storages_;
  std::vector<Item> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<size_t, Item> memo_;
};

// ---- Zip (torch.save since 1.6) ------------------------------------------------------

class BufferAdapter : public caffe2::serialize::ReadAdapterInterface {
 public:
  BufferAdapter(const char *d, size_t n) : d_(d), n_(n) {}
  size_t size() const override { return n_; }
  size_t read(uint64_t pos, void *buf, size_t n, const char *) const override {
    if (pos >= n_) return 0;
    n = std::min<size_t>(n, n_ - pos);
    std::memcpy(buf, d_ + pos, n);
    return n;
  }

 private:
  const char *d_;
  size_t n_;
};

// A tensor of dtype st over the whole storage (quantized storages hold ints).
at::Tensor storage_tensor(c10::Storage s, c10::ScalarType st) {
  auto opts = at::TensorOptions().dtype(st);
  int64_t es = static_cast<int64_t>(c10::elementSize(st));
  int64_t n = static_cast<int64_t>(s.nbytes()) / es;
  if (c10::isQIntType(st))  // the integers; _rebuild_qtensor makes the quantized tensor
    opts = opts.dtype(st == c10::kQInt8 ? c10::kChar : st == c10::kQInt32 ? c10::kInt : c10::kByte);
  return at::empty({0}, opts).set_(s, 0, {n}, {1});
}

struct ZipStorages : Storages {
  caffe2::serialize::PyTorchStreamReader &reader;
  std::unordered_map<std::string, c10::Storage> cache;
  explicit ZipStorages(caffe2::serialize::PyTorchStreamReader &r) : reader(r) {}
  at::Tensor get(c10::ScalarType st, const std::string &key, int64_t,
                 const c10::IValue &) override {
    auto it = cache.find(key);
    if (it == cache.end()) {
      at::DataPtr dp;
      size_t n = 0;
      std::tie(dp, n) = reader.getRecord("data/" + key);
      it = cache
               .emplace(key, c10::Storage(c10::Storage::use_byte_size_t(), n, std::move(dp),
                                          nullptr, false))
               .first;
    }
    return storage_tensor(it->second, st);
  }
};

// ---- Legacy (torch.save before 1.6, or _use_new_zipfile_serialization=False) --------

struct LegacyStorages : Storages {
  std::unordered_map<std::string, std::pair<at::Tensor, c10::ScalarType>> by_key;  // bytes
  at::Tensor get(c10::ScalarType st, const std::string &key, int64_t numel,
                 const c10::IValue &view) override {
    auto it = by_key.find(key);
    if (it == by_key.end()) {
      if (numel < 0) fail("negative storage size");
      at::Tensor bytes = at::empty({numel * static_cast<int64_t>(c10::elementSize(st))},
                                   at::TensorOptions().dtype(c10::kByte));
      it = by_key.emplace(key, std::make_pair(bytes, st)).first;
    }
    if (view.isTuple()) fail("legacy storage views are not supported");
    return storage_tensor(it->second.first.storage(), st);
  }
};

const unsigned char kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                      0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, '.'};

c10::IValue load_legacy(const char *data, size_t size) {
  const char *p = data + sizeof kLegacyMagic, *end = data + size;
  auto next = [&](Storages *s) {
    Machine m(p, end - p, s);
    c10::IValue v = m.run();
    p = m.pos();
    return v;
  };
  c10::IValue version = next(nullptr);
  if (!version.isInt() || version.toInt() != 1001)
    fail("unsupported legacy torch.save protocol version");
  next(nullptr);  // sys_info
  LegacyStorages storages;
  c10::IValue result = next(&storages);
  c10::IValue keys = next(nullptr);
  if (!keys.isList()) fail("legacy file without storage keys");
  for (const auto &k : keys.toListRef()) {
    auto it = storages.by_key.find(k.toStringRef());
    if (it == storages.by_key.end()) fail("legacy file with an unknown storage key");
    if (end - p < 8) fail("truncated legacy file");
    int64_t numel;
    std::memcpy(&numel, p, 8);
    p += 8;
    size_t nbytes = static_cast<size_t>(numel) * c10::elementSize(it->second.second);
    if (numel < 0 || static_cast<int64_t>(nbytes) != it->second.first.numel() ||
        nbytes > static_cast<size_t>(end - p))
      fail("legacy file with a storage of the wrong size");
    if (nbytes) std::memcpy(it->second.first.data_ptr(), p, nbytes);
    p += nbytes;
  }
  return result;
}

}  // namespace

namespace ct {

const char *const kObjectArgs = "__args__";
const char *const kObjectState = "__state__";

c10::IValue load_checkpoint(const char *data, size_t size) {
  if (size >= sizeof kLegacyMagic && std::memcmp(data, kLegacyMagic, sizeof kLegacyMagic) == 0)
    return load_legacy(data, size);
  if (size >= 4 && std::memcmp(data, "PK\x03\x04", 4) == 0) {
    caffe2::serialize::PyTorchStreamReader reader(std::make_shared<BufferAdapter>(data, size));
    at::DataPtr pkl;
    size_t n = 0;
    std::tie(pkl, n) = reader.getRecord("data.pkl");
    ZipStorages storages(reader);
    return Machine(static_cast<const char *>(pkl.get()), n, &storages).run();
  }
  // A bare pickle without tensor data (pickle.dump of plain objects).
  return Machine(data, size, nullptr).run();
}

}  // namespace ct

namespace {

// The object's class when it stands for a Python object (see make_object).
bool is_python_object(const c10::intrusive_ptr<c10::ivalue::Object> &obj) {
  const auto &cls = obj->type();
  return cls->compilation_unit() == object_unit() && cls->numAttributes() == 2 &&
         cls->getAttributeName(0) == ct::kObjectArgs;
}

// The object accessors: *out = get(the object), for a value that is one.
template <class Out, class Get>
ct_status object_part(const char *ct_fn_, Out *out, const ct_value *v, Get get) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(v);
    if (!v->v.isObject())
      return ct::set_error(CT_ERR_TYPE, "%s: the value is a %s, not an object", ct_fn_,
                           v->v.tagKind().c_str());
    *out = get(v->v.toObject());
    return CT_OK;
  });
}

using ObjectPtr = c10::intrusive_ptr<c10::ivalue::Object>;

}  // namespace

extern "C" {

ct_status ct_value_object_class(const char **out, const ct_value *v) {
  return object_part(__func__, out, v, [](const ObjectPtr &obj) {
    return obj->type()->name()->qualifiedName().c_str();
  });
}

ct_status ct_value_object_state(ct_value **out, const ct_value *v) {
  return object_part(__func__, out, v, [](const ObjectPtr &obj) {
    if (is_python_object(obj)) return ct::new_value(obj->getSlot(1));
    c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
    const auto &cls = obj->type();
    for (size_t i = 0; i < cls->numAttributes(); ++i)
      d.insert(cls->getAttributeName(i), obj->getSlot(i));
    return ct::new_value(std::move(d));
  });
}

ct_status ct_value_object_args(ct_value **out, const ct_value *v) {
  return object_part(__func__, out, v, [](const ObjectPtr &obj) {
    return ct::new_value(is_python_object(obj)
                             ? obj->getSlot(0)
                             : c10::ivalue::Tuple::create(std::vector<c10::IValue>{}));
  });
}

}  // extern "C"
