// Who is there, for error messages that name a rank: each ctorch rank's card
// ("<host> <pid>"), heartbeat (a counter a thread bumps in the group's store)
// and progress (how many collectives it has called), read after a failure to
// name peers whose process exited, that stopped responding, or that are alive
// but have not called the collective; and Gloo's rendezvous keys to name
// ranks that never joined.
#include "distributed.h"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <unistd.h>

namespace ct {
namespace dist {

namespace {

const ms kBeatPeriod(500);

std::string host_name() {
  char h[256] = {0};
  gethostname(h, sizeof h - 1);
  return h;
}

std::string card_key(int rank) { return "ctorch/rank/" + std::to_string(rank); }
std::string beat_key(int rank) { return "ctorch/beat/" + std::to_string(rank); }
std::string calls_key(int rank) { return "ctorch/calls/" + std::to_string(rank); }

std::string ranks_text(const std::vector<int> &rs) {
  std::string t;
  for (int r : rs) t += (t.empty() ? "" : ", ") + std::to_string(r);
  return t;
}

// Exited: no such process, or a zombie its parent has not reaped yet.
bool process_gone(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::FILE *f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return false;
  char state = 0;
  int n = std::fscanf(f, "%*d (%*[^)]) %c", &state);
  std::fclose(f);
  return n == 1 && (state == 'Z' || state == 'X');
}

// The heartbeats' shared state: the thread exits when stop is set.
struct BeatState {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false, exited = false;
  pid_t pid = getpid();  // the process whose thread beats
};

// Live heartbeats, stopped at exit (their threads must not outlive LibTorch's
// statics); never freed.
std::mutex g_beats_mu;
std::vector<std::weak_ptr<BeatState>> &g_beats = *new std::vector<std::weak_ptr<BeatState>>();

// Sets stop and waits up to `wait` for the thread to say it exited.
bool stop_beat(BeatState &st, ms wait) {
  std::unique_lock<std::mutex> lk(st.mu);
  st.stop = true;
  st.cv.notify_all();
  return st.cv.wait_for(lk, wait, [&] { return st.exited; });
}

// At exit. In a fork() child the beats' threads are not there: nothing to
// stop, and their mutexes may have been held when the parent forked (locking
// them would never return; waiting for an exit that never comes took 200 ms
// per group).
void stop_all_beats() {
  std::lock_guard<std::mutex> lk(g_beats_mu);
  for (auto &w : g_beats)
    if (auto st = w.lock())
      if (st->pid == getpid()) stop_beat(*st, ms(200));
}

}  // namespace

struct Heartbeat {
  std::shared_ptr<BeatState> st = std::make_shared<BeatState>();
  std::thread th;
  pid_t pid = getpid();
  ~Heartbeat() {
    // In a forked child the thread does not exist: nothing to stop. A beat
    // stuck in a store call (its master unreachable) is left to end by the
    // store's timeout; it owns what it uses.
    if (pid == getpid() && stop_beat(*st, ms(2000)))
      th.join();
    else
      th.detach();
  }
};

void leave_card(c10d::Store &store, int rank) {
  std::string card = host_name() + " " + std::to_string(getpid());
  store.set(card_key(rank), std::vector<uint8_t>(card.begin(), card.end()));
}

std::shared_ptr<Heartbeat> start_heartbeat(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                           std::shared_ptr<const Progress> progress) {
  static const bool at_exit = std::atexit(stop_all_beats) == 0;
  (void)at_exit;
  auto hb = std::make_shared<Heartbeat>();
  std::shared_ptr<BeatState> st = hb->st;
  std::string key = beat_key(rank), calls = calls_key(rank);
  hb->th = std::thread([st, store, key, calls, progress] {
    int64_t published = -1;
    std::unique_lock<std::mutex> lk(st->mu);
    while (!st->stop) {
      lk.unlock();
      try {
        int64_t n = progress->calls.load();
        if (n != published) {  // "<calls> <last op>"
          std::string v = std::to_string(n) + " " + progress->op.load();
          store->set(calls, std::vector<uint8_t>(v.begin(), v.end()));
          published = n;
        }
        store->add(key, 1);
      } catch (...) {  // the store is gone: nothing to report to
      }
      lk.lock();
      st->cv.wait_for(lk, kBeatPeriod, [&] { return st->stop; });
    }
    st->exited = true;
    st->cv.notify_all();
  });
  std::lock_guard<std::mutex> lk(g_beats_mu);
  g_beats.erase(std::remove_if(g_beats.begin(), g_beats.end(),
                               [](const std::weak_ptr<BeatState> &w) { return w.expired(); }),
                g_beats.end());
  g_beats.push_back(st);
  return hb;
}

Diagnosis diagnose_begin(const Group &g) {
  Diagnosis d;
  d.at = std::chrono::steady_clock::now();
  if (!g.store) return d;
  d.taken = true;
  d.before.assign(g.size, -1);
  d.pids.assign(g.size, 0);
  try {
    std::string here = host_name();
    for (int r = 0; r < g.size; r++) {
      if (r == g.rank || !g.store->check({card_key(r)})) continue;  // not a ctorch rank
      auto v = g.store->get(card_key(r));
      std::string card(v.begin(), v.end());
      size_t sp = card.rfind(' ');
      if (sp != std::string::npos && card.substr(0, sp) == here) {
        d.pids[r] = static_cast<pid_t>(std::atol(card.c_str() + sp + 1));
        if (d.pids[r] > 0 && process_gone(d.pids[r])) {
          d.gone.push_back(r);
          continue;
        }
      }
      if (g.store->check({beat_key(r)})) d.before[r] = g.store->add(beat_key(r), 0);
    }
  } catch (...) {
    d.unreachable = true;
  }
  return d;
}

std::string diagnose_end(const Group &g, const Diagnosis &d, int64_t seq) {
  if (!d.taken) return "";
  const char *unreachable =
      "; the store is unreachable (it lives in the process of rank 0 of the default "
      "group, which may be gone)";
  if (d.unreachable) return unreachable;
  std::vector<int> gone = d.gone, stale;
  std::string behind;  // "; rank 2 has not called ..." per live rank that has not
  try {
    bool any = false;
    for (int64_t b : d.before) any = any || b >= 0;
    if (any) {
      // Three beats after the sample (taken before the deadline by a wait).
      std::this_thread::sleep_until(d.at + kBeatPeriod * 3);
      for (int r = 0; r < g.size; r++) {
        if (d.before[r] < 0) continue;
        if (d.pids[r] > 0 && process_gone(d.pids[r])) {
          gone.push_back(r);
          continue;
        }
        if (g.store->add(beat_key(r), 0) == d.before[r]) stale.push_back(r);
      }
      std::sort(gone.begin(), gone.end());
      // Alive (beating) but not yet at collective `seq`: its program is
      // elsewhere. Its progress is at most one beat old by now.
      for (int r = 0; r < g.size && seq > 0; r++) {
        if (d.before[r] < 0 || std::find(stale.begin(), stale.end(), r) != stale.end() ||
            std::find(gone.begin(), gone.end(), r) != gone.end())
          continue;
        int64_t n = 0;
        std::string last = "none";
        if (g.store->check({calls_key(r)})) {
          auto v = g.store->get(calls_key(r));
          std::string text(v.begin(), v.end());
          size_t sp = text.find(' ');
          n = std::atoll(text.c_str());
          if (sp != std::string::npos) last = text.substr(sp + 1);
        }
        if (n < seq)
          behind += "; rank " + std::to_string(r) + " has not called this collective (number " +
                    std::to_string(seq) + " on this group; its last was number " +
                    std::to_string(n) + (n > 0 ? ", " + last : std::string()) +
                    ") though its heartbeat goes on: its program is blocked or busy elsewhere";
      }
    }
  } catch (...) {
    return unreachable;
  }
  std::string out;
  if (!gone.empty())
    out += std::string("; the process of rank") + (gone.size() > 1 ? "s " : " ") +
           ranks_text(gone) + (gone.size() > 1 ? " have" : " has") + " exited";
  if (!stale.empty())
    out += std::string("; rank") + (stale.size() > 1 ? "s " : " ") + ranks_text(stale) +
           (stale.size() > 1 ? " have" : " has") +
           " stopped responding (no heartbeat for 1.5 s: stopped, hung, or its host is "
           "unreachable)";
  return out + behind;
}

std::string who_failed(const Group &g, int64_t seq) {
  return diagnose_end(g, diagnose_begin(g), seq);
}

std::string missing_ranks(const Group &g) {
  if (!g.backend_store) return "";
  std::vector<int> missing;
  try {
    for (int r = 0; r < g.size; r++)
      if (!g.backend_store->check({"0/" + std::to_string(r)})) missing.push_back(r);
  } catch (...) {
    return "";
  }
  if (missing.empty() || static_cast<int>(missing.size()) == g.size) return "";
  return std::string("; rank") + (missing.size() > 1 ? "s " : " ") + ranks_text(missing) +
         " never joined";
}

}  // namespace dist
}  // namespace ct

