/* `ctorch inspect`: what a model file holds (methods, parameters, buffers, sizes). */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int64_t count, numel;
  size_t bytes;
} totals;

static int print_tensors(ct_value *dict, const char *kind, int json, totals *tot) {
  size_t i, n = 0;
  ct_value_len(&n, dict);
  memset(tot, 0, sizeof *tot);
  if (json) printf(", \"%s\": [", kind);
  for (i = 0; i < n; i++) {
    ct_value *k = NULL, *v = NULL;
    ct_tensor *t = NULL;
    char shape[512];
    ct_status st = ct_value_dict_item(&k, &v, dict, i);
    if (st == CT_OK) st = ct_value_to_tensor(&t, v);
    if (st != CT_OK) {
      ct_value_free(k);
      ct_value_free(v);
      return fail_ct(st, kind);
    }
    shape_str(shape, sizeof shape, t);
    if (json) {
      printf("%s{\"name\": ", i ? ", " : "");
      json_str(stdout, value_str(k));
      printf(", \"dtype\": \"%s\", \"shape\": ", dtype_name(ct_tensor_dtype(t)));
      json_shape(stdout, t);
      printf(", \"device\": \"%s\", \"numel\": %lld, \"requires_grad\": %s}",
             ct_device_type_name(ct_tensor_device_type(t)), (long long)ct_tensor_numel(t),
             ct_tensor_requires_grad(t) ? "true" : "false");
    } else {
      printf("  %-40s %s%s\n", value_str(k), dtype_name(ct_tensor_dtype(t)), shape);
    }
    tot->count++;
    tot->numel += ct_tensor_numel(t);
    tot->bytes += ct_tensor_nbytes(t);
    ct_tensor_free(t);
    ct_value_free(k);
    ct_value_free(v);
  }
  if (json)
    printf("], \"%s_total\": {\"count\": %lld, \"numel\": %lld, \"bytes\": %zu}", kind,
           (long long)tot->count, (long long)tot->numel, tot->bytes);
  return 0;
}

static void human_bytes(char *buf, size_t n, size_t bytes) {
  if (bytes >= 1u << 30)
    snprintf(buf, n, "%.1f GiB", bytes / 1073741824.0);
  else if (bytes >= 1u << 20)
    snprintf(buf, n, "%.1f MiB", bytes / 1048576.0);
  else if (bytes >= 1u << 10)
    snprintf(buf, n, "%.1f KiB", bytes / 1024.0);
  else
    snprintf(buf, n, "%zu bytes", bytes);
}

/* Prints a List[str] value as JSON strings or as indented lines. */
static int print_str_list(const ct_value *list, int json, const char *indent) {
  size_t i, n = 0;
  ct_status st;
  if ((st = ct_value_len(&n, list)) != CT_OK) return fail_ct(st, "list");
  for (i = 0; i < n; i++) {
    ct_value *item = NULL;
    if ((st = ct_value_get(&item, list, i)) != CT_OK) return fail_ct(st, "list");
    if (json) {
      if (i) printf(", ");
      json_str(stdout, value_str(item));
    } else {
      printf("%s%s\n", indent, value_str(item));
    }
    ct_value_free(item);
  }
  return 0;
}

/* inspect for an AOTInductor package: device, metadata, constants, call spec. */
static int inspect_package(const char *path, const char *model_name, int json) {
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
  if (json) {
    printf("{\"file\": ");
    json_str(stdout, path);
    printf(", \"kind\": \"aoti_package\", \"model_name\": ");
    json_str(stdout, model_name ? model_name : "model");
    printf(", \"device\": \"%s\", \"device_index\": %d, \"metadata\": {", ct_device_type_name(dev),
           (int)idx);
  } else {
    printf("%s: AOTInductor package, model '%s', runs on %s", path,
           model_name ? model_name : "model", ct_device_type_name(dev));
    if (idx >= 0) printf(":%d", (int)idx);
    printf("\nmetadata:\n");
  }
  ct_value_len(&n, meta);
  for (k = 0; k < n; k++) {
    ct_value *key = NULL, *val = NULL;
    if ((st = ct_value_dict_item(&key, &val, meta, k)) != CT_OK) {
      fail_ct(st, path);
      goto done;
    }
    if (json) {
      if (k) printf(", ");
      json_str(stdout, value_str(key));
      printf(": ");
      json_str(stdout, value_str(val));
    } else {
      printf("  %-40s %s\n", value_str(key), value_str(val));
    }
    ct_value_free(key);
    ct_value_free(val);
  }
  n = 0;
  ct_value_len(&n, consts);
  if (json)
    printf("}, \"constants\": [");
  else
    printf("constants (%zu):\n", n);
  if (print_str_list(consts, json, "  ")) goto done;
  if (json)
    printf("], \"call_spec\": [");
  else
    printf("call spec (in_spec, out_spec):\n");
  if (print_str_list(spec, json, "  ")) goto done;
  if (json) printf("]}\n");
  rc = 0;
done:
  ct_value_free(spec);
  ct_value_free(consts);
  ct_value_free(meta);
  ct_package_free(p);
  return rc;
}

int cmd_inspect(int argc, char **argv) {
  const char *path = NULL, *model_name = NULL;
  int json = 0, i, rc = EXIT_ERROR;
  ct_module *m = NULL;
  ct_value *methods = NULL, *params = NULL, *bufs = NULL, *kids = NULL, *extra = NULL, *self = NULL;
  char *type = NULL;
  size_t k, n;
  totals tp, tb;
  ct_status st;
  for (i = 0; i < argc; i++) {
    if (is_help(argv[i])) {
      printf(
          "Usage: %s inspect MODEL [--json] [--model-name NAME]\n\n"
          "Loads a TorchScript archive (torch.jit.save) on the CPU and lists its methods\n"
          "with their schemas, its parameters and buffers (name, dtype, shape, with totals),\n"
          "its submodules and the extra files stored in the archive. --json prints the same\n"
          "as one JSON object.\n\n"
          "A MODEL whose name ends in .pt2 is an AOTInductor package\n"
          "(torch._inductor.aoti_compile_and_package): its device, metadata, constant names\n"
          "and call spec are listed; --model-name picks the model inside it (default:\n"
          "model). Packages need LibTorch >= 2.6; an older LibTorch reports that it is not\n"
          "supported (exit status 1).\n",
          prog);
      return 0;
    }
    if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--model-name")) {
      if (i + 1 >= argc) return usage_error("inspect", "--model-name needs a value");
      model_name = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1])
      return usage_error("inspect", "unknown option '%s'", argv[i]);
    else if (!path)
      path = argv[i];
    else
      return usage_error("inspect", "one model file only");
  }
  if (!path) return usage_error("inspect", "no model file given");
  if (is_package(path)) return inspect_package(path, model_name, json);
  if (model_name)
    return usage_error("inspect", "--model-name applies to AOTInductor packages (.pt2) only");
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
  if (json) {
    printf("{\"file\": ");
    json_str(stdout, path);
    printf(", \"kind\": \"torchscript\", \"type\": ");
    json_str(stdout, type ? type : "?");
    printf(", \"training\": %s, \"methods\": [", ct_module_is_training(m) ? "true" : "false");
  } else {
    printf("%s: TorchScript module %s (%s mode)\n", path, type ? type : "?",
           ct_module_is_training(m) ? "training" : "eval");
  }
  n = 0;
  ct_value_len(&n, methods);
  if (!json) printf("methods (%zu):\n", n);
  for (k = 0; k < n; k++) {
    ct_value *name = NULL, *schema = NULL;
    if ((st = ct_value_dict_item(&name, &schema, methods, k)) != CT_OK) {
      fail_ct(st, path);
      goto done;
    }
    if (json) {
      printf("%s{\"name\": ", k ? ", " : "");
      json_str(stdout, value_str(name));
      printf(", \"schema\": ");
      json_str(stdout, value_str(schema));
      printf("}");
    } else {
      printf("  %s\n", value_str(schema));
    }
    ct_value_free(name);
    ct_value_free(schema);
  }
  if (json) printf("]");
  if (!json) {
    size_t np = 0;
    ct_value_len(&np, params);
    printf("parameters (%zu):\n", np);
  }
  if (print_tensors(params, "parameters", json, &tp)) goto done;
  if (!json) {
    char hb[64];
    size_t nb = 0;
    human_bytes(hb, sizeof hb, tp.bytes);
    printf("  total: %lld parameters, %lld elements, %s\n", (long long)tp.count,
           (long long)tp.numel, hb);
    ct_value_len(&nb, bufs);
    printf("buffers (%zu):\n", nb);
  }
  if (print_tensors(bufs, "buffers", json, &tb)) goto done;
  if (!json) {
    char hb[64];
    human_bytes(hb, sizeof hb, tb.bytes);
    printf("  total: %lld buffers, %lld elements, %s\n", (long long)tb.count, (long long)tb.numel,
           hb);
  }
  n = 0;
  ct_value_len(&n, kids);
  if (json)
    printf(", \"submodules\": [");
  else
    printf("submodules (%zu):\n", n);
  for (k = 0; k < n; k++) {
    ct_value *name = NULL, *obj = NULL;
    char *t = NULL;
    if ((st = ct_value_dict_item(&name, &obj, kids, k)) != CT_OK) {
      fail_ct(st, path);
      goto done;
    }
    t = value_type(obj);
    if (json) {
      printf("%s{\"name\": ", k ? ", " : "");
      json_str(stdout, value_str(name));
      printf(", \"type\": ");
      json_str(stdout, t ? t : "?");
      printf("}");
    } else {
      printf("  %-40s %s\n", value_str(name), t ? t : "?");
    }
    ct_free(t);
    ct_value_free(name);
    ct_value_free(obj);
  }
  n = 0;
  ct_value_len(&n, extra);
  if (json)
    printf("], \"extra_files\": [");
  else
    printf("extra files (%zu):\n", n);
  for (k = 0; k < n; k++) {
    ct_value *name = NULL, *content = NULL;
    const char *s = NULL;
    size_t len = 0;
    if ((st = ct_value_dict_item(&name, &content, extra, k)) != CT_OK) {
      fail_ct(st, path);
      goto done;
    }
    ct_value_to_string(&s, &len, content);
    if (json) {
      printf("%s{\"name\": ", k ? ", " : "");
      json_str(stdout, value_str(name));
      printf(", \"bytes\": %zu}", len);
    } else {
      printf("  %-40s %zu bytes\n", value_str(name), len);
    }
    ct_value_free(name);
    ct_value_free(content);
  }
  if (json) printf("]}\n");
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
