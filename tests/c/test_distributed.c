/* Distributed: stores, process groups, every collective (blocking and
 * async), subgroups, torchrun's environment, peers that die or never come,
 * bad input, and data parallel (ct_ddp) against one process on the full
 * batch. Each test starts its ranks as processes of this program
 * ("--rank R --world N --port P --case NAME") on loopback; a rank exits 0
 * when its checks pass. The parent never loads LibTorch state of its own
 * before spawning. The mixed-language group (PyTorch's Python, C, Python
 * ctypes, Julia) is tests/distributed/mixed_group.py. */
#define _GNU_SOURCE
#include "test_util.h"

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;
static const char *g_self;

/* ---- the parent: spawn ranks, wait with a deadline ---------------------- */

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &len);
  close(fd);
  return ntohs(a.sin_port);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Runs `world` ranks of case `name` (only the first `started` of them) and
 * returns how long they took; every rank must exit 0 within deadline_s. */
static double run_ranks_ex(const char *name, int world, int started, double deadline_s,
                           int stopped_rank);
static double run_ranks(const char *name, int world, int started, double deadline_s) {
  return run_ranks_ex(name, world, started, deadline_s, -1);
}

/* As run_ranks; stopped_rank (>= 0) stops itself and is killed once the
 * others have finished, its status ignored. */
static double run_ranks_ex(const char *name, int world, int started, double deadline_s,
                           int stopped_rank) {
  pid_t pids[8];
  char rank_s[8], world_s[8], port_s[8];
  snprintf(world_s, sizeof world_s, "%d", world);
  snprintf(port_s, sizeof port_s, "%d", free_port());
  double t0 = now_s();
  for (int r = 0; r < started; r++) {
    snprintf(rank_s, sizeof rank_s, "%d", r);
    char *argv[] = {(char *)g_self, "--rank", rank_s,   "--world",    world_s,
                    "--port",       port_s,   "--case", (char *)name, NULL};
    assert_int_equal(posix_spawn(&pids[r], g_self, NULL, NULL, argv, environ), 0);
  }
  int failed = 0;
  for (int r = 0; r < started; r++) {
    int status = 0;
    if (r == stopped_rank) continue;
    for (;;) {
      pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got == pids[r]) break;
      if (now_s() - t0 > deadline_s) {
        for (int k = 0; k < started; k++) kill(pids[k], SIGKILL);
        waitpid(pids[r], &status, 0);
        fail_msg("case %s: rank %d still running after %.0f s (a hang)", name, r, deadline_s);
      }
      usleep(20000);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      print_error("case %s: rank %d ended with status 0x%x\n", name, r, status);
      failed = 1;
    }
  }
  if (stopped_rank >= 0) {
    int status = 0;
    kill(pids[stopped_rank], SIGKILL);
    waitpid(pids[stopped_rank], &status, 0);
  }
  if (failed) fail_msg("case %s: a rank failed (its message is above)", name);
  return now_s() - t0;
}

/* ---- the ranks ------------------------------------------------------------ */

static int g_rank, g_world, g_port;

#define R_CHECK(cond, ...)                                           \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "rank %d: check failed: %s: ", g_rank, #cond); \
      fprintf(stderr, __VA_ARGS__);                                  \
      fprintf(stderr, " [%s]\n", ct_last_error());                   \
      exit(1);                                                       \
    }                                                                \
  } while (0)
#define RK_OK(call) R_CHECK((call) == CT_OK, "%s", #call)
#define R_ERR(call, code, needle)                                                       \
  do {                                                                                  \
    ct_status st_ = (call);                                                             \
    R_CHECK(st_ == (code) && strstr(ct_last_error(), needle) != NULL,                   \
            "%s gave %d, expected %d with '%s'", #call, (int)st_, (int)(code), needle); \
  } while (0)

static ct_tensor *full_f32(int64_t n, float v) {
  ct_tensor *t = NULL;
  int64_t sz[1] = {n};
  RK_OK(ct_tensor_full(&t, sz, 1, (double)v, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  return t;
}
static float *fp(ct_tensor *t) { return (float *)ct_tensor_data_ptr(t); }

static ct_tensor *op2(const char *name, const char *overload, ct_tensor *a, ct_tensor *b);

/* The master's address: loopback, or CTORCH_TEST_MASTER_ADDR (two_hosts.sh). */
static const char *master_addr(void) {
  const char *a = getenv("CTORCH_TEST_MASTER_ADDR");
  return (a && *a) ? a : "127.0.0.1";
}

/* The last store tcp_group made (the group keeps its own reference too). */
static ct_store *g_test_store;

static ct_process_group *tcp_group(double timeout_s) {
  ct_store *s = NULL;
  RK_OK(ct_store_new_tcp(&s, master_addr(), g_port, g_rank == 0, g_world, timeout_s));
  ct_process_group *pg = NULL;
  RK_OK(ct_process_group_new(&pg, s, "gloo", g_rank, g_world, timeout_s));
  ct_store_free(g_test_store);
  g_test_store = s;
  R_CHECK(ct_process_group_rank(pg) == g_rank && ct_process_group_size(pg) == g_world, "rank");
  return pg;
}

static void case_collectives(void) {
  ct_process_group *pg = tcp_group(20);
  int n = g_world, r = g_rank;
  /* all_reduce: rank r holds (r + 1) * (i + 1) */
  int ops[] = {CT_REDUCE_SUM, CT_REDUCE_AVG, CT_REDUCE_PRODUCT, CT_REDUCE_MIN, CT_REDUCE_MAX};
  for (int k = 0; k < 5; k++) {
    ct_tensor *t = full_f32(5, 0);
    for (int i = 0; i < 5; i++) fp(t)[i] = (float)((r + 1) * (i + 1));
    void *before = ct_tensor_data_ptr(t);
    RK_OK(ct_process_group_all_reduce(NULL, pg, t, ops[k]));
    R_CHECK(ct_tensor_data_ptr(t) == before, "in place");
    for (int i = 0; i < 5; i++) {
      double sum = 0, prod = 1;
      for (int q = 0; q < n; q++) sum += (q + 1) * (i + 1), prod *= (q + 1) * (i + 1);
      double want[] = {sum, sum / n, prod, (i + 1), (double)n * (i + 1)};
      R_CHECK(fabs(fp(t)[i] - want[k]) < 1e-4 * fabs(want[k]), "op %d elem %d: %g vs %g", ops[k], i,
              fp(t)[i], want[k]);
    }
    ct_tensor_free(t);
  }
  /* bitwise on int64 */
  {
    int64_t v = 1LL << r, sz[1] = {1};
    ct_tensor *t = NULL;
    RK_OK(ct_tensor_from_data(&t, &v, sz, 1, CT_INT64, CT_DEVICE_CPU, -1));
    RK_OK(ct_process_group_all_reduce(NULL, pg, t, CT_REDUCE_BOR));
    R_CHECK(*(int64_t *)ct_tensor_data_ptr(t) == (1LL << n) - 1, "bor");
    ct_tensor_free(t);
  }
  /* broadcast from the last rank */
  ct_tensor *b = full_f32(3, (float)r);
  RK_OK(ct_process_group_broadcast(NULL, pg, b, n - 1));
  R_CHECK(fp(b)[0] == n - 1 && fp(b)[2] == n - 1, "broadcast");
  ct_tensor_free(b);
  /* all_gather */
  ct_tensor *in = full_f32(2, (float)(10 * r + 1)), *outs[8];
  for (int q = 0; q < n; q++) outs[q] = full_f32(2, -1);
  RK_OK(ct_process_group_all_gather(NULL, pg, outs, in));
  for (int q = 0; q < n; q++) R_CHECK(fp(outs[q])[1] == 10 * q + 1, "all_gather %d", q);
  /* all_gather of 0-element tensors (issue 40 item 6: Gloo's SIGFPE killed every rank) */
  {
    ct_tensor *e_in = full_f32(0, 0), *e_outs[8];
    for (int q = 0; q < n; q++) e_outs[q] = full_f32(0, 0);
    RK_OK(ct_process_group_all_gather(NULL, pg, e_outs, e_in));
    for (int q = 0; q < n; q++) {
      R_CHECK(ct_tensor_numel(e_outs[q]) == 0, "empty all_gather output %d", q);
      ct_tensor_free(e_outs[q]);
    }
    ct_tensor_free(e_in);
  }
  /* all_to_all: rank r sends 100 r + q to rank q */
  ct_tensor *ins[8];
  for (int q = 0; q < n; q++) {
    ins[q] = full_f32(2, (float)(100 * r + q));
    fp(outs[q])[0] = -1;
  }
  RK_OK(ct_process_group_all_to_all(NULL, pg, outs, (const ct_tensor *const *)ins));
  for (int q = 0; q < n; q++) R_CHECK(fp(outs[q])[0] == 100 * q + r, "all_to_all from %d", q);
  /* reduce_scatter: inputs[q] = r + q everywhere; output = sum_r (r + this) */
  for (int q = 0; q < n; q++) fp(ins[q])[0] = fp(ins[q])[1] = (float)(r + q);
  ct_tensor *rs = full_f32(2, -1);
  RK_OK(ct_process_group_reduce_scatter(NULL, pg, rs, (const ct_tensor *const *)ins, CT_REDUCE_SUM));
  R_CHECK(fp(rs)[0] == n * (n - 1) / 2 + n * r, "reduce_scatter sum %g", fp(rs)[0]);
  RK_OK(ct_process_group_reduce_scatter(NULL, pg, rs, (const ct_tensor *const *)ins, CT_REDUCE_MAX));
  R_CHECK(fp(rs)[1] == (n - 1) + r, "reduce_scatter max %g", fp(rs)[1]);
  /* async: start, then wait; the result appears only after the wait */
  ct_tensor *a = full_f32(1000, 1);
  ct_work *w = NULL;
  RK_OK(ct_process_group_all_reduce(&w, pg, a, CT_REDUCE_AVG));
  R_CHECK(w != NULL, "work");
  RK_OK(ct_work_wait(w, 0));
  R_CHECK(fp(a)[999] == 1.0f, "avg async %g", fp(a)[999]);
  int32_t done = 0;
  RK_OK(ct_work_is_completed(&done, w));
  R_CHECK(done == 1, "completed");
  RK_OK(ct_work_wait(w, 0)); /* again: same result */
  ct_work_free(w);
  RK_OK(ct_process_group_barrier(&w, pg));
  RK_OK(ct_work_wait(w, 5));
  ct_work_free(w);
  /* point to point in a ring, and a receive from any source */
  ct_tensor *s = full_f32(4, (float)r), *rv = full_f32(4, -1);
  ct_work *sw = NULL, *rw = NULL;
  RK_OK(ct_process_group_send(&sw, pg, s, (r + 1) % n, 7));
  RK_OK(ct_process_group_recv(&rw, pg, rv, (r + n - 1) % n, 7));
  RK_OK(ct_work_wait(rw, 0));
  RK_OK(ct_work_wait(sw, 0));
  R_CHECK(fp(rv)[3] == (r + n - 1) % n, "ring recv");
  ct_work_free(sw);
  ct_work_free(rw);
  if (r == 0) {
    RK_OK(ct_process_group_recv(&rw, pg, rv, -1, 9));
    RK_OK(ct_work_wait(rw, 0));
    int32_t src = -1;
    RK_OK(ct_work_source_rank(&src, rw));
    R_CHECK(src == n - 1 && fp(rv)[0] == n - 1, "any source: %d", src);
    ct_work_free(rw);
  } else if (r == n - 1) {
    RK_OK(ct_process_group_send(NULL, pg, s, 0, 9));
  }
  /* a wait shorter than the operation runs out, and the work goes on */
  if (r == 0) {
    ct_tensor *late = full_f32(3, -1);
    RK_OK(ct_process_group_recv(&rw, pg, late, 1, 11));
    R_ERR(ct_work_wait(rw, 0.2), CT_ERR_TIMEOUT, "goes on");
    RK_OK(ct_work_wait(rw, 0));
    R_CHECK(fp(late)[2] == 11, "late recv %g", fp(late)[2]);
    ct_work_free(rw);
    ct_tensor_free(late);
  } else if (r == 1) {
    usleep(600000);
    ct_tensor *late = full_f32(3, 11);
    RK_OK(ct_process_group_send(NULL, pg, late, 0, 11));
    ct_tensor_free(late);
  }
  RK_OK(ct_process_group_barrier(NULL, pg));
  /* a subgroup of the even ranks (every rank takes part in making it) */
  int32_t evens[4];
  size_t ne = 0;
  for (int q = 0; q < n; q += 2) evens[ne++] = q;
  ct_process_group *sub = NULL;
  RK_OK(ct_process_group_new_subgroup(&sub, pg, evens, ne, 0));
  if (r % 2 == 0) {
    R_CHECK(
        sub != NULL && ct_process_group_rank(sub) == r / 2 && ct_process_group_size(sub) == (int)ne,
        "subgroup rank");
    ct_tensor *t = full_f32(2, (float)r);
    RK_OK(ct_process_group_all_reduce(NULL, sub, t, CT_REDUCE_SUM));
    float want = 0;
    for (size_t q = 0; q < ne; q++) want += evens[q];
    R_CHECK(fp(t)[0] == want, "subgroup sum %g", fp(t)[0]);
    ct_tensor_free(t);
  } else {
    R_CHECK(sub == NULL, "not a member");
  }
  ct_process_group_free(sub);
  RK_OK(ct_process_group_barrier(NULL, pg));
  for (int q = 0; q < n; q++) ct_tensor_free(outs[q]), ct_tensor_free(ins[q]);
  ct_tensor_free(in);
  ct_tensor_free(rs);
  ct_tensor_free(a);
  ct_tensor_free(s);
  ct_tensor_free(rv);
  ct_process_group_free(pg);
}

/* A peer's tensor of another size, dtype, kind or root: Gloo ended the
 * process (SIGABRT on its transport thread). Every rank now gets
 * CT_ERR_INVALID_ARGUMENT naming what each rank passed, at once, and the
 * group goes on. */
static void case_mismatch(void) {
  ct_process_group *pg = tcp_group(20);
  int r = g_rank;
  double t0 = now_s();
  ct_tensor *a = full_f32(r == 0 ? 4 : 8, 1);
  R_ERR(ct_process_group_all_reduce(NULL, pg, a, CT_REDUCE_SUM), CT_ERR_INVALID_ARGUMENT,
        "rank 0: all_reduce of Float with 4 elements (sum); rank 1: all_reduce of Float with 8 "
        "elements (sum)");
  R_CHECK(fp(a)[0] == 1, "untouched");
  /* dtypes of different sizes, same number of elements */
  ct_tensor *d = NULL;
  int64_t four[1] = {4};
  RK_OK(ct_tensor_zeros(&d, four, 1, r == 0 ? CT_FLOAT32 : CT_FLOAT64, CT_DEVICE_CPU, -1, 0));
  R_ERR(ct_process_group_all_reduce(NULL, pg, d, CT_REDUCE_SUM), CT_ERR_INVALID_ARGUMENT,
        "rank 1: all_reduce of Double with 4 elements");
  /* all_gather of inputs of different sizes (outputs like each rank's input) */
  ct_tensor *in = full_f32(r == 0 ? 2 : 3, 1), *outs[2] = {full_f32(r == 0 ? 2 : 3, 0),
                                                           full_f32(r == 0 ? 2 : 3, 0)};
  R_ERR(ct_process_group_all_gather(NULL, pg, outs, in), CT_ERR_INVALID_ARGUMENT,
        "rank 1: all_gather of Float with 3 elements");
  /* asynchronous: the error comes from the wait */
  ct_work *w = NULL;
  RK_OK(ct_process_group_broadcast(&w, pg, a, 0));
  R_ERR(ct_work_wait(w, 0), CT_ERR_INVALID_ARGUMENT, "broadcast of Float with 8 elements");
  int32_t done = 0;
  RK_OK(ct_work_is_completed(&done, w));
  R_CHECK(done == 1, "a refused work is completed");
  ct_work_free(w);
  /* different roots; different kinds of collective */
  ct_tensor *same = full_f32(4, (float)r);
  R_ERR(ct_process_group_broadcast(NULL, pg, same, r), CT_ERR_INVALID_ARGUMENT,
        "rank 1: broadcast of Float with 4 elements from root 1");
  if (r == 0)
    R_ERR(ct_process_group_barrier(NULL, pg), CT_ERR_INVALID_ARGUMENT, "rank 1: all_reduce");
  else
    R_ERR(ct_process_group_all_reduce(NULL, pg, same, CT_REDUCE_SUM), CT_ERR_INVALID_ARGUMENT,
          "rank 0: barrier; rank 1: all_reduce");
  R_CHECK(now_s() - t0 < 10, "refused in %.1f s", now_s() - t0);
  /* the group goes on: blocking, and two asynchronous collectives in flight */
  RK_OK(ct_process_group_all_reduce(NULL, pg, same, CT_REDUCE_SUM));
  R_CHECK(fp(same)[0] == 1 && fp(same)[3] == 1, "sum %g", fp(same)[0]);
  ct_work *w1 = NULL, *w2 = NULL;
  ct_tensor *x = full_f32(3, (float)(r + 1));
  RK_OK(ct_process_group_all_reduce(&w1, pg, x, CT_REDUCE_SUM));
  RK_OK(ct_process_group_broadcast(&w2, pg, same, 1));
  ct_work_free(w1); /* freed before it started: it still runs, in order */
  RK_OK(ct_work_wait(w2, 0));
  ct_work_free(w2);
  RK_OK(ct_process_group_barrier(NULL, pg)); /* Gloo's barrier waits for the work before it */
  R_CHECK(fp(x)[0] == 3, "the freed work ran: %g", fp(x)[0]);
  ct_tensor_free(a), ct_tensor_free(d), ct_tensor_free(in), ct_tensor_free(outs[0]),
      ct_tensor_free(outs[1]), ct_tensor_free(same), ct_tensor_free(x);
  ct_process_group_free(pg);
}

/* A send and its recv of another size or dtype: Gloo ended the receiving
 * process (SIGABRT, EnforceNotMet in pair.cc). Now both ranks get
 * CT_ERR_INVALID_ARGUMENT naming both sides, at once, nothing is sent, and
 * the pair goes on (issue 40). */
static void case_p2p_mismatch(void) {
  ct_process_group *pg = tcp_group(20);
  int r = g_rank;
  double t0 = now_s();
  ct_tensor *four = full_f32(4, 5), *eight = full_f32(8, 0);
  if (r == 0)
    R_ERR(ct_process_group_send(NULL, pg, four, 1, 7), CT_ERR_INVALID_ARGUMENT,
          "send on rank 0 of 2 (gloo) with tag 7: rank 1's recv takes Float with 8 elements, "
          "and this send has Float with 4 elements");
  else
    R_ERR(ct_process_group_recv(NULL, pg, eight, 0, 7), CT_ERR_INVALID_ARGUMENT,
          "recv on rank 1 of 2 (gloo) with tag 7: rank 0 sent Float with 4 elements, and this "
          "recv takes Float with 8 elements");
  R_CHECK(fp(eight)[0] == 0, "nothing received");
  /* a larger message than the recv's buffer: Gloo's SIGABRT on the receiver */
  if (r == 0)
    R_ERR(ct_process_group_send(NULL, pg, eight, 1, 8), CT_ERR_INVALID_ARGUMENT,
          "rank 1's recv takes Float with 4 elements, and this send has Float with 8 elements");
  else
    R_ERR(ct_process_group_recv(NULL, pg, four, 0, 8), CT_ERR_INVALID_ARGUMENT,
          "rank 0 sent Float with 8 elements, and this recv takes Float with 4 elements");
  R_CHECK(fp(four)[0] == 5, "nothing received");
  /* the same number of elements, another dtype; asynchronous, from any source */
  ct_tensor *d = NULL;
  int64_t n4[1] = {4};
  RK_OK(ct_tensor_zeros(&d, n4, 1, CT_FLOAT64, CT_DEVICE_CPU, -1, 0));
  ct_work *w = NULL;
  if (r == 0) {
    RK_OK(ct_process_group_send(&w, pg, four, 1, 3));
    R_ERR(ct_work_wait(w, 0), CT_ERR_INVALID_ARGUMENT, "rank 1's recv takes Double with 4 elements");
  } else {
    RK_OK(ct_process_group_recv(&w, pg, d, -1, 3));
    R_ERR(ct_work_wait(w, 0), CT_ERR_INVALID_ARGUMENT,
          "rank 0 sent Float with 4 elements, and this recv takes Double with 4 elements");
  }
  int32_t done = 0;
  RK_OK(ct_work_is_completed(&done, w));
  R_CHECK(done == 1, "a refused work is completed");
  ct_work_free(w);
  R_CHECK(now_s() - t0 < 10, "refused in %.1f s", now_s() - t0);
  /* the pair goes on, on the same tags: blocking, then async from any source */
  ct_tensor *got = full_f32(4, 0);
  if (r == 0) {
    RK_OK(ct_process_group_send(NULL, pg, four, 1, 7));
    RK_OK(ct_process_group_send(&w, pg, four, 1, 3));
    RK_OK(ct_work_wait(w, 0));
  } else {
    RK_OK(ct_process_group_recv(NULL, pg, got, 0, 7));
    R_CHECK(fp(got)[0] == 5 && fp(got)[3] == 5, "received %g", fp(got)[0]);
    fp(got)[0] = 0;
    RK_OK(ct_process_group_recv(&w, pg, got, -1, 3));
    RK_OK(ct_work_wait(w, 0));
    int32_t src = -1;
    RK_OK(ct_work_source_rank(&src, w));
    R_CHECK(src == 0 && fp(got)[0] == 5, "from %d: %g", src, fp(got)[0]);
  }
  ct_work_free(w);
  /* two sends in flight on one tag arrive in order */
  ct_tensor *a = full_f32(2, 1), *b = full_f32(2, 2);
  ct_work *w1 = NULL, *w2 = NULL;
  if (r == 0) {
    RK_OK(ct_process_group_send(&w1, pg, a, 1, 9));
    RK_OK(ct_process_group_send(&w2, pg, b, 1, 9));
  } else {
    RK_OK(ct_process_group_recv(&w1, pg, b, 0, 9));
    RK_OK(ct_process_group_recv(&w2, pg, a, 0, 9));
  }
  RK_OK(ct_work_wait(w2, 0));
  RK_OK(ct_work_wait(w1, 0));
  if (r == 1) R_CHECK(fp(b)[0] == 1 && fp(a)[0] == 2, "in order: %g %g", fp(b)[0], fp(a)[0]);
  ct_work_free(w1), ct_work_free(w2);
  RK_OK(ct_process_group_barrier(NULL, pg));
  ct_tensor_free(four), ct_tensor_free(eight), ct_tensor_free(d), ct_tensor_free(got),
      ct_tensor_free(a), ct_tensor_free(b);
  ct_process_group_free(pg);
}

/* The abuse family for mismatched ranks: random collectives and send/recv
 * pairs where the second rank's dtype, number of elements, reduce op, root
 * or kind of collective differs from the first's in about half the cases
 * (both ranks draw the same sequence from one seed). A matching case must
 * give the right values; a mismatched one CT_ERR_INVALID_ARGUMENT on both
 * ranks, at once, with the group usable for the next case (issue 40).
 * CTORCH_TEST_SWEEP_CASES sets the number of cases (default 400). */
enum {
  SW_ALL_REDUCE,
  SW_BROADCAST,
  SW_ALL_GATHER,
  SW_REDUCE_SCATTER,
  SW_ALL_TO_ALL,
  SW_P2P,
  SW_KINDS
};
typedef struct {
  int kind, dtype, op, root;
  int64_t n;
} sweep_desc;

static uint64_t g_sweep_state;
static int sweep_draw(int bound) {
  g_sweep_state = g_sweep_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (int)((g_sweep_state >> 33) % (uint64_t)bound);
}

static ct_tensor *sweep_full(const sweep_desc *d, double v) {
  ct_tensor *t = NULL;
  int64_t sz[1] = {d->n};
  RK_OK(ct_tensor_full(&t, sz, 1, v, d->dtype, CT_DEVICE_CPU, -1, 0));
  return t;
}

/* Every element of t equals want (t converted to double). */
static int sweep_all_equal(const ct_tensor *t, double want) {
  ct_tensor *d = NULL;
  RK_OK(ct_tensor_to(&d, t, CT_DEVICE_KEEP, -1, CT_FLOAT64, 0, 1));
  const double *p = (const double *)ct_tensor_data_ptr(d);
  int ok = 1;
  for (int64_t i = 0; i < ct_tensor_numel(d); i++) ok = ok && p[i] == want;
  ct_tensor_free(d);
  return ok;
}

static void case_mismatch_sweep(void) {
  static const int dtypes[] = {CT_FLOAT32, CT_FLOAT64, CT_INT32, CT_INT64, CT_UINT8};
  static const char *const kinds[] = {"all_reduce",     "broadcast",  "all_gather",
                                      "reduce_scatter", "all_to_all", "send/recv"};
  ct_process_group *pg = tcp_group(20);
  const int r = g_rank, w = g_world;
  const char *env = getenv("CTORCH_TEST_SWEEP_CASES");
  const int cases = env && atoi(env) > 0 ? atoi(env) : 400;
  g_sweep_state = (uint64_t)g_port; /* the same on every rank, another per run */
  int mismatched = 0;
  double t0 = now_s(), slowest_refusal = 0;
  for (int c = 0; c < cases; c++) {
    sweep_desc base; /* drawn one by one: the order is the same on every rank */
    base.kind = sweep_draw(SW_KINDS);
    base.dtype = dtypes[sweep_draw(5)];
    base.op = sweep_draw(2) ? CT_REDUCE_SUM : CT_REDUCE_MAX;
    base.root = sweep_draw(w);
    base.n = 1 + sweep_draw(6);
    sweep_desc other = base;
    switch (sweep_draw(10)) { /* 0-4: rank 1 passes something else */
      case 0: other.dtype = dtypes[sweep_draw(5)]; break;
      case 1: other.n = sweep_draw(9); break;
      case 2: other.op = sweep_draw(2) ? CT_REDUCE_SUM : CT_REDUCE_MAX; break;
      case 3: other.root = sweep_draw(w); break;
      case 4: /* another collective (a send/recv against a collective would wait: not drawn) */
        if (base.kind != SW_P2P) other.kind = sweep_draw(SW_P2P);
        break;
      default: break;
    }
    const int async = sweep_draw(2);
    /* what differs in fact (an op only matters to the reducing kinds, a root to broadcast) */
    const int reduces = base.kind == SW_ALL_REDUCE || base.kind == SW_REDUCE_SCATTER;
    const int differs = other.kind != base.kind || other.dtype != base.dtype || other.n != base.n ||
                        (reduces && other.op != base.op) ||
                        (base.kind == SW_BROADCAST && other.root != base.root);
    mismatched += differs;
    const sweep_desc *d = r == 1 ? &other : &base;
    const double mine = r + 1;
    ct_tensor *t = sweep_full(d, mine), *list_out[8] = {0}, *list_in[8] = {0};
    for (int k = 0; k < w; k++) list_out[k] = sweep_full(d, 0), list_in[k] = sweep_full(d, mine);
    ct_work *wk = NULL, **wp = async ? &wk : NULL;
    ct_status st = CT_OK;
    double tc = now_s();
    switch (d->kind) {
      case SW_ALL_REDUCE: st = ct_process_group_all_reduce(wp, pg, t, d->op); break;
      case SW_BROADCAST: st = ct_process_group_broadcast(wp, pg, t, d->root); break;
      case SW_ALL_GATHER: st = ct_process_group_all_gather(wp, pg, list_out, t); break;
      case SW_REDUCE_SCATTER:
        st = ct_process_group_reduce_scatter(wp, pg, t, (const ct_tensor *const *)list_in, d->op);
        break;
      case SW_ALL_TO_ALL:
        st = ct_process_group_all_to_all(wp, pg, list_out, (const ct_tensor *const *)list_in);
        break;
      default: /* rank 0 sends to rank 1 on the case's own tag */
        st = r == 0 ? ct_process_group_send(wp, pg, t, 1, 100 + c)
                    : ct_process_group_recv(wp, pg, t, 0, 100 + c);
        break;
    }
    if (st == CT_OK && wk) st = ct_work_wait(wk, 0);
    ct_work_free(wk);
    if (differs) {
      R_CHECK(st == CT_ERR_INVALID_ARGUMENT && strstr(ct_last_error(), "rank") != NULL,
              "case %d (%s, dtype %d, n %lld; rank 1: %s, dtype %d, n %lld, op %d/%d, root %d/%d, "
              "%s): status %d",
              c, kinds[base.kind], base.dtype, (long long)base.n, kinds[other.kind], other.dtype,
              (long long)other.n, base.op, other.op, base.root, other.root,
              async ? "async" : "blocking", (int)st);
      if (now_s() - tc > slowest_refusal) slowest_refusal = now_s() - tc;
    } else {
      R_CHECK(st == CT_OK, "case %d (%s, dtype %d, n %lld, %s): status %d", c, kinds[base.kind],
              base.dtype, (long long)base.n, async ? "async" : "blocking", (int)st);
      int right = 1;
      const double sum = w * (w + 1) / 2.0, max = w;
      switch (d->kind) {
        case SW_ALL_REDUCE: right = sweep_all_equal(t, d->op == CT_REDUCE_SUM ? sum : max); break;
        case SW_BROADCAST: right = sweep_all_equal(t, d->root + 1); break;
        case SW_REDUCE_SCATTER:
          right = sweep_all_equal(t, d->op == CT_REDUCE_SUM ? sum : max);
          break;
        case SW_ALL_GATHER:
        case SW_ALL_TO_ALL:
          for (int k = 0; k < w; k++) right = right && sweep_all_equal(list_out[k], k + 1);
          break;
        default: right = sweep_all_equal(t, r == 1 ? 1 : mine); break;
      }
      R_CHECK(right, "case %d (%s, dtype %d, n %lld): wrong values", c, kinds[base.kind],
              base.dtype, (long long)base.n);
    }
    ct_tensor_free(t);
    for (int k = 0; k < w; k++) ct_tensor_free(list_out[k]), ct_tensor_free(list_in[k]);
  }
  R_CHECK(slowest_refusal < 5, "the slowest refusal took %.1f s", slowest_refusal);
  if (r == 0)
    fprintf(stderr,
            "mismatch_sweep: %d cases (%d mismatched between the ranks, %d matching) in %.1f s, "
            "slowest refusal %.2f s\n",
            cases, mismatched, cases - mismatched, now_s() - t0, slowest_refusal);
  ct_process_group_free(pg);
}

/* An asynchronous collective of a checking group runs while its caller
 * computes: it is done before the caller calls any ct_work_* function (the
 * check's first version started it only at ct_work_wait / is_completed /
 * the next collective, so the compute and the communication did not
 * overlap). Also prints what a small blocking all-reduce costs. */
static void case_overlap(void) {
  ct_process_group *pg = tcp_group(20);
  int r = g_rank;
  ct_tensor *x = full_f32(1000, (float)(r + 1));
  ct_work *w = NULL;
  RK_OK(ct_process_group_all_reduce(&w, pg, x, CT_REDUCE_SUM));
  double t0 = now_s();
  /* "compute" (no ct_work_* call) until the result is there, or 3 s */
  while ((fp(x)[0] != 3 || fp(x)[999] != 3) && now_s() - t0 < 3) usleep(1000);
  R_CHECK(fp(x)[0] == 3 && fp(x)[999] == 3, "reduced while the caller computed: %g after %.1f s",
          fp(x)[999], now_s() - t0);
  usleep(20000);
  RK_OK(ct_work_wait(w, 0));
  ct_work_free(w);
  /* two in flight, then waited in reverse order */
  ct_work *w1 = NULL, *w2 = NULL;
  ct_tensor *y = full_f32(3, 1);
  RK_OK(ct_process_group_all_reduce(&w1, pg, x, CT_REDUCE_SUM));
  RK_OK(ct_process_group_all_reduce(&w2, pg, y, CT_REDUCE_SUM));
  RK_OK(ct_work_wait(w2, 0));
  RK_OK(ct_work_wait(w1, 0));
  R_CHECK(fp(x)[5] == 6 && fp(y)[2] == 2, "%g %g", fp(x)[5], fp(y)[2]);
  ct_work_free(w1), ct_work_free(w2);
  /* the cost of a small blocking all_reduce (run with CTORCH_DIST_CHECK=0 to compare) */
  ct_tensor *s = full_f32(4, 1);
  for (int i = 0; i < 20; i++) RK_OK(ct_process_group_all_reduce(NULL, pg, s, CT_REDUCE_SUM));
  double t1 = now_s();
  for (int i = 0; i < 300; i++) RK_OK(ct_process_group_all_reduce(NULL, pg, s, CT_REDUCE_SUM));
  if (r == 0)
    fprintf(stderr, "blocking all_reduce of 4 floats, 2 ranks: %.1f us each (check %s)\n",
            (now_s() - t1) / 300 * 1e6, getenv("CTORCH_DIST_CHECK") ? getenv("CTORCH_DIST_CHECK") : "on");
  ct_tensor_free(x), ct_tensor_free(y), ct_tensor_free(s);
  ct_process_group_free(pg);
}

static void case_bad_input(void) {
  ct_process_group *pg = tcp_group(10);
  ct_tensor *t = full_f32(4, 1), *list[2] = {t, NULL};
  R_ERR(ct_process_group_all_reduce(NULL, NULL, t, CT_REDUCE_SUM), CT_ERR_INVALID_ARGUMENT, "'pg' is NULL");
  R_ERR(ct_process_group_all_reduce(NULL, pg, NULL, CT_REDUCE_SUM), CT_ERR_INVALID_ARGUMENT, "NULL");
  R_ERR(ct_process_group_all_reduce(NULL, pg, t, 42), CT_ERR_INVALID_ARGUMENT, "unknown reduce op 42");
  R_ERR(ct_process_group_all_reduce(NULL, pg, t, CT_REDUCE_BAND), CT_ERR_INVALID_ARGUMENT, "integer");
  R_ERR(ct_process_group_broadcast(NULL, pg, t, 5), CT_ERR_INVALID_ARGUMENT, "root 5 is outside");
  R_ERR(ct_process_group_all_gather(NULL, pg, list, t), CT_ERR_INVALID_ARGUMENT, "outputs[1] is NULL");
  R_ERR(ct_process_group_send(NULL, pg, t, g_rank, 0), CT_ERR_INVALID_ARGUMENT, "is this rank");
  R_ERR(ct_process_group_recv(NULL, pg, t, -2, 0), CT_ERR_INVALID_ARGUMENT, "outside");
  ct_tensor *other = full_f32(3, 0), *mixed[2] = {t, other};
  R_ERR(ct_process_group_all_gather(NULL, pg, mixed, t), CT_ERR_INVALID_ARGUMENT, "like the others");
  /* a transposed (non-contiguous) tensor */
  ct_tensor *m = NULL, *mt = NULL;
  int64_t sz[2] = {2, 3};
  RK_OK(ct_tensor_zeros(&m, sz, 2, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  mt = op2("aten::t", "", m, NULL);
  R_ERR(ct_process_group_all_reduce(NULL, pg, mt, CT_REDUCE_SUM), CT_ERR_INVALID_ARGUMENT, "contiguous");
  { /* a dtype Gloo cannot send: refused at once, not after the peers' wait (issue 40) */
    ct_tensor *c = NULL;
    int64_t four[1] = {4};
    RK_OK(ct_tensor_zeros(&c, four, 1, CT_COMPLEX64, CT_DEVICE_CPU, -1, 0));
    double t_c = now_s();
    R_ERR(ct_process_group_all_reduce(NULL, pg, c, CT_REDUCE_SUM), CT_ERR_NOT_SUPPORTED,
          "which backend gloo cannot send");
    R_ERR(ct_process_group_broadcast(NULL, pg, c, 0), CT_ERR_NOT_SUPPORTED, "complex");
    R_CHECK(now_s() - t_c < 0.5, "refused in %.2f s", now_s() - t_c);
    ct_tensor_free(c);
  }
  ct_work *w = NULL;
  R_ERR(ct_work_wait(NULL, 0), CT_ERR_INVALID_ARGUMENT, "NULL");
  RK_OK(ct_process_group_barrier(&w, pg));
  int32_t src;
  R_ERR(ct_work_source_rank(&src, w), CT_ERR_INVALID_ARGUMENT, "not a recv from any source");
  RK_OK(ct_work_wait(w, 0));
  ct_work_free(w);
  ct_process_group *bad = NULL;
  ct_store *s = NULL;
  RK_OK(ct_store_new_tcp(&s, "127.0.0.1", g_port, 0, g_world, 5));
  R_ERR(ct_process_group_new(&bad, s, "nccl", g_rank, g_world, 5),
        ct_cuda_is_compiled() ? CT_ERR_NOT_SUPPORTED : CT_ERR_NOT_SUPPORTED, "nccl");
  R_ERR(ct_process_group_new(&bad, s, "mpi", g_rank, g_world, 5), CT_ERR_INVALID_ARGUMENT,
        "unknown backend 'mpi'");
  R_ERR(ct_process_group_new(&bad, s, "gloo", g_world, g_world, 5), CT_ERR_INVALID_ARGUMENT,
        "outside");
  R_ERR(ct_process_group_new(&bad, s, "gloo", 0, 2, 0), CT_ERR_INVALID_ARGUMENT, "timeout");
  R_CHECK(bad == NULL, "no group");
  int32_t dup[2] = {0, 0};
  R_ERR(ct_process_group_new_subgroup(&bad, pg, dup, 2, 0), CT_ERR_INVALID_ARGUMENT, "twice");
  ct_store_free(s);
  RK_OK(ct_process_group_barrier(NULL, pg));
  ct_tensor_free(t), ct_tensor_free(other), ct_tensor_free(m), ct_tensor_free(mt);
  ct_process_group_free(pg);
}

static void case_store(void) {
  /* one rank: the store alone */
  ct_store *s = NULL, *p = NULL, *clash = NULL;
  RK_OK(ct_store_new_tcp(&s, "127.0.0.1", 0, 1, 1, 1.5));
  int32_t port = 0;
  RK_OK(ct_store_port(&port, s));
  R_CHECK(port > 0, "port %d", port);
  R_ERR(ct_store_new_tcp(&clash, "127.0.0.1", port, 1, 1, 1), CT_ERR_IO, "127.0.0.1");
  RK_OK(ct_store_set(s, "k", "hello", 5));
  void *buf = NULL;
  size_t n = 0;
  RK_OK(ct_store_get(&buf, &n, s, "k"));
  R_CHECK(n == 5 && memcmp(buf, "hello", 5) == 0, "get");
  ct_free(buf);
  buf = NULL;
  RK_OK(ct_store_set(s, "empty", NULL, 0));
  RK_OK(ct_store_get(&buf, &n, s, "empty"));
  R_CHECK(n == 0 && buf != NULL, "an empty value: size 0, a buffer to free");
  ct_free(buf);
  buf = NULL;
  R_ERR(ct_store_get(NULL, &n, s, "k"), CT_ERR_INVALID_ARGUMENT, "NULL");
  R_ERR(ct_store_get(&buf, NULL, s, "k"), CT_ERR_INVALID_ARGUMENT, "NULL");
  int64_t v = 0;
  RK_OK(ct_store_add(&v, s, "c", 3));
  RK_OK(ct_store_add(&v, s, "c", 4));
  R_CHECK(v == 7, "add");
  { /* adding to a value that is not an integer: refused, and the connection lives on
       (the server used to drop this client: every later call "Broken pipe") */
    RK_OK(ct_store_set(s, "txt", "abc", 3));
    R_ERR(ct_store_add(&v, s, "txt", 1), CT_ERR_INVALID_ARGUMENT, "key 'txt' holds 'abc', not an integer");
    RK_OK(ct_store_set(s, "empty-txt", NULL, 0));
    R_ERR(ct_store_add(&v, s, "empty-txt", 1), CT_ERR_INVALID_ARGUMENT, "holds 0 bytes");
    RK_OK(ct_store_add(&v, s, "c", 1));
    R_CHECK(v == 8, "add after the refusal: %lld", (long long)v);
    RK_OK(ct_store_get(&buf, &n, s, "txt"));
    R_CHECK(n == 3 && memcmp(buf, "abc", 3) == 0, "the value is untouched");
    ct_free(buf);
    buf = NULL;
    RK_OK(ct_store_set(s, "c", "5", 1)); /* a number set as text adds */
    RK_OK(ct_store_add(&v, s, "c", 2));
    R_CHECK(v == 7, "text 5 + 2: %lld", (long long)v);
  }
  RK_OK(ct_store_new_prefix(&p, s, "pre"));
  RK_OK(ct_store_set(p, "k", "x", 1));
  RK_OK(ct_store_get(&buf, &n, s, "pre/k"));
  R_CHECK(n == 1 && ((char *)buf)[0] == 'x', "prefix");
  ct_free(buf);
  buf = NULL;
  double t0 = now_s();
  ct_status st;
  R_ERR(ct_store_get(&buf, &n, s, "never"), CT_ERR_TIMEOUT, "never");
  R_CHECK(buf == NULL, "data untouched on failure");
  R_CHECK(now_s() - t0 < 10, "get timed out in %.1f s", now_s() - t0);
  R_ERR(ct_store_port(&port, p), CT_ERR_NOT_SUPPORTED, "not a TCP store");
  /* a master for 2 that nobody joins waits its timeout (then 1.13 goes on) */
  t0 = now_s();
  st = ct_store_new_tcp(&clash, "127.0.0.1", 0, 1, 2, 1);
  R_CHECK((st == CT_OK || st == CT_ERR_IO) && now_s() - t0 >= 0.9 && now_s() - t0 < 8,
          "lonely master: %d after %.1f s", st, now_s() - t0);
  ct_store_free(clash);
  clash = NULL;
  R_ERR(ct_store_new_tcp(&clash, "127.0.0.1", 70000, 1, 1, 1), CT_ERR_INVALID_ARGUMENT, "70000");
  R_ERR(ct_store_new_tcp(&clash, NULL, 1, 1, 1, 1), CT_ERR_INVALID_ARGUMENT, "NULL");
  R_ERR(ct_store_new_tcp(&clash, "127.0.0.1", 0, 0, 1, 1), CT_ERR_INVALID_ARGUMENT, "port 0");
  /* nothing listens on a fresh port: connecting fails after the timeout */
  t0 = now_s();
  st = ct_store_new_tcp(&clash, "127.0.0.1", g_port, 0, 1, 1);
  R_CHECK(st == CT_ERR_IO || st == CT_ERR_TIMEOUT, "no server: %d", st);
  R_CHECK(clash == NULL && now_s() - t0 < 15, "no server took %.1f s", now_s() - t0);
  R_ERR(ct_store_new_tcp(&clash, "no-such-host.invalid", 29400, 0, 1, 1), CT_ERR_IO,
        "no-such-host");
  ct_store_free(p);
  ct_store_free(s);
  /* a file store, with a one-rank group over it */
  char path[] = "/tmp/ctorch-filestore-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  unlink(path);
  R_ERR(ct_store_new_file(&clash, "/nonexistent-dir/ctorch/store", 1, 30), CT_ERR_IO,
        "/nonexistent-dir/ctorch/store");
  R_ERR(ct_store_new_file(&clash, path, 1, 0), CT_ERR_INVALID_ARGUMENT, "timeout_s");
  RK_OK(ct_store_new_file(&s, path, 1, 1.0));
  { /* a missing key fails after the store's timeout, not LibTorch's 300 s (issue 40) */
    void *data = NULL;
    size_t size = 0;
    double t_get = now_s();
    R_ERR(ct_store_get(&data, &size, s, "never-set"), CT_ERR_TIMEOUT, "never-set");
    R_CHECK(now_s() - t_get < 10, "file store get timed out in %.1f s", now_s() - t_get);
  }
  if (ct_distributed_has_backend("gloo")) { /* a one-rank group over the file store */
    ct_process_group *pg = NULL;
    RK_OK(ct_process_group_new(&pg, s, NULL, 0, 1, 5));
    ct_tensor *t = full_f32(3, 2);
    RK_OK(ct_process_group_all_reduce(NULL, pg, t, CT_REDUCE_SUM));
    R_CHECK(fp(t)[0] == 2, "one rank");
    ct_tensor_free(t);
    ct_process_group_free(pg);
    /* a second default group on the same store: refused at once, naming the
       reused group (it failed after the timeout, blaming GLOO_SOCKET_IFNAME) */
    ct_process_group *again = NULL;
    double t_again = now_s();
    R_ERR(ct_process_group_new(&again, s, NULL, 0, 1, 3), CT_ERR_INVALID_ARGUMENT,
          "this store already holds process group '0'");
    R_CHECK(again == NULL && now_s() - t_again < 1, "refused after %.1f s", now_s() - t_again);
    ct_store *fresh = NULL; /* a new prefix makes room for it */
    RK_OK(ct_store_new_prefix(&fresh, s, "second"));
    RK_OK(ct_process_group_new(&again, fresh, NULL, 0, 1, 5));
    RK_OK(ct_process_group_barrier(NULL, again));
    ct_process_group_free(again);
    ct_store_free(fresh);
  }
  ct_store_free(s);
}

/* torchrun's variables, set here as torchrun would set them. */
static void case_env(void) {
  char v[16];
  unsetenv("MASTER_ADDR");
  ct_process_group *pg = NULL;
  R_ERR(ct_process_group_new_from_env(&pg, "gloo", 10), CT_ERR_INVALID_ARGUMENT, "MASTER_ADDR");
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  snprintf(v, sizeof v, "%d", g_port);
  setenv("MASTER_PORT", v, 1);
  setenv("WORLD_SIZE", "x", 1);
  R_ERR(ct_process_group_new_from_env(&pg, "gloo", 10), CT_ERR_INVALID_ARGUMENT, "WORLD_SIZE='x'");
  snprintf(v, sizeof v, "%d", g_world);
  setenv("WORLD_SIZE", v, 1);
  snprintf(v, sizeof v, "%d", g_rank);
  setenv("RANK", v, 1);
  RK_OK(ct_process_group_new_from_env(&pg, NULL, 20));
  ct_tensor *t = full_f32(2, 1);
  RK_OK(ct_process_group_all_reduce(NULL, pg, t, CT_REDUCE_SUM));
  R_CHECK(fp(t)[0] == g_world, "env sum");
  ct_tensor_free(t);
  ct_process_group_free(pg);
}

/* Whether msg names `rank` in the clause that starts with `lead` ("the
 * process of rank" or "; rank"): "rank 2 has ..." or "ranks 1, 2 have ...".
 * Survivors that finish first may be named beside the rank under test. */
static int names_rank(const char *msg, const char *lead, int rank) {
  const char *p = strstr(msg, lead);
  if (p == NULL) return 0;
  p += strlen(lead);
  if (*p == 's') p++;
  const char *end = strstr(p, " ha");
  if (end == NULL) return 0;
  while (p < end) {
    char *q;
    long r = strtol(p, &q, 10);
    if (q == p) {
      p++;
      continue;
    }
    if (r == rank) return 1;
    p = q;
  }
  return 0;
}

/* In the failure cases rank 0 hosts the store that the others' error
 * messages read (cards, heartbeats): it stays until the n_survivors - 1
 * other survivors have checked theirs. */
static void survivors_done(int n_survivors) {
  int64_t n = 0;
  if (g_rank != 0) {
    RK_OK(ct_store_add(&n, g_test_store, "test/checked", 1));
    return;
  }
  for (double t0 = now_s(); now_s() - t0 < 20; usleep(50000)) {
    RK_OK(ct_store_add(&n, g_test_store, "test/checked", 0));
    if (n >= n_survivors - 1) return;
  }
  R_CHECK(0, "%lld of %d other survivors checked their errors", (long long)n, n_survivors - 1);
}

/* A survivor's all_reduce of n floats that is expected to fail: its status,
 * and in *took the seconds it took (ct_last_error() keeps the message). */
static ct_status failing_all_reduce(ct_process_group *pg, int64_t n, double *took) {
  ct_tensor *t = full_f32(n, 1);
  double t0 = now_s();
  ct_status st = ct_process_group_all_reduce(NULL, pg, t, CT_REDUCE_SUM);
  *took = now_s() - t0;
  ct_tensor_free(t);
  return st;
}

/* A survivor's end: it failed within limit_s, says so, and leaves once the
 * other survivors have checked theirs. */
static void survivor_ends(ct_process_group *pg, double took, double limit_s) {
  R_CHECK(took < limit_s, "failed after %.1f s", took);
  fprintf(stderr, "rank %d, as expected after %.1f s: %s\n", g_rank, took, ct_last_error());
  survivors_done(g_world - 1);
  ct_process_group_free(pg);
}

/* The last rank dies after joining; the others' next collective fails
 * within the timeout (plus a margin), never hangs. */
static void case_peer_dies(void) {
  ct_process_group *pg = tcp_group(4);
  RK_OK(ct_process_group_barrier(NULL, pg));
  if (g_rank == g_world - 1) _exit(0);
  double took;
  ct_status st = failing_all_reduce(pg, 1 << 16, &took);
  R_CHECK(st == CT_ERR_TIMEOUT || st == CT_ERR_IO, "status %d", st);
  R_CHECK(strstr(ct_last_error(), "all_reduce failed on rank") != NULL, "message");
  R_CHECK(names_rank(ct_last_error(), "the process of rank", g_world - 1), "names the dead rank");
  survivor_ends(pg, took, 4 + 6);
}

/* The last rank stops (SIGSTOP: all its threads, as a host that is gone);
 * the others' next collective times out, naming it from its heartbeat. */
static void case_peer_stops(void) {
  ct_process_group *pg = tcp_group(3);
  RK_OK(ct_process_group_barrier(NULL, pg));
  usleep(1200000); /* a few heartbeats */
  if (g_rank == g_world - 1) raise(SIGSTOP);
  double took;
  ct_status st = failing_all_reduce(pg, 16, &took);
  R_CHECK(st == CT_ERR_TIMEOUT, "status %d", st);
  R_CHECK(names_rank(ct_last_error(), "; rank", g_world - 1) &&
              strstr(ct_last_error(), "stopped responding") != NULL,
          "names the stopped rank");
  survivor_ends(pg, took, 3 + 6);
}

/* The last rank's program is busy elsewhere (its main thread sleeps; its
 * heartbeat goes on) while the others all-reduce: they time out naming it
 * as alive but behind (number 2 on the group; its last was 1, barrier). */
static void case_peer_lags(void) {
  ct_process_group *pg = tcp_group(3);
  RK_OK(ct_process_group_barrier(NULL, pg));
  if (g_rank == g_world - 1) {
    /* Busy until the others have checked their errors (or 20 s). */
    int64_t n = 0;
    for (double t0 = now_s(); now_s() - t0 < 20 && n < g_world - 2; usleep(100000))
      if (ct_store_add(&n, g_test_store, "test/checked", 0) != CT_OK) break;
    _exit(0); /* its group is broken by now: nothing to tear down */
  }
  double took;
  ct_status st = failing_all_reduce(pg, 16, &took);
  R_CHECK(st == CT_ERR_TIMEOUT || st == CT_ERR_IO, "status %d", st);
  R_CHECK(names_rank(ct_last_error(), "; rank", g_world - 1) &&
              strstr(ct_last_error(),
                     "has not called this collective (number 2 on this group; its last was "
                     "number 1, barrier)") != NULL,
          "names the rank that is behind");
  R_CHECK(strstr(ct_last_error(), "stopped responding") == NULL &&
              strstr(ct_last_error(), "has exited") == NULL,
          "does not call it stopped or gone");
  /* at the group's timeout (3 s), diagnosis included: it came about 2 s late before */
  R_CHECK(took < 3 + 0.5, "reported %.2f s after the call, the timeout being 3 s", took);
  survivor_ends(pg, took, 3 + 6);
}

/* Only world - 1 ranks start: joining fails after the timeout, saying so. */
static void case_never_arrives(void) {
  ct_store *s = NULL;
  /* world_size -1: the master does not wait for the stores to connect */
  RK_OK(ct_store_new_tcp(&s, "127.0.0.1", g_port, g_rank == 0, -1, 3));
  ct_process_group *pg = NULL;
  double t0 = now_s();
  ct_status st = ct_process_group_new(&pg, s, "gloo", g_rank, g_world, 3);
  R_CHECK(st == CT_ERR_TIMEOUT || st == CT_ERR_IO, "status %d", st);
  R_CHECK(pg == NULL && strstr(ct_last_error(), "join the process group failed") != NULL,
          "message");
  /* rank 0 holds the store, so it can always tell who never came */
  if (g_rank == 0) R_CHECK(strstr(ct_last_error(), "rank 2 never joined") != NULL, "names it");
  R_CHECK(now_s() - t0 < 3 + 6, "took %.1f s", now_s() - t0);
  fprintf(stderr, "rank %d, as expected: %s\n", g_rank, ct_last_error());
  ct_store_free(s);
}

/* ---- data parallel -------------------------------------------------------- */

static ct_tensor *op2(const char *name, const char *overload, ct_tensor *a, ct_tensor *b) {
  ct_op *op = NULL;
  RK_OK(ct_op_find(&op, name, overload));
  ct_tensor *ins[2] = {a, b}, *out = NULL;
  RK_OK(ct_op_call_tensors(&out, 1, op, (const ct_tensor *const *)ins, b ? 2 : 1));
  ct_op_free(op);
  return out;
}

/* Trains y = x W + b with SGD on rows [first, first + rows) of a fixed
 * 8-row batch; with ddp the gradients are averaged across ranks. */
static void train(ct_tensor *w, ct_tensor *bias, int first, int rows, ct_ddp *ddp, int steps) {
  float x[8 * 3], y[8 * 2];
  for (int i = 0; i < 8 * 3; i++) x[i] = (float)sin(0.7 * i);
  for (int i = 0; i < 8 * 2; i++) y[i] = (float)cos(0.3 * i);
  int64_t xs[2] = {rows, 3}, ys[2] = {rows, 2};
  ct_tensor *xt = test_tensor_f32(x + first * 3, xs, 2),
            *yt = test_tensor_f32(y + first * 2, ys, 2);
  const ct_tensor *params[2] = {w, bias};
  ct_optimizer *opt = NULL;
  RK_OK(ct_optimizer_new(&opt, "sgd", params, 2, NULL));
  for (int s = 0; s < steps; s++) {
    RK_OK(ct_optimizer_zero_grad(opt, 1));
    ct_tensor *h = op2("aten::matmul", "", xt, w), *o = op2("aten::add", "Tensor", h, bias);
    ct_tensor *d = op2("aten::sub", "Tensor", o, yt), *sq = op2("aten::mul", "Tensor", d, d);
    ct_tensor *loss = op2("aten::mean", "", sq, NULL);
    if (ddp) RK_OK(ct_ddp_prepare_backward(ddp, (const ct_tensor *const *)&o, 1));
    RK_OK(ct_tensor_backward(loss, NULL, 0, 0));
    RK_OK(ct_optimizer_step(opt));
    ct_tensor_free(h), ct_tensor_free(o), ct_tensor_free(d), ct_tensor_free(sq),
        ct_tensor_free(loss);
  }
  ct_optimizer_free(opt);
  ct_tensor_free(xt), ct_tensor_free(yt);
}

static void init_params(ct_tensor **w, ct_tensor **b, float offset) {
  float wv[6], bv[2] = {0.1f + offset, -0.2f};
  for (int i = 0; i < 6; i++) wv[i] = 0.05f * i - 0.1f + offset;
  int64_t ws[2] = {3, 2}, bs[1] = {2};
  *w = test_tensor_f32(wv, ws, 2);
  *b = test_tensor_f32(bv, bs, 1);
  RK_OK(ct_tensor_set_requires_grad(*w, 1));
  RK_OK(ct_tensor_set_requires_grad(*b, 1));
}

static void case_ddp(void) {
  ct_process_group *pg = tcp_group(20);
  ct_tensor *w, *b, *w1, *b1;
  /* each rank starts from different values: DDP copies rank 0's */
  init_params(&w, &b, 0.01f * g_rank);
  ct_tensor *params[2] = {w, b};
  ct_ddp *ddp = NULL;
  RK_OK(ct_ddp_new(&ddp, pg, (const ct_tensor *const *)params, 2, NULL, 0, 0, 0));
  int rows = 8 / g_world;
  train(w, b, g_rank * rows, rows, ddp, 5);
  /* one process, the full batch, rank 0's start */
  init_params(&w1, &b1, 0);
  train(w1, b1, 0, 8, NULL, 5);
  for (int i = 0; i < 6; i++)
    R_CHECK(fabsf(fp(w)[i] - fp(w1)[i]) < 1e-5f, "w[%d] %g vs %g", i, fp(w)[i], fp(w1)[i]);
  for (int i = 0; i < 2; i++) R_CHECK(fabsf(fp(b)[i] - fp(b1)[i]) < 1e-5f, "b[%d]", i);
  /* a step whose backward does not reach b: the next step says so */
  ct_tensor *w2 = NULL, *b2 = NULL, *two[2];
  ct_ddp *bad = NULL;
  init_params(&w2, &b2, 0);
  two[0] = w2, two[1] = b2;
  RK_OK(ct_ddp_new(&bad, pg, (const ct_tensor *const *)two, 2, NULL, 0, 0, 0));
  ct_tensor *s1 = op2("aten::sum", "", w2, NULL);
  RK_OK(ct_ddp_prepare_backward(bad, (const ct_tensor *const *)&s1, 1));
  RK_OK(ct_tensor_backward(s1, NULL, 0, 0));
  R_ERR(ct_ddp_prepare_backward(bad, (const ct_tensor *const *)&s1, 1), CT_ERR_TORCH, "finished reduction");
  ct_ddp_free(bad);
  ct_tensor_free(s1), ct_tensor_free(w2), ct_tensor_free(b2);
  /* mismatched parameters across ranks: every rank gets a clean error */
  ct_tensor *odd = NULL;
  int64_t sz[1] = {g_rank == 0 ? 3 : 4};
  RK_OK(ct_tensor_zeros(&odd, sz, 1, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  RK_OK(ct_tensor_set_requires_grad(odd, 1));
  double t_bad = now_s();
  R_ERR(ct_ddp_new(&bad, pg, (const ct_tensor *const *)&odd, 1, NULL, 0, 0, 0),
        CT_ERR_INVALID_ARGUMENT, "params[0] is Float[3] (strides 1) on rank 0 but Float[4] (strides 1) on rank 1");
  R_CHECK(bad == NULL, "no handle");
  /* a different number of parameters */
  R_ERR(ct_ddp_new(&bad, pg, (const ct_tensor *const *)params, g_rank == 0 ? 2 : 1, NULL, 0, 0, 0),
        CT_ERR_INVALID_ARGUMENT, "rank 0 has 2 parameters (3 dimensions in all), rank 1 has 1 (2 dimensions)");
  R_CHECK(now_s() - t_bad < 5, "refused after %.1f s (the group's timeout is 20 s)", now_s() - t_bad);
  { /* the group goes on */
    ct_tensor *one = full_f32(2, 1);
    RK_OK(ct_process_group_all_reduce(NULL, pg, one, CT_REDUCE_SUM));
    R_CHECK(fp(one)[1] == g_world, "all_reduce after the refusals: %g", fp(one)[1]);
    ct_tensor_free(one);
  }
  R_ERR(ct_ddp_new(&bad, pg, (const ct_tensor *const *)params, 2, NULL, 0, 0, 99), CT_ERR_INVALID_ARGUMENT, "flags");
  ct_ddp_free(ddp);
  ct_tensor_free(w), ct_tensor_free(b), ct_tensor_free(w1), ct_tensor_free(b1), ct_tensor_free(odd);
  ct_process_group_free(pg);
}

/* A rank of the mixed-language group (tests/distributed/mixed_group.py):
 * prints each result's bytes in hex, as every language's rank does. */
static void print_hex(const char *label, const void *p, size_t n) {
  const unsigned char *b = p;
  printf("%s ", label);
  for (size_t i = 0; i < n; i++) printf("%02x", b[i]);
  printf("\n");
  fflush(stdout);
}

static void case_mixed(void) {
  ct_process_group *pg = tcp_group(60);
  int r = g_rank, n = g_world;
  ct_tensor *x = full_f32(1000, 0);
  for (int i = 0; i < 1000; i++) fp(x)[i] = (float)(((i * (r + 1)) % 97) / 7.0);
  RK_OK(ct_process_group_all_reduce(NULL, pg, x, CT_REDUCE_SUM));
  print_hex("allreduce", fp(x), 4000);
  int64_t yv[4], sz[1] = {4};
  for (int i = 0; i < 4; i++) yv[i] = r * 10 + i;
  ct_tensor *y = NULL;
  RK_OK(ct_tensor_from_data(&y, yv, sz, 1, CT_INT64, CT_DEVICE_CPU, -1));
  RK_OK(ct_process_group_broadcast(NULL, pg, y, n - 1));
  print_hex("broadcast", ct_tensor_data_ptr(y), 32);
  ct_tensor *z = full_f32(2, (float)r), *outs[8];
  fp(z)[1] = r + 0.5f;
  for (int q = 0; q < n; q++) outs[q] = full_f32(2, -1);
  RK_OK(ct_process_group_all_gather(NULL, pg, outs, z));
  printf("allgather ");
  for (int q = 0; q < n; q++)
    for (int i = 0; i < 8; i++) printf("%02x", ((unsigned char *)fp(outs[q]))[i]);
  printf("\n");
  RK_OK(ct_process_group_barrier(NULL, pg));
  printf("done\n");
  fflush(stdout);
  for (int q = 0; q < n; q++) ct_tensor_free(outs[q]);
  ct_tensor_free(x), ct_tensor_free(y), ct_tensor_free(z);
  ct_process_group_free(pg);
}

/* Issue 40 item 11: in a forked child, freeing a group (and its store and
 * work) must return: Gloo's destructor joins threads that are not there. */
static void case_forked(void) {
  ct_process_group *pg = tcp_group(20);
  ct_tensor *t = full_f32(4, 1);
  ct_work *w = NULL;
  RK_OK(ct_process_group_barrier(&w, pg));
  RK_OK(ct_work_wait(w, 0));
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    int ok = ct_process_group_all_reduce(NULL, pg, t, CT_REDUCE_SUM) == CT_ERR_INVALID_ARGUMENT &&
             strstr(ct_last_error(), "a fork") != NULL;
    ct_work_free(w);
    ct_process_group_free(pg);
    ct_store_free(g_test_store);
    _exit(ok ? 0 : 3);
  }
  R_CHECK(child > 0, "fork");
  int status = -1;
  double t0 = now_s();
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (now_s() - t0 > 30) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      R_CHECK(0, "the forked child hung freeing the group");
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  R_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
  /* the parent's group is untouched */
  RK_OK(ct_process_group_all_reduce(NULL, pg, t, CT_REDUCE_SUM));
  ct_work_free(w);
  ct_tensor_free(t);
  ct_process_group_free(pg);
}

/* SIGPIPE: a store or group made while its disposition is the default sets
 * it to ignored (as Python does), so that writing to a dead peer's socket is
 * an error, not the end of the process; a handler the program set is kept. */
static void on_sigpipe(int sig) { (void)sig; }
static void (*sigpipe_now(void))(int) {
  struct sigaction now;
  sigaction(SIGPIPE, NULL, &now);
  return now.sa_handler;
}
static void case_sigpipe(void) {
  ct_store *s = NULL;
  signal(SIGPIPE, on_sigpipe);
  RK_OK(ct_store_new_tcp(&s, "127.0.0.1", 0, 1, 1, 5));
  R_CHECK(sigpipe_now() == on_sigpipe, "the program's handler is kept");
  ct_store_free(s);
  s = NULL;
  signal(SIGPIPE, SIG_DFL);
  RK_OK(ct_store_new_tcp(&s, "127.0.0.1", 0, 1, 1, 5));
  R_CHECK(sigpipe_now() == SIG_IGN, "a store ignores SIGPIPE");
  signal(SIGPIPE, SIG_DFL);
  ct_process_group *pg = NULL;
  RK_OK(ct_process_group_new(&pg, s, "gloo", 0, 1, 5));
  R_CHECK(sigpipe_now() == SIG_IGN, "a group ignores SIGPIPE");
  /* what a dead peer's socket does: an error, and this process goes on */
  int fds[2];
  R_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0, "socketpair");
  close(fds[1]);
  R_CHECK(write(fds[0], "x", 1) == -1 && errno == EPIPE, "EPIPE, not a signal");
  close(fds[0]);
  ct_process_group_free(pg);
  ct_store_free(s);
}

static int rank_main(const char *name) {
  /* two_hosts.sh: whether this build can run its (Gloo) groups */
  if (!strcmp(name, "compiled")) return ct_distributed_has_backend("gloo") ? 0 : 77;
  if (!strcmp(name, "collectives"))
    case_collectives();
  else if (!strcmp(name, "bad_input"))
    case_bad_input();
  else if (!strcmp(name, "mismatch"))
    case_mismatch();
  else if (!strcmp(name, "p2p_mismatch"))
    case_p2p_mismatch();
  else if (!strcmp(name, "mismatch_sweep"))
    case_mismatch_sweep();
  else if (!strcmp(name, "overlap"))
    case_overlap();
  else if (!strcmp(name, "store"))
    case_store();
  else if (!strcmp(name, "forked"))
    case_forked();
  else if (!strcmp(name, "env"))
    case_env();
  else if (!strcmp(name, "peer_dies"))
    case_peer_dies();
  else if (!strcmp(name, "sigpipe"))
    case_sigpipe();
  else if (!strcmp(name, "never_arrives"))
    case_never_arrives();
  else if (!strcmp(name, "peer_stops"))
    case_peer_stops();
  else if (!strcmp(name, "peer_lags"))
    case_peer_lags();
  else if (!strcmp(name, "ddp"))
    case_ddp();
  else if (!strcmp(name, "mixed"))
    case_mixed();
  else
    return 2;
  return 0;
}

/* ---- the tests -------------------------------------------------------------- */

static int skip_without_c10d(void) { return !ct_distributed_is_compiled(); }
/* Groups in these tests are Gloo groups (CPU tensors). */
static int skip_without_gloo(void) { return !ct_distributed_has_backend("gloo"); }

static void test_collectives_2(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("collectives", 2, 2, 120);
}
static void test_collectives_4(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("collectives", 4, 4, 180);
}
static void test_bad_input(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("bad_input", 2, 2, 60);
}
static void test_mismatch(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("mismatch", 2, 2, 60);
}
static void test_p2p_mismatch(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("p2p_mismatch", 2, 2, 60);
}
static void test_mismatch_sweep(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("mismatch_sweep", 2, 2, 180);
}
static void test_overlap(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("overlap", 2, 2, 60);
}
static void test_store(void **state) {
  (void)state;
  if (skip_without_c10d()) skip();
  run_ranks("store", 1, 1, 60);
}
static void test_forked_child_frees(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("forked", 1, 1, 60);
}
static void test_env(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("env", 2, 2, 60);
}
static void test_sigpipe(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("sigpipe", 1, 1, 60);
}
static void test_peer_dies(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("peer_dies", 3, 3, 60);
}
static void test_peer_stops(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks_ex("peer_stops", 3, 3, 60, 2);
}
static void test_peer_lags(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("peer_lags", 3, 3, 60);
}
static void test_never_arrives(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("never_arrives", 3, 2, 60);
}
static void test_ddp(void **state) {
  (void)state;
  if (skip_without_gloo()) skip();
  run_ranks("ddp", 2, 2, 120);
}
static void test_not_compiled_says_so(void **state) {
  (void)state;
  if (ct_distributed_is_compiled()) skip();
  ct_store *s = NULL;
  CT_EXPECT_ERROR(ct_store_new_tcp(&s, "127.0.0.1", 1, 0, 1, 1), CT_ERR_NOT_SUPPORTED, "c10d");
}

/* Which backends this build has, and what each says where it cannot run:
 * Debian's LibTorch has Gloo, a PyPI wheel's (CUDA) NCCL only. With a CUDA
 * device (the GPU script), a one-rank NCCL group reduces CUDA tensors. */
static void test_backends(void **state) {
  (void)state;
  assert_int_equal(ct_distributed_has_backend(NULL), 0);
  assert_int_equal(ct_distributed_has_backend("mpi"), 0);
  const int gloo = ct_distributed_has_backend("gloo"), nccl = ct_distributed_has_backend("nccl");
  print_message("c10d %d, gloo %d, nccl %d, CUDA device %d\n", (int)ct_distributed_is_compiled(),
                gloo, nccl, (int)ct_cuda_is_available());
  if (!ct_distributed_is_compiled()) {
    assert_int_equal(gloo + nccl, 0);
    return;
  }
  assert_true(gloo || nccl);
  if (nccl) assert_int_equal(ct_cuda_is_compiled(), 1);
  ct_store *s = NULL;
  ct_process_group *pg = NULL;
  CT_OK_OR_FAIL(ct_store_new_tcp(&s, "127.0.0.1", 0, 1, 1, 20));
  if (!gloo)
    CT_EXPECT_ERROR(ct_process_group_new(&pg, s, "gloo", 0, 1, 5), CT_ERR_NOT_SUPPORTED,
                    "backend 'gloo' is not in this ctorch build");
  if (!nccl)
    CT_EXPECT_ERROR(ct_process_group_new(&pg, s, "nccl", 0, 1, 5), CT_ERR_NOT_SUPPORTED,
                    "backend 'nccl' is not in this ctorch build");
  if (nccl && !ct_cuda_is_available())
    CT_EXPECT_ERROR(ct_process_group_new(&pg, s, "nccl", 0, 1, 5), CT_ERR_NOT_SUPPORTED,
                    "needs a CUDA device");
  if (nccl && ct_cuda_is_available()) {
    CT_OK_OR_FAIL(ct_process_group_new(&pg, s, "nccl", 0, 1, 20));
    int64_t n = 4;
    ct_tensor *c = NULL, *g = NULL, *back = NULL;
    CT_OK_OR_FAIL(ct_tensor_full(&c, &n, 1, 3.0, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
    CT_EXPECT_ERROR(ct_process_group_all_reduce(NULL, pg, c, CT_REDUCE_SUM), CT_ERR_INVALID_ARGUMENT,
                    "backend nccl takes CUDA tensors");
    CT_OK_OR_FAIL(ct_tensor_full(&g, &n, 1, 3.0, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0));
    CT_OK_OR_FAIL(ct_process_group_all_reduce(NULL, pg, g, CT_REDUCE_SUM));
    CT_OK_OR_FAIL(ct_process_group_all_reduce(NULL, pg, g, CT_REDUCE_AVG));
    CT_OK_OR_FAIL(ct_process_group_broadcast(NULL, pg, g, 0));
    CT_OK_OR_FAIL(ct_process_group_barrier(NULL, pg));
    CT_OK_OR_FAIL(ct_tensor_to(&back, g, CT_DEVICE_CPU, -1, CT_DTYPE_KEEP, 0, 1));
    for (int i = 0; i < 4; i++) assert_true(((float *)ct_tensor_data_ptr(back))[i] == 3.0f);
    ct_tensor_free(back);
    ct_tensor_free(g);
    ct_tensor_free(c);
    ct_process_group_free(pg);
  }
  ct_store_free(s);
}

int main(int argc, char **argv) {
  g_self = argv[0];
  if (argc == 9 && !strcmp(argv[1], "--rank")) {
    g_rank = atoi(argv[2]);
    g_world = atoi(argv[4]);
    g_port = atoi(argv[6]);
    return rank_main(argv[8]);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_store),
      cmocka_unit_test(test_forked_child_frees),
      cmocka_unit_test(test_collectives_2),
      cmocka_unit_test(test_collectives_4),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_mismatch),
      cmocka_unit_test(test_p2p_mismatch),
      cmocka_unit_test(test_mismatch_sweep),
      cmocka_unit_test(test_overlap),
      cmocka_unit_test(test_env),
      cmocka_unit_test(test_sigpipe),
      cmocka_unit_test(test_peer_dies),
      cmocka_unit_test(test_never_arrives),
      cmocka_unit_test(test_peer_stops),
      cmocka_unit_test(test_peer_lags),
      cmocka_unit_test(test_ddp),
      cmocka_unit_test(test_not_compiled_says_so),
      cmocka_unit_test(test_backends),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
