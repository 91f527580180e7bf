/* `ctorch bench`: a model call timed (percentiles in scaled units or JSON), with a progress
 * bar on a timer. */
#include "cli.h"

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

/* The progress bar: redrawn on a timer (at most every REDRAW_S seconds), never per call,
 * so a fast model's timings do not pay for terminal output. */
#define REDRAW_S 0.1

static void progress(const char *what, long i, long n) {
  int w = 30, k, fill = (int)(w * (i + 1) / n);
  fprintf(stderr, "\r%-7s [", what);
  for (k = 0; k < w; k++) fputc(k < fill ? '#' : ' ', stderr);
  fprintf(stderr, "] %ld/%ld", i + 1, n);
  fflush(stderr);
}

static int help(void) {
  printf(
      "Usage: %s bench MODEL INPUTS... [--iters N] [--warmup W] [--threads T] [--json]\n\n"
      "Times a method of a TorchScript model (or an AOTInductor package) on the same\n"
      "inputs: W warm-up calls (default 10), then N timed calls (default 100), with grad\n"
      "mode off. Prints the latency percentiles (p50, p90, p99), mean, min, max, each in\n"
      "the unit that fits it (ns, \xc2\xb5s, ms, s), and the throughput in calls per second. A\n"
      "progress bar is drawn on stderr when it is a terminal, never when piped; it is\n"
      "redrawn at most every 0.1 s, between timed calls. CUDA work is synchronized after\n"
      "every call.\n\n%s"
      "  --iters N                 timed calls (default 100)\n"
      "  --warmup W                untimed calls first (default 10)\n"
      "  --threads T               intra-op threads (ct_set_num_threads)\n"
      "  --json                    print the results as one JSON object (times in ms);\n"
      "                            on an error {\"file\", \"error\", \"status\"} as run\n",
      prog, inputs_help);
  return 0;
}

static int report(const opts *o, double *lat, double total) {
  size_t n = (size_t)o->iters;
  double p50, p90, p99, mean = total / (double)n;
  qsort(lat, n, sizeof(double), cmp_double);
  p50 = percentile(lat, n, 50), p90 = percentile(lat, n, 90), p99 = percentile(lat, n, 99);
  if (o->json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", o->model);
    cJSON_AddStringToObject(j, "method", o->method ? o->method : "forward");
    cJSON_AddNumberToObject(j, "iters", (double)o->iters);
    cJSON_AddNumberToObject(j, "warmup", (double)o->warmup);
    cJSON_AddNumberToObject(j, "threads", ct_num_threads());
    cJSON_AddStringToObject(j, "unit", "ms");
    cJSON_AddNumberToObject(j, "p50", p50 * 1e3);
    cJSON_AddNumberToObject(j, "p90", p90 * 1e3);
    cJSON_AddNumberToObject(j, "p99", p99 * 1e3);
    cJSON_AddNumberToObject(j, "mean", mean * 1e3);
    cJSON_AddNumberToObject(j, "min", lat[0] * 1e3);
    cJSON_AddNumberToObject(j, "max", lat[n - 1] * 1e3);
    cJSON_AddNumberToObject(j, "throughput_per_s", 1.0 / mean);
    return json_print(j);
  } else {
    const char *names[6] = {"p50", "p90", "p99", "mean", "min", "max"};
    double vals[6];
    char buf[32];
    int k;
    vals[0] = p50, vals[1] = p90, vals[2] = p99, vals[3] = mean, vals[4] = lat[0];
    vals[5] = lat[n - 1];
    printf("%s %s: %ld calls after %ld warm-up, %d thread(s)\n", o->model,
           o->method ? o->method : "forward", o->iters, o->warmup, (int)ct_num_threads());
    printf("latency   ");
    for (k = 0; k < 6; k++) {
      duration_str(buf, sizeof buf, vals[k]);
      printf(" %s %s%s", names[k], buf, k < 5 ? " " : "\n");
    }
    printf("throughput  %.1f calls/s\n", 1.0 / mean);
  }
  return 0;
}

int cmd_bench(int argc, char **argv) {
  opts o;
  model t;
  inputs in;
  double *lat, total = 0, t0, t1, next_draw = 0;
  long i;
  int rc, tty = isatty(2), drawn = 0;
  ct_status st = CT_OK;
  if ((rc = parse_model_opts(&o, "bench", argc, argv, 1)) == -1) return help();
  if (rc) return rc;
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
  ct_grad_mode_set_enabled(0);
  for (i = 0; i < o.warmup + o.iters && st == CT_OK; i++) {
    ct_value *res = NULL;
    ct_tensor *pt[MAX_OUTPUTS];
    size_t np = 0, j;
    int timed = i >= o.warmup;
    t0 = now_s();
    st = t.p ? call_package(pt, &np, t.p, &in) : call_module(&res, t.m, &o, &in);
    if (st == CT_OK && o.dev == CT_DEVICE_CUDA) st = ct_cuda_synchronize(o.idx);
    t1 = now_s();
    if (timed) total += lat[i - o.warmup] = t1 - t0;
    ct_value_free(res);
    for (j = 0; j < np; j++) ct_tensor_free(pt[j]);
    /* outside the timed interval: t1 is the clock already read */
    if (tty && st == CT_OK && t1 >= next_draw) {
      if (timed)
        progress("bench", i - o.warmup, o.iters);
      else
        progress("warmup", i, o.warmup);
      drawn = 1;
      next_draw = now_s() + REDRAW_S;
    }
  }
  if (drawn) fputs(st == CT_OK ? "\r\033[K" : "\n", stderr);
  inputs_free(&in);
  model_free(&t);
  if (st != CT_OK) {
    free(lat);
    return fail_ct(st, is_package(o.model) ? o.model : o.method ? o.method : "forward");
  }
  rc = report(&o, lat, total);
  free(lat);
  return rc;
}
