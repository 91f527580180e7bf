// The shared harness of the ABI-cost benchmarks (bench_call, bench_model, bench_scale,
// bench_memory): interleaved timing, rows against a C++ floor, RSS, JSON output, and
// the common command line
//
//   bench_GROUP [--json FILE] [--quick] [--only SUBSTRING] [--resnet PATH]
//
// Method: the variants of one case run interleaved, round by round (a round is
// ~round_ms of back-to-back calls of one variant); each figure is the median
// over rounds of the mean time per call in a round, so load from other
// processes hits every variant alike and ratios stay meaningful.
#pragma once
#include "ctorch.h"  // first: its DLPack 1.1 declarations win over ATen's (same layout)

#include <ATen/DLConvertor.h>
#include <c10/core/InferenceMode.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;
inline bool g_quick = false;
inline std::string g_only;
inline std::string g_resnet = "build-bench/models/resnet18.pt";

[[noreturn]] inline void die(const char *what) {
  std::fprintf(stderr, "bench: %s failed: %s\n", what, ct_last_error());
  std::exit(1);
}
#define CK(call)                     \
  do {                               \
    if ((call) != CT_OK) die(#call); \
  } while (0)

template <class T>
inline void escape(const T &v) {
  asm volatile("" : : "g"(v) : "memory");
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Method {
  std::string name;
  std::function<void()> body;
  long iters = 0;
  std::vector<double> ns;
  double med() const { return median(ns); }
};

// Runs methods interleaved; iterations per round are calibrated so that a
// round of each takes about round_ms.
inline void run_interleaved(std::vector<Method> &ms, int rounds, double round_ms,
                            long max_iters = 1L << 22) {
  for (auto &m : ms) {
    m.body();  // warm
    long it = 1;
    for (;;) {
      auto t0 = Clock::now();
      for (long i = 0; i < it; ++i) m.body();
      double el = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (el >= round_ms / 4 || it >= max_iters) {
        m.iters = std::max(1L, std::min(max_iters, (long)(it * round_ms / std::max(el, 1e-6))));
        break;
      }
      it *= 4;
    }
  }
  if (g_quick) rounds = std::max(5, rounds / 4);
  for (int r = 0; r < rounds; ++r)
    for (auto &m : ms) {
      auto t0 = Clock::now();
      for (long i = 0; i < m.iters; ++i) m.body();
      double el = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
      m.ns.push_back(el / m.iters);
    }
}

// ---- JSON output -------------------------------------------------------------
inline std::string jesc(const std::string &s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

struct Row {
  std::string group, name, floor_name, ctorch_name;
  double floor_ns = 0, ctorch_ns = 0;
  std::string target_kind;  // "", "ratio", "abs_ns", "diff_ns"
  double target = 0;
  std::string note;
};
inline std::vector<Row> g_rows;
inline std::vector<std::string> g_extra_json;  // already-formatted objects (scale, memory)

inline void print_row(const Row &r) {
  double ratio = r.floor_ns > 0 ? r.ctorch_ns / r.floor_ns : 0;
  std::printf("  %-34s %-30s %11.1f  %-36s %11.1f  %6.3f\n", r.name.c_str(), r.floor_name.c_str(),
              r.floor_ns, r.ctorch_name.c_str(), r.ctorch_ns, ratio);
  std::fflush(stdout);
}

// One case: floor first, then one or more ctorch variants (each reported as a row
// against the floor). Variants run interleaved with the floor.
inline void compare(
    const std::string &group, const std::string &name, Method floor, std::vector<Method> variants,
    int rounds, double round_ms,
    std::vector<std::pair<std::string, double>> targets = {},  // kind,value per variant
    const std::string &note = "") {
  if (!g_only.empty() && name.find(g_only) == std::string::npos) return;
  std::vector<Method> ms;
  ms.push_back(std::move(floor));
  for (auto &v : variants) ms.push_back(std::move(v));
  run_interleaved(ms, rounds, round_ms);
  for (size_t i = 1; i < ms.size(); ++i) {
    Row r;
    r.group = group;
    r.name = name;
    r.floor_name = ms[0].name;
    r.floor_ns = ms[0].med();
    r.ctorch_name = ms[i].name;
    r.ctorch_ns = ms[i].med();
    if (i - 1 < targets.size()) {
      r.target_kind = targets[i - 1].first;
      r.target = targets[i - 1].second;
    }
    r.note = note;
    print_row(r);
    g_rows.push_back(r);
  }
}

// A ctorch-only case (no C++ counterpart), with an absolute target.
inline void single(const std::string &group, const std::string &name, Method m, int rounds,
                   double round_ms, const std::string &kind, double target,
                   const std::string &note = "") {
  if (!g_only.empty() && name.find(g_only) == std::string::npos) return;
  std::vector<Method> ms{std::move(m)};
  run_interleaved(ms, rounds, round_ms);
  Row r;
  r.group = group;
  r.name = name;
  r.floor_name = "-";
  r.ctorch_name = ms[0].name;
  r.ctorch_ns = ms[0].med();
  r.target_kind = kind;
  r.target = target;
  r.note = note;
  print_row(r);
  g_rows.push_back(r);
}

inline void header(const char *title) {
  std::printf("\n== %s\n  %-34s %-30s %11s  %-36s %11s  %6s\n", title, "case", "C++ floor", "ns",
              "ctorch", "ns", "ratio");
}

inline void noop_deleter(void *, void *) {}
inline void noop_dl_deleter(DLManagedTensor *) {}

inline long rss_kib() {
  FILE *f = std::fopen("/proc/self/statm", "r");
  long size = 0, res = 0;
  if (f) {
    if (std::fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
    std::fclose(f);
  }
  return res * (sysconf(_SC_PAGESIZE) / 1024);
}

// TorchScript source of the tiny model used by the model and memory groups.
inline const char *kSmallSrc = "def forward(self, x):\n    return x * 2 + 1\n";
inline const char *kMlpSrc =
    "def forward(self, x):\n"
    "    return torch.matmul(torch.relu(torch.matmul(x, self.w1)), self.w2)\n";

// The training benchmark's conv net (bench_train, bench_julia_floor, bench_python.py and
// bench_julia.jl build the same): conv 3->16 3x3, relu, 2x2 max-pool, softsign, linear
// 4096->10, on a batch of 32 3x32x32 images.
inline const char *kConvNetSrc =
    "def forward(self, x):\n"
    "    h = torch.relu(torch.conv2d(x, self.conv_w, self.conv_b, [1, 1], [1, 1]))\n"
    "    h = torch.flatten(torch.max_pool2d(h, [2, 2]), 1)\n"
    "    return torch.linear(h / (1 + torch.abs(h)), self.fc_w, self.fc_b)\n";

inline void write_json(const char *path) {
  FILE *f = std::fopen(path, "w");
  if (!f) {
    std::perror(path);
    return;
  }
  std::fprintf(f, "{\n  \"torch_version\": \"%s\",\n  \"ctorch_version\": \"%s\",\n  \"rows\": [\n",
               ct_torch_version(), ct_version());
  for (size_t i = 0; i < g_rows.size(); ++i) {
    const Row &r = g_rows[i];
    std::fprintf(
        f,
        "    {\"group\": \"%s\", \"name\": \"%s\", \"floor_name\": \"%s\", \"floor_ns\": %.2f, "
        "\"ctorch_name\": \"%s\", \"ctorch_ns\": %.2f, \"target_kind\": \"%s\", "
        "\"target\": %g, \"note\": \"%s\"}%s\n",
        jesc(r.group).c_str(), jesc(r.name).c_str(), jesc(r.floor_name).c_str(), r.floor_ns,
        jesc(r.ctorch_name).c_str(), r.ctorch_ns, r.target_kind.c_str(), r.target,
        jesc(r.note).c_str(), i + 1 < g_rows.size() ? "," : "");
  }
  std::fprintf(f, "  ],\n  \"extra\": [\n");
  for (size_t i = 0; i < g_extra_json.size(); ++i)
    std::fprintf(f, "    %s%s\n", g_extra_json[i].c_str(), i + 1 < g_extra_json.size() ? "," : "");
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
  std::printf("\nwrote %s\n", path);
}

// Parses the common options, runs one group on 1 intra-op thread, writes the JSON.
inline int run_main(int argc, char **argv, const char *group, const std::function<void()> &body) {
  const char *json = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc)
      json = argv[++i];
    else if (a == "--resnet" && i + 1 < argc)
      g_resnet = argv[++i];
    else if (a == "--only" && i + 1 < argc)
      g_only = argv[++i];
    else if (a == "--quick")
      g_quick = true;
    else {
      std::fprintf(stderr, "usage: %s [--json FILE] [--quick] [--only SUBSTRING] [--resnet PATH]\n",
                   argv[0]);
      return 2;
    }
  }
  CK(ct_set_num_threads(1));
  std::printf("ctorch %s on LibTorch %s; 1 intra-op thread; group %s\n", ct_version(),
              ct_torch_version(), group);
  body();
  if (json) write_json(json);
  return 0;
}

}  // namespace bench
