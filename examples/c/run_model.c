/* run_model: loads a TorchScript model and runs it.
 *
 *   example_run_model [model.pt [input-size...]]
 *
 * Without arguments it builds a small classifier from TorchScript source with
 * fixed weights, saves it as demo_model.pt and uses that. Prints the methods
 * and parameter shapes, runs forward on an input of ones (shape from the
 * command line, default 1x3x64x64 for a file, 1x8 for the demo), prints the
 * output and its top-5 indices. Plain C99, ctorch.h only. */
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

static const char *DEMO_SRC =
    "def forward(self, x):\n"
    "    h = torch.relu(torch.matmul(x, self.w1) + self.b1)\n"
    "    return torch.softmax(torch.matmul(h, self.w2), 1)\n";

static ct_tensor *fixed_tensor(int64_t rows, int64_t cols, float scale) {
  float *d = malloc((size_t)(rows * cols) * sizeof(float));
  int64_t sizes[2] = {rows, cols};
  ct_tensor *t = NULL;
  for (int64_t i = 0; i < rows * cols; ++i) d[i] = scale * (float)((i * 7) % 11 - 5);
  CHECK(ct_tensor_from_data(&t, d, sizes, 2, CT_FLOAT32, CT_DEVICE_CPU, -1));
  free(d);
  return t;
}

static const char *make_demo(void) {
  const char *path = "demo_model.pt";
  ct_module *m = NULL;
  CHECK(ct_module_new(&m, "DemoClassifier"));
  ct_tensor *w1 = fixed_tensor(8, 16, 0.1f), *w2 = fixed_tensor(16, 10, 0.05f);
  float b1d[16] = {0};
  int64_t b1s[1] = {16};
  ct_tensor *b1 = NULL;
  CHECK(ct_tensor_from_data(&b1, b1d, b1s, 1, CT_FLOAT32, CT_DEVICE_CPU, -1));
  CHECK(ct_module_register_parameter(m, "w1", w1, 0));
  CHECK(ct_module_register_parameter(m, "b1", b1, 0));
  CHECK(ct_module_register_parameter(m, "w2", w2, 0));
  CHECK(ct_module_define(m, DEMO_SRC));
  CHECK(ct_module_save(m, path, NULL));
  ct_tensor_free(w1);
  ct_tensor_free(w2);
  ct_tensor_free(b1);
  ct_module_free(m);
  printf("built and saved %s\n", path);
  return path;
}

static void print_shape(const ct_tensor *t) {
  printf("[");
  for (int64_t d = 0; d < ct_tensor_ndim(t); ++d)
    printf("%s%lld", d ? ", " : "", (long long)ct_tensor_sizes(t)[d]);
  printf("]");
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : make_demo();
  int64_t sizes[8] = {1, 3, 64, 64};
  size_t ndim = 4;
  if (argc > 2) {
    ndim = 0;
    for (int i = 2; i < argc && ndim < 8; ++i) sizes[ndim++] = atoll(argv[i]);
  } else if (argc <= 1) {
    sizes[0] = 1, sizes[1] = 8, ndim = 2;
  }

  ct_module *m = NULL;
  CHECK(ct_module_load(&m, path, CT_DEVICE_CPU, -1));
  CHECK(ct_module_eval(m));

  /* Methods: name -> schema. */
  ct_value *methods = NULL;
  size_t n = 0;
  CHECK(ct_module_methods(&methods, m));
  CHECK(ct_value_length(&n, methods));
  printf("methods:\n");
  for (size_t i = 0; i < n; ++i) {
    ct_value *k = NULL, *v = NULL;
    const char *schema;
    CHECK(ct_value_dict_item(&k, &v, methods, i));
    CHECK(ct_value_as_string(&schema, NULL, v));
    printf("  %s\n", schema);
    ct_value_free(k);
    ct_value_free(v);
  }
  ct_value_free(methods);

  /* Parameters with their shapes. */
  ct_value *params = NULL;
  CHECK(ct_module_named_parameters(&params, m, 1));
  CHECK(ct_value_length(&n, params));
  printf("parameters (%zu):\n", n);
  for (size_t i = 0; i < n; ++i) {
    ct_value *k = NULL, *v = NULL;
    ct_tensor *t = NULL;
    const char *name;
    CHECK(ct_value_dict_item(&k, &v, params, i));
    CHECK(ct_value_as_string(&name, NULL, k));
    CHECK(ct_value_to_tensor(&t, v));
    if (i < 10 || i + 3 > n) {
      printf("  %-32s ", name);
      print_shape(t);
      printf("\n");
    } else if (i == 10) {
      printf("  ...\n");
    }
    ct_tensor_free(t);
    ct_value_free(k);
    ct_value_free(v);
  }
  ct_value_free(params);

  /* forward(ones). */
  ct_tensor *x = NULL;
  CHECK(ct_tensor_ones(&x, sizes, ndim, CT_FLOAT32, CT_DEVICE_CPU, -1, 0));
  ct_value *xv = NULL, *out = NULL;
  CHECK(ct_value_from_tensor(&xv, x));
  const ct_value *args[1] = {xv};
  CHECK(ct_inference_mode_push(1));
  CHECK(ct_module_forward(&out, m, args, 1));
  CHECK(ct_inference_mode_pop());
  if (ct_value_tag(out) != CT_VALUE_TENSOR) {
    char *r = NULL;
    CHECK(ct_value_to_repr(&r, out));
    printf("output: %s\n", r);
    ct_free(r);
  } else {
    ct_tensor *y = NULL, *yc = NULL, *yf = NULL;
    CHECK(ct_value_to_tensor(&y, out));
    CHECK(ct_tensor_to(&yf, y, CT_DEVICE_KEEP, -1, CT_FLOAT32, 0, 0));
    CHECK(ct_tensor_contiguous(&yc, yf));
    printf("output shape ");
    print_shape(yc);
    printf("\n");
    const float *p = (const float *)ct_tensor_data_ptr(yc);
    int64_t numel = ct_tensor_numel(yc);
    for (int64_t i = 0; i < numel && i < 10; ++i) printf("  y[%lld] = %g\n", (long long)i, p[i]);
    /* Top-5 over the flattened output. */
    int64_t top[5];
    int k = 0;
    for (; k < 5 && k < numel; ++k) {
      int64_t best = -1;
      for (int64_t i = 0; i < numel; ++i) {
        int used = 0;
        for (int j = 0; j < k; ++j) used |= top[j] == i;
        if (!used && (best < 0 || p[i] > p[best])) best = i;
      }
      top[k] = best;
    }
    printf("top-%d:", k);
    for (int j = 0; j < k; ++j) printf(" %lld (%g)", (long long)top[j], p[top[j]]);
    printf("\n");
    ct_tensor_free(yc);
    ct_tensor_free(yf);
    ct_tensor_free(y);
  }
  ct_value_free(out);
  ct_value_free(xv);
  ct_tensor_free(x);
  ct_module_free(m);
  return 0;
}
