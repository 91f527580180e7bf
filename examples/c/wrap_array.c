/* Wraps a C array as a torch tensor with no copy, lets torch change it in
 * place (x.mul_(2), then x.add_(1)), and shows the change in the C array.
 * The deleter runs when torch lets go of the memory. */
#include <stdio.h>

#include "ctorch.h"

static void on_release(void *data, void *ctx) {
  (void)data;
  printf("deleter: torch released the buffer (%s)\n", (const char *)ctx);
}

#define CHECK(call)                                               \
  do {                                                            \
    if ((call) != CT_OK) {                                        \
      fprintf(stderr, "%s failed: %s\n", #call, ct_last_error()); \
      return 1;                                                   \
    }                                                             \
  } while (0)

int main(void) {
  float data[2][3] = {{1, 2, 3}, {4, 5, 6}};
  int64_t sizes[2] = {2, 3};
  ct_tensor *x = NULL;
  ct_value *xv = NULL, *two = NULL, *one = NULL, *r = NULL;
  char *s = NULL;

  printf("ctorch %s on LibTorch %s\n", ct_version(), ct_torch_version());
  CHECK(ct_tensor_from_blob(&x, data, sizes, 2, NULL, CT_FLOAT32, CT_DEVICE_CPU, -1, on_release,
                            "data[2][3]"));
  printf("same memory: %s\n", ct_tensor_data_ptr(x) == (void *)data ? "yes" : "no");

  CHECK(ct_value_from_tensor(&xv, x));
  CHECK(ct_value_from_double(&two, 2.0));
  CHECK(ct_value_from_int(&one, 1));
  const ct_value *mul_args[2] = {xv, two};
  CHECK(ct_op_call_name(&r, "aten::mul_.Scalar", mul_args, 2, NULL, NULL, 0));
  ct_value_free(r);
  const ct_value *add_args[2] = {xv, one};
  CHECK(ct_op_call_name(&r, "aten::add_.Scalar", add_args, 2, NULL, NULL, 0));
  ct_value_free(r);

  CHECK(ct_tensor_to_string(&s, x));
  printf("torch sees:\n%s\n", s);
  ct_free(s);
  printf("C array now: ");
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) printf("%g ", data[i][j]);
  printf("\n");

  ct_value_free(xv);
  ct_value_free(two);
  ct_value_free(one);
  ct_tensor_free(x); /* the last reference: the deleter runs here */
  return data[1][2] == 13.0f ? 0 : 1;
}
