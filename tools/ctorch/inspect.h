/* The `ctorch inspect` printer interface (tools/ctorch/): what the walk over a model in
 * cmd_inspect.c calls, with one implementation per output format (inspect_text.c,
 * inspect_json.c). */
#ifndef CTORCH_INSPECT_H
#define CTORCH_INSPECT_H

#include "cli.h"

/* Sums over one list of tensors (parameters or buffers). */
typedef struct {
  int64_t count, numel;
  size_t bytes;
} inspect_totals;

/* One list in the description: methods, parameters, constants, ... */
typedef struct {
  const char *key;   /* JSON member name; the text printer names tensor totals with it */
  const char *title; /* text heading, before " (count):" or ":" */
  int show_count;    /* text: the heading shows the number of items */
  int object;        /* JSON: a {key: value} object rather than an array */
} inspect_section;

/* How many elements of a .npy array inspect shows (flat, C order). */
#define INSPECT_FIRST_VALUES 10

/* Each item call gets its index in the section (0 for the first). The document is
 * begun by module, package or array and closed by end; a failed walk stops where it is. */
struct inspect_printer {
  void (*module)(const char *path, const char *type, int training);
  void (*package)(const char *path, const char *model_name, int32_t dev, int32_t idx);
  /* a .npy file read into t: its dtype, shape, size and first values; 0 or EXIT_ERROR */
  int (*array)(const char *path, const ct_tensor *t);
  void (*begin_section)(const inspect_section *s, size_t n);
  /* tot: the section's tensor totals, NULL for sections of other items */
  void (*end_section)(const inspect_section *s, const inspect_totals *tot);
  void (*method)(size_t i, const char *name, const char *schema);
  void (*tensor)(size_t i, const char *name, const ct_tensor *t);
  void (*submodule)(size_t i, const char *name, const char *type);
  void (*extra_file)(size_t i, const char *name, size_t bytes);
  void (*entry)(size_t i, const char *key, const char *value); /* key: value (metadata) */
  void (*string)(size_t i, const char *s);                     /* a string in a list */
  void (*end)(void);
};

extern const struct inspect_printer inspect_text;
extern const struct inspect_printer inspect_json;

#endif
