// Internal CUDA interface of ctorch (not installed).
//
// The CUDA part is src/cuda.cpp (ct::cudaimpl, below), src/device.cpp (the
// exported ct_cuda_* / ct_tensor_pin_memory / ct_tensor_is_pinned functions,
// wrapping ct::cudaimpl in the exception barrier) and src/cuda_graph.cpp
// (events, graphs). CMake compiles them in CUDA builds (CTORCH_WITH_CUDA) and
// src/cuda_unavailable.cpp in the others: the same exported functions, each
// returning CT_ERR_NOT_SUPPORTED (ct::no_cuda) or its CPU-only answer. In a
// CPU-only build CMake only compile-checks the CUDA part.
//
// The DLPack export stream helper below exists in every build (defined in
// device.cpp and in cuda_unavailable.cpp), so src/dlpack.cpp can call it
// without #ifdefs. (Imports need no helper: a consumer hands its stream to the
// producer's __dlpack__, which makes the data safe for it.)
#pragma once

#include "internal.h"

#include <cstddef>
#include <cstdint>

namespace ct {

// ---- DLPack stream rule (used by src/dlpack.cpp) ------------------------
// Stream codes follow the DLPack/array-API convention for CUDA:
//   -1 : no synchronisation (nothing is done)
//    0 : invalid (ambiguous), CT_ERR_INVALID_ARGUMENT
//    1 : the legacy default stream (cudaStreamLegacy)
//    2 : the per-thread default stream (cudaStreamPerThread)
//   >2 : a cudaStream_t handle cast to an integer
// The helper does not block the host (no device or stream synchronisation):
// it records a CUDA event on one stream and makes the other stream wait for
// it. It never throws (it is not declared noexcept only because internal.h
// already declares it without). On failure it sets this thread's last error
// (prefixed "DLPack export: ") and returns its code; on success CT_OK.

// Export: makes `t`'s data safe to use on the consumer's stream: records an
// event on torch's current stream of t's device and makes `stream` (the
// consumer's) wait for it. Returns CT_OK without doing anything when `stream` is
// -1 or `t` is not a CUDA tensor (in every build). CPU-only build with any
// other case: CT_ERR_NOT_SUPPORTED (cannot happen for a real CUDA tensor).
// (Same declaration as in internal.h.)
ct_status cuda_make_safe_for_stream(const at::Tensor &t, int64_t stream);

// The default CUDA generator of `device` (fresh: a new one) into *out, for
// src/generator.cpp; CT_ERR_NOT_SUPPORTED (no_cuda) in a build without CUDA.
// Throws what LibTorch throws (callers are inside ct::guard).
ct_status cuda_generator(const char *func, int32_t device, bool fresh, at::Generator *out);

// CT_ERR_NOT_SUPPORTED "<func>: CUDA is not supported in this build of
// ctorch (LibTorch <ver> has no CUDA)" (cuda_unavailable.cpp: builds without
// CUDA only).
ct_status no_cuda(const char *func);

// ---- The CUDA implementation (src/cuda.cpp), defined in CUDA builds only ----
// These may throw (ct::Error with a status code, c10::Error for CUDA/torch
// failures); callers wrap them in ct::guard, which adds the function name to
// the message. `device` arguments: -1 means torch's current CUDA device,
// otherwise 0 <= device < device_count() (else ct::Error CT_ERR_INDEX).
// Every function except device_count/is_available raises CT_ERR_NOT_SUPPORTED
// when no CUDA device is usable.
namespace cudaimpl {
int32_t device_count() noexcept;
bool is_available() noexcept;
int32_t current_device();
void set_device(int32_t device);
void synchronize(int32_t device);
size_t memory_allocated(int32_t device);
size_t memory_reserved(int32_t device);
void empty_cache();
void manual_seed_all(uint64_t seed);
void *current_stream(int32_t device);
// Returns the stream it replaces.
void *set_stream(int32_t device, void *stream);
void stream_synchronize(void *stream, int32_t device);
void stream_wait_stream(void *waiting, void *producer, int32_t device);
// `t` must be a CPU tensor (else CT_ERR_INVALID_ARGUMENT).
at::Tensor pin_memory(const at::Tensor &t);
bool is_pinned(const at::Tensor &t);
void make_safe_for_stream(const at::Tensor &t, int64_t consumer_stream);
size_t max_memory_allocated(int32_t device);
size_t max_memory_reserved(int32_t device);
void reset_peak_memory_stats(int32_t device);
c10::IValue memory_stats(int32_t device);  // Dict[str, int]
void set_memory_fraction(double fraction, int32_t device);
void *stream_from_pool(int32_t device, bool high_priority);
// The device's default CUDA generator, and a new one (src/generator.cpp).
at::Generator default_generator(int32_t device);
at::Generator new_generator(int32_t device);
}  // namespace cudaimpl

}  // namespace ct
