// The checks ctorch makes where untrusted input meets LibTorch: caller memory
// described by sizes and strides (from_blob, DLPack import) and loaded
// tensors against their storages (tensor_checks.cpp), how deep loaded values
// nest (nesting.cpp), and TorchScript source limits (source_limits.cpp).
// Internal; not installed.
#pragma once

#include "internal.h"

#include <string>
#include <utility>
#include <vector>

namespace ct {

// Highest address a tensor's bytes may reach: user-space addresses on x86-64
// (5-level paging) and aarch64 stay below 2^57.
constexpr uint64_t kMaxAddress = uint64_t(1) << 57;

// Checks that `ndim` sizes/strides (strides NULL = contiguous) describe memory
// starting at data + byte_offset whose extent, byte size and end address fit:
// no negative stride, no int64 overflow of the element count, the extent or
// the byte size, no address past kMaxAddress, and data + byte_offset aligned
// to the element type when `check_alignment`. Sizes must already have passed
// check_sizes. Sets the error (CT_ERR_INVALID_ARGUMENT, starting with `func`)
// and returns non-OK on failure.
ct_status check_extent(const char *func, const void *data, uint64_t byte_offset,
                       const int64_t *sizes, const int64_t *strides, size_t ndim,
                       size_t element_size, bool check_alignment) noexcept;
// Validates sizes (NULL allowed only for ndim == 0, no negative entries, no
// int64 overflow of the element count, at most 64 dimensions).
ct_status check_sizes(const char *func, const int64_t *sizes, size_t ndim) noexcept;

// After a load (tensor_checks.cpp): every tensor reachable from `roots` (object
// attributes, lists, tuples, dict keys and values, sparse components) must fit
// its storage -- no negative size, stride or offset, no overflow, extent times
// element size within storage nbytes. Else CT_ERR_IO
// "<func>: cannot load <what>: tensor '<path>' does not fit its storage (...)".
// The label of each root starts the path in the message.
ct_status check_loaded_tensors(const char *func, const char *what,
                               const std::vector<std::pair<std::string, c10::IValue>> &roots);
// The same for a loaded module: its attributes (parameters, buffers,
// submodules, other attributes) and the tensor constants in its code.
ct_status check_loaded_module(const char *func, const char *what, const torch::jit::Module &m);

// Whether a tensor geometry fits a storage of `nbytes` bytes: empty when it
// does, else why not ("sizes [...], strides [...], offset N, K-byte elements
// needs B bytes but its storage has S", or a negative size, stride or offset,
// or an overflow). sizes and strides must have the same length. Shared by
// the load checks below and ctorch's torch.save reader (src/pickle/), which
// must check before LibTorch's set_() grows a resizable storage.
std::string storage_misfit(c10::IntArrayRef sizes, c10::IntArrayRef strides, int64_t offset,
                           uint64_t item_size, uint64_t nbytes);

// ---- Nesting of loaded values (nesting.cpp) ---------------------------------
// How deep lists, tuples, dicts and objects may nest inside each other in a
// value that ct_pickle_load returns (and ct_pickle_save accepts). Everything
// that walks a value recurses once per level -- LibTorch's printer
// (ct_value_to_repr), type names (ct_value_type_str), its pickler and
// ctorch's save, the Python binding's conversion (3 Python frames per level
// under Python's default recursion limit of 1000), destructors -- and needs
// at most ~850 bytes of stack per level: 256 levels fit a 512 KB thread stack
// with room to spare (docs/conventions.md, "Untrusted files").
constexpr int kMaxNesting = 256;

// Empty when a loaded value may be handed out: no path of lists, tuples and
// dicts (objects counted or not) is more than kMaxNesting deep, and no list,
// tuple or dict contains itself through other lists, tuples and dicts (a
// Python object may: e.g. OmegaConf nodes refer to their parents). Else why
// not ("nesting deeper than 256 ..."). Iterative, linear in the value.
std::string loaded_nesting_problem(const c10::IValue &v);
// The same for a value to be pickled, which may contain nothing that
// contains itself at all (LibTorch's pickler would recurse forever).
std::string saved_nesting_problem(const c10::IValue &v);
// "nesting deeper than 256 (...)", the message of all three.
std::string nesting_too_deep();
// Drops a reference to `v` without recursion: a deep value destroyed by its
// destructors would overflow the stack (~40 bytes per level).
void release_value(c10::IValue v) noexcept;

// Pre-check of a pickle before LibTorch's Unpickler reads it (every pickle of
// a TorchScript archive, before ct_module_load hands it over): follows its
// opcodes as that Unpickler would and bounds how deep its lists, tuples and
// dicts get, since the Unpickler's own destructor (on any error) and its
// dict-key hashing recurse per level. kTooDeep: deeper than ctorch allows
// for certain; kUnsure: the stream does something this check does not
// follow (an opcode it does not know, a container filled after it was put
// into another, an inconsistent stack), so it must not go to LibTorch;
// kFine: LibTorch may read it (it may still fail, but not crash this way).
enum class PickleScan { kFine, kTooDeep, kUnsure };
PickleScan scan_pickle_nesting(const char *data, size_t size);

// ---- TorchScript source limits (source_limits.cpp) ---------------------------
// LibTorch's parser and compiler recurse per bracket level, per operator,
// call, attribute, subscript and conditional in an expression, and per block.
constexpr int kMaxSourceNesting = 64;        // brackets, and blocks
constexpr int kMaxStatementOperators = 512;  // per statement
// CT_OK, or CT_ERR_INVALID_ARGUMENT (set, naming the line) when `src` goes
// past either limit. Before every parse of user source.
ct_status check_source_nesting(const char *func, const char *src) noexcept;

}  // namespace ct
