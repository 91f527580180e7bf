#!/usr/bin/env python3
"""Generates the bindings' tables of C functions and constants from include/ctorch.h (parsed by
scripts/ctorch_header.py, the one header parser):

  bindings/python/ctorch/_capi.py           SIGNATURES (ctypes types by name), the constants,
                                            STATUS_NAMES, the structs (ctypes Structures) and
                                            the callback types (CFUNCTYPEs)
  bindings/julia/CTorch/src/capi_generated.jl   one `@cfunc` per function, the constants,
                                            the header's structs (TensorInfo ...), STATUS_NAMES
                                            and one `@cfunction` macro per callback type
                                            (`@ct_op_fn(f)`)

  scripts/gen_bindings.py            write them
  scripts/gen_bindings.py --check    exit 1 (with a diff) if either is stale (ctest
                                     bindings.generated runs this)

Each C type maps to one binding type (PYTHON_TYPES, JULIA_TYPES below); a type the maps do not
know stops the generator, so a new kind of argument is decided here once, for both bindings.
"""
import argparse
import difflib
import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import ctorch_header  # noqa: E402

PY_OUT = os.path.join(ROOT, "bindings", "python", "ctorch", "_capi.py")
JL_OUT = os.path.join(ROOT, "bindings", "julia", "CTorch", "src", "capi_generated.jl")

HANDLES = {"ct_tensor", "ct_value", "ct_module", "ct_script", "ct_op", "ct_package", "ct_generator",
           "ct_cuda_event", "ct_cuda_graph", "ct_optimizer", "ct_grad_scaler", "ct_library", "ct_store", "ct_process_group", "ct_work", "ct_ddp", "DLManagedTensor", "DLManagedTensorVersioned", "void"}
CALLBACKS = {"ct_deleter": "DELETER", "ct_op_fn": "OP_FN", "ct_autograd_forward_fn": "AG_FORWARD",
             "ct_autograd_backward_fn": "AG_BACKWARD", "ct_ctx_destroy_fn": "CTX_DESTROY",
             "ct_op_backward_fn": "OP_BACKWARD", "ct_tensor_kernel_fn": "TENSOR_KERNEL"}
SCALARS = {"ct_status": ("S", "Int32"), "int32_t": ("I32", "Int32"), "int64_t": ("I64", "Int64"),
           "uint64_t": ("U64", "UInt64"), "size_t": ("SZ", "Csize_t"),
           "double": ("D", "Cdouble")}
POINTEES = {"int32_t": ("PI32", "Ptr{Int32}"), "int64_t": ("PI64", "Ptr{Int64}"),
            "uint64_t": ("PU64", "Ptr{UInt64}"),
            "size_t": ("PSZ", "Ptr{Csize_t}"), "double": ("PD", "Ptr{Cdouble}"),
            "ct_tensor_info": ("PINFO", "P"), "ct_blob": ("P", "P")}
#: Single out-parameters among `T **` (the rest are arrays the caller fills or reads).
OUT_NAMES = {"out", "key", "value", "data_out", "previous"}
#: Where a C type alone does not say it: byte buffers with a length (may hold NUL).
BYTES = {("ct_value_from_string", "s"): ("P", "Ptr{UInt8}"),
         ("ct_value_as_string", "out"): ("PP", "Ptr{Ptr{UInt8}}")}


def binding_types(fn, p):
    """(Python type name, Julia type) of parameter p of function fn."""
    if (fn, p.name) in BYTES:
        return BYTES[(fn, p.name)]
    words = [w for w in p.type.split() if w != "const"]
    base, stars = words[0], words.count("*")
    if stars == 0:
        if base in CALLBACKS:
            return CALLBACKS[base], "P"
        if base in SCALARS:
            return SCALARS[base]
    elif base == "char":
        if stars == 1:
            return "STR", "Cstring"
        if stars == 2:
            # char ** out: a string the caller frees with ct_free (kept as a pointer);
            # const char ** / const char *const *: borrowed strings in or out.
            owned = "const" not in p.type
            return ("PP" if owned else "PSTR"), "Ptr{Ptr{UInt8}}"
    elif base in HANDLES:
        if stars == 1:
            return "P", "P"
        if stars == 2:
            # Arrays are plain pointers in Python: the hot paths pass a
            # thread-local array's address as a ready c_void_p (fastest in ctypes).
            return ("PP" if p.name in OUT_NAMES else "PA"), "Ptr{P}"
    elif base in POINTEES and stars == 1:
        return POINTEES[base]
    raise SystemExit("gen_bindings.py: %s: parameter %s has type '%s', which has no binding "
                     "type yet: add it to scripts/gen_bindings.py" % (fn, p.name, p.type))


def return_types(f):
    words = [w for w in f.ret.split() if w != "const"]
    base, stars = words[0], words.count("*")
    if f.ret == "void":
        return "None", "Cvoid"
    if stars == 0 and base in SCALARS:
        return SCALARS[base]
    if stars == 1 and base == "char":
        return "STR", "Cstring"
    if stars == 1 and base == "int64_t":
        return "PI64", "Ptr{Int64}"
    if stars == 1 and base == "void":
        return "P", "P"
    raise SystemExit("gen_bindings.py: %s returns '%s', which has no binding type yet"
                     % (f.name, f.ret))


#: Python names of the header's structs (the others keep their C names).
STRUCT_NAMES = {"ct_tensor_info": "TensorInfo", "ct_blob": "Blob"}
CTYPES_SCALARS = {"size_t": "c_size_t", "int32_t": "c_int32", "int64_t": "c_int64",
                  "uint8_t": "c_uint8", "uint16_t": "c_uint16", "uint32_t": "c_uint32",
                  "uint64_t": "c_uint64", "double": "c_double", "ct_status": "c_int32"}


def ctypes_type(ty, h, where):
    """The ctypes expression of a struct field or callback parameter type."""
    words = [w for w in ty.split() if w not in ("const", "struct")]
    base, stars = words[0], words.count("*")
    structs = {st.name for st in h.structs}
    if stars == 0:
        if base in CTYPES_SCALARS:
            return CTYPES_SCALARS[base]
        if base in CALLBACKS:
            return "c_void_p"  # a function pointer field: the address of a CFUNCTYPE
        if base in h.enums:
            return "c_int32"  # a C enum is int-sized
        if base in structs:
            return STRUCT_NAMES.get(base, base)
    if stars == 1:
        if base in structs:
            return "POINTER(%s)" % STRUCT_NAMES.get(base, base)
        if base == "void" or base in HANDLES:
            return "c_void_p"
        if base in CTYPES_SCALARS:
            return "POINTER(%s)" % CTYPES_SCALARS[base]
    if stars == 2 and base in HANDLES:
        return "POINTER(c_void_p)"  # a handle array the callback indexes or fills
    raise SystemExit("gen_bindings.py: %s: type '%s' has no ctypes type yet" % (where, ty))


def python_callback(ret, param_types, h, where):
    res = "None" if ret == "void" else ctypes_type(ret, h, where)
    return "CFUNCTYPE(%s)" % ", ".join([res] + [ctypes_type(t, h, where) for t in param_types])


def python_types_text(h):
    """STATUS_NAMES, the structs and the callback types, as Python source."""
    out = ["", "# ---- status names, structs and callback types ----", "",
           "#: status code -> its name (CT_OK, CT_ERR_*)",
           "STATUS_NAMES: Dict[int, str] = {"]
    for name, v in h.constants:
        if name == "CT_OK" or name.startswith("CT_ERR_"):
            out.append('    %d: "%s",' % (v, name))
    out += ["}", ""]
    for st in h.structs:
        py = STRUCT_NAMES.get(st.name, st.name)
        out += ["", "class %s(Structure):" % py, '    """%s (include/ctorch.h)"""' % st.name, ""]
    out.append("")
    for st in h.structs:
        py = STRUCT_NAMES.get(st.name, st.name)
        fields = []
        for f in st.fields:
            if f.type.startswith("fn "):
                ret, _, ps = f.type[3:].partition(" (")
                types = [t.strip() for t in ps.rstrip(")").split(",") if t.strip()]
                ct = python_callback(ret, types, h, st.name + "." + f.name)
            else:
                ct = ctypes_type(f.type, h, st.name + "." + f.name)
            fields.append('("%s", %s)' % (f.name, ct))
        out += ["%s._fields_ = [" % py] + ["    %s," % f for f in fields] + ["]"]
    out += ["", "#: the callback types, named as the bindings use them (the C typedef in the comment)"]
    for cb in h.callbacks:
        name = CALLBACKS.get(cb.name)
        if name is None:
            raise SystemExit("gen_bindings.py: callback type %s has no binding name: add it to "
                             "CALLBACKS" % cb.name)
        out.append("%s = %s  # %s" % (name, python_callback(cb.ret, [p.type for p in cb.params],
                                                          h, cb.name), cb.name))
    return out


def python_text(h):
    out = ['"""The C functions and constants of include/ctorch.h, generated by',
           "scripts/gen_bindings.py from the header: do not edit (ctest bindings.generated",
           "fails when this file is stale). _lib.py gives the type names their ctypes types.",
           '"""', "from ctypes import (CFUNCTYPE, POINTER, Structure, c_double, c_int32, c_int64,",
           "                    c_size_t, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p)",
           "from typing import Dict, FrozenSet, List, Tuple", "",
           "#: name -> (result type, [argument types]), by the type names of _lib.py",
           "SIGNATURES: Dict[str, Tuple[str, List[str]]] = {"]
    for f in h.functions:
        ret = return_types(f)[0]
        args = ", ".join('"%s"' % binding_types(f.name, p)[0] for p in f.params)
        out.append('    "%s": ("%s", [%s]),' % (f.name, ret, args))
    out.append("}")
    out += ["", "#: the functions declared CT_MAY_BLOCK: bound with the GIL released (_lib.C)",
            "MAY_BLOCK: FrozenSet[str] = frozenset({"] + textwrap.wrap(
                ", ".join('"%s"' % f.name for f in h.functions if f.may_block), 92,
                initial_indent="    ", subsequent_indent="    ") + ["})"]
    out += python_types_text(h)
    out += ["", "# ---- constants (#define CT_* and enum members) ----", ""]
    names = []
    for name, v in h.constants:
        if name not in names:
            out.append("%s = %d" % (name, v))
            names.append(name)
    out += ["", "#: what `from ._capi import *` gives: the constants",
            "__all__ = ["] + textwrap.wrap(", ".join('"%s"' % n for n in names), 92,
                                         initial_indent="    ", subsequent_indent="    ") + ["]"]
    return "\n".join(out) + "\n"


JULIA_SCALARS = {"void": "Cvoid", "ct_status": "Int32", "size_t": "Csize_t", "int32_t": "Int32",
                 "int64_t": "Int64", "uint64_t": "UInt64", "double": "Cdouble"}


def julia_c_type(ty, where):
    """The Julia type of a callback's result or parameter (handles are Ptr{Cvoid})."""
    words = [w for w in ty.split() if w not in ("const", "struct")]
    base, stars = words[0], words.count("*")
    if stars == 0 and base in JULIA_SCALARS:
        return JULIA_SCALARS[base]
    if base == "void" or base in HANDLES:
        return "Ptr{Cvoid}" if stars == 1 else "Ptr{Ptr{Cvoid}}" if stars == 2 else None
    raise SystemExit("gen_bindings.py: %s: type '%s' has no Julia type yet" % (where, ty))


def julia_field_type(ty, where):
    """The Julia type of a struct field (same size and alignment as the C one)."""
    words = [w for w in ty.split() if w not in ("const", "struct")]
    base, stars = words[0], words.count("*")
    if stars == 0 and base in CALLBACKS:
        return "Ptr{Cvoid}"  # a function pointer: a @cfunction's address
    if stars == 1 and base in JULIA_SCALARS and base != "void":
        return "Ptr{%s}" % JULIA_SCALARS[base]
    return julia_c_type(ty, where)


def julia_types_text(h):
    """The named structs (same layout as C), STATUS_NAMES, and one `@cfunction`
    macro per callback type of the header."""
    out = ["", "# ---- structs, status names and callback signatures ----"]
    for st in h.structs:
        if st.name not in STRUCT_NAMES:
            continue  # DLPack's: bound as raw pointers
        out += ["", "# %s (include/ctorch.h)" % st.name, "struct %s" % STRUCT_NAMES[st.name]]
        out += ["    %s::%s" % (f.name, julia_field_type(f.type, st.name + "." + f.name))
                for f in st.fields]
        out.append("end")
    out += ["",
           '"Status code => its header name (`CT_ERR_TYPE`, ...)."',
           "const STATUS_NAMES = Dict{Int32,String}("]
    for name, v in h.constants:
        if name == "CT_OK" or name.startswith("CT_ERR_"):
            out.append('    Int32(%d) => "%s",' % (v, name))
    out.append(")")
    for cb in h.callbacks:
        ret = julia_c_type(cb.ret, cb.name)
        args = [julia_c_type(p.type, cb.name) for p in cb.params]
        out += ["", '"`@%s(f)`: a C pointer to `f` callable as a `%s`."' % (cb.name, cb.name),
                "macro %s(f)" % cb.name,
                "    esc(:(@cfunction($f, %s, (%s%s))))" % (ret, ", ".join(args),
                                                         "," if len(args) == 1 else ""),
                "end"]
    return out


def julia_text(h):
    out = ["# The C functions and constants of include/ctorch.h, generated by",
           "# scripts/gen_bindings.py from the header: do not edit (ctest bindings.generated",
           "# fails when this file is stale). `@cfunc` is defined in capi.jl.", ""]
    for f in h.functions:
        ret = return_types(f)[1]
        args = [binding_types(f.name, p)[1] for p in f.params]
        tup = "(" + ", ".join(args) + ("," if len(args) == 1 else "") + ")"
        out.append("@cfunc %s %s %s" % (f.name, ret, tup))
    out += ["", "# ---- constants (#define CT_* and enum members) ----", ""]
    seen = set()
    for name, v in h.constants:
        if name not in seen:
            out.append("const %s = %s(%d)" % (name, "Int32" if -2**31 <= v < 2**31 else "Int64",
                                              v))
            seen.add(name)
    out += julia_types_text(h)
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    ap.add_argument("--header", default=os.path.join(ROOT, "include", "ctorch.h"))
    a = ap.parse_args()
    h = ctorch_header.parse(a.header)
    stale = False
    for path, text in ((PY_OUT, python_text(h)), (JL_OUT, julia_text(h))):
        if a.check:
            old = open(path).read() if os.path.exists(path) else ""
            if old != text:
                stale = True
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True), path, "generated"))
        else:
            with open(path, "w") as f:
                f.write(text)
            print("wrote", os.path.relpath(path, ROOT))
    if stale:
        print("the binding tables are stale: run scripts/gen_bindings.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
