#!/usr/bin/env python3
"""Generates docs/api.md from the comments in include/ctorch.h.

Section banners become headings; each comment block is printed above the
declarations that follow it. Run: python3 scripts/gen_api_docs.py [OUTPUT]
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
lines = (root / "include" / "ctorch.h").read_text().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith("/* ====="))
out = ["# ctorch API reference", "",
       "Generated from `include/ctorch.h` by `scripts/gen_api_docs.py`; the header is the",
       "source. The conventions at the top of the header apply to every function.", ""]
comment, code = [], []


def flush_code():
    global code
    while code and not code[-1].strip():
        code.pop()
    if code:
        out.extend(["```c"] + code + ["```", ""])
    code = []


i = start
while i < len(lines):
    l = lines[i]
    s = l.strip()
    if s.startswith("/* ====="):
        i += 1
        continue
    if s.startswith("/*"):
        block = [s]
        while not block[-1].endswith("*/"):
            i += 1
            block.append(lines[i].strip())
        text = "\n".join(block)
        text = re.sub(r"^/\*\s?|\s*\*/$", "", text)
        text = "\n".join(re.sub(r"^\*\s?", "", t) for t in text.splitlines()).strip()
        if len(block) == 1 and lines[i - 1].strip().startswith("/* =====") and \
                i + 1 < len(lines) and lines[i + 1].strip().startswith("/* ====="):
            flush_code()
            out.extend(["## " + text.strip(), ""])
        else:
            flush_code()
            out.extend([text, ""])
        i += 1
        continue
    if s.startswith("#ifdef __cplusplus"):
        break
    if s or code:
        code.append(l)
    i += 1
flush_code()
target = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else root / "docs" / "api.md"
target.write_text("\n".join(out) + "\n")
print("wrote", target)
