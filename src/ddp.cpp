// Data-parallel training (ct_ddp_*): c10d's Reducer set up as
// torch.nn.parallel.DistributedDataParallel sets it up (parameter check
// across ranks, rank 0's state broadcast, 1 MB first bucket, reversed bucket
// order), so gradients are all-reduced in buckets while backward runs.
#include "distributed.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/logger.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

struct ct_ddp {
  std::shared_ptr<ct::dist::Group> group;
  std::vector<at::Tensor> params, buffers;
  std::shared_ptr<c10d::Reducer> reducer;
  // As DistributedDataParallel: the reducer logs through it (find_unused's
  // search reads it); declared after the reducer, so destroyed before it.
  std::shared_ptr<c10d::Logger> logger;
  bool find_unused = false;
};

namespace {

// torch.nn.parallel.distributed's constants.
constexpr int64_t kFirstBucketBytes = 1024 * 1024;           // dist._DEFAULT_FIRST_BUCKET_BYTES
constexpr int64_t kDefaultBucketBytes = 25 * 1024 * 1024;    // bucket_cap_mb=25
constexpr size_t kBroadcastBucketBytes = 250 * 1024 * 1024;  // _sync_module_states

// c10d's Reducer as this LibTorch builds it: 1.13 to 2.6 take per-bucket size
// limits; newer ones (2.11, 2.15) dropped them and take a skip flag, a Python
// reducer flag and a per-bucket cap list after the first bucket's cap (all off
// or empty, as DistributedDataParallel's defaults). Chosen by what compiles.
template <class R = c10d::Reducer>
std::shared_ptr<R> new_reducer(std::vector<at::Tensor> params,
                               std::vector<std::vector<size_t>> buckets, std::vector<size_t> limits,
                               const c10::intrusive_ptr<c10d::ProcessGroup> &pg,
                               std::vector<bool> sparse, int64_t cap, bool find_unused,
                               bool as_view) {
  std::unordered_map<size_t, std::string> names;
  if constexpr (std::is_constructible_v<
                    R, std::vector<at::Tensor>, std::vector<std::vector<size_t>>,
                    c10::intrusive_ptr<c10d::ProcessGroup>, std::vector<bool>, int64_t, bool, bool,
                    std::unordered_map<size_t, std::string>, int64_t, bool, bool,
                    std::vector<int64_t>>) {
    (void)limits;
    return std::make_shared<R>(std::move(params), std::move(buckets), pg, std::move(sparse), cap,
                               find_unused, as_view, std::move(names), kFirstBucketBytes, false,
                               false, std::vector<int64_t>{});
  } else {
    return std::make_shared<R>(std::move(params), std::move(buckets), std::move(limits), pg,
                               std::move(sparse), cap, find_unused, as_view, std::move(names),
                               kFirstBucketBytes);
  }
}

// An all-gather of v (the same length on every rank) over g's backend.
std::vector<std::vector<int64_t>> gather_ints(const ct::dist::Group &g, const std::vector<int64_t> &v,
                                              const at::Device &device) {
  at::Tensor in = at::tensor(v, at::kLong).to(device);
  std::vector<std::vector<at::Tensor>> outs(1);
  for (int r = 0; r < g.size; r++) outs[0].push_back(at::empty_like(in));
  std::vector<at::Tensor> ins{in};
  g.backend_impl()->allgather(outs, ins, c10d::AllgatherOptions())->wait(g.timeout);
  std::vector<std::vector<int64_t>> all;
  for (auto &t : outs[0]) {
    at::Tensor c = t.cpu();
    all.emplace_back(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
  }
  return all;
}

std::string param_text(const int64_t *m) {  // dtype, ndim, sizes, strides
  std::string s = c10::toString(static_cast<c10::ScalarType>(m[0]));
  s += "[";
  for (int64_t d = 0; d < m[1]; d++) s += (d ? ", " : "") + std::to_string(m[2 + d]);
  s += "] (strides";
  for (int64_t d = 0; d < m[1]; d++) s += (d ? ", " : " ") + std::to_string(m[2 + m[1] + d]);
  return s + ")";
}

// Every rank's parameters compared, so that every rank gets the same answer
// (c10d's verify_params_across_processes throws only on the ranks that
// differ from rank 0, and rank 0 then waits in the next broadcast for the
// whole timeout): first counts (a fixed size), then each parameter's dtype,
// sizes and strides (a size every rank now shares).
void check_params_across_ranks(const ct::dist::Group &g, const std::vector<at::Tensor> &params) {
  int64_t dims = 0;
  std::vector<int64_t> meta;
  for (const at::Tensor &p : params) {
    dims += p.dim();
    meta.push_back(static_cast<int64_t>(p.scalar_type()));
    meta.push_back(p.dim());
    for (int64_t s : p.sizes()) meta.push_back(s);
    for (int64_t s : p.strides()) meta.push_back(s);
  }
  const at::Device dev = params[0].device();
  auto head = gather_ints(g, {static_cast<int64_t>(params.size()), dims}, dev);
  for (int r = 1; r < g.size; r++)
    if (head[r] != head[0])
      ct::raise(CT_ERR_INVALID_ARGUMENT,
                "DDP needs the same parameters on every rank: rank 0 has %lld parameters (%lld "
                "dimensions in all), rank %d has %lld (%lld dimensions)",
                (long long)head[0][0], (long long)head[0][1], r, (long long)head[r][0],
                (long long)head[r][1]);
  auto all = gather_ints(g, meta, dev);
  size_t at = 0;
  for (size_t i = 0; i < params.size(); i++) {
    size_t len = 2 + 2 * static_cast<size_t>(all[0][at + 1]);
    for (int r = 1; r < g.size; r++) {
      // Same ndim (else the rest is misaligned: compared as a whole below).
      if (all[r][at + 1] != all[0][at + 1] ||
          !std::equal(all[0].begin() + at, all[0].begin() + at + len, all[r].begin() + at))
        ct::raise(CT_ERR_INVALID_ARGUMENT,
                  "DDP needs the same parameters on every rank: params[%zu] is %s on rank 0 but "
                  "%s on rank %d",
                  i, param_text(all[0].data() + at).c_str(),
                  all[r][at + 1] == all[0][at + 1]
                      ? param_text(all[r].data() + at).c_str()
                      : (std::to_string(all[r][at + 1]) + "-dimensional").c_str(),
                  r);
    }
    at += len;
  }
}

std::unique_ptr<ct_ddp> make_ddp(const char *fn, ct_process_group *pg,
                                 std::vector<at::Tensor> params, std::vector<at::Tensor> buffers,
                                 double bucket_mb, int32_t flags) {
  auto d = std::make_unique<ct_ddp>();
  d->group = pg->g;
  const ct::dist::Group &g = *pg->g;
  ct::dist::check_process(fn, g);
  if (params.empty()) ct::raise(CT_ERR_INVALID_ARGUMENT, "no parameters that require grad");
  for (size_t i = 0; i < params.size(); i++) {
    const at::Tensor &p = params[i];
    if (!p.defined() || !p.requires_grad() || !p.is_leaf())
      ct::raise(CT_ERR_INVALID_ARGUMENT, "params[%zu] must be a leaf tensor that requires grad", i);
    ct::dist::check_tensor(fn, g, "params[]", p);
  }
  for (auto &b : buffers) ct::dist::check_tensor(fn, g, "buffers[]", b);
  int64_t cap = bucket_mb > 0 ? static_cast<int64_t>(bucket_mb * 1024 * 1024) : kDefaultBucketBytes;
  d->find_unused = (flags & CT_DDP_FIND_UNUSED) != 0;
  bool as_view = (flags & CT_DDP_GRAD_AS_BUCKET_VIEW) != 0;
  ct::dist::drain(fn, pg->g);  // the group's collectives first, in order on every rank
  ct::dist::run_guarded(g, fn, "set up data parallel", [&] {
    if (g.all_ctorch) check_params_across_ranks(g, params);
    c10d::verify_params_across_processes(g.pg, params, c10::nullopt);
    std::vector<at::Tensor> states;
    for (auto &p : params) states.push_back(p.detach());
    for (auto &b : buffers) states.push_back(b.detach());
    c10d::broadcast_coalesced(g.pg, states, kBroadcastBucketBytes, 0);
    std::vector<bool> sparse(params.size(), false);
    std::vector<std::vector<size_t>> buckets;
    std::vector<size_t> limits;
    std::tie(buckets, limits) = c10d::compute_bucket_assignment_by_size(
        params, {static_cast<size_t>(kFirstBucketBytes), static_cast<size_t>(cap)}, sparse);
    std::reverse(buckets.begin(), buckets.end());
    std::reverse(limits.begin(), limits.end());
    d->reducer = new_reducer(params, std::move(buckets), std::move(limits), g.pg, std::move(sparse),
                             cap, d->find_unused, as_view);
    d->logger = std::make_shared<c10d::Logger>(d->reducer);
    d->reducer->set_logger(d->logger);
    d->logger->set_construction_data_and_log("ctorch", std::vector<int>{}, -1, !buffers.empty(),
                                             false, false);
  });
  d->params = std::move(params);
  d->buffers = std::move(buffers);
  return d;
}

std::vector<at::Tensor> list_of(const char *fn, const char *what, const ct_tensor *const *list,
                                size_t n) {
  if (n > 0 && list == nullptr)
    ct::raise(CT_ERR_INVALID_ARGUMENT, "argument '%s' is NULL but n is %zu", what, n);
  std::vector<at::Tensor> v;
  for (size_t i = 0; i < n; i++) {
    if (list[i] == nullptr) ct::raise(CT_ERR_INVALID_ARGUMENT, "%s[%zu] is NULL", what, i);
    v.push_back(list[i]->t);
  }
  return v;
}

}  // namespace

extern "C" {

ct_status ct_ddp_new(ct_ddp **out, ct_process_group *pg, const ct_tensor *const *params, size_t n_params,
                     const ct_tensor *const *buffers, size_t n_buffers, double bucket_mb, int32_t flags) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    CT_CHECK_NOT_NULL(pg);
    CT_CHECK_ARG(std::isfinite(bucket_mb) && bucket_mb <= 1e6,
                 "%s: bucket_mb must be finite and at most 1e6 (got %g)", ct_fn_, bucket_mb);
    CT_CHECK_ARG((flags & ~(CT_DDP_FIND_UNUSED | CT_DDP_GRAD_AS_BUCKET_VIEW)) == 0,
                 "%s: unknown flags 0x%x", ct_fn_, (unsigned)flags);
    auto ps = list_of(ct_fn_, "params", params, n_params);
    auto bs = list_of(ct_fn_, "buffers", buffers, n_buffers);
    *out = make_ddp(ct_fn_, pg, std::move(ps), std::move(bs), bucket_mb, flags).release();
    return CT_OK;
  });
}

ct_status ct_ddp_new_module(ct_ddp **out, ct_process_group *pg, ct_module *module, double bucket_mb,
                            int32_t flags) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    CT_CHECK_NOT_NULL(pg);
    CT_CHECK_NOT_NULL(module);
    CT_CHECK_ARG(std::isfinite(bucket_mb) && bucket_mb <= 1e6,
                 "%s: bucket_mb must be finite and at most 1e6 (got %g)", ct_fn_, bucket_mb);
    CT_CHECK_ARG((flags & ~(CT_DDP_FIND_UNUSED | CT_DDP_GRAD_AS_BUCKET_VIEW)) == 0,
                 "%s: unknown flags 0x%x", ct_fn_, (unsigned)flags);
    std::vector<at::Tensor> ps, bs;
    for (const auto &p : module->m.named_parameters(true))
      if (p.value.requires_grad()) ps.push_back(p.value);
    for (const auto &b : module->m.named_buffers(true)) bs.push_back(b.value);
    *out = make_ddp(ct_fn_, pg, std::move(ps), std::move(bs), bucket_mb, flags).release();
    return CT_OK;
  });
}

ct_status ct_ddp_prepare_backward(ct_ddp *ddp, const ct_tensor *const *outputs, size_t n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(ddp);
    auto outs = list_of(ct_fn_, "outputs", outputs, n);
    ct::dist::check_process(ct_fn_, *ddp->group);
    ct::dist::drain(ct_fn_, ddp->group);  // before the Reducer's all-reduces
    ct::dist::run_guarded(*ddp->group, ct_fn_, "prepare backward", [&] {
      // As DDP's forward: with grad on, rebuild the buckets in the order
      // gradients came in the first step, which also checks that the last
      // step's reduction finished.
      if (at::GradMode::is_enabled()) ddp->reducer->rebuild_buckets();
      ddp->reducer->prepare_for_forward();
      ddp->reducer->prepare_for_backward(ddp->find_unused ? outs : std::vector<at::Tensor>{});
    });
    return CT_OK;
  });
}

void ct_ddp_free(ct_ddp *ddp) {
  ct::guard_value(0, [&] {
    if (ddp != nullptr) ct::dist::free_handle(ddp, ddp->group->pid);
    return 0;
  });
}

}  // extern "C"

