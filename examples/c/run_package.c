/* run_package: loads an AOTInductor package (.pt2) and runs it.
 *
 *   example_run_package model.pt2 input-size... [-- input-size...]
 *
 * Make a package in Python (torch >= 2.6):
 *   ep = torch.export.export(model, (torch.randn(3, 8),))
 *   torch._inductor.aoti_compile_and_package(ep, package_path="model.pt2")
 * then: example_run_package model.pt2 3 8
 *
 * Prints the metadata, the constants, the device, runs the model on inputs of
 * ones (float32; "--" separates the sizes of several inputs) and prints each
 * output's shape and first values. With a LibTorch older than 2.6 it prints
 * the not-supported message and exits 0. Plain C99, ctorch.h only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

#define CHECK(call)                                                              \
  do {                                                                           \
    ct_status st_ = (call);                                                      \
    if (st_ != CT_OK) {                                                          \
      fprintf(stderr, "%s failed (%d): %s\n", #call, (int)st_, ct_last_error()); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

#define MAX_IO 16

static void print_str_list(const char *title, const ct_value *list) {
  size_t n = 0;
  CHECK(ct_value_length(&n, list));
  printf("%s (%zu):", title, n);
  for (size_t i = 0; i < n; ++i) {
    ct_value *s = NULL;
    const char *str = NULL;
    CHECK(ct_value_get(&s, list, i));
    CHECK(ct_value_as_string(&str, NULL, s));
    printf(" %s", str);
    ct_value_free(s);
  }
  printf("\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s model.pt2 input-size... [-- input-size...]\n", argv[0]);
    return 2;
  }
  ct_package *p = NULL;
  ct_status st = ct_package_load(&p, argv[1], NULL);
  if (st == CT_ERR_NOT_SUPPORTED) {
    printf("not supported here: %s\n", ct_last_error());
    return 0;
  }
  CHECK(st);

  ct_value *md = NULL;
  CHECK(ct_package_metadata(&md, p));
  size_t n = 0;
  CHECK(ct_value_length(&n, md));
  for (size_t i = 0; i < n; ++i) {
    ct_value *k = NULL, *v = NULL;
    const char *ks = NULL, *vs = NULL;
    CHECK(ct_value_dict_item(&k, &v, md, i));
    CHECK(ct_value_as_string(&ks, NULL, k));
    CHECK(ct_value_as_string(&vs, NULL, v));
    printf("metadata %s = %s\n", ks, vs);
    ct_value_free(k);
    ct_value_free(v);
  }
  ct_value_free(md);
  ct_value *names = NULL;
  CHECK(ct_package_constant_names(&names, p));
  print_str_list("constants", names);
  ct_value_free(names);
  int32_t dev_type = 0, dev_index = 0;
  CHECK(ct_package_device(&dev_type, &dev_index, p));
  printf("device %s %d\n", ct_device_type_name(dev_type), (int)dev_index);

  /* Inputs of ones: sizes from the command line, "--" between inputs. */
  ct_tensor *in[MAX_IO] = {0}, *out[MAX_IO] = {0};
  size_t n_in = 0;
  int64_t sizes[8];
  size_t nd = 0;
  for (int a = 2; a <= argc; ++a) {
    if (a == argc || strcmp(argv[a], "--") == 0) {
      if (n_in == MAX_IO) break;
      CHECK(ct_tensor_ones(&in[n_in++], sizes, nd, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
      nd = 0;
    } else if (nd < 8) {
      sizes[nd++] = atoll(argv[a]);
    }
  }
  size_t n_out = 0;
  CHECK(ct_package_run(out, MAX_IO, &n_out, p, (const ct_tensor *const *)in, n_in));
  for (size_t i = 0; i < n_out; ++i) {
    ct_tensor *c = NULL;
    CHECK(ct_tensor_to(&c, out[i], CT_DEVICE_CPU, -1, CT_FLOAT32, 0, 0));
    printf("output %zu: [", i);
    for (int64_t d = 0; d < ct_tensor_ndim(c); ++d)
      printf("%s%lld", d ? ", " : "", (long long)ct_tensor_sizes(c)[d]);
    printf("]");
    ct_tensor *cc = NULL;
    CHECK(ct_tensor_contiguous(&cc, c));
    const float *v = (const float *)ct_tensor_data_ptr(cc);
    for (int64_t j = 0; j < ct_tensor_numel(cc) && j < 5; ++j) printf(" %.5f", v[j]);
    printf("\n");
    ct_tensor_free(cc);
    ct_tensor_free(c);
    ct_tensor_free(out[i]);
  }
  for (size_t i = 0; i < n_in; ++i) ct_tensor_free(in[i]);
  ct_package_free(p);
  return 0;
}
