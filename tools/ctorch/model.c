/* What run and bench share: model files (TorchScript or .pt2; torch.save files refused),
 * their options (getopt_long), inputs (FILE.npy, SHAPE:DTYPE[:FILL] or a scalar VALUE:DTYPE),
 * outputs flattened with Python-style labels, --timeout. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <getopt.h>
#include <signal.h>
#include <unistd.h>

static int not_shape_or_value(const char *spec, const char *s) {
  return fail(
      "input '%s': bad shape '%s' (sizes joined by x, e.g. 2x3; empty for a 0-d tensor) "
      "or scalar value (a number, or True/False for bool)",
      spec, s);
}

/* A scalar argument VALUE:DTYPE (1.5:float64, -2:int64, +3:int64, True:bool) as a value. */
static int make_scalar(ct_value **out, const char *spec, const char *value, const char *dt) {
  int32_t dtype = dtype_from_name(dt);
  char *end;
  ct_status st;
  if (!dtype) return fail("input '%s': unknown dtype '%s'", spec, dt);
  errno = 0;
  if (dtype == CT_BOOL) {
    int b = !strcmp(value, "True") || !strcmp(value, "true") || !strcmp(value, "1");
    if (!b && strcmp(value, "False") && strcmp(value, "false") && strcmp(value, "0"))
      return fail("input '%s': bad bool '%s' (True, False, true, false, 1, 0)", spec, value);
    st = ct_value_from_bool(out, b);
  } else if (dtype_is_float(dtype) && dtype != CT_COMPLEX64 && dtype != CT_COMPLEX128) {
    double d = strtod(value, &end);
    if (end == value || *end) return not_shape_or_value(spec, value);
    st = ct_value_from_double(out, d);
  } else if (!dtype_is_float(dtype)) {
    long long v = strtoll(value, &end, 10);
    if (errno) return fail("input '%s': integer '%s' out of range", spec, value);
    if (end == value || *end) {
      if (strtod(value, &end) != 0 && !*end) /* 1.5:int64 */
        return fail("input '%s': bad integer '%s' (a float scalar needs a float dtype)", spec,
                    value);
      return not_shape_or_value(spec, value);
    }
    st = ct_value_from_int(out, v);
  } else {
    return fail("input '%s': complex scalars are not supported; give a tensor", spec);
  }
  return st == CT_OK ? 0 : fail_ct(st, spec);
}

/* Whether s is a SHAPE: sizes (digits) joined by x or commas, or empty. */
static int is_shape(const char *s) {
  for (;;) {
    if (!*s) return 1;
    if (!isdigit((unsigned char)*s)) return 0;
    while (isdigit((unsigned char)*s)) s++;
    if (*s == 'x' || *s == ',')
      s++;
    else if (*s)
      return 0;
  }
}

int make_input(ct_tensor **out, ct_value **scalar, const char *spec, int32_t dev, int32_t idx) {
  char buf[256], *shape, *dt, *fill, *p;
  int64_t sizes[32];
  size_t ndim = 0;
  int32_t dtype;
  ct_status st;
  if (ends_with(spec, ".npy")) return npy_read(out, spec, dev, idx);
  if (strlen(spec) >= sizeof buf || !strchr(spec, ':'))
    return fail(
        "input '%s': expected FILE.npy or SHAPE:DTYPE[:FILL] (e.g. 1x3x224x224:float32), "
        "or a scalar VALUE:DTYPE (e.g. 1.5:float64)",
        spec);
  strcpy(buf, spec);
  shape = buf;
  dt = strchr(buf, ':');
  *dt++ = 0;
  fill = strchr(dt, ':');
  if (fill) *fill++ = 0;
  if (!is_shape(shape)) {
    if (fill)
      return fail(
          "input '%s': a scalar VALUE:DTYPE takes no FILL ('%s' is not a shape: sizes "
          "joined by x)",
          spec, shape);
    return make_scalar(scalar, spec, shape, dt);
  }
  for (p = shape; *p;) {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0 || ndim == 32 || (*end && *end != 'x' && *end != ','))
      return fail("input '%s': bad shape '%s' (sizes joined by x, e.g. 2x3; empty for a scalar)",
                  spec, shape);
    sizes[ndim++] = v;
    p = *end ? end + 1 : end;
  }
  if (!(dtype = dtype_from_name(dt))) return fail("input '%s': unknown dtype '%s'", spec, dt);
  if (!fill || !strcmp(fill, "rand")) {
    if (dtype_is_float(dtype)) {
      st = ct_tensor_rand(out, sizes, ndim, dtype, dev, idx, 0);
    } else { /* integers 0..9, booleans 0/1: drawn on the CPU, then converted and moved */
      ct_tensor *r = NULL, *s = NULL;
      st = ct_tensor_rand(&r, sizes, ndim, CT_FLOAT64, CT_DEVICE_CPU, -1, 0);
      if (st == CT_OK) {
        double *x = ct_tensor_data_ptr(r);
        int64_t i, n = ct_tensor_numel(r);
        for (i = 0; i < n; i++) x[i] = floor(x[i] * (dtype == CT_BOOL ? 2 : 10));
        st = ct_tensor_to(&s, r, dev, idx, dtype, 0, 0);
        ct_tensor_free(r);
        *out = s;
      }
    }
  } else if (!strcmp(fill, "randn")) {
    st = ct_tensor_randn(out, sizes, ndim, dtype, dev, idx, 0);
  } else if (!strcmp(fill, "zeros")) {
    st = ct_tensor_zeros(out, sizes, ndim, dtype, dev, idx, 0);
  } else if (!strcmp(fill, "ones")) {
    st = ct_tensor_ones(out, sizes, ndim, dtype, dev, idx, 0);
  } else {
    return fail("input '%s': unknown fill '%s' (rand, randn, zeros, ones)", spec, fill);
  }
  return st == CT_OK ? 0 : fail_ct(st, spec);
}

/* ---- outputs: tensors and containers, flattened with Python-style labels ---- */

int flatten(output *outs, size_t *n, ct_value *v, const char *label) {
  int32_t tag = ct_value_tag(v);
  size_t i, len = 0;
  if (tag == CT_VALUE_LIST || tag == CT_VALUE_TUPLE || tag == CT_VALUE_TENSOR_LIST) {
    if (ct_value_length(&len, v) != CT_OK) return fail_ct(ct_last_error_code(), "output");
    for (i = 0; i < len; i++) {
      ct_value *item = NULL;
      char l[128];
      if (ct_value_get(&item, v, i) != CT_OK) return fail_ct(ct_last_error_code(), "output");
      snprintf(l, sizeof l, "%s[%zu]", label, i);
      if (flatten(outs, n, item, l)) return EXIT_ERROR;
    }
    ct_value_free(v);
    return 0;
  }
  if (tag == CT_VALUE_DICT) {
    if (ct_value_length(&len, v) != CT_OK) return fail_ct(ct_last_error_code(), "output");
    for (i = 0; i < len; i++) {
      ct_value *k = NULL, *item = NULL;
      char l[128], *repr = NULL;
      if (ct_value_dict_item(&k, &item, v, i) != CT_OK)
        return fail_ct(ct_last_error_code(), "output");
      if (ct_value_tag(k) == CT_VALUE_STRING)
        snprintf(l, sizeof l, "%s[\"%s\"]", label, value_str(k));
      else if (ct_value_to_repr(&repr, k) == CT_OK)
        snprintf(l, sizeof l, "%s[%s]", label, repr);
      else
        snprintf(l, sizeof l, "%s[%zu]", label, i);
      ct_free(repr);
      ct_value_free(k);
      if (flatten(outs, n, item, l)) return EXIT_ERROR;
    }
    ct_value_free(v);
    return 0;
  }
  if (*n == MAX_OUTPUTS) return fail("more than %d outputs", MAX_OUTPUTS);
  snprintf(outs[*n].label, sizeof outs[*n].label, "%s", label);
  outs[(*n)++].v = v;
  return 0;
}

/* ---- common model options ---- */

/* --timeout S: LibTorch cannot interrupt a method that never returns (a
 * `while True` in an untrusted model), so the whole process stops: the
 * message (and under --json the JSON error on stdout), then exit status 124 (as timeout(1)). */
static char timeout_json[8192]; /* under --json: the error line for stdout */

void deadline_reached(int sig) {
  static const char msg[] = ": did not finish within --timeout; stopped\n";
  (void)sig;
  if (write(2, prog, strlen(prog)) < 0 || write(2, msg, sizeof msg - 1) < 0) _exit(124);
  if (timeout_json[0] && write(1, timeout_json, strlen(timeout_json)) < 0) _exit(124);
  _exit(124);
}

void start_deadline(long seconds) {
  if (seconds <= 0) return;
  if (json_errors_on()) {
    char *line = json_error_text("did not finish within --timeout; stopped", 0);
    if (line) snprintf(timeout_json, sizeof timeout_json, "%s\n", line);
    cJSON_free(line);
  }
  signal(SIGALRM, deadline_reached);
  alarm((unsigned)seconds);
}

int is_package(const char *path) { return ends_with(path, ".pt2"); }

void model_free(model *t) {
  ct_module_free(t->m);
  ct_package_free(t->p);
  t->m = NULL;
  t->p = NULL;
}

int load_model(model *t, opts *o) {
  ct_status st;
  int kind = file_kind(o->model);
  t->m = NULL;
  t->p = NULL;
  if (kind == KIND_PICKLE || kind == KIND_NPY)
    return fail("%s: a %s (%s, no code): nothing to run; '%s inspect %s' shows what it holds",
                o->model, kind_name(kind),
                kind == KIND_NPY ? "one array" : "tensors and other values", prog, o->model);
  if (is_package(o->model) || kind == KIND_PACKAGE) {
    if ((st = ct_package_load(&t->p, o->model, o->model_name)) != CT_OK)
      return fail_ct(st, o->model);
    /* inputs go where the package runs unless --device says otherwise */
    if (!o->device_given && (st = ct_package_device(&o->dev, &o->idx, t->p)) != CT_OK) {
      model_free(t);
      return fail_ct(st, o->model);
    }
    return 0;
  }
  st = ct_module_load(&t->m, o->model, o->dev, o->idx);
  if (st != CT_OK) return fail_ct(st, o->model);
  if (o->eval && (st = ct_module_eval(t->m)) != CT_OK) {
    model_free(t);
    return fail_ct(st, "eval");
  }
  return 0;
}

void inputs_free(inputs *in) {
  size_t i;
  for (i = 0; i < in->n; i++) {
    ct_value_free(in->v[i]);
    ct_tensor_free(in->t[i]);
  }
  in->n = 0;
}

int make_inputs(inputs *in, const opts *o, int as_values) {
  size_t i;
  memset(in, 0, sizeof *in);
  if (o->seed >= 0) ct_manual_seed((uint64_t)o->seed);
  for (i = 0; i < o->n_inputs; i++) {
    ct_status st;
    in->n = i + 1;
    if (make_input(&in->t[i], &in->v[i], o->inputs[i],
                   o->dev == CT_DEVICE_KEEP ? CT_DEVICE_CPU : o->dev, o->idx)) {
      inputs_free(in);
      return EXIT_ERROR;
    }
    if (!in->t[i] && !as_values) {
      inputs_free(in);
      return fail("input '%s': a scalar; AOTInductor packages take tensors only", o->inputs[i]);
    }
    if (as_values && in->t[i] && (st = ct_value_from_tensor(&in->v[i], in->t[i])) != CT_OK) {
      inputs_free(in);
      return fail_ct(st, o->inputs[i]);
    }
  }
  return 0;
}

/* Parses the options of run and bench (getopt_long; argv[0] is the command). Returns 0,
 * -1 for --help, or an exit code. */
int parse_model_opts(opts *o, const char *cmd, int argc, char **argv, int bench) {
  static const struct option all[] = {
      {"method", required_argument, NULL, 'm'}, {"model-name", required_argument, NULL, 'N'},
      {"device", required_argument, NULL, 'd'}, {"seed", required_argument, NULL, 's'},
      {"eval", no_argument, NULL, 'e'},         {"timeout", required_argument, NULL, 't'},
      {"json", no_argument, NULL, 'j'},         {"help", no_argument, NULL, 'h'},
      {"output", required_argument, NULL, 'o'}, /* run only */
      {"iters", required_argument, NULL, 'i'},  /* bench only, from here on */
      {"warmup", required_argument, NULL, 'w'}, {"threads", required_argument, NULL, 'T'}};
  struct option longopts[sizeof all / sizeof all[0] + 1];
  size_t k, n = 0;
  int c, li = -1;
  long v;
  for (k = 0; k < sizeof all / sizeof all[0]; k++)
    if (bench ? all[k].val != 'o' : !strchr("iwT", all[k].val)) longopts[n++] = all[k];
  memset(&longopts[n], 0, sizeof longopts[n]);
  memset(o, 0, sizeof *o);
  o->dev = CT_DEVICE_CPU;
  o->idx = -1;
  o->iters = 100;
  o->warmup = 10;
  o->seed = 0;
  optind = 0;
  while ((c = getopt_long(argc, argv, bench ? ":hm:" : ":hm:o:", longopts, &li)) != -1) {
    const char *name = li >= 0 ? longopts[li].name : "";
    li = -1;
    switch (c) {
      case 'h': return -1;
      case 'm': o->method = optarg; break;
      case 'N': o->model_name = optarg; break;
      case 'd':
        if (!parse_device(optarg, &o->dev, &o->idx))
          return usage_error(cmd, "bad device '%s' (cpu, cuda, cuda:N)", optarg);
        o->device_given = 1;
        break;
      case 's':
        if (!parse_long(optarg, 0, 0x7fffffffL, &v))
          return usage_error(cmd, "bad seed '%s'", optarg);
        o->seed = v;
        break;
      case 'e': o->eval = 1; break;
      case 't':
        if (!parse_long(optarg, 1, 1000000L, &v))
          return usage_error(cmd, "bad timeout '%s' (whole seconds, 1 or more)", optarg);
        o->timeout = v;
        break;
      case 'j': o->json = 1; break;
      case 'o':
        if (o->n_outs == MAX_OUTPUTS) return usage_error(cmd, "too many -o");
        o->outs[o->n_outs++] = optarg;
        break;
      case 'i':
      case 'w':
      case 'T':
        if (!parse_long(optarg, c != 'w', 100000000L, &v))
          return usage_error(cmd, "bad value '%s' for --%s", optarg, name);
        *(c == 'i' ? &o->iters : c == 'w' ? &o->warmup : &o->threads) = v;
        break;
      default: return option_error(cmd, c, argv);
    }
  }
  for (; optind < argc; optind++) {
    if (!o->model) {
      o->model = argv[optind];
    } else {
      if (o->n_inputs == MAX_INPUTS) return usage_error(cmd, "more than %d inputs", MAX_INPUTS);
      o->inputs[o->n_inputs++] = argv[optind];
    }
  }
  if (o->json) json_errors(o->model);
  if (!o->model) return usage_error(cmd, "no model file given");
  if (is_package(o->model) && (o->method || o->eval))
    return usage_error(cmd, "%s does not apply to an AOTInductor package (.pt2)",
                       o->method ? "--method" : "--eval");
  if (!is_package(o->model) && o->model_name)
    return usage_error(cmd, "--model-name applies to AOTInductor packages (.pt2) only");
  return 0;
}

/* One call of a module: *out is its result value. */
ct_status call_module(ct_value **out, ct_module *m, const opts *o, const inputs *in) {
  const ct_value *const *args = (const ct_value *const *)in->v;
  if (!o->method || !strcmp(o->method, "forward")) return ct_module_forward(out, m, args, in->n);
  return ct_module_call(out, m, o->method, args, in->n, NULL, NULL, 0);
}

/* One call of a package: new tensors in outs[0..*n_outs). */
ct_status call_package(ct_tensor **outs, size_t *n_outs, ct_package *p, const inputs *in) {
  return ct_package_run(outs, MAX_OUTPUTS, n_outs, p, (const ct_tensor *const *)in->t, in->n);
}

const char *inputs_help =
    "MODEL is a TorchScript archive (torch.jit.save) or, when its name ends in .pt2, an\n"
    "AOTInductor package (torch._inductor.aoti_compile_and_package; needs LibTorch >= 2.6,\n"
    "an older LibTorch reports that it is not supported).\n\n"
    "A torch.save file holds no code: 'inspect' shows it, there is nothing to run.\n\n"
    "INPUTS, one per positional argument of the method, each either\n"
    "  FILE.npy                  a numpy array (little-endian, C order)\n"
    "  SHAPE:DTYPE[:FILL]        a new tensor, e.g. 1x3x224x224:float32, 4:int64:zeros, :float64\n"
    "                            (empty SHAPE: a 0-d tensor); FILL is rand (default; integers\n"
    "                            0..9), randn, zeros or ones; the random generator is seeded\n"
    "                            with --seed (default 0)\n"
    "  VALUE:DTYPE               a scalar argument (a TorchScript float, int or bool, not a\n"
    "                            tensor): 1.5:float64, -2:int64, +3:int64 (a sign: 3:int64 is\n"
    "                            a shape), True:bool; write '--' before one starting with '-'\n"
    "Model options (--name=VALUE or --name VALUE):\n"
    "  --method M, -m M          run method M instead of forward (TorchScript only)\n"
    "  --device D                cpu (default), cuda or cuda:N: where the model and inputs go\n"
    "                            (for a package: where the inputs go; default: the package's\n"
    "                            device)\n"
    "  --eval                    switch the module to eval mode first (torch.jit.load does not;\n"
    "                            TorchScript only)\n"
    "  --model-name NAME         the model inside a .pt2 package (default: model)\n"
    "  --seed S                  seed for random inputs (default 0)\n"
    "  --timeout S               stop the whole command after S seconds, exit status 124 (a\n"
    "                            method that never returns cannot be interrupted otherwise)\n";
