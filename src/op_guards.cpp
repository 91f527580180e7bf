// Guards in front of LibTorch operators that crash, hang or read out of
// bounds on edge-case arguments (issue 20): integer division by zero or
// INT64_MIN / -1 (SIGFPE), _local_scalar_dense of an empty tensor (SIGSEGV),
// as_strided past its storage, string operations that loop forever or grow
// without bound, pooling sizes that overflow. At library load ctorch replaces each one's entry in
// TorchScript's operator table -- the table ct_op_call, TorchScript's
// interpreter and its constant folding (ct_script_compile) all look up -- by
// a wrapper that checks the arguments, then runs LibTorch's own operation.
// A refused call throws ct::Error (CT_ERR_INVALID_ARGUMENT through ct_op_call;
// inside TorchScript it is the interpreter's error, CT_ERR_TORCH), and
// constant folding leaves a refused expression to fail at run time.
// docs/conventions.md ("Guards in front of LibTorch") lists them.
#include "checks.h"
#include "internal.h"
#include "torch_version.h"

#include <torch/csrc/jit/runtime/custom_operator.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace ct {
// The guards' registration, kept for the life of the process (a global with
// external linkage, so that leak checkers see it reachable).
torch::jit::RegisterOperators *op_guard_registration = nullptr;
}  // namespace ct

namespace {

using c10::IValue;
using torch::jit::Stack;

// Longest string or list a guarded operation may build (elements): LibTorch
// builds these one element at a time, so a width of 2^62 would otherwise
// run until memory is gone.
constexpr int64_t kMaxBuiltLength = int64_t{1} << 30;

// Arguments of the call on top of `stack` (the last `n` entries).
struct Args {
  Stack &stack;
  size_t n;
  IValue &operator[](size_t i) const { return stack[stack.size() - n + i]; }
  // Replaces the arguments with the call's result.
  void result(IValue v) const {
    torch::jit::drop(stack, n);
    stack.push_back(std::move(v));
  }
};

// A guard looks at a call's arguments before LibTorch's operation runs: it
// throws ct::Error to refuse the call, returns true when it has put the
// result in place itself (where LibTorch's answer would never come), or
// false to let LibTorch's operation run (on arguments it may have adjusted).
using GuardFn = bool (*)(const char *op, const Args &args);

[[noreturn]] void refuse(const char *op, const char *why) {
  ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: %s", op, why);
}

// ---- Integer arithmetic ------------------------------------------------------
// x86's idiv traps on a zero divisor and on INT64_MIN / -1.
bool check_int_division(const char *op, const Args &a) {
  if (!a[0].isInt() || !a[1].isInt()) return false;  // Scalar overloads with floats
  int64_t x = a[0].toInt(), y = a[1].toInt();
  if (y == 0) refuse(op, "integer division or modulo by zero");
  if (x == std::numeric_limits<int64_t>::min() && y == -1)
    refuse(op, "integer overflow (-2**63 divided by -1)");
  return false;
}

// gcd(-2**63, -1) traps inside Euclid's first step. A gcd with +-1 is 1.
bool gcd_of_one(const char *, const Args &a) {
  if (!a[0].isInt() || !a[1].isInt()) return false;
  int64_t x = a[0].toInt(), y = a[1].toInt();
  if (x != 1 && x != -1 && y != 1 && y != -1) return false;
  a.result(int64_t{1});
  return true;
}

// ---- Tensors and shapes --------------------------------------------------------
// Whether t is a tensor on memory whose sizes and storage size are numbers.
// The guards leave the others to LibTorch: meta tensors and those of torch's
// Python tracers (FakeTensor, FunctionalTensor: the Python dispatch key), whose
// sizes or storage may be symbolic (reading them as numbers throws), read no
// memory. torch.compile and torch.library.opcheck run their as_strided
// through this table when ctorch was loaded before torch.
bool plain_tensor(const at::Tensor &t) {
  if (!t.defined() || t.is_meta() || t.key_set().has(c10::DispatchKey::Python)) return false;
#if CT_TORCH_AT_LEAST(2, 0)
  if (t.unsafeGetTensorImpl()->has_symbolic_sizes_strides()) return false;
  if (t.has_storage() && t.storage().sym_nbytes().is_heap_allocated()) return false;
#endif
  return true;
}

bool check_nonempty(const char *op, const Args &a) {
  if (a[0].isTensor() && plain_tensor(a[0].toTensor()) && a[0].toTensor().numel() == 0)
    refuse(op, "a tensor with no elements has no value");
  return false;
}

// as_strided(self, size, stride, storage_offset=None): the view must lie in
// self's storage. LibTorch's own check multiplies without overflow checks,
// so a huge offset wraps around and the view reads before the storage.
bool check_strided_view(const char *op, const Args &a) {
  if (!a[0].isTensor() || !a[1].isIntList() || !a[2].isIntList()) return false;  // symbolic
  const at::Tensor &t = a[0].toTensor();
  if (!plain_tensor(t) || !t.has_storage() || t.is_quantized()) return false;
  const std::vector<int64_t> size = a[1].toIntVector(), stride = a[2].toIntVector();
  int64_t offset = t.storage_offset();
  if (a.n > 3 && a[3].isInt()) offset = a[3].toInt();
  std::string why =
      ct::storage_misfit(size, stride, offset, t.dtype().itemsize(), t.storage().nbytes());
  if (!why.empty())
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: the view (%s) does not fit its storage", op,
              why.c_str());
  return false;
}

// prim::ReductionSizes(size, red_axes, keepdim): LibTorch indexes `size` with
// every axis unchecked (out of range: SIGSEGV; repeated: an abort).
bool check_reduction_axes(const char *op, const Args &a) {
  if (!a[0].isIntList() || !a[1].isIntList()) return false;
  const int64_t dims = static_cast<int64_t>(a[0].toIntList().size());
  std::vector<int64_t> axes = a[1].toIntVector();
  for (int64_t axis : axes)
    if (axis < 0 || axis >= dims)
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: axis %lld is out of range for %lld dimensions", op,
                static_cast<long long>(axis), static_cast<long long>(dims));
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) refuse(op, "an axis is repeated");
  return false;
}

// ---- Pooling -------------------------------------------------------------------
// max_pool{1,2,3}d(self, kernel_size, stride, padding, dilation, ...) and
// avg_pool: LibTorch 1.13 computes the output length as (kernel - 1) *
// dilation in int64 unchecked, so a dilation of 2^62 wraps, and the CPU
// kernel reads far outside the input (SIGSEGV; found by fuzz_op_call).
// Values past 2^31 - 1 are refused; no real pooling comes near them.
bool check_pooling(const char *op, const Args &a) {
  static const char *const names[] = {"kernel_size", "stride", "padding", "dilation"};
  for (size_t i = 1; i <= 4 && i < a.n; ++i) {
    if (!a[i].isIntList()) continue;
    for (int64_t v : a[i].toIntVector())
      if (v > std::numeric_limits<int32_t>::max() || v < std::numeric_limits<int32_t>::min())
        ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: %s %lld is out of range (at most 2^31 - 1)", op,
                  names[i - 1], static_cast<long long>(v));
  }
  return false;
}

// ---- Strings and lists ---------------------------------------------------------
// ljust/rjust/center/zfill(self, width, ...): LibTorch appends the padding
// one character at a time, and reads a negative width as a huge unsigned one.
// Python pads nothing for a width up to the string's length.
bool check_width(const char *op, const Args &a) {
  if (!a[1].isInt()) return false;
  if (a[1].toInt() < 0) a[1] = IValue(int64_t{0});
  if (a[1].toInt() > kMaxBuiltLength)
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: width %lld is more than %lld characters", op,
              static_cast<long long>(a[1].toInt()), static_cast<long long>(kMaxBuiltLength));
  return false;
}

// Each tab becomes up to `tabsize` spaces.
bool check_expandtabs(const char *op, const Args &a) {
  if (!a[0].isString() || !a[1].isInt()) return false;
  const std::string &s = a[0].toStringRef();
  int64_t tabs = std::count(s.begin(), s.end(), '\t'), total;
  if (a[1].toInt() > 0 &&
      (__builtin_mul_overflow(tabs, a[1].toInt(), &total) || total > kMaxBuiltLength))
    refuse(op, "the expanded string would be more than 2**30 characters");
  return false;
}

// list * n, n * list: len(list) * n elements.
bool check_repeat(const char *op, const Args &a) {
  const IValue &list = a[0].isList() ? a[0] : a[1];
  const IValue &n = a[0].isList() ? a[1] : a[0];
  if (!list.isList() || !n.isInt() || n.toInt() <= 0) return false;
  int64_t total;
  if (__builtin_mul_overflow(static_cast<int64_t>(list.toListRef().size()), n.toInt(), &total) ||
      total > kMaxBuiltLength)
    refuse(op, "the repeated list would have more than 2**30 elements");
  return false;
}

// str.replace(old, new, max=-1) with an empty `old`: LibTorch's loop finds ""
// at the same place forever. Python inserts `new` before every character and
// at the end, at most `max` times; so does this.
bool replace_empty(const char *op, const Args &a) {
  if (!a[1].isString() || !a[1].toStringRef().empty()) return false;
  const std::string self = a[0].toStringRef(), repl = a[2].toStringRef();
  const int64_t max = a[3].toInt(), slots = static_cast<int64_t>(self.size()) + 1;
  int64_t count = max < 0 || max > slots ? slots : max, total;
  if (__builtin_mul_overflow(count, static_cast<int64_t>(repl.size()), &total) ||
      total > kMaxBuiltLength)
    refuse(op, "the result would be more than 2**30 characters");
  std::string out;
  out.reserve(self.size() + static_cast<size_t>(total));
  for (int64_t i = 0; i < slots; ++i) {
    if (i < count) out += repl;
    if (i < static_cast<int64_t>(self.size())) out += self[static_cast<size_t>(i)];
  }
  a.result(std::move(out));
  return true;
}

// str.count(substr, start=0, end=-1) with an empty `substr`: LibTorch's loop
// finds "" at the same place forever. The answer is the number of positions
// from start to end, both included (Python: 'abc'.count('') == 4), with
// LibTorch's own reading of start and end.
bool count_empty(const char *, const Args &a) {
  if (!a[1].isString() || !a[1].toStringRef().empty()) return false;
  const int64_t size = static_cast<int64_t>(a[0].toStringRef().size());
  int64_t start = a[2].toInt(), end = a[3].toInt(), n = 0;
  if (start <= size) {
    if (start < 0) start = std::max<int64_t>(0, size + start);
    if (end < 0) end = std::max<int64_t>(0, size + end + 1);
    end = std::min(end, size);
    n = start <= end ? end - start + 1 : 0;
  }
  a.result(n);
  return true;
}

// str.rsplit with an empty separator loops forever; Python refuses it.
bool check_separator(const char *op, const Args &a) {
  if (a[1].isString() && a[1].toStringRef().empty()) refuse(op, "empty separator");
  return false;
}

struct Guard {
  const char *name;      // "aten::remainder"
  const char *overload;  // "int"; nullptr: every overload on two numbers
  GuardFn fn;
};

const Guard kGuards[] = {
    {"aten::remainder", "int", check_int_division},
    {"aten::remainder", nullptr, check_int_division},
    {"aten::floordiv", "int", check_int_division},
    {"aten::floordiv", nullptr, check_int_division},
    {"aten::divmod", "int", check_int_division},
    {"aten::__round_to_zero_floordiv", "int", check_int_division},
    {"aten::gcd", "int", gcd_of_one},
    {"aten::_local_scalar_dense", "", check_nonempty},
    {"aten::as_strided", "", check_strided_view},
    {"aten::as_strided_", "", check_strided_view},
    {"prim::ReductionSizes", "", check_reduction_axes},
    {"aten::ljust", "", check_width},
    {"aten::rjust", "", check_width},
    {"aten::center", "", check_width},
    {"aten::zfill", "", check_width},
    {"aten::expandtabs", "", check_expandtabs},
    {"aten::mul", "left_t", check_repeat},
    {"aten::mul", "right_", check_repeat},
    {"aten::replace", "", replace_empty},
    {"aten::count", "", count_empty},
    {"aten::rsplit", "", check_separator},
    {"aten::max_pool1d", "", check_pooling},
    {"aten::max_pool2d", "", check_pooling},
    {"aten::max_pool3d", "", check_pooling},
    {"aten::max_pool1d_with_indices", "", check_pooling},
    {"aten::max_pool2d_with_indices", "", check_pooling},
    {"aten::max_pool3d_with_indices", "", check_pooling},
    {"aten::avg_pool1d", "", check_pooling},
    {"aten::avg_pool2d", "", check_pooling},
    {"aten::avg_pool3d", "", check_pooling},
};

std::string qualified(const c10::FunctionSchema &s) {
  return s.overload_name().empty() ? s.name() : s.name() + "." + s.overload_name();
}

bool on_two_numbers(const c10::FunctionSchema &s) {
  if (s.arguments().size() != 2) return false;
  for (const c10::Argument &a : s.arguments()) {
    auto k = a.type()->kind();
    if (k != c10::TypeKind::IntType && k != c10::TypeKind::FloatType &&
        k != c10::TypeKind::NumberType)
      return false;
  }
  return true;
}

// Takes `op` out of TorchScript's operator table and returns a guarded
// wrapper of it, to be registered in its place.
torch::jit::Operator guarded(const Guard &g, const std::shared_ptr<torch::jit::Operator> &op) {
  const c10::FunctionSchema schema = op->schema();
  // The wrapper owns the name (a `new`ed one was left behind when LibTorch's
  // registry is destroyed at exit: valgrind's 36 definitely-lost blocks).
  std::string name = qualified(schema);
  const size_t n_args = schema.arguments().size();
  torch::jit::Operation inner = op->getOperation();
  GuardFn fn = g.fn;
  torch::jit::Operation wrapped = [inner, fn, name, n_args](Stack &stack) mutable {
    if (stack.size() >= n_args && fn(name.c_str(), Args{stack, n_args})) return;
    inner(stack);
  };
  torch::jit::deregisterOperator(schema);
  if (op->isC10Op())
    return torch::jit::Operator(c10::Dispatcher::singleton().findSchemaOrThrow(
                                    schema.name().c_str(), schema.overload_name().c_str()),
                                std::move(wrapped));
  return torch::jit::Operator(c10::toString(schema), std::move(wrapped), op->aliasAnalysisKind());
}

struct OpGuardsInit {
  OpGuardsInit() {
    std::vector<c10::optional<torch::jit::Operator>> wrappers;
    for (const Guard &g : kGuards) {
      try {
        // A copy: deregistering changes the table the reference points into.
        const std::vector<std::shared_ptr<torch::jit::Operator>> ops =
            torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(g.name));
        for (const auto &op : ops) {
          const std::string &ov = op->schema().overload_name();
          if (g.overload && ov != g.overload) continue;
          // An overload listed by name is guarded by its own entry.
          bool named_elsewhere = false;
          if (!g.overload)
            for (const Guard &h : kGuards)
              if (h.overload && std::strcmp(h.name, g.name) == 0 && ov == h.overload)
                named_elsewhere = true;
          if (named_elsewhere) continue;
          // A wildcard guards the overloads on two numbers (int, float, Scalar).
          if (!g.overload && !on_two_numbers(op->schema())) continue;
          wrappers.emplace_back(guarded(g, op));
        }
      } catch (...) {
        // This LibTorch lacks the op or the overload: nothing to guard.
      }
    }
    // Registered for the life of the process, the way foreign_op.cpp does
    // (also what tests/tsan/tsan.supp knows about). Registrations are
    // queued; the next lookup files them, done now while nothing else runs.
    try {
      ct::op_guard_registration = new torch::jit::RegisterOperators(std::move(wrappers));
    } catch (...) {
      // Nothing registered: the deregistered operations are missing, which
      // their callers report as unknown operators rather than crash.
    }
    (void)torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString("aten::remainder"));
  }
} op_guards_init;

}  // namespace
