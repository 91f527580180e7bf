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

#include <cmocka.h>

#include "ctorch.h"

/* The call succeeds; otherwise fail with ctorch's message. */
#define CT_OK_OR_FAIL(call)                                                        \
  do {                                                                             \
    ct_status st_ = (call);                                                        \
    if (st_ != CT_OK) fail_msg("%s -> %d: %s", #call, (int)st_, ct_last_error()); \
  } while (0)

/* The call fails with `code`, and ct_last_error() contains `needle`. */
#define CT_EXPECT_ERROR(call, code, needle)                                                \
  do {                                                                                     \
    ct_status st_ = (call);                                                                \
    if (st_ != (code))                                                                     \
      fail_msg("%s: expected status %d, got %d (%s)", #call, (int)(code), (int)st_,      \
               ct_last_error());                                                           \
    if (ct_last_error_code() != (code)) fail_msg("%s: ct_last_error_code mismatch", #call); \
    if (strstr(ct_last_error(), (needle)) == NULL)                                         \
      fail_msg("%s: message '%s' lacks '%s'", #call, ct_last_error(), (needle));          \
  } while (0)

/* A float32 CPU tensor from values. */
static inline ct_tensor *test_tensor_f32(const float *data, const int64_t *sizes, size_t ndim) {
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_from_data(&t, data, sizes, ndim, CT_FLOAT32, CT_DEVICE_CPU, -1));
  return t;
}

/* Environment directory with the PyTorch-made models, or NULL (test skips). */
static inline const char *test_models_dir(void) {
  const char *d = getenv("CTORCH_TEST_MODELS");
  return (d && *d) ? d : NULL;
}

#endif
