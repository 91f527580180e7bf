#!/usr/bin/python3
"""Every aten::/prim:: operator on numbers, strings and lists, called by name with boundary
values; fails on any crash or hang (issue 20: "no crash on any input").

  op_sweep.py [--timeout S] [--per-schema N] [NAME_FILTER]

Needs only the ctypes binding (bindings/python; CTORCH_LIBRARY names the library). For each
schema whose arguments are all ints, floats, bools, strings, Scalars or lists of them, up to
N argument combinations (default 400, in a fixed shuffled order) from the values below are
called through ctorch.ops. The calls run in a forked child that reports each call before
making it; a child that dies (a signal) or is silent for S seconds (default 5) is a failure
naming the call, and a new child goes on after it. Errors are fine: only crashes and hangs
count. src/op_guards.cpp holds the guards for everything this found (SIGFPE in integer
division, hangs in str.replace/count/rsplit with empty strings, padding with huge or negative
widths, prim::ReductionSizes with bad axes).
"""
import argparse
import itertools
import os
import random
import re
import resource
import select
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "bindings", "python"))

import ctorch  # noqa: E402
from ctorch import ops as O  # noqa: E402

I64MIN, I64MAX = -2**63, 2**63 - 1
VALUES = {
    "int": [0, -1, 1, 7, I64MIN, I64MAX, 2**40],
    "SymInt": [0, -1, 1, I64MIN, I64MAX],
    "float": [0.0, -1.0, 1.5, float("nan"), float("inf"), -float("inf"), 1e308],
    "bool": [True, False],
    "str": ["", "abc", "a b\tc", " "],
    "int[]": [[], [I64MAX], [-1, 0], [1, 2]],
    "float[]": [[], [float("nan")], [1.0, 2.0]],
    "str[]": [[], ["", "x"]],
    "bool[]": [[], [True]],
    "Scalar": [0, -1, I64MIN, I64MAX, 1.5, float("nan")],
    "number": [0, -1, I64MIN, I64MAX, 1.5],
    "int?": [None, 0, -1, I64MAX, I64MIN],
    "str?": [None, ""],
    "float?": [None, 0.0],
    "complex": [0j, complex(float("inf"), 0)],
}


def argument_types(schema):
    """Types of a schema's arguments ("int", "str?", ...), or None when it takes varargs."""
    inner = schema[schema.index("(") + 1: schema.rindex(") ->")]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch in "(["
        depth -= ch in ")]"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    types = []
    for a in parts:
        if a == "*":
            continue
        if a == "...":
            return None
        t = re.sub(r"\([^()]*\)", "", a.split()[0])  # alias annotations: str(a) -> str
        types.append(t)
    return types


def cases(name_filter, per_schema):
    index = O._build_index()
    out = []
    for ns in ("aten", "prim"):
        for name in sorted(index.get(ns, {})):
            qual = "%s::%s" % (ns, name)
            if name_filter and name_filter not in qual:
                continue
            for overload in sorted(index[ns][name]):
                for schema in O.schemas(qual, overload):
                    types = argument_types(schema)
                    if not types or any(t not in VALUES for t in types):
                        continue
                    combos = list(itertools.product(*[VALUES[t] for t in types]))
                    random.Random(schema).shuffle(combos)
                    out += [(ns, name, overload, c) for c in combos[:per_schema]]
    return out


def call(ns, name, overload, args):
    f = getattr(getattr(O, ns), name)
    return (getattr(f, overload) if overload else f)(*args)


def child(todo, start, w):
    # A runaway allocation fails with an error instead of taking the machine.
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
    for i in range(start, len(todo)):
        os.write(w, b"%d\n" % i)
        try:
            call(*todo[i])
        except Exception:
            pass
    os.write(w, b"done\n")
    os._exit(0)


def run(todo, timeout):
    """The calls that crashed or hung, with what happened."""
    bad, start = [], 0
    while start < len(todo):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            child(todo, start, w)
        os.close(w)
        last, done, buf, hung = start, False, b"", False
        while True:
            ready, _, _ = select.select([r], [], [], timeout)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                hung = True
                break
            data = os.read(r, 65536)
            if not data:
                break
            lines = (buf + data).split(b"\n")
            buf = lines[-1]
            for line in lines[:-1]:
                if line == b"done":
                    done = True
                else:
                    last = int(line)
        os.close(r)
        _, status = os.waitpid(pid, 0)
        if done:
            break
        what = ("no answer in %g s" % timeout if hung else
                "signal %d" % os.WTERMSIG(status) if os.WIFSIGNALED(status) else
                "exit status %d" % os.WEXITSTATUS(status))
        bad.append((what, todo[last]))
        start = last + 1
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--per-schema", type=int, default=400)
    ap.add_argument("name_filter", nargs="?", default="")
    a = ap.parse_args()
    todo = cases(a.name_filter, a.per_schema)
    bad = run(todo, a.timeout)
    schemas = len({(c[0], c[1], c[2]) for c in todo})
    print("op_sweep: %d calls of %d overloads, %d crashed or hung" % (len(todo), schemas, len(bad)))
    for what, (ns, name, overload, args) in bad:
        print("  %s::%s%s%r: %s" % (ns, name, "." + overload if overload else "", args, what))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
