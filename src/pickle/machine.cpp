// The pickle machine of ctorch's torch.save reader: protocol 0-5 opcodes,
// the stack, marks and memo, nesting depths, and the exact check at STOP.
// What a global means when called is in globals.cpp.
#include "pickle/reader.h"

#include "checks.h"
#include "internal.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unordered_map>

namespace ct {
namespace pickle {

void fail(const std::string &msg) { throw std::runtime_error(msg); }
void refuse(const std::string &why) { throw ct::Error(CT_ERR_IO, why); }

int nest(int inner) {
  if (inner >= ct::kMaxNesting) refuse(ct::nesting_too_deep());
  return inner + 1;
}

c10::IValue value(Item it) {
  if (!it.global.empty()) return c10::IValue(it.global);
  return std::move(it.v);
}

Keep::~Keep() {
  for (c10::IValue &v : owned_) ct::release_value(std::move(v));
}

namespace {

class Machine {
 public:
  Machine(const char *data, size_t size, Storages *storages)
      : p_(data), end_(data + size), storages_(storages) {}
  // What the stack and memo hold is let go without recursion (see Keep).
  ~Machine() {
    for (Item &it : stack_) ct::release_value(std::move(it.v));
    for (auto &kv : memo_) ct::release_value(std::move(kv.second.v));
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
          owned(d);
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
          push_item(call_fn(fn, std::move(args)));
          break;
        }
        case 0x92: {  // NEWOBJ_EX
          pop();      // kwargs
          Item args = pop();
          Item cls = pop();
          push_item(call_fn(cls, std::move(args)));
          break;
        }
        case 'o': {  // OBJ: mark cls args...
          auto items = pop_mark();
          if (items.empty()) fail("OBJ without a class");
          Item cls = std::move(items.front());
          items.erase(items.begin());
          push_item(call_fn(cls, tuple(items)));
          break;
        }
        case 'i': {  // INST module name: mark args...
          std::string mod = line();
          std::string name = line();
          auto items = pop_mark();
          push_item(call_fn(Item{c10::IValue(), global_name(mod, name)}, tuple(items)));
          break;
        }
        case 'b': {
          Item state = pop();
          if (stack_.empty()) fail("BUILD on an empty stack");
          c10::IValue now = build_object(stack_.back(), std::move(state));
          if (!now.isNone()) replace(stack_.back().v, now);
          break;
        }
        case 'Q': {
          c10::IValue pid = value(pop());
          push(persistent_storage(pid, storages_));
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
  Item call_fn(const Item &fn, Item args) {
    if (fn.global.empty()) fail("call of something that is not a global");
    return call_global(fn.global, std::move(args), keep_);
  }

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
  // A container made here: kept until the machine ends.
  c10::IValue owned(c10::IValue v) { return keep_(std::move(v)); }
  static int nest(int inner) { return pickle::nest(inner); }
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
  // A placeholder object becomes a value everywhere it was memoized.
  void replace(const c10::IValue &old, const c10::IValue &now) {
    const void *p = old.internalToPointer();
    for (auto &kv : memo_)
      if (kv.second.v.isObject() && kv.second.v.internalToPointer() == p) kv.second.v = now;
    for (auto &s : stack_)
      if (s.v.isObject() && s.v.internalToPointer() == p) s.v = now;
  }

  const char *p_;
  const char *end_;
  Storages *storages_;
  std::vector<Item> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<size_t, Item> memo_;
  Keep keep_;
};

}  // namespace

c10::IValue run(const char *data, size_t size, Storages *storages, const char **stop) {
  Machine m(data, size, storages);
  c10::IValue v = m.run();
  if (stop) *stop = m.pos();
  return v;
}

}  // namespace pickle
}  // namespace ct
