/* `ctorch inspect`'s text printer: headings with counts, one indented line per item. */
#include "inspect.h"

static void module(const char *path, const char *type, int training) {
  printf("%s: TorchScript module %s (%s mode)\n", path, type, training ? "training" : "eval");
}

static void package(const char *path, const char *model_name, int32_t dev, int32_t idx) {
  printf("%s: AOTInductor package, model '%s', runs on %s", path, model_name,
         ct_device_type_name(dev));
  if (idx >= 0) printf(":%d", (int)idx);
  printf("\n");
}

static int array(const char *path, const ct_tensor *t) {
  char shape[512], hb[64];
  shape_str(shape, sizeof shape, t);
  bytes_str(hb, sizeof hb, ct_tensor_nbytes(t));
  printf("%s: NumPy array %s%s, %lld elements, %s\n  values: ", path,
         dtype_name(ct_tensor_dtype(t)), shape, (long long)ct_tensor_numel(t), hb);
  if (print_first(t, INSPECT_FIRST_VALUES)) {
    printf("\n");
    return EXIT_ERROR;
  }
  printf("\n");
  return 0;
}

static void begin_section(const inspect_section *s, size_t n) {
  if (s->show_count)
    printf("%s (%zu):\n", s->title, n);
  else
    printf("%s:\n", s->title);
}

static void end_section(const inspect_section *s, const inspect_totals *tot) {
  char hb[64];
  if (!tot) return;
  bytes_str(hb, sizeof hb, tot->bytes);
  printf("  total: %lld %s, %lld elements, %s\n", (long long)tot->count, s->key,
         (long long)tot->numel, hb);
}

static void method(size_t i, const char *name, const char *schema) {
  (void)i;
  (void)name;
  printf("  %s\n", schema);
}

static void tensor(size_t i, const char *name, const ct_tensor *t) {
  char shape[512];
  (void)i;
  shape_str(shape, sizeof shape, t);
  printf("  %-40s %s%s\n", name, dtype_name(ct_tensor_dtype(t)), shape);
}

static void submodule(size_t i, const char *name, const char *type) {
  (void)i;
  printf("  %-40s %s\n", name, type);
}

static void extra_file(size_t i, const char *name, size_t bytes) {
  (void)i;
  printf("  %-40s %zu bytes\n", name, bytes);
}

static void entry(size_t i, const char *key, const char *value) {
  (void)i;
  printf("  %-40s %s\n", key, value);
}

static void string(size_t i, const char *s) {
  (void)i;
  printf("  %s\n", s);
}

static void end(void) {}

const struct inspect_printer inspect_text = {module,      package, array,  begin_section,
                                             end_section, method,  tensor, submodule,
                                             extra_file,  entry,   string, end};
