/* CUDA example: a torch CUDA tensor, a hand-written kernel h(x, y) over its
 * memory (h_kernel.cu), and torch using the result, all through ctorch's C ABI.
 *
 *   x = torch.arange(n, device="cuda")     (torch allocates and owns x)
 *   y = torch.empty_like(x)                (the output is allocated by torch)
 *   h(x, y)  -- our kernel, on torch's current stream
 *   s = torch.sum(y)                       (torch consumes y, same stream)
 *
 * Exits 0 on success, 77 (skip) when no CUDA device is available, 1 on error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctorch.h"

int h_launch(const float *x, float *y, int64_t n, void *stream); /* h_kernel.cu */

#define CHECK(call)                                                                       \
  do {                                                                                    \
    ct_status st_ = (call);                                                               \
    if (st_ != CT_OK) {                                                                   \
      fprintf(stderr, "%s:%d: %s failed (%d): %s\n", __FILE__, __LINE__, #call, (int)st_, \
              ct_last_error());                                                           \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

int main(void) {
  if (!ct_cuda_is_available()) {
    printf("no CUDA device (ctorch %s, LibTorch %s, CUDA compiled in: %d): skipping\n",
           ct_version(), ct_torch_version(), (int)ct_cuda_is_compiled());
    return 77;
  }
  const int64_t n = 256;
  const int64_t sizes[1] = {n};
  ct_tensor *x = NULL, *y = NULL, *s = NULL, *s_cpu = NULL, *y_cpu = NULL;
  ct_value *arg = NULL, *res = NULL;

  CHECK(ct_tensor_arange(&x, 0, (double)n, 1, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0));
  CHECK(ct_tensor_empty(&y, sizes, 1, CT_FLOAT32, CT_DEVICE_CUDA, 0, 0));

  /* Raw device pointers (contiguous float32) and torch's current stream. */
  void *stream = NULL;
  CHECK(ct_cuda_current_stream(&stream, 0));
  int err =
      h_launch((const float *)ct_tensor_data_ptr(x), (float *)ct_tensor_data_ptr(y), n, stream);
  if (err != 0) {
    fprintf(stderr, "kernel launch failed: cudaError %d\n", err);
    return 1;
  }

  /* Torch uses the result: sum on the same stream, then a copy to the host
   * (which waits for the kernel and the sum). */
  CHECK(ct_value_from_tensor(&arg, y));
  CHECK(ct_op_call_name(&res, "aten::sum", (const ct_value *const *)&arg, 1, NULL, NULL, 0));
  CHECK(ct_value_to_tensor(&s, res));
  CHECK(ct_tensor_to(&s_cpu, s, CT_DEVICE_CPU, -1, CT_DTYPE_KEEP, 0, 0));
  CHECK(ct_tensor_to(&y_cpu, y, CT_DEVICE_CPU, -1, CT_DTYPE_KEEP, 0, 0));

  const float *yc = (const float *)ct_tensor_data_ptr(y_cpu);
  const double got = *(const float *)ct_tensor_data_ptr(s_cpu);
  /* sum_{i<n} (i^2 + 1); every partial sum is an integer < 2^24: exact. */
  const double want = (double)(n - 1) * n * (2 * n - 1) / 6.0 + (double)n;
  printf("y[:4] = %g %g %g %g ... y[%lld] = %g\n", yc[0], yc[1], yc[2], yc[3], (long long)(n - 1),
         yc[n - 1]);
  printf("sum(h(x)) = %.1f (expected %.1f)\n", got, want);

  int bad = got != want;
  for (int64_t i = 0; i < n; i++)
    if (yc[i] != (float)(i * i + 1)) bad = 1;

  ct_tensor_free(y_cpu);
  ct_tensor_free(s_cpu);
  ct_tensor_free(s);
  ct_value_free(res);
  ct_value_free(arg);
  ct_tensor_free(y);
  ct_tensor_free(x);
  printf("%s\n", bad ? "MISMATCH" : "OK");
  return bad ? 1 : 0;
}
