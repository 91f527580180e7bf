/* Helpers shared by the cmocka C tests. */
#ifndef CTORCH_TEST_UTIL_H
#define CTORCH_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctorch.h"

/* The call succeeds; otherwise fail with ctorch's message. */
#define CT_OK_OR_FAIL(call)                                                       \
  do {                                                                            \
    ct_status st_ = (call);                                                       \
    if (st_ != CT_OK) fail_msg("%s -> %d: %s", #call, (int)st_, ct_last_error()); \
  } while (0)

/* The call fails with `code`, and ct_last_error() contains `needle`. */
#define CT_EXPECT_ERROR(call, code, needle)                                                 \
  do {                                                                                      \
    ct_status st_ = (call);                                                                 \
    if (st_ != (code))                                                                      \
      fail_msg("%s: expected status %d, got %d (%s)", #call, (int)(code), (int)st_,         \
               ct_last_error());                                                            \
    if (ct_last_error_code() != (code)) fail_msg("%s: ct_last_error_code mismatch", #call); \
    if (strstr(ct_last_error(), (needle)) == NULL)                                          \
      fail_msg("%s: message '%s' lacks '%s'", #call, ct_last_error(), (needle));            \
  } while (0)

/* A float32 CPU tensor from values. */
static inline ct_tensor *test_tensor_f32(const float *data, const int64_t *sizes, size_t ndim) {
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_data(&t, data, sizes, ndim, CT_FLOAT32, CT_DEVICE_CPU, -1));
  return t;
}

/* Environment directory with the PyTorch-made models, or NULL (test skips). */
/* A new FIFO at a fresh /tmp path written into path[] (at least 24 bytes);
 * the caller unlinks it. Used by the "not a regular file" tests. */
/* The whole file at path, malloc'd (free it) and NUL-terminated (for text);
 * *size: its length. Fails the test when the file cannot be opened. */
static inline char *test_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  size_t cap = 1 << 16, n = 0, k;
  char *buf = (char *)malloc(cap + 1);
  assert_non_null(buf);
  while ((k = fread(buf + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) {
      cap *= 2;
      buf = (char *)realloc(buf, cap + 1);
      assert_non_null(buf);
    }
  }
  fclose(f);
  buf[n] = '\0';
  *size = n;
  return buf;
}

static inline void test_make_fifo(char *path) {
  strcpy(path, "/tmp/ctorch-fifo-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  unlink(path);
  assert_int_equal(mkfifo(path, 0600), 0);
}

static inline const char *test_models_dir(void) {
  const char *d = getenv("CTORCH_TEST_MODELS");
  return (d && *d) ? d : NULL;
}

/* ---- A foreign DLPack producer with a counted deleter (test_dlpack.c,
 * test_reliability.c). Each struct is heap-allocated and freed by its
 * deleter, which counts in *test_dl_deletes(). */
static inline int *test_dl_deletes(void) {
  static int n = 0;
  return &n;
}

typedef struct {
  DLManagedTensorVersioned m;
  int64_t shape[8];
  int64_t strides[8];
} test_dl_producer_v;

typedef struct {
  DLManagedTensor m;
  int64_t shape[8];
  int64_t strides[8];
} test_dl_producer_l;

static inline void test_dl_deleter_v(DLManagedTensorVersioned *self) {
  ++*test_dl_deletes();
  free(self->manager_ctx);
}

static inline void test_dl_deleter_l(DLManagedTensor *self) {
  ++*test_dl_deletes();
  free(self->manager_ctx);
}

/* A versioned (1.0) CPU tensor; strides NULL = contiguous. ndim <= 8. */
static inline DLManagedTensorVersioned *test_dl_versioned(void *data, uint8_t code, uint8_t bits,
                                                          int ndim, const int64_t *shape,
                                                          const int64_t *strides,
                                                          uint64_t byte_offset, uint64_t flags) {
  test_dl_producer_v *p = (test_dl_producer_v *)calloc(1, sizeof *p);
  p->m.version.major = 1;
  p->m.version.minor = 0;
  p->m.manager_ctx = p;
  p->m.deleter = test_dl_deleter_v;
  p->m.flags = flags;
  p->m.dl_tensor.data = data;
  p->m.dl_tensor.device.device_type = kDLCPU;
  p->m.dl_tensor.device.device_id = 0;
  p->m.dl_tensor.ndim = ndim;
  p->m.dl_tensor.dtype.code = code;
  p->m.dl_tensor.dtype.bits = bits;
  p->m.dl_tensor.dtype.lanes = 1;
  for (int i = 0; i < ndim; ++i) {
    p->shape[i] = shape[i];
    if (strides) p->strides[i] = strides[i];
  }
  p->m.dl_tensor.shape = p->shape;
  p->m.dl_tensor.strides = strides ? p->strides : NULL;
  p->m.dl_tensor.byte_offset = byte_offset;
  return &p->m;
}

/* A legacy (unversioned) float32 CPU tensor; strides NULL = contiguous. */
static inline DLManagedTensor *test_dl_legacy(void *data, int ndim, const int64_t *shape,
                                              const int64_t *strides) {
  test_dl_producer_l *p = (test_dl_producer_l *)calloc(1, sizeof *p);
  p->m.manager_ctx = p;
  p->m.deleter = test_dl_deleter_l;
  p->m.dl_tensor.data = data;
  p->m.dl_tensor.device.device_type = kDLCPU;
  p->m.dl_tensor.ndim = ndim;
  p->m.dl_tensor.dtype.code = kDLFloat;
  p->m.dl_tensor.dtype.bits = 32;
  p->m.dl_tensor.dtype.lanes = 1;
  for (int i = 0; i < ndim; ++i) {
    p->shape[i] = shape[i];
    if (strides) p->strides[i] = strides[i];
  }
  p->m.dl_tensor.shape = p->shape;
  p->m.dl_tensor.strides = strides ? p->strides : NULL;
  return &p->m;
}

#endif
