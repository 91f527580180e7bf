/* Includes only ctorch.h and links only -lctorch: create, wrap, inspect and
 * exchange tensors through DLPack. */
#include <stdio.h>

#include <ctorch.h>

static int deleted = 0;
static void on_delete(void *data, void *ctx) { (void)data; (void)ctx; deleted++; }

int main(void) {
  float buf[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  ct_tensor *t = NULL, *back = NULL;
  DLManagedTensorVersioned *dl = NULL;
  if (ct_abi_version() != CTORCH_ABI_VERSION) return 1;
  if (ct_tensor_from_blob(&t, buf, shape, 1, NULL, CT_FLOAT32, CT_DEVICE_CPU, -1, on_delete,
                          NULL) != CT_OK) {
    fprintf(stderr, "%s\n", ct_last_error());
    return 1;
  }
  if (ct_tensor_to_dlpack_versioned(&dl, t, 0, -1) != CT_OK) return 1;
  if (ct_tensor_from_dlpack_versioned(&back, dl) != CT_OK) return 1;
  if (ct_tensor_data_ptr(back) != buf || ct_tensor_numel(back) != 4) return 1;
  ct_tensor_fill_(back, 5.0);
  ct_tensor_free(t);
  ct_tensor_free(back);
  printf("consumer: buf[3]=%g deleted=%d (ctorch %s on LibTorch %s)\n", buf[3], deleted,
         ct_version(), ct_torch_version());
  return (buf[3] == 5.0f && deleted == 1) ? 0 : 1;
}
