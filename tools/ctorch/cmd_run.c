/* `ctorch run`: one call of a model, outputs printed (text or JSON) or written to .npy. */
#include "cli.h"

#include <string.h>

int cmd_run(int argc, char **argv) {
  opts o;
  model t;
  inputs in;
  ct_value *res = NULL;
  output outs[MAX_OUTPUTS];
  size_t n = 0, i, next_out = 0;
  int rc;
  ct_status st;
  cJSON *root = NULL, *jouts = NULL;
  if ((rc = parse_model_opts(&o, "run", argc, argv, 0)) == -1) {
    printf(
        "Usage: %s run MODEL [--method M] [-o OUT.npy]... [--json] INPUTS...\n\n"
        "Runs a method of a TorchScript model (or an AOTInductor package) once and prints\n"
        "each output in short form (dtype, shape, device, the first and last elements;\n"
        "integers exact, floats in the shortest text that reads back the same, bools as\n"
        "True/False, complex numbers as (re+imj)), or writes it to .npy. Outputs that are\n"
        "tuples, lists or dicts are flattened in order, labelled as Python indexes them.\n\n%s"
        "  -o FILE.npy, --output     write the next tensor output to FILE.npy instead of\n"
        "                            printing it (repeat for several outputs; bfloat16 is\n"
        "                            written as float32)\n"
        "  --json                    print one JSON object: {\"file\", \"method\", \"outputs\":\n"
        "                            [{\"name\", \"type\", and for a tensor \"dtype\", \"shape\",\n"
        "                            \"device\", \"values\" (every element, flat; int64 exact,\n"
        "                            complex as [re, im], NaN and infinities as strings) or\n"
        "                            \"file\" (written by -o); for others \"value\"}]};\n"
        "                            on an error {\"file\", \"error\": the message, \"status\":\n"
        "                            the library's status code, if any}\n",
        prog, inputs_help);
    return 0;
  }
  if (rc) return rc;
  start_deadline(o.timeout);
  if ((rc = load_model(&t, &o))) return rc;
  if ((rc = make_inputs(&in, &o, t.m != NULL))) {
    model_free(&t);
    return rc;
  }
  ct_grad_mode_set_enabled(0);
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
  if (!rc && o.json) {
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "file", o.model);
    if (t.m) cJSON_AddStringToObject(root, "method", o.method ? o.method : "forward");
    jouts = cJSON_AddArrayToObject(root, "outputs");
  }
  for (i = 0; i < n; i++) {
    if (!rc) {
      if (ct_value_tag(outs[i].v) == CT_VALUE_TENSOR) {
        ct_tensor *r = NULL;
        if ((st = ct_value_to_tensor(&r, outs[i].v)) != CT_OK) {
          rc = fail_ct(st, outs[i].label);
        } else if (next_out < o.n_outs) {
          rc = npy_write(o.outs[next_out], r);
          if (!rc && !o.json) printf("%s: written to %s\n", outs[i].label, o.outs[next_out]);
          if (!rc && o.json) {
            cJSON *jo = cJSON_CreateObject();
            cJSON_AddStringToObject(jo, "name", outs[i].label);
            cJSON_AddStringToObject(jo, "type", "Tensor");
            cJSON_AddStringToObject(jo, "file", o.outs[next_out]);
            cJSON_AddItemToArray(jouts, jo);
          }
          next_out++;
        } else if (o.json) {
          cJSON *jo = json_tensor(outs[i].label, r);
          if (jo)
            cJSON_AddItemToArray(jouts, jo);
          else
            rc = EXIT_ERROR;
        } else {
          rc = print_tensor(outs[i].label, r);
        }
        ct_tensor_free(r);
      } else if (o.json) {
        cJSON_AddItemToArray(jouts, json_value(outs[i].label, outs[i].v));
      } else {
        rc = print_value(outs[i].label, outs[i].v);
      }
    }
    ct_value_free(outs[i].v);
  }
  if (root) {
    if (!rc)
      rc = json_print(root);
    else
      cJSON_Delete(root);
  }
  model_free(&t);
  return rc;
}
