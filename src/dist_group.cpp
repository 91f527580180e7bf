// How ctorch makes c10d stores and process groups (the steps of
// torch.distributed's init_process_group and new_group for this LibTorch
// version, so PyTorch's Python ranks can join), checks tensors for a group,
// turns c10d's exceptions into statuses, and waits for work (the check
// before a collective and the ct_work_* handles: dist_work.cpp).
#include "distributed.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <future>
#include <sstream>
#include <thread>
#include <type_traits>

#include <csignal>

#include <unistd.h>

namespace ct {
namespace dist {

namespace {

// torch.distributed's key for the start-up barrier (STORE_BASED_BARRIER_PREFIX).
const char *const kBarrierPrefix = "store_based_barrier_key";

#if defined(CTORCH_WITH_GLOO)
// Gloo devices as torch's Python makes them: one per GLOO_SOCKET_IFNAME
// interface, else the default (this host's name, or loopback).
// Sequence numbers start equal on every rank, as torch's
// _new_process_group_helper makes them: the backend's own
// setSequenceNumberForGroup where it declares one; where it only inherits
// Backend's (torch 2.15: a deprecated no-op that warns), nothing to do.
template <class B>
void set_sequence_number(B &backend) {
  if constexpr (std::is_same_v<decltype(&B::setSequenceNumberForGroup), void (B::*)()>)
    backend.setSequenceNumberForGroup();
}

c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> gloo_options(ms timeout) {
  auto o = c10d::ProcessGroupGloo::Options::create(timeout);
  const char *ifnames = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifnames != nullptr && std::strlen(ifnames) > 1) {
    std::stringstream ss(ifnames);
    std::string name;
    while (std::getline(ss, name, ','))
      if (!name.empty())
        o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
  } else {
    o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  o->threads = static_cast<int>(o->devices.size()) * 2;
  return o;
}
#endif

// torch's _store_based_barrier: every rank of the world adds 1, then waits
// for the count to reach the world's size.
void store_barrier(const char *fn, World &w, const std::string &suffix, ms timeout) {
  std::string key = std::string(kBarrierPrefix) + ":" + suffix;
  w.store->add(key, 1);
  auto start = std::chrono::steady_clock::now();
  int64_t arrived = w.store->add(key, 0);
  while (arrived != w.size) {
    if (std::chrono::steady_clock::now() - start > timeout)
      ct::raise(CT_ERR_TIMEOUT,
                "rank %d timed out after %.1f s waiting for all %d ranks to join the process "
                "group: %lld arrived (store key '%s'); check that every rank uses the same "
                "init_method or store layout (PyTorch's init_process_group keys live under "
                "'default_pg/'), the same port, and GLOO_SOCKET_IFNAME",
                w.rank, timeout.count() / 1000.0, w.size, (long long)arrived, key.c_str());
    std::this_thread::sleep_for(ms(10));
    arrived = w.store->add(key, 0);
  }
}

// Gloo writes to its peers' sockets with writev, which raises SIGPIPE when a
// peer has died; its default action ends this process. Python ignores SIGPIPE
// at start-up, so PyTorch's ranks see CT_ERR_IO-like errors instead: ctorch
// does the same for its host, unless the host chose a disposition itself.
void ignore_sigpipe_if_default() {
  struct sigaction now {};
  if (sigaction(SIGPIPE, nullptr, &now) == 0 && now.sa_handler == SIG_DFL &&
      !(now.sa_flags & SA_SIGINFO)) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, nullptr);
  }
}

// Makes the backend for `rank` of `size` over `store` (already prefixed with
// the group's name) and the ProcessGroup around it.
void make_backend(Group &g, const c10::intrusive_ptr<c10d::Store> &store) {
  ignore_sigpipe_if_default();
  g.pid = static_cast<int>(getpid());
  leave_card(*store, g.rank);
  g.heartbeat = start_heartbeat(store, g.rank, g.progress);
#if defined(CTORCH_WITH_NCCL)
  if (g.backend == "nccl") {
    // torch 2.x for "nccl": one NCCL backend under PrefixStore("cuda/",
    // prefix_store), registered for CUDA; options as torch's defaults with
    // the group's timeout. NCCL makes its communicators at the first
    // collective on a device.
    auto backend_store = c10::make_intrusive<c10d::PrefixStore>("cuda/", store);
    g.store = store;
    g.backend_store = backend_store;
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = g.timeout;
    auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(backend_store, g.rank, g.size, opts);
    set_sequence_number(*nccl);
    auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, g.rank, g.size);
    pg->setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);
    c10::intrusive_ptr<c10d::Backend> backend = nccl;
    pg->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL, backend);
    g.impl = nccl;
    g.pg = pg;
    return;
  }
#endif
#if !defined(CTORCH_WITH_GLOO)
  ct::raise(CT_ERR_INTERNAL, "backend '%s' has no constructor in this build", g.backend.c_str());
#elif CT_TORCH_AT_LEAST(2, 0)
  // torch 2.x (_new_process_group_helper): ProcessGroup(prefix_store) and one
  // Gloo backend under PrefixStore("cpu/", prefix_store), registered for the
  // CPU and CUDA alike.
  auto backend_store = c10::make_intrusive<c10d::PrefixStore>("cpu/", store);
  g.store = store;
  g.backend_store = backend_store;
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(backend_store, g.rank, g.size,
                                                          gloo_options(g.timeout));
  set_sequence_number(*gloo);
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, g.rank, g.size);
  pg->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  c10::intrusive_ptr<c10d::Backend> backend = gloo;
  pg->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, backend);
  pg->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::GLOO, backend);
  g.impl = gloo;
  g.pg = pg;
#else
  g.store = store;
  g.backend_store = store;
  auto gloo =
      c10::make_intrusive<c10d::ProcessGroupGloo>(store, g.rank, g.size, gloo_options(g.timeout));
  g.impl = gloo;
  g.pg = gloo;
#endif
}

// make_backend with a bound: Gloo's rendezvous times out by itself, except
// that its TCP connect retries without end when a peer advertised an address
// this host cannot reach (a wrong GLOO_SOCKET_IFNAME). It runs on a thread of
// its own; past the group's timeout and a margin the caller gets
// CT_ERR_TIMEOUT and the thread is left to finish or spin (it owns what it uses
// until it signals, and nothing after).
void make_backend_bounded(const std::shared_ptr<Group> &g,
                          const c10::intrusive_ptr<c10d::Store> &store) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> result = done->get_future();
  std::thread([grp = g, st = store, done]() mutable {
    std::exception_ptr error;
    try {
      make_backend(*grp, st);
    } catch (...) {
      error = std::current_exception();
    }
    // Drop the group before waking the caller: were this thread the last
    // owner, the group (and Gloo's worker threads) would be destroyed here,
    // so ct_process_group_free would return without waiting for its work.
    grp.reset();
    st.reset();
    if (error)
      done->set_exception(error);
    else
      done->set_value();
  }).detach();
  ms limit = g->timeout + ms(10000);
  if (result.wait_for(limit) != std::future_status::ready)
    ct::raise(CT_ERR_TIMEOUT,
              "Gloo did not connect rank %d of %d within %.1f s (its connect to a peer's "
              "advertised address keeps failing: check GLOO_SOCKET_IFNAME on every host)",
              g->rank, g->size, limit.count() / 1000.0);
  result.get();  // rethrows Gloo's error
}

// The store of group `name` (torch 1.13: PrefixStore(name); 2.x: name + "/").
c10::intrusive_ptr<c10d::Store> group_store(const World &w, const std::string &name) {
#if CT_TORCH_AT_LEAST(2, 0)
  return c10::make_intrusive<c10d::PrefixStore>(name + "/", w.store);
#else
  return c10::make_intrusive<c10d::PrefixStore>(name, w.store);
#endif
}

// The start-up barrier after a group is made: always on 1.13; on 2.x only
// with TORCH_DIST_INIT_BARRIER=1, as torch does.
void startup_barrier(const char *fn, World &w, const std::string &name, ms timeout) {
#if CT_TORCH_AT_LEAST(2, 0)
  const char *on = std::getenv("TORCH_DIST_INIT_BARRIER");
  if (on != nullptr && std::strcmp(on, "1") == 0) store_barrier(fn, w, name, timeout);
#else
  (void)name;
  store_barrier(fn, w, std::to_string(w.group_count), timeout);
#endif
}

// A group of this name made over this store before (a second default
// group on one store: names start at "0" again) left this rank's card; its
// keys would mix with the new group's, and Gloo failed after its timeout,
// blaming the network. Only this rank writes that key, so nothing else sets it.
void refuse_reused_name(c10d::Store &store, const std::string &name, int rank) {
  std::string key = "ctorch/rank/" + std::to_string(rank);
  if (!store.check({key})) return;
  std::vector<uint8_t> v = store.get(key);
  std::string card(v.begin(), v.end());
  ct::raise(CT_ERR_INVALID_ARGUMENT,
            "this store already holds process group '%s' (rank %d of it was made by process "
            "'%.100s', host and pid): a store serves one default group; give another group a "
            "new store, or ct_store_new_prefix of this one with a new prefix on every rank "
            "(ct_process_group_new_subgroup for a group within this one)",
            name.c_str(), rank, card.c_str());
}

ct_status classify(const std::string &msg) {
  if (msg.find("imed out") != std::string::npos || msg.find("imeout") != std::string::npos ||
      msg.find("timed out") != std::string::npos)
    return CT_ERR_TIMEOUT;
  if (msg.find("onnection") != std::string::npos || msg.find("Broken pipe") != std::string::npos ||
      msg.find("ECONNREFUSED") != std::string::npos ||
      msg.find("ddress already in use") != std::string::npos ||
      msg.find("Socket") != std::string::npos || msg.find("socket") != std::string::npos ||
      msg.find("peer") != std::string::npos || msg.find("resolve") != std::string::npos)
    return CT_ERR_IO;
  return CT_ERR_TORCH;
}

// The message of the exception in flight, without LibTorch's backtrace.
std::string current_message() {
  try {
    throw;
  } catch (const ct::Error &e) {
    return e.msg;
  } catch (const c10::Error &e) {
    return e.what_without_backtrace();
  } catch (const std::exception &e) {
    return e.what();
  } catch (...) {
    return "unknown C++ exception";
  }
}

// First line only: c10d's messages can carry long traces.
std::string first_lines(std::string s) {
  size_t cut = s.find("\nException raised from");
  if (cut != std::string::npos) s.resize(cut);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.size() > 600) s = s.substr(0, 600) + "...";
  return s;
}

// The work's future (c10d's collectives have one; Gloo's send and recv
// complete only inside their wait(), and have none): null if none.
c10::intrusive_ptr<c10::ivalue::Future> future_of(c10d::Work &w) {
  try {
    return w.getFuture();
  } catch (...) {
    return {};
  }
}

// Waits until fut completes or tp, without ending the work (c10d's wait
// with a timeout would).
bool wait_until(c10::ivalue::Future &fut, c10d::Work &w,
                std::chrono::steady_clock::time_point tp) {
  struct Flag {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto f = std::make_shared<Flag>();
  fut.addCallback([f](c10::ivalue::Future &) {
    std::lock_guard<std::mutex> lk(f->mu);
    f->done = true;
    f->cv.notify_all();
  });
  std::unique_lock<std::mutex> lk(f->mu);
  return f->cv.wait_until(lk, tp, [&] { return f->done || w.isCompleted(); });
}

}  // namespace

bool has_backend(const std::string &b) {
#if defined(CTORCH_WITH_GLOO)
  if (b == "gloo") return true;
#endif
#if defined(CTORCH_WITH_NCCL)
  if (b == "nccl") return true;
#endif
  return false;
}

std::string backend_name(const char *fn, const char *backend) {
  std::string b = backend ? backend : "gloo";
  if (b != "gloo" && b != "nccl")
    ct::raise(CT_ERR_INVALID_ARGUMENT, "unknown backend '%.40s' (\"gloo\" or \"nccl\")", b.c_str());
  if (!has_backend(b))
    ct::raise(CT_ERR_NOT_SUPPORTED, "%s",
              b == "gloo" ? "backend 'gloo' is not in this ctorch build (its LibTorch came "
                            "without Gloo's headers, as PyPI's wheels do: use 'nccl' with CUDA "
                            "tensors, or build against a LibTorch with them)"
                          : "backend 'nccl' is not in this ctorch build (nccl needs a CUDA "
                            "LibTorch 2.x and nccl.h; use 'gloo')");
  if (b == "nccl" && !at::hasCUDA())
    ct::raise(CT_ERR_NOT_SUPPORTED, "backend 'nccl' needs a CUDA device, and none is visible");
  return b;
}

c10::intrusive_ptr<c10d::Store> tcp_store(const char *fn, const std::string &host, int port,
                                          bool master, int world_size, ms timeout,
                                          bool multi_tenant) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(port);
  o.isServer = master;
  if (world_size > 0) o.numWorkers = static_cast<std::size_t>(world_size);
  // As torch's TCPStore(wait_for_workers=True): every store counts itself in,
  // and the master waits for all (a PyTorch master waits for ctorch ranks too).
  o.waitWorkers = world_size > 0;
  o.timeout = timeout;
  o.multiTenant = multi_tenant;  // torch: False, except env:// rendezvous
#if CT_TORCH_AT_LEAST(2, 4)
  // The classic server (LibTorch builds without libuv refuse the other; both
  // speak the same protocol, so Python's stores of either kind connect).
  o.useLibUV = false;
#endif
  ignore_sigpipe_if_default();
  c10::intrusive_ptr<c10d::Store> s;
  try {
    run_store(fn, master ? "start the TCP store server on" : "connect to the TCP store at",
              (host + ":" + std::to_string(port)).c_str(),
              [&] { s = c10::make_intrusive<c10d::TCPStore>(host, o); });
  } catch (const ct::Error &e) {
    // c10d retries a connection until the timeout: still a failure to connect.
    if (e.code == CT_ERR_TIMEOUT) throw ct::Error(CT_ERR_IO, e.msg);
    throw;
  }
  return s;
}

int tcp_port(c10d::Store &store) {
  auto *tcp = dynamic_cast<c10d::TCPStore *>(&store);
  return tcp ? static_cast<int>(tcp->getPort()) : -1;
}

c10::intrusive_ptr<c10d::Store> env_store(const char *fn, const std::string &host, int port,
                                          int rank, int size, ms timeout) {
  // torch.distributed.rendezvous's _create_c10d_store, then init_process_group's
  // PrefixStore("default_pg").
  const char *agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  c10::intrusive_ptr<c10d::Store> s;
  if (agent != nullptr && std::strcmp(agent, "True") == 0) {
    const char *attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
    auto tcp = tcp_store(fn, host, port, false, size, timeout, false);
    s = c10::make_intrusive<c10d::PrefixStore>(
        std::string("/worker/attempt_") + (attempt ? attempt : "0"), tcp);
  } else {
    s = tcp_store(fn, host, port, rank == 0, size, timeout, true);
  }
  return c10::make_intrusive<c10d::PrefixStore>("default_pg", s);
}

std::unique_ptr<ct_process_group> make_default_group(const char *fn, std::shared_ptr<World> world,
                                                     ms timeout) {
  auto g = std::make_shared<Group>();
  g->world = world;
  g->rank = world->rank;
  g->size = world->size;
  g->backend = world->backend;
  g->timeout = timeout;
  std::lock_guard<std::mutex> lk(world->mu);
  std::string name = std::to_string(world->group_count++);
  run_guarded(*g, fn, "join the process group", [&] {
    auto store = group_store(*world, name);
    refuse_reused_name(*store, name, g->rank);
    make_backend_bounded(g, store);
    startup_barrier(fn, *world, name, timeout);
#if !CT_TORCH_AT_LEAST(2, 0)
    g->impl->setSequenceNumberForGroup();
#endif
    decide_checks(*g);
  });
  auto out = std::make_unique<ct_process_group>();
  out->g = g;
  return out;
}

std::unique_ptr<ct_process_group> make_subgroup(const char *fn, const Group &parent,
                                                const std::vector<int> &ranks, ms timeout) {
  std::shared_ptr<World> world = parent.world;
  std::lock_guard<std::mutex> lk(world->mu);
  std::string name = std::to_string(world->group_count++);
  auto it = std::find(ranks.begin(), ranks.end(), world->rank);
  std::shared_ptr<Group> g;
  run_guarded(parent, fn, "make a subgroup", [&] {
    if (it != ranks.end()) {
      g = std::make_shared<Group>();
      g->world = world;
      g->rank = static_cast<int>(it - ranks.begin());
      g->size = static_cast<int>(ranks.size());
      g->backend = parent.backend;
      g->timeout = timeout;
      g->world_ranks = ranks;
      make_backend_bounded(g, group_store(*world, name));
    }
    startup_barrier(fn, *world, name, timeout);
#if !CT_TORCH_AT_LEAST(2, 0)
    if (g) g->impl->setSequenceNumberForGroup();
#endif
    if (g) decide_checks(*g);
  });
  if (!g) return nullptr;
  auto out = std::make_unique<ct_process_group>();
  out->g = g;
  return out;
}

void check_process(const char *fn, const Group &g) {
  if (g.pid != static_cast<int>(getpid()))
    ct::raise(CT_ERR_INVALID_ARGUMENT,
              "this process group was made in process %d, and this is %d (a fork): its "
              "connections and threads are not here; make a group in this process",
              g.pid, static_cast<int>(getpid()));
}

void check_store_process(const ct_store &s) {
  if (s.pid != static_cast<int>(getpid()))
    ct::raise(CT_ERR_INVALID_ARGUMENT,
              "this store was made in process %d, and this is %d (a fork): its connection is "
              "the parent's; make a store in this process",
              s.pid, static_cast<int>(getpid()));
}

void check_tensor(const char *fn, const Group &g, const char *what, const at::Tensor &t) {
  if (!t.defined()) ct::raise(CT_ERR_INVALID_ARGUMENT, "%s is an undefined tensor", what);
  if (t.layout() != c10::kStrided)
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s must be a dense (strided) tensor", what);
  if (!t.is_contiguous())
    ct::raise(CT_ERR_INVALID_ARGUMENT,
              "%s must be contiguous (collectives write in place; use ct_contiguous and copy "
              "back)",
              what);
  if (g.backend == "nccl" && !t.device().is_cuda())
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s is on %s, but backend nccl takes CUDA tensors", what,
              t.device().str().c_str());
  if (g.backend == "gloo" && !t.device().is_cpu())
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s is on %s, but backend gloo here takes CPU tensors", what,
              t.device().str().c_str());
  // Dtypes Gloo has no kernels for: refused here, at once, instead of an
  // error from inside Gloo after the peers were waited for.
  const c10::ScalarType st = t.scalar_type();
  bool gloo_lacks = c10::isComplexType(st);
#if !CT_TORCH_AT_LEAST(2, 0)
  gloo_lacks = gloo_lacks || st == c10::kBool || st == c10::kBFloat16;
#endif
  if (g.backend == "gloo" && gloo_lacks)
    ct::raise(CT_ERR_NOT_SUPPORTED, "%s has dtype %s, which backend gloo cannot send (convert it "
              "first: complex as a real view, bool as uint8)", what, c10::toString(st));
}

void run_guarded(const Group &g, const char *fn, const char *op, const std::function<void()> &body,
                 int64_t seq) {
  try {
    body();
  } catch (const ct::Error &) {
    throw;
  } catch (...) {
    std::string msg = first_lines(current_message());
    ct_status code = classify(msg);
    std::string who = g.impl ? who_failed(g, seq) : missing_ranks(g);
    ct::raise(code, "%s failed on rank %d of %d (%s): %s%s", op, g.rank, g.size, g.backend.c_str(),
              msg.c_str(), who.c_str());
  }
}

void run_store(const char *fn, const char *op, const char *key, const std::function<void()> &body) {
  try {
    body();
  } catch (const ct::Error &) {
    throw;
  } catch (...) {
    std::string msg = first_lines(current_message());
    ct::raise(classify(msg), "could not %s '%.200s': %s", op, key, msg.c_str());
  }
}

ct_status work_wait(const char *fn, ct_work *w, ms timeout, bool poll) {
  if (!w->done.load() && !w->is_check) {  // a checked one: its check first (dist_work.cpp)
    auto t0 = std::chrono::steady_clock::now();
    ct_status st = adopt(fn, *w, timeout, poll);
    if (st != CT_OK) return st;
    if (poll)
      timeout = std::max(ms(1), timeout - std::chrono::duration_cast<ms>(
                                              std::chrono::steady_clock::now() - t0));
  }
  if (!w->done.load()) {
    bool completed = false;
    std::string msg;
    // The group's timeout: its diagnosis (who_failed, three heartbeats) is
    // sampled before the deadline, so that the error comes at the deadline.
    Diagnosis diag;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    c10::intrusive_ptr<c10::ivalue::Future> fut;
    if (!poll && timeout > kDiagnosisLead && w->group->store) fut = future_of(*w->w);
    if (fut) {
      if (!wait_until(*fut, *w->w, deadline - kDiagnosisLead)) {
        diag = diagnose_begin(*w->group);
        if (!wait_until(*fut, *w->w, deadline)) {
          try {
            w->w->wait(ms(1));  // not completed: c10d's own timeout error
            msg = "Operation timed out!";
          } catch (...) {
            msg = first_lines(current_message());
          }
          if (!w->w->isCompleted())
            return ct::set_error(
                CT_ERR_TIMEOUT, "%s: %s on rank %d of %d (%s) did not finish within %.1f s: %s%s",
                fn, w->op.c_str(), w->group->rank, w->group->size, w->group->backend.c_str(),
                timeout.count() / 1000.0, msg.c_str(),
                diagnose_end(*w->group, diag, w->seq).c_str());
          msg.clear();
        }
      }
      timeout = w->group->timeout;  // it has completed: this wait returns at once
    }
    auto who = [&] {
      return diag.taken ? diagnose_end(*w->group, diag, w->seq) : who_failed(*w->group, w->seq);
    };
    if (poll) {
      // A Gloo wait that times out ends the operation and closes the pairs;
      // a caller's shorter wait must leave the work going, so poll until it
      // is done and only then collect it.
      auto deadline = std::chrono::steady_clock::now() + timeout;
      for (int i = 0; !w->w->isCompleted(); i++) {
        if (std::chrono::steady_clock::now() > deadline)
          return ct::set_error(CT_ERR_TIMEOUT,
                               "%s: %s on rank %d of %d (%s) did not finish within %.1f s; it "
                               "goes on (wait again)",
                               fn, w->op.c_str(), w->group->rank, w->group->size,
                               w->group->backend.c_str(), timeout.count() / 1000.0);
        if (i < 200)
          std::this_thread::yield();
        else
          std::this_thread::sleep_for(std::chrono::microseconds(i < 1000 ? 50 : 1000));
      }
      timeout = w->group->timeout;
    }
    try {
      w->w->wait(timeout);
      completed = true;
    } catch (...) {
      msg = first_lines(current_message());
      completed = w->w->isCompleted();
      if (!completed) {  // this wait ran out (the group's timeout): say who is missing
        return ct::set_error(
            CT_ERR_TIMEOUT, "%s: %s on rank %d of %d (%s) did not finish within %.1f s: %s%s", fn,
            w->op.c_str(), w->group->rank, w->group->size, w->group->backend.c_str(),
            timeout.count() / 1000.0, msg.c_str(), who().c_str());
      }
    }
    std::lock_guard<std::mutex> lk(w->mu);
    if (!w->done.load()) {
      if (msg.empty() && w->finish) {
        try {
          w->finish();
        } catch (...) {
          msg = first_lines(current_message());
        }
      }
      if (!msg.empty()) {
        w->code = classify(msg);
        w->msg = std::string(w->op) + " failed on rank " + std::to_string(w->group->rank) + " of " +
                 std::to_string(w->group->size) + " (" + w->group->backend + "): " + msg + who();
      }
      w->done.store(true);
    }
  }
  if (w->code != CT_OK) return ct::set_error(w->code, "%s: %s", fn, w->msg.c_str());
  return CT_OK;
}

}  // namespace dist
}  // namespace ct

