// A checked send or recv (issue 40): Gloo ends the receiving process (an
// exception on its transport thread) when a message's size differs from the
// buffer its recv posted. So on a group whose ranks are all ctorch's Gloo
// ranks (Group::check_peers), a send first sends a descriptor (dtype,
// elements) to its peer on a tag of the check's own, the recv compares it
// with its own tensor and answers on another such tag, and the data goes
// only when both agree; else both ranks get CT_ERR_INVALID_ARGUMENT naming
// both sides. A recv from any source takes the descriptor from any rank and
// then the data from that rank. The descriptors are issued in call order;
// each send or recv then waits for its answer on the caller's thread (a
// blocking call) or on a thread of its own (ct_work), and the data
// operations of one peer and tag are started in call order, as Gloo matches
// them.
#include "distributed.h"

#include <map>
#include <thread>
#include <tuple>

namespace ct {
namespace dist {

struct P2pChannels {
  std::mutex mu;
  std::condition_variable cv;
  // (is_send, peer or -1, tag) -> tickets handed out, data operations started
  std::map<std::tuple<int, int, int>, std::pair<int64_t, int64_t>> order;
};

namespace {

// The check's tags: the user's tag with one bit flipped (a program that
// also uses the tags tag ^ 2^30 or tag ^ 2^29 on the same pair of ranks
// would mix with them).
int desc_tag(int tag) { return tag ^ 0x40000000; }
int answer_tag(int tag) { return tag ^ 0x20000000; }
constexpr int64_t kDescMagic = 0x6374703270ll, kAnswerMagic = 0x6374703271ll;

std::string what(int64_t dtype, int64_t numel) {
  std::string s = dtype >= 0 && dtype < static_cast<int64_t>(c10::ScalarType::NumOptions)
                      ? c10::toString(static_cast<c10::ScalarType>(dtype))
                      : "?";
  return s + " with " + std::to_string(numel) + (numel == 1 ? " element" : " elements");
}

at::Tensor desc(int64_t magic, const at::Tensor &t, int64_t verdict) {
  int64_t v[4] = {magic, static_cast<int64_t>(t.scalar_type()), t.numel(), verdict};
  return at::from_blob(v, {4}, at::TensorOptions().dtype(at::kLong)).clone();
}

// Waits for a small work of the check (the group's timeout); throws its error.
void wait_small(const std::shared_ptr<Group> &g, const char *op,
                const c10::intrusive_ptr<c10d::Work> &w) {
  ct_work tmp;
  tmp.w = w;
  tmp.group = g;
  tmp.op = op;
  tmp.is_check = true;
  if (work_wait(op, &tmp, g->timeout, false) != CT_OK) {
    std::string m = ct_last_error(), head = std::string(op) + ": ";
    if (m.compare(0, head.size(), head) == 0) m.erase(0, head.size());
    throw ct::Error(tmp.done.load() ? tmp.code : CT_ERR_TIMEOUT, m);
  }
}

struct Op {
  std::shared_ptr<Group> g;
  std::shared_ptr<Job> job;
  bool is_send = false;
  at::Tensor t;
  int peer = -1, tag = 0;
  int64_t ticket = 0;
  at::Tensor mine, theirs;  // the descriptors
  c10::intrusive_ptr<c10d::Work> first, second;  // send: desc, answer; recv: desc
};

// The rest of a checked send or recv, after its descriptor work was issued.
void finish_op(Op &op) {
  Group &g = *op.g;
  const char *name = op.is_send ? "send" : "recv";
  ct_status code = CT_OK;
  std::string msg;
  int peer = op.peer;
  bool agree = false;
  c10::intrusive_ptr<c10d::Work> answer;
  try {
    wait_small(op.g, name, op.first);
    if (op.is_send) {
      wait_small(op.g, name, op.second);
    } else if (peer < 0) {
      peer = op.first->sourceRank();
      op.job->source = peer;
    }
    const int64_t *d = op.theirs.data_ptr<int64_t>();
    int64_t want = op.is_send ? kAnswerMagic : kDescMagic;
    agree = d[0] == want && d[1] == static_cast<int64_t>(op.t.scalar_type()) &&
            d[2] == op.t.numel();
    if (op.is_send) agree = agree && d[3] == 1;
    if (!op.is_send) {  // answer the sender either way
      at::Tensor reply = desc(kAnswerMagic, op.t, agree ? 1 : 0);
      std::vector<at::Tensor> ts{reply};
      run_guarded(g, name, name,
                  [&] { answer = g.backend_impl()->send(ts, peer, answer_tag(op.tag)); });
    }
    if (!agree) {
      code = CT_ERR_INVALID_ARGUMENT;
      std::string theirs = d[0] == want ? what(d[1], d[2]) : "an unknown message";
      std::string ours = what(static_cast<int64_t>(op.t.scalar_type()), op.t.numel());
      std::string who = "rank " + std::to_string(peer);
      msg = std::string(name) + " on rank " + std::to_string(g.rank) + " of " +
            std::to_string(g.size) + " (" + g.backend + ") with tag " + std::to_string(op.tag) +
            ": " +
            (op.is_send ? who + "'s recv takes " + theirs + ", and this send has " + ours
                        : who + " sent " + theirs + ", and this recv takes " + ours) +
            " (a send and its recv must have the same dtype and number of elements; nothing "
            "was sent)";
    }
  } catch (const ct::Error &e) {
    code = e.code;
    msg = e.msg;
  }
  // The data operations of this peer and tag start in call order.
  P2pChannels &ch = *g.p2p;
  auto key = std::make_tuple(op.is_send ? 1 : 0, op.peer, op.tag);
  std::unique_lock<std::mutex> lk(ch.mu);
  ch.cv.wait(lk, [&] { return ch.order[key].second == op.ticket; });
  Started s;
  if (code == CT_OK) {
    try {
      std::vector<at::Tensor> ts{op.t};
      run_guarded(g, name, name, [&] {
        s.w = op.is_send ? g.backend_impl()->send(ts, peer, op.tag)
                         : g.backend_impl()->recv(ts, peer, op.tag);
      });
    } catch (const ct::Error &e) {
      code = e.code;
      msg = e.msg;
    }
  }
  ch.order[key].second++;
  ch.cv.notify_all();
  lk.unlock();
  if (answer) {  // the answer is small: it is out by now, or the peer is gone
    try {
      wait_small(op.g, name, answer);
    } catch (const ct::Error &) {
    }
  }
  op.job->finish(code, msg, std::move(s));
}

}  // namespace

void p2p_submit(const char *fn, const std::shared_ptr<Group> &g, ct_work &w, bool is_send,
                const at::Tensor &t, int peer, int tag, bool blocking) {
  auto op = std::make_shared<Op>();
  op->g = g;
  op->job = std::make_shared<Job>();
  op->job->op = w.op;
  op->is_send = is_send;
  op->t = t;
  op->peer = peer;
  op->tag = tag;
  op->theirs = at::empty({4}, at::TensorOptions().dtype(at::kLong));
  {
    std::lock_guard<std::mutex> lk(g->issue_mu);
    if (!g->p2p) g->p2p = std::make_shared<P2pChannels>();
  }
  {
    // Tickets and the descriptor works in call order (one lock: two threads
    // sending to one peer with one tag get the same order for both).
    std::lock_guard<std::mutex> lk(g->p2p->mu);
    run_guarded(*g, fn, w.op.c_str(), [&] {
        if (is_send) {
          op->mine = desc(kDescMagic, t, 0);
          std::vector<at::Tensor> out{op->mine}, in{op->theirs};
          op->first = g->backend_impl()->send(out, peer, desc_tag(tag));
          op->second = g->backend_impl()->recv(in, peer, answer_tag(tag));
        } else {
          std::vector<at::Tensor> in{op->theirs};
          op->first = peer < 0 ? g->backend_impl()->recvAnysource(in, desc_tag(tag))
                               : g->backend_impl()->recv(in, peer, desc_tag(tag));
        }
    });
    op->ticket = g->p2p->order[std::make_tuple(is_send ? 1 : 0, peer, tag)].first++;
  }
  w.job = op->job;
  if (blocking) {
    finish_op(*op);
    return;
  }
  std::thread([op]() mutable {
    finish_op(*op);
    op.reset();  // may drop the group last
  }).detach();
}

}  // namespace dist
}  // namespace ct

