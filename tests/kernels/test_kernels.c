/* Host-language kernels written in C for the dispatcher tests: softsign
 * x / (1 + |x|) as a plain loop (CPU), its shape-only Meta kernel, and its
 * backward; each counts its calls. Built as libctorch_test_kernels.so, so the
 * C tests link it and the Python tests load it with ctypes (the "kernel in
 * C, op used from PyTorch" case). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctorch.h"

#define KERNEL_API __attribute__((visibility("default")))

/* Calls per kernel: [0] CPU, [1] Meta, [2] backward, [3] destroy. */
KERNEL_API int64_t ctk_counts[4];

static ct_status tensor_arg(ct_tensor **out, const ct_value *const *args, size_t n) {
  if (n < 1) return ct_set_error(CT_ERR_CALLBACK, "softsign: no argument");
  ct_tensor *x = NULL;
  ct_status st = ct_value_to_tensor(&x, args[0]);
  if (st != CT_OK) return st;
  st = ct_tensor_contiguous(out, x);
  ct_tensor_free(x);
  return st;
}

static ct_status new_like(ct_tensor **out, const ct_tensor *x) {
  return ct_tensor_empty(out, ct_tensor_sizes(x), (size_t)ct_tensor_ndim(x), ct_tensor_dtype(x),
                         ct_tensor_device_type(x), ct_tensor_device_index(x), 0);
}

static ct_status return_tensor(ct_value **out, ct_tensor *t) {
  ct_status st = ct_value_from_tensor(out, t);
  ct_tensor_free(t);
  return st;
}

/* softsign(Tensor x) -> Tensor on float32/float64 CPU tensors. */
KERNEL_API ct_status ctk_softsign(void *ctx, const ct_value *const *args, size_t n,
                                  ct_value **out) {
  (void)ctx;
  ++ctk_counts[0];
  ct_tensor *x = NULL, *y = NULL;
  ct_status st = tensor_arg(&x, args, n);
  if (st != CT_OK) return st;
  int32_t dt = ct_tensor_dtype(x);
  if (dt != CT_FLOAT32 && dt != CT_FLOAT64) {
    ct_tensor_free(x);
    return ct_set_error(CT_ERR_CALLBACK, "softsign: float32 or float64 input expected");
  }
  st = new_like(&y, x);
  if (st != CT_OK) {
    ct_tensor_free(x);
    return st;
  }
  int64_t m = ct_tensor_numel(x);
  if (dt == CT_FLOAT32) {
    const float *a = (const float *)ct_tensor_data_ptr(x);
    float *b = (float *)ct_tensor_data_ptr(y);
    for (int64_t i = 0; i < m; ++i) b[i] = a[i] / (1.0f + fabsf(a[i]));
  } else {
    const double *a = (const double *)ct_tensor_data_ptr(x);
    double *b = (double *)ct_tensor_data_ptr(y);
    for (int64_t i = 0; i < m; ++i) b[i] = a[i] / (1.0 + fabs(a[i]));
  }
  ct_tensor_free(x);
  return return_tensor(out, y);
}

/* Meta: the result's shape and dtype, no data (ct_tensor_empty_like: the
 * sizes may be symbolic under torch.compile's dynamic shapes). */
KERNEL_API ct_status ctk_softsign_meta(void *ctx, const ct_value *const *args, size_t n,
                                       ct_value **out) {
  (void)ctx;
  ++ctk_counts[1];
  ct_tensor *x = NULL, *y = NULL;
  ct_status st = tensor_arg(&x, args, n);
  if (st == CT_OK) st = ct_tensor_empty_like(&y, x, CT_DTYPE_KEEP);
  ct_tensor_free(x);
  return st == CT_OK ? return_tensor(out, y) : st;
}

/* d softsign / dx = 1 / (1 + |x|)^2. */
KERNEL_API ct_status ctk_softsign_backward(void *ctx, const ct_value *const *args, size_t n_args,
                                           const ct_value *result,
                                           const ct_tensor *const *grad_outputs, size_t n_outputs,
                                           ct_tensor **grad_inputs) {
  (void)ctx;
  (void)result;
  ++ctk_counts[2];
  if (n_outputs != 1 || grad_outputs[0] == NULL)
    return ct_set_error(CT_ERR_CALLBACK, "softsign backward: one gradient expected");
  ct_tensor *x = NULL, *g = NULL, *gx = NULL;
  ct_status st = tensor_arg(&x, args, n_args);
  if (st != CT_OK) return st;
  st = ct_tensor_contiguous(&g, grad_outputs[0]);
  if (st == CT_OK) st = new_like(&gx, x);
  if (st == CT_OK && ct_tensor_dtype(g) != ct_tensor_dtype(x))
    st = ct_set_error(CT_ERR_CALLBACK, "softsign backward: gradient dtype differs");
  if (st == CT_OK) {
    int64_t m = ct_tensor_numel(x);
    if (ct_tensor_dtype(x) == CT_FLOAT32) {
      const float *a = (const float *)ct_tensor_data_ptr(x), *d = ct_tensor_data_ptr(g);
      float *r = (float *)ct_tensor_data_ptr(gx);
      for (int64_t i = 0; i < m; ++i) r[i] = d[i] / ((1.0f + fabsf(a[i])) * (1.0f + fabsf(a[i])));
    } else {
      const double *a = (const double *)ct_tensor_data_ptr(x), *d = ct_tensor_data_ptr(g);
      double *r = (double *)ct_tensor_data_ptr(gx);
      for (int64_t i = 0; i < m; ++i) r[i] = d[i] / ((1.0 + fabs(a[i])) * (1.0 + fabs(a[i])));
    }
    grad_inputs[0] = gx;
    gx = NULL;
  }
  ct_tensor_free(x);
  ct_tensor_free(g);
  ct_tensor_free(gx);
  return st;
}

/* A destroy callback that counts. */
KERNEL_API void ctk_destroy(void *ctx) {
  (void)ctx;
  ++ctk_counts[3];
}

/* Registers myns::softsign with the three kernels in `lib` (for the
 * Python test that calls it through torch.ops). */
KERNEL_API ct_status ctk_register_softsign(ct_library *lib, const char *schema) {
  ct_status st = ct_library_define(lib, schema, NULL, 0);
  if (st == CT_OK) st = ct_library_impl(lib, "softsign", "CPU", ctk_softsign, NULL, ctk_destroy, 0);
  if (st == CT_OK)
    st = ct_library_impl(lib, "softsign", "Meta", ctk_softsign_meta, NULL, ctk_destroy, 0);
  if (st == CT_OK)
    st = ct_library_impl_autograd(lib, "softsign", ctk_softsign_backward, NULL, ctk_destroy, 0);
  return st;
}

/* ---- softsign with a traceable backward (torch.compile, opcheck) ----------
 * The backward above reads data, so torch.compile cannot trace it. Here the
 * backward is an operator of its own, <ns>::softsign_grad(Tensor g, Tensor x)
 * with CPU and Meta kernels, which the autograd callback calls through
 * ct_op_call_tensors: under torch's tracers that call is what they record. */

/* softsign_grad: g / (1 + |x|)^2 (CPU). */
static ct_status softsign_grad_cpu(void *ctx, const ct_value *const *args, size_t n,
                                   ct_value **out) {
  (void)ctx;
  if (n != 2) return ct_set_error(CT_ERR_CALLBACK, "softsign_grad: two arguments expected");
  ct_tensor *g = NULL, *x = NULL, *r = NULL;
  ct_status st = tensor_arg(&g, args, 1);
  if (st == CT_OK) st = tensor_arg(&x, args + 1, 1);
  if (st == CT_OK && (ct_tensor_dtype(g) != ct_tensor_dtype(x) ||
                      ct_tensor_numel(g) != ct_tensor_numel(x)))
    st = ct_set_error(CT_ERR_CALLBACK, "softsign_grad: g and x differ in dtype or size");
  if (st == CT_OK && ct_tensor_dtype(x) != CT_FLOAT32 && ct_tensor_dtype(x) != CT_FLOAT64)
    st = ct_set_error(CT_ERR_CALLBACK, "softsign_grad: float32 or float64 expected");
  if (st == CT_OK) st = new_like(&r, x);
  if (st == CT_OK) {
    int64_t m = ct_tensor_numel(x);
    if (ct_tensor_dtype(x) == CT_FLOAT32) {
      const float *a = (const float *)ct_tensor_data_ptr(x), *d = ct_tensor_data_ptr(g);
      float *o = (float *)ct_tensor_data_ptr(r);
      for (int64_t i = 0; i < m; ++i) o[i] = d[i] / ((1.0f + fabsf(a[i])) * (1.0f + fabsf(a[i])));
    } else {
      const double *a = (const double *)ct_tensor_data_ptr(x), *d = ct_tensor_data_ptr(g);
      double *o = (double *)ct_tensor_data_ptr(r);
      for (int64_t i = 0; i < m; ++i) o[i] = d[i] / ((1.0 + fabs(a[i])) * (1.0 + fabs(a[i])));
    }
  }
  ct_tensor_free(g);
  ct_tensor_free(x);
  if (st != CT_OK) {
    ct_tensor_free(r);
    return st;
  }
  return return_tensor(out, r);
}

/* softsign_grad's Meta kernel: x's shape and dtype. */
static ct_status softsign_grad_meta(void *ctx, const ct_value *const *args, size_t n,
                                    ct_value **out) {
  (void)ctx;
  if (n != 2) return ct_set_error(CT_ERR_CALLBACK, "softsign_grad: two arguments expected");
  ct_tensor *x = NULL, *r = NULL;
  ct_status st = tensor_arg(&x, args + 1, 1);
  if (st == CT_OK) st = ct_tensor_empty_like(&r, x, CT_DTYPE_KEEP);
  ct_tensor_free(x);
  return st == CT_OK ? return_tensor(out, r) : st;
}

/* The autograd callback: grad_x = softsign_grad(g, x), by operator call
 * (ctx: the ct_op of softsign_grad). */
static ct_status softsign_backward_by_op(void *ctx, const ct_value *const *args, size_t n_args,
                                         const ct_value *result,
                                         const ct_tensor *const *grad_outputs, size_t n_outputs,
                                         ct_tensor **grad_inputs) {
  (void)result;
  if (n_args != 1 || n_outputs != 1 || grad_outputs[0] == NULL)
    return ct_set_error(CT_ERR_CALLBACK, "softsign backward: one argument, one gradient expected");
  ct_tensor *x = NULL;
  ct_status st = ct_value_to_tensor(&x, args[0]);
  if (st != CT_OK) return st;
  const ct_tensor *ins[2] = {grad_outputs[0], x};
  st = ct_op_call_tensors(&grad_inputs[0], 1, (const ct_op *)ctx, ins, 2);
  ct_tensor_free(x);
  return st;
}

static void free_op(void *ctx) { ct_op_free((ct_op *)ctx); }

/* Registers <ns>::softsign (CPU, Meta, autograd by operator) and
 * <ns>::softsign_grad (CPU, Meta) in `lib`, whose namespace is ns. */
KERNEL_API ct_status ctk_register_softsign_traceable(ct_library *lib, const char *ns) {
  char name[128];
  ct_status st = ct_library_define(lib, "softsign(Tensor x) -> Tensor", NULL, 0);
  if (st == CT_OK) st = ct_library_define(lib, "softsign_grad(Tensor g, Tensor x) -> Tensor", NULL, 0);
  if (st == CT_OK) st = ct_library_impl(lib, "softsign", "CPU", ctk_softsign, NULL, NULL, 0);
  if (st == CT_OK) st = ct_library_impl(lib, "softsign", "Meta", ctk_softsign_meta, NULL, NULL, 0);
  if (st == CT_OK)
    st = ct_library_impl(lib, "softsign_grad", "CPU", softsign_grad_cpu, NULL, NULL, 0);
  if (st == CT_OK)
    st = ct_library_impl(lib, "softsign_grad", "Meta", softsign_grad_meta, NULL, NULL, 0);
  if (st != CT_OK) return st;
  if (snprintf(name, sizeof name, "%s::softsign_grad", ns) >= (int)sizeof name)
    return ct_set_error(CT_ERR_INVALID_ARGUMENT, "namespace too long");
  ct_op *grad = NULL;
  st = ct_op_find(&grad, name, "");
  if (st != CT_OK) return st;
  return ct_library_impl_autograd(lib, "softsign", softsign_backward_by_op, grad, free_op, 0);
}
