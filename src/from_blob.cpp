// Tensors over caller memory: ct_tensor_from_blob (a deleter the caller
// gives) and ct_tensor_from_blob_queued with the library-owned release queue
// that garbage-collected hosts poll (ct_release_queue_poll). The memory is
// checked first: sizes, strides and extent (check_extent).
#include "checks.h"
#include "internal.h"
#include "locks.h"

#include <deque>
#include <functional>
#include <mutex>

namespace {

// The library-owned release queue for garbage-collected hosts.
std::mutex release_mutex;
ct::ForkSafe release_mutex_fork_safe(release_mutex);
std::deque<void *> &release_queue() {
  static auto *q = new std::deque<void *>();  // never destroyed: deleters may run at exit
  return *q;
}

void push_release(void *ctx) {
  std::lock_guard<std::mutex> lock(release_mutex);
  release_queue().push_back(ctx);
}

ct_status wrap_blob(const char *func, ct_tensor **out, void *data, const int64_t *sizes,
                    size_t ndim, const int64_t *strides, int32_t dtype, int32_t device_type,
                    int32_t device_index, std::function<void(void *)> deleter) {
  if (!out) return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument 'out' is NULL", func);
  if (ct_status s = ct::check_sizes(func, sizes, ndim)) return s;
  c10::ScalarType st;
  c10::Device dev(c10::DeviceType::CPU);
  if (ct_status s = ct::check_dtype(func, dtype, &st)) return s;
  if (ct_status s = ct::to_device(func, device_type, device_index, &dev)) return s;
  int64_t numel = 1;
  for (size_t i = 0; i < ndim; ++i) numel *= sizes[i];
  if (!data && numel > 0)
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument 'data' is NULL", func);
  if (ct_status s =
          ct::check_extent(func, data, 0, sizes, strides, ndim, c10::elementSize(st), false))
    return s;
  auto opts = at::TensorOptions().dtype(st).device(dev);
  at::IntArrayRef shape(sizes, ndim);
  at::Tensor t;
  if (strides) {
    t = torch::from_blob(data, shape, at::IntArrayRef(strides, ndim), std::move(deleter), opts);
  } else {
    t = torch::from_blob(data, shape, std::move(deleter), opts);
  }
  *out = ct::new_tensor(std::move(t));
  return CT_OK;
}

}  // namespace

extern "C" {

ct_status ct_tensor_from_blob(ct_tensor **out, void *data, const int64_t *sizes, size_t ndim,
                              const int64_t *strides, int32_t dtype, int32_t device_type,
                              int32_t device_index, ct_deleter deleter, void *ctx) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    std::function<void(void *)> del;
    if (deleter)
      del = [deleter, ctx](void *p) { deleter(p, ctx); };
    else
      del = [](void *) {};
    return wrap_blob(ct_fn_, out, data, sizes, ndim, strides, dtype, device_type, device_index,
                     std::move(del));
  });
}

ct_status ct_tensor_from_blob_queued(ct_tensor **out, void *data, const int64_t *sizes, size_t ndim,
                                     const int64_t *strides, int32_t dtype, int32_t device_type,
                                     int32_t device_index, void *ctx) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    return wrap_blob(ct_fn_, out, data, sizes, ndim, strides, dtype, device_type, device_index,
                     [ctx](void *) { push_release(ctx); });
  });
}

ct_status ct_release_queue_poll(void **ctxs, size_t capacity, size_t *n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(n);
    if (capacity > 0) CT_CHECK_NOT_NULL(ctxs);
    std::lock_guard<std::mutex> lock(release_mutex);
    auto &q = release_queue();
    size_t k = 0;
    while (k < capacity && !q.empty()) {
      ctxs[k++] = q.front();
      q.pop_front();
    }
    *n = k;
    return CT_OK;
  });
}

size_t ct_release_queue_length(void) {
  std::lock_guard<std::mutex> lock(release_mutex);
  return release_queue().size();
}

}  // extern "C"
