"""include/ctorch.h follows docs/conventions.md (scripts/header_rules.py), and each rule
catches a planted violation: a copy of the header with one declaration changed.

    python3 tests/tools/test_header_rules.py [include/ctorch.h]
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import header_rules  # noqa: E402

HEADER = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "include", "ctorch.h")

#: (what is planted, declaration replaced, its replacement, text the report must contain)
PLANTED = [
    ("an out-parameter last",
     "CT_API ct_status ct_work_source_rank(int32_t *out, ct_work *work);",
     "CT_API ct_status ct_work_source_rank(ct_work *work, int32_t *out);",
     "ct_work_source_rank: out-parameter 'out' after input 'work'"),
    ("a handle function without its kind as prefix",
     "CT_API CT_MAY_BLOCK ct_status ct_process_group_barrier(ct_work **work, "
     "ct_process_group *pg);",
     "CT_API CT_MAY_BLOCK ct_status ct_barrier(ct_work **work, ct_process_group *pg);",
     "ct_barrier: takes a handle"),
    ("a prefix naming a kind the function does not take",
     "CT_API ct_status ct_generator_manual_seed(ct_generator *g, uint64_t seed);",
     "CT_API ct_status ct_module_manual_seed(ct_generator *g, uint64_t seed);",
     "ct_module_manual_seed: named for ct_module"),
    ("a getter that says get",
     "CT_API ct_status ct_generator_state(ct_tensor **out, const ct_generator *g);",
     "CT_API ct_status ct_generator_get_state(ct_tensor **out, const ct_generator *g);",
     "ct_generator_get_state: 'get' without a key"),
    ("a setter with set last",
     "CT_API ct_status ct_cpu_fuser_set_enabled(int32_t enabled);",
     "CT_API ct_status ct_cpu_fuser_set(int32_t enabled);",
     "ct_cpu_fuser_set: a setter is"),
    ("a setter returning void",
     "CT_API ct_status ct_grad_mode_set_enabled(int32_t enabled);",
     "CT_API void ct_grad_mode_set_enabled(int32_t enabled);",
     "ct_grad_mode_set_enabled: a setter returns ct_status"),
    ("a predicate with its answer last",
     "CT_API ct_status ct_work_is_completed(int32_t *out, ct_work *work);",
     "CT_API ct_status ct_work_is_completed(int32_t *done, ct_work *work);",
     "ct_work_is_completed: a predicate"),
    ("'to_' on a borrowed result",
     "CT_API ct_status ct_value_as_string(const char **out, size_t *size, const ct_value *v);",
     "CT_API ct_status ct_value_to_string(const char **out, size_t *size, const ct_value *v);",
     "ct_value_to_string: 'to_' returns an owned result"),
    ("'as_' on an owned result",
     "CT_API ct_status ct_value_to_repr(char **out, const ct_value *v);",
     "CT_API ct_status ct_value_as_repr(char **out, const ct_value *v);",
     "ct_value_as_repr: 'as_' returns a borrowed view"),
    ("a constructor named <variant>_new",
     "CT_API ct_status ct_store_new_prefix(ct_store **out, ct_store *store, const char *prefix);",
     "CT_API ct_status ct_store_prefix_new(ct_store **out, ct_store *store, const char *prefix);",
     "ct_store_prefix_new: a constructor is"),
    ("a free with two parameters",
     "CT_API CT_MAY_BLOCK void ct_work_free(ct_work *work);",
     "CT_API CT_MAY_BLOCK void ct_work_free(ct_work *work, int32_t flags);",
     "ct_work_free: a free is"),
    ("a byte count called len",
     "CT_API ct_status ct_value_from_string(ct_value **out, const char *s, size_t size);",
     "CT_API ct_status ct_value_from_string(ct_value **out, const char *s, size_t len);",
     "ct_value_from_string: parameter 'len'"),
    ("one function declared twice",
     "CT_API int32_t ct_tensor_is_defined(const ct_tensor *t);",
     "CT_API int32_t ct_tensor_is_defined(const ct_tensor *t);\n"
     "CT_API int32_t ct_tensor_is_defined(const ct_tensor *t);",
     "ct_tensor_is_defined: declared twice"),
    ("a handle typedef away from the others",
     "typedef struct ct_ddp ct_ddp;",
     "",
     "handle typedefs are spread"),
]


def main() -> int:
    text = open(HEADER).read()
    failures = []
    found = header_rules.check_text(text)
    if found:
        failures.append("the header itself breaks the rules:\n  " + "\n  ".join(found))
    for what, old, new, expect in PLANTED:
        if old not in text:
            failures.append("%s: the declaration to change is not in the header: %s" % (what, old))
            continue
        planted = text.replace(old, new, 1)
        if what.startswith("a handle typedef"):
            planted = planted.replace("#ifdef __cplusplus\n}", "typedef struct ct_ddp ct_ddp;\n"
                                      "#ifdef __cplusplus\n}", 1)
        report = header_rules.check_text(planted)
        if not any(expect in r for r in report):
            failures.append("%s: not caught (expected '%s'; report: %s)" % (what, expect, report))
        else:
            print("caught: %s" % what)
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print("header rules: the header passes, %d planted violations caught" % len(PLANTED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
