// Distributed (ct_store_*, ct_process_group_*, collectives): c10d's
// stores and process groups behind the C ABI, set up the way
// torch.distributed.init_process_group sets them up for this LibTorch version
// (same keys, same start-up barrier), so ctorch ranks and PyTorch's Python
// ranks share one group. Data parallel (the Reducer) is in ddp.cpp, the
// ct_work_* handles in dist_work.cpp.
#include "distributed.h"

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

using ct::dist::Group;
using ct::dist::kMaxWorld;
using ct::dist::ms;
using ct::dist::timeout_ms;
using ct::dist::valid_timeout;

namespace {

// How many tensors a collective over this group takes per list.
void check_list(const char *fn, const char *what, const ct_tensor *const *list, int n) {
  if (list == nullptr) ct::raise(CT_ERR_INVALID_ARGUMENT, "argument '%s' is NULL", what);
  for (int i = 0; i < n; i++)
    if (list[i] == nullptr)
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s[%d] is NULL (the group has %d ranks)", what, i, n);
}

std::vector<at::Tensor> tensors_of(const ct_tensor *const *list, int n) {
  std::vector<at::Tensor> v;
  v.reserve(n);
  for (int i = 0; i < n; i++) v.push_back(list[i]->t);
  return v;
}

void check_like(const char *fn, const char *what, int i, const at::Tensor &t,
                const at::Tensor &ref) {
  if (t.scalar_type() != ref.scalar_type() || t.sizes() != ref.sizes())
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s[%d] is %s%s but must be %s%s like the others", what, i,
              c10::toString(t.scalar_type()), c10::str(t.sizes()).c_str(),
              c10::toString(ref.scalar_type()), c10::str(ref.sizes()).c_str());
}

// Reduces the n rows of `stacked` (n x output) into output with op.
void reduce_rows(at::Tensor &output, const at::Tensor &stacked, int32_t op, int n) {
  at::Tensor r;
  switch (op) {
    case CT_REDUCE_SUM: r = stacked.sum(0, false, output.scalar_type()); break;
    case CT_REDUCE_AVG: r = stacked.sum(0, false, output.scalar_type()).div_(n); break;
    case CT_REDUCE_PRODUCT: r = stacked.prod(0, false, output.scalar_type()); break;
    case CT_REDUCE_MIN: r = std::get<0>(stacked.min(0)); break;
    case CT_REDUCE_MAX: r = std::get<0>(stacked.max(0)); break;
    default: {
      r = stacked[0].clone();
      for (int i = 1; i < n; i++) {
        if (op == CT_REDUCE_BAND)
          r.bitwise_and_(stacked[i]);
        else if (op == CT_REDUCE_BOR)
          r.bitwise_or_(stacked[i]);
        else
          r.bitwise_xor_(stacked[i]);
      }
    }
  }
  output.copy_(r.view(output.sizes()));
}

// The reduce op for c10d; AVG on gloo becomes SUM and a division in finish.
c10d::ReduceOp c10d_op(const char *fn, int32_t op, const at::Tensor &t, bool backend_avg) {
  if (op < CT_REDUCE_SUM || op > CT_REDUCE_BXOR)
    ct::raise(CT_ERR_INVALID_ARGUMENT, "unknown reduce op %d (CT_REDUCE_SUM..BXOR)", op);
  if (op == CT_REDUCE_AVG && !at::isFloatingType(t.scalar_type()) &&
      !at::isComplexType(t.scalar_type()))
    ct::raise(CT_ERR_INVALID_ARGUMENT, "CT_REDUCE_AVG needs a floating dtype, not %s",
              c10::toString(t.scalar_type()));
  if (op >= CT_REDUCE_BAND &&
      (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type())))
    ct::raise(CT_ERR_INVALID_ARGUMENT, "bitwise reduce ops need an integer or bool dtype, not %s",
              c10::toString(t.scalar_type()));
  if (op == CT_REDUCE_AVG && !backend_avg) return c10d::ReduceOp(c10d::ReduceOp::SUM);
  return c10d::ReduceOp(static_cast<c10d::ReduceOp::RedOpType>(op));
}

// Starts an all-to-all of `ins` (one tensor per rank) through one staging
// buffer each way (alltoall_base is what every backend has); returns the
// buffer whose row r will hold what rank r sent, once w is done.
at::Tensor start_staged_all_to_all(Group &g, ct::dist::Started &w,
                                   const std::vector<at::Tensor> &ins) {
  at::Tensor send = at::stack(ins), recv = at::empty_like(send);
  std::vector<int64_t> split;  // empty: equal splits
  w.w = g.backend_impl()->alltoall_base(recv, send, split, split, c10d::AllToAllOptions());
  return recv;
}

// What a collective passes, for the ranks' check (dist_group.cpp).
ct::dist::Desc desc(int64_t kind, const at::Tensor *t, int64_t arg) {
  ct::dist::Desc d;
  d.v[0] = kind;
  if (t != nullptr) {
    d.v[1] = static_cast<int64_t>(t->scalar_type());
    d.v[2] = t->numel();
  }
  d.v[3] = arg;
  return d;
}
enum Kind : int64_t { kAllReduce = 1, kBroadcast, kAllGather, kAllToAll, kReduceScatter, kBarrier };

// Starts `start` (which starts c10d work; on a checking group once every
// rank's desc agrees) and either waits for it (work NULL) or hands it out.
ct_status collective(const char *fn, ct_process_group *pg, ct_work **work, const char *opname,
                     const ct::dist::Desc &d, ct::dist::Start start, bool any_source = false) {
  if (work != nullptr) *work = nullptr;
  auto w = std::make_unique<ct_work>();
  w->group = pg->g;
  w->op = opname;
  w->any_source = any_source;
  const bool p2p = std::strcmp(opname, "send") == 0 || std::strcmp(opname, "recv") == 0;
  // Counted when every rank of the group calls it (not send/recv), so that
  // the n-th is the same collective on every rank.
  if (!p2p) {
    ct::dist::Progress &p = *pg->g->progress;
    w->seq = ++p.calls;
    p.op.store(opname);
  }
  if (p2p) {
    ct::dist::Started s;
    ct::dist::run_guarded(
        *pg->g, fn, opname, [&] { start(*pg->g, s); }, w->seq);
    w->w = s.w;
    w->finish = std::move(s.finish);
  } else {
    ct::dist::submit(fn, pg->g, *w, d, std::move(start));
  }
  if (work == nullptr) return ct::dist::work_wait(fn, w.get(), pg->g->timeout, false);
  *work = w.release();
  return CT_OK;
}

// A send or recv of a checking group (dist_p2p.cpp): its descriptor first.
ct_status p2p_checked(const char *fn, ct_process_group *pg, ct_work **work, bool is_send,
                      const at::Tensor &t, int peer, int tag) {
  if (work != nullptr) *work = nullptr;
  auto w = std::make_unique<ct_work>();
  w->group = pg->g;
  w->op = is_send ? "send" : "recv";
  w->any_source = !is_send && peer < 0;
  ct::dist::p2p_submit(fn, pg->g, *w, is_send, t, peer, tag, work == nullptr);
  if (work == nullptr) return ct::dist::work_wait(fn, w.get(), pg->g->timeout, false);
  *work = w.release();
  return CT_OK;
}

ct_process_group *checked(const char *fn, ct_process_group *pg) {
  if (pg == nullptr) ct::raise(CT_ERR_INVALID_ARGUMENT, "argument 'pg' is NULL");
  ct::dist::check_process(fn, *pg->g);
  return pg;
}

void check_rank(const char *fn, const char *what, int32_t r, const Group &g, bool any_ok) {
  if ((r < 0 || r >= g.size) && !(any_ok && r == -1))
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s %d is outside the group's ranks 0..%d%s", what, r,
              g.size - 1, any_ok ? " (or -1: any)" : "");
}

}  // namespace

extern "C" {

int32_t ct_distributed_is_compiled(void) { return 1; }

int32_t ct_distributed_has_backend(const char *backend) {
  return backend != nullptr && ct::dist::has_backend(backend) ? 1 : 0;
}

ct_status ct_store_new_tcp(ct_store **out, const char *host, int32_t port, int32_t is_master,
                           int32_t world_size, double timeout_s) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    CT_CHECK_NOT_NULL(host);
    CT_CHECK_ARG(port >= 0 && port <= 65535, "%s: port %d is outside 0..65535", ct_fn_, port);
    CT_CHECK_ARG(valid_timeout(timeout_s), "%s: timeout_s must be finite and in (0, 1e7] (got %g)",
                 ct_fn_, timeout_s);
    CT_CHECK_ARG(world_size == -1 || (world_size >= 1 && world_size <= kMaxWorld),
                 "%s: world_size must be in 1..%d or -1 (unknown), got %d", ct_fn_, kMaxWorld,
                 world_size);
    CT_CHECK_ARG(port != 0 || is_master, "%s: port 0 (any free port) needs is_master=1", ct_fn_);
    auto s = std::make_unique<ct_store>();
    s->store = ct::dist::tcp_store(ct_fn_, host, port, is_master != 0,
                                   world_size > 0 ? world_size : -1, timeout_ms(timeout_s), false);
    s->tcp_port = ct::dist::tcp_port(*s->store);
    *out = s.release();
    return CT_OK;
  });
}

ct_status ct_store_new_file(ct_store **out, const char *path, int32_t world_size, double timeout_s) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    CT_CHECK_NOT_NULL(path);
    CT_CHECK_ARG(*path != '\0', "%s: path is empty", ct_fn_);
    CT_CHECK_ARG(world_size >= 1, "%s: world_size must be >= 1, got %d", ct_fn_, world_size);
    CT_CHECK_ARG(valid_timeout(timeout_s), "%s: timeout_s must be finite and in (0, 1e7] (got %g)",
                 ct_fn_, timeout_s);
    // c10d's FileStore opens the file only when first used, and then
    // retries for minutes: check here that it can be made.
    int fd = ::open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0)
      return ct::set_error(CT_ERR_IO, "%s: cannot open or create the store file '%.300s': %s",
                           ct_fn_, path, std::strerror(errno));
    ::close(fd);
    auto s = std::make_unique<ct_store>();
    ct::dist::run_store(ct_fn_, "open the file store", path,
                        [&] { s->store = c10::make_intrusive<c10d::FileStore>(path, world_size); });
    s->store->setTimeout(timeout_ms(timeout_s));
    *out = s.release();
    return CT_OK;
  });
}

ct_status ct_store_new_prefix(ct_store **out, ct_store *store, const char *prefix) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    CT_CHECK_NOT_NULL(store);
    ct::dist::check_store_process(*store);
    CT_CHECK_NOT_NULL(prefix);
    auto s = std::make_unique<ct_store>();
    s->store = c10::make_intrusive<c10d::PrefixStore>(prefix, store->store);
    *out = s.release();
    return CT_OK;
  });
}

ct_status ct_store_port(int32_t *out, const ct_store *store) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(store);
    if (store->tcp_port < 0)
      return ct::set_error(CT_ERR_NOT_SUPPORTED, "%s: not a TCP store", ct_fn_);
    *out = store->tcp_port;
    return CT_OK;
  });
}

ct_status ct_store_set(ct_store *store, const char *key, const void *data, size_t size) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(store);
    ct::dist::check_store_process(*store);
    CT_CHECK_NOT_NULL(key);
    CT_CHECK_ARG(data != nullptr || size == 0, "%s: data is NULL but size is %zu", ct_fn_, size);
    const auto *p = static_cast<const uint8_t *>(data);
    std::vector<uint8_t> v(p, p + size);
    ct::dist::run_store(ct_fn_, "set", key, [&] { store->store->set(key, v); });
    return CT_OK;
  });
}

ct_status ct_store_get(void **data, size_t *size, ct_store *store, const char *key) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(data);
    CT_CHECK_NOT_NULL(size);
    CT_CHECK_NOT_NULL(store);
    ct::dist::check_store_process(*store);
    CT_CHECK_NOT_NULL(key);
    std::vector<uint8_t> v;
    ct::dist::run_store(ct_fn_, "get", key, [&] { v = store->store->get(key); });
    void *buf = std::malloc(v.empty() ? 1 : v.size());  // freed with ct_free
    if (buf == nullptr) throw std::bad_alloc();
    if (!v.empty()) std::memcpy(buf, v.data(), v.size());
    *data = buf;
    *size = v.size();
    return CT_OK;
  });
}

ct_status ct_store_add(int64_t *out, ct_store *store, const char *key, int64_t delta) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(store);
    ct::dist::check_store_process(*store);
    CT_CHECK_NOT_NULL(key);
    int64_t v = 0;
    ct::dist::run_store(ct_fn_, "add", key, [&] {
      // c10d's TCP store server reads the old value with std::stoll, and one
      // it cannot read ends its handler for this client for good (every later
      // call: "Broken pipe"). So a value that is there is read here first.
      if (store->store->check({key})) {
        std::vector<uint8_t> old = store->store->get(key);
        std::string text(old.begin(), old.end());
        bool ok = true;
        try {
          (void)std::stoll(text);
        } catch (...) {
          ok = false;
        }
        if (!ok) {
          bool printable = !text.empty() && text.size() <= 40;
          for (char c : text) printable = printable && c >= 0x20 && c < 0x7f;
          ct::raise(CT_ERR_INVALID_ARGUMENT,
                    "key '%.200s' holds %s%s%s, not an integer (ct_store_add adds to a "
                    "decimal integer, as ct_store_add or ct_store_set wrote it)",
                    key, printable ? "'" : "",
                    printable ? text.c_str() : (std::to_string(text.size()) + " bytes").c_str(),
                    printable ? "'" : "");
        }
      }
      v = store->store->add(key, delta);
    });
    if (out != nullptr) *out = v;
    return CT_OK;
  });
}

void ct_store_free(ct_store *store) {
  ct::guard_value(0, [&] {
    if (store != nullptr) ct::dist::free_handle(store, store->pid);
    return 0;
  });
}

ct_status ct_process_group_new(ct_process_group **out, ct_store *store, const char *backend,
                               int32_t rank, int32_t world_size, double timeout_s) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    CT_CHECK_NOT_NULL(store);
    ct::dist::check_store_process(*store);
    CT_CHECK_ARG(world_size >= 1 && world_size <= kMaxWorld,
                 "%s: world_size must be in 1..%d, got %d", ct_fn_, kMaxWorld, world_size);
    CT_CHECK_ARG(rank >= 0 && rank < world_size, "%s: rank %d is outside 0..%d", ct_fn_, rank,
                 world_size - 1);
    CT_CHECK_ARG(valid_timeout(timeout_s), "%s: timeout_s must be finite and in (0, 1e7] (got %g)",
                 ct_fn_, timeout_s);
    std::string be = ct::dist::backend_name(ct_fn_, backend);
    auto world = std::make_shared<ct::dist::World>();
    world->store = store->store;
    world->rank = rank;
    world->size = world_size;
    world->backend = be;
    *out = ct::dist::make_default_group(ct_fn_, world, timeout_ms(timeout_s)).release();
    return CT_OK;
  });
}

ct_status ct_process_group_new_subgroup(ct_process_group **out, ct_process_group *pg,
                                        const int32_t *ranks, size_t n, double timeout_s) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    CT_CHECK_NOT_NULL(pg);
    CT_CHECK_NOT_NULL(ranks);
    const Group &g = *pg->g;
    ct::dist::check_process(ct_fn_, g);
    CT_CHECK_ARG(g.world_ranks.empty(),
                 "%s: pg must be a default group (subgroups of subgroups: list the ranks of the "
                 "default group instead)",
                 ct_fn_);
    CT_CHECK_ARG(n >= 1 && n <= static_cast<size_t>(g.size),
                 "%s: n = %zu ranks, but the group has %d", ct_fn_, n, g.size);
    std::vector<int> sorted(ranks, ranks + n);
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < n; i++) {
      CT_CHECK_ARG(sorted[i] >= 0 && sorted[i] < g.size, "%s: rank %d is outside 0..%d", ct_fn_,
                   sorted[i], g.size - 1);
      CT_CHECK_ARG(i == 0 || sorted[i] != sorted[i - 1], "%s: rank %d is listed twice", ct_fn_,
                   sorted[i]);
    }
    CT_CHECK_ARG(timeout_s <= 0 || valid_timeout(timeout_s),
                 "%s: timeout_s must be finite and at most 1e7 (got %g)", ct_fn_, timeout_s);
    ms t = timeout_s > 0 ? timeout_ms(timeout_s) : g.timeout;
    *out = ct::dist::make_subgroup(ct_fn_, g, sorted, t).release();
    return CT_OK;
  });
}

int32_t ct_process_group_rank(const ct_process_group *pg) { return pg ? pg->g->rank : -1; }
int32_t ct_process_group_size(const ct_process_group *pg) { return pg ? pg->g->size : -1; }

void ct_process_group_free(ct_process_group *pg) {
  ct::guard_value(0, [&] {
    // A collective still waiting for its check starts now: the peers run theirs.
    if (pg != nullptr && !ct::dist::forked_from(pg->g->pid)) {
      try {
        ct::dist::drain("ct_process_group_free", pg->g);
      } catch (...) {  // it failed: nothing to wait for
      }
    }
    if (pg != nullptr) ct::dist::free_handle(pg, pg->g->pid);
    return 0;
  });
}

ct_status ct_process_group_all_reduce(ct_work **work, ct_process_group *pg, ct_tensor *tensor, int32_t op) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    checked(ct_fn_, pg);
    CT_CHECK_NOT_NULL(tensor);
    at::Tensor t = tensor->t;
    ct::dist::check_tensor(ct_fn_, *pg->g, "tensor", t);
    bool native_avg = pg->g->backend != "gloo";
    c10d::ReduceOp rop = c10d_op(ct_fn_, op, t, native_avg);
    return collective(ct_fn_, pg, work, "all_reduce", desc(kAllReduce, &t, op),
                      [t, rop, op, native_avg](Group &g, ct::dist::Started &w) {
                        std::vector<at::Tensor> ts{t};
                        c10d::AllreduceOptions o;
                        o.reduceOp = rop;
                        w.w = g.backend_impl()->allreduce(ts, o);
                        if (op == CT_REDUCE_AVG && !native_avg) {
                          int n = g.size;
                          w.finish = [t, n]() mutable { t.div_(n); };
                        }
                      });
  });
}

ct_status ct_process_group_broadcast(ct_work **work, ct_process_group *pg, ct_tensor *tensor, int32_t root) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    checked(ct_fn_, pg);
    CT_CHECK_NOT_NULL(tensor);
    at::Tensor t = tensor->t;
    ct::dist::check_tensor(ct_fn_, *pg->g, "tensor", t);
    check_rank(ct_fn_, "root", root, *pg->g, false);
    return collective(ct_fn_, pg, work, "broadcast", desc(kBroadcast, &t, root),
                      [t, root](Group &g, ct::dist::Started &w) {
                        std::vector<at::Tensor> ts{t};
                        c10d::BroadcastOptions o;
                        o.rootRank = root;
                        w.w = g.backend_impl()->broadcast(ts, o);
                      });
  });
}

ct_status ct_process_group_all_gather(ct_work **work, ct_process_group *pg, ct_tensor *const *outputs,
                                      const ct_tensor *input) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    checked(ct_fn_, pg);
    CT_CHECK_NOT_NULL(input);
    int n = pg->g->size;
    check_list(ct_fn_, "outputs", outputs, n);
    at::Tensor in = input->t;
    ct::dist::check_tensor(ct_fn_, *pg->g, "input", in);
    std::vector<std::vector<at::Tensor>> outs{tensors_of(outputs, n)};
    for (int i = 0; i < n; i++) {
      ct::dist::check_tensor(ct_fn_, *pg->g, "outputs[]", outs[0][i]);
      check_like(ct_fn_, "outputs", i, outs[0][i], in);
    }
    return collective(ct_fn_, pg, work, "all_gather", desc(kAllGather, &in, 0),
                      [in, outs](Group &g, ct::dist::Started &w) mutable {
                        if (in.numel() == 0) {  // nothing to move; Gloo divides by the size (SIGFPE)
                          w.w = g.backend_impl()->barrier(c10d::BarrierOptions());
                          return;
                        }
                        std::vector<at::Tensor> ins{in};
                        w.w = g.backend_impl()->allgather(outs, ins, c10d::AllgatherOptions());
                      });
  });
}

ct_status ct_process_group_all_to_all(ct_work **work, ct_process_group *pg, ct_tensor *const *outputs,
                                      const ct_tensor *const *inputs) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    checked(ct_fn_, pg);
    int n = pg->g->size;
    check_list(ct_fn_, "outputs", outputs, n);
    check_list(ct_fn_, "inputs", inputs, n);
    std::vector<at::Tensor> outs = tensors_of(outputs, n), ins = tensors_of(inputs, n);
    for (int i = 0; i < n; i++) {
      ct::dist::check_tensor(ct_fn_, *pg->g, "inputs[]", ins[i]);
      ct::dist::check_tensor(ct_fn_, *pg->g, "outputs[]", outs[i]);
      check_like(ct_fn_, "inputs", i, ins[i], ins[0]);
      check_like(ct_fn_, "outputs", i, outs[i], ins[0]);
    }
    return collective(ct_fn_, pg, work, "all_to_all", desc(kAllToAll, &ins[0], 0),
                      [outs, ins](Group &g, ct::dist::Started &w) {
      at::Tensor recv = start_staged_all_to_all(g, w, ins);
      w.finish = [outs, recv]() mutable {
        for (size_t i = 0; i < outs.size(); i++) outs[i].copy_(recv[i]);
      };
    });
  });
}

ct_status ct_process_group_reduce_scatter(ct_work **work, ct_process_group *pg, ct_tensor *output,
                                          const ct_tensor *const *inputs, int32_t op) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    checked(ct_fn_, pg);
    CT_CHECK_NOT_NULL(output);
    int n = pg->g->size;
    check_list(ct_fn_, "inputs", inputs, n);
    at::Tensor out = output->t;
    ct::dist::check_tensor(ct_fn_, *pg->g, "output", out);
    std::vector<at::Tensor> ins = tensors_of(inputs, n);
    for (int i = 0; i < n; i++) {
      ct::dist::check_tensor(ct_fn_, *pg->g, "inputs[]", ins[i]);
      check_like(ct_fn_, "inputs", i, ins[i], out);
    }
    c10d_op(ct_fn_, op, out, false);  // validates op against the dtype
    return collective(ct_fn_, pg, work, "reduce_scatter", desc(kReduceScatter, &out, op),
                      [out, ins, op, n](Group &g, ct::dist::Started &w) {
      at::Tensor recv = start_staged_all_to_all(g, w, ins);
      w.finish = [out, recv, op, n]() mutable { reduce_rows(out, recv, op, n); };
    });
  });
}

ct_status ct_process_group_barrier(ct_work **work, ct_process_group *pg) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    checked(ct_fn_, pg);
    return collective(ct_fn_, pg, work, "barrier", desc(kBarrier, nullptr, 0),
                      [](Group &g, ct::dist::Started &w) {
                        w.w = g.backend_impl()->barrier(c10d::BarrierOptions());
                      });
  });
}

ct_status ct_process_group_send(ct_work **work, ct_process_group *pg, const ct_tensor *tensor, int32_t dst,
                                int32_t tag) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    checked(ct_fn_, pg);
    CT_CHECK_NOT_NULL(tensor);
    ct::dist::check_tensor(ct_fn_, *pg->g, "tensor", tensor->t);
    check_rank(ct_fn_, "dst", dst, *pg->g, false);
    CT_CHECK_ARG(dst != pg->g->rank, "%s: dst %d is this rank", ct_fn_, dst);
    if (pg->g->check_peers) return p2p_checked(ct_fn_, pg, work, true, tensor->t, dst, tag);
    return collective(ct_fn_, pg, work, "send", ct::dist::Desc(),
                      [&](Group &g, ct::dist::Started &w) {
                        std::vector<at::Tensor> ts{tensor->t};
                        w.w = g.backend_impl()->send(ts, dst, tag);
                      });
  });
}

ct_status ct_process_group_recv(ct_work **work, ct_process_group *pg, ct_tensor *tensor, int32_t src,
                                int32_t tag) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    checked(ct_fn_, pg);
    CT_CHECK_NOT_NULL(tensor);
    ct::dist::check_tensor(ct_fn_, *pg->g, "tensor", tensor->t);
    check_rank(ct_fn_, "src", src, *pg->g, true);
    CT_CHECK_ARG(src != pg->g->rank, "%s: src %d is this rank", ct_fn_, src);
    if (pg->g->check_peers) return p2p_checked(ct_fn_, pg, work, false, tensor->t, src, tag);
    return collective(ct_fn_, pg, work, "recv", ct::dist::Desc(),
                      [&](Group &g, ct::dist::Started &w) {
                        std::vector<at::Tensor> ts{tensor->t};
                        w.w = src < 0 ? g.backend_impl()->recvAnysource(ts, tag)
                                      : g.backend_impl()->recv(ts, src, tag);
                      },
                      src < 0);
  });
}

}  // extern "C"

