/* Support for the generated abuse test (abuse_cases.c, from gen_abuse.py). */
#ifndef CTORCH_ABUSE_SUPPORT_H
#define CTORCH_ABUSE_SUPPORT_H

#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "ctorch.h"

#define ABUSE_NO_SUCH_CASE 99
#define ABUSE_BAD_STATUS 98

typedef struct {
  const char *name;
  void (*run)(int which);
  int ncases;
} abuse_fn;

extern const abuse_fn abuse_table[];
extern const size_t abuse_table_len;
extern const size_t abuse_cases_total;
extern const char *const abuse_skipped[];

/* Valid arguments, made in the parent before any fork. */
extern ct_tensor *g_tensor;
extern ct_value *g_value;
extern ct_module *g_module;
extern ct_script *g_script;
extern ct_op *g_op;
extern ct_package *g_package;
extern ct_generator *g_generator;
extern ct_optimizer *g_optimizer;
extern ct_grad_scaler *g_grad_scaler;
extern ct_library *g_library;
extern ct_store *g_store;
extern ct_process_group *g_process_group;
extern ct_work *g_work;
extern ct_ddp *g_ddp;
extern ct_cuda_event *g_cuda_event;
extern ct_cuda_graph *g_cuda_graph;
extern ct_tensor_info g_info;
extern ct_tensor *g_tensor_array[4];
extern ct_value *g_value_array[4];
extern const char *g_names[4];
extern int64_t g_int64_items[8];
extern int32_t g_int32_items[8];
extern double g_double_items[8];
extern char abuse_buffer[4096];
extern void *abuse_out_slots[64];
extern const char *abuse_label;

DLManagedTensor *abuse_fresh_DLManagedTensor(void);
DLManagedTensorVersioned *abuse_fresh_DLManagedTensorVersioned(void);
int abuse_dummy_fn(void);
void abuse_noop_fn(void);
/* Checks a ct_status result in the child; exits with ABUSE_BAD_STATUS (after
 * printing why) when the failure is not clean. */
void abuse_check_status(const char *fname, ct_status st);

#endif
