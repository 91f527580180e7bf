"""The naming and signature rules of include/ctorch.h (docs/conventions.md, "Names and
signatures"), checked on the parsed header. Standard library only.

    python3 scripts/header_rules.py include/ctorch.h   # exit 1 and one line per violation

Each rule is a function taking a ctorch_header.Function (and the set of handle kinds) and
returning a list of messages; tests/tools/test_header_rules.py plants one violation of each.
"""
import os
import re
import sys
from typing import Callable, Iterable, List, Set

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ctorch_header  # noqa: E402

#: Scalars a caller receives through a pointer.
OUT_SCALARS = {"int32_t", "int64_t", "uint64_t", "double", "size_t", "ct_tensor_info"}
#: Parameter names that make `get`/`set` a keyed accessor.
KEY_NAMES = {"key", "name", "i", "index"}
#: Parameter names of an output array's capacity, allowed among the outputs.
CAPACITY_NAMES = {"n_outputs", "capacity"}
#: Prefixes that are not a handle kind but a subject of their own, whose functions may take
#: handles of any kind: a file format (ct_pickle_*: torch.save files of values), autograd
#: over tensors, gradient clipping over parameters.
NAMESPACES = {"pickle", "autograd", "clip_grad"}


def is_output(ty: str) -> bool:
    """A parameter the function writes through: a pointer to a non-const scalar, or a
    non-const pointer to a pointer (`T **`, `const char **`, `void **`)."""
    words = ty.split()
    if words[-1] != "*":
        return False
    if len(words) >= 2 and words[-2] == "*":
        return len(words) < 3 or words[-3] != "const"  # `T * const *` is an input array
    return len(words) == 2 and words[0] in OUT_SCALARS


def handle_of(ty: str, kinds: Set[str]):
    """The handle kind of a single-handle parameter (`[const] ct_X *`), else None."""
    m = re.fullmatch(r"(?:const )?ct_(\w+) \*", ty)
    return m.group(1) if m and m.group(1) in kinds else None


def words(name: str) -> List[str]:
    return name[len("ct_"):].split("_")


def rule_outputs_first(f, kinds) -> List[str]:
    """Out-parameters come first; an output array's capacity may sit among them."""
    seen_input = None
    for i, p in enumerate(f.params):
        if is_output(p.type):
            if seen_input is not None:
                return ["%s: out-parameter '%s' after input '%s' (outputs come first)"
                        % (f.name, p.name, seen_input)]
        elif not (p.type == "size_t" and p.name in CAPACITY_NAMES and i > 0
                  and is_output(f.params[i - 1].type)):
            seen_input = seen_input or p.name
    return []


def prefix_kind(f, kinds):
    """The handle kind the name starts with (the longest that matches), else None."""
    rest = f.name[len("ct_"):]
    best = None
    for k in kinds:
        if (rest == k or rest.startswith(k + "_")) and (best is None or len(k) > len(best)):
            best = k
    return best


def rule_prefix(f, kinds) -> List[str]:
    """A function taking a handle is named after a handle kind among its parameters;
    a name that starts with a handle kind takes that kind."""
    kinds_in = set()
    single_input = False
    for p in f.params:
        k = handle_of(p.type, kinds)
        if k:
            kinds_in.add(k)
            single_input = True
        m = re.fullmatch(r"ct_(\w+) \* \*", p.type)
        if m and m.group(1) in kinds:
            kinds_in.add(m.group(1))
    pk = prefix_kind(f, kinds)
    if pk is not None and pk not in kinds_in and single_input:
        return ["%s: named for ct_%s but takes no ct_%s" % (f.name, pk, pk)]
    in_namespace = any(f.name.startswith("ct_%s_" % ns) for ns in NAMESPACES)
    if single_input and pk is None and not in_namespace:
        return ["%s: takes a handle (%s) but its name does not start with a handle kind"
                % (f.name, ", ".join("ct_" + k for k in sorted(kinds_in)))]
    return []


def has_key(f) -> bool:
    return any(p.name in KEY_NAMES for p in f.params)


def rule_get_set(f, kinds) -> List[str]:
    """Getters are nouns (`ct_tensor_grad`, never `get_`); setters are `set_<property>`
    and return ct_status; a bare `get`/`set` is a keyed accessor (a key, name or index)."""
    w = words(f.name)
    out = []
    if "get" in w and not has_key(f):
        out.append("%s: 'get' without a key, name or index (a getter is named for what it "
                   "returns: ct_<object>_<property>)" % f.name)
    if "set" in w:
        i = w.index("set")
        if i == len(w) - 1 and not has_key(f):
            out.append("%s: a setter is ct_<object>_set_<property> (or a keyed _set)" % f.name)
        if f.ret != "ct_status":
            out.append("%s: a setter returns ct_status (returns %s)" % (f.name, f.ret))
    return out


def rule_predicate(f, kinds) -> List[str]:
    """Predicates (`is_`, `has_`) return int32_t 0/1, or ct_status with `int32_t *out`
    first when they can fail."""
    w = words(f.name)
    if "is" not in w and "has" not in w:
        return []
    if f.ret == "int32_t" and not any(is_output(p.type) for p in f.params):
        return []
    if f.ret == "ct_status" and f.params and f.params[0] == ("int32_t *", "out"):
        return []
    return ["%s: a predicate returns int32_t, or ct_status with 'int32_t *out' first" % f.name]


def rule_ownership_word(f, kinds) -> List[str]:
    """`to_` gives something the caller owns (a new handle, a copy, `char **`);
    `as_` a borrowed view (`const` outputs)."""
    w = words(f.name)
    out = []
    outs = [p for p in f.params if is_output(p.type) and "*" in p.type.split()[:-1]]
    if "to" in w and any(p.type.startswith("const ") for p in outs):
        out.append("%s: 'to_' returns an owned result, but '%s' is borrowed (%s): use 'as_'"
                   % (f.name, outs[0].name, outs[0].type))
    if "as" in w and any(not p.type.startswith("const ") for p in outs):
        out.append("%s: 'as_' returns a borrowed view, but an output is owned" % f.name)
    return out


def rule_constructor(f, kinds) -> List[str]:
    """Constructors are ct_<object>_new[_<variant>]: `new` right after the kind."""
    w = words(f.name)
    if "new" not in w:
        return []
    pk = prefix_kind(f, kinds)
    if pk is None or not f.name.startswith("ct_%s_new" % pk):
        return ["%s: a constructor is ct_<object>_new[_<variant>]" % f.name]
    return []


def rule_free(f, kinds) -> List[str]:
    """Every ct_<object>_free takes one handle and returns void."""
    if not f.name.endswith("_free") or f.name == "ct_free":
        return []
    k = f.name[len("ct_"):-len("_free")]
    if f.ret != "void" or len(f.params) != 1 or f.params[0].type != "ct_%s *" % k:
        return ["%s: a free is 'void ct_<object>_free(ct_<object> *)'" % f.name]
    return []


def rule_size_words(f, kinds) -> List[str]:
    """Byte counts are `size`, capacities `capacity`: no `len` or `cap`."""
    bad = [p.name for p in f.params if p.name in ("len", "cap", "length")]
    return ["%s: parameter '%s' (byte counts are 'size', capacities 'capacity')"
            % (f.name, b) for b in bad]


RULES: List[Callable] = [rule_outputs_first, rule_prefix, rule_get_set, rule_predicate,
                         rule_ownership_word, rule_constructor, rule_free, rule_size_words]


def check_functions(functions: Iterable, kinds: Set[str]) -> List[str]:
    out = []
    names = set()
    for f in functions:
        if f.name in names:
            out.append("%s: declared twice" % f.name)
        names.add(f.name)
        for rule in RULES:
            out.extend(rule(f, kinds))
    return out


def check_text(text: str) -> List[str]:
    """Every violation in a header's text."""
    h = ctorch_header.parse_text(text)
    out = check_functions(h.functions, {n[len("ct_"):] for n in h.handles})
    # Handle typedefs live together, in the "Handles" section.
    spans = [m.start() for m in re.finditer(r"typedef\s+struct\s+ct_(\w+)\s+ct_\1\s*;", text)]
    if spans and text.count("\n", spans[0], spans[-1]) > len(spans):
        out.append("handle typedefs are spread over the header (keep them in one block)")
    return out


def main(argv: List[str]) -> int:
    path = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include", "ctorch.h")
    problems = check_text(open(path).read())
    for p in problems:
        print(p)
    if problems:
        print("header_rules: %d violation(s) of docs/conventions.md" % len(problems))
        return 1
    print("header_rules: every function follows the conventions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
