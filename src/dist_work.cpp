// Work in flight. Every rank's tensors compared before a Gloo collective:
// Gloo ends the process (an exception on its transport thread) when a peer's
// buffer has another size, so each collective of an all-ctorch Gloo group
// first all-gathers a small descriptor (kind, dtype, elements, op or root)
// and starts the data collective only when every rank passed the same; else
// every rank gets CT_ERR_INVALID_ARGUMENT naming who passed what. The check
// and the launch run on a thread of the group's own (its issuer), one
// collective after the other in call order, so the order is the same on
// every rank and the caller's compute overlaps the communication. And the
// ct_work_* handles that wait for it.
#include "distributed.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using ct::dist::ms;
using ct::dist::timeout_ms;
using ct::dist::valid_timeout;

namespace ct {
namespace dist {

void Job::finish(ct_status c, std::string m, Started s) {
  std::lock_guard<std::mutex> lk(mu);
  code = c;
  msg = std::move(m);
  started = std::move(s);
  start = nullptr;
  resolved = true;
  cv.notify_all();
}

// The group's issuer: a queue of checked collectives and the thread that
// works through it (started at the first one). It holds the group weakly;
// the group's destructor stops it (the jobs still queued fail).
struct Issuer {
  std::weak_ptr<Group> group;
  int pid = static_cast<int>(getpid());
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Job>> queue;
  bool busy = false, stop = false;
  std::thread th;
  ~Issuer() {
    {
      std::lock_guard<std::mutex> lk(mu);
      stop = true;
      cv.notify_all();
    }
    // A fork child has no such thread; the thread itself may drop the group last.
    if (forked_from(pid) || std::this_thread::get_id() == th.get_id())
      th.detach();
    else if (th.joinable())
      th.join();
  }
};

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
std::string compare(const Group &g, const std::vector<at::Tensor> &all) {
  std::vector<const int64_t *> d(g.size);
  for (int r = 0; r < g.size; r++) d[r] = all[r].data_ptr<int64_t>();
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

// Checks and starts one job (on the issuer's thread): all-gathers the
// descriptors, waits for them (the group's timeout), compares, starts the
// data collective. Every outcome resolves j.
void run_job(const std::shared_ptr<Group> &g, Job &j) {
  const char *fn = j.op.c_str();
  auto opts = at::TensorOptions().dtype(at::kLong);
  std::vector<at::Tensor> in{at::from_blob(j.mine.v, {4}, opts).clone()};
  std::vector<std::vector<at::Tensor>> all(1);
  for (int r = 0; r < g->size; r++) all[0].push_back(at::empty({4}, opts));
  ct_work check;
  check.group = g;
  check.op = j.op;
  check.seq = j.seq;
  check.is_check = true;
  try {
    run_guarded(
        *g, fn, j.op.c_str(),
        [&] { check.w = g->backend_impl()->allgather(all, in, c10d::AllgatherOptions()); },
        j.seq);
  } catch (const ct::Error &e) {
    j.finish(e.code, e.msg);
    return;
  }
  ct_status st = work_wait(fn, &check, g->timeout, false);
  if (st != CT_OK && !check.done.load()) {  // the group's timeout ran out
    std::string m = ct_last_error(), head = std::string(fn) + ": ";
    if (m.compare(0, head.size(), head) == 0) m.erase(0, head.size());
    j.finish(st, m);
    return;
  }
  if (check.code != CT_OK) {
    j.finish(check.code, check.msg);
    return;
  }
  std::string diff = compare(*g, all[0]);
  if (!diff.empty()) {
    j.finish(CT_ERR_INVALID_ARGUMENT, j.op + " on rank " + std::to_string(g->rank) + " of " +
                                          std::to_string(g->size) + " (" + g->backend +
                                          "): " + diff);
    return;
  }
  Started s;
  try {
    run_guarded(
        *g, fn, j.op.c_str(), [&] { j.start(*g, s); }, j.seq);
  } catch (const ct::Error &e) {
    j.finish(e.code, e.msg);
    return;
  }
  j.finish(CT_OK, "", std::move(s));
}

void issuer_loop(Issuer *is) {
  std::unique_lock<std::mutex> lk(is->mu);
  for (;;) {
    is->cv.wait(lk, [&] { return is->stop || !is->queue.empty(); });
    if (is->stop) break;
    std::shared_ptr<Job> j = is->queue.front();
    is->queue.pop_front();
    is->busy = true;
    lk.unlock();
    {
      std::shared_ptr<Group> g = is->group.lock();
      if (g)
        run_job(g, *j);
      else
        j->finish(CT_ERR_INVALID_ARGUMENT, j->op + ": the process group was freed first");
    }  // may drop the group last: ~Issuer detaches this thread then
    j.reset();
    lk.lock();
    is->busy = false;
    is->cv.notify_all();
  }
  for (auto &j : is->queue)
    j->finish(CT_ERR_INVALID_ARGUMENT,
              j->op + ": the process group was freed before this collective started");
  is->queue.clear();
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
  std::shared_ptr<Issuer> is;
  {
    std::lock_guard<std::mutex> lk(g->issue_mu);
    if (!g->issuer) {
      is = std::make_shared<Issuer>();
      is->group = g;
      Issuer *raw = is.get();
      is->th = std::thread([raw] { issuer_loop(raw); });
      g->issuer = is;
    }
    is = g->issuer;
  }
  w.job = j;
  std::lock_guard<std::mutex> lk(is->mu);
  is->queue.push_back(j);
  is->cv.notify_all();
}

void drain(const char *fn, const std::shared_ptr<Group> &g) {
  (void)fn;
  std::shared_ptr<Issuer> is;
  {
    std::lock_guard<std::mutex> lk(g->issue_mu);
    is = g->issuer;
  }
  if (!is) return;
  std::unique_lock<std::mutex> lk(is->mu);
  is->cv.wait(lk, [&] { return is->stop || (is->queue.empty() && !is->busy); });
}

ct_status adopt(const char *fn, ct_work &w, ms timeout, bool poll, bool wait) {
  std::lock_guard<std::mutex> wl(w.mu);
  if (!w.job) return CT_OK;
  Job &j = *w.job;
  {
    std::unique_lock<std::mutex> lk(j.mu);
    if (!j.resolved) {
      if (!wait) return CT_ERR_TIMEOUT;
      // Not polling: the job's own waits are bounded by the group's timeout
      // (and its diagnosis); the margin only guards against a lost wake-up.
      ms limit = poll ? timeout : timeout + ms(30000);
      if (!j.cv.wait_for(lk, limit, [&] { return j.resolved; }))
        return ct::set_error(CT_ERR_TIMEOUT,
                             "%s: %s on rank %d of %d (%s) did not finish within %.1f s (its "
                             "check is not in yet); it goes on (wait again)",
                             fn, w.op.c_str(), w.group->rank, w.group->size,
                             w.group->backend.c_str(), limit.count() / 1000.0);
    }
  }
  if (j.code != CT_OK) {
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
    if (!work->done.load()) {  // a checked one: started once its check is in
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

