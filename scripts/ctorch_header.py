"""The one parser of include/ctorch.h: its functions (return type, name, parameters) and its
integer constants (#define CT_* and enum members), in header order.

Used by scripts/gen_bindings.py (the Python and Julia binding tables), scripts/gen_api_docs.py
(every function documented), tests/abuse/gen_abuse.py and the bindings' tests; the Julia test
runs it as a program (one "function NAME" or "constant NAME VALUE" line each). Standard library
only.

    import ctorch_header
    h = ctorch_header.parse("include/ctorch.h")
    h.functions[0]  ->  Function(ret='const char *', name='ct_version', params=[],
                                 may_block=False)   (True: declared CT_MAY_BLOCK)
    h.constants     ->  [('CT_OK', 0), ...]
    h.handles       ->  ['ct_tensor', 'ct_value', ...]
    h.callbacks     ->  [Function(ret='void', name='ct_deleter', params=[...]), ...]
    h.structs       ->  [Struct(name='ct_tensor_info', fields=[Param('size_t', 'size'), ...])]
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
    may_block: bool = False  # declared CT_MAY_BLOCK (bindings release the GIL)


class Struct(NamedTuple):
    name: str
    # Fields in order; a function-pointer field has type "fn RET (PARAMS)" with the
    # parameter types normalized and comma-separated.
    fields: List[Param]


class Header(NamedTuple):
    functions: List[Function]
    constants: List[Tuple[str, int]]
    handles: List[str]  # the opaque handle types ("ct_tensor", ...): `typedef struct X X;`
    callbacks: List[Function]  # `typedef RET (*NAME)(PARAMS);`
    structs: List[Struct]  # `typedef struct [tag] { FIELDS } NAME;`, in header order
    enums: List[str]  # the names of `typedef enum { ... } NAME;` (int-sized types)


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


def _params(plist: str) -> List[Param]:
    plist = " ".join(plist.split())
    params = []
    if plist and plist != "void":
        for p in plist.split(","):
            pm = re.match(r"^(.*?)(\w+)$", p.strip())
            params.append(Param(normalize(pm.group(1)), pm.group(2)))
    return params


def _fields(body: str) -> List[Param]:
    fields = []
    for decl in body.split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        fn = re.match(r"^(.*?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)$", decl)
        if fn:
            ps = ", ".join(normalize(p.type) for p in _params(fn.group(3)))
            fields.append(Param("fn %s (%s)" % (normalize(fn.group(1)), ps), fn.group(2)))
        else:
            m = re.match(r"^(.*?)(\w+)$", decl)
            fields.append(Param(normalize(m.group(1)), m.group(2)))
    return fields


def parse(path: str) -> Header:
    return parse_text(open(path).read())


def parse_text(raw: str) -> Header:
    """parse() of a header's text."""
    text = _strip_comments(raw)
    functions = []
    code = re.sub(r"^\s*#.*$", " ", text, flags=re.M)  # no preprocessor lines
    for m in re.finditer(r"CT_API\s+([^;{]*?)\b(ct_\w+)\s*\(([^)]*)\)\s*;", code):
        words = m.group(1).split()
        functions.append(Function(normalize(" ".join(w for w in words if w != "CT_MAY_BLOCK")),
                                  m.group(2), _params(m.group(3)), "CT_MAY_BLOCK" in words))
    callbacks = [Function(normalize(m.group(1)), m.group(2), _params(m.group(3)))
                 for m in re.finditer(r"\btypedef\s+([\w\s*]+?)\(\s*\*\s*(\w+)\s*\)\s*"
                                      r"\(([^)]*)\)\s*;", code)]
    structs = [Struct(m.group(2), _fields(m.group(1)))
               for m in re.finditer(r"\btypedef\s+struct\s*\w*\s*\{(.*?)\}\s*(\w+)\s*;", code,
                                    flags=re.S)]
    enums = re.findall(r"\btypedef\s+enum\s*\w*\s*\{[^}]*\}\s*(\w+)\s*;", code)
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
    return Header(functions, constants, handles, callbacks, structs, enums)


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
