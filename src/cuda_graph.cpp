// CUDA events and CUDA graphs (ct_cuda_event_*, ct_cuda_graph_*):
// at::cuda::CUDAEvent and at::cuda::CUDAGraph behind handles. CUDA builds
// only; src/cuda_unavailable.cpp has the same functions for the others.
#if defined(__has_include)
#if !__has_include(<c10/cuda/impl/cuda_cmake_macros.h>) && !defined(C10_CUDA_NO_CMAKE_CONFIGURE_FILE)
#define C10_CUDA_NO_CMAKE_CONFIGURE_FILE 1  // the compile check (src/cuda.cpp says why)
#endif
#endif

#include "cuda_internal.h"

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <optional>

struct ct_cuda_event {
  at::cuda::CUDAEvent ev;
  bool timing;
};

struct ct_cuda_graph {
  at::cuda::CUDAGraph graph;
  bool capturing = false;
  bool captured = false;
  // The stream that was current on the capture's device before begin.
  std::optional<c10::cuda::CUDAStream> previous;
};

namespace {

void end_capture(ct_cuda_graph *g) {
  // The previous stream comes back whatever capture_end says.
  struct Restore {
    ct_cuda_graph *g;
    ~Restore() {
      if (g->previous) c10::cuda::setCurrentCUDAStream(*g->previous);
      g->previous.reset();
      g->capturing = false;
    }
  } restore{g};
  g->graph.capture_end();
  g->captured = true;
}

}  // namespace

extern "C" {

ct_status ct_cuda_event_new(ct_cuda_event **out, int32_t enable_timing) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(out);
    (void)ct::cudaimpl::current_device();  // CT_ERR_NOT_SUPPORTED without a device
    const unsigned flags = enable_timing ? cudaEventDefault : cudaEventDisableTiming;
    *out = new ct_cuda_event{at::cuda::CUDAEvent(flags), enable_timing != 0};
    return CT_OK;
  });
}

void ct_cuda_event_free(ct_cuda_event *e) {
  try {
    delete e;
  } catch (...) {}
}

ct_status ct_cuda_event_record(ct_cuda_event *e, void *stream) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(e);
    const c10::DeviceIndex d = static_cast<c10::DeviceIndex>(ct::cudaimpl::current_device());
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    if (s == nullptr)
      e->ev.record(c10::cuda::getCurrentCUDAStream(d));
    else
      e->ev.record(c10::cuda::getStreamFromExternal(s, d));
    return CT_OK;
  });
}

ct_status ct_cuda_event_synchronize(ct_cuda_event *e) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(e);
    e->ev.synchronize();
    return CT_OK;
  });
}

ct_status ct_cuda_event_query(int32_t *done, ct_cuda_event *e) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(done);
    CT_CHECK_NOT_NULL(e);
    *done = e->ev.query() ? 1 : 0;
    return CT_OK;
  });
}

ct_status ct_cuda_event_elapsed_ms(double *out, ct_cuda_event *start, ct_cuda_event *end) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(start);
    CT_CHECK_NOT_NULL(end);
    for (const ct_cuda_event *e : {start, end}) {
      if (!e->timing)
        return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                             "%s: the %s event was created without timing (enable_timing 0)",
                             ct_fn_, e == start ? "start" : "end");
      if (!e->ev.isCreated())
        return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: the %s event was never recorded", ct_fn_,
                             e == start ? "start" : "end");
    }
    *out = static_cast<double>(start->ev.elapsed_time(end->ev));
    return CT_OK;
  });
}

ct_status ct_cuda_graph_new(ct_cuda_graph **out) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(out);
    (void)ct::cudaimpl::current_device();  // CT_ERR_NOT_SUPPORTED without a device
    *out = new ct_cuda_graph();
    return CT_OK;
  });
}

void ct_cuda_graph_free(ct_cuda_graph *g) {
  if (g == nullptr) return;
  try {
    if (g->capturing) end_capture(g);
  } catch (...) {}
  try {
    delete g;
  } catch (...) {}
}

ct_status ct_cuda_graph_capture_begin(ct_cuda_graph *g, int32_t device) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(g);
    if (g->capturing)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: the graph is already capturing", ct_fn_);
    if (g->captured)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: the graph holds a capture; ct_cuda_graph_reset it first", ct_fn_);
    if (device == -1) device = ct::cudaimpl::current_device();
    ct::cudaimpl::synchronize(device);  // validates the index; as torch.cuda.graph
    const c10::DeviceIndex d = static_cast<c10::DeviceIndex>(device);
    c10::cuda::CUDAGuard on_device(d);
    g->previous = c10::cuda::getCurrentCUDAStream(d);
    c10::cuda::setCurrentCUDAStream(c10::cuda::getStreamFromPool(false, d));
    try {
      g->graph.capture_begin();
    } catch (...) {
      c10::cuda::setCurrentCUDAStream(*g->previous);
      g->previous.reset();
      throw;
    }
    g->capturing = true;
    return CT_OK;
  });
}

ct_status ct_cuda_graph_capture_end(ct_cuda_graph *g) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(g);
    if (!g->capturing)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: the graph is not capturing", ct_fn_);
    end_capture(g);
    return CT_OK;
  });
}

ct_status ct_cuda_graph_replay(ct_cuda_graph *g) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(g);
    if (!g->captured)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: nothing captured to replay", ct_fn_);
    g->graph.replay();
    return CT_OK;
  });
}

ct_status ct_cuda_graph_reset(ct_cuda_graph *g) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&]() -> ct_status {
    CT_CHECK_NOT_NULL(g);
    if (g->capturing)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: end the capture first", ct_fn_);
    g->graph.reset();
    g->captured = false;
    return CT_OK;
  });
}

}  // extern "C"
