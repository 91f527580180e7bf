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
#include <unordered_set>

namespace {

[[noreturn]] void fail(const std::string &msg) { throw std::runtime_error(msg); }
// A file ctorch refuses on purpose (too deep, a tensor outside its storage):
// reported as "cannot load <file>: <why>" whichever reader got there.
[[noreturn]] void refuse(const std::string &why) { throw ct::Error(CT_ERR_IO, why); }

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
  // How deep lists, tuples, dicts and objects nest in v (0: none), as built;
  // a memoized container filled later can make it too small, so the value
  // is checked exactly again at STOP.
  int depth = 0;
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

class Machine {
 public:
  Machine(const char *data, size_t size, Storages *storages)
      : p_(data), end_(data + size), storages_(storages) {}
  // Every container this machine made is in owned_, so nothing it drops is
  // destroyed while it runs; at the end each is let go without recursion
  // (a value nested 100,000 deep would overflow the stack in destructors).
  ~Machine() {
    for (Item &it : stack_) ct::release_value(std::move(it.v));
    for (auto &kv : memo_) ct::release_value(std::move(kv.second.v));
    for (c10::IValue &v : owned_) ct::release_value(std::move(v));
  }
  Machine(const Machine &) = delete;
  Machine &operator=(const Machine &) = delete;

  const char *pos() const { return p_; }

  c10::IValue run() {
    stack_.clear();
    marks_.clear();
    memo_.clear();
    for (;;) {
      uint8_t op = u8();
      switch (op) {
        case 0x80: u8(); break;          // PROTO
        case 0x95: take(8); break;       // FRAME
        case '.': return finish(pop());  // STOP
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
        case ']': push(owned(c10::impl::GenericList(c10::AnyType::get())), 1); break;
        case 'l':
        case 0x91: {  // LIST, FROZENSET
          auto items = pop_mark();
          int depth = nest(items);
          c10::impl::GenericList l(c10::AnyType::get());
          for (auto &x : items) l.push_back(value(std::move(x)));
          push(owned(std::move(l)), depth);
          break;
        }
        case 0x8f: push(owned(c10::impl::GenericList(c10::AnyType::get())), 1); break;  // EMPTY_SET
        case 'a': {
          Item x = pop();
          Item &l = top();
          int depth = nest(x.depth);
          list_of(l).push_back(value(std::move(x)));
          l.depth = std::max(l.depth, depth);
          break;
        }
        case 'e':
        case 0x90: {  // APPENDS, ADDITEMS
          auto items = pop_mark();
          Item &top_item = top();
          auto l = list_of(top_item);
          top_item.depth = std::max(top_item.depth, nest(items));
          for (auto &x : items) l.push_back(value(std::move(x)));
          break;
        }
        case ')': push(owned(c10::ivalue::Tuple::create(std::vector<c10::IValue>{})), 1); break;
        case 't': {
          auto items = pop_mark();
          push_item(tuple(items));
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3: items above the topmost mark only
          size_t n = op - 0x84;
          if (stack_.size() < n || (!marks_.empty() && stack_.size() - n < marks_.back()))
            fail("stack underflow");
          std::vector<Item> items(std::make_move_iterator(stack_.end() - n),
                                  std::make_move_iterator(stack_.end()));
          stack_.resize(stack_.size() - n);
          push_item(tuple(items));
          break;
        }
        case '}': push(owned(new_dict()), 1); break;
        case 'd': {
          auto items = pop_mark();
          int depth = nest(items);
          auto d = new_dict();
          owned_.push_back(d);
          set_items(d, items);
          push(std::move(d), depth);
          break;
        }
        case 's': {
          Item v = pop();
          Item k = pop();
          Item &d = top();
          int depth = nest(std::max(k.depth, v.depth));
          dict_of(d).insert_or_assign(value(std::move(k)), value(std::move(v)));
          d.depth = std::max(d.depth, depth);
          break;
        }
        case 'u': {
          auto items = pop_mark();
          Item &top_item = top();
          auto d = dict_of(top_item);
          top_item.depth = std::max(top_item.depth, nest(items));
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
        case 'R':
        case 0x81: {  // REDUCE: fn(*args); NEWOBJ: cls.__new__(cls, *args)
          Item args = pop();
          Item fn = pop();
          push_item(call(fn, std::move(args)));
          break;
        }
        case 0x92: {  // NEWOBJ_EX
          pop();      // kwargs
          Item args = pop();
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
          Item state = pop();
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
  void push(c10::IValue v, int depth = 0) {
    stack_.push_back(Item{std::move(v), std::string(), depth});
  }
  void push_item(Item it) { stack_.push_back(std::move(it)); }
  // A container or object made here: kept until the machine ends (~Machine).
  c10::IValue owned(c10::IValue v) {
    owned_.push_back(v);
    return v;
  }
  // The depth of a container around something `inner` deep.
  static int nest(int inner) {
    if (inner >= ct::kMaxNesting) refuse(ct::nesting_too_deep());
    return inner + 1;
  }
  static int nest(const std::vector<Item> &items) {
    int d = 0;
    for (const Item &x : items) d = std::max(d, x.depth);
    return nest(d);
  }
  // STOP: the result, checked exactly (a memoized container filled after it
  // was used escapes the depths counted while building).
  c10::IValue finish(Item it) {
    c10::IValue v = value(std::move(it));
    std::string why = ct::loaded_nesting_problem(v);
    if (!why.empty()) {
      ct::release_value(std::move(v));
      refuse(why);
    }
    return v;
  }
  Item pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back()))
      fail("stack underflow");
    Item it = std::move(stack_.back());
    stack_.pop_back();
    return it;
  }
  Item &top() {
    if (stack_.empty()) fail("stack underflow");
    return stack_.back();
  }
  std::vector<Item> pop_mark() {
    if (marks_.empty()) fail("no mark");
    size_t m = marks_.back();
    marks_.pop_back();
    if (m > stack_.size()) fail("stack underflow");
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
  Item tuple(std::vector<Item> &items) {
    int depth = nest(items);
    std::vector<c10::IValue> v;
    v.reserve(items.size());
    for (auto &x : items) v.push_back(value(std::move(x)));
    return Item{owned(c10::ivalue::Tuple::create(std::move(v))), {}, depth};
  }
  // A global used as a value: its qualified name as a string.
  static c10::IValue value(Item it) {
    if (!it.global.empty()) return c10::IValue(it.global);
    return std::move(it.v);
  }

  // ---- REDUCE / NEWOBJ: known callables, else a generic object ----
  // Every item of the file is checked for type and count before use: a
  // malformed file fails with a message, never reads past a tuple.
  Item call(const Item &fn, Item args, int calls = 0) {
    if (fn.global.empty()) fail("call of something that is not a global");
    // _rebuild_from_type_v2 calls the function it is given: bounded like nesting.
    if (calls >= ct::kMaxNesting) refuse(ct::nesting_too_deep());
    const std::string &g = fn.global;
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
      auto d = new_dict();
      owned_.push_back(d);
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
      return Item{c10::complex<double>(arg(0).toDouble(), a.size() > 1 ? a[1].toDouble() : 0.0),
                  {}};
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
    if (g == "torch._utils._rebuild_parameter" ||
        g == "torch._utils._rebuild_parameter_with_state") {
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
      return call(Item{c10::IValue(), a[0].toStringRef()}, Item{arg(2), {}, args_depth - 1},
                  calls + 1);
    }
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

  // ---- BUILD: state into the object on top of the stack ----
  void build(Item state_item) {
    if (stack_.empty()) fail("BUILD on an empty stack");
    Item &it = stack_.back();
    if (!it.v.isObject()) return;  // OrderedDict's _metadata, Parameters' state: dropped
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
      replace(it.v, t);
      return;
    }
    obj->setSlot(1, std::move(state));
    it.depth = std::max(it.depth, depth);
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
    if (!e[1].isString() || !e[2].isString() || !e[4].isInt()) fail("unexpected persistent id");
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
  std::vector<c10::IValue> owned_;
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

// Bytes of `numel` elements of `st`, or -1 if negative or past int64.
int64_t storage_bytes(int64_t numel, c10::ScalarType st) {
  int64_t n;
  if (numel < 0 || __builtin_mul_overflow(numel, static_cast<int64_t>(c10::elementSize(st)), &n))
    return -1;
  return n;
}

struct LegacyStorages : Storages {
  std::unordered_map<std::string, std::pair<at::Tensor, c10::ScalarType>> by_key;  // bytes
  // The storages' bytes follow the pickles in the file: none can be larger.
  int64_t max_bytes;
  explicit LegacyStorages(size_t file_size) : max_bytes(static_cast<int64_t>(file_size)) {}
  at::Tensor get(c10::ScalarType st, const std::string &key, int64_t numel,
                 const c10::IValue &view) override {
    auto it = by_key.find(key);
    if (it == by_key.end()) {
      int64_t nbytes = storage_bytes(numel, st);
      if (nbytes < 0 || nbytes > max_bytes)
        refuse("legacy storage '" + key + "' of " + std::to_string(numel) + " " +
               c10::toString(st) + " elements is larger than the file");
      at::Tensor bytes = at::empty({nbytes}, at::TensorOptions().dtype(c10::kByte));
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
  LegacyStorages storages(size);
  c10::IValue result = next(&storages);
  c10::IValue keys = next(nullptr);
  if (!keys.isList()) fail("legacy file without storage keys");
  std::unordered_set<std::string> filled;
  for (const auto &k : keys.toListRef()) {
    auto it = storages.by_key.find(k.isString() ? k.toStringRef() : std::string());
    if (it == storages.by_key.end() || !filled.insert(it->first).second)
      fail("legacy file with an unknown or repeated storage key");
    if (end - p < 8) fail("truncated legacy file");
    int64_t numel;
    std::memcpy(&numel, p, 8);
    p += 8;
    int64_t nbytes = storage_bytes(numel, it->second.second);
    if (nbytes < 0 || nbytes != it->second.first.numel() || nbytes > end - p)
      fail("legacy file with a storage of the wrong size");
    if (nbytes) std::memcpy(it->second.first.data_ptr(), p, nbytes);
    p += nbytes;
  }
  // Each key once, and every storage the pickle used has its data.
  if (filled.size() != storages.by_key.size())
    fail("legacy file without the data of every storage");
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
