"""The one parser of include/ctorch.h: its functions (return type, name, parameters) and its
integer constants (#define CT_* and enum members), in header order.

Used by scripts/gen_bindings.py (the Python and Julia binding tables), scripts/gen_api_docs.py
(every function documented), tests/abuse/gen_abuse.py and the bindings' tests; the Julia test
runs it as a program (one "function NAME" or "constant NAME VALUE" line each). Standard library
only.

    import ctorch_header
    h = ctorch_header.parse("include/ctorch.h")
    h.functions[0]  ->  Function(ret='const char *', name='ct_version', params=[])
    h.constants     ->  [('CT_OK', 0), ...]
    h.handles       ->  ['ct_tensor', 'ct_value', ...]
"""
import re
import sys
from typing import List, NamedTuple, Tuple


class Param(NamedTuple):
    type: str  # normalized C type, e.g. "const ct_tensor * const *"
    name: str


class Function(NamedTuple):
    ret: str
    name: str
    params: List[Param]


class Header(NamedTuple):
    functions: List[Function]
    constants: List[Tuple[str, int]]
    handles: List[str]  # the opaque handle types ("ct_tensor", ...): `typedef struct X X;`


def normalize(ty: str) -> str:
    """One spelling per C type: its words and stars separated by single spaces
    ("const ct_tensor * const *")."""
    return " ".join(re.findall(r"\w+|\*", ty))


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _int(expr: str):
    expr = expr.strip()
    if re.fullmatch(r"\(?-?\s*(0x[0-9a-fA-F]+|\d+)[uUlL]*\)?", expr):
        return int(expr.strip("()").rstrip("uUlL").replace(" ", ""), 0)
    return None


def parse(path: str) -> Header:
    return parse_text(open(path).read())


def parse_text(raw: str) -> Header:
    """parse() of a header's text."""
    text = _strip_comments(raw)
    functions = []
    code = re.sub(r"^\s*#.*$", " ", text, flags=re.M)  # no preprocessor lines
    for m in re.finditer(r"CT_API\s+([^;{]*?)\b(ct_\w+)\s*\(([^)]*)\)\s*;", code):
        params = []
        plist = " ".join(m.group(3).split())
        if plist and plist != "void":
            for p in plist.split(","):
                pm = re.match(r"^(.*?)(\w+)$", p.strip())
                params.append(Param(normalize(pm.group(1)), pm.group(2)))
        functions.append(Function(normalize(m.group(1)), m.group(2), params))
    constants = []
    for m in re.finditer(r"^\s*#define\s+((?:CT|CTORCH)_\w+)\s+([^\n]+)$", text, flags=re.M):
        v = _int(m.group(2))
        if v is not None:
            constants.append((m.group(1), v))
    for m in re.finditer(r"typedef\s+enum\s*\w*\s*\{([^}]*)\}", text):
        nxt = 0
        for item in m.group(1).split(","):
            item = item.strip()
            if not item:
                continue
            name, _, val = item.partition("=")
            v = _int(val) if val else nxt
            if v is None:
                continue
            constants.append((name.strip(), v))
            nxt = v + 1
    handles = re.findall(r"\btypedef\s+struct\s+(ct_\w+)\s+\1\s*;", text)
    return Header(functions, constants, handles)


def main(argv: List[str]) -> int:
    """`ctorch_header.py HEADER`: one line per function ("function NAME") and per
    constant ("constant NAME VALUE"), for tests in other languages (Julia)."""
    if len(argv) != 2:
        print("usage: ctorch_header.py include/ctorch.h", file=sys.stderr)
        return 2
    h = parse(argv[1])
    for f in h.functions:
        print("function", f.name)
    for name, value in h.constants:
        print("constant", name, value)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
