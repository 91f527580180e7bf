// Internal definitions of the distributed files (distributed.cpp, dist_group.cpp,
// ddp.cpp): the handle structs over c10d and the helpers they share.
#pragma once

#include "internal.h"
#include "torch_version.h"

// Compiled only with the distributed part (CMakeLists.txt: Gloo's and/or NCCL's
// headers); without it src/dist_unavailable.cpp stands in for every function.
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#if defined(CTORCH_WITH_GLOO)
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1  // LibTorch's c10d headers hide Gloo behind it
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(CTORCH_WITH_NCCL)
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1  // and NCCL behind this
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <cmath>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

namespace ct {
namespace dist {

using ms = std::chrono::milliseconds;
// What the collectives are called on: the backend itself (LibTorch 2.x: a
// c10d::Backend under a ProcessGroup; 1.13: the ProcessGroup is the backend).
#if CT_TORCH_AT_LEAST(2, 0)
using Impl = c10d::Backend;
#else
using Impl = c10d::ProcessGroup;
#endif

// What the default group and its subgroups share: the store and torch's
// group counter (group names and start-up barrier keys follow it).
struct World {
  c10::intrusive_ptr<c10d::Store> store;
  int rank = 0, size = 0;
  std::string backend;
  std::mutex mu;
  int group_count = 0;
};

struct Heartbeat;  // dist_health.cpp

// How far this rank's program has got in a group: the collectives ctorch
// issued on it (the n-th call's number is n) and the last one's name. The
// heartbeat publishes it, so a peer's timeout can name a rank that is alive
// but has not called the collective (its program blocked or busy elsewhere).
struct Progress {
  std::atomic<int64_t> calls{0};
  std::atomic<const char *> op{"none"};  // a string literal
};

// What a collective starts: c10d's work and what runs after it succeeds.
struct Started {
  c10::intrusive_ptr<c10d::Work> w;
  std::function<void()> finish;  // AVG, staged copies
};
struct Group;
using Start = std::function<void(Group &, Started &)>;

// A collective of a group whose ranks are compared first (dist_work.cpp):
// the group's issuer thread all-gathers every rank's Desc, then starts the
// data collective once the check has shown that every rank passes the same
// kind, dtype and number of elements. A checked send or recv (dist_p2p.cpp)
// is a Job too, resolved by its own exchange with the peer.
struct Desc {
  int64_t v[4] = {0, -1, -1, 0};  // kind, dtype, numel (per tensor), op or root
};
struct Job {
  std::string op;
  int64_t seq = 0;
  Desc mine;
  Start start;  // dropped once resolved (its tensors are the work's then)
  std::mutex mu;
  std::condition_variable cv;
  bool resolved = false;  // under mu; then started or code/msg are final
  Started started;        // when resolved with CT_OK
  ct_status code = CT_OK;
  std::string msg;  // when not
  int source = -1;  // a checked recv from any source: the rank it came from
  // Resolves the job (notifying its waiters): the work started, or an error.
  void finish(ct_status c, std::string m, Started s = Started());
};

struct Issuer;       // dist_work.cpp: the thread that checks and starts collectives in order
struct P2pChannels;  // dist_p2p.cpp

struct Group {
  std::shared_ptr<World> world;
  c10::intrusive_ptr<Impl> impl;
  c10::intrusive_ptr<c10d::ProcessGroup> pg;      // for the Reducer
  c10::intrusive_ptr<c10d::Store> store;          // the group's (prefixed) store
  c10::intrusive_ptr<c10d::Store> backend_store;  // the one Gloo was given
  int rank = 0, size = 0;
  std::string backend;
  ms timeout{0};
  std::vector<int> world_ranks;          // members' ranks in the default group; empty: it is one
  int pid = 0;                           // the process that made it (Gloo's threads do not fork)
  std::shared_ptr<Heartbeat> heartbeat;  // this rank's beat in the group's store
  std::shared_ptr<Progress> progress = std::make_shared<Progress>();
  // Gloo ends the process when a peer's buffer has another size, so a group
  // of Gloo ranks that are all ctorch's compares what each rank passes before
  // every collective (PyTorch's ranks would not take part in the check).
  bool check_peers = false;
  bool all_ctorch = false;       // every rank left a ctorch card (no PyTorch ranks)
  std::mutex issue_mu;              // guards issuer (made at the first checked collective)
  std::shared_ptr<Issuer> issuer;   // last members: stopped before the backend goes
  std::shared_ptr<P2pChannels> p2p;          // dist_p2p.cpp: send/recv order per peer and tag
  Impl *backend_impl() const { return impl.get(); }
};

}  // namespace dist
}  // namespace ct

struct ct_store {
  c10::intrusive_ptr<c10d::Store> store;
  int32_t tcp_port = -1;
  int pid = static_cast<int>(getpid());  // a TCP store's socket is not for a forked child
};
struct ct_process_group {
  std::shared_ptr<ct::dist::Group> g;
};
struct ct_work {
  c10::intrusive_ptr<c10d::Work> w;
  std::function<void()> finish;  // runs once after success (AVG, staged copies)
  std::shared_ptr<ct::dist::Group> group;
  std::string op;
  int64_t seq = 0;  // its number among the group's collectives (Progress::calls)
  std::shared_ptr<ct::dist::Job> job;  // set while w waits for its check (dist_work.cpp)
  bool is_check = false;               // w is such a check itself
  bool any_source = false;
  std::mutex mu;  // orders finishing
  std::atomic<bool> done{false};
  ct_status code = CT_OK;
  std::string msg;
};

namespace ct {
namespace dist {

inline ms timeout_ms(double seconds) { return ms(static_cast<int64_t>(seconds * 1000.0 + 0.5)); }
// A timeout a caller gives: finite, positive, at most ~116 days.
inline bool valid_timeout(double s) { return std::isfinite(s) && s > 0 && s <= 1e7; }
// The most ranks a group may have (Gloo connects every pair).
constexpr int32_t kMaxWorld = 1 << 16;

// Whether this process is a fork() child of the one that made a handle
// (pid): its threads are not here, so destroying it would wait forever.
inline bool forked_from(int pid) { return pid != static_cast<int>(getpid()); }
// Deletes a handle (NULL ok), except in a fork() child of the process that
// made it (pid): there destroying it would join threads the child does not
// have, so the child keeps (leaks) the memory of its copy instead.
template <typename Handle>
void free_handle(Handle *h, int pid) {
  if (h != nullptr && !forked_from(pid)) delete h;
}

// dist_health.cpp: who is there.
// Leaves this rank's card ("<host> <pid>") in the group's store.
void leave_card(c10d::Store &store, int rank);
// Starts this rank's heartbeat (a counter in the store, bumped twice a
// second by a thread of its own until the group is freed).
// Also publishes `progress` (when it changed) with each beat.
std::shared_ptr<Heartbeat> start_heartbeat(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                           std::shared_ptr<const Progress> progress);
// After a failure: "; the process of rank 2 has exited", "; rank 3 stopped
// responding ...", "; rank 1 has not called this collective ..." (seq: the
// failed collective's number, 0 when it is not one), or "" when ctorch
// cannot tell (PyTorch ranks have no card).
std::string who_failed(const Group &g, int64_t seq = 0);
// who_failed in two steps, so that a wait can take the first before its
// deadline and report at the deadline: diagnose_begin notes which peers have
// exited and samples the others' heartbeats (no waiting); diagnose_end
// sleeps until three beats after that sample and says who did not beat.
struct Diagnosis {
  bool taken = false, unreachable = false;
  std::chrono::steady_clock::time_point at;
  std::vector<int64_t> before;  // each rank's beat count (-1: none)
  std::vector<pid_t> pids;      // peers on this host (0: elsewhere)
  std::vector<int> gone;
};
Diagnosis diagnose_begin(const Group &g);
std::string diagnose_end(const Group &g, const Diagnosis &d, int64_t seq);
// How long diagnose_end may sleep after diagnose_begin (three beats), and a margin.
constexpr ms kDiagnosisLead{1700};
// After a failed join: "; rank 2 never joined" from Gloo's rendezvous keys.
std::string missing_ranks(const Group &g);

// dist_group.cpp (its end): every rank's tensors compared before a Gloo collective.
// Whether every rank of g is a ctorch one (g.all_ctorch) and whether they
// compare their tensors before each collective (g.check_peers: that, Gloo,
// more than one rank, and CTORCH_DIST_CHECK not "0").
void decide_checks(Group &g);
// Starts the collective of w (op, seq set): on a checking group it is queued
// for the group's issuer thread, which runs the check and starts the data
// collective as soon as the check passed, in call order (the caller goes on:
// its compute overlaps both); else at once.
void submit(const char *fn, const std::shared_ptr<Group> &g, ct_work &w, const Desc &d,
            Start start);
// Waits until every queued collective of g has been checked and started
// (before anything else uses the backend in order: DDP, freeing the group).
void drain(const char *fn, const std::shared_ptr<Group> &g);
// For w whose job is not resolved yet: waits for it (poll as work_wait) and
// takes the result; CT_ERR_TIMEOUT (message set) when a poll runs out first.
// wait=false: never blocks (CT_ERR_TIMEOUT while the job runs).
ct_status adopt(const char *fn, ct_work &w, ms timeout, bool poll, bool wait = true);

// dist_p2p.cpp: a send or recv of a checking group exchanges a descriptor
// with its peer first (Gloo ends the process on a size mismatch): both ranks
// get CT_ERR_INVALID_ARGUMENT naming both sides when they differ. Sets up w
// (its job) and returns; the exchange runs on the caller's thread when
// blocking, else on a thread of its own.
void p2p_submit(const char *fn, const std::shared_ptr<Group> &g, ct_work &w, bool is_send,
                const at::Tensor &t, int peer, int tag, bool blocking);

// dist_group.cpp
// Whether "gloo" / "nccl" is compiled in.
bool has_backend(const std::string &b);
// The backend's name (NULL: "gloo"); raises for one this build or machine lacks.
std::string backend_name(const char *fn, const char *backend);
c10::intrusive_ptr<c10d::Store> tcp_store(const char *fn, const std::string &host, int port,
                                          bool master, int world_size, ms timeout,
                                          bool multi_tenant);
int tcp_port(c10d::Store &store);
c10::intrusive_ptr<c10d::Store> env_store(const char *fn, const std::string &host, int port,
                                          int rank, int size, ms timeout);
std::unique_ptr<ct_process_group> make_default_group(const char *fn, std::shared_ptr<World> world,
                                                     ms timeout);
std::unique_ptr<ct_process_group> make_subgroup(const char *fn, const Group &parent,
                                                const std::vector<int> &ranks, ms timeout);
void check_tensor(const char *fn, const Group &g, const char *what, const at::Tensor &t);
// Fails (CT_ERR_INVALID_ARGUMENT) in a process forked from the one that made g.
void check_process(const char *fn, const Group &g);
// The same for a store handle.
void check_store_process(const ct_store &s);
// Runs body; an exception becomes a ct::Error with a status for its kind
// (timeout, broken connection, other) and a message naming fn, the operation
// and this rank.
void run_guarded(const Group &g, const char *fn, const char *op, const std::function<void()> &body,
                 int64_t seq = 0);
void run_store(const char *fn, const char *op, const char *key, const std::function<void()> &body);
// Waits for w: poll=false waits inside c10d with timeout (the group's: the
// operation fails when it runs out); poll=true polls up to timeout and
// leaves the work going when it runs out.
ct_status work_wait(const char *fn, ct_work *w, ms timeout, bool poll);

}  // namespace dist
}  // namespace ct
