#!/usr/bin/env python3
"""The source tree's layout rules (CTest `repo.layout`; any Python 3.8+):
every file under src/ opens with a comment saying what it holds, none is
longer than 600 lines, and each is named in README.md's layout table (by its
own name or its folder's), so one look finds where a function lives.
Usage: check_layout.py [REPO_ROOT]"""
import pathlib
import sys

MAX_LINES = 600


def problems(root):
    readme = (root / "README.md").read_text()
    table = "\n".join(l for l in readme.splitlines() if l.startswith("| `"))
    out = []
    for f in sorted((root / "src").rglob("*")):
        if not f.is_file() or f.suffix not in (".cpp", ".h"):
            continue
        rel = f.relative_to(root).as_posix()
        text = f.read_text()
        n = text.count("\n")
        if n > MAX_LINES:
            out.append(f"{rel}: {n} lines (at most {MAX_LINES}: split it by concern)")
        if not text.startswith("//"):
            out.append(f"{rel}: does not open with a comment saying what it holds")
        folder = f.parent.relative_to(root).as_posix() + "/"
        if f"`{rel}`" not in table and f"`{folder}`" not in table:
            out.append(f"{rel}: not in README.md's layout table")
    return out


if __name__ == "__main__":
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1])
    found = problems(root)
    for p in found:
        print(p)
    sys.exit(1 if found else 0)
