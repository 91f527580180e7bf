/* `ctorch bench`: a model call timed (percentiles, optional JSON). */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double percentile(const double *sorted, size_t n, double p) {
  double r = p / 100.0 * (double)(n - 1);
  size_t lo = (size_t)r;
  return lo + 1 < n ? sorted[lo] + (r - (double)lo) * (sorted[lo + 1] - sorted[lo]) : sorted[n - 1];
}

static void progress(const char *what, long i, long n) {
  int w = 30, k, fill = (int)(w * (i + 1) / n);
  fprintf(stderr, "\r%-7s [", what);
  for (k = 0; k < w; k++) fputc(k < fill ? '#' : ' ', stderr);
  fprintf(stderr, "] %ld/%ld", i + 1, n);
  if (i + 1 == n) fputs("\r\033[K", stderr);
  fflush(stderr);
}

int cmd_bench(int argc, char **argv) {
  opts o;
  model t;
  inputs in;
  double *lat, total = 0, t0;
  long i;
  int rc, tty = isatty(2), k;
  ct_status st = CT_OK;
  for (k = 0; k < argc; k++)
    if (is_help(argv[k])) {
      printf(
          "Usage: %s bench MODEL INPUTS... [--iters N] [--warmup W] [--threads T] [--json]\n\n"
          "Times a method of a TorchScript model (or an AOTInductor package) on the same\n"
          "inputs: W warm-up calls (default 10), then N timed calls (default 100), with grad\n"
          "mode off. Prints the latency percentiles (p50, p90, p99), mean, min, max and the\n"
          "throughput in calls per second. A progress bar is drawn on stderr when it is a\n"
          "terminal, never when piped. CUDA work is synchronized after every call.\n\n%s"
          "  --iters N                 timed calls (default 100)\n"
          "  --warmup W                untimed calls first (default 10)\n"
          "  --threads T               intra-op threads (ct_set_num_threads)\n"
          "  --json                    print the results as one JSON object\n",
          prog, inputs_help);
      return 0;
    }
  if ((rc = parse_model_opts(&o, "bench", argc, argv, 1))) return rc;
  start_deadline(o.timeout);
  if (o.threads > 0 && (st = ct_set_num_threads((int32_t)o.threads)) != CT_OK)
    return fail_ct(st, "--threads");
  if ((rc = load_model(&t, &o))) return rc;
  if ((rc = make_inputs(&in, &o, t.m != NULL))) {
    model_free(&t);
    return rc;
  }
  lat = malloc(sizeof(double) * (size_t)o.iters);
  if (!lat) {
    inputs_free(&in);
    model_free(&t);
    return fail("out of memory");
  }
  ct_grad_mode_set(0);
  for (i = 0; i < o.warmup + o.iters && st == CT_OK; i++) {
    ct_value *res = NULL;
    ct_tensor *pt[MAX_OUTPUTS];
    size_t np = 0, j;
    int timed = i >= o.warmup;
    t0 = now_s();
    st = t.p ? call_package(pt, &np, t.p, &in) : call_module(&res, t.m, &o, &in);
    if (st == CT_OK && o.dev == CT_DEVICE_CUDA) st = ct_cuda_synchronize(o.idx);
    if (timed) total += lat[i - o.warmup] = now_s() - t0;
    ct_value_free(res);
    for (j = 0; j < np; j++) ct_tensor_free(pt[j]);
    if (tty && st == CT_OK) {
      if (timed)
        progress("bench", i - o.warmup, o.iters);
      else
        progress("warmup", i, o.warmup);
    }
  }
  inputs_free(&in);
  model_free(&t);
  if (st != CT_OK) {
    if (tty) fputs("\n", stderr);
    free(lat);
    return fail_ct(st, is_package(o.model) ? o.model : o.method ? o.method : "forward");
  }
  qsort(lat, (size_t)o.iters, sizeof(double), cmp_double);
  {
    size_t n = (size_t)o.iters;
    double p50 = percentile(lat, n, 50), p90 = percentile(lat, n, 90), p99 = percentile(lat, n, 99);
    double mean = total / (double)n;
    if (o.json) {
      printf("{\"model\": ");
      json_str(stdout, o.model);
      printf(", \"method\": ");
      json_str(stdout, o.method ? o.method : "forward");
      printf(
          ", \"iters\": %ld, \"warmup\": %ld, \"threads\": %d, \"unit\": \"ms\", "
          "\"p50\": %.6f, \"p90\": %.6f, \"p99\": %.6f, \"mean\": %.6f, \"min\": %.6f, "
          "\"max\": %.6f, \"throughput_per_s\": %.3f}\n",
          o.iters, o.warmup, (int)ct_get_num_threads(), p50 * 1e3, p90 * 1e3, p99 * 1e3, mean * 1e3,
          lat[0] * 1e3, lat[n - 1] * 1e3, 1.0 / mean);
    } else {
      printf("%s %s: %ld calls after %ld warm-up, %d thread(s)\n", o.model,
             o.method ? o.method : "forward", o.iters, o.warmup, (int)ct_get_num_threads());
      printf("latency ms  p50 %.4f  p90 %.4f  p99 %.4f  mean %.4f  min %.4f  max %.4f\n", p50 * 1e3,
             p90 * 1e3, p99 * 1e3, mean * 1e3, lat[0] * 1e3, lat[n - 1] * 1e3);
      printf("throughput  %.1f calls/s\n", 1.0 / mean);
    }
  }
  free(lat);
  return 0;
}
