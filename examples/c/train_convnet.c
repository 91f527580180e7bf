/* train_convnet: trains a small conv net from C with ctorch alone.
 *
 *   example_train_convnet [OUTDIR [STEPS]]
 *
 * The net is built from ctorch's torch.nn layers (Conv2d, BatchNorm2d, ReLU,
 * MaxPool2d, Flatten, Dropout, Linear in a Sequential), with one layer
 * written in C: softsign (y = x/(1+|x|)), an operator in torch's dispatcher
 * whose kernel and backward are C loops on torch's memory, with a
 * TorchScript twin. Training uses ctorch's Adam, torch's cosine schedule (its
 * formula, a few lines here) and gradient clipping. Saves OUTDIR/model.pt
 * (ct_module_to_pytorch: the twin in place of the C kernel, so PyTorch loads
 * it alone) and checkpoints in torch.save's format that PyTorch resumes
 * (examples/check_training.py). The same program as
 * examples/python/train_convnet.py. Plain C99, ctorch.h only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctorch.h"

#define CHECK(call)                                                              \
  do {                                                                           \
    ct_status st_ = (call);                                                      \
    if (st_ != CT_OK) {                                                          \
      fprintf(stderr, "%s failed (%d): %s\n", #call, (int)st_, ct_last_error()); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

/* ---- small helpers: values that the caller owns ---- */

static ct_value *v_int(int64_t i) {
  ct_value *v = NULL;
  CHECK(ct_value_from_int(&v, i));
  return v;
}
static ct_value *v_double(double d) {
  ct_value *v = NULL;
  CHECK(ct_value_from_double(&v, d));
  return v;
}
static ct_value *v_tensor(const ct_tensor *t) {
  ct_value *v = NULL;
  CHECK(ct_value_from_tensor(&v, t));
  return v;
}
/* A Dict[str, Any] from n names and values; takes the values. */
static ct_value *v_dict(const char *const *names, ct_value **vals, size_t n) {
  ct_value *keys[16], *d = NULL;
  for (size_t i = 0; i < n; ++i) CHECK(ct_value_from_string(&keys[i], names[i], strlen(names[i])));
  CHECK(ct_value_dict(&d, (const ct_value *const *)keys, (const ct_value *const *)vals, n));
  for (size_t i = 0; i < n; ++i) {
    ct_value_free(keys[i]);
    ct_value_free(vals[i]);
  }
  return d;
}

/* aten op by name with a generator keyword: randn(sizes) / randint(high, sizes). */
static ct_tensor *random_tensor(const char *op, int64_t high, const int64_t *sizes, size_t ndim,
                                const ct_generator *gen) {
  ct_value *args[2], *kw = NULL, *res = NULL;
  size_t n = 0;
  if (high > 0) args[n++] = v_int(high);
  CHECK(ct_value_int_list(&args[n++], sizes, ndim));
  CHECK(ct_value_from_generator(&kw, gen));
  const char *kwname = "generator";
  CHECK(ct_op_call_name(&res, op, (const ct_value *const *)args, n, &kwname,
                        (const ct_value *const *)&kw, 1));
  ct_tensor *t = NULL;
  CHECK(ct_value_to_tensor(&t, res));
  for (size_t i = 0; i < n; ++i) ct_value_free(args[i]);
  ct_value_free(kw);
  ct_value_free(res);
  return t;
}

/* ---- the C layer: the operator examples::softsign ---- */

static const char *SOFTSIGN_TWIN = /* what PyTorch runs in model.pt */
    "def softsign(x: Tensor) -> Tensor:\n"
    "    return x / (1 + torch.abs(x))\n";

/* A new float32 CPU tensor of t's shape. */
static ct_status new_like(ct_tensor **out, const ct_tensor *t) {
  return ct_tensor_empty(out, ct_tensor_sizes(t), (size_t)ct_tensor_ndim(t), CT_FLOAT32,
                         CT_DEVICE_CPU, -1, 0);
}

static ct_status check_float_cpu(const ct_tensor *t) {
  if (ct_tensor_dtype(t) != CT_FLOAT32 || ct_tensor_device_type(t) != CT_DEVICE_CPU)
    return ct_set_error(CT_ERR_NOT_SUPPORTED, "softsign: float32 CPU tensors only");
  return CT_OK;
}

/* Kernel: y = x / (1 + |x|). */
static ct_status softsign_kernel(void *ctx, const ct_tensor *const *in, size_t n_in,
                                 ct_tensor **out, size_t n_out) {
  (void)ctx;
  (void)n_in;
  (void)n_out;
  ct_tensor *x = NULL;
  ct_status st = check_float_cpu(in[0]);
  if (st == CT_OK) st = ct_tensor_contiguous(&x, in[0]);
  if (st == CT_OK) st = new_like(&out[0], x);
  if (st == CT_OK) {
    const float *px = ct_tensor_data_ptr(x);
    float *py = ct_tensor_data_ptr(out[0]);
    for (int64_t i = 0, n = ct_tensor_numel(x); i < n; ++i) py[i] = px[i] / (1 + fabsf(px[i]));
  }
  ct_tensor_free(x);
  return st;
}

/* Backward: dx = g / (1 + |x|)^2, x being the forward's argument. */
static ct_status softsign_backward(void *ctx, const ct_value *const *args, size_t n_args,
                                   const ct_value *result, const ct_tensor *const *gout,
                                   size_t n_out, ct_tensor **gin) {
  (void)ctx;
  (void)n_args;
  (void)result;
  (void)n_out;
  ct_tensor *x0 = NULL, *x = NULL, *g = NULL;
  ct_status st = ct_value_to_tensor(&x0, args[0]);
  if (st == CT_OK) st = check_float_cpu(x0);
  if (st == CT_OK) st = check_float_cpu(gout[0]);
  if (st == CT_OK) st = ct_tensor_contiguous(&x, x0);
  if (st == CT_OK) st = ct_tensor_contiguous(&g, gout[0]);
  if (st == CT_OK) st = new_like(&gin[0], x);
  if (st == CT_OK) {
    const float *px = ct_tensor_data_ptr(x), *pg = ct_tensor_data_ptr(g);
    float *pd = ct_tensor_data_ptr(gin[0]);
    for (int64_t i = 0, n = ct_tensor_numel(x); i < n; ++i) {
      float d = 1 + fabsf(px[i]);
      pd[i] = pg[i] / (d * d);
    }
  }
  ct_tensor_free(x0);
  ct_tensor_free(x);
  ct_tensor_free(g);
  return st;
}

/* Defines examples::softsign: kernel, autograd formula, TorchScript twin. */
static ct_library *define_softsign(void) {
  ct_library *lib = NULL;
  CHECK(ct_library_new(&lib, "examples"));
  CHECK(ct_library_define(lib, "softsign(Tensor x) -> Tensor", NULL, 0));
  CHECK(ct_library_impl_tensors(lib, "softsign", "CompositeExplicitAutograd", softsign_kernel, NULL,
                                NULL, 0));
  CHECK(ct_library_impl_autograd(lib, "softsign", softsign_backward, NULL, NULL, 0));
  CHECK(ct_library_set_twin(lib, "softsign", SOFTSIGN_TWIN));
  return lib;
}

/* ---- the model ---- */

/* torch.nn's layer `name` with positional int arguments (and one optional
 * keyword argument). */
static ct_module *layer(const char *name, size_t n, const int64_t *ints, const char *kwname,
                        ct_value *kwvalue) {
  ct_value *args[4];
  ct_module *m = NULL;
  for (size_t i = 0; i < n; ++i) args[i] = v_int(ints[i]);
  CHECK(ct_module_new_nn(&m, name, (const ct_value *const *)args, n, kwname ? &kwname : NULL,
                         (const ct_value *const *)&kwvalue, kwname ? 1 : 0));
  for (size_t i = 0; i < n; ++i) ct_value_free(args[i]);
  ct_value_free(kwvalue);
  return m;
}

/* Sequential(Conv2d(1, 8, 3, padding=1), BatchNorm2d(8), ReLU(), MaxPool2d(2),
 * Flatten(), Dropout(0.1), Softsign (the C operator), Linear(128, 4)). */
static ct_module *build_model(void) {
  static const int64_t conv[3] = {1, 8, 3}, bn[1] = {8}, pool[1] = {2}, fc[2] = {128, 4};
  ct_module *layers[8];
  layers[0] = layer("Conv2d", 3, conv, "padding", v_int(1));
  layers[1] = layer("BatchNorm2d", 1, bn, NULL, NULL);
  layers[2] = layer("ReLU", 0, NULL, NULL, NULL);
  layers[3] = layer("MaxPool2d", 1, pool, NULL, NULL);
  layers[4] = layer("Flatten", 0, NULL, NULL, NULL);
  layers[5] = layer("Dropout", 0, NULL, "p", v_double(0.1));
  CHECK(ct_module_new(&layers[6], "Softsign"));
  CHECK(ct_module_define(layers[6], "def forward(self, x):\n"
                                    "    return torch.ops.examples.softsign(x)\n"));
  layers[7] = layer("Linear", 2, fc, NULL, NULL);
  ct_value *args[8];
  for (int i = 0; i < 8; ++i) CHECK(ct_value_from_module(&args[i], layers[i]));
  ct_module *seq = NULL;
  CHECK(ct_module_new_nn(&seq, "Sequential", (const ct_value *const *)args, 8, NULL, NULL, 0));
  for (int i = 0; i < 8; ++i) {
    ct_value_free(args[i]);
    ct_module_free(layers[i]); /* the Sequential holds them */
  }
  return seq;
}

/* The model's parameters (its own tensors), in torch's order; *n gets the count. */
static ct_tensor **parameters(const ct_module *m, size_t *n) {
  ct_value *d = NULL;
  CHECK(ct_module_named_parameters(&d, m, 1));
  CHECK(ct_value_length(n, d));
  ct_tensor **p = calloc(*n, sizeof *p);
  for (size_t i = 0; i < *n; ++i) {
    ct_value *v = NULL;
    CHECK(ct_value_dict_item(NULL, &v, d, i));
    CHECK(ct_value_to_tensor(&p[i], v));
    ct_value_free(v);
  }
  ct_value_free(d);
  return p;
}

/* A snapshot of the model's state_dict: the same names, detached copies. */
static ct_value *state_snapshot(const ct_module *m) {
  ct_value *sd = NULL, *out = NULL;
  size_t n = 0;
  CHECK(ct_module_state_dict(&sd, m));
  CHECK(ct_value_length(&n, sd));
  ct_value **keys = calloc(n, sizeof *keys), **vals = calloc(n, sizeof *vals);
  for (size_t i = 0; i < n; ++i) {
    ct_value *v = NULL;
    ct_tensor *t = NULL, *d = NULL, *copy = NULL;
    CHECK(ct_value_dict_item(&keys[i], &v, sd, i));
    CHECK(ct_value_to_tensor(&t, v));
    CHECK(ct_tensor_detach(&d, t));
    CHECK(ct_tensor_clone(&copy, d));
    vals[i] = v_tensor(copy);
    ct_tensor_free(t);
    ct_tensor_free(d);
    ct_tensor_free(copy);
    ct_value_free(v);
  }
  CHECK(ct_value_dict(&out, (const ct_value *const *)keys, (const ct_value *const *)vals, n));
  for (size_t i = 0; i < n; ++i) {
    ct_value_free(keys[i]);
    ct_value_free(vals[i]);
  }
  free(keys);
  free(vals);
  ct_value_free(sd);
  return out;
}

/* ---- data, schedule, checkpoints ---- */

/* n 8x8 images of 4 classes: a bright bar in one of four places, plus noise. */
static void make_data(ct_tensor **x, ct_tensor **y, int64_t n, const ct_generator *gen) {
  const int64_t xs[4] = {n, 1, 8, 8};
  *x = random_tensor("aten::randn", 0, xs, 4, gen);
  *y = random_tensor("aten::randint", 4, &n, 1, gen);
  float *px = ct_tensor_data_ptr(*x);
  const int64_t *labels = ct_tensor_data_ptr(*y);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t r = 1 + 2 * labels[i]; r < 3 + 2 * labels[i] && r < 8; ++r) /* last bar: 1 row */
      for (int c = 0; c < 8; ++c) px[i * 64 + r * 8 + c] += 0.7f;
}

/* torch.optim.lr_scheduler.CosineAnnealingLR's recursive update for epoch e >= 1. */
static double cosine_lr(double lr, double base, double eta_min, int64_t e, int64_t t_max) {
  const double pi = 3.14159265358979323846;
  if ((e - 1 - t_max) % (2 * t_max) == 0)
    return lr + (base - eta_min) * (1 - cos(pi / (double)t_max)) / 2;
  return (1 + cos(pi * (double)e / (double)t_max)) /
             (1 + cos(pi * (double)(e - 1) / (double)t_max)) * (lr - eta_min) +
         eta_min;
}

struct run {
  ct_module *m;
  ct_optimizer *opt;
  ct_tensor *x, *y;
  int64_t t_max, epoch;
  double base_lr, eta_min;
};

/* {"model", "optimizer", "scheduler" (torch's CosineAnnealingLR state), "data", "step",
 * "rng_state" (the default CPU generator's, for Dropout)} plus the extra entries given. */
static void save_checkpoint(const char *path, const struct run *r, int64_t step,
                            const char *const *extra_names, ct_value **extra, size_t n_extra) {
  ct_value *lr = NULL;
  CHECK(ct_optimizer_get(&lr, r->opt, 0, "lr"));
  ct_value *last_lr = NULL, *base_lrs = NULL, *data = NULL, *dv[2];
  CHECK(ct_value_list(&last_lr, (const ct_value *const *)&lr, 1));
  CHECK(ct_value_double_list(&base_lrs, &r->base_lr, 1));
  dv[0] = v_tensor(r->x);
  dv[1] = v_tensor(r->y);
  CHECK(ct_value_tuple(&data, (const ct_value *const *)dv, 2));
  ct_value_free(dv[0]);
  ct_value_free(dv[1]);
  ct_value_free(lr);
  static const char *sched_names[] = {"T_max",       "eta_min",  "base_lrs",   "last_epoch",
                                      "_step_count", "_last_lr", "_is_initial"};
  ct_value *is_initial = NULL;
  CHECK(ct_value_from_bool(&is_initial, 0));
  ct_value *sv[] = {v_int(r->t_max), v_double(r->eta_min), base_lrs,
                    v_int(r->epoch), v_int(r->epoch + 1),  last_lr,
                    is_initial};
  ct_generator *g = NULL;
  ct_tensor *rng = NULL;
  CHECK(ct_generator_default(&g, CT_DEVICE_CPU, -1));
  CHECK(ct_generator_state(&rng, g));
  const char *names[16] = {"model", "optimizer", "scheduler", "data", "step", "rng_state"};
  ct_value *vals[16];
  vals[0] = state_snapshot(r->m);
  CHECK(ct_optimizer_state_dict(&vals[1], r->opt));
  vals[2] = v_dict(sched_names, sv, 7);
  vals[3] = data;
  vals[4] = v_int(step);
  vals[5] = v_tensor(rng);
  for (size_t i = 0; i < n_extra; ++i) {
    names[6 + i] = extra_names[i];
    vals[6 + i] = extra[i];
  }
  ct_value *ck = v_dict(names, vals, 6 + n_extra);
  CHECK(ct_pickle_save(ck, path));
  ct_value_free(ck);
  ct_tensor_free(rng);
  ct_generator_free(g);
}

static ct_tensor *forward(ct_module *m, const ct_tensor *x) {
  ct_tensor *out = NULL;
  CHECK(ct_module_forward_tensors(&out, 1, NULL, m, NULL, &x, 1));
  return out;
}

int main(int argc, char **argv) {
  const char *outdir = argc > 1 ? argv[1] : "train_out";
  int64_t steps = argc > 2 ? atoll(argv[2]) : 60;
  char path[4096];
  if (steps < 2) {
    fprintf(stderr, "STEPS must be at least 2\n");
    return 2;
  }
  mkdir(outdir, 0777);
  ct_library *lib = define_softsign();
  struct run r = {0};
  r.t_max = steps;
  r.base_lr = 0.02;
  r.eta_min = 0.001;
  ct_generator *gen = NULL; /* the data's own generator */
  CHECK(ct_generator_new(&gen, CT_DEVICE_CPU, -1));
  CHECK(ct_generator_manual_seed(gen, 0));
  make_data(&r.x, &r.y, 256, gen);
  CHECK(ct_manual_seed(0)); /* the layers' initial weights, then Dropout's masks */
  r.m = build_model();
  size_t n_params = 0;
  ct_tensor **params = parameters(r.m, &n_params);
  ct_value *opts = NULL;
  {
    const char *name = "lr";
    ct_value *lr = v_double(r.base_lr);
    opts = v_dict(&name, &lr, 1);
  }
  CHECK(ct_optimizer_new(&r.opt, "adam", (const ct_tensor *const *)params, n_params, opts));
  ct_value_free(opts);
  CHECK(ct_optimizer_set_double(r.opt, 0, "initial_lr", r.base_lr)); /* as torch's scheduler */
  ct_module *lossf = NULL;
  CHECK(ct_module_new_nn(&lossf, "CrossEntropyLoss", NULL, 0, NULL, NULL, 0));
  double *losses = malloc((size_t)steps * sizeof(double));
  for (int64_t step = 0; step < steps; ++step) {
    if (step == steps / 2) { /* a checkpoint mid-way: PyTorch resumes from it */
      snprintf(path, sizeof path, "%s/checkpoint_mid.pt", outdir);
      save_checkpoint(path, &r, step, NULL, NULL, 0);
    }
    ct_tensor *logits = forward(r.m, r.x);
    const ct_tensor *in[2] = {logits, r.y};
    ct_tensor *loss = NULL;
    CHECK(ct_module_forward_tensors(&loss, 1, NULL, lossf, NULL, in, 2));
    CHECK(ct_optimizer_zero_grad(r.opt, 1));
    CHECK(ct_tensor_backward(loss, NULL, 0, 0));
    CHECK(ct_clip_grad_norm(NULL, (const ct_tensor *const *)params, n_params, 5.0, 2.0, 0));
    CHECK(ct_optimizer_step(r.opt));
    double lr = 0;
    CHECK(ct_optimizer_get_double(&lr, r.opt, 0, "lr"));
    r.epoch += 1;
    lr = cosine_lr(lr, r.base_lr, r.eta_min, r.epoch, r.t_max);
    CHECK(ct_optimizer_set_double(r.opt, 0, "lr", lr));
    losses[step] = *(const float *)ct_tensor_data_ptr(loss);
    if (step % 10 == 0 || step == steps - 1)
      printf("step %3lld  loss %.4f  lr %.5f\n", (long long)step, losses[step], lr);
    ct_tensor_free(logits);
    ct_tensor_free(loss);
  }
  if (!(losses[steps - 1] < 0.5 * losses[0])) {
    fprintf(stderr, "the loss did not fall: %g -> %g\n", losses[0], losses[steps - 1]);
    return 1;
  }
  /* eval mode: logits of 16 images for the check, without grad */
  CHECK(ct_module_eval(r.m));
  CHECK(ct_grad_mode_set_enabled(0));
  ct_tensor *probe_in = NULL, *probe = NULL;
  {
    ct_value *args[4] = {v_tensor(r.x), v_int(0), v_int(0), v_int(16)}, *res = NULL;
    CHECK(ct_op_call_name(&res, "aten::slice", (const ct_value *const *)args, 4, NULL, NULL, 0));
    CHECK(ct_value_to_tensor(&probe_in, res));
    for (int i = 0; i < 4; ++i) ct_value_free(args[i]);
    ct_value_free(res);
  }
  probe = forward(r.m, probe_in);
  CHECK(ct_grad_mode_set_enabled(1));
  /* the model for PyTorch: the twin in place of the C operator */
  ct_module *for_pytorch = NULL;
  CHECK(ct_module_to_pytorch(&for_pytorch, r.m));
  snprintf(path, sizeof path, "%s/model.pt", outdir);
  CHECK(ct_module_save(for_pytorch, path, NULL));
  ct_value *loss_list = NULL;
  CHECK(ct_value_double_list(&loss_list, losses, (size_t)steps));
  const char *extra_names[2] = {"probe_logits", "losses"};
  ct_value *extra[2] = {v_tensor(probe), loss_list};
  snprintf(path, sizeof path, "%s/checkpoint.pt", outdir);
  save_checkpoint(path, &r, steps, extra_names, extra, 2);
  printf("saved %s/model.pt (for PyTorch), checkpoint_mid.pt and checkpoint.pt\n", outdir);

  ct_tensor_free(probe_in);
  ct_tensor_free(probe);
  for (size_t i = 0; i < n_params; ++i) ct_tensor_free(params[i]);
  free(params);
  ct_tensor_free(r.x);
  ct_tensor_free(r.y);
  ct_optimizer_free(r.opt);
  ct_module_free(lossf);
  ct_module_free(for_pytorch);
  ct_module_free(r.m);
  ct_generator_free(gen);
  ct_library_free(lib); /* after the modules that call its operator */
  free(losses);
  return 0;
}
