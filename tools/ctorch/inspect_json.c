/* `ctorch inspect`'s JSON printer: one object (cJSON) built member by member, a member per
 * section, printed on one line at the end. */
#include "inspect.h"

static cJSON *root, *section;

static void module(const char *path, const char *type, int training) {
  root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "file", path);
  cJSON_AddStringToObject(root, "kind", "torchscript");
  cJSON_AddStringToObject(root, "type", type);
  cJSON_AddBoolToObject(root, "training", training);
}

static void package(const char *path, const char *model_name, int32_t dev, int32_t idx) {
  root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "file", path);
  cJSON_AddStringToObject(root, "kind", "aoti_package");
  cJSON_AddStringToObject(root, "model_name", model_name);
  cJSON_AddStringToObject(root, "device", ct_device_type_name(dev));
  cJSON_AddNumberToObject(root, "device_index", idx);
}

static int array(const char *path, const ct_tensor *t) {
  cJSON *first = json_first(t, INSPECT_FIRST_VALUES);
  if (!first) return EXIT_ERROR;
  root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "file", path);
  cJSON_AddStringToObject(root, "kind", "npy");
  cJSON_AddStringToObject(root, "dtype", dtype_name(ct_tensor_dtype(t)));
  cJSON_AddItemToObject(root, "shape", json_shape(t));
  cJSON_AddItemToObject(root, "numel", json_int(ct_tensor_numel(t)));
  cJSON_AddItemToObject(root, "bytes", json_int((int64_t)ct_tensor_nbytes(t)));
  cJSON_AddItemToObject(root, "first_values", first);
  return 0;
}

static void begin_section(const inspect_section *s, size_t n) {
  (void)n;
  section =
      s->object ? cJSON_AddObjectToObject(root, s->key) : cJSON_AddArrayToObject(root, s->key);
}

static void end_section(const inspect_section *s, const inspect_totals *tot) {
  char key[64];
  cJSON *t;
  section = NULL;
  if (!tot) return;
  snprintf(key, sizeof key, "%s_total", s->key);
  t = cJSON_AddObjectToObject(root, key);
  cJSON_AddItemToObject(t, "count", json_int(tot->count));
  cJSON_AddItemToObject(t, "numel", json_int(tot->numel));
  cJSON_AddItemToObject(t, "bytes", json_int((int64_t)tot->bytes));
}

/* {"name": NAME}, appended to the section; the caller adds the other members */
static cJSON *item(const char *name) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddItemToArray(section, o);
  return o;
}

static void method(size_t i, const char *name, const char *schema) {
  (void)i;
  cJSON_AddStringToObject(item(name), "schema", schema);
}

static void tensor(size_t i, const char *name, const ct_tensor *t) {
  cJSON *o = item(name);
  (void)i;
  cJSON_AddStringToObject(o, "dtype", dtype_name(ct_tensor_dtype(t)));
  cJSON_AddItemToObject(o, "shape", json_shape(t));
  cJSON_AddStringToObject(o, "device", ct_device_type_name(ct_tensor_device_type(t)));
  cJSON_AddItemToObject(o, "numel", json_int(ct_tensor_numel(t)));
  cJSON_AddBoolToObject(o, "requires_grad", ct_tensor_requires_grad(t));
}

static void submodule(size_t i, const char *name, const char *type) {
  (void)i;
  cJSON_AddStringToObject(item(name), "type", type);
}

static void extra_file(size_t i, const char *name, size_t bytes) {
  (void)i;
  cJSON_AddItemToObject(item(name), "bytes", json_int((int64_t)bytes));
}

static void entry(size_t i, const char *key, const char *value) {
  (void)i;
  cJSON_AddStringToObject(section, key, value);
}

static void string(size_t i, const char *s) {
  (void)i;
  cJSON_AddItemToArray(section, cJSON_CreateString(s));
}

static void end(void) {
  json_print(root);
  root = NULL;
}

const struct inspect_printer inspect_json = {module,      package, array,  begin_section,
                                             end_section, method,  tensor, submodule,
                                             extra_file,  entry,   string, end};
