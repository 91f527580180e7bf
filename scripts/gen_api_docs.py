#!/usr/bin/env python3
"""Generates the API reference (docs/api.md) from the comments in include/ctorch.h.

Section banners become headings; each comment block is printed above the
declarations that follow it. Every function the header parser
(scripts/ctorch_header.py) finds must sit under a comment: an undocumented
one stops the generator (and the --check).

  scripts/gen_api_docs.py docs/api.md          write the reference
  scripts/gen_api_docs.py -                    print it
  scripts/gen_api_docs.py --check docs/api.md  exit 1 (with a diff) if it is stale
"""
import argparse
import difflib
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "scripts"))
import ctorch_header  # noqa: E402
parser = argparse.ArgumentParser(
    description=__doc__.splitlines()[0],
    epilog="The header is the source; docs/api.md is never edited by hand.")
parser.add_argument("output", help="file to write (or to compare with --check); - for stdout")
parser.add_argument("--check", action="store_true",
                    help="compare OUTPUT with the generated text instead of writing it")
parser.add_argument("--header", default=str(root / "include" / "ctorch.h"),
                    help="header to read (default: include/ctorch.h of this checkout)")
args = parser.parse_args()
lines = pathlib.Path(args.header).read_text().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith("/* ====="))
out = ["# ctorch API reference", "",
       "Generated from `include/ctorch.h` by `scripts/gen_api_docs.py`; the header is the",
       "source. The conventions at the top of the header apply to every function.", ""]
comment, code = [], []
documented = []  # code blocks that follow a comment
commented = False


def flush_code():
    global code, commented
    while code and not code[-1].strip():
        code.pop()
    if code:
        out.extend(["```c"] + code + ["```", ""])
        if commented:
            documented.append("\n".join(code))
        commented = False
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
            commented = True
        i += 1
        continue
    if s.startswith("#ifdef __cplusplus"):
        break
    if s or code:
        code.append(l)
    i += 1
flush_code()
undocumented = [f.name for f in ctorch_header.parse(args.header).functions
                if not any(re.search(r"\b%s\s*\(" % f.name, block) for block in documented)]
if undocumented:
    sys.exit("functions without a comment in %s: %s" % (args.header, ", ".join(undocumented)))
text = "\n".join(out) + "\n"
if args.check:
    old = sys.stdin.read() if args.output == "-" else pathlib.Path(args.output).read_text()
    if old != text:
        sys.stdout.writelines(difflib.unified_diff(
            old.splitlines(True), text.splitlines(True), args.output, "generated"))
        print(f"{args.output} is stale: run scripts/gen_api_docs.py {args.output}",
              file=sys.stderr)
        sys.exit(1)
elif args.output == "-":
    sys.stdout.write(text)
else:
    pathlib.Path(args.output).write_text(text)
    print("wrote", args.output)
