#!/usr/bin/python3
"""Writes bench/RESULTS.md, and the ratio chart, from the raw output of bench/run.sh.

    bench/report.py OUT_DIR RESULTS.md [--build DIR] [--seconds N] [--chart FILE.svg]

OUT_DIR holds call.json, model.json, scale.json, memory.json (the C++ programs),
bench_c.txt, python.json, julia.json, lsan_*.log, valgrind_*.log, loadavg_start.txt and
date.txt. Every missing piece is reported as skipped, never fatal. Why a target is missed
comes from bench/causes.toml, one entry per cause; this script keeps no history.
"""
import argparse
import fnmatch
import glob
import json
import os
import platform
import re
import subprocess
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
CPP_GROUPS = ("call", "model", "scale", "memory", "train", "custom")
GROUP_TITLES = {
    "call": "1. Call overhead from C vs the same in C++ LibTorch",
    "model": "2. Model forward (inference mode, 1 intra-op thread)",
    "train": "2b. Training step from C (forward, loss, backward, Adam; 1 intra-op thread)",
    "custom": "2c. Custom operator kernels: C through ct_library vs a C++ TORCH_LIBRARY extension "
              "(dispatcher calls, 1 intra-op thread)",
}
# Targets for the Python rows (ctorch / PyTorch's Python, same process), by name pattern;
# a row that carries its own "target" (a ratio) uses that instead.
PY_TARGETS = [
    ("x + y*", 1.5), ("ops.aten.add.Tensor(x, y)", 1.5), ("x.shape", 2.0), ("x.dtype", 2.0),
    ("x.device", 2.0), ("x.ndim", 2.0), ("from_numpy *", 2.0), ("tensor.numpy() *", 2.0),
    ("from_dlpack(ndarray) *", 2.0), ("np.from_dlpack(ctorch) *", 2.0),
    ("tiny scripted forward*", 1.15), ("resnet18 forward*", 1.02),
    ("custom op softsign*", 3.0),
]
# Julia rows against torch::add (or the floor the Julia benchmark measured itself).
JL_TARGETS = [("add 4 floats: a + b", 1.3), ("add 4 floats: call_tensor*", 1.3),
              ("train step*", 1.15),
              # Julia kernel through CTorch.Library vs the C++ TORCH_LIBRARY kernel (issue 24).
              ("custom op softsign 4 floats*", 1.5), ("custom op softsign 1M floats*", 1.2)]


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def fmt_ns(ns):
    if ns is None:
        return "-"
    if ns < 1000:
        return "%.1f ns" % ns
    if ns < 1e6:
        return "%.2f µs" % (ns / 1e3)
    if ns < 1e9:
        return "%.2f ms" % (ns / 1e6)
    return "%.2f s" % (ns / 1e9)


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return ""


def machine(out, build):
    lscpu = sh("lscpu")
    def field(name):
        m = re.search(r"^%s:\s*(.+)$" % re.escape(name), lscpu, re.M)
        return m.group(1).strip() if m else "?"
    mem = "?"
    for line in read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem = "%.1f GiB" % (int(line.split()[1]) / 1024 / 1024)
    osname = "?"
    for line in read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            osname = line.split("=", 1)[1].strip('"')
    cxx = sh("c++ --version | head -1")
    return [
        ("CPU", "%s (%s), %s CPUs, %s thread(s) per core" % (
            field("Model name"), field("Vendor ID"), field("CPU(s)"), field("Thread(s) per core"))),
        ("Hypervisor", field("Hypervisor vendor")),
        ("Memory", mem),
        ("OS", "%s, kernel %s" % (osname, platform.release())),
        ("Compiler", cxx),
        ("Load average at start (1/5/15 min)", read(os.path.join(out, "loadavg_start.txt")).strip() or "?"),
        ("Date", read(os.path.join(out, "date.txt")).strip() or "?"),
    ]


def verdict(row):
    """(text, met) for a row with a target; (None, None) without."""
    kind, target = row.get("target_kind", ""), row.get("target", 0)
    f, c = row.get("floor_ns") or 0, row.get("ctorch_ns") or 0
    if kind == "ratio" and f > 0:
        r = c / f
        return ("ratio %.3f, target <= %.2f" % (r, target), r <= target)
    if kind == "diff_ns":
        d = c - f
        return ("%+.1f ns vs C++, target within %.0f ns" % (d, target), d <= target)
    if kind == "abs_ns":
        return ("%s, target <= %s" % (fmt_ns(c), fmt_ns(target)), c <= target)
    return (None, None)


def target_text(row):
    kind, t = row.get("target_kind", ""), row.get("target", 0)
    if kind == "ratio":
        return "<= %.2fx" % t
    if kind == "diff_ns":
        return "<= +%.0f ns" % t
    if kind == "abs_ns":
        return "<= %s" % fmt_ns(t)
    return ""


class Report:
    def __init__(self):
        self.lines = []
        self.targets = []  # (key, label, text, met)
        self.ratios = []   # (section, label, ratio, target) for the chart

    def p(self, s=""):
        self.lines.append(s)

    def target(self, key, label, text, met):
        self.targets.append((key, label, text, met))


def reflow(text):
    """A cause's text as Markdown: paragraphs (blank-line separated) and "- "
    list items each on one line."""
    out = []
    for para in text.strip().split("\n\n"):
        items = []
        for line in para.splitlines():
            if line.lstrip().startswith("- ") or not items:
                items.append(line.strip())
            else:
                items[-1] += " " + line.strip()
        out.append("\n".join(" ".join(i.split()) if not i.startswith("- ")
                             else "- " + " ".join(i[2:].split()) for i in items))
    return "\n\n".join(out)


def load_causes(path):
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError:
        return {}


def causes_for(key, causes):
    return [cid for cid, c in causes.items()
            if any(fnmatch.fnmatchcase(key, pat) for pat in c.get("rows", []))]


def merge_cpp(out):
    """The C++ programs' rows and extra objects, in group order."""
    ov = {"rows": [], "extra": []}
    for g in CPP_GROUPS:
        d = load_json(os.path.join(out, g + ".json"))
        if d:
            ov["rows"] += d.get("rows", [])
            ov["extra"] += d.get("extra", [])
            ov.setdefault("torch_version", d.get("torch_version"))
            ov.setdefault("ctorch_version", d.get("ctorch_version"))
    return ov


def cpp_groups(rep, ov):
    rows = ov.get("rows", [])
    for grp in ("call", "model", "train", "custom"):
        rs = [r for r in rows if r["group"] == grp]
        rep.p("## %s" % GROUP_TITLES[grp])
        rep.p()
        if not rs:
            rep.p("_not run_")
            rep.p()
            continue
        rep.p("| case | C++ floor | median | ctorch | median | ratio | target | |")
        rep.p("|---|---|---:|---|---:|---:|---|---|")
        for r in rs:
            f, c = r["floor_ns"], r["ctorch_ns"]
            ratio = "%.3f" % (c / f) if f else "-"
            text, met = verdict(r)
            mark = "" if met is None else ("met" if met else "**missed**")
            rep.p("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["name"], r["floor_name"].replace("|", "\\|"), fmt_ns(f) if f else "-",
                r["ctorch_name"], fmt_ns(c), ratio, target_text(r), mark))
            key = "%s/%s: %s" % (grp, r["name"], r["ctorch_name"])
            if met is not None:
                rep.target(key, "%s: %s" % (r["name"], r["ctorch_name"]), text, met)
            if f and r.get("target_kind", "") in ("", "ratio"):
                rep.ratios.append(("C vs C++", "%s: %s" % (r["name"], r["ctorch_name"]), c / f,
                                   r["target"] if r.get("target_kind") == "ratio" else None))
        notes = sorted({r["note"] for r in rs if r.get("note")})
        if notes:
            rep.p()
            for n in notes:
                rep.p("_%s_" % n)
        rep.p()


def cpp_floor(ov, name):
    for r in ov.get("rows", []):
        if r["name"] == name:
            return r["floor_ns"]
    return None


def build_type(build):
    """CMAKE_BUILD_TYPE of the measured build tree, as its CMakeCache.txt says."""
    m = re.search(r"^CMAKE_BUILD_TYPE:\w+=(.*)$", read(os.path.join(build, "CMakeCache.txt")), re.M)
    return (m.group(1) or "default (no CMAKE_BUILD_TYPE)") if m else "unknown"


def different_ops(note):
    """Whether a row's note says its torch side runs another call than ctorch's
    ("vs torch x + y", "torch: eager nn.Module ...")."""
    return bool(re.match(r"(vs |torch column|ctorch: .*; torch: )", note or ""))


def pattern_target(name, table):
    for pat, t in table:
        if fnmatch.fnmatchcase(name, pat):
            return t
    return None


def python_group(rep, py, ov):
    rep.p("## 3. From Python (ctypes binding vs PyTorch's Python, same process)")
    rep.p()
    if not py:
        rep.p("_skipped: no python.json (bench/bench_python.py missing or failed; see the log)_")
        rep.p()
        return
    add_floor = cpp_floor(ov, "aten::add 4 floats")
    rn_floor = cpp_floor(ov, "traced resnet18 1x3x224x224")
    rep.p("| group | case | ctorch (Python) | PyTorch (Python) | ratio | C++ floor | target | |")
    rep.p("|---|---|---:|---:|---:|---:|---|---|")
    for r in py.get("rows", []):
        name = r["name"]
        c, t = r["ctorch_s"] * 1e9, (r.get("torch_s") or 0) * 1e9
        ratio = c / t if t else None
        floor = ""
        if "add" in name and r["group"] == "small" and add_floor:
            floor = fmt_ns(add_floor) + " (torch::add)"
        if "resnet18" in name and rn_floor:
            floor = fmt_ns(rn_floor) + " (Module::forward)"
        tgt = r.get("target") or pattern_target(name, PY_TARGETS)
        met = None
        if tgt and ratio is not None:
            met = ratio <= tgt
            rep.target("python/" + name, "Python: " + name, "ratio %.3f, target <= %.2f" % (ratio, tgt), met)
        if ratio is not None and r["group"] != "lifetime":
            rep.ratios.append(("Python vs PyTorch", name, ratio, tgt,
                               different_ops(r.get("note", ""))))
        rep.p("| %s | %s%s | %s | %s | %s | %s | %s | %s |" % (
            r["group"], name, (" (%s)" % r["note"]) if r.get("note") else "", fmt_ns(c),
            fmt_ns(t) if t else "-", "%.2fx" % ratio if ratio else "-", floor,
            "<= %.2fx" % tgt if tgt else "", "" if met is None else ("met" if met else "**missed**")))
    m = py.get("meta", {})
    rep.p()
    rep.p("_Python %s, torch %s, numpy %s; load average during the run %s_" % (
        m.get("python", "?"), m.get("torch", "?"), m.get("numpy", "?"),
        "/".join("%.2f" % x for x in m.get("loadavg", [])) or "?"))
    rep.p()


def julia_group(rep, jl, ov):
    rep.p("## 4. From Julia (CTorch.jl vs the C++ floor)")
    rep.p()
    if not jl:
        rep.p("_skipped: no julia.json (julia missing or the benchmark failed; see the log)_")
        rep.p()
        return
    add_floor = cpp_floor(ov, "aten::add 4 floats")
    mlp_floor = cpp_floor(ov, "scripted MLP 8x64->128->10")
    rep.p("| case | Julia median | C++ floor | ratio | target | |")
    rep.p("|---|---:|---:|---:|---|---|")
    for r in jl.get("results", []):
        name, ns = r["name"], r["median_ns"]
        floor, label = None, ""
        if r.get("floor_ns"):  # measured by the Julia benchmark in the same process
            floor, label = r["floor_ns"], r.get("floor_name", "C++, same process")
        elif name.startswith(("add 4 floats", "neg 4 floats")):
            floor, label = add_floor, "torch::add, C++ program"
        elif name.startswith("model forward (MLP"):
            floor, label = mlp_floor, "Module::forward, C++ program"
        ratio = ns / floor if floor else None
        tgt = r.get("target") or pattern_target(name, JL_TARGETS)
        met = None
        if tgt and ratio is not None:
            met = ratio <= tgt
            rep.target("julia/" + name, "Julia: " + name, "ratio %.3f vs %s, target <= %.2f" % (
                ratio, label, tgt), met)
        if ratio is not None:
            rep.ratios.append(("Julia vs C++", name, ratio, tgt))
        rep.p("| %s | %s | %s | %s | %s | %s |" % (
            name, fmt_ns(ns), (fmt_ns(floor) + " (" + label + ")") if floor else "-",
            "%.2fx" % ratio if ratio else "-", "<= %.2fx" % tgt if tgt else "",
            "" if met is None else ("met" if met else "**missed**")))
    rep.p()
    rep.p("_Julia %s._" % jl.get("julia_version", "?"))
    rep.p()


def scale_group(rep, ov):
    rep.p("## 5. Zero-copy scaling (per call, median)")
    rep.p()
    rows = [e for e in (ov or {}).get("extra", []) if e.get("kind") == "scale"]
    if not rows:
        rep.p("_not run_")
        rep.p()
        return
    rep.p("| size | ct_tensor_from_blob + free | ct_tensor_to_dlpack + deleter | torch::from_blob | memcpy | at::clone |")
    rep.p("|---|---:|---:|---:|---:|---:|")
    for e in rows:
        rep.p("| %s | %s | %s | %s | %s | %s |" % (
            e["size"], fmt_ns(e["from_blob_ns"]), fmt_ns(e["to_dlpack_ns"]),
            fmt_ns(e["torch_from_blob_ns"]), fmt_ns(e["memcpy_ns"]), fmt_ns(e["clone_ns"])))
    small, big = rows[0], rows[-1]
    for key, label in (("from_blob_ns", "from_blob wrap"), ("to_dlpack_ns", "DLPack export")):
        growth = big[key] / small[key] if small[key] else 0
        ok = growth <= 1.5
        rep.target("scale/%s %s" % (label, big["size"]), "Zero-copy: %s %s vs %s" % (label, big["size"], small["size"]),
                   "%.2fx the small-buffer cost (copy: %.0fx)" % (
                       growth, big["memcpy_ns"] / small["memcpy_ns"] if small["memcpy_ns"] else 0),
                   ok)
    rep.p()


def memory_group(rep, ov, out):
    rep.p("## 6. Memory")
    rep.p()
    rows = [e for e in (ov or {}).get("extra", []) if e.get("kind") == "memory"]
    if rows:
        rep.p("RSS from /proc/self/statm, after a warm-up, around N create/free cycles:")
        rep.p()
        rep.p("| case | N | RSS before | RSS after | delta | bytes/iteration | time |")
        rep.p("|---|---:|---:|---:|---:|---:|---:|")
        for e in rows:
            d = e["rss_after_kib"] - e["rss_before_kib"]
            per = d * 1024.0 / e["iterations"]
            rep.p("| %s | %d | %d KiB | %d KiB | %+d KiB | %.2f | %.1f s |" % (
                e["name"], e["iterations"], e["rss_before_kib"], e["rss_after_kib"], d, per,
                e["seconds"]))
            # Flat: less than 1 byte per iteration (a leaked handle is >= 16).
            rep.target("memory/" + e["name"], "RSS flat: " + e["name"], "%+d KiB over %d iterations" % (d, e["iterations"]),
                       per < 1.0)
        rep.p()
    # LeakSanitizer.
    lsan = sorted(glob.glob(os.path.join(out, "lsan_*.log")))
    vg = sorted(glob.glob(os.path.join(out, "valgrind_*.log")))
    if lsan:
        lib = "build-asan/libctorch.so"
        when = ""
        if os.path.exists(lib):
            import time
            when = "; its libctorch was built %s UTC by scripts/test.sh, not by this script, " \
                   "and can predate build-bench's" % time.strftime("%Y-%m-%d %H:%M", time.gmtime(os.path.getmtime(lib)))
        rep.p("LeakSanitizer, every C test of the ASan build (build-asan/%s), no suppressions:" % when)
        rep.p()
        rep.p("| test | exit | leak reports | bytes | with a libctorch frame |")
        rep.p("|---|---:|---:|---:|---:|")
        total_ct = 0
        ct_stacks = []
        for path in lsan:
            text = read(path)
            name = os.path.basename(path)[5:-4]
            blocks = re.split(r"\n(?=(?:Direct|Indirect) leak of )", text)
            n = b = nct = 0
            for blk in blocks:
                m = re.match(r"(Direct|Indirect) leak of (\d+) byte", blk)
                if not m:
                    continue
                n += 1
                b += int(m.group(2))
                frames = re.findall(r"^\s+#\d+ .*$", blk, re.M)
                if any("libctorch" in fr or "/src/" in fr and "/work/" in fr for fr in frames):
                    nct += 1
                    ct_stacks.append((name, blk.strip().splitlines()[:8]))
            ex = re.findall(r"exit (\d+)", text)
            total_ct += nct
            rep.p("| %s | %s | %d | %d | %d |" % (name, ex[-1] if ex else "?", n, b, nct))
        rep.p()
        rep.p("_exit 77 = the test skipped itself (a fixture it needs is missing)._")
        rep.p()
        rep.target("leaks/lsan", "LeakSanitizer: leaks with a libctorch frame", "%d" % total_ct,
                   total_ct == 0)
        for name, st in ct_stacks[:5]:
            rep.p("```\n%s: %s\n```" % (name, "\n".join(st)))
    if vg:
        rep.p("valgrind memcheck (--leak-check=full) on C tests of the Release build:")
        rep.p()
        rep.p("| test | exit | definitely lost | indirectly lost | definite records with a libctorch frame |")
        rep.p("|---|---:|---|---|---:|")
        tot = 0
        vg_errors = []
        for path in vg:
            text = read(path)
            name = os.path.basename(path)[9:-4]
            dl = re.search(r"definitely lost: ([\d,]+ bytes in [\d,]+ blocks)", text)
            il = re.search(r"indirectly lost: ([\d,]+ bytes in [\d,]+ blocks)", text)
            recs = re.split(r"\n==\d+== \n", text)
            nct = sum(1 for r in recs if "definitely lost in loss record" in r and "libctorch" in r)
            tot += nct
            ex = re.findall(r"exit (\d+)", text)
            es = re.search(r"ERROR SUMMARY: (\d+) errors", text)
            where = set()
            for m in re.finditer(r"==\d+== (?!HEAP|LEAK|ERROR)([A-Z][^\n]*)\n==\d+==    at [^\n]*\n==\d+==    by [^(\n]*\(in ([^)]+)\)", text):
                where.add("%s (%s)" % (m.group(1).split("(")[0].strip(), os.path.basename(m.group(2))))
            if es and int(es.group(1)):
                vg_errors.append("%s: %s non-leak error(s): %s" % (name, es.group(1), "; ".join(sorted(where)) or "see log"))
            rep.p("| %s | %s | %s | %s | %d |" % (name, ex[-1] if ex else "?",
                                                  dl.group(1) if dl else ("0 (no leaks)" if "All heap blocks were freed" in text or "no leaks are possible" in text else "?"),
                                                  il.group(1) if il else "-", nct))
        rep.p()
        for e in vg_errors:
            rep.p("- %s" % e)
        if vg_errors:
            rep.p()
            rep.p("_The memcpy overlap reports come from libcpuinfo (LibTorch's CPU detection, on "
                  "first dispatch) copying a buffer onto itself; they are not from ctorch._")
            rep.p()
        rep.target("leaks/valgrind", "valgrind: definitely-lost records with a libctorch frame",
                   "%d" % tot, tot == 0)
    if not lsan and not vg:
        rep.p("_leak check skipped (no build-asan/ tests and no valgrind)_")
    rep.p()


SECTION_COLORS = {"C vs C++": "#4C72B0", "Julia vs C++": "#55A868",
                  "Python vs PyTorch": "#DD8452", "C vs C++ (LibTorch 2.6)": "#8172B3"}


def chart(path, ratios):
    """One horizontal bar chart of every ratio row, log scale, 1.0 marked, targets ticked;
    rows grouped by reference (the C++ floor, PyTorch's Python, the LibTorch 2.6 leg) with a
    legend; labels wrapped, not cut; rows whose two sides run different operations hatched."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        return "skipped: python3-matplotlib is not installed"
    if not ratios:
        return "skipped: no ratio rows"
    import textwrap
    order = list(SECTION_COLORS)
    rows = sorted(ratios, key=lambda r: order.index(r[0]) if r[0] in order else len(order))
    labels = ["\n".join(textwrap.wrap(name + (" [different ops]" if len(r) > 4 and r[4] else ""),
                                       62)) for r in rows for name in [r[1]]]
    heights = [1 + 0.55 * (l.count("\n")) for l in labels]
    ys, y = [], 0.0
    prev = None
    for h, r in zip(heights, rows):
        if prev is not None and r[0] != prev:
            y += 0.8  # a gap between groups
        ys.append(y + h / 2)
        y += h
        prev = r[0]
    ys = [y - v for v in ys]  # first row on top
    fig, ax = plt.subplots(figsize=(11, 0.3 * y + 1.8))
    rs = [r[2] for r in rows]
    bars = ax.barh(ys, [v - 1.0 for v in rs], left=1.0, height=0.8,
                   color=[SECTION_COLORS.get(r[0], "gray") for r in rows])
    for b, r in zip(bars, rows):
        if len(r) > 4 and r[4]:
            b.set_hatch("///")
            b.set_edgecolor("white")
    for yy, r in zip(ys, rows):
        v, t = r[2], r[3]
        if t:
            ax.plot([t, t], [yy - 0.4, yy + 0.4], color="black", lw=1.5)
        ax.text(v * 1.02 if v >= 1 else v / 1.02, yy, "%.2f" % v, va="center", fontsize=7,
                ha="left" if v >= 1 else "right")
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xscale("log")
    lo = min(rs + [r[3] for r in rows if r[3]] + [1.0])
    hi = max(rs + [r[3] for r in rows if r[3]] + [1.0])
    ax.set_xlim(lo / 1.15, hi * 1.3)
    ax.set_ylim(-0.2, y + 0.2)
    from matplotlib.ticker import FuncFormatter, LogLocator
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_minor_locator(LogLocator(base=10, subs=(1.5, 3.0, 4.0, 7.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: "%g" % v))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: "%g" % v))
    ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel("time ratio (log scale): 1.0 = as fast as the reference; black tick = target")
    legend = [Patch(color=c, label=k) for k, c in SECTION_COLORS.items()
              if any(r[0] == k for r in rows)]
    legend.append(Patch(facecolor="gray", hatch="///", edgecolor="white",
                        label="the two sides run different operations"))
    ax.set_title("ctorch / reference, grouped by reference", fontsize=9, pad=22)
    ax.legend(handles=legend, fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0),
              ncol=len(legend), frameon=False)  # above the bars, never over them
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None} if path.endswith(".svg") else None)
    plt.close(fig)
    return None


def package_group(rep, out):
    """AOTInductor packages on the LibTorch 2.6 leg: bench_package's rows
    (package.txt, from bench/run.sh --lt2)."""
    rows = [l for l in read(os.path.join(out, "package.txt")).splitlines() if l.startswith("| .pt2")]
    if not rows:
        return
    rep.p("## AOTInductor packages (.pt2) on the LibTorch 2.6 leg")
    rep.p()
    rep.p("ct_package_run against torch::inductor::AOTIModelPackageLoader::run in one process "
          "(bench/bench_package.cpp, in the Debian 13 chroot), outputs checked equal first.")
    rep.p()
    rep.p("| package | ctorch | C++ floor | ratio |")
    rep.p("|---|---|---|---|")
    for r in rows:
        rep.p(r)
        cells = [c.strip() for c in r.strip("|").split("|")]
        m = re.search(r"ratio ([0-9.]+)", r)
        if m:
            ratio = float(m.group(1))
            rep.target("package:" + cells[0], "AOTInductor: " + cells[0],
                       "ratio %.3f, target <= 1.02" % ratio, ratio <= 1.02)
            rep.ratios.append(("C vs C++ (LibTorch 2.6)", "AOTInductor " + cells[0], ratio, 1.02))
    rep.p()


DIST_TARGETS = (("all_reduce 64 MiB", 1.05), ("all_reduce 1 KiB", 1.2), ("DDP step", 1.1))


def distributed_group(rep, dist):
    rep.p("## 7. Distributed (2 ranks on loopback, Gloo: ctorch's Python binding vs torch.distributed)")
    rep.p()
    if not dist:
        rep.p("_skipped: no distributed.json (bench/bench_distributed.py, a libctorch with c10d "
              "and /usr/bin/python3 with torch are needed)_")
        rep.p()
        return
    rep.p("| case | ctorch (Python) | torch.distributed | ratio | target | |")
    rep.p("|---|---:|---:|---:|---|---|")
    for name, c in dist.get("ctorch", {}).items():
        t = dist.get("torch", {}).get(name)
        ratio = c / t if t else None
        tgt = next((v for k, v in DIST_TARGETS if name.startswith(k)), None)
        met = None
        if tgt and ratio is not None:
            met = ratio <= tgt
            rep.target("distributed/" + name, "Distributed: " + name,
                       "ratio %.3f, target <= %.2f" % (ratio, tgt), met)
        if ratio is not None:
            rep.ratios.append(("Distributed vs torch.distributed", name, ratio, tgt, False))
        rep.p("| %s | %s | %s | %s | %s | %s |" % (
            name, fmt_ns(c * 1e9), fmt_ns(t * 1e9) if t else "-",
            "%.2fx" % ratio if ratio else "-", "<= %.2fx" % tgt if tgt else "",
            "" if met is None else ("met" if met else "**missed**")))
    rep.p()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="folder with the raw results of bench/run.sh")
    ap.add_argument("results", help="markdown file to write")
    ap.add_argument("--build", default="build-bench")
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--chart", help="also draw the ratios to this SVG or PNG file")
    ap.add_argument("--quick", action="store_true", help="the run was bench/run.sh --quick")
    ap.add_argument("--causes", default=os.path.join(HERE, "causes.toml"),
                    help="explanations keyed by cause (default bench/causes.toml)")
    a = ap.parse_args()
    ov = merge_cpp(a.out)
    py = load_json(os.path.join(a.out, "python.json"))
    jl = load_json(os.path.join(a.out, "julia.json"))
    dist = load_json(os.path.join(a.out, "distributed.json"))
    causes = load_causes(a.causes)

    rep = Report()
    rep.p("# ctorch benchmark results")
    rep.p()
    rep.p("Generated by `bench/run.sh` (see bench/README.md); raw logs and JSON in `%s`. "
          "Figures are medians over interleaved rounds; ratios are ctorch / C++ floor." % a.out)
    rep.p()
    rep.p("| | |")
    rep.p("|---|---|")
    for k, v in machine(a.out, a.build):
        rep.p("| %s | %s |" % (k, v))
    rep.p("| LibTorch | %s (ctorch %s, %s build in `%s/`) |" % (
        ov.get("torch_version") or "?", ov.get("ctorch_version") or "?",
        build_type(a.build), a.build))
    rep.p("| Run | %s |" % ("quick (`--quick`: fewer rounds, noisier)" if a.quick else
                           "full (every round)"))
    if a.seconds:
        rep.p("| Run time | %d s (build included) |" % a.seconds)
    rep.p()
    body = Report()
    cpp_groups(body, ov)
    bc = read(os.path.join(a.out, "bench_c.txt")).strip()
    if bc:
        body.p("<details><summary>Small-op breakdown (bench_c: where the add's time goes)</summary>")
        body.p()
        body.p("```")
        body.p(bc)
        body.p("```")
        body.p()
        body.p("</details>")
        body.p()
    python_group(body, py, ov)
    prof = read(os.path.join(a.out, "python_profile.txt")).strip()
    if prof:
        body.p("<details><summary>Python profile (bench/profile_python.py: the pieces of the "
               "missed Python rows)</summary>")
        body.p()
        body.p("```")
        body.p(prof)
        body.p("```")
        body.p()
        body.p("</details>")
        body.p()
    julia_group(body, jl, ov)
    package_group(body, a.out)
    scale_group(body, ov)
    memory_group(body, ov, a.out)
    distributed_group(body, dist)

    if a.chart:
        why = chart(a.chart, body.ratios)
        if why:
            print("chart " + why, file=sys.stderr)
        else:
            rep.p("![ratios against the C++ floor and PyTorch's Python](%s)" %
                  os.path.relpath(a.chart, os.path.dirname(os.path.abspath(a.results))))
            rep.p()

    rep.p("## Targets")
    rep.p()
    met = sum(1 for t in body.targets if t[3])
    rep.p("%d of %d met." % (met, len(body.targets)))
    rep.p()
    missed_by_cause = {}
    for key, label, text, ok in body.targets:
        line = "- %s — %s: %s" % (label, text, "met" if ok else "**missed**")
        if not ok:
            ids = causes_for(key, causes)
            for cid in ids:
                missed_by_cause.setdefault(cid, []).append(label)
            line += " (why: %s)" % (", ".join("[%s](#%s)" % (causes[c]["title"], c) for c in ids)
                                    if ids else "no cause recorded in bench/causes.toml")
        rep.p(line)
    rep.p()
    if missed_by_cause:
        rep.p("## Why targets are missed")
        rep.p()
        for cid, c in causes.items():
            if cid not in missed_by_cause:
                continue
            rep.p('<a id="%s"></a>' % cid)
            rep.p()
            rep.p("### %s" % c["title"])
            rep.p()
            rep.p(reflow(c["text"]))
            rep.p()
            rep.p("Rows: %s." % "; ".join(missed_by_cause[cid]))
            rep.p()
    rep.lines += body.lines
    with open(a.results, "w") as f:
        f.write("\n".join(rep.lines).rstrip() + "\n")
    print("wrote %s (%d of %d targets met)" % (a.results, met, len(body.targets)))


if __name__ == "__main__":
    sys.exit(main())
