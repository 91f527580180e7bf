#!/usr/bin/python3
"""Runs the code blocks of the project's documents that are marked as runnable.

Every fenced block in a covered document says whether it runs: its info string is
the language followed by `run` or `norun` (```c run, ```python run, ```julia run,
```sh run, ```sh norun). A block with neither is an error. The rules are in
CONTRIBUTING.md ("Code blocks in the documents").

The runnable blocks of one document make one script, run in order by bash with
`set -eu` in a fresh copy of the repository's files (so `cd`, `export` and a
sourced venv carry over from one block to the next):
  sh/bash  the text itself;
  c        compiled with `cc -std=c99 -Wall -Werror ... $(pkg-config --cflags --libs
           ctorch)` against an installed prefix (made from the build tree, on
           PKG_CONFIG_PATH), then run; a block without `main(` is wrapped in one
           (its #include lines go first, <stdio.h>, <stdlib.h>, <string.h> are given);
  python   `python3 FILE` (python3 is /usr/bin/python3 unless a block activated a venv);
  julia    `scripts/julia FILE` (the documented start line).

A block that cannot run in this build (a libctorch without Gloo, say) prints a line
`skipped: no FEATURE: why` and ends successfully; such skips are counted and reported
per document, and `--require FEATURE` (given by CMake for what the build has) turns a
skip for FEATURE into a failure, so a block cannot pass by skipping where it should run.

  run_docs.py --check-marks DOC...                  fail on unmarked blocks
  run_docs.py --build BUILD --work DIR [--require FEATURE]... DOC   run DOC's runnable blocks
"""
import argparse
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

FENCE = re.compile(r"^( {0,3})(`{3,})\s*([A-Za-z0-9_+-]*)\s*(.*)$")
LANGS = {"c", "python", "julia", "sh", "bash"}
SKIP = re.compile(r"^skipped: no ([A-Za-z0-9_.-]+)\b:?\s*(.*)$")
BLOCK_START = re.compile(r"^--- (\S+) \(\w+\)$")


class Block:
    def __init__(self, doc, line, lang, tags, text):
        self.doc, self.line, self.lang, self.tags, self.text = doc, line, lang, tags, text

    @property
    def where(self):
        return f"{self.doc}:{self.line}"


def blocks(path, display):
    lines = pathlib.Path(path).read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang, tags = m.group(1), m.group(2), m.group(3), m.group(4).split()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not re.fullmatch(fence + "`*", lines[i].strip()):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        yield Block(display, start, lang, tags, "\n".join(body) + "\n")


def check_marks(docs, root):
    bad = []
    for d in docs:
        for b in blocks(d, os.path.relpath(d, root)):
            run, norun = "run" in b.tags, "norun" in b.tags
            if run == norun:
                bad.append(f"{b.where}: block ```{b.lang} {' '.join(b.tags)} must say `run` or `norun`")
            elif run and b.lang not in LANGS:
                bad.append(f"{b.where}: cannot run a ```{b.lang} block (runnable: {sorted(LANGS)})")
    return bad


def c_source(text):
    if re.search(r"\bmain\s*\(", text):
        return text
    inc = [l for l in text.splitlines() if l.startswith("#include")]
    body = [l for l in text.splitlines() if not l.startswith("#include")]
    return "\n".join(["#include <stdio.h>", "#include <stdlib.h>", "#include <string.h>"] + inc +
                     ["int main(void) {"] + ["  " + l for l in body] + ["  return 0;", "}", ""])


def script_for(doc_blocks, blockdir, src):
    out = ["set -eu", "ctorch_doc_block=start",
           "trap 'rc=$?; [ $rc -eq 0 ] || echo \"docs: block at $ctorch_doc_block failed (exit $rc)\" >&2' EXIT"]
    for n, b in enumerate(doc_blocks):
        out.append(f"ctorch_doc_block={shlex.quote(b.where)}")
        out.append(f"echo {shlex.quote('--- ' + b.where + ' (' + b.lang + ')')} >&2")
        if b.lang in ("sh", "bash"):
            out.append(b.text)
            continue
        ext = {"c": "c", "python": "py", "julia": "jl"}[b.lang]
        f = blockdir / f"block{n}_{b.line}.{ext}"
        f.write_text(c_source(b.text) if b.lang == "c" else b.text)
        q = shlex.quote(str(f))
        if b.lang == "c":
            exe = shlex.quote(str(f.with_suffix("")))
            out.append(f"cc -std=c99 -Wall -Werror -o {exe} {q} $(pkg-config --cflags --libs ctorch) && {exe}")
        elif b.lang == "python":
            out.append(f"python3 {q}")
        else:
            out.append(f"{shlex.quote(str(src / 'scripts' / 'julia'))} {q}")
    out.append("ctorch_doc_block=end")
    return "\n".join(out) + "\n"


def copy_sources(root, dest):
    """The repository's files (tracked and untracked-but-not-ignored), no build trees."""
    try:
        names = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "-co", "--exclude-standard"],
                               check=True, capture_output=True).stdout.split(b"\0")
    except (OSError, subprocess.CalledProcessError):
        names = None
    if names is None:
        shutil.copytree(root, dest, ignore=shutil.ignore_patterns("build*", ".git"))
        return
    for n in names:
        if not n:
            continue
        s, d = root / os.fsdecode(n), dest / os.fsdecode(n)
        if s.is_file():
            d.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(s, d)


def run_script(script, src, env):
    """Runs one document's script, passing its output through; returns the exit
    status and the skips its blocks printed (block, feature, why)."""
    p = subprocess.Popen(["bash", str(script)], cwd=src, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, errors="replace")
    where, skips = "?", []
    for line in p.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        m = BLOCK_START.match(line.rstrip("\n"))
        if m:
            where = m.group(1)
        m = SKIP.match(line.rstrip("\n"))
        if m and (where, m.group(1)) not in [(w, f) for w, f, _ in skips]:  # once per block
            skips.append((where, m.group(1), m.group(2)))
    return p.wait(), skips


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("docs", nargs="+", help="markdown files")
    ap.add_argument("--check-marks", action="store_true", help="only check that every block is marked")
    ap.add_argument("--build", help="build tree to install into the scratch prefix")
    ap.add_argument("--work", help="scratch directory (emptied first)")
    ap.add_argument("--require", action="append", default=[], metavar="FEATURE",
                    help="fail when a block skips for lack of FEATURE (the build has it)")
    ap.add_argument("--torchrun", help="the torchrun of the torch this build is linked against "
                    "(a PyPI venv's): first on the blocks' PATH, as `torchrun` (else the system's)")
    ap.add_argument("--source", default=str(pathlib.Path(__file__).resolve().parents[2]),
                    help="repository root (default: this checkout)")
    a = ap.parse_args()
    root = pathlib.Path(a.source).resolve()
    bad = check_marks(a.docs, root)
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    if a.check_marks:
        print(f"docs: every block of {len(a.docs)} document(s) says run or norun")
        return 0
    if not (a.build and a.work):
        ap.error("--build and --work are needed to run blocks")
    work = pathlib.Path(a.work).resolve()
    shutil.rmtree(work, ignore_errors=True)
    (work / "blocks").mkdir(parents=True)
    prefix = work / "prefix"
    subprocess.run(["cmake", "--install", a.build, "--prefix", str(prefix)], check=True,
                   stdout=subprocess.DEVNULL)
    pcdir = next(prefix.glob("lib*/**/pkgconfig"))
    env = dict(os.environ)
    path = [str(prefix / "bin"), "/usr/bin", "/bin"]
    if a.torchrun:
        # torch's rendezvous store speaks one torch version's protocol: ranks linked against
        # a PyPI torch meet that torch's torchrun, not Debian's (its 1.13 server resets them)
        tools = work / "tools"
        tools.mkdir()
        (tools / "torchrun").symlink_to(os.path.abspath(a.torchrun))
        path.insert(0, str(tools))
    env.update(PKG_CONFIG_PATH=str(pcdir), LD_LIBRARY_PATH=str(pcdir.parent),
               PATH=os.pathsep.join(path), CTORCH_PREFIX=str(prefix))
    for k in ("CTORCH_LIBRARY", "PYTHONPATH", "VIRTUAL_ENV", "JULIA_LOAD_PATH", "JULIA_PROJECT"):
        env.pop(k, None)
    failed = skipped = 0
    for d in a.docs:
        display = os.path.relpath(pathlib.Path(d).resolve(), root)
        runnable = [b for b in blocks(d, display) if "run" in b.tags]
        if not runnable:
            # Nothing was run, so nothing passed: reported as skipped (exit 77)
            # unless another document on the command line ran.
            print(f"docs: {display}: no runnable blocks: nothing to run")
            skipped += 1
            continue
        src = work / ("src-" + re.sub(r"[^A-Za-z0-9]+", "_", display))
        copy_sources(root, src)
        blockdir = work / "blocks" / src.name
        blockdir.mkdir()
        script = blockdir / "doc.sh"
        script.write_text(script_for(runnable, blockdir, src))
        rc, skips = run_script(script, src, env)
        print(f"docs: {display}: {len(runnable)} runnable block(s) {'passed' if rc == 0 else 'FAILED'}, "
              f"{len(skips)} skipped")
        for where, feature, why in skips:
            bad = feature in a.require
            print(f"docs: {where}: skipped for lack of {feature}"
                  f"{' although this build has it: FAILED' if bad else ''}{': ' + why if why else ''}")
            failed += bad
        failed += rc != 0
    if failed:
        return 1
    return 77 if skipped == len(a.docs) else 0


if __name__ == "__main__":
    sys.exit(main())
