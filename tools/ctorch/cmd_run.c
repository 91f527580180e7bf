/* `ctorch run`: one call of a model, outputs printed or written to .npy. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cmd_run(int argc, char **argv) {
  opts o;
  model t;
  inputs in;
  ct_value *res = NULL;
  output outs[MAX_OUTPUTS];
  size_t n = 0, i, next_out = 0;
  int rc, i2;
  ct_status st;
  for (i2 = 0; i2 < argc; i2++)
    if (is_help(argv[i2])) {
      printf(
          "Usage: %s run MODEL [--method M] [-o OUT.npy]... INPUTS...\n\n"
          "Runs a method of a TorchScript model (or an AOTInductor package) once and prints\n"
          "each output in short form (dtype, shape, device, the first and last elements),\n"
          "or writes it to .npy. Outputs that are tuples, lists or dicts are flattened in\n"
          "order.\n\n%s"
          "  -o FILE.npy, --output     write the next tensor output to FILE.npy instead of\n"
          "                            printing it (repeat for several outputs; bfloat16 is\n"
          "                            written as float32)\n",
          prog, inputs_help);
      return 0;
    }
  if ((rc = parse_model_opts(&o, "run", argc, argv, 0))) return rc;
  start_deadline(o.timeout);
  if ((rc = load_model(&t, &o))) return rc;
  if ((rc = make_inputs(&in, &o, t.m != NULL))) {
    model_free(&t);
    return rc;
  }
  ct_grad_mode_set(0);
  if (t.p) {
    ct_tensor *pt[MAX_OUTPUTS];
    size_t np = 0;
    st = call_package(pt, &np, t.p, &in);
    inputs_free(&in);
    if (st != CT_OK) {
      model_free(&t);
      return fail_ct(st, o.model);
    }
    rc = 0;
    for (i = 0; i < np; i++) {
      if (!rc && (st = ct_value_from_tensor(&outs[n].v, pt[i])) != CT_OK)
        rc = fail_ct(st, "output");
      if (!rc) {
        if (np == 1)
          snprintf(outs[n].label, sizeof outs[n].label, "output");
        else
          snprintf(outs[n].label, sizeof outs[n].label, "output[%zu]", i);
        n++;
      }
      ct_tensor_free(pt[i]);
    }
  } else {
    st = call_module(&res, t.m, &o, &in);
    inputs_free(&in);
    if (st != CT_OK) {
      model_free(&t);
      return fail_ct(st, o.method ? o.method : "forward");
    }
    rc = flatten(outs, &n, res, "output");
  }
  if (!rc) { /* refuse before writing any file, so no -o file is left half-done */
    size_t n_tensors = 0;
    for (i = 0; i < n; i++) n_tensors += ct_value_tag(outs[i].v) == CT_VALUE_TENSOR;
    if (n_tensors < o.n_outs)
      rc = fail("%zu -o file(s) given but the model returned %zu tensor(s)", o.n_outs, n_tensors);
  }
  for (i = 0; i < n; i++) {
    if (!rc) {
      if (ct_value_tag(outs[i].v) == CT_VALUE_TENSOR) {
        ct_tensor *r = NULL;
        if ((st = ct_value_to_tensor(&r, outs[i].v)) != CT_OK) {
          rc = fail_ct(st, outs[i].label);
        } else if (next_out < o.n_outs) {
          rc = npy_write(o.outs[next_out], r);
          if (!rc) printf("%s: written to %s\n", outs[i].label, o.outs[next_out]);
          next_out++;
        } else {
          rc = print_tensor(outs[i].label, r);
        }
        ct_tensor_free(r);
      } else {
        char *repr = NULL, *type = value_type(outs[i].v);
        if (ct_value_to_repr(&repr, outs[i].v) == CT_OK)
          printf("%s: %s = %s\n", outs[i].label, type ? type : "?", repr);
        ct_free(repr);
        ct_free(type);
      }
    }
    ct_value_free(outs[i].v);
  }
  model_free(&t);
  return rc;
}
