/* `ctorch inspect`: what a model file holds (methods, parameters, buffers, sizes), walked
 * once here and printed as text or JSON by a printer (inspect.h); torch.save files go to
 * inspect_pickle.c, .npy arrays are read with npy_read. */
#include "inspect.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const inspect_section sec_methods = {"methods", "methods", 1, 0};
static const inspect_section sec_params = {"parameters", "parameters", 1, 0};
static const inspect_section sec_bufs = {"buffers", "buffers", 1, 0};
static const inspect_section sec_kids = {"submodules", "submodules", 1, 0};
static const inspect_section sec_extra = {"extra_files", "extra files", 1, 0};
static const inspect_section sec_meta = {"metadata", "metadata", 0, 1};
static const inspect_section sec_consts = {"constants", "constants", 1, 0};
static const inspect_section sec_spec = {"call_spec", "call spec (in_spec, out_spec)", 0, 0};

/* A {name: tensor} dict as one section with its totals. */
static int walk_tensors(const struct inspect_printer *pr, const inspect_section *sec,
                        ct_value *dict) {
  inspect_totals tot;
  size_t i, n = 0;
  ct_value_length(&n, dict);
  memset(&tot, 0, sizeof tot);
  pr->begin_section(sec, n);
  for (i = 0; i < n; i++) {
    ct_value *k = NULL, *v = NULL;
    ct_tensor *t = NULL;
    ct_status st = ct_value_dict_item(&k, &v, dict, i);
    if (st == CT_OK) st = ct_value_to_tensor(&t, v);
    if (st != CT_OK) {
      ct_value_free(k);
      ct_value_free(v);
      return fail_ct(st, sec->key);
    }
    pr->tensor(i, value_str(k), t);
    tot.count++;
    tot.numel += ct_tensor_numel(t);
    tot.bytes += ct_tensor_nbytes(t);
    ct_tensor_free(t);
    ct_value_free(k);
    ct_value_free(v);
  }
  pr->end_section(sec, &tot);
  return 0;
}

/* A List[str] value as one section. */
static int walk_str_list(const struct inspect_printer *pr, const inspect_section *sec,
                         const ct_value *list) {
  size_t i, n = 0;
  ct_status st;
  st = ct_value_length(&n, list);
  pr->begin_section(sec, n);
  if (st != CT_OK) return fail_ct(st, "list");
  for (i = 0; i < n; i++) {
    ct_value *item = NULL;
    if ((st = ct_value_get(&item, list, i)) != CT_OK) return fail_ct(st, "list");
    pr->string(i, value_str(item));
    ct_value_free(item);
  }
  pr->end_section(sec, NULL);
  return 0;
}

/* inspect for an AOTInductor package: device, metadata, constants, call spec. */
static int inspect_package(const struct inspect_printer *pr, const char *path,
                           const char *model_name) {
  ct_package *p = NULL;
  ct_value *meta = NULL, *consts = NULL, *spec = NULL;
  int32_t dev = 0, idx = -1;
  size_t k, n = 0;
  int rc = EXIT_ERROR;
  ct_status st;
  if ((st = ct_package_load(&p, path, model_name)) != CT_OK) return fail_ct(st, path);
  if ((st = ct_package_device(&dev, &idx, p)) != CT_OK ||
      (st = ct_package_metadata(&meta, p)) != CT_OK ||
      (st = ct_package_constant_names(&consts, p)) != CT_OK ||
      (st = ct_package_call_spec(&spec, p)) != CT_OK) {
    fail_ct(st, path);
    goto done;
  }
  pr->package(path, model_name ? model_name : "model", dev, idx);
  ct_value_length(&n, meta);
  pr->begin_section(&sec_meta, n);
  for (k = 0; k < n; k++) {
    ct_value *key = NULL, *val = NULL;
    if ((st = ct_value_dict_item(&key, &val, meta, k)) != CT_OK) {
      fail_ct(st, path);
      goto done;
    }
    pr->entry(k, value_str(key), value_str(val));
    ct_value_free(key);
    ct_value_free(val);
  }
  pr->end_section(&sec_meta, NULL);
  if (walk_str_list(pr, &sec_consts, consts)) goto done;
  if (walk_str_list(pr, &sec_spec, spec)) goto done;
  pr->end();
  rc = 0;
done:
  ct_value_free(spec);
  ct_value_free(consts);
  ct_value_free(meta);
  ct_package_free(p);
  return rc;
}

/* inspect for a .npy file: read whole (npy_read checks it), dtype, shape, first values. */
static int inspect_npy(const struct inspect_printer *pr, const char *path) {
  ct_tensor *t = NULL;
  int rc = npy_read(&t, path, CT_DEVICE_CPU, -1);
  if (!rc) rc = pr->array(path, t);
  if (!rc) pr->end();
  ct_tensor_free(t);
  return rc;
}

/* inspect for a TorchScript module: methods, parameters, buffers, submodules, extra files. */
static int inspect_module(const struct inspect_printer *pr, const char *path) {
  int rc = EXIT_ERROR;
  ct_module *m = NULL;
  ct_value *methods = NULL, *params = NULL, *bufs = NULL, *kids = NULL, *extra = NULL, *self = NULL;
  char *type = NULL;
  size_t k, n;
  ct_status st;
  if ((st = ct_module_load(&m, path, CT_DEVICE_CPU, -1)) != CT_OK) return fail_ct(st, path);
  if ((st = ct_module_methods(&methods, m)) != CT_OK ||
      (st = ct_module_named_parameters(&params, m, 1)) != CT_OK ||
      (st = ct_module_named_buffers(&bufs, m, 1)) != CT_OK ||
      (st = ct_module_named_children(&kids, m, 1)) != CT_OK ||
      (st = ct_module_extra_files(&extra, m)) != CT_OK ||
      (st = ct_value_from_module(&self, m)) != CT_OK) {
    fail_ct(st, path);
    goto done;
  }
  type = value_type(self);
  pr->module(path, type ? type : "?", ct_module_is_training(m));
  n = 0;
  ct_value_length(&n, methods);
  pr->begin_section(&sec_methods, n);
  for (k = 0; k < n; k++) {
    ct_value *name = NULL, *schema = NULL;
    if ((st = ct_value_dict_item(&name, &schema, methods, k)) != CT_OK) {
      fail_ct(st, path);
      goto done;
    }
    pr->method(k, value_str(name), value_str(schema));
    ct_value_free(name);
    ct_value_free(schema);
  }
  pr->end_section(&sec_methods, NULL);
  if (walk_tensors(pr, &sec_params, params)) goto done;
  if (walk_tensors(pr, &sec_bufs, bufs)) goto done;
  n = 0;
  ct_value_length(&n, kids);
  pr->begin_section(&sec_kids, n);
  for (k = 0; k < n; k++) {
    ct_value *name = NULL, *obj = NULL;
    char *t = NULL;
    if ((st = ct_value_dict_item(&name, &obj, kids, k)) != CT_OK) {
      fail_ct(st, path);
      goto done;
    }
    t = value_type(obj);
    pr->submodule(k, value_str(name), t ? t : "?");
    ct_free(t);
    ct_value_free(name);
    ct_value_free(obj);
  }
  pr->end_section(&sec_kids, NULL);
  n = 0;
  ct_value_length(&n, extra);
  pr->begin_section(&sec_extra, n);
  for (k = 0; k < n; k++) {
    ct_value *name = NULL, *content = NULL;
    const char *s = NULL;
    size_t len = 0;
    if ((st = ct_value_dict_item(&name, &content, extra, k)) != CT_OK) {
      fail_ct(st, path);
      goto done;
    }
    ct_value_as_string(&s, &len, content);
    pr->extra_file(k, value_str(name), len);
    ct_value_free(name);
    ct_value_free(content);
  }
  pr->end_section(&sec_extra, NULL);
  pr->end();
  rc = 0;
done:
  ct_free(type);
  ct_value_free(self);
  ct_value_free(extra);
  ct_value_free(kids);
  ct_value_free(bufs);
  ct_value_free(params);
  ct_value_free(methods);
  ct_module_free(m);
  return rc;
}

/* Loads the file once in a child process first (ct_module_verify / ct_pickle_verify, as
 * `ctorch verify`): a file that crashes LibTorch's readers ends that child, and this
 * command reports it (exit status 1) instead of dying with it. 0 when the child loaded it. */
static int verify_first(const char *path, int kind) {
  ct_status st;
  fflush(stdout); /* the check forks: nothing buffered may be written twice */
  st = kind == KIND_PICKLE ? ct_pickle_verify(path) : ct_module_verify(path);
  return st == CT_OK ? 0 : fail_ct(st, path);
}

int cmd_inspect(int argc, char **argv) {
  static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                           {"model-name", required_argument, NULL, 'n'},
                                           {"trusted", no_argument, NULL, 'T'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  const char *path, *model_name = NULL;
  const struct inspect_printer *pr = &inspect_text;
  int c, kind, trusted = 0;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
      case 'h':
        printf(
            "Usage: %s inspect FILE [--json] [--model-name NAME] [--trusted]\n\n"
            "Shows what a model file holds; its kind is read from its contents:\n\n"
            "  TorchScript archive (torch.jit.save): loaded on the CPU; its methods with\n"
            "    their schemas, its parameters and buffers (name, dtype, shape, with totals),\n"
            "    its submodules and the extra files stored in the archive.\n"
            "  torch.save file (a state_dict, a checkpoint; read without running Python\n"
            "    code): the tree of keys, each tensor's dtype and shape, scalars with their\n"
            "    values, Python objects by class, and the totals over all tensors.\n"
            "  AOTInductor package (a name ending in .pt2,\n"
            "    torch._inductor.aoti_compile_and_package): its device, metadata, constant\n"
            "    names and call spec; --model-name picks the model inside it (default:\n"
            "    model). Packages need LibTorch >= 2.6; an older LibTorch reports that it\n"
            "    is not supported (exit status 1).\n"
            "  NumPy array (.npy): its dtype, shape, size and first %d values.\n\n"
            "  --json                    print the same as one JSON object (\"kind\":\n"
            "                            \"torchscript\", \"torch.save\", \"aoti_package\" or\n"
            "                            \"npy\"); on an error {\"file\", \"error\": the message,\n"
            "                            \"status\": the library's status code, if any}\n"
            "  --model-name NAME         the model inside a .pt2 package\n"
            "  --trusted                 load the file in this process only: by default a\n"
            "                            TorchScript archive or torch.save file is first\n"
            "                            loaded in a child process, as 'ctorch verify' does,\n"
            "                            so a file that crashes LibTorch's readers is\n"
            "                            reported (exit status 1) instead of crashing this\n"
            "                            command; --trusted skips that second load (for\n"
            "                            files verified already)\n",
            prog, INSPECT_FIRST_VALUES);
        return 0;
      case 'j': pr = &inspect_json; break;
      case 'n': model_name = optarg; break;
      case 'T': trusted = 1; break;
      default: return option_error("inspect", c, argv);
    }
  }
  if (pr == &inspect_json) json_errors(optind < argc ? argv[optind] : NULL);
  if (optind >= argc) return usage_error("inspect", "no model file given");
  if (optind + 1 < argc) return usage_error("inspect", "one model file only");
  path = argv[optind];
  kind = file_kind(path);
  if (kind == KIND_NPY && !model_name) return inspect_npy(pr, path);
  if (is_package(path) || kind == KIND_PACKAGE) return inspect_package(pr, path, model_name);
  if (model_name)
    return usage_error("inspect", "--model-name applies to AOTInductor packages (.pt2) only");
  /* unreadable (kind -1): nothing is read, and the load below says why */
  if (!trusted && kind != -1 && verify_first(path, kind)) return EXIT_ERROR;
  if (kind == KIND_PICKLE) return inspect_pickle(path, pr == &inspect_json);
  return inspect_module(pr, path); /* unreadable or unknown: the library says why */
}
