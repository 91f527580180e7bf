/* The `ctorch` command's shared declarations (tools/ctorch/): exit codes, limits, messages,
 * option parsing (getopt_long), dtype names, text and JSON (cJSON) helpers, file kinds,
 * .npy files, model inputs and outputs, and the subcommands. C99 on the public header,
 * libc and cJSON. */
#ifndef CTORCH_CLI_H
#define CTORCH_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>
#include <ctorch.h>

#define EXIT_ERROR 1
#define EXIT_USAGE 2
#define MAX_INPUTS 64
#define MAX_OUTPUTS 256

/* ---- messages (messages.c): to stderr, prefixed with the program name ---- */
extern const char *prog;
int fail(const char *fmt, ...);
int fail_ct(ct_status st, const char *what);
int usage_error(const char *cmd, const char *fmt, ...);
int is_help(const char *a);
/* The usage error for what getopt_long returned as c ('?' or ':'), after the option
 * argv[optind - 1]. */
int option_error(const char *cmd, int c, char **argv);
/* --json: from this call on the first error (fail, fail_ct, usage_error) is kept, and
 * json_error_report prints it on stdout, when rc is not 0, as one line
 * {"file": file, "error": message, "status": the library's status (library errors only)};
 * it returns rc. json_error_text: that line for msg (cJSON_free it; NULL out of memory). */
void json_errors(const char *file);
int json_errors_on(void);
int json_error_report(int rc);
char *json_error_text(const char *msg, int status);

/* ---- dtypes (dtypes.c): names as torch spells them, numpy .npy descr ---- */
struct cli_dtype {
  int32_t code;
  const char *name;  /* as torch spells it */
  const char *descr; /* numpy .npy descr, NULL if numpy has none */
};
extern const struct cli_dtype dtypes[];
extern const size_t n_dtypes;
int32_t dtype_from_name(const char *s);
const char *dtype_name(int32_t code);
int dtype_is_float(int32_t d);

/* ---- text, JSON and argument parsing (text.c) ---- */
void shape_str(char *buf, size_t n, const ct_tensor *t);
void bytes_str(char *buf, size_t n, size_t bytes); /* "512 bytes", "1.5 KiB", ... */
/* Shortest decimal text that reads back as the same double (float32: the same float). */
void double_str(char *buf, size_t n, double x, int is_float32);
/* A duration with a unit that fits it: "812 ns", "12.4 µs", "3.05 ms", "1.20 s". */
void duration_str(char *buf, size_t n, double seconds);
/* JSON values: an int64 exactly (cJSON numbers are doubles), a double losslessly (NaN
 * and infinities as the strings "nan", "inf", "-inf"), a tensor's shape. NULL: out of
 * memory, which json_print reports. */
cJSON *json_int(int64_t v);
cJSON *json_double(double x, int is_float32);
cJSON *json_shape(const ct_tensor *t);
/* Prints root on one line to stdout and frees it; 0, or EXIT_ERROR (out of memory). */
int json_print(cJSON *root);
const char *value_str(const ct_value *v);
char *value_type(const ct_value *v);
int parse_long(const char *s, long lo, long hi, long *out);
int parse_device(const char *s, int32_t *type, int32_t *index);
int ends_with(const char *s, const char *suffix);

/* ---- file kinds (filekind.c), from the contents ---- */
#define KIND_MODULE 'm'  /* TorchScript archive (torch.jit.save) */
#define KIND_PICKLE 'p'  /* torch.save file, zip or legacy */
#define KIND_PACKAGE 'k' /* AOTInductor package (.pt2) */
#define KIND_NPY 'n'     /* NumPy array (.npy, the \x93NUMPY magic) */
/* KIND_* of the file at path; 0 none of them; -1 unreadable (the library says why). */
int file_kind(const char *path);
const char *kind_name(int kind); /* "TorchScript archive", ... */

/* ---- torch.save files (inspect_pickle.c) ---- */
int inspect_pickle(const char *path, int json);

/* ---- .npy files (npy.c) ---- */
int npy_read(ct_tensor **out, const char *path, int32_t dev, int32_t idx);
int npy_write(const char *path, const ct_tensor *t);

/* ---- models, inputs and outputs (model.c) ---- */
typedef struct {
  char label[128];
  ct_value *v; /* owned */
} output;

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

/* What run and bench call: a TorchScript module or an AOTInductor package (*.pt2). */
typedef struct {
  ct_module *m;
  ct_package *p;
} model;

/* The inputs of one call: tensors, and for modules the same tensors as values; a scalar
 * argument (VALUE:DTYPE) is a value only (t[i] NULL). */
typedef struct {
  ct_tensor *t[MAX_INPUTS];
  ct_value *v[MAX_INPUTS];
  size_t n;
} inputs;
extern const char *inputs_help;
int make_input(ct_tensor **out, ct_value **scalar, const char *spec, int32_t dev, int32_t idx);
int flatten(output *outs, size_t *n, ct_value *v, const char *label);

/* ---- printing values (values.c): lossless, as text and as JSON ---- */
int print_tensor(const char *label, const ct_tensor *t);
int print_value(const char *label, const ct_value *v);
/* The first k elements (flat, C order) as "[a, b, ...]" (", ..." when there are more) to
 * stdout, and as a JSON array; EXIT_ERROR / NULL on error (printed). */
int print_first(const ct_tensor *t, int64_t k);
cJSON *json_first(const ct_tensor *t, int64_t k);
/* {"name": label, ...}: a tensor's dtype, shape, device and every element, or a
 * scalar's type and value; NULL on error (printed). */
cJSON *json_tensor(const char *label, const ct_tensor *t);
cJSON *json_value(const char *label, const ct_value *v);
/* A non-tensor value: its text (ints exact, floats lossless, True/False, else the repr)
 * and its JSON (numbers, booleans, strings, null, lists of these; else the repr). */
void scalar_str(char *buf, size_t n, const ct_value *v);
cJSON *json_scalar(const ct_value *v);
void deadline_reached(int sig);
void start_deadline(long seconds);
int is_package(const char *path);
void model_free(model *t);
int load_model(model *t, opts *o);
void inputs_free(inputs *in);
int make_inputs(inputs *in, const opts *o, int as_values);
int parse_model_opts(opts *o, const char *cmd, int argc, char **argv, int bench);
ct_status call_module(ct_value **out, ct_module *m, const opts *o, const inputs *in);
ct_status call_package(ct_tensor **outs, size_t *n_outs, ct_package *p, const inputs *in);

/* ---- subcommands (cmd_*.c) ---- */
int cmd_info(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_verify(int argc, char **argv);

#endif
