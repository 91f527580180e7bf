/* Checkpoints as people have them (issue 11 section 4), made by PyTorch
 * (tests/models/make_checkpoints.py): an optimizer checkpoint with an
 * argparse.Namespace, numpy scalars and arrays and a set; a legacy-format
 * (pre-1.6) file; a whole pickled nn.Module; a plain protocol-4 pickle. Each
 * loads without running Python code; tensors are checked against ref.pt. */
#include "test_util.h"

static char path_buf[4096];

static const char *ck_path(const char *name) {
  const char *d = getenv("CTORCH_TEST_CHECKPOINTS");
  if (!d || !*d) return NULL;
  snprintf(path_buf, sizeof path_buf, "%s/%s", d, name);
  return path_buf;
}

static ct_value *load(const char *name) {
  const char *p = ck_path(name);
  if (!p) {
    print_message("[ SKIPPED ] CTORCH_TEST_CHECKPOINTS unset (no PyTorch-made files)\n");
    skip();
  }
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_pickle_load(&v, p));
  return v;
}

static ct_value *get(const ct_value *d, const char *key) {
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_value_dict_get_str(&v, d, key));
  return v;
}

static ct_tensor *tensor_of(const ct_value *v) {
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, v));
  return t;
}

/* d[key] is a tensor equal to ref[ref_key]. */
static void check_tensor(const ct_value *d, const char *key, const ct_value *ref,
                         const char *ref_key) {
  ct_value *a = get(d, key), *b = get(ref, ref_key);
  ct_tensor *ta = tensor_of(a), *tb = tensor_of(b);
  int32_t eq = 0;
  CT_OK_OR_FAIL(ct_tensor_equal(&eq, ta, tb));
  if (!eq || ct_tensor_dtype(ta) != ct_tensor_dtype(tb))
    fail_msg("%s differs from the reference %s", key, ref_key);
  ct_tensor_free(ta);
  ct_tensor_free(tb);
  ct_value_free(a);
  ct_value_free(b);
}

static void check_class(const ct_value *obj, const char *cls) {
  const char *name = NULL;
  assert_int_equal(ct_value_tag(obj), CT_VALUE_OBJECT);
  CT_OK_OR_FAIL(ct_value_object_class(&name, obj));
  assert_string_equal(name, cls);
}

static double get_double(const ct_value *d, const char *key) {
  ct_value *v = get(d, key);
  double x = 0;
  CT_OK_OR_FAIL(ct_value_to_double(&x, v));
  ct_value_free(v);
  return x;
}

static int64_t get_int(const ct_value *d, const char *key) {
  ct_value *v = get(d, key);
  int64_t x = 0;
  assert_int_equal(ct_value_tag(v), CT_VALUE_INT);
  CT_OK_OR_FAIL(ct_value_to_int(&x, v));
  ct_value_free(v);
  return x;
}

static void test_optimizer_checkpoint(void **state) {
  (void)state;
  ct_value *ck = load("optim.pt"), *ref = load("ref.pt");
  assert_int_equal(get_int(ck, "epoch"), 3);
  /* numpy scalars are numbers. */
  ct_value *acc = get(ck, "best_acc");
  assert_int_equal(ct_value_tag(acc), CT_VALUE_DOUBLE);
  assert_true(get_double(ck, "best_acc") == 0.875);
  assert_int_equal(get_int(ck, "step"), 1200);
  /* numpy arrays are tensors with PyTorch's values (C and Fortran order). */
  check_tensor(ck, "hist", ref, "hist");
  check_tensor(ck, "mask", ref, "mask");
  check_tensor(ck, "fortran", ref, "fortran");
  /* The model's state_dict. */
  ct_value *model = get(ck, "model");
  check_tensor(model, "weight", ref, "model.weight");
  check_tensor(model, "bias", ref, "model.bias");
  /* The optimizer's state_dict: state[0] moments, param_groups[0] lr. */
  ct_value *opt = get(ck, "optimizer"), *st = get(opt, "state"), *groups = get(opt, "param_groups");
  ct_value *k0 = NULL, *s0 = NULL, *g0 = NULL;
  CT_OK_OR_FAIL(ct_value_from_int(&k0, 0));
  CT_OK_OR_FAIL(ct_value_dict_get(&s0, st, k0));
  check_tensor(s0, "exp_avg", ref, "exp_avg");
  check_tensor(s0, "exp_avg_sq", ref, "exp_avg_sq");
  CT_OK_OR_FAIL(ct_value_get(&g0, groups, 0));
  assert_true(get_double(g0, "lr") == 0.01);
  /* argparse.Namespace: a generic object with its class and state. */
  ct_value *args = get(ck, "args"), *ast = NULL, *aargs = NULL;
  check_class(args, "argparse.Namespace");
  CT_OK_OR_FAIL(ct_value_object_state(&ast, args));
  assert_int_equal(ct_value_tag(ast), CT_VALUE_DICT);
  assert_true(get_double(ast, "lr") == 0.01);
  assert_int_equal(get_int(ast, "epochs"), 10);
  ct_value *name = get(ast, "name"), *betas = get(ast, "betas"), *resume = get(ast, "resume");
  const char *s = NULL;
  size_t len = 0;
  CT_OK_OR_FAIL(ct_value_to_string(&s, &len, name));
  assert_int_equal(len, 4);
  assert_memory_equal(s, "run1", 4);
  assert_int_equal(ct_value_tag(betas), CT_VALUE_TUPLE);
  assert_int_equal(ct_value_tag(resume), CT_VALUE_NONE);
  CT_OK_OR_FAIL(ct_value_object_args(&aargs, args));
  assert_int_equal(ct_value_tag(aargs), CT_VALUE_TUPLE);
  /* A set is a list. */
  ct_value *classes = get(ck, "classes"), *c0 = NULL;
  size_t n = 0;
  CT_OK_OR_FAIL(ct_value_len(&n, classes));
  assert_int_equal(n, 1);
  CT_OK_OR_FAIL(ct_value_get(&c0, classes, 0));
  CT_OK_OR_FAIL(ct_value_to_string(&s, &len, c0));
  assert_memory_equal(s, "cat", 3);
  /* Non-objects have no class. */
  CT_EXPECT_ERROR(ct_value_object_class(&s, ck), CT_ERR_TYPE, "not an object");
  ct_value *all[] = {ck, ref,  acc, model, opt,  st,    groups, k0,      s0,
                     g0, args, ast, aargs, name, betas, resume, classes, c0};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) ct_value_free(all[i]);
}

static void test_legacy_format(void **state) {
  (void)state;
  ct_value *ck = load("legacy.pt"), *ref = load("ref.pt");
  check_tensor(ck, "w", ref, "w");
  check_tensor(ck, "b", ref, "b");
  check_tensor(ck, "row", ref, "row");
  /* row is a view of w: one storage, as in torch.load. */
  ct_value *w = get(ck, "w"), *row = get(ck, "row");
  ct_tensor *tw = tensor_of(w), *tr = tensor_of(row);
  assert_ptr_equal(ct_tensor_data_ptr(tr), (char *)ct_tensor_data_ptr(tw) + 3 * sizeof(float));
  ct_tensor_free(tw);
  ct_tensor_free(tr);
  ct_value_free(w);
  ct_value_free(row);
  ct_value_free(ck);
  ct_value_free(ref);
}

static void test_whole_module(void **state) {
  (void)state;
  ct_value *m = load("module.pt"), *ref = load("ref.pt");
  check_class(m, "torch.nn.modules.container.Sequential");
  ct_value *st = NULL;
  CT_OK_OR_FAIL(ct_value_object_state(&st, m));
  ct_value *mods = get(st, "_modules"), *lin = get(mods, "0"), *relu = get(mods, "1");
  check_class(lin, "torch.nn.modules.linear.Linear");
  check_class(relu, "torch.nn.modules.activation.ReLU");
  ct_value *lst = NULL;
  CT_OK_OR_FAIL(ct_value_object_state(&lst, lin));
  ct_value *params = get(lst, "_parameters");
  check_tensor(params, "weight", ref, "seq.0.weight");
  check_tensor(params, "bias", ref, "seq.0.bias");
  ct_value *w = get(params, "weight");
  ct_tensor *tw = tensor_of(w);
  assert_int_equal(ct_tensor_requires_grad(tw), 1); /* a Parameter */
  ct_value *training = get(lst, "training");
  assert_int_equal(ct_value_tag(training), CT_VALUE_BOOL);
  ct_tensor_free(tw);
  ct_value *all[] = {m, ref, st, mods, lin, relu, lst, params, w, training};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) ct_value_free(all[i]);
}

static void test_plain_pickle(void **state) {
  (void)state;
  ct_value *ns = load("plain.pkl"), *st = NULL;
  check_class(ns, "argparse.Namespace");
  CT_OK_OR_FAIL(ct_value_object_state(&st, ns));
  assert_true(get_double(st, "lr") == 0.5);
  assert_int_equal(get_int(st, "depth"), 4);
  ct_value *tags = get(st, "tags");
  size_t n = 0;
  CT_OK_OR_FAIL(ct_value_len(&n, tags));
  assert_int_equal(n, 2);
  ct_value_free(tags);
  ct_value_free(st);
  ct_value_free(ns);
}

/* Damaged files fail cleanly, never crash. */
static void test_truncated(void **state) {
  (void)state;
  const char *p = ck_path("legacy.pt");
  if (!p) skip();
  FILE *f = fopen(p, "rb");
  assert_non_null(f);
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  ct_value *v = NULL;
  for (size_t cut = 1; cut < n; cut += 7) {
    ct_status s = ct_pickle_load_buffer(&v, buf, cut);
    if (s == CT_OK) {
      ct_value_free(v); /* a prefix that is itself a complete pickle */
      v = NULL;
      continue;
    }
    assert_int_equal(s, CT_ERR_IO);
  }
  CT_EXPECT_ERROR(ct_pickle_load_buffer(&v, buf, 20), CT_ERR_IO, "not a readable");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_optimizer_checkpoint),
      cmocka_unit_test(test_legacy_format),
      cmocka_unit_test(test_whole_module),
      cmocka_unit_test(test_plain_pickle),
      cmocka_unit_test(test_truncated),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
