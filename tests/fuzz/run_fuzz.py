#!/usr/bin/env python3
"""Runs the libFuzzer targets of tests/fuzz for a fixed time each.

usage: run_fuzz.py BUILD_DIR [--seconds N] [--models DIR] [--pickles DIR]
                   [--corpus-cache DIR] [target ...]

BUILD_DIR is a build configured with -DCTORCH_FUZZ=ON (clang; see
tests/fuzz/README.md). Each target runs N seconds (default 25), restarting
after every crash until its time is used. A crash whose top frame (below
libc, the C++ runtime, the sanitizer and libFuzzer) is in ctorch -- a ct_*
function, or a file under src/ or tests/fuzz/ -- fails the run. Crashes
inside LibTorch only are reported with their top frames and compared with
tests/fuzz/KNOWN_CRASHES.md; they do not fail the run (ct_module_verify /
ct_pickle_verify are the answer to them). Out-of-memory and timeout reports
are classified the same way. Prints executions, coverage at start and end
and corpus size per target. Targets run two at a time (CTORCH_FUZZ_JOBS).

A target with a dictionary (tests/fuzz/<target>.dict, libFuzzer's -dict: the
pickle opcodes and torch.save globals for pickle_load) gets it. With
--corpus-cache DIR (or CTORCH_FUZZ_CACHE), each target's corpus starts from
DIR/<target> and what it grew is copied back, so that repeated runs (CI on the
same machine) keep searching from where the last one stopped.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
TARGETS = ["module_load", "pickle_load", "dlpack", "op_register", "script_compile", "op_call"]
RUNTIME = re.compile(
    r"(libc\.so|libstdc\+\+|libgcc_s|ld-linux|libpthread|compiler-rt|sanitizer|"
    r"__asan|__sanitizer|__interceptor|fuzzer::|__cxa_|__gxx_|std::terminate|"
    r"_Unwind|abort|raise|__pthread_kill|gsignal|"
    r"libclang_rt|asan_|ubsan)")
FRAME = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+ in (.*)$")


def frames(log):
    """Frames of the first stack trace in a libFuzzer/ASan log."""
    out = []
    for line in log.splitlines():
        m = FRAME.match(line)
        if m:
            if m.group(1) == "0" and out:
                break
            out.append(m.group(2).strip())
    return out


def is_ctorch(frame):
    return (re.match(r"ct_\w+[ (]", frame + " ") is not None or "ct::" in frame
            or "/src/" in frame and SRC in frame or "/tests/fuzz/" in frame)


def classify(log):
    fr = frames(log)
    kind = "crash"
    if "out-of-memory" in log or "malloc limit" in log:
        kind = "out-of-memory"
    elif "ALARM: working on the last Unit" in log or "timeout after" in log:
        kind = "timeout"
    top = [f for f in fr if not RUNTIME.search(f)]
    first = top[0] if top else (fr[0] if fr else "(no stack)")
    # The crash is ctorch's when ctorch's code is the innermost non-runtime
    # frame; LibTorch header code inlined into ctorch (an IValue copy, a
    # Dict insert: frames in /usr/include) counts as the ctorch code it is in.
    own = [f for f in top if "/usr/include/" not in f] or top
    owner = "ctorch" if own and is_ctorch(own[0]) else "libtorch"
    if kind == "out-of-memory":
        owner = "libtorch" if not (own and is_ctorch(own[0])) else "ctorch"
    return kind, owner, first, top[:6]


def ensure_seeds(target, corpus, models, pickles):
    os.makedirs(corpus, exist_ok=True)
    seed_dir = os.path.join(HERE, "corpus", target)
    if os.path.isdir(seed_dir):
        for f in os.listdir(seed_dir):
            shutil.copy(os.path.join(seed_dir, f), corpus)
    src = {"module_load": models, "pickle_load": pickles}.get(target)
    if src and os.path.isdir(src):
        for f in sorted(os.listdir(src)):
            p = os.path.join(src, f)
            if os.path.isfile(p) and os.path.getsize(p) < (4 << 20):
                shutil.copy(p, corpus)


def copy_new(src, dst):
    """Copies files of src that dst lacks (libFuzzer names them by content
    hash); returns how many."""
    if not os.path.isdir(src):
        return 0
    os.makedirs(dst, exist_ok=True)
    have = set(os.listdir(dst))
    n = 0
    for f in os.listdir(src):
        p = os.path.join(src, f)
        if f not in have and os.path.isfile(p):
            shutil.copy(p, dst)
            n += 1
    return n


def known_signatures():
    path = os.path.join(HERE, "KNOWN_CRASHES.md")
    if not os.path.exists(path):
        return []
    return re.findall(r"^Signature: `(.*)`", open(path).read(), re.M)


def fuzz_target(t, a, build, work, models, pickles, env, known):
    """Runs one target; returns (report text, whether it failed)."""
    out = []
    failed = False
    exe = os.path.join(build, "fuzz_" + t)
    if not os.path.exists(exe):
        out.append("fuzz: %s: %s not built" % (t, exe))
        return "\n".join(out), True
    corpus = os.path.join(work, t, "corpus")
    arts = os.path.join(work, t, "artifacts") + "/"
    os.makedirs(arts, exist_ok=True)
    ensure_seeds(t, corpus, models, pickles)
    cache = os.path.join(a.corpus_cache, t) if a.corpus_cache else ""
    cached = copy_new(cache, corpus) if cache else 0
    extra = []
    dict_path = os.path.join(HERE, t + ".dict")
    if os.path.exists(dict_path):
        extra.append("-dict=" + dict_path)
    cov = []
    deadline = time.time() + a.seconds
    execs = 0
    found = []
    while True:
        left = int(deadline - time.time())
        if left < 1:
            break
        # A unit slower than the budget is reported, not waited for.
        cmd = [exe, corpus, "-max_total_time=%d" % left,
               "-timeout=%d" % max(5, min(20, a.seconds)),
               "-rss_limit_mb=4096", "-print_final_stats=1", "-artifact_prefix=" + arts,
               "-max_len=65536"] + extra
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, errors="replace")
        log = p.stdout
        cov += [int(c) for c in re.findall(r"\bcov: (\d+)", log)]
        m = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)
        if m:
            execs += int(m[-1])
        else:
            m = re.findall(r"#(\d+)\s", log)
            execs += int(m[-1]) if m else 0
        if p.returncode == 0:
            break
        kind, owner, first, top = classify(log)
        art = re.findall(r"Test unit written to (\S+)", log)
        found.append((kind, owner, first))
        status = "known" if any(s in first for s in known) else "new"
        out.append("fuzz: %s: %s in %s frame: %s [%s]%s" %
                   (t, kind, owner, first, status, (" input " + art[-1]) if art else ""))
        for f in top:
            out.append("    " + f)
        if owner == "ctorch":
            failed = True
            out.append(log[-6000:])
            break
    saved = copy_new(corpus, cache) if cache else 0
    out.append("fuzz: %s: %d executions in %d s, coverage %s -> %s, corpus %d inputs (%d from "
               "the cache, %d new saved to it), %d crash reports (%d in ctorch)" %
               (t, execs, a.seconds, cov[0] if cov else "?", max(cov) if cov else "?",
                len(os.listdir(corpus)), cached, saved, len(found),
                sum(1 for f in found if f[1] == "ctorch")))
    return "\n".join(out), failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("CTORCH_FUZZ_SECONDS", 25)))
    ap.add_argument("--models", default=None)
    ap.add_argument("--pickles", default=None)
    ap.add_argument("--corpus-cache", default=os.environ.get("CTORCH_FUZZ_CACHE", ""))
    ap.add_argument("targets", nargs="*")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    models = a.models or os.path.join(build, "models")
    pickles = a.pickles or os.path.join(build, "pickles")
    work = os.path.join(build, "fuzz-work")
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS",
                   "allocator_may_return_null=1:detect_leaks=0:handle_abort=1:"
                   "detect_stack_use_after_return=0")
    env.setdefault("OMP_NUM_THREADS", "1")
    for sym in ("/usr/bin/llvm-symbolizer-14", "/usr/bin/llvm-symbolizer"):
        if os.path.exists(sym):
            env.setdefault("ASAN_SYMBOLIZER_PATH", sym)
            break
    known = known_signatures()
    failed = False
    # Two targets at a time (CTORCH_FUZZ_JOBS): each is one process, and CI
    # has the cores; reports are printed in the targets' order.
    jobs = max(1, int(os.environ.get("CTORCH_FUZZ_JOBS", min(2, os.cpu_count() or 1))))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        runs = [pool.submit(fuzz_target, t, a, build, work, models, pickles, env, known)
                for t in a.targets or TARGETS]
        for r in runs:
            text, bad = r.result()
            print(text, flush=True)
            failed = failed or bad
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
