// How deep loaded values may nest (checks.h, kMaxNesting): the checks after a
// load, the pre-check of a TorchScript archive's pickles before LibTorch's
// Unpickler reads them, and
// releasing a deep value without recursion. See docs/conventions.md
// ("Untrusted files").
#include "checks.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ct {

namespace {

bool is_container(const c10::IValue &v) { return v.isList() || v.isTuple() || v.isGenericDict(); }

// The items of a container or the slots of an object that may nest further.
void nested_items(const c10::IValue &v, std::vector<c10::IValue> *out) {
  auto add = [&](const c10::IValue &x) {
    if (is_container(x) || x.isObject()) out->push_back(x);
  };
  if (v.isList()) {
    if (v.isIntList() || v.isDoubleList() || v.isBoolList() || v.isTensorList()) return;
    for (const c10::IValue &x : v.toListRef()) add(x);
  } else if (v.isTuple()) {
    for (const c10::IValue &x : v.toTupleRef().elements()) add(x);
  } else if (v.isGenericDict()) {
    for (const auto &kv : v.toGenericDict()) {
      add(kv.key());
      add(kv.value());
    }
  } else if (v.isObject()) {
    for (const c10::IValue &x : v.toObjectRef().slots()) add(x);
  }
}

}  // namespace

std::string nesting_too_deep() {
  return "nesting deeper than " + std::to_string(kMaxNesting) +
         " (lists, tuples, dicts and objects inside each other; ctorch's limit)";
}

namespace {

// One depth-first walk from `root`, iterative, each container visited once
// (heights remembered, so shared parts cost nothing twice).
// through_objects: objects are levels like containers; else they end a path
// and their slots are walked as roots of their own. strict: something that
// contains itself is an error; else that edge is not followed.
// *saw_objects: whether the value holds any object.
std::string walk(const c10::IValue &root, bool through_objects, bool strict, bool *saw_objects) {
  struct Frame {
    const void *node;
    size_t begin, next, end;  // its items: items[begin..end), next to look at
    int height;               // of the tallest item so far
  };
  // Finished containers: levels from there down; 0 while on the current path.
  std::unordered_map<const void *, int> height;
  std::unordered_set<const void *> objects;  // seen (!through_objects)
  std::vector<c10::IValue> roots, items;     // items: of all frames, in order
  std::vector<Frame> path;
  const size_t limit = static_cast<size_t>(kMaxNesting);
  *saw_objects = false;

  // Not through objects: an object's slots become roots, once.
  auto object_root = [&](const c10::IValue &o) {
    *saw_objects = true;
    if (objects.insert(o.internalToPointer()).second)
      for (const c10::IValue &s : o.toObjectRef().slots()) roots.push_back(s);
  };
  auto enter = [&](const c10::IValue &v, const void *p) {
    if (v.isObject()) *saw_objects = true;
    size_t begin = items.size();
    nested_items(v, &items);
    height.emplace(p, 0);
    path.push_back({p, begin, begin, items.size(), 0});
  };

  if (!through_objects && root.isObject())
    object_root(root);
  else
    roots.push_back(root);
  while (!roots.empty()) {
    c10::IValue r = std::move(roots.back());
    roots.pop_back();
    if (!through_objects && r.isObject()) {
      object_root(r);
      continue;
    }
    if (!(is_container(r) || r.isObject()) || height.count(r.internalToPointer())) continue;
    enter(r, r.internalToPointer());
    while (!path.empty()) {
      Frame &f = path.back();
      if (f.next == f.end) {
        const int h = f.height + 1;
        height[f.node] = h;
        items.resize(f.begin);  // the last segment: frames above it are gone
        path.pop_back();
        if (!path.empty()) path.back().height = std::max(path.back().height, h);
        continue;
      }
      c10::IValue c = items[f.next++];  // a copy: enter() grows items
      if (!through_objects && c.isObject()) {
        object_root(c);
        continue;
      }
      const void *p = c.internalToPointer();
      auto it = height.find(p);
      if (it != height.end()) {
        if (it->second == 0) {  // on the current path
          if (strict)
            return through_objects ? "a list, tuple, dict or object that contains itself"
                                   : "a list, tuple or dict that contains itself";
          continue;
        }
        if (path.size() + static_cast<size_t>(it->second) > limit) return nesting_too_deep();
        f.height = std::max(f.height, it->second);
        continue;
      }
      if (path.size() >= limit) return nesting_too_deep();
      enter(c, p);  // f is invalid from here on
    }
  }
  return std::string();
}

}  // namespace

std::string loaded_nesting_problem(const c10::IValue &v) {
  // What recurses through containers only (printers, type names, hashing,
  // the bindings) needs the strict walk without objects; destructors go
  // through objects too (the same walk again unless there are objects).
  bool objects = false;
  std::string why = walk(v, /*through_objects=*/false, /*strict=*/true, &objects);
  if (why.empty() && objects) why = walk(v, /*through_objects=*/true, /*strict=*/false, &objects);
  return why;
}

std::string saved_nesting_problem(const c10::IValue &v) {
  bool objects = false;
  return walk(v, /*through_objects=*/true, /*strict=*/true, &objects);
}

void release_value(c10::IValue v) noexcept {
  std::vector<c10::IValue> todo;
  try {
    todo.push_back(std::move(v));
    while (!todo.empty()) {
      c10::IValue x = std::move(todo.back());
      todo.pop_back();
      // The last reference: hold its items here, so that destroying it only
      // drops their counts instead of destroying them in turn.
      if ((is_container(x) || x.isObject()) && x.use_count() == 1) nested_items(x, &todo);
    }
  } catch (...) {
    // Out of memory for the list: the rest is destroyed the ordinary way.
  }
}

// ---- Before LibTorch's Unpickler ---------------------------------------------
//
// Follows the opcodes with the Unpickler's semantics (LibTorch 1.13 and
// later: its REDUCE and BUILD call a global on the argument tuple and leave
// something inside it or the tuple itself, its NEWOBJ pops one item) and
// keeps, for every container it would hold, an upper bound of its height.
// A container that gets items after it was put into another would need
// every container above it updated; pickles written by Python or LibTorch
// never do that (a container is complete before it is used), so such a
// stream is not followed (kUnsure) and goes to ctorch's own reader.
PickleScan scan_pickle_nesting(const char *data, size_t n) {
  // LibTorch's REDUCE results are counted as their argument tuple (one level
  // more than a container they return), so the bound here is looser than
  // kMaxNesting; values are checked exactly once loaded. Deeper than this
  // is deeper than kMaxNesting for certain.
  const int bound = 4 * kMaxNesting;
  struct Node {
    int height;
    bool inside;  // put into another container
  };
  const auto *p = reinterpret_cast<const unsigned char *>(data);
  std::vector<Node> nodes;
  std::vector<int64_t> stack;  // node index, or -1 for anything else
  std::vector<size_t> marks;
  std::unordered_map<uint64_t, int64_t> memo;
  size_t i = 0;

  auto need = [&](uint64_t k) { return k <= n - i; };
  auto le = [&](size_t at, int bytes) {
    uint64_t x = 0;
    for (int b = bytes - 1; b >= 0; --b) x = x << 8 | p[at + b];
    return x;
  };
  auto leaf = [&] { stack.push_back(-1); };
  // A new container holding the stack's items from `from` on.
  auto make = [&](size_t from) -> bool {
    int h = 0;
    for (size_t k = from; k < stack.size(); ++k)
      if (stack[k] >= 0) {
        h = std::max(h, nodes[stack[k]].height);
        nodes[stack[k]].inside = true;
      }
    stack.resize(from);
    if (h + 1 > bound) return false;
    stack.push_back(static_cast<int64_t>(nodes.size()));
    nodes.push_back({h + 1, false});
    return true;
  };
  // Items from `from` on go into the container at stack[at] and leave the stack.
  enum { kOk, kDeep, kLost };
  auto fill = [&](size_t at, size_t from) -> int {
    int64_t t = stack[at];
    if (t < 0 || nodes[t].inside) return kLost;
    for (size_t k = from; k < stack.size(); ++k)
      if (stack[k] >= 0) {
        nodes[t].height = std::max(nodes[t].height, nodes[stack[k]].height + 1);
        nodes[stack[k]].inside = true;
      }
    stack.resize(from);
    return nodes[t].height > bound ? kDeep : kOk;
  };
  auto pop_mark = [&](size_t *from) -> bool {
    if (marks.empty() || marks.back() > stack.size()) return false;
    *from = marks.back();
    marks.pop_back();
    return true;
  };

  while (i < n) {
    const unsigned char op = p[i++];
    size_t from = 0;
    int r = kOk;
    switch (op) {
      case 0x80:                                 // PROTO
        if (!need(1)) return PickleScan::kFine;  // truncated: LibTorch stops here too
        i += 1;
        break;
      case 0x95:  // FRAME
        if (!need(8)) return PickleScan::kFine;
        i += 8;
        break;
      case '.':  // STOP
        return PickleScan::kFine;
      case '(':  // MARK
        marks.push_back(stack.size());
        break;
      case ')':   // EMPTY_TUPLE
      case ']':   // EMPTY_LIST
      case '}':   // EMPTY_DICT
      case 0x8f:  // EMPTY_SET
        make(stack.size());
        break;
      case 'N':
      case 0x88:
      case 0x89: leaf(); break;
      case 'K':
      case 'M':
      case 'J':
      case 'G': {
        size_t k = op == 'K' ? 1 : op == 'M' ? 2 : op == 'J' ? 4 : 8;
        if (!need(k)) return PickleScan::kFine;
        i += k;
        leaf();
        break;
      }
      case 0x8a:  // LONG1
      case 'U':   // SHORT_BINSTRING
      case 'C':   // SHORT_BINBYTES
      case 0x8c:  // SHORT_BINUNICODE
        if (!need(1) || !need(1 + uint64_t(p[i]))) return PickleScan::kFine;
        i += 1 + size_t(p[i]);
        leaf();
        break;
      case 0x8b:  // LONG4
      case 'T':   // BINSTRING
      case 'B':   // BINBYTES
      case 'X':   // BINUNICODE
        if (!need(4) || !need(4 + le(i, 4))) return PickleScan::kFine;
        i += 4 + le(i, 4);
        leaf();
        break;
      case 0x8d:  // BINUNICODE8
      case 0x8e:  // BINBYTES8
      case 0x96:  // BYTEARRAY8
        if (!need(8) || le(i, 8) > n - i - 8) return PickleScan::kFine;
        i += 8 + le(i, 8);
        leaf();
        break;
      case 'c': {  // GLOBAL module\nname\n
        for (int line = 0; line < 2; ++line) {
          const void *nl = std::memchr(p + i, '\n', n - i);
          if (!nl) return PickleScan::kFine;
          i = static_cast<const unsigned char *>(nl) - p + 1;
        }
        leaf();
        break;
      }
      case 0x93:  // STACK_GLOBAL
        if (stack.size() < 2) return PickleScan::kUnsure;
        stack.resize(stack.size() - 2);
        leaf();
        break;
      case 'q':   // BINPUT
      case 'r':   // LONG_BINPUT
      case 0x94:  // MEMOIZE
      {
        size_t k = op == 'q' ? 1 : op == 'r' ? 4 : 0;
        if (!need(k)) return PickleScan::kFine;
        if (stack.empty()) return PickleScan::kUnsure;
        memo[k ? le(i, static_cast<int>(k)) : memo.size()] = stack.back();
        i += k;
        break;
      }
      case 'h':    // BINGET
      case 'j': {  // LONG_BINGET
        size_t k = op == 'h' ? 1 : 4;
        if (!need(k)) return PickleScan::kFine;
        auto it = memo.find(le(i, static_cast<int>(k)));
        if (it == memo.end()) return PickleScan::kUnsure;
        i += k;
        stack.push_back(it->second);
        break;
      }
      case 't':   // TUPLE
      case 'l':   // LIST
      case 'd':   // DICT
      case 0x91:  // FROZENSET
        if (!pop_mark(&from)) return PickleScan::kUnsure;
        // LibTorch's DICT reads one past the stack for an odd count.
        if (op == 'd' && (stack.size() - from) % 2) return PickleScan::kUnsure;
        if (!make(from)) return PickleScan::kTooDeep;
        break;
      case 0x85:  // TUPLE1
      case 0x86:  // TUPLE2
      case 0x87:  // TUPLE3
        if (stack.size() < size_t(op - 0x84)) return PickleScan::kUnsure;
        if (!make(stack.size() - (op - 0x84))) return PickleScan::kTooDeep;
        break;
      case 'e':   // APPENDS
      case 'u':   // SETITEMS
      case 0x90:  // ADDITEMS
        if (!pop_mark(&from) || from == 0) return PickleScan::kUnsure;
        if (op == 'u' && (stack.size() - from) % 2) return PickleScan::kUnsure;  // as DICT
        r = fill(from - 1, from);
        break;
      case 'a':  // APPEND
        if (stack.size() < 2) return PickleScan::kUnsure;
        r = fill(stack.size() - 2, stack.size() - 1);
        break;
      case 's':  // SETITEM
        if (stack.size() < 3) return PickleScan::kUnsure;
        r = fill(stack.size() - 3, stack.size() - 2);
        break;
      case 0x81:  // NEWOBJ (LibTorch pops the argument tuple only)
      case 'Q':   // BINPERSID: a tensor
        if (stack.empty()) return PickleScan::kUnsure;
        stack.pop_back();
        if (op == 'Q') leaf();
        break;
      case 'R':    // REDUCE
      case 'b': {  // BUILD (LibTorch: the same as REDUCE)
        if (stack.size() < 2) return PickleScan::kUnsure;
        int64_t args = stack.back();
        stack.pop_back();
        stack.back() = args;  // the result: the tuple, something in it, or a leaf
        break;
      }
      default:  // an opcode LibTorch's Unpickler does not know, or one not followed here
        return PickleScan::kUnsure;
    }
    if (r == kDeep) return PickleScan::kTooDeep;
    if (r == kLost) return PickleScan::kUnsure;
  }
  return PickleScan::kFine;  // no STOP: LibTorch fails at the end
}

}  // namespace ct
