/* The `ctorch` command: look at, run, time and check model files without writing code.
 * C99 on the public header only. Subcommands: info, inspect, run, bench, verify (see usage()).
 * Model files are TorchScript archives (torch.jit.save) or, named *.pt2, AOTInductor
 * packages (ct_package_*, LibTorch >= 2.6; older builds report CT_ERR_NOT_SUPPORTED).
 * Exit codes: 0 success, 1 an error (the library's message is printed), 2 bad usage. */
#define _GNU_SOURCE /* dladdr */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ctorch.h>

#define EXIT_ERROR 1
#define EXIT_USAGE 2
#define MAX_INPUTS 64
#define MAX_OUTPUTS 256

static const char *prog = "ctorch";

/* ---- messages ---- */

static int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return EXIT_ERROR;
}

/* A failed library call: what we were doing, then the library's own message. */
static int fail_ct(ct_status st, const char *what) {
  fprintf(stderr, "%s: %s: %s (status %d)\n", prog, what, ct_last_error(), (int)st);
  return EXIT_ERROR;
}

static int usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s %s: ", prog, cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry '%s %s --help'.\n", prog, cmd);
  va_end(ap);
  return EXIT_USAGE;
}

static int is_help(const char *a) { return !strcmp(a, "-h") || !strcmp(a, "--help"); }

/* ---- dtypes ---- */

static const struct {
  int32_t code;
  const char *name;  /* as torch spells it */
  const char *descr; /* numpy .npy descr, NULL if numpy has none */
} dtypes[] = {
    {CT_BOOL, "bool", "|b1"},           {CT_UINT8, "uint8", "|u1"},
    {CT_INT8, "int8", "|i1"},           {CT_INT16, "int16", "<i2"},
    {CT_INT32, "int32", "<i4"},         {CT_INT64, "int64", "<i8"},
    {CT_FLOAT16, "float16", "<f2"},     {CT_BFLOAT16, "bfloat16", NULL},
    {CT_FLOAT32, "float32", "<f4"},     {CT_FLOAT64, "float64", "<f8"},
    {CT_COMPLEX64, "complex64", "<c8"}, {CT_COMPLEX128, "complex128", "<c16"},
};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

static int32_t dtype_from_name(const char *s) {
  static const struct {
    const char *alias;
    int32_t code;
  } aliases[] = {{"float", CT_FLOAT32}, {"f32", CT_FLOAT32},   {"double", CT_FLOAT64},
                 {"f64", CT_FLOAT64},   {"half", CT_FLOAT16},  {"f16", CT_FLOAT16},
                 {"long", CT_INT64},    {"int", CT_INT32},     {"i64", CT_INT64},
                 {"i32", CT_INT32},     {"bf16", CT_BFLOAT16}, {"u8", CT_UINT8}};
  size_t i;
  for (i = 0; i < N_DTYPES; i++)
    if (!strcmp(s, dtypes[i].name)) return dtypes[i].code;
  for (i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (!strcmp(s, aliases[i].alias)) return aliases[i].code;
  return 0;
}

static const char *dtype_name(int32_t code) {
  size_t i;
  for (i = 0; i < N_DTYPES; i++)
    if (dtypes[i].code == code) return dtypes[i].name;
  return ct_dtype_name(code);
}

static int dtype_is_float(int32_t d) {
  return d == CT_FLOAT16 || d == CT_BFLOAT16 || d == CT_FLOAT32 || d == CT_FLOAT64 ||
         d == CT_COMPLEX64 || d == CT_COMPLEX128;
}

/* ---- JSON and text helpers ---- */

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c == '\n')
      fputs("\\n", f);
    else if (c == '\t')
      fputs("\\t", f);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static void shape_str(char *buf, size_t n, const ct_tensor *t) {
  int64_t d, nd = ct_tensor_ndim(t);
  const int64_t *s = ct_tensor_sizes(t);
  size_t used = (size_t)snprintf(buf, n, "[");
  for (d = 0; d < nd && used < n; d++)
    used += (size_t)snprintf(buf + used, n - used, "%s%lld", d ? ", " : "", (long long)s[d]);
  if (used < n) snprintf(buf + used, n - used, "]");
}

static void json_shape(FILE *f, const ct_tensor *t) {
  char buf[512];
  shape_str(buf, sizeof buf, t);
  fputs(buf, f);
}

/* A scalar string value (dict keys, names). Borrowed from v. */
static const char *value_str(const ct_value *v) {
  const char *s = NULL;
  size_t len = 0;
  return ct_value_to_string(&s, &len, v) == CT_OK ? s : "?";
}

static char *value_type(const ct_value *v) {
  char *s = NULL;
  if (ct_value_type_str(&s, v) != CT_OK) return NULL;
  return s;
}

/* ---- parsing helpers ---- */

static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

/* "cpu", "cuda", "cuda:1" */
static int parse_device(const char *s, int32_t *type, int32_t *index) {
  long idx;
  if (!strcmp(s, "cpu")) {
    *type = CT_DEVICE_CPU;
    *index = -1;
    return 1;
  }
  if (!strcmp(s, "cuda")) {
    *type = CT_DEVICE_CUDA;
    *index = -1;
    return 1;
  }
  if (!strncmp(s, "cuda:", 5) && parse_long(s + 5, 0, 1024, &idx)) {
    *type = CT_DEVICE_CUDA;
    *index = (int32_t)idx;
    return 1;
  }
  return 0;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

/* ---- .npy files (version 1-3, little-endian, C order) ---- */

static int npy_read(ct_tensor **out, const char *path, int32_t dev, int32_t idx) {
  FILE *f = fopen(path, "rb");
  unsigned char pre[12];
  char *hdr = NULL, *p;
  size_t hlen, i, ndim = 0, hsize;
  int64_t sizes[32], numel = 1;
  int32_t dtype = 0;
  void *data = NULL;
  int rc = EXIT_ERROR;
  ct_status st;
  if (!f) return fail("%s: %s", path, strerror(errno));
  if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6)) {
    fail("%s: not a .npy file (no \\x93NUMPY magic)", path);
    goto done;
  }
  hsize = pre[6] == 1 ? 2 : 4; /* header length: 2 bytes in version 1, 4 after */
  if (fread(pre + 8, 1, hsize, f) != hsize) {
    fail("%s: truncated .npy header", path);
    goto done;
  }
  hlen = pre[8] | (size_t)pre[9] << 8;
  if (hsize == 4) hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
  hdr = malloc(hlen + 1);
  if (!hdr || fread(hdr, 1, hlen, f) != hlen) {
    fail("%s: truncated .npy header", path);
    goto done;
  }
  hdr[hlen] = 0;
  if ((p = strstr(hdr, "'descr'")) && (p = strchr(p + 7, '\''))) {
    char descr[16] = {0};
    size_t k = 0;
    for (p++; *p && *p != '\'' && k < sizeof descr - 1; p++) descr[k++] = *p;
    if (descr[0] == '=') descr[0] = '<';
    if (!strcmp(descr, "<b1")) strcpy(descr, "|b1");
    for (i = 0; i < N_DTYPES; i++)
      if (dtypes[i].descr &&
          (!strcmp(descr, dtypes[i].descr) || (descr[0] == '<' && dtypes[i].descr[0] == '|' &&
                                               !strcmp(descr + 1, dtypes[i].descr + 1))))
        dtype = dtypes[i].code;
    if (!dtype) {
      fail("%s: unsupported .npy dtype '%s' (little-endian numbers only)", path, descr);
      goto done;
    }
  } else {
    fail("%s: .npy header has no 'descr'", path);
    goto done;
  }
  if ((p = strstr(hdr, "'fortran_order'")) && (p = strchr(p + 15, ':')) &&
      !strncmp(p + 1 + strspn(p + 1, " "), "True", 4)) {
    fail("%s: Fortran-order arrays are not supported (save np.ascontiguousarray(a))", path);
    goto done;
  }
  if (!(p = strstr(hdr, "'shape'")) || !(p = strchr(p, '('))) {
    fail("%s: .npy header has no 'shape'", path);
    goto done;
  }
  for (p++; *p && *p != ')';) {
    if (*p == '-') {
      fail("%s: .npy shape has a negative dimension", path);
      goto done;
    }
    if (isdigit((unsigned char)*p)) {
      if (ndim == 32) {
        fail("%s: more than 32 dimensions", path);
        goto done;
      }
      sizes[ndim] = strtoll(p, &p, 10);
      if (__builtin_mul_overflow(numel, sizes[ndim++], &numel)) {
        fail("%s: .npy shape has more elements than fit in 64 bits", path);
        goto done;
      }
    } else {
      p++;
    }
  }
  {
    size_t nbytes;
    if (__builtin_mul_overflow((size_t)numel, ct_dtype_element_size(dtype), &nbytes)) {
      fail("%s: .npy shape has more bytes than fit in 64 bits", path);
      goto done;
    }
    data = malloc(nbytes ? nbytes : 1);
    if (!data) {
      fail("%s: out of memory", path);
      goto done;
    }
    if (fread(data, 1, nbytes, f) != nbytes) {
      fail("%s: file ends before its %zu bytes of data", path, nbytes);
      goto done;
    }
  }
  st = ct_tensor_from_data(out, data, sizes, ndim, dtype, dev, idx);
  if (st != CT_OK) {
    fail_ct(st, path);
    goto done;
  }
  rc = 0;
done:
  free(data);
  free(hdr);
  fclose(f);
  return rc;
}

/* Writes a tensor as .npy (CPU, contiguous; bfloat16 is written as float32). */
static int npy_write(const char *path, const ct_tensor *t) {
  ct_tensor *c = NULL, *cc = NULL;
  int32_t dtype = ct_tensor_dtype(t);
  const char *descr = NULL;
  char hdr[1024], shape[600];
  size_t i, len, pad;
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  FILE *f;
  ct_status st;
  int64_t d, nd = ct_tensor_ndim(t);
  int rc = EXIT_ERROR;
  if (dtype == CT_BFLOAT16) dtype = CT_FLOAT32;
  for (i = 0; i < N_DTYPES; i++)
    if (dtypes[i].code == dtype) descr = dtypes[i].descr;
  if (!descr) return fail("%s: numpy has no dtype for %s", path, dtype_name(dtype));
  if ((st = ct_tensor_to(&c, t, CT_DEVICE_CPU, -1, dtype, 0, 0)) != CT_OK ||
      (st = ct_tensor_contiguous(&cc, c)) != CT_OK) {
    ct_tensor_free(c);
    return fail_ct(st, path);
  }
  len = (size_t)snprintf(shape, sizeof shape, "(");
  for (d = 0; d < nd && len < sizeof shape; d++)
    len += (size_t)snprintf(shape + len, sizeof shape - len, "%lld,%s",
                            (long long)ct_tensor_sizes(cc)[d], d + 1 < nd ? " " : "");
  if (nd > 1 && len > 1) len--; /* (2, 3) not (2, 3,) */
  if (len < sizeof shape) snprintf(shape + len, sizeof shape - len, ")");
  len = (size_t)snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                         descr, shape);
  pad = 64 - (10 + len + 1) % 64;
  memset(hdr + len, ' ', pad);
  len += pad;
  hdr[len++] = '\n';
  pre[8] = (unsigned char)(len & 0xff);
  pre[9] = (unsigned char)(len >> 8);
  if (!(f = fopen(path, "wb"))) {
    fail("%s: %s", path, strerror(errno));
    goto done;
  }
  if (fwrite(pre, 1, 10, f) != 10 || fwrite(hdr, 1, len, f) != len ||
      fwrite(ct_tensor_data_ptr(cc), 1, ct_tensor_nbytes(cc), f) != ct_tensor_nbytes(cc)) {
    fail("%s: write failed: %s", path, strerror(errno));
    fclose(f);
    goto done;
  }
  if (fclose(f)) {
    fail("%s: %s", path, strerror(errno));
    goto done;
  }
  rc = 0;
done:
  ct_tensor_free(cc);
  ct_tensor_free(c);
  return rc;
}

/* ---- inputs: FILE.npy or SHAPE:DTYPE[:rand|randn|zeros|ones] ---- */

static int make_input(ct_tensor **out, const char *spec, int32_t dev, int32_t idx) {
  char buf[256], *shape, *dt, *fill, *p;
  int64_t sizes[32];
  size_t ndim = 0;
  int32_t dtype;
  ct_status st;
  if (ends_with(spec, ".npy")) return npy_read(out, spec, dev, idx);
  if (strlen(spec) >= sizeof buf || !strchr(spec, ':'))
    return fail("input '%s': expected FILE.npy or SHAPE:DTYPE[:FILL] (e.g. 1x3x224x224:float32)",
                spec);
  strcpy(buf, spec);
  shape = buf;
  dt = strchr(buf, ':');
  *dt++ = 0;
  fill = strchr(dt, ':');
  if (fill) *fill++ = 0;
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

typedef struct {
  char label[128];
  ct_value *v; /* owned */
} output;

static int flatten(output *outs, size_t *n, ct_value *v, const char *label) {
  int32_t tag = ct_value_tag(v);
  size_t i, len = 0;
  if (tag == CT_VALUE_LIST || tag == CT_VALUE_TUPLE || tag == CT_VALUE_TENSOR_LIST) {
    if (ct_value_len(&len, v) != CT_OK) return fail_ct(ct_last_error_code(), "output");
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
    if (ct_value_len(&len, v) != CT_OK) return fail_ct(ct_last_error_code(), "output");
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

static double element(const ct_tensor *t, int64_t i) {
  const void *p = ct_tensor_data_ptr(t);
  switch (ct_tensor_dtype(t)) {
    case CT_BOOL: return ((const uint8_t *)p)[i];
    case CT_UINT8: return ((const uint8_t *)p)[i];
    case CT_INT8: return ((const int8_t *)p)[i];
    case CT_INT16: return ((const int16_t *)p)[i];
    case CT_INT32: return ((const int32_t *)p)[i];
    case CT_INT64: return (double)((const int64_t *)p)[i];
    case CT_FLOAT32: return ((const float *)p)[i];
    case CT_FLOAT64: return ((const double *)p)[i];
    default: return NAN;
  }
}

/* Short form: dtype[shape] device, then up to 3 leading and 3 trailing elements. */
static int print_tensor(const char *label, const ct_tensor *t) {
  ct_tensor *c = NULL, *cc = NULL;
  char shape[512];
  int64_t i, n = ct_tensor_numel(t);
  int32_t dt = ct_tensor_dtype(t);
  int32_t conv = (dt == CT_FLOAT16 || dt == CT_BFLOAT16) ? CT_FLOAT32 : CT_DTYPE_KEEP;
  ct_status st;
  shape_str(shape, sizeof shape, t);
  printf("%s: %s%s %s%s", label, dtype_name(dt), shape,
         ct_device_type_name(ct_tensor_device_type(t)),
         ct_tensor_requires_grad(t) ? " requires_grad" : "");
  if (dt == CT_COMPLEX64 || dt == CT_COMPLEX128) {
    printf("\n");
    return 0;
  }
  if ((st = ct_tensor_to(&c, t, CT_DEVICE_CPU, -1, conv, 0, 0)) != CT_OK ||
      (st = ct_tensor_contiguous(&cc, c)) != CT_OK) {
    printf("\n");
    ct_tensor_free(c);
    return fail_ct(st, label);
  }
  printf(" = [");
  for (i = 0; i < n; i++) {
    if (n > 6 && i == 3) {
      printf(", ...");
      i = n - 3;
    }
    printf("%s%.6g", i ? ", " : "", element(cc, i));
  }
  printf("]\n");
  ct_tensor_free(cc);
  ct_tensor_free(c);
  return 0;
}

/* ---- common model options ---- */

typedef struct {
  const char *model, *method, *model_name;
  const char *inputs[MAX_INPUTS];
  size_t n_inputs;
  const char *outs[MAX_OUTPUTS];
  size_t n_outs;
  int32_t dev, idx;
  long iters, warmup, threads, seed, timeout;
  int eval, json, device_given;
} opts;

/* --timeout S: LibTorch cannot interrupt a method that never returns (a
 * `while True` in an untrusted model), so the whole process stops: the
 * message, then exit status 124 (as timeout(1)). */
static void deadline_reached(int sig) {
  static const char msg[] = ": did not finish within --timeout; stopped\n";
  (void)sig;
  if (write(2, prog, strlen(prog)) < 0 || write(2, msg, sizeof msg - 1) < 0) _exit(124);
  _exit(124);
}

static void start_deadline(long seconds) {
  if (seconds <= 0) return;
  signal(SIGALRM, deadline_reached);
  alarm((unsigned)seconds);
}

/* What run and bench call: a TorchScript module or an AOTInductor package (*.pt2). */
typedef struct {
  ct_module *m;
  ct_package *p;
} model;

static int is_package(const char *path) { return ends_with(path, ".pt2"); }

static void model_free(model *t) {
  ct_module_free(t->m);
  ct_package_free(t->p);
  t->m = NULL;
  t->p = NULL;
}

static int load_model(model *t, opts *o) {
  ct_status st;
  t->m = NULL;
  t->p = NULL;
  if (is_package(o->model)) {
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

/* The inputs of one call: tensors, and for modules the same tensors as values. */
typedef struct {
  ct_tensor *t[MAX_INPUTS];
  ct_value *v[MAX_INPUTS];
  size_t n;
} inputs;

static void inputs_free(inputs *in) {
  size_t i;
  for (i = 0; i < in->n; i++) {
    ct_value_free(in->v[i]);
    ct_tensor_free(in->t[i]);
  }
  in->n = 0;
}

static int make_inputs(inputs *in, const opts *o, int as_values) {
  size_t i;
  memset(in, 0, sizeof *in);
  if (o->seed >= 0) ct_manual_seed((uint64_t)o->seed);
  for (i = 0; i < o->n_inputs; i++) {
    ct_status st;
    if (make_input(&in->t[i], o->inputs[i], o->dev == CT_DEVICE_KEEP ? CT_DEVICE_CPU : o->dev,
                   o->idx)) {
      inputs_free(in);
      return EXIT_ERROR;
    }
    in->n = i + 1;
    if (as_values && (st = ct_value_from_tensor(&in->v[i], in->t[i])) != CT_OK) {
      inputs_free(in);
      return fail_ct(st, o->inputs[i]);
    }
  }
  return 0;
}

/* Parses the options shared by run and bench. Returns 0, or an exit code. */
static int parse_model_opts(opts *o, const char *cmd, int argc, char **argv, int bench) {
  int i;
  memset(o, 0, sizeof *o);
  o->dev = CT_DEVICE_CPU;
  o->idx = -1;
  o->iters = 100;
  o->warmup = 10;
  o->seed = 0;
  for (i = 0; i < argc; i++) {
    const char *a = argv[i];
    long v;
#define NEED_VALUE() \
  if (i + 1 >= argc) return usage_error(cmd, "%s needs a value", a)
    if (!strcmp(a, "--method") || !strcmp(a, "-m")) {
      NEED_VALUE();
      o->method = argv[++i];
    } else if (!strcmp(a, "--model-name")) {
      NEED_VALUE();
      o->model_name = argv[++i];
    } else if (!strcmp(a, "--device")) {
      NEED_VALUE();
      if (!parse_device(argv[++i], &o->dev, &o->idx))
        return usage_error(cmd, "bad device '%s' (cpu, cuda, cuda:N)", argv[i]);
      o->device_given = 1;
    } else if (!strcmp(a, "--seed")) {
      NEED_VALUE();
      if (!parse_long(argv[++i], 0, 0x7fffffffL, &v))
        return usage_error(cmd, "bad seed '%s'", argv[i]);
      o->seed = v;
    } else if (!strcmp(a, "--eval")) {
      o->eval = 1;
    } else if (!strcmp(a, "--timeout")) {
      NEED_VALUE();
      if (!parse_long(argv[++i], 1, 1000000L, &v))
        return usage_error(cmd, "bad timeout '%s' (whole seconds, 1 or more)", argv[i]);
      o->timeout = v;
    } else if (!strcmp(a, "--json") && bench) {
      o->json = 1;
    } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && !bench) {
      NEED_VALUE();
      if (o->n_outs == MAX_OUTPUTS) return usage_error(cmd, "too many -o");
      o->outs[o->n_outs++] = argv[++i];
    } else if (bench &&
               (!strcmp(a, "--iters") || !strcmp(a, "--warmup") || !strcmp(a, "--threads"))) {
      NEED_VALUE();
      if (!parse_long(argv[++i], !strcmp(a, "--iters") || !strcmp(a, "--threads"), 100000000L, &v))
        return usage_error(cmd, "bad value '%s' for %s", argv[i], a);
      if (!strcmp(a, "--iters"))
        o->iters = v;
      else if (!strcmp(a, "--warmup"))
        o->warmup = v;
      else
        o->threads = v;
    } else if (a[0] == '-' && a[1]) {
      return usage_error(cmd, "unknown option '%s'", a);
    } else if (!o->model) {
      o->model = a;
    } else {
      if (o->n_inputs == MAX_INPUTS) return usage_error(cmd, "more than %d inputs", MAX_INPUTS);
      o->inputs[o->n_inputs++] = a;
    }
#undef NEED_VALUE
  }
  if (!o->model) return usage_error(cmd, "no model file given");
  if (is_package(o->model) && (o->method || o->eval))
    return usage_error(cmd, "%s does not apply to an AOTInductor package (.pt2)",
                       o->method ? "--method" : "--eval");
  if (!is_package(o->model) && o->model_name)
    return usage_error(cmd, "--model-name applies to AOTInductor packages (.pt2) only");
  return 0;
}

/* One call of a module: *out is its result value. */
static ct_status call_module(ct_value **out, ct_module *m, const opts *o, const inputs *in) {
  const ct_value *const *args = (const ct_value *const *)in->v;
  if (!o->method || !strcmp(o->method, "forward")) return ct_module_forward(out, m, args, in->n);
  return ct_module_call(out, m, o->method, args, in->n, NULL, NULL, 0);
}

/* One call of a package: new tensors in outs[0..*n_outs). */
static ct_status call_package(ct_tensor **outs, size_t *n_outs, ct_package *p, const inputs *in) {
  return ct_package_run(outs, MAX_OUTPUTS, n_outs, p, (const ct_tensor *const *)in->t, in->n);
}

/* ---- ctorch info ---- */

static int cmd_info(int argc, char **argv) {
  Dl_info dl;
  const char *where = "?";
  int json = 0, i;
  int32_t ndev = ct_cuda_device_count();
  for (i = 0; i < argc; i++) {
    if (is_help(argv[i])) {
      printf(
          "Usage: %s info [--json]\n\n"
          "Prints the ctorch and LibTorch versions, the ABI version (library and header),\n"
          "whether CUDA is compiled in and available, the CUDA devices, the intra-op and\n"
          "inter-op thread counts, and the file the library was loaded from.\n",
          prog);
      return 0;
    }
    if (!strcmp(argv[i], "--json"))
      json = 1;
    else
      return usage_error("info", "unknown argument '%s'", argv[i]);
  }
  memset(&dl, 0, sizeof dl);
  if (dladdr((void *)(uintptr_t)&ct_version, &dl) && dl.dli_fname) where = dl.dli_fname;
  if (ndev < 0) ndev = 0;
  if (json) {
    printf("{\"ctorch\": ");
    json_str(stdout, ct_version());
    printf(", \"abi\": %d, \"header_abi\": %d, \"libtorch\": ", (int)ct_abi_version(),
           CTORCH_ABI_VERSION);
    json_str(stdout, ct_torch_version());
    printf(", \"library\": ");
    json_str(stdout, where);
    printf(", \"cuda_compiled\": %s, \"cuda_available\": %s, \"cuda_devices\": %d",
           ct_cuda_is_compiled() ? "true" : "false", ct_cuda_is_available() ? "true" : "false",
           (int)ndev);
    printf(", \"threads\": %d, \"interop_threads\": %d}\n", (int)ct_get_num_threads(),
           (int)ct_get_num_interop_threads());
    return 0;
  }
  printf("ctorch      %s (ABI %d; this program was built with %s, ABI %d)\n", ct_version(),
         (int)ct_abi_version(), CTORCH_VERSION_STRING, CTORCH_ABI_VERSION);
  printf("LibTorch    %s\n", ct_torch_version());
  printf("library     %s\n", where);
  printf("CUDA        %s, %s, %d device(s)\n",
         ct_cuda_is_compiled() ? "compiled in" : "not compiled in",
         ct_cuda_is_available() ? "available" : "not available", (int)ndev);
  printf("threads     %d intra-op, %d inter-op\n", (int)ct_get_num_threads(),
         (int)ct_get_num_interop_threads());
  return 0;
}

/* ---- ctorch inspect ---- */

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

static int cmd_inspect(int argc, char **argv) {
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

/* ---- ctorch run ---- */

static const char *inputs_help =
    "MODEL is a TorchScript archive (torch.jit.save) or, when its name ends in .pt2, an\n"
    "AOTInductor package (torch._inductor.aoti_compile_and_package; needs LibTorch >= 2.6,\n"
    "an older LibTorch reports that it is not supported).\n\n"
    "INPUTS, one per positional argument of the method, each either\n"
    "  FILE.npy                  a numpy array (little-endian, C order)\n"
    "  SHAPE:DTYPE[:FILL]        a new tensor, e.g. 1x3x224x224:float32, 4:int64:zeros, :float64\n"
    "                            (empty SHAPE: a scalar); FILL is rand (default; integers\n"
    "                            0..9), randn, zeros or ones; the random generator is seeded\n"
    "                            with --seed (default 0)\n"
    "Model options:\n"
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

static int cmd_run(int argc, char **argv) {
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

/* ---- ctorch bench ---- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double percentile(const double *sorted, size_t n, double p) {
  double r = p / 100.0 * (double)(n - 1);
  size_t lo = (size_t)r;
  return lo + 1 < n ? sorted[lo] + (r - (double)lo) * (sorted[lo + 1] - sorted[lo]) : sorted[n - 1];
}

static void progress(const char *what, long i, long n) {
  int w = 30, k, fill = (int)(w * (i + 1) / n);
  fprintf(stderr, "\r%-7s [", what);
  for (k = 0; k < w; k++) fputc(k < fill ? '#' : ' ', stderr);
  fprintf(stderr, "] %ld/%ld", i + 1, n);
  if (i + 1 == n) fputs("\r\033[K", stderr);
  fflush(stderr);
}

static int cmd_bench(int argc, char **argv) {
  opts o;
  model t;
  inputs in;
  double *lat, total = 0, t0;
  long i;
  int rc, tty = isatty(2), k;
  ct_status st = CT_OK;
  for (k = 0; k < argc; k++)
    if (is_help(argv[k])) {
      printf(
          "Usage: %s bench MODEL INPUTS... [--iters N] [--warmup W] [--threads T] [--json]\n\n"
          "Times a method of a TorchScript model (or an AOTInductor package) on the same\n"
          "inputs: W warm-up calls (default 10), then N timed calls (default 100), with grad\n"
          "mode off. Prints the latency percentiles (p50, p90, p99), mean, min, max and the\n"
          "throughput in calls per second. A progress bar is drawn on stderr when it is a\n"
          "terminal, never when piped. CUDA work is synchronized after every call.\n\n%s"
          "  --iters N                 timed calls (default 100)\n"
          "  --warmup W                untimed calls first (default 10)\n"
          "  --threads T               intra-op threads (ct_set_num_threads)\n"
          "  --json                    print the results as one JSON object\n",
          prog, inputs_help);
      return 0;
    }
  if ((rc = parse_model_opts(&o, "bench", argc, argv, 1))) return rc;
  start_deadline(o.timeout);
  if (o.threads > 0 && (st = ct_set_num_threads((int32_t)o.threads)) != CT_OK)
    return fail_ct(st, "--threads");
  if ((rc = load_model(&t, &o))) return rc;
  if ((rc = make_inputs(&in, &o, t.m != NULL))) {
    model_free(&t);
    return rc;
  }
  lat = malloc(sizeof(double) * (size_t)o.iters);
  if (!lat) {
    inputs_free(&in);
    model_free(&t);
    return fail("out of memory");
  }
  ct_grad_mode_set(0);
  for (i = 0; i < o.warmup + o.iters && st == CT_OK; i++) {
    ct_value *res = NULL;
    ct_tensor *pt[MAX_OUTPUTS];
    size_t np = 0, j;
    int timed = i >= o.warmup;
    t0 = now_s();
    st = t.p ? call_package(pt, &np, t.p, &in) : call_module(&res, t.m, &o, &in);
    if (st == CT_OK && o.dev == CT_DEVICE_CUDA) st = ct_cuda_synchronize(o.idx);
    if (timed) total += lat[i - o.warmup] = now_s() - t0;
    ct_value_free(res);
    for (j = 0; j < np; j++) ct_tensor_free(pt[j]);
    if (tty && st == CT_OK) {
      if (timed)
        progress("bench", i - o.warmup, o.iters);
      else
        progress("warmup", i, o.warmup);
    }
  }
  inputs_free(&in);
  model_free(&t);
  if (st != CT_OK) {
    if (tty) fputs("\n", stderr);
    free(lat);
    return fail_ct(st, is_package(o.model) ? o.model : o.method ? o.method : "forward");
  }
  qsort(lat, (size_t)o.iters, sizeof(double), cmp_double);
  {
    size_t n = (size_t)o.iters;
    double p50 = percentile(lat, n, 50), p90 = percentile(lat, n, 90), p99 = percentile(lat, n, 99);
    double mean = total / (double)n;
    if (o.json) {
      printf("{\"model\": ");
      json_str(stdout, o.model);
      printf(", \"method\": ");
      json_str(stdout, o.method ? o.method : "forward");
      printf(
          ", \"iters\": %ld, \"warmup\": %ld, \"threads\": %d, \"unit\": \"ms\", "
          "\"p50\": %.6f, \"p90\": %.6f, \"p99\": %.6f, \"mean\": %.6f, \"min\": %.6f, "
          "\"max\": %.6f, \"throughput_per_s\": %.3f}\n",
          o.iters, o.warmup, (int)ct_get_num_threads(), p50 * 1e3, p90 * 1e3, p99 * 1e3, mean * 1e3,
          lat[0] * 1e3, lat[n - 1] * 1e3, 1.0 / mean);
    } else {
      printf("%s %s: %ld calls after %ld warm-up, %d thread(s)\n", o.model,
             o.method ? o.method : "forward", o.iters, o.warmup, (int)ct_get_num_threads());
      printf("latency ms  p50 %.4f  p90 %.4f  p99 %.4f  mean %.4f  min %.4f  max %.4f\n", p50 * 1e3,
             p90 * 1e3, p99 * 1e3, mean * 1e3, lat[0] * 1e3, lat[n - 1] * 1e3);
      printf("throughput  %.1f calls/s\n", 1.0 / mean);
    }
  }
  free(lat);
  return 0;
}

/* ---- ctorch verify ---- */

/* ---- the kind of a model file, from its contents ---- */

#define KIND_MODULE 'm'  /* TorchScript archive (torch.jit.save) */
#define KIND_PICKLE 'p'  /* torch.save file, zip or legacy */
#define KIND_PACKAGE 'k' /* AOTInductor package (.pt2) */

static uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  while (n--) v = (v << 8) | p[n];
  return v;
}

/* Whether a zip entry name has the path component `part` ("code") or ends in `tail`. */
static int has_component(const char *name, size_t n, const char *part) {
  size_t k = strlen(part), i;
  for (i = 0; i + k <= n; i++)
    if ((i == 0 || name[i - 1] == '/') && !memcmp(name + i, part, k) && (i + k == n || name[i + k] == '/'))
      return 1;
  return 0;
}

/* The kind of the zip archive at f (size bytes) from its central directory's names:
 * KIND_PACKAGE (an "aotinductor" folder), KIND_MODULE (a "code" folder or constants.pkl),
 * KIND_PICKLE (data.pkl alone), 0 unreadable or none of these. */
static int zip_kind(FILE *f, long size) {
  unsigned char tail[65557], *e = NULL, z[56];
  long n = size < (long)sizeof tail ? size : (long)sizeof tail, i;
  uint64_t entries, cd_size, cd_off, k;
  unsigned char *cd, *p;
  int module = 0, pickle = 0, package = 0;
  if (fseek(f, size - n, SEEK_SET) || fread(tail, 1, (size_t)n, f) != (size_t)n) return 0;
  for (i = n - 22; i >= 0 && !e; i--)
    if (le(tail + i, 4) == 0x06054b50) e = tail + i;
  if (!e) return 0;
  entries = le(e + 10, 2), cd_size = le(e + 12, 4), cd_off = le(e + 16, 4);
  if ((entries == 0xffff || cd_size == 0xffffffffu || cd_off == 0xffffffffu) && e - tail >= 20 &&
      le(e - 20, 4) == 0x07064b50) { /* zip64: the locator points at the zip64 record */
    uint64_t at = le(e - 20 + 8, 8);
    if (at > (uint64_t)size - 56 || fseek(f, (long)at, SEEK_SET) || fread(z, 1, 56, f) != 56 ||
        le(z, 4) != 0x06064b50)
      return 0;
    entries = le(z + 32, 8), cd_size = le(z + 40, 8), cd_off = le(z + 48, 8);
  }
  if (cd_off > (uint64_t)size || cd_size > (uint64_t)size - cd_off || cd_size > (1u << 28))
    return 0;
  cd = malloc(cd_size ? (size_t)cd_size : 1);
  if (!cd) return 0;
  if (fseek(f, (long)cd_off, SEEK_SET) || fread(cd, 1, (size_t)cd_size, f) != (size_t)cd_size) {
    free(cd);
    return 0;
  }
  for (p = cd, k = 0; k < entries && p + 46 <= cd + cd_size && le(p, 4) == 0x02014b50; k++) {
    size_t name_len = (size_t)le(p + 28, 2), skip = 46 + name_len + le(p + 30, 2) + le(p + 32, 2);
    const char *name = (const char *)p + 46;
    if ((size_t)(cd + cd_size - p) < skip) break;
    if (has_component(name, name_len, "aotinductor")) package = 1;
    if (has_component(name, name_len, "code") || has_component(name, name_len, "constants.pkl"))
      module = 1;
    if (has_component(name, name_len, "data.pkl")) pickle = 1;
    p += skip;
  }
  free(cd);
  return package ? KIND_PACKAGE : module ? KIND_MODULE : pickle ? KIND_PICKLE : 0;
}

/* KIND_* of the file at path from its contents; 0 none of them; -1 unreadable (the
 * library reports why). A non-zip file is a legacy torch.save file when it starts as
 * a binary pickle does (0x80, the protocol opcode). */
static int file_kind(const char *path) {
  unsigned char head[4] = {0};
  size_t n;
  long size;
  int kind = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  n = fread(head, 1, sizeof head, f);
  if (n == 4 && !memcmp(head, "PK\003\004", 4)) {
    if (!fseek(f, 0, SEEK_END) && (size = ftell(f)) > 0) kind = zip_kind(f, size);
  } else if (n >= 2 && head[0] == 0x80) {
    kind = KIND_PICKLE;
  }
  fclose(f);
  return kind;
}

static int verify_ok(const char *path, int kind) {
  printf("%s: ok: %s\n", path,
         kind == KIND_MODULE ? "TorchScript archive (loaded and inspected in a separate process)"
                             : "torch.save file (loaded in a separate process)");
  return 0;
}

/* Checks one file; 0 if it loads, else EXIT_ERROR with the library's message printed.
 * forced: KIND_MODULE or KIND_PICKLE (--module, --pickle), or 0: the kind the contents
 * say. One check per file: a file that crashes the check of its kind is never reported
 * as ok by another reader. */
static int verify_one(const char *path, int forced) {
  ct_status st;
  int kind = forced ? forced : file_kind(path);
  if (kind == KIND_PACKAGE || (!forced && kind <= 0 && is_package(path)))
    return fail(
        "%s: AOTInductor packages (.pt2) hold compiled native code that loading runs; "
        "no check can make an untrusted one safe (use --module or --pickle to check the "
        "file as another kind)",
        path);
  if (kind == 0)
    return fail("%s: not a TorchScript archive, a torch.save file or an AOTInductor package "
                "(use --module or --pickle to check it as one kind)",
                path);
  if (kind == -1) kind = KIND_MODULE; /* unreadable: the library says why */
  st = kind == KIND_MODULE ? ct_module_verify(path) : ct_pickle_verify(path);
  if (st != CT_OK) return fail_ct(st, path);
  return verify_ok(path, kind);
}

static int cmd_verify(int argc, char **argv) {
  int i, kind = 0, rc = 0, nfiles = 0;
  long v;
  for (i = 0; i < argc; i++)
    if (is_help(argv[i])) {
      printf(
          "Usage: %s verify [--module | --pickle] [--timeout S] FILE...\n\n"
          "Checks untrusted model files without risking this process: each FILE is loaded\n"
          "(and a module inspected: methods, attributes, parameters, children, its code\n"
          "printed again) in a short-lived child process (ct_module_verify,\n"
          "ct_pickle_verify). A file that loads is reported as ok; a load error, a crash\n"
          "of the child or a timeout is reported with the library's message. The file is\n"
          "not kept: load it again afterwards.\n\n"
          "By default the kind of each FILE is read from its contents (a zip archive's\n"
          "entry names, a pickle's first byte) and only that kind's check runs:\n"
          "a TorchScript archive (torch.jit.save) or a torch.save file. AOTInductor\n"
          "packages (.pt2) are refused: loading one runs its compiled code.\n\n"
          "  --module                  check as a TorchScript archive only\n"
          "  --pickle                  check as a torch.save file only\n"
          "  --timeout S               kill a check after S seconds (default 120;\n"
          "                            sets CTORCH_VERIFY_TIMEOUT)\n\n"
          "Exit status: 0 every FILE is ok, 1 one or more failed, 2 bad usage.\n",
          prog);
      return 0;
    }
  for (i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--module") || !strcmp(a, "--pickle")) {
      int k = a[2] == 'm' ? KIND_MODULE : KIND_PICKLE;
      if (kind && kind != k)
        return usage_error("verify", "--module and --pickle exclude each other");
      kind = k;
    } else if (!strcmp(a, "--timeout")) {
      if (i + 1 >= argc) return usage_error("verify", "--timeout needs a value");
      if (!parse_long(argv[++i], 1, 86399, &v))
        return usage_error("verify", "bad timeout '%s'", argv[i]);
      setenv("CTORCH_VERIFY_TIMEOUT", argv[i], 1);
    } else if (a[0] == '-' && a[1]) {
      return usage_error("verify", "unknown option '%s'", a);
    } else {
      nfiles++;
    }
  }
  if (!nfiles) return usage_error("verify", "no file given");
  fflush(stdout); /* the checks fork: nothing buffered may be written twice */
  for (i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--timeout")) {
      i++;
      continue;
    }
    if (argv[i][0] == '-' && argv[i][1]) continue;
    if (verify_one(argv[i], kind)) rc = EXIT_ERROR;
    fflush(stdout);
  }
  return rc;
}

/* ---- main ---- */

static void usage(FILE *f) {
  fprintf(f,
          "Usage: %s COMMAND [ARGS]...\n\n"
          "Work with model files through libctorch.\n\n"
          "Commands:\n"
          "  info                      versions, CUDA and devices, threads, library location\n"
          "  inspect MODEL.pt          methods, parameters, buffers, submodules, extra files\n"
          "  run MODEL.pt INPUTS...    run a method once and show or save its outputs\n"
          "  bench MODEL.pt INPUTS...  latency percentiles and throughput\n"
          "  verify FILE...            check untrusted model files in a separate process\n\n"
          "MODEL.pt: a TorchScript archive; MODEL.pt2, an AOTInductor package (LibTorch >= 2.6).\n"
          "'%s COMMAND --help' describes each command. Exit status: 0 success, 1 error\n"
          "(the library's message is printed), 2 bad usage.\n",
          prog, prog);
}

/* Output that could not be written (a full disk, a closed pipe, /dev/full)
 * is an error: exit non-zero instead of claiming success. */
static int finish(int rc) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "%s: cannot write the output: %s\n", prog, strerror(errno ? errno : EIO));
    return rc ? rc : EXIT_ERROR;
  }
  return rc;
}

static int dispatch(int argc, char **argv) {
  const char *cmd;
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  cmd = argv[1];
  if (is_help(cmd) || !strcmp(cmd, "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("ctorch %s (LibTorch %s)\n", ct_version(), ct_torch_version());
    return 0;
  }
  if (!strcmp(cmd, "info")) return cmd_info(argc - 2, argv + 2);
  if (!strcmp(cmd, "inspect")) return cmd_inspect(argc - 2, argv + 2);
  if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
  if (!strcmp(cmd, "bench")) return cmd_bench(argc - 2, argv + 2);
  if (!strcmp(cmd, "verify")) return cmd_verify(argc - 2, argv + 2);
  fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
  usage(stderr);
  return EXIT_USAGE;
}

int main(int argc, char **argv) { return finish(dispatch(argc, argv)); }
