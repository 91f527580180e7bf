#!/usr/bin/env python3
"""Generates the abuse test from include/ctorch.h.

Every CT_API function is parsed from the header. For each one the generated C
program makes calls in forked children: one with valid arguments, one per
pointer argument with that pointer NULL, and one per integer argument with
out-of-range values (and, for a count, its arrays NULL). A child passes when it
exits normally within the time limit and, for a ct_status function that
failed, ct_last_error_code() equals the status and ct_last_error() names the
function. A function added to the header is covered by the next build.

usage: gen_abuse.py include/ctorch.h out.c
"""
import os
import re
import sys

# Functions that cannot be called in a meaningful isolated way; each with why.
SKIP = {
    # Loads an arbitrary shared library: a NULL path is checked, a valid one
    # would dlopen the test's argument.
    "ct_load_library": "valid call would dlopen a file",
}

HANDLE_VALID = {
    "ct_tensor": "g_tensor",
    "ct_value": "g_value",
    "ct_module": "g_module",
    "ct_script": "g_script",
    "ct_op": "g_op",
    "ct_package": "g_package",  # NULL without AOTInductor (LibTorch < 2.6)
    "ct_generator": "g_generator",
    "ct_cuda_event": "g_cuda_event",  # NULL without a CUDA device
    "ct_cuda_graph": "g_cuda_graph",  # NULL without a CUDA device
    "ct_optimizer": "g_optimizer",
    "ct_grad_scaler": "g_grad_scaler",
    "ct_library": "g_library",
    "ct_store": "g_store",  # NULL where ctorch has no c10d (PyPI wheels)
    "ct_process_group": "g_process_group",
    "ct_work": "g_work",
    "ct_ddp": "g_ddp",
}

# Name-based valid values for strings.
STRING_VALID = {
    "schema": '"abuse::f(Tensor x) -> Tensor"',
    "algorithm": '"sgd"',
    "name": '"w"',
    "qualified_name": '"aten::neg"',
    "overload": '""',
    "method": '"forward"',
    "function": '"f"',
    "path": '"/nonexistent/ctorch-abuse"',
    "source": '"def g(self, x):\\n    return x\\n"',
    "class_name": '"Abuse"',
    "message": '"abuse"',
    "key": '"k"',
    "model_name": '"model"',
    "ns": '"abuse"',
    "dispatch_key": '"CPU"',
    "host": '"127.0.0.1"',
    "prefix": '"p"',
    "backend": '"gloo"',
}

INT32_VALID = {
    "dtype": "CT_FLOAT32",
    "device_type": "CT_DEVICE_CPU",
    "device_index": "-1",
    "device": "-1",
    "enabled": "0",
    "on": "1",
    "world_size": "1",
    "is_master": "1",
}

INT_BAD = {
    "int32_t": ["INT32_MIN", "INT32_MAX", "-2"],
    "int64_t": ["INT64_MIN", "INT64_MAX", "-2"],
    "uint64_t": ["UINT64_MAX"],
    "size_t": ["SIZE_MAX", "(SIZE_MAX / 2 + 1)"],
    "ct_status": ["INT32_MIN", "INT32_MAX"],
    "double": ["NAN", "INFINITY", "-INFINITY"],
}

COUNT_NAMES = re.compile(r"^(n|n_\w+|nkw|ndim|capacity|size|len|n_inputs|n_outputs)$")


def parse(header):
    """(return type, name, [(type, name)]) of every CT_API function, from the one
    header parser (scripts/ctorch_header.py)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "scripts"))
    import ctorch_header
    return [(f.ret, f.name, [(p.type, p.name) for p in f.params])
            for f in ctorch_header.parse(header).functions]


def base_and_depth(ty):
    depth = ty.count("*")
    base = ty.replace("*", " ").replace("const", " ").split()
    return (base[-1] if base else ty), depth


def valid_expr(ty, an, fname):
    """A C expression for a valid argument, and setup code run in the child."""
    base, depth = base_and_depth(ty)
    if depth == 0:
        if base == "int32_t":
            if fname.startswith("ct_cuda"):
                return "0"
            return INT32_VALID.get(an, "0")
        if base in ("int64_t", "uint64_t"):
            if an == "stream":
                return "-1"
            if an in ("m",):
                return "-1"
            return "2" if an in ("n", "dim_size") else "0"
        if base == "size_t":
            return "1" if COUNT_NAMES.match(an) else "0"
        if base == "double":
            return "1.0"
        if base == "ct_status":
            return "CT_ERR_CALLBACK"
        if base in ("ct_ctx_destroy_fn", "ct_deleter"):
            return "(%s)abuse_noop_fn" % base
        if base.endswith("_fn"):
            return "(%s)abuse_dummy_fn" % base
        return "0"
    if base in HANDLE_VALID and depth == 1:
        return HANDLE_VALID[base]
    if base in HANDLE_VALID and depth == 2:
        if "const" in ty.split("*")[1] or ty.startswith("const"):
            # const ct_x *const *: an input array of one handle.
            return "(%s)g_%s_array" % (ty, base[3:])
        return "(%s)abuse_out_slots" % ty  # out-parameter(s)
    if base == "char" and depth == 1:
        return STRING_VALID.get(an, '"x"')
    if base == "char" and depth == 2:
        if ty.replace(" ", "").startswith("constchar*const"):
            return '(%s)g_names' % ty
        return "(%s)abuse_out_slots" % ty
    if base in ("DLManagedTensor", "DLManagedTensorVersioned") and depth == 1:
        return "abuse_fresh_%s()" % base
    if base == "void" and fname == "ct_free":
        return "malloc(8)"
    if base == "void" and depth == 1:
        return "abuse_buffer"
    if depth >= 2:
        # Out-parameters (DLManagedTensor **, void **): slots of the right type.
        # C compilers since GCC 14 reject a mismatched pointer without a cast.
        return "(%s)abuse_out_slots" % ty
    if base in ("int64_t", "int32_t", "double", "size_t", "uint64_t"):
        if ty.startswith("const"):
            return "(%s)g_%s_items" % (ty, base.replace("_t", ""))
        return "(%s)abuse_out_slots" % ty
    if base == "ct_tensor_info":
        return "(%s)&g_info" % ty
    return "(%s)abuse_buffer" % ty


def call_expr(fname, args, override):
    exprs = []
    for i, (ty, an) in enumerate(args):
        exprs.append(override.get(i, valid_expr(ty, an, fname)))
    return "%s(%s)" % (fname, ", ".join(exprs))


def cases(ret, fname, args):
    out = [("valid", {})]
    for i, (ty, an) in enumerate(args):
        base, depth = base_and_depth(ty)
        if depth > 0 or base.endswith("_fn") or base == "ct_deleter":
            out.append(("%s NULL" % an, {i: "NULL"}))
    for i, (ty, an) in enumerate(args):
        base, depth = base_and_depth(ty)
        if depth == 0 and base in INT_BAD:
            for bad in INT_BAD[base]:
                ov = {i: "(%s)(%s)" % (base, bad)}
                if base == "size_t" and COUNT_NAMES.match(an):
                    # A huge count with its arrays: the caller lied; with its
                    # arrays NULL ctorch must refuse it.
                    for j, (tj, aj) in enumerate(args):
                        bj, dj = base_and_depth(tj)
                        if dj >= 1 and tj.startswith("const") and bj != "char":
                            ov[j] = "NULL"
                        if dj == 2 and tj.startswith("const char"):
                            ov[j] = "NULL"
                    if not any(v == "NULL" for v in ov.values()):
                        continue
                out.append(("%s=%s" % (an, bad), ov))
    return out


def main():
    header, out_path = sys.argv[1], sys.argv[2]
    funcs = parse(header)
    lines = []
    w = lines.append
    w("/* GENERATED by tests/abuse/gen_abuse.py from include/ctorch.h; do not edit. */")
    w('#include "abuse_support.h"')
    w("")
    ncases = 0
    covered = []
    counts = []
    for ret, fname, args in funcs:
        if fname in SKIP:
            continue
        covered.append(fname)
        is_status = ret == "ct_status"
        cs = cases(ret, fname, args)
        counts.append(len(cs))
        w("static void abuse_%s(int which) {" % fname)
        w("  switch (which) {")
        for k, (label, ov) in enumerate(cs):
            ncases += 1
            call = call_expr(fname, args, ov)
            w("    case %d: abuse_label = \"%s\";" % (k, label))
            if is_status:
                w("      abuse_check_status(\"%s\", %s); return;" % (fname, call))
            elif ret == "void":
                w("      %s; return;" % call)
            else:
                w("      (void)(%s); return;" % call)
        w("  }")
        w("  _exit(ABUSE_NO_SUCH_CASE);")
        w("}")
        w("")
    w("const abuse_fn abuse_table[] = {")
    for fname, n in zip(covered, counts):
        w("    {\"%s\", abuse_%s, %d}," % (fname, fname, n))
    w("};")
    w("const size_t abuse_table_len = %d;" % len(covered))
    w("const size_t abuse_cases_total = %d;" % ncases)
    w("const char *const abuse_skipped[] = {%s NULL};" %
      "".join('"%s: %s", ' % (k, v) for k, v in SKIP.items()))
    open(out_path, "w").write("\n".join(lines) + "\n")
    print("gen_abuse: %d functions, %d cases" % (len(covered), ncases))


if __name__ == "__main__":
    main()
