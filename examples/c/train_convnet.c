/* train_convnet: trains a small conv net from C with ctorch alone.
 *
 *   example_train_convnet [OUTDIR [STEPS]]
 *
 * The net is TorchScript built in place; one layer (softsign, y = x/(1+|x|))
 * is a C loop on torch's memory, a custom autograd function; training uses
 * ctorch's Adam, torch's cosine schedule (its formula, a few lines here) and
 * gradient clipping. Saves OUTDIR/model.pt (TorchScript) and checkpoints in
 * torch.save's format that PyTorch resumes (examples/check_training.py).
 * Plain C99, ctorch.h only. */
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

/* conv -> relu -> pool -> flatten (features), the custom layer, a linear head;
 * forward holds the custom layer's TorchScript twin, so the saved model runs
 * whole in PyTorch. */
static const char *SOURCE =
    "def features(self, x):\n"
    "    h = torch.relu(torch.conv2d(x, self.conv_w, self.conv_b, [1, 1], [1, 1]))\n"
    "    return torch.flatten(torch.max_pool2d(h, [2, 2]), 1)\n"
    "def head(self, h):\n"
    "    return torch.linear(h, self.fc_w, self.fc_b)\n"
    "def forward(self, x):\n"
    "    h = self.features(x)\n"
    "    return self.head(h / (1 + torch.abs(h)))\n";

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

/* ---- the custom layer: softsign in C loops ---- */

struct saved {
  ct_tensor *x; /* the forward input (contiguous), for backward */
};

static void saved_destroy(void *ctx) {
  struct saved *s = ctx;
  ct_tensor_free(s->x);
  free(s);
}

static ct_tensor *empty_like(const ct_tensor *t) {
  ct_tensor *out = NULL;
  CHECK(ct_tensor_empty(&out, ct_tensor_sizes(t), (size_t)ct_tensor_ndim(t), CT_FLOAT32,
                        CT_DEVICE_CPU, -1, 0));
  return out;
}

static ct_status softsign_forward(void *ctx, const ct_tensor *const *in, size_t n_in,
                                  ct_tensor **out, size_t n_out) {
  struct saved *s = ctx;
  (void)n_in;
  (void)n_out;
  if (ct_tensor_contiguous(&s->x, in[0])) return ct_last_error_code();
  out[0] = empty_like(s->x);
  const float *x = ct_tensor_data_ptr(s->x);
  float *y = ct_tensor_data_ptr(out[0]);
  for (int64_t i = 0, n = ct_tensor_numel(s->x); i < n; ++i) y[i] = x[i] / (1 + fabsf(x[i]));
  return CT_OK;
}

static ct_status softsign_backward(void *ctx, const ct_tensor *const *gout, size_t n_out,
                                   ct_tensor **gin, size_t n_in) {
  struct saved *s = ctx;
  (void)n_out;
  (void)n_in;
  ct_tensor *g = NULL;
  if (ct_tensor_contiguous(&g, gout[0])) return ct_last_error_code();
  gin[0] = empty_like(s->x);
  const float *x = ct_tensor_data_ptr(s->x), *gy = ct_tensor_data_ptr(g);
  float *gx = ct_tensor_data_ptr(gin[0]);
  for (int64_t i = 0, n = ct_tensor_numel(s->x); i < n; ++i) {
    float d = 1 + fabsf(x[i]);
    gx[i] = gy[i] / (d * d);
  }
  ct_tensor_free(g);
  return CT_OK;
}

static ct_tensor *softsign(const ct_tensor *x) {
  struct saved *s = calloc(1, sizeof *s);
  ct_tensor *y = NULL;
  CHECK(ct_autograd_function_apply(&y, 1, &x, 1, "Softsign", softsign_forward, softsign_backward, s,
                                   saved_destroy));
  return y;
}

/* ---- data, model, schedule, checkpoints ---- */

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

static const char *PARAM_NAMES[4] = {"conv_w", "conv_b", "fc_w", "fc_b"};

static ct_module *build_model(ct_tensor **params, const ct_generator *gen) {
  static const int64_t shapes[4][4] = {{8, 1, 3, 3}, {8}, {4, 128}, {4}};
  static const size_t ndims[4] = {4, 1, 2, 1};
  ct_module *m = NULL;
  CHECK(ct_module_new(&m, "ConvNet"));
  for (int i = 0; i < 4; ++i) {
    ct_tensor *w = random_tensor("aten::randn", 0, shapes[i], ndims[i], gen);
    float *d = ct_tensor_data_ptr(w);
    for (int64_t k = 0, n = ct_tensor_numel(w); k < n; ++k) d[k] *= i < 2 ? 0.3f : 0.1f;
    CHECK(ct_module_register_parameter(m, PARAM_NAMES[i], w, 1));
    ct_value *v = NULL;
    CHECK(ct_module_get_attr(&v, m, PARAM_NAMES[i])); /* the module's own tensor */
    CHECK(ct_value_to_tensor(&params[i], v));
    ct_value_free(v);
    ct_tensor_free(w);
  }
  CHECK(ct_module_define(m, SOURCE));
  return m;
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
  ct_tensor *params[4];
  ct_optimizer *opt;
  ct_tensor *x, *y;
  int64_t t_max, epoch;
  double base_lr, eta_min;
};

/* {"model", "optimizer", "scheduler" (torch's CosineAnnealingLR state), "data", "step"} plus
 * the extra entries given. */
static void save_checkpoint(const char *path, const struct run *r, int64_t step,
                            const char *const *extra_names, ct_value **extra, size_t n_extra) {
  ct_value *pv[4], *lr = NULL;
  for (int i = 0; i < 4; ++i) {
    ct_tensor *copy = NULL;
    CHECK(ct_tensor_clone(&copy, r->params[i]));
    pv[i] = v_tensor(copy);
    ct_tensor_free(copy);
  }
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
  const char *names[16] = {"model", "optimizer", "scheduler", "data", "step"};
  ct_value *vals[16];
  vals[0] = v_dict(PARAM_NAMES, pv, 4);
  CHECK(ct_optimizer_state_dict(&vals[1], r->opt));
  vals[2] = v_dict(sched_names, sv, 7);
  vals[3] = data;
  vals[4] = v_int(step);
  for (size_t i = 0; i < n_extra; ++i) {
    names[5 + i] = extra_names[i];
    vals[5 + i] = extra[i];
  }
  ct_value *ck = v_dict(names, vals, 5 + n_extra);
  CHECK(ct_pickle_save(ck, path));
  ct_value_free(ck);
}

static ct_tensor *method(ct_module *m, const char *name, const ct_tensor *x) {
  ct_tensor *out = NULL;
  CHECK(ct_module_forward_tensors(&out, 1, NULL, m, name, &x, 1));
  return out;
}

int main(int argc, char **argv) {
  const char *outdir = argc > 1 ? argv[1] : "train_out";
  int64_t steps = argc > 2 ? atoll(argv[2]) : 60;
  char path[4096];
  mkdir(outdir, 0777);
  struct run r = {0};
  r.t_max = steps;
  r.base_lr = 0.02;
  r.eta_min = 0.001;
  ct_generator *gen = NULL;
  CHECK(ct_generator_new(&gen, CT_DEVICE_CPU, -1));
  CHECK(ct_generator_manual_seed(gen, 0));
  make_data(&r.x, &r.y, 256, gen);
  r.m = build_model(r.params, gen);
  ct_value *opts = NULL;
  {
    const char *name = "lr";
    ct_value *lr = v_double(r.base_lr);
    opts = v_dict(&name, &lr, 1);
  }
  CHECK(ct_optimizer_new(&r.opt, "adam", (const ct_tensor *const *)r.params, 4, opts));
  ct_value_free(opts);
  CHECK(ct_optimizer_set_double(r.opt, 0, "initial_lr", r.base_lr)); /* as torch's scheduler */
  ct_op *xent = NULL;
  CHECK(ct_op_find(&xent, "aten::cross_entropy_loss", ""));
  double *losses = malloc((size_t)steps * sizeof(double));
  for (int64_t step = 0; step < steps; ++step) {
    if (step == steps / 2) {
      snprintf(path, sizeof path, "%s/checkpoint_mid.pt", outdir);
      save_checkpoint(path, &r, step, NULL, NULL, 0);
    }
    ct_tensor *h = method(r.m, "features", r.x);
    ct_tensor *s = softsign(h);
    ct_tensor *logits = method(r.m, "head", s);
    const ct_tensor *in[2] = {logits, r.y};
    ct_tensor *loss = NULL;
    CHECK(ct_op_call_tensors(&loss, 1, xent, in, 2));
    CHECK(ct_optimizer_zero_grad(r.opt, 1));
    CHECK(ct_tensor_backward(loss, NULL, 0, 0));
    CHECK(ct_clip_grad_norm(NULL, (const ct_tensor *const *)r.params, 4, 5.0, 2.0, 0));
    CHECK(ct_optimizer_step(r.opt));
    double lr = 0;
    CHECK(ct_optimizer_get_double(&lr, r.opt, 0, "lr"));
    r.epoch += 1;
    lr = cosine_lr(lr, r.base_lr, r.eta_min, r.epoch, r.t_max);
    CHECK(ct_optimizer_set_double(r.opt, 0, "lr", lr));
    losses[step] = *(const float *)ct_tensor_data_ptr(loss);
    if (step % 10 == 0 || step == steps - 1)
      printf("step %3lld  loss %.4f  lr %.5f\n", (long long)step, losses[step], lr);
    ct_tensor_free(h);
    ct_tensor_free(s);
    ct_tensor_free(logits);
    ct_tensor_free(loss);
  }
  if (!(losses[steps - 1] < 0.5 * losses[0])) {
    fprintf(stderr, "the loss did not fall: %g -> %g\n", losses[0], losses[steps - 1]);
    return 1;
  }
  /* the model saved whole (TorchScript), and logits of 16 images for the check */
  ct_grad_mode_set_enabled(0);
  ct_tensor *probe_in = NULL, *probe = NULL;
  {
    ct_value *args[4] = {v_tensor(r.x), v_int(0), v_int(0), v_int(16)}, *res = NULL;
    CHECK(ct_op_call_name(&res, "aten::slice", (const ct_value *const *)args, 4, NULL, NULL, 0));
    CHECK(ct_value_to_tensor(&probe_in, res));
    for (int i = 0; i < 4; ++i) ct_value_free(args[i]);
    ct_value_free(res);
  }
  probe = method(r.m, "forward", probe_in);
  ct_grad_mode_set_enabled(1);
  snprintf(path, sizeof path, "%s/model.pt", outdir);
  CHECK(ct_module_save(r.m, path, NULL));
  ct_value *loss_list = NULL;
  CHECK(ct_value_double_list(&loss_list, losses, (size_t)steps));
  const char *extra_names[2] = {"probe_logits", "losses"};
  ct_value *extra[2] = {v_tensor(probe), loss_list};
  snprintf(path, sizeof path, "%s/checkpoint.pt", outdir);
  save_checkpoint(path, &r, steps, extra_names, extra, 2);
  printf("saved %s/model.pt, checkpoint_mid.pt and checkpoint.pt\n", outdir);

  ct_tensor_free(probe_in);
  ct_tensor_free(probe);
  for (int i = 0; i < 4; ++i) ct_tensor_free(r.params[i]);
  ct_tensor_free(r.x);
  ct_tensor_free(r.y);
  ct_op_free(xent);
  ct_optimizer_free(r.opt);
  ct_module_free(r.m);
  ct_generator_free(gen);
  free(losses);
  return 0;
}
