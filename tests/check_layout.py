#!/usr/bin/env python3
"""The source tree's layout rules (CTest `repo.layout`; any Python 3.8+):
every file under src/ opens with a comment saying what it holds, none is
longer than 600 lines, and each is named in README.md's layout table (by its
own name or its folder's), so one look finds where a function lives.
An optional part (CUDA, AOTInductor packages, distributed) is its
implementation files, a CTORCH_<PART>_SOURCES list in CMakeLists.txt, or one
src/<part>_unavailable.cpp that CMake compiles instead: that file must define
exactly the ct_* functions its part's files define, so that no function is
missing from a build without the part.
Usage: check_layout.py [REPO_ROOT]"""
import pathlib
import re
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
    return out + optional_part_problems(root)


# A function definition at the top level: `type ct_name(args) {`, at the
# start of a line (clang-format puts every definition there).
DEFINITION = re.compile(r"^[A-Za-z_][^\n;{}()#=]*?\b(ct_[a-z0-9_]+)\s*\([^;{}]*\)\s*\{", re.M)


def defined_functions(path):
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", path.read_text(), flags=re.S)
    return set(DEFINITION.findall(text))


def optional_part_problems(root):
    cmake = (root / "CMakeLists.txt").read_text()
    lists = {m.group(1): m.group(2).split()
             for m in re.finditer(r"set\((CTORCH_\w+_SOURCES)\s([^)]*)\)", cmake)}
    out = []
    for stub in sorted((root / "src").glob("*_unavailable.cpp")):
        rel = stub.relative_to(root).as_posix()
        # if(...) <add> ${CTORCH_X_SOURCES}) else() <add> src/x_unavailable.cpp)
        m = re.search(r"\$\{(CTORCH_\w+_SOURCES)\}\)\s*else\(\)\s*[^\n]*\b" + re.escape(rel) + r"\)",
                      cmake)
        if not m or m.group(1) not in lists:
            out.append(f"{rel}: CMakeLists.txt does not compile it as the else() of a "
                       "CTORCH_<PART>_SOURCES list")
            continue
        impl = set()
        for f in lists[m.group(1)]:
            impl |= defined_functions(root / f)
        stubs = defined_functions(stub)
        for name in sorted(impl - stubs):
            out.append(f"{rel}: no {name} (defined in {m.group(1)}: {' '.join(lists[m.group(1)])})")
        for name in sorted(stubs - impl):
            out.append(f"{rel}: defines {name}, which {m.group(1)} does not")
    return out


if __name__ == "__main__":
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1])
    found = problems(root)
    for p in found:
        print(p)
    sys.exit(1 if found else 0)
