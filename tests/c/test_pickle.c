/* torch.save files written by Python (tests/models/make_pickles.py): each
 * loads with ct_pickle_load and ct_pickle_load_buffer and matches its
 * reference (NAME.ref, canonical text; see make_pickles.py), including the
 * opcodes LibTorch 1.13 lacks (APPEND, SETITEM, OrderedDict state_dicts).
 * Each value is saved back with ct_pickle_save as c_NAME.pt, which
 * tests/models/check_pickles.py reads with Python's torch.load. Corrupt input
 * fails with CT_ERR_IO. Skips (77) without CTORCH_TEST_PICKLES. */
#include "test_util.h"

#include <unistd.h>

static char g_dir[4096];

static const char *pk_path(const char *prefix, const char *name, const char *suffix) {
  static char buf[4400];
  snprintf(buf, sizeof buf, "%s/%s%s%s", g_dir, prefix, name, suffix);
  return buf;
}

static void write_all(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, size, f), size);
  assert_int_equal(fclose(f), 0);
}

/* ---- canonical text of a value (the format of make_pickles.py) ---------- */

typedef struct {
  char *s;
  size_t len, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    assert_true(k >= 0);
    if (b->s && b->len + (size_t)k < b->cap) {
      b->len += (size_t)k;
      return;
    }
    b->cap = (b->cap + (size_t)k + 1) * 2;
    b->s = realloc(b->s, b->cap);
    assert_non_null(b->s);
  }
}

static void canon(sbuf *b, const ct_value *v);

static void canon_tensor(sbuf *b, const ct_tensor *t0) {
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_tensor_contiguous(&t, t0));
  int32_t dtype = ct_tensor_dtype(t);
  sb_printf(b, "tensor %s ", ct_dtype_name(dtype));
  int64_t nd = ct_tensor_ndim(t);
  const int64_t *sizes = ct_tensor_sizes(t);
  if (nd == 0) sb_printf(b, "-");
  for (int64_t i = 0; i < nd; ++i) sb_printf(b, i ? ",%lld" : "%lld", (long long)sizes[i]);
  int64_t n = ct_tensor_numel(t);
  const void *p = ct_tensor_data_ptr(t);
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case CT_FLOAT32: sb_printf(b, " %.9g", (double)((const float *)p)[i]); break;
      case CT_FLOAT64: sb_printf(b, " %.9g", ((const double *)p)[i]); break;
      case CT_INT64: sb_printf(b, " %lld", (long long)((const int64_t *)p)[i]); break;
      case CT_INT32: sb_printf(b, " %d", (int)((const int32_t *)p)[i]); break;
      case CT_BOOL:
      case CT_UINT8: sb_printf(b, " %d", (int)((const uint8_t *)p)[i]); break;
      default: fail_msg("no canonical form for dtype %s", ct_dtype_name(dtype));
    }
  }
  sb_printf(b, "\n");
  ct_tensor_free(t);
}

static void canon_seq(sbuf *b, const char *kind, const ct_value *v) {
  size_t n = 0;
  CT_OK_OR_FAIL(ct_value_length(&n, v));
  sb_printf(b, "%s %zu\n", kind, n);
  for (size_t i = 0; i < n; ++i) {
    ct_value *x = NULL;
    CT_OK_OR_FAIL(ct_value_get(&x, v, i));
    canon(b, x);
    ct_value_free(x);
  }
}

static void canon(sbuf *b, const ct_value *v) {
  int32_t tag = ct_value_tag(v);
  switch (tag) {
    case CT_VALUE_NONE: sb_printf(b, "none\n"); break;
    case CT_VALUE_BOOL: {
      int32_t x;
      CT_OK_OR_FAIL(ct_value_to_bool(&x, v));
      sb_printf(b, "bool %d\n", (int)x);
      break;
    }
    case CT_VALUE_INT: {
      int64_t x;
      CT_OK_OR_FAIL(ct_value_to_int(&x, v));
      sb_printf(b, "int %lld\n", (long long)x);
      break;
    }
    case CT_VALUE_DOUBLE: {
      double x;
      CT_OK_OR_FAIL(ct_value_to_double(&x, v));
      sb_printf(b, "float %.17g\n", x);
      break;
    }
    case CT_VALUE_STRING: {
      const char *s;
      size_t len;
      CT_OK_OR_FAIL(ct_value_as_string(&s, &len, v));
      sb_printf(b, "str %.*s\n", (int)len, s);
      break;
    }
    case CT_VALUE_TENSOR: {
      ct_tensor *t = NULL;
      CT_OK_OR_FAIL(ct_value_to_tensor(&t, v));
      canon_tensor(b, t);
      ct_tensor_free(t);
      break;
    }
    case CT_VALUE_LIST:
    case CT_VALUE_INT_LIST:
    case CT_VALUE_DOUBLE_LIST:
    case CT_VALUE_BOOL_LIST:
    case CT_VALUE_TENSOR_LIST: canon_seq(b, "list", v); break;
    case CT_VALUE_TUPLE: canon_seq(b, "tuple", v); break;
    case CT_VALUE_DICT: {
      size_t n = 0;
      CT_OK_OR_FAIL(ct_value_length(&n, v));
      sb_printf(b, "dict %zu\n", n);
      for (size_t i = 0; i < n; ++i) {
        ct_value *k = NULL, *x = NULL;
        CT_OK_OR_FAIL(ct_value_dict_item(&k, &x, v, i));
        canon(b, k);
        canon(b, x);
        ct_value_free(k);
        ct_value_free(x);
      }
      break;
    }
    default: fail_msg("no canonical form for value tag %d", (int)tag);
  }
}

static void expect_canon(const ct_value *v, const char *ref, const char *what) {
  sbuf b = {NULL, 0, 0};
  canon(&b, v);
  if (strcmp(b.s, ref) != 0)
    fail_msg("%s differs from its reference:\n--- got\n%s--- expected\n%s", what, b.s, ref);
  free(b.s);
}

/* ---- per-file checks ------------------------------------------------------
 */

/* Loads NAME.pt from its path and from memory, compares with NAME.ref, saves
 * it as c_NAME.pt (for check_pickles.py) and through a buffer, and checks
 * that both read back the same. Returns the loaded value. */
static ct_value *check_file(const char *name) {
  size_t ref_size = 0, size = 0;
  char *ref = test_read_file(pk_path("", name, ".ref"), &ref_size);
  char path[4400];
  snprintf(path, sizeof path, "%s", pk_path("", name, ".pt"));

  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_pickle_load(&v, path));
  expect_canon(v, ref, path);

  char *bytes = test_read_file(path, &size);
  ct_value *vb = NULL;
  CT_OK_OR_FAIL(ct_pickle_load_buffer(&vb, bytes, size));
  expect_canon(vb, ref, "the buffer");
  ct_value_free(vb);
  free(bytes);

  /* Saved by ctorch: read back by ctorch here, by Python in check_pickles. */
  char out[4400];
  snprintf(out, sizeof out, "%s", pk_path("c_", name, ".pt"));
  unlink(out);
  CT_OK_OR_FAIL(ct_pickle_save(v, out));
  ct_value *back = NULL;
  CT_OK_OR_FAIL(ct_pickle_load(&back, out));
  expect_canon(back, ref, out);
  ct_value_free(back);

  void *buf = NULL;
  CT_OK_OR_FAIL(ct_pickle_save_buffer(&buf, &size, v));
  back = NULL;
  CT_OK_OR_FAIL(ct_pickle_load_buffer(&back, buf, size));
  expect_canon(back, ref, "ct_pickle_save_buffer's buffer");
  ct_value_free(back);
  ct_free(buf);
  free(ref);
  return v;
}

static void test_state_dict(void **state) {
  (void)state;
  ct_value *v = check_file("state_dict");
  assert_int_equal(ct_value_tag(v), CT_VALUE_DICT);
  /* An OrderedDict with _metadata comes back as Dict[str, Tensor] in
   * Python's order; _metadata (a Python attribute) is dropped. */
  char *type = NULL;
  CT_OK_OR_FAIL(ct_value_type_str(&type, v));
  assert_string_equal(type, "Dict[str, Tensor]");
  ct_free(type);
  static const char *const keys[] = {"0.weight",
                                     "0.bias",
                                     "1.weight",
                                     "1.bias",
                                     "1.running_mean",
                                     "1.running_var",
                                     "1.num_batches_tracked"};
  size_t n = 0;
  CT_OK_OR_FAIL(ct_value_length(&n, v));
  assert_int_equal(n, sizeof keys / sizeof keys[0]);
  for (size_t i = 0; i < n; ++i) {
    ct_value *k = NULL, *x = NULL;
    CT_OK_OR_FAIL(ct_value_dict_item(&k, &x, v, i));
    const char *s;
    CT_OK_OR_FAIL(ct_value_as_string(&s, NULL, k));
    assert_string_equal(s, keys[i]);
    assert_int_equal(ct_value_tag(x), CT_VALUE_TENSOR);
    ct_value_free(k);
    ct_value_free(x);
  }
  ct_value *x = NULL;
  CT_OK_OR_FAIL(ct_value_dict_get_str(&x, v, "1.num_batches_tracked"));
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, x));
  assert_int_equal(ct_tensor_dtype(t), CT_INT64);
  assert_int_equal(ct_tensor_ndim(t), 0);
  assert_int_equal(*(const int64_t *)ct_tensor_data_ptr(t), 1);
  ct_tensor_free(t);
  ct_value_free(x);
  x = NULL;
  CT_EXPECT_ERROR(ct_value_dict_get_str(&x, v, "_metadata"), CT_ERR_NOT_FOUND, "_metadata");
  ct_value_free(v);
}

static void test_one_element_containers(void **state) {
  (void)state;
  static const char *const names[] = {"list1",  "int_list1", "dict1",
                                      "nested", "tuple",     "checkpoint"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) ct_value_free(check_file(names[i]));

  /* A few direct looks besides the canonical text. */
  ct_value *v = NULL, *x = NULL;
  CT_OK_OR_FAIL(ct_pickle_load(&v, pk_path("", "int_list1", ".pt")));
  size_t n = 0;
  CT_OK_OR_FAIL(ct_value_length(&n, v));
  assert_int_equal(n, 1);
  CT_OK_OR_FAIL(ct_value_get(&x, v, 0));
  int64_t i64 = 0;
  CT_OK_OR_FAIL(ct_value_to_int(&i64, x));
  assert_int_equal(i64, 7);
  ct_value_free(x);
  ct_value_free(v);

  CT_OK_OR_FAIL(ct_pickle_load(&v, pk_path("", "dict1", ".pt")));
  CT_OK_OR_FAIL(ct_value_dict_get_str(&x, v, "a"));
  CT_OK_OR_FAIL(ct_value_to_int(&i64, x));
  assert_int_equal(i64, 1);
  ct_value_free(x);
  ct_value_free(v);

  CT_OK_OR_FAIL(ct_pickle_load(&v, pk_path("", "checkpoint", ".pt")));
  CT_OK_OR_FAIL(ct_value_dict_get_str(&x, v, "model"));
  char *type = NULL;
  CT_OK_OR_FAIL(ct_value_type_str(&type, x));
  assert_string_equal(type, "Dict[str, Tensor]");
  ct_free(type);
  ct_value_free(x);
  ct_value_free(v);
}

static ct_tensor *item_tensor(const ct_value *v, size_t i) {
  ct_value *x = NULL;
  ct_tensor *t = NULL;
  CT_OK_OR_FAIL(ct_value_get(&x, v, i));
  CT_OK_OR_FAIL(ct_value_to_tensor(&t, x));
  ct_value_free(x);
  return t;
}

static void check_views(const ct_value *v) {
  ct_tensor *base = item_tensor(v, 0), *slice = item_tensor(v, 1), *tr = item_tensor(v, 2);
  float *b = ct_tensor_data_ptr(base);
  /* One storage: the slice starts one float in, the transpose at 0. */
  assert_int_equal(ct_tensor_storage_offset(slice), 1);
  assert_ptr_equal(ct_tensor_data_ptr(slice), b + 1);
  assert_ptr_equal(ct_tensor_data_ptr(tr), b);
  assert_int_equal(ct_tensor_strides(tr)[0], 1);
  assert_int_equal(ct_tensor_strides(tr)[1], 3);
  /* A write through a view shows in the base. */
  CT_OK_OR_FAIL(ct_tensor_fill_(slice, 42.0));
  assert_true(b[1] == 42.0f && b[2] == 42.0f && b[0] == 0.0f);
  ct_tensor_free(base);
  ct_tensor_free(slice);
  ct_tensor_free(tr);
}

static void test_views(void **state) {
  (void)state;
  /* check_file saves c_view.pt before check_views writes into the tensors. */
  ct_value *v = check_file("view");
  check_views(v);
  ct_value_free(v);
  size_t size = 0;
  char *bytes = test_read_file(pk_path("", "view", ".pt"), &size);
  CT_OK_OR_FAIL(ct_pickle_load_buffer(&v, bytes, size));
  check_views(v);
  ct_value_free(v);
  free(bytes);
  /* ctorch's own file keeps the sharing too. */
  CT_OK_OR_FAIL(ct_pickle_load(&v, pk_path("c_", "view", ".pt")));
  check_views(v);
  ct_value_free(v);
}

static void test_corrupt(void **state) {
  (void)state;
  size_t size = 0;
  char *bytes = test_read_file(pk_path("", "state_dict", ".pt"), &size);
  ct_value *v = NULL;
  /* Truncated archives. */
  const size_t cuts[] = {0, 1, 4, 30, size / 3, size / 2, size - 22, size - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; ++i) {
    CT_EXPECT_ERROR(ct_pickle_load_buffer(&v, bytes, cuts[i]), CT_ERR_IO,
                    "not a readable torch.save file");
    assert_null(v);
  }
  char path[4400];
  snprintf(path, sizeof path, "%s", pk_path("c_", "truncated", ".pt"));
  write_all(path, bytes, size / 2);
  CT_EXPECT_ERROR(ct_pickle_load(&v, path), CT_ERR_IO, "not a readable torch.save file");
  /* Garbage. */
  char junk[256];
  for (size_t i = 0; i < sizeof junk; ++i) junk[i] = (char)(i * 7 + 3);
  CT_EXPECT_ERROR(ct_pickle_load_buffer(&v, junk, sizeof junk), CT_ERR_IO, "ct_pickle_load_buffer");
  write_all(path, junk, sizeof junk);
  CT_EXPECT_ERROR(ct_pickle_load(&v, path), CT_ERR_IO, "ct_pickle_load");
  /* A zip header followed by garbage. */
  memcpy(junk, bytes, 40);
  CT_EXPECT_ERROR(ct_pickle_load_buffer(&v, junk, sizeof junk), CT_ERR_IO,
                  "not a readable torch.save file");
  unlink(path);
  free(bytes);
  /* Formats LibTorch 1.13's unpickler cannot read: ctorch's reader loads
   * them ([torch.ones(2)]); test_checkpoints.c has the rest. */
  const char *other[] = {"legacy", "proto4"};
  for (size_t i = 0; i < 2; ++i) {
    CT_OK_OR_FAIL(ct_pickle_load(&v, pk_path("", other[i], ".pt")));
    ct_value *item = NULL;
    ct_tensor *t = NULL;
    size_t n = 0;
    CT_OK_OR_FAIL(ct_value_length(&n, v));
    assert_int_equal(n, 1);
    CT_OK_OR_FAIL(ct_value_get(&item, v, 0));
    CT_OK_OR_FAIL(ct_value_to_tensor(&t, item));
    assert_int_equal(ct_tensor_numel(t), 2);
    assert_true(((float *)ct_tensor_data_ptr(t))[0] == 1.0f &&
                ((float *)ct_tensor_data_ptr(t))[1] == 1.0f);
    ct_tensor_free(t);
    ct_value_free(item);
    ct_value_free(v);
    v = NULL;
  }
}

int main(void) {
  const char *d = getenv("CTORCH_TEST_PICKLES");
  if (!d || !*d) {
    fprintf(stderr, "CTORCH_TEST_PICKLES not set; skipping\n");
    return 77;
  }
  snprintf(g_dir, sizeof g_dir, "%s", d);
  if (access(pk_path("", "state_dict", ".ref"), R_OK) != 0) {
    fprintf(stderr, "no pickles in %s (run tests/models/make_pickles.py); skipping\n", g_dir);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_state_dict),
      cmocka_unit_test(test_one_element_containers),
      cmocka_unit_test(test_views),
      cmocka_unit_test(test_corrupt),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
