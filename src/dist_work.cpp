// Work in flight. Every rank's tensors compared before a Gloo collective:
// Gloo ends the process (an exception on its transport thread) when a peer's
// buffer has another size, so each collective of an all-ctorch Gloo group
// first all-gathers a small descriptor (kind, dtype, elements, op or root)
// and starts the data collective only when every rank passed the same; else
// every rank gets CT_ERR_INVALID_ARGUMENT naming who passed what. The data
// collective starts once the check is in (ct_work_wait, ct_work_is_completed
// or the group's next collective), in the same order on every rank. And the
// ct_work_* handles that wait for it.
#include "distributed.h"

#if CT_HAS_C10D

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using ct::dist::ms;
using ct::dist::timeout_ms;
using ct::dist::valid_timeout;

namespace ct {
namespace dist {

namespace {

const char *const kKinds[] = {"?",        "all_reduce",     "broadcast", "all_gather",
                              "all_to_all", "reduce_scatter", "barrier"};
const char *const kOps[] = {"sum", "avg", "product", "min", "max", "band", "bor", "bxor"};

std::string describe(const int64_t *d) {
  int64_t kind = d[0];
  std::string s = kind > 0 && kind < 7 ? kKinds[kind] : "?";
  if (kind == 6) return s;
  s += " of ";
  s += d[1] >= 0 && d[1] < static_cast<int64_t>(c10::ScalarType::NumOptions)
           ? c10::toString(static_cast<c10::ScalarType>(d[1]))
           : "?";
  s += " with " + std::to_string(d[2]) + (d[2] == 1 ? " element" : " elements");
  if (kind == 1 || kind == 5)
    s += std::string(" (") + (d[3] >= 0 && d[3] < 8 ? kOps[d[3]] : "?") + ")";
  if (kind == 2) s += " from root " + std::to_string(d[3]);
  return s;
}

// The message when the ranks' descriptors differ, "" when they agree.
std::string compare(const Group &g, const Job &j) {
  std::vector<const int64_t *> d(g.size);
  for (int r = 0; r < g.size; r++) d[r] = j.all[0][r].data_ptr<int64_t>();
  std::string text;
  int listed = 0;
  for (int r = 1; r < g.size; r++) {
    if (std::memcmp(d[r], d[0], sizeof(Desc::v)) == 0) continue;
    if (listed++ == 4) {
      text += "; ...";
      break;
    }
    text += "; rank " + std::to_string(r) + ": " + describe(d[r]);
  }
  if (text.empty()) return "";
  return "the ranks passed different tensors (every rank must pass the same kind of collective, "
         "dtype and number of elements): rank 0: " +
         describe(d[0]) + text;
}

// Resolves j (g.issue_mu held): waits for its check, compares, starts the
// data collective. CT_ERR_TIMEOUT (j not resolved) when a poll or a
// non-blocking look runs out first.
ct_status resolve(const char *fn, const std::shared_ptr<Group> &g, Job &j, ms timeout, bool poll,
                  bool wait) {
  if (j.resolved) return CT_OK;
  if (!wait && !j.check->isCompleted()) return CT_ERR_TIMEOUT;
  ct_work tmp;
  tmp.w = j.check;
  tmp.group = g;
  tmp.op = j.op;
  tmp.seq = j.seq;
  tmp.is_check = true;
  ct_status st = work_wait(fn, &tmp, timeout, poll);
  if (st != CT_OK && !tmp.done.load()) {
    if (poll) return st;  // the check goes on
    // The group's timeout ran out (Gloo gave the check up).
    j.code = st;
    j.msg = ct_last_error();
    std::string head = std::string(fn) + ": ";
    if (j.msg.compare(0, head.size(), head) == 0) j.msg.erase(0, head.size());
  } else if (tmp.code != CT_OK) {
    j.code = tmp.code;
    j.msg = tmp.msg;
  } else {
    std::string diff = compare(*g, j);
    if (!diff.empty()) {
      j.code = CT_ERR_INVALID_ARGUMENT;
      j.msg = j.op + " on rank " + std::to_string(g->rank) + " of " + std::to_string(g->size) +
              " (" + g->backend + "): " + diff;
    } else {
      try {
        run_guarded(
            *g, fn, j.op.c_str(), [&] { j.start(*g, j.started); }, j.seq);
      } catch (const ct::Error &e) {
        j.code = e.code;
        j.msg = e.msg;
      }
    }
  }
  j.resolved = true;
  j.start = nullptr;  // its tensors are the work's now
  j.check.reset();
  j.all.clear();
  j.in.clear();
  return CT_OK;
}

void drain_locked(const char *fn, const std::shared_ptr<Group> &g) {
  if (g->pending && !g->pending->resolved) resolve(fn, g, *g->pending, g->timeout, false, true);
  g->pending.reset();
}

}  // namespace

void decide_checks(Group &g) {
  g.check_peers = g.all_ctorch = false;
  if (g.size < 2 || !g.store) return;
  std::vector<std::string> cards;
  for (int r = 0; r < g.size; r++) cards.push_back("ctorch/rank/" + std::to_string(r));
  // Every rank left its card before the backend's rendezvous, which every
  // rank has passed here: all ranks see the same keys.
  g.all_ctorch = g.store->check(cards);
  const char *off = std::getenv("CTORCH_DIST_CHECK");
  bool wanted = off == nullptr || std::strcmp(off, "0") != 0;
  g.check_peers = g.all_ctorch && g.backend == "gloo" && wanted;
}

void submit(const char *fn, const std::shared_ptr<Group> &g, ct_work &w, const Desc &d,
            Start start) {
  std::lock_guard<std::mutex> lk(g->issue_mu);
  drain_locked(fn, g);
  if (!g->check_peers) {
    Started s;
    run_guarded(
        *g, fn, w.op.c_str(), [&] { start(*g, s); }, w.seq);
    w.w = s.w;
    w.finish = std::move(s.finish);
    return;
  }
  auto j = std::make_shared<Job>();
  j->op = w.op;
  j->seq = w.seq;
  j->mine = d;
  j->start = std::move(start);
  auto opts = at::TensorOptions().dtype(at::kLong);
  j->in.push_back(at::from_blob(j->mine.v, {4}, opts).clone());
  j->all.emplace_back();
  for (int r = 0; r < g->size; r++) j->all[0].push_back(at::empty({4}, opts));
  run_guarded(
      *g, fn, w.op.c_str(),
      [&] { j->check = g->backend_impl()->allgather(j->all, j->in, c10d::AllgatherOptions()); },
      w.seq);
  g->pending = j;
  w.job = j;
}

void drain(const char *fn, const std::shared_ptr<Group> &g) {
  std::lock_guard<std::mutex> lk(g->issue_mu);
  drain_locked(fn, g);
}

ct_status adopt(const char *fn, ct_work &w, ms timeout, bool poll, bool wait) {
  const std::shared_ptr<Group> &g = w.group;
  if (!g->check_peers) return CT_OK;
  std::unique_lock<std::mutex> lk(g->issue_mu, std::defer_lock);
  if (wait)
    lk.lock();
  else if (!lk.try_lock())
    return CT_ERR_TIMEOUT;  // another thread is waiting for a check: not now
  if (!w.job) return CT_OK;
  Job &j = *w.job;
  ct_status st = resolve(fn, g, j, timeout, poll, wait);
  if (st != CT_OK) return st;
  if (g->pending == w.job) g->pending.reset();
  if (j.code != CT_OK) {
    std::lock_guard<std::mutex> wl(w.mu);
    w.code = j.code;
    w.msg = j.msg;
    w.done.store(true);
  } else {
    w.w = j.started.w;
    w.finish = j.started.finish;
  }
  w.job.reset();
  return CT_OK;
}

}  // namespace dist
}  // namespace ct


// ---- the work handles ---------------------------------------------------------

extern "C" {

ct_status ct_work_wait(ct_work *work, double timeout_s) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(work);
    ct::dist::check_process(ct_fn_, *work->group);
    CT_CHECK_ARG(timeout_s <= 0 || valid_timeout(timeout_s),
                 "%s: timeout_s must be finite and at most 1e7 (got %g)", ct_fn_, timeout_s);
    if (timeout_s > 0 && timeout_ms(timeout_s) < work->group->timeout)
      return ct::dist::work_wait(ct_fn_, work, timeout_ms(timeout_s), true);
    return ct::dist::work_wait(ct_fn_, work, work->group->timeout, false);
  });
}

ct_status ct_work_is_completed(int32_t *out, ct_work *work) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(work);
    ct::dist::check_process(ct_fn_, *work->group);
    if (!work->done.load() && work->group->check_peers) {  // start it if its check is in
      ct_status st = ct::dist::adopt(ct_fn_, *work, work->group->timeout, true, false);
      if (st == CT_ERR_TIMEOUT) {  // its check is not in yet
        *out = 0;
        return CT_OK;
      }
      if (st != CT_OK) return st;
    }
    *out = (work->done.load() || work->w->isCompleted()) ? 1 : 0;
    return CT_OK;
  });
}

ct_status ct_work_source_rank(int32_t *out, ct_work *work) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(work);
    CT_CHECK_ARG(work->any_source, "%s: not a recv from any source (src -1)", ct_fn_);
    CT_CHECK_ARG(work->done.load() && work->code == CT_OK,
                 "%s: the recv has not completed successfully (ct_work_wait first)", ct_fn_);
    *out = work->w->sourceRank();
    return CT_OK;
  });
}

void ct_work_free(ct_work *work) {
  ct::guard_value(0, [&] {
    if (work != nullptr) ct::dist::free_handle(work, work->group->pid);
    return 0;
  });
}

}  // extern "C"

#endif  // CT_HAS_C10D
