/* `ctorch inspect` for torch.save files (a state_dict, a checkpoint), read with
 * ct_pickle_load (no Python code runs): the tree of keys with each tensor's dtype and shape,
 * scalars with their values, Python objects by class, and totals over all tensors; as
 * indented text or as one JSON object of typed nodes. */
#include "inspect.h"

#include <string.h>

#define NAME_WIDTH 40

/* One node: text lines at depth (name first; hide: a container's items only, at depth),
 * or a JSON node returned in *js. */
static int walk(const ct_value *v, const char *name, int depth, int hide, inspect_totals *tot,
                cJSON **js);

/* A name as torch prints a key: the string itself, else the key's repr. */
static void key_name(char *buf, size_t n, const ct_value *k, size_t i) {
  char *repr = NULL;
  if (ct_value_tag(k) == CT_VALUE_STRING)
    snprintf(buf, n, "%s", value_str(k));
  else if (ct_value_to_repr(&repr, k) == CT_OK)
    snprintf(buf, n, "%s", repr);
  else
    snprintf(buf, n, "[%zu]", i);
  ct_free(repr);
}

static void line(int depth, const char *name, const char *what) {
  int w = NAME_WIDTH - 2 * depth;
  printf("%*s%-*s %s\n", 2 * depth, "", w > 0 ? w : 0, name, what);
}

static cJSON *typed(const ct_value *v) {
  cJSON *o = cJSON_CreateObject();
  char *type = value_type(v);
  cJSON_AddStringToObject(o, "type", type ? type : "?");
  ct_free(type);
  return o;
}

/* Dicts, lists and tuples of anything: one child per item. */
static int walk_container(const ct_value *v, const char *name, int depth, int hide,
                          inspect_totals *tot, cJSON **js) {
  int is_dict = ct_value_tag(v) == CT_VALUE_DICT;
  size_t i, n = 0;
  ct_status st = ct_value_length(&n, v);
  cJSON *items = NULL;
  char *type = value_type(v);
  if (st != CT_OK) {
    ct_free(type);
    return fail_ct(st, name);
  }
  if (js) {
    *js = typed(v);
    items = is_dict ? cJSON_AddObjectToObject(*js, "items") : cJSON_AddArrayToObject(*js, "items");
  } else if (!hide) {
    char what[256];
    snprintf(what, sizeof what, "%s (%zu item%s)", type ? type : "?", n, n == 1 ? "" : "s");
    line(depth, name, what);
  }
  ct_free(type);
  for (i = 0; i < n; i++) {
    ct_value *k = NULL, *item = NULL;
    char child[512];
    cJSON *cj = NULL;
    int rc;
    st = is_dict ? ct_value_dict_item(&k, &item, v, i) : ct_value_get(&item, v, i);
    if (st != CT_OK) return fail_ct(st, name);
    if (is_dict)
      key_name(child, sizeof child, k, i);
    else
      snprintf(child, sizeof child, "[%zu]", i);
    rc = walk(item, child, hide ? depth : depth + 1, 0, tot, js ? &cj : NULL);
    if (js) {
      if (is_dict)
        cJSON_AddItemToObject(items, child, cj);
      else
        cJSON_AddItemToArray(items, cj);
    }
    ct_value_free(k);
    ct_value_free(item);
    if (rc) return rc;
  }
  return 0;
}

static int walk(const ct_value *v, const char *name, int depth, int hide, inspect_totals *tot,
                cJSON **js) {
  int32_t tag = ct_value_tag(v);
  ct_status st;
  if (tag == CT_VALUE_TENSOR) {
    ct_tensor *t = NULL;
    if ((st = ct_value_to_tensor(&t, v)) != CT_OK) return fail_ct(st, name);
    tot->count++;
    tot->numel += ct_tensor_numel(t);
    tot->bytes += ct_tensor_nbytes(t);
    if (js) {
      *js = cJSON_CreateObject();
      cJSON_AddStringToObject(*js, "type", "Tensor");
      cJSON_AddStringToObject(*js, "dtype", dtype_name(ct_tensor_dtype(t)));
      cJSON_AddItemToObject(*js, "shape", json_shape(t));
      cJSON_AddItemToObject(*js, "numel", json_int(ct_tensor_numel(t)));
      cJSON_AddBoolToObject(*js, "requires_grad", ct_tensor_requires_grad(t));
    } else {
      char what[600], shape[512];
      shape_str(shape, sizeof shape, t);
      snprintf(what, sizeof what, "%s%s%s", dtype_name(ct_tensor_dtype(t)), shape,
               ct_tensor_requires_grad(t) ? " requires_grad" : "");
      line(depth, name, what);
    }
    ct_tensor_free(t);
    return 0;
  }
  if (tag == CT_VALUE_DICT || tag == CT_VALUE_LIST || tag == CT_VALUE_TUPLE ||
      tag == CT_VALUE_TENSOR_LIST)
    return walk_container(v, name, depth, hide, tot, js);
  if (tag == CT_VALUE_OBJECT) {
    const char *cls = "?";
    ct_value *state = NULL;
    cJSON *sj = NULL;
    int rc;
    ct_value_object_class(&cls, v);
    if ((st = ct_value_object_state(&state, v)) != CT_OK) return fail_ct(st, name);
    if (js) {
      *js = cJSON_CreateObject();
      cJSON_AddStringToObject(*js, "type", "object");
      cJSON_AddStringToObject(*js, "class", cls);
    } else {
      char what[600];
      snprintf(what, sizeof what, "%s object", cls);
      line(depth, name, what);
    }
    /* the state's items are the object's children */
    rc = walk(state, "(state)", depth + 1, ct_value_tag(state) == CT_VALUE_DICT, tot,
              js ? &sj : NULL);
    if (js) cJSON_AddItemToObject(*js, "state", sj);
    ct_value_free(state);
    return rc;
  }
  if (js) { /* scalars, int/float/bool lists, strings, None: their value */
    *js = typed(v);
    cJSON_AddItemToObject(*js, "value", json_scalar(v));
  } else {
    char *type = value_type(v), what[600], val[512];
    scalar_str(val, sizeof val, v);
    snprintf(what, sizeof what, "%s = %s", type ? type : "?", val);
    line(depth, name, what);
    ct_free(type);
  }
  return 0;
}

int inspect_pickle(const char *path, int json) {
  ct_value *v = NULL;
  inspect_totals tot;
  cJSON *root = NULL, *tree = NULL, *t;
  char *type = NULL;
  int rc;
  ct_status st = ct_pickle_load(&v, path);
  if (st != CT_OK) return fail_ct(st, path);
  memset(&tot, 0, sizeof tot);
  type = value_type(v);
  if (!json) printf("%s: torch.save file, %s\n", path, type ? type : "?");
  /* a top-level dict or list: its items at depth 1, without a line of its own */
  rc = walk(v, "(value)", 1, ct_value_tag(v) == CT_VALUE_DICT || ct_value_tag(v) == CT_VALUE_LIST,
            &tot, json ? &tree : NULL);
  if (!rc && json) {
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "file", path);
    cJSON_AddStringToObject(root, "kind", "torch.save");
    cJSON_AddStringToObject(root, "type", type ? type : "?");
    cJSON_AddItemToObject(root, "tree", tree);
    tree = NULL;
    t = cJSON_AddObjectToObject(root, "tensors_total");
    cJSON_AddItemToObject(t, "count", json_int(tot.count));
    cJSON_AddItemToObject(t, "numel", json_int(tot.numel));
    cJSON_AddItemToObject(t, "bytes", json_int((int64_t)tot.bytes));
    rc = json_print(root);
  } else if (!rc) {
    char hb[64];
    bytes_str(hb, sizeof hb, tot.bytes);
    printf("total: %lld tensors, %lld elements, %s\n", (long long)tot.count, (long long)tot.numel,
           hb);
  }
  cJSON_Delete(tree);
  ct_free(type);
  ct_value_free(v);
  return rc;
}
