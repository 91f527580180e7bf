/* The `ctorch` command's shared declarations (tools/ctorch/): exit codes, limits, messages,
 * dtype names, text and JSON helpers, .npy files, model inputs and outputs, and the
 * subcommands. C99 on the public header only. */
#ifndef CTORCH_CLI_H
#define CTORCH_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
void json_str(FILE *f, const char *s);
void shape_str(char *buf, size_t n, const ct_tensor *t);
void json_shape(FILE *f, const ct_tensor *t);
const char *value_str(const ct_value *v);
char *value_type(const ct_value *v);
int parse_long(const char *s, long lo, long hi, long *out);
int parse_device(const char *s, int32_t *type, int32_t *index);
int ends_with(const char *s, const char *suffix);

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

/* The inputs of one call: tensors, and for modules the same tensors as values. */
typedef struct {
  ct_tensor *t[MAX_INPUTS];
  ct_value *v[MAX_INPUTS];
  size_t n;
} inputs;
extern const char *inputs_help;
int make_input(ct_tensor **out, const char *spec, int32_t dev, int32_t idx);
int flatten(output *outs, size_t *n, ct_value *v, const char *label);
double element(const ct_tensor *t, int64_t i);
int print_tensor(const char *label, const ct_tensor *t);
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
