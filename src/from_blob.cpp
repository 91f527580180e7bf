// Tensors over caller memory: ct_tensor_from_blob (a deleter the caller
// gives) and ct_tensor_from_blob_queued with the library-owned release queue
// that garbage-collected hosts poll (ct_release_queue_poll). The memory is
// checked first: sizes, strides and extent (check_extent). ct_tensor_wrap
// takes all of it in one struct and returns the metadata too; ct_tensor_ref_info
// is the reverse exchange (a new handle and its metadata in one call).
#include "checks.h"
#include "internal.h"
#include "locks.h"

#include <deque>
#include <functional>
#include <mutex>
#include <vector>

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

ct_status ct_tensor_wrap(ct_tensor **out, ct_tensor_info *info, const ct_blob *blob) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(blob);
    if (blob->size < sizeof(ct_blob))
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: blob->size is %zu, expected at least %zu (set it to sizeof(ct_blob))",
                           ct_fn_, blob->size, sizeof(ct_blob));
    if (info && info->size < sizeof(ct_tensor_info))
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: info->size is %zu, expected at least %zu (set it to "
                           "sizeof(ct_tensor_info))",
                           ct_fn_, info->size, sizeof(ct_tensor_info));
    const int32_t flags = blob->flags;
    if (flags & ~(CT_BLOB_QUEUED | CT_BLOB_BYTE_STRIDES | CT_BLOB_REQUIRES_GRAD))
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: unknown bits in blob->flags (0x%x)",
                           ct_fn_, static_cast<unsigned>(flags));
    if ((flags & CT_BLOB_QUEUED) && blob->deleter)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: blob->deleter must be NULL with CT_BLOB_QUEUED (ctx is queued)",
                           ct_fn_);
    if (blob->ndim < 0)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: blob->ndim is negative (%lld)", ct_fn_,
                           static_cast<long long>(blob->ndim));
    const size_t ndim = static_cast<size_t>(blob->ndim);
    c10::ScalarType st;
    if (ct_status s = ct::check_dtype(ct_fn_, blob->dtype, &st)) return s;
    if ((flags & CT_BLOB_REQUIRES_GRAD) && !(c10::isFloatingType(st) || c10::isComplexType(st)))
      return ct::set_error(CT_ERR_TYPE,
                           "%s: CT_BLOB_REQUIRES_GRAD needs a floating or complex dtype, got %s",
                           ct_fn_, ct_dtype_name(blob->dtype));
    const int64_t *strides = blob->strides;
    int64_t small[16];
    std::vector<int64_t> big;
    if (strides && (flags & CT_BLOB_BYTE_STRIDES)) {
      int64_t *conv = small;
      if (ndim > 16) {
        big.resize(ndim);
        conv = big.data();
      }
      const int64_t item = static_cast<int64_t>(c10::elementSize(st));
      for (size_t i = 0; i < ndim; ++i) {
        if (strides[i] % item)
          return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                               "%s: byte stride %lld of dimension %zu is not a multiple of the "
                               "element size (%lld)",
                               ct_fn_, static_cast<long long>(strides[i]), i,
                               static_cast<long long>(item));
        conv[i] = strides[i] / item;
      }
      strides = conv;
    }
    std::function<void(void *)> del;
    if (flags & CT_BLOB_QUEUED) {
      void *ctx = blob->ctx;
      del = [ctx](void *) { push_release(ctx); };
    } else if (ct_deleter d = blob->deleter) {
      void *ctx = blob->ctx;
      del = [d, ctx](void *p) { d(p, ctx); };
    } else {
      del = [](void *) {};
    }
    ct_tensor *t = nullptr;
    if (ct_status s = wrap_blob(ct_fn_, &t, blob->data, blob->sizes, ndim, strides, blob->dtype,
                                blob->device_type, blob->device_index, std::move(del)))
      return s;
    if (flags & CT_BLOB_REQUIRES_GRAD) t->t.requires_grad_(true);
    if (info) ct_tensor_metadata(info, t);  // cannot fail: checked above, t is defined
    *out = t;
    return CT_OK;
  });
}

ct_status ct_tensor_ref_info(ct_tensor **out, ct_tensor_info *info, const ct_tensor *t) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(info);
    CT_CHECK_NOT_NULL(t);
    if (info->size < sizeof(ct_tensor_info))
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: info->size is %zu, expected at least %zu (set it to "
                           "sizeof(ct_tensor_info))",
                           ct_fn_, info->size, sizeof(ct_tensor_info));
    if (!t->t.defined())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument 't' is an undefined tensor",
                           ct_fn_);
    ct_tensor *r = ct::new_tensor(t->t);
    ct_tensor_metadata(info, r);  // cannot fail: checked above
    *out = r;
    return CT_OK;
  });
}

}  // extern "C"
