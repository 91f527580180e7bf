/* `ctorch inspect`'s JSON printer: one object on one line, a member per section. */
#include "inspect.h"

static void module(const char *path, const char *type, int training) {
  printf("{\"file\": ");
  json_str(stdout, path);
  printf(", \"kind\": \"torchscript\", \"type\": ");
  json_str(stdout, type);
  printf(", \"training\": %s", training ? "true" : "false");
}

static void package(const char *path, const char *model_name, int32_t dev, int32_t idx) {
  printf("{\"file\": ");
  json_str(stdout, path);
  printf(", \"kind\": \"aoti_package\", \"model_name\": ");
  json_str(stdout, model_name);
  printf(", \"device\": \"%s\", \"device_index\": %d", ct_device_type_name(dev), (int)idx);
}

static void begin_section(const inspect_section *s, size_t n) {
  (void)n;
  printf(", \"%s\": %c", s->key, s->object ? '{' : '[');
}

static void end_section(const inspect_section *s, const inspect_totals *tot) {
  putchar(s->object ? '}' : ']');
  if (tot)
    printf(", \"%s_total\": {\"count\": %lld, \"numel\": %lld, \"bytes\": %zu}", s->key,
           (long long)tot->count, (long long)tot->numel, tot->bytes);
}

/* {"name": NAME, then the item's other members, then } */
static void item_begin(size_t i, const char *name) {
  printf("%s{\"name\": ", i ? ", " : "");
  json_str(stdout, name);
}

static void method(size_t i, const char *name, const char *schema) {
  item_begin(i, name);
  printf(", \"schema\": ");
  json_str(stdout, schema);
  printf("}");
}

static void tensor(size_t i, const char *name, const ct_tensor *t) {
  item_begin(i, name);
  printf(", \"dtype\": \"%s\", \"shape\": ", dtype_name(ct_tensor_dtype(t)));
  json_shape(stdout, t);
  printf(", \"device\": \"%s\", \"numel\": %lld, \"requires_grad\": %s}",
         ct_device_type_name(ct_tensor_device_type(t)), (long long)ct_tensor_numel(t),
         ct_tensor_requires_grad(t) ? "true" : "false");
}

static void submodule(size_t i, const char *name, const char *type) {
  item_begin(i, name);
  printf(", \"type\": ");
  json_str(stdout, type);
  printf("}");
}

static void extra_file(size_t i, const char *name, size_t bytes) {
  item_begin(i, name);
  printf(", \"bytes\": %zu}", bytes);
}

static void entry(size_t i, const char *key, const char *value) {
  if (i) printf(", ");
  json_str(stdout, key);
  printf(": ");
  json_str(stdout, value);
}

static void string(size_t i, const char *s) {
  if (i) printf(", ");
  json_str(stdout, s);
}

static void end(void) { printf("}\n"); }

const struct inspect_printer inspect_json = {module, package,   begin_section, end_section, method,
                                             tensor, submodule, extra_file,    entry,       string,
                                             end};
