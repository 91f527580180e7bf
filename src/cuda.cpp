// CUDA support: devices, torch's caching allocator, streams and events,
// pinned memory, and the DLPack stream rule. Compiled into the library only
// when LibTorch has CUDA (CTORCH_WITH_CUDA); the exported C functions live in
// device.cpp and call these through the exception barrier.
//
// Builds against LibTorch 1.13 and 2.x. Differences handled here:
// - CUDACachingAllocator's DeviceStats/StatType moved namespaces in 2.x
//   (c10::CachingAllocator / c10::CachingDeviceAllocator). We never name
//   them: `auto` plus index 0, which is StatType::AGGREGATE in every version.
// - The allocator's per-device state exists only after CUDA's lazy init (2.x
//   asserts "did you call init?"), and the init call was renamed
//   (lazyInitCUDA -> lazyInitDevice). We trigger it the version-independent
//   way: creating an empty CUDA tensor runs torch's lazy CUDA init.
// - CUDAStream ids encode external streams differently (1.13: low 3 bits 0;
//   2.x: low bit 0), so the pseudo-handles cudaStreamLegacy (1) and
//   cudaStreamPerThread (2) must never go through getStreamFromExternal.
//
// Compile check in CPU-only CI (CTORCH_CUDA_COMPILE_CHECK): Debian's
// libtorch-dev ships the c10/cuda headers but not the generated
// c10/cuda/impl/cuda_cmake_macros.h that c10/cuda/CUDAMacros.h includes. That
// file only defines C10_CUDA_BUILD_SHARED_LIBS, which matters on Windows, so
// we skip it with LibTorch's own switch C10_CUDA_NO_CMAKE_CONFIGURE_FILE when
// it is missing. With that, the c10/cuda and ATen/cuda headers of 1.13 compile
// against CUDA 13's toolkit headers.
#if defined(__has_include)
#if !__has_include(<c10/cuda/impl/cuda_cmake_macros.h>) && !defined(C10_CUDA_NO_CMAKE_CONFIGURE_FILE)
#define C10_CUDA_NO_CMAKE_CONFIGURE_FILE 1
#endif
#endif

#include "cuda_internal.h"

#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <map>
#include <mutex>
#include <string>

#if !defined(TORCH_VERSION_MAJOR)
#error "torch/version.h did not define TORCH_VERSION_MAJOR"
#endif

namespace ct {
namespace cudaimpl {
namespace {

void require_device() {
  if (c10::cuda::device_count() <= 0)
    raise(CT_ERR_NOT_SUPPORTED,
          "CUDA is compiled in, but no CUDA device is available (driver missing, "
          "CUDA_VISIBLE_DEVICES empty, or no GPU)");
}

// -1 -> torch's current device; otherwise validated against device_count().
c10::DeviceIndex resolve_device(int32_t device) {
  require_device();
  if (device == -1) return c10::cuda::current_device();
  const int32_t n = static_cast<int32_t>(c10::cuda::device_count());
  if (device < 0 || device >= n)
    raise(CT_ERR_INDEX, "CUDA device %d is out of range (%d device%s; -1 means current)", device, n,
          n == 1 ? "" : "s");
  return static_cast<c10::DeviceIndex>(device);
}

// Torch initialises CUDA (and its caching allocator) lazily, when the first
// CUDA tensor is created. An empty tensor triggers that without allocating.
void ensure_torch_cuda_initialized(c10::DeviceIndex device) {
  static std::once_flag once;
  std::call_once(once, [device] {
    (void)at::empty({0},
                    at::TensorOptions().dtype(at::kByte).device(c10::Device(c10::kCUDA, device)));
  });
}

// Owns one CUDA event (timing disabled); destroyed on every path. Destroying
// an event that a stream still waits for is allowed: CUDA releases it once the
// pending work completes.
struct Event {
  cudaEvent_t ev = nullptr;
  Event() { C10_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming)); }
  ~Event() {
    if (ev) (void)cudaEventDestroy(ev);
  }
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
};

// `waiting` waits on the device for everything queued so far on `producer`.
// Caller holds a CUDAGuard for the streams' device. No host synchronisation.
void stream_wait(cudaStream_t waiting, cudaStream_t producer) {
  if (waiting == producer) return;  // stream order already guarantees it
  Event e;
  C10_CUDA_CHECK(cudaEventRecord(e.ev, producer));
  C10_CUDA_CHECK(cudaStreamWaitEvent(waiting, e.ev, 0));
}

// Torch's default CUDA stream is the legacy default stream (handle NULL);
// cudaStreamLegacy (1) names the same stream.
bool same_stream(cudaStream_t a, cudaStream_t b) {
  auto norm = [](cudaStream_t s) {
    return s == cudaStreamLegacy ? static_cast<cudaStream_t>(nullptr) : s;
  };
  return norm(a) == norm(b);
}

cudaStream_t dlpack_stream(int64_t code) {
  if (code == 0 || code < -1)
    raise(CT_ERR_INVALID_ARGUMENT,
          "stream %lld is not a valid DLPack CUDA stream (use -1 for no synchronisation, 1 for the "
          "legacy default stream, 2 for the per-thread default stream, or a cudaStream_t)",
          static_cast<long long>(code));
  return reinterpret_cast<cudaStream_t>(static_cast<intptr_t>(code));
}

// A byte count of the caching allocator on `device`: `current` reads it from
// the device's stats.
template <class Current>
size_t allocator_bytes(int32_t device, Current current) {
  const c10::DeviceIndex d = resolve_device(device);
  ensure_torch_cuda_initialized(d);
  const int64_t v = current(c10::cuda::CUDACachingAllocator::getDeviceStats(d));
  return v > 0 ? static_cast<size_t>(v) : 0;
}

}  // namespace

int32_t device_count() noexcept { return static_cast<int32_t>(c10::cuda::device_count()); }

bool is_available() noexcept { return c10::cuda::device_count() > 0; }

int32_t current_device() {
  require_device();
  return static_cast<int32_t>(c10::cuda::current_device());
}

void set_device(int32_t device) {
  if (device == -1)
    raise(CT_ERR_INDEX, "CUDA device -1 is not a device index (use 0 .. device count - 1)");
  c10::cuda::set_device(resolve_device(device));
}

void synchronize(int32_t device) {
  c10::cuda::CUDAGuard g(resolve_device(device));
  C10_CUDA_CHECK(cudaDeviceSynchronize());
}

// Index 0 of each stat array is StatType::AGGREGATE in every LibTorch version.
size_t memory_allocated(int32_t device) {
  return allocator_bytes(device,
                         [](const auto &stats) { return stats.allocated_bytes[0].current; });
}

size_t memory_reserved(int32_t device) {
  return allocator_bytes(device, [](const auto &stats) { return stats.reserved_bytes[0].current; });
}

void empty_cache() {
  require_device();
  ensure_torch_cuda_initialized(c10::cuda::current_device());
  c10::cuda::CUDACachingAllocator::emptyCache();
}

void manual_seed_all(uint64_t seed) {
  require_device();
  torch::cuda::manual_seed_all(seed);
}

void *current_stream(int32_t device) {
  const c10::DeviceIndex d = resolve_device(device);
  return static_cast<void *>(c10::cuda::getCurrentCUDAStream(d).stream());
}

void *set_stream(int32_t device, void *stream) {
  const c10::DeviceIndex d = resolve_device(device);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (s == cudaStreamPerThread)
    raise(CT_ERR_INVALID_ARGUMENT,
          "the per-thread default stream (cudaStreamPerThread) cannot be made torch's current "
          "stream; create a stream with cudaStreamCreate");
  void *previous = static_cast<void *>(c10::cuda::getCurrentCUDAStream(d).stream());
  // NULL and cudaStreamLegacy are torch's default stream; any other handle is
  // an external stream that the caller keeps alive.
  c10::cuda::CUDAStream next = (s == nullptr || s == cudaStreamLegacy)
                                   ? c10::cuda::getDefaultCUDAStream(d)
                                   : c10::cuda::getStreamFromExternal(s, d);
  c10::cuda::setCurrentCUDAStream(next);
  return previous;
}

void stream_synchronize(void *stream, int32_t device) {
  c10::cuda::CUDAGuard g(resolve_device(device));
  C10_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void stream_wait_stream(void *waiting, void *producer, int32_t device) {
  c10::cuda::CUDAGuard g(resolve_device(device));
  cudaStream_t w = static_cast<cudaStream_t>(waiting);
  cudaStream_t p = static_cast<cudaStream_t>(producer);
  if (same_stream(w, p)) return;
  stream_wait(w, p);
}

at::Tensor pin_memory(const at::Tensor &t) {
  if (!t.defined()) raise(CT_ERR_INVALID_ARGUMENT, "the tensor is undefined");
  if (!t.device().is_cpu())
    raise(CT_ERR_INVALID_ARGUMENT, "only CPU tensors can be pinned (this one is on %s)",
          t.device().str().c_str());
  require_device();
  return t.pin_memory();
}

bool is_pinned(const at::Tensor &t) {
  if (!t.defined() || !t.device().is_cpu()) return false;
  if (c10::cuda::device_count() <= 0) return false;
  return t.is_pinned();
}

void make_safe_for_stream(const at::Tensor &t, int64_t consumer_stream) {
  if (consumer_stream == -1 || !t.defined() || !t.is_cuda()) return;
  cudaStream_t consumer = dlpack_stream(consumer_stream);
  const c10::DeviceIndex d = t.device().index();
  c10::cuda::CUDAGuard g(d);
  cudaStream_t producer = c10::cuda::getCurrentCUDAStream(d).stream();
  if (same_stream(consumer, producer)) return;
  stream_wait(consumer, producer);
}

size_t max_memory_allocated(int32_t device) {
  return allocator_bytes(device, [](const auto &stats) { return stats.allocated_bytes[0].peak; });
}

size_t max_memory_reserved(int32_t device) {
  return allocator_bytes(device, [](const auto &stats) { return stats.reserved_bytes[0].peak; });
}

void reset_peak_memory_stats(int32_t device) {
  const c10::DeviceIndex d = resolve_device(device);
  ensure_torch_cuda_initialized(d);
  c10::cuda::CUDACachingAllocator::resetPeakStats(d);
}

// torch.cuda.memory_stats()'s keys, sorted as there, for the counters every
// LibTorch version has (stat arrays: index 0 all, 1 small pool, 2 large pool).
c10::IValue memory_stats(int32_t device) {
  const c10::DeviceIndex d = resolve_device(device);
  ensure_torch_cuda_initialized(d);
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(d);
  std::map<std::string, int64_t> m;
  const char *const pools[3] = {"all", "small_pool", "large_pool"};
  auto add = [&](const char *name, const auto &array) {
    for (int p = 0; p < 3; ++p) {
      const std::string k = std::string(name) + "." + pools[p] + ".";
      m[k + "current"] = array[p].current;
      m[k + "peak"] = array[p].peak;
      m[k + "allocated"] = array[p].allocated;
      m[k + "freed"] = array[p].freed;
    }
  };
  add("allocation", stats.allocation);
  add("segment", stats.segment);
  add("active", stats.active);
  add("inactive_split", stats.inactive_split);
  add("allocated_bytes", stats.allocated_bytes);
  add("reserved_bytes", stats.reserved_bytes);
  add("active_bytes", stats.active_bytes);
  add("inactive_split_bytes", stats.inactive_split_bytes);
  m["num_alloc_retries"] = stats.num_alloc_retries;
  m["num_ooms"] = stats.num_ooms;
  c10::Dict<std::string, int64_t> out;
  for (const auto &kv : m) out.insert(kv.first, kv.second);
  return c10::IValue(std::move(out));
}

void set_memory_fraction(double fraction, int32_t device) {
  if (!(fraction >= 0.0 && fraction <= 1.0))
    raise(CT_ERR_INVALID_ARGUMENT, "fraction must be between 0 and 1, not %g", fraction);
  const c10::DeviceIndex d = resolve_device(device);
  ensure_torch_cuda_initialized(d);
  c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, d);
}

void *stream_from_pool(int32_t device, bool high_priority) {
  const c10::DeviceIndex d = resolve_device(device);
  return static_cast<void *>(c10::cuda::getStreamFromPool(high_priority, d).stream());
}

at::Generator default_generator(int32_t device) {
  return at::cuda::detail::getDefaultCUDAGenerator(resolve_device(device));
}

at::Generator new_generator(int32_t device) {
  return at::cuda::detail::createCUDAGenerator(resolve_device(device));
}

}  // namespace cudaimpl
}  // namespace ct
