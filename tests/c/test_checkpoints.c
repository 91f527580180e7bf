/* Checkpoints as people have them (issue 11 section 4), made by PyTorch
 * (tests/models/make_checkpoints.py): an optimizer checkpoint with an
 * argparse.Namespace, numpy scalars and arrays and a set; a legacy-format
 * (pre-1.6) file; a whole pickled nn.Module; a plain protocol-4 pickle. Each
 * loads without running Python code; tensors are checked against ref.pt. */
#define _GNU_SOURCE /* pthread_getattr_np */
#include "test_util.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
  CT_OK_OR_FAIL(ct_value_as_string(&s, &len, name));
  assert_int_equal(len, 4);
  assert_memory_equal(s, "run1", 4);
  assert_int_equal(ct_value_tag(betas), CT_VALUE_TUPLE);
  assert_int_equal(ct_value_tag(resume), CT_VALUE_NONE);
  CT_OK_OR_FAIL(ct_value_object_args(&aargs, args));
  assert_int_equal(ct_value_tag(aargs), CT_VALUE_TUPLE);
  /* A set is a list. */
  ct_value *classes = get(ck, "classes"), *c0 = NULL;
  size_t n = 0;
  CT_OK_OR_FAIL(ct_value_length(&n, classes));
  assert_int_equal(n, 1);
  CT_OK_OR_FAIL(ct_value_get(&c0, classes, 0));
  CT_OK_OR_FAIL(ct_value_as_string(&s, &len, c0));
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
  CT_OK_OR_FAIL(ct_value_length(&n, tags));
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

/* ==== Malformed and hostile files (no PyTorch needed) ====================
 * Hand-written pickles that used to crash, hang or be accepted. Each load
 * runs in a forked child with a time limit, so a crash fails that test only. */

/* A growable byte buffer. */
typedef struct {
  unsigned char *p;
  size_t n, cap;
} bytes_t;

static void put(bytes_t *b, const void *data, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    assert_non_null(b->p);
  }
  memcpy(b->p + b->n, data, n);
  b->n += n;
}
static void puts_(bytes_t *b, const char *s) { put(b, s, strlen(s)); }
/* A string literal, NUL bytes included. */
#define PUT_LIT(b, lit) put((b), (lit), sizeof(lit) - 1)
static void putc_(bytes_t *b, int c) {
  unsigned char x = (unsigned char)c;
  put(b, &x, 1);
}
static void put_le(bytes_t *b, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) putc_(b, (int)((v >> (8 * i)) & 0xff));
}
/* LONG1 with 8 bytes: any int64. */
static void put_long(bytes_t *b, int64_t v) {
  putc_(b, 0x8a);
  putc_(b, 8);
  put_le(b, (uint64_t)v, 8);
}
static void put_str(bytes_t *b, const char *s) { /* BINUNICODE */
  putc_(b, 'X');
  put_le(b, strlen(s), 4);
  puts_(b, s);
}

static uint32_t crc32_of(const unsigned char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}
/* A stored (uncompressed) zip of n records. */
static bytes_t zip_records(int n, const char *const *names, const unsigned char *const *datas,
                           const size_t *lens) {
  uint32_t offs[8], crcs[8];
  assert_true(n <= 8);
  bytes_t z = {0};
  for (int i = 0; i < n; ++i) {
    offs[i] = (uint32_t)z.n;
    crcs[i] = crc32_of(datas[i], lens[i]);
    put_le(&z, 0x04034b50, 4);
    put_le(&z, 20, 2);
    put_le(&z, 0, 8); /* flags, method, time, date */
    put_le(&z, crcs[i], 4);
    put_le(&z, lens[i], 4);
    put_le(&z, lens[i], 4);
    put_le(&z, strlen(names[i]), 2);
    put_le(&z, 0, 2);
    puts_(&z, names[i]);
    put(&z, datas[i], lens[i]);
  }
  size_t cd = z.n;
  for (int i = 0; i < n; ++i) {
    put_le(&z, 0x02014b50, 4);
    put_le(&z, 20, 2);
    put_le(&z, 20, 2);
    put_le(&z, 0, 8);
    put_le(&z, crcs[i], 4);
    put_le(&z, lens[i], 4);
    put_le(&z, lens[i], 4);
    put_le(&z, strlen(names[i]), 2);
    put_le(&z, 0, 8); /* extra, comment, disk, internal attributes */
    put_le(&z, 0, 4);
    put_le(&z, offs[i], 4);
    puts_(&z, names[i]);
  }
  size_t cd_size = z.n - cd;
  put_le(&z, 0x06054b50, 4);
  put_le(&z, 0, 4);
  put_le(&z, n, 2);
  put_le(&z, n, 2);
  put_le(&z, cd_size, 4);
  put_le(&z, cd, 4);
  put_le(&z, 0, 2);
  return z;
}

/* A stored (uncompressed) zip archive as torch.save writes it:
 * archive/data.pkl and archive/version. */
static bytes_t zip_of(const bytes_t *pkl) {
  const char *names[2] = {"archive/data.pkl", "archive/version"};
  const unsigned char *datas[2] = {pkl->p, (const unsigned char *)"3\n"};
  size_t lens[2] = {pkl->n, 2};
  return zip_records(2, names, datas, lens);
}

/* What the child reports. */
typedef struct {
  ct_status status;
  char msg[600];
} child_result;

typedef struct {
  const bytes_t *file;
  /* After a successful load, 1: repr, type name, save and load again must
   * work; 2: repr and type name must work, the save's status is reported.
   * 3: the file is loaded as a TorchScript module instead. */
  int use;
  /* > 0: all of it in a thread with this stack size. */
  size_t stack;
  child_result r;
} load_job;

static void report(child_result *r, ct_status s, const char *what) {
  r->status = s;
  snprintf(r->msg, sizeof r->msg, "%s%s", what, s ? ct_last_error() : "");
}

static void *run_load(void *arg) {
  load_job *j = arg;
  if (j->use == 3) {
    ct_module *m = NULL;
    ct_status s = ct_module_load_buffer(&m, j->file->p, j->file->n, CT_DEVICE_CPU, -1);
    report(&j->r, s, "");
    ct_module_free(m);
    return NULL;
  }
  ct_value *v = NULL;
  ct_status s = ct_pickle_load_buffer(&v, j->file->p, j->file->n);
  report(&j->r, s, "");
  if (s != CT_OK || !j->use) {
    ct_value_free(v);
    return NULL;
  }
  char *text = NULL;
  if ((s = ct_value_to_repr(&text, v)) != CT_OK) return report(&j->r, s, "repr: "), NULL;
  ct_free(text);
  if ((s = ct_value_type_str(&text, v)) != CT_OK) return report(&j->r, s, "type: "), NULL;
  ct_free(text);
  void *saved = NULL;
  size_t n = 0;
  s = ct_pickle_save_buffer(&saved, &n, v);
  if (j->use == 2) {
    report(&j->r, s, "save: ");
    ct_free(saved);
    return NULL; /* v leaks: it contains itself */
  }
  if (s != CT_OK) return report(&j->r, s, "save: "), NULL;
  ct_value *again = NULL;
  s = ct_pickle_load_buffer(&again, saved, n);
  ct_free(saved);
  if (s != CT_OK) return report(&j->r, s, "load again: "), NULL;
  ct_value_free(again);
  ct_value_free(v);
  return NULL;
}

/* What glibc takes from a thread's stack before the thread runs: the static
 * thread-local storage of every loaded library lives at the top of it (215 KB
 * with a CUDA LibTorch 2.15: cuBLAS, cuSPARSE, NCCL, ...; 40 KB with 1.13).
 * Measured in a probe thread: requested size minus what is left below a
 * local variable of its first frame. */
static void *stack_probe(void *arg) {
  pthread_attr_t a;
  void *base = NULL;
  size_t size = 0;
  char here = 0;
  if (pthread_getattr_np(pthread_self(), &a) == 0) {
    pthread_attr_getstack(&a, &base, &size);
    pthread_attr_destroy(&a);
  }
  *(size_t *)arg = base ? (size_t)(&here - (char *)base) : 0;
  return NULL;
}

static size_t stack_taken_by_tls(size_t requested) {
  pthread_attr_t a;
  pthread_t t;
  size_t usable = 0;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, requested);
  if (pthread_create(&t, &a, stack_probe, &usable) != 0) return 0;
  pthread_join(t, NULL);
  pthread_attr_destroy(&a);
  return usable && usable < requested ? requested - usable : 0;
}

/* Loads `file` in a forked child (at most 60 s) and returns what happened
 * there; a crash or a timeout fails the calling test. */
static child_result child_load(const bytes_t *file, int use, size_t stack) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    /* cmocka's handlers would go on running the other tests in here. */
    const int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; ++i) signal(sigs[i], SIG_DFL);
    alarm(60);
    load_job job = {file, use, stack, {0, ""}};
    if (stack) {
      pthread_attr_t a;
      pthread_t t;
      pthread_attr_init(&a);
      /* `stack` bytes for ctorch, besides what thread-local storage takes. */
      pthread_attr_setstacksize(&a, stack + stack_taken_by_tls(stack + (1 << 20)));
      if (pthread_create(&t, &a, run_load, &job) != 0) _exit(3);
      pthread_join(t, NULL);
    } else {
      run_load(&job);
    }
    ssize_t k = write(fds[1], &job.r, sizeof job.r);
    _exit(k == (ssize_t)sizeof job.r ? 0 : 2);
  }
  close(fds[1]);
  child_result r;
  memset(&r, 0, sizeof r);
  size_t got = 0;
  ssize_t k;
  while (got < sizeof r && (k = read(fds[0], (char *)&r + got, sizeof r - got)) > 0) got += k;
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {}
  if (WIFSIGNALED(st))
    fail_msg("the load %s (signal %d, %s)",
             WTERMSIG(st) == SIGALRM ? "ran past 60 s and was killed" : "crashed the process",
             WTERMSIG(st), strsignal(WTERMSIG(st)));
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || got != sizeof r)
    fail_msg("the loading process failed (status %d)", st);
  r.msg[sizeof r.msg - 1] = '\0';
  return r;
}

static void expect_refused(const bytes_t *file, const char *needle) {
  child_result r = child_load(file, 0, 0);
  if (r.status != CT_ERR_IO) fail_msg("expected CT_ERR_IO, got %d (%s)", r.status, r.msg);
  if (!strstr(r.msg, needle)) fail_msg("message '%s' lacks '%s'", r.msg, needle);
}

static const char *const kTooDeep = "nesting deeper than 256";

/* An OrderedDict whose item list holds something that is not a (key,
 * value) pair: the empty tuple was indexed without a length check. */
static void test_odict_items_checked(void **state) {
  (void)state;
  bytes_t b = {0};
  put(&b,
      "\x80\x02"
      "ccollections\nOrderedDict\n"
      "])a\x85R.",
      33);
  expect_refused(&b, "collections.OrderedDict: an item is not a (key, value) pair");
  /* A one-item tuple, a number. */
  b.n = 0;
  PUT_LIT(&b,
          "\x80\x02"
          "ccollections\nOrderedDict\n"
          "]K\x01\x85"
          "a\x85R.");
  expect_refused(&b, "not a (key, value) pair");
  b.n = 0;
  PUT_LIT(&b,
          "\x80\x02"
          "cbuiltins\ndict\n"
          "]K\x01"
          "a\x85R.");
  expect_refused(&b, "not a (key, value) pair");
  /* Rebuilding a tensor from something that is not a storage. */
  b.n = 0;
  PUT_LIT(&b,
          "\x80\x02"
          "ctorch._utils\n_rebuild_tensor_v2\n"
          "(K\x01K\x00))t"
          "R.");
  expect_refused(&b, "argument 0 is not a tensor or storage");
  /* TUPLE2 reaching below a MARK. */
  b.n = 0;
  PUT_LIT(&b, "\x80\x02))(\x86t.");
  expect_refused(&b, "stack underflow");
  free(b.p);
}

/* _rebuild_from_type_v2 calls the function it names; 100,000 of them
 * nested overflowed the stack. */
static void test_rebuild_from_type_bounded(void **state) {
  (void)state;
  bytes_t b = {0};
  const int n = 100000;
  PUT_LIT(&b,
          "\x80\x02"
          "ctorch._tensor\n_rebuild_from_type_v2\n"
          "q\x00");
  for (int i = 0; i < n; ++i) PUT_LIT(&b, "(h\x00N"); /* (func, None, <args>, None) */
  putc_(&b, ')');
  for (int i = 0; i < n; ++i) PUT_LIT(&b, "Nt");
  PUT_LIT(&b, "R.");
  expect_refused(&b, kTooDeep);
  free(b.p);
}

/* n lists inside each other ((((...]lll...) and the same as the argument
 * tuples of n nested Python objects. */
static bytes_t nested_lists(int n, const char *tail) {
  bytes_t b = {0};
  PUT_LIT(&b, "\x80\x02");
  for (int i = 0; i < n; ++i) putc_(&b, '(');
  putc_(&b, ']');
  for (int i = 0; i < n; ++i) putc_(&b, 'l');
  puts_(&b, tail);
  return b;
}

/* 100,000 nested lists loaded (status 0) and then crashed ct_pickle_save,
 * ct_value_to_repr and ct_value_type_str; in a zip archive, LibTorch's
 * Unpickler crashed in its own destructor when anything failed after them.
 * Both readers now refuse anything nested deeper than 256. */
static void test_deep_nesting_refused(void **state) {
  (void)state;
  bytes_t b = nested_lists(100000, ".");
  expect_refused(&b, kTooDeep);
  bytes_t z = zip_of(&b); /* the zip reader */
  expect_refused(&z, kTooDeep);
  free(z.p);
  free(b.p);
  /* 400,000 levels, then an opcode the Unpickler does not know. */
  b = nested_lists(400000, "Z.");
  z = zip_of(&b);
  expect_refused(&z, kTooDeep);
  free(z.p);
  free(b.p);
  /* Deep tuples, dicts, and Python objects nested in their arguments. */
  b = (bytes_t){0};
  PUT_LIT(&b, "\x80\x02)");
  for (int i = 0; i < 100000; ++i) putc_(&b, 0x85);
  putc_(&b, '.');
  expect_refused(&b, kTooDeep);
  b.n = 0;
  PUT_LIT(&b, "\x80\x02");
  for (int i = 0; i < 100000; ++i) PUT_LIT(&b, "(K\x01");
  putc_(&b, '}');
  for (int i = 0; i < 100000; ++i) putc_(&b, 'd');
  putc_(&b, '.');
  expect_refused(&b, kTooDeep);
  /* Namespace(Namespace(...(None)...)) */
  b.n = 0;
  PUT_LIT(&b,
          "\x80\x02"
          "cargparse\nNamespace\n"
          "q\x00"
          "0");
  for (int i = 0; i < 100000; ++i) PUT_LIT(&b, "h\x00");
  putc_(&b, 'N');
  for (int i = 0; i < 100000; ++i) PUT_LIT(&b, "\x85R");
  putc_(&b, '.');
  expect_refused(&b, kTooDeep);
  free(b.p);
}

/* A TorchScript archive whose data.pkl or constants.pkl nests 300,000 deep:
 * LibTorch's Unpickler (which ct_module_load uses) crashed the process;
 * every pickle of the archive is checked before. */
static void test_deep_module_pickles_refused(void **state) {
  (void)state;
  bytes_t deep = nested_lists(300000, ".");
  static const unsigned char kEmptyTuple[] = "\x80\x02).";
  for (int which = 0; which < 2; ++which) {
    const char *names[3] = {"archive/data.pkl", "archive/constants.pkl", "archive/version"};
    const unsigned char *datas[3] = {which ? kEmptyTuple : deep.p, which ? deep.p : kEmptyTuple,
                                     (const unsigned char *)"3\n"};
    size_t lens[3] = {which ? sizeof kEmptyTuple - 1 : deep.n,
                      which ? deep.n : sizeof kEmptyTuple - 1, 2};
    bytes_t z = zip_records(3, names, datas, lens);
    child_result r = child_load(&z, 3, 0);
    if (r.status != CT_ERR_IO) fail_msg("expected CT_ERR_IO, got %d (%s)", r.status, r.msg);
    if (!strstr(r.msg, which ? "constants.pkl: nesting deeper than 256"
                             : "data.pkl: nesting deeper than 256"))
      fail_msg("unexpected message '%s'", r.msg);
    free(z.p);
  }
  free(deep.p);
}

/* The thread stack the nesting limit is measured in: 256 KB, four times that
 * under AddressSanitizer, whose frames are several times larger. */
#if defined(__SANITIZE_ADDRESS__)
#define NESTING_STACK (1024 << 10)
#else
#define NESTING_STACK (256 << 10)
#endif

/* The limit itself: 256 levels load, and everything that walks a value
 * copes with them in a thread with a 256 KB stack; 257 are refused. */
static void test_nesting_limit(void **state) {
  (void)state;
  for (int zip = 0; zip < 2; ++zip) {
    bytes_t b = nested_lists(255, "."); /* 256 lists */
    bytes_t z = zip ? zip_of(&b) : b;
    child_result r = child_load(&z, 1, NESTING_STACK);
    if (r.status != CT_OK) fail_msg("256 lists (zip %d): %d %s", zip, r.status, r.msg);
    if (zip) free(z.p);
    free(b.p);
    b = nested_lists(256, ".");
    z = zip ? zip_of(&b) : b;
    expect_refused(&z, kTooDeep);
    if (zip) free(z.p);
    free(b.p);
  }
  /* Tuples (type names recurse into them) and dicts. */
  bytes_t b = {0};
  PUT_LIT(&b, "\x80\x02)");
  for (int i = 0; i < 255; ++i) putc_(&b, 0x85);
  putc_(&b, '.');
  child_result r = child_load(&b, 1, NESTING_STACK);
  if (r.status != CT_OK) fail_msg("256 tuples: %d %s", r.status, r.msg);
  b.n = 0;
  PUT_LIT(&b, "\x80\x02");
  for (int i = 0; i < 255; ++i) PUT_LIT(&b, "(K\x01");
  putc_(&b, '}');
  for (int i = 0; i < 255; ++i) putc_(&b, 'd');
  putc_(&b, '.');
  r = child_load(&b, 1, NESTING_STACK);
  if (r.status != CT_OK) fail_msg("256 dicts: %d %s", r.status, r.msg);
  free(b.p);
}

/* A list that contains itself loaded, and every walk over it recursed
 * forever. A Python object may refer back to itself (OmegaConf nodes refer
 * to their parents): that loads, and ct_pickle_save refuses it cleanly
 * instead of recursing forever in LibTorch's pickler. */
static void test_self_containing(void **state) {
  (void)state;
  bytes_t b = {0};
  PUT_LIT(&b,
          "\x80\x02]q\x00h\x00"
          "a.");
  expect_refused(&b, "a list, tuple or dict that contains itself");
  bytes_t z = zip_of(&b);
  expect_refused(&z, "contains itself");
  free(z.p);
  /* ns = Namespace(); ns.self = ns */
  b.n = 0;
  PUT_LIT(&b,
          "\x80\x02"
          "cargparse\nNamespace\n"
          ")\x81q\x00}X\x04\x00\x00\x00selfh\x00sb.");
  child_result r = child_load(&b, 2, 0);
  assert_int_equal(r.status, CT_ERR_INVALID_ARGUMENT);
  if (!strstr(r.msg,
              "save: ct_pickle_save_buffer: cannot save: a list, tuple, dict or object "
              "that contains itself"))
    fail_msg("unexpected message: %s", r.msg);
  free(b.p);
}

/* Lists memoized first and put into each other afterwards escape the
 * depth counted while building: the value is checked again at the end,
 * and what the reader drops on the way is freed without recursion (300,000
 * levels overflowed the stack in destructors). */
static void test_deep_through_memo(void **state) {
  (void)state;
  const uint32_t n = 300000;
  for (int fail_at_end = 0; fail_at_end < 2; ++fail_at_end) {
    bytes_t b = {0};
    PUT_LIT(&b, "\x80\x02");
    for (uint32_t i = 0; i <= n; ++i) { /* L_i = [] */
      PUT_LIT(&b, "]r");
      put_le(&b, i, 4);
      putc_(&b, '0');
    }
    for (uint32_t i = 0; i < n; ++i) { /* L_{i+1}.append(L_i) */
      putc_(&b, 'j');
      put_le(&b, i + 1, 4);
      putc_(&b, 'j');
      put_le(&b, i, 4);
      PUT_LIT(&b, "a0");
    }
    putc_(&b, 'j');
    put_le(&b, n, 4);
    puts_(&b, fail_at_end ? "Z." : ".");
    if (fail_at_end)
      expect_refused(&b, "unsupported pickle opcode 0x5a");
    else
      expect_refused(&b, kTooDeep);
    free(b.p);
  }
}

/* A loaded value deep enough to be slow to check: the check made a path
 * string per level (400,000 levels: 11 s); refused at once now. */
static void test_deep_load_is_quick(void **state) {
  (void)state;
  bytes_t b = nested_lists(400000, ".");
  bytes_t z = zip_of(&b);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  expect_refused(&z, kTooDeep);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  if (s > 5.0) fail_msg("refusing 400,000 nested lists took %.1f s", s);
  free(z.p);
  free(b.p);
}

/* A legacy (pre-1.6) torch.save file of one float tensor: a storage of
 * `numel` floats (the persistent id), the tensor's offset, sizes and strides,
 * and `data_numel` floats of data 0, 1, 2, ... */
static bytes_t legacy_file(int64_t numel, int64_t offset, int64_t size, int64_t stride,
                           int64_t data_numel) {
  static const unsigned char magic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                        0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, '.'};
  bytes_t b = {0};
  put(&b, magic, sizeof magic);
  PUT_LIT(&b, "\x80\x02M\xe9\x03."); /* protocol version 1001 */
  PUT_LIT(&b, "\x80\x02}.");         /* sys_info */
  PUT_LIT(&b,
          "\x80\x02"
          "ctorch._utils\n_rebuild_tensor_v2\n"
          "((");
  put_str(&b, "storage");
  PUT_LIT(&b, "ctorch\nFloatStorage\n");
  put_str(&b, "0");
  put_str(&b, "cpu");
  put_long(&b, numel);
  PUT_LIT(&b, "tQ");
  put_long(&b, offset);
  put_long(&b, size);
  putc_(&b, 0x85);
  put_long(&b, stride);
  putc_(&b, 0x85);
  PUT_LIT(&b, "\x89tR.");
  PUT_LIT(&b, "\x80\x02]"); /* storage keys */
  put_str(&b, "0");
  PUT_LIT(&b, "a.");
  put_le(&b, (uint64_t)data_numel, 8);
  for (int64_t i = 0; i < data_numel && i < 1024; ++i) {
    float f = (float)i;
    put(&b, &f, 4);
  }
  return b;
}

/* The legacy reader grew a storage to fit the tensor (set_ resizes it):
 * sizes [13] over 12 floats, or 2^30 floats from a 250-byte file; and a
 * storage of 2^62 + 1 floats wrapped around to one float. The zip reader
 * refuses the same geometry; both use one check now. */
static void test_legacy_geometry(void **state) {
  (void)state;
  bytes_t b = legacy_file(12, 2, 4, 2, 12); /* a valid view: 2, 4, 6, 8 */
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_pickle_load_buffer(&v, b.p, b.n));
  ct_tensor *t = tensor_of(v);
  ct_tensor *c = NULL;
  CT_OK_OR_FAIL(ct_tensor_contiguous(&c, t));
  assert_int_equal(ct_tensor_numel(c), 4);
  const float *f = ct_tensor_data_ptr(c);
  assert_true(f[0] == 2.0f && f[1] == 4.0f && f[2] == 6.0f && f[3] == 8.0f);
  ct_tensor_free(c);
  ct_tensor_free(t);
  ct_value_free(v);
  free(b.p);

  b = legacy_file(12, 0, 13, 1, 12);
  expect_refused(&b,
                 "does not fit its storage (sizes [13], strides [1], offset 0, 4-byte "
                 "elements needs 52 bytes but its storage has 48)");
  free(b.p);
  b = legacy_file(12, 0, (int64_t)1 << 30, 1, 12);
  expect_refused(&b, "needs 4294967296 bytes but its storage has 48");
  free(b.p);
  b = legacy_file(12, 11, 2, 1, 12); /* offset + extent past the end */
  expect_refused(&b, "does not fit its storage");
  free(b.p);
  b = legacy_file(12, 0, 2, -1, 12);
  expect_refused(&b, "negative stride");
  free(b.p);
  b = legacy_file(((int64_t)1 << 62) + 1, 0, 1, 1, ((int64_t)1 << 62) + 1);
  expect_refused(&b,
                 "legacy storage '0' of 4611686018427387905 Float elements is larger "
                 "than the file");
  free(b.p);
  b = legacy_file((int64_t)1 << 40, 0, 1, 1, 12);
  expect_refused(&b, "is larger than the file");
  free(b.p);
  /* The data record says fewer elements than the storage has. */
  b = legacy_file(12, 0, 12, 1, 11);
  expect_refused(&b, "a storage of the wrong size");
  free(b.p);
}

/* Sparse tensors (torch._utils._rebuild_sparse_tensor): COO and CSR load as
 * sparse tensors equal to their dense forms; indices past the size are
 * refused as torch.load refuses them. */
static void test_sparse(void **state) {
  (void)state;
  ct_value *d = load("sparse.pt");
  const char *names[2][2] = {{"coo", "coo_dense"}, {"csr", "csr_dense"}};
  const int32_t layouts[2] = {CT_LAYOUT_SPARSE_COO, CT_LAYOUT_SPARSE_CSR};
  for (int i = 0; i < 2; ++i) {
    ct_value *sv = get(d, names[i][0]), *dv = get(d, names[i][1]);
    ct_tensor *sp = tensor_of(sv), *dense = tensor_of(dv), *back = NULL;
    int32_t layout = -1, eq = 0;
    CT_OK_OR_FAIL(ct_tensor_layout(&layout, sp));
    assert_int_equal(layout, layouts[i]);
    CT_OK_OR_FAIL(ct_tensor_to_dense(&back, sp));
    CT_OK_OR_FAIL(ct_tensor_equal(&eq, back, dense));
    if (!eq) fail_msg("%s differs from %s", names[i][0], names[i][1]);
    ct_tensor_free(back);
    ct_tensor_free(dense);
    ct_tensor_free(sp);
    ct_value_free(dv);
    ct_value_free(sv);
  }
  ct_value_free(d);
  const char *bad = ck_path("sparse_bad.pt");
  ct_value *v = (ct_value *)0x1;
  CT_EXPECT_ERROR(ct_pickle_load(&v, bad), CT_ERR_IO, "found index 9");
  assert_ptr_equal(v, (ct_value *)0x1);
}

/* What LibTorch's own Pickler (torch::pickle_save) writes: typed lists
 * (torch.jit._pickle.build_intlist, ...) and type tags on containers. */
static void test_libtorch_tagged_containers(void **state) {
  (void)state;
  static const char intlist[] =
      "\x80\x02"
      "ctorch.jit._pickle\nbuild_intlist\n"
      "(]q\x00(K\x01K\x02K\x03"
      "et"
      "R.";
  ct_value *v = NULL;
  CT_OK_OR_FAIL(ct_pickle_load_buffer(&v, intlist, sizeof intlist - 1));
  assert_int_equal(ct_value_tag(v), CT_VALUE_INT_LIST);
  size_t n = 0;
  CT_OK_OR_FAIL(ct_value_length(&n, v));
  assert_int_equal(n, 3);
  ct_value_free(v);
  /* restore_type_tag({'a': 1}, 'Dict[str, int]') is the dict itself. */
  static const char tagged[] =
      "\x80\x02"
      "ctorch.jit._pickle\nrestore_type_tag\n"
      "(}X\x01\x00\x00\x00"
      "aK\x01"
      "sX\x0e\x00\x00\x00"
      "Dict[str, int]"
      "tR.";
  CT_OK_OR_FAIL(ct_pickle_load_buffer(&v, tagged, sizeof tagged - 1));
  assert_int_equal(get_int(v, "a"), 1);
  ct_value_free(v);
  /* A typed list with an item of another type is refused, not mistyped. */
  static const char mixed[] =
      "\x80\x02"
      "ctorch.jit._pickle\nbuild_intlist\n"
      "(](K\x01X\x01\x00\x00\x00"
      "xet"
      "R.";
  v = (ct_value *)0x1;
  CT_EXPECT_ERROR(ct_pickle_load_buffer(&v, mixed, sizeof mixed - 1), CT_ERR_IO,
                  "build_intlist: an item is a String, not a int");
  assert_ptr_equal(v, (ct_value *)0x1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_optimizer_checkpoint),
      cmocka_unit_test(test_legacy_format),
      cmocka_unit_test(test_whole_module),
      cmocka_unit_test(test_plain_pickle),
      cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_odict_items_checked),
      cmocka_unit_test(test_rebuild_from_type_bounded),
      cmocka_unit_test(test_deep_nesting_refused),
      cmocka_unit_test(test_deep_module_pickles_refused),
      cmocka_unit_test(test_nesting_limit),
      cmocka_unit_test(test_self_containing),
      cmocka_unit_test(test_deep_through_memo),
      cmocka_unit_test(test_deep_load_is_quick),
      cmocka_unit_test(test_legacy_geometry),
      cmocka_unit_test(test_sparse),
      cmocka_unit_test(test_libtorch_tagged_containers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
