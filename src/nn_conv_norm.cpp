// torch.nn's convolutions (Conv1d/2d/3d, ConvTranspose1d/2d/3d: padding
// strings and modes, groups, dilation) and normalizations (BatchNorm,
// LayerNorm, GroupNorm) for ct_module_new_nn.
#include "nn_layer.h"

namespace ct {
namespace nn {

// ---- Convolutions ------------------------------------------------------------
void conv(Layer &l, size_t nd, bool transposed) {
  const Args &a = l.a;
  int64_t in = a.i("in_channels"), out = a.i("out_channels"), groups = a.i("groups");
  std::vector<int64_t> k = a.ints("kernel_size", nd), stride = a.ints("stride", nd),
                       dilation = a.ints("dilation", nd);
  std::string mode = a.s("padding_mode");
  if (groups <= 0) l.fail("groups must be a positive integer");
  if (in % groups != 0) l.fail("in_channels must be divisible by groups");
  if (out % groups != 0) l.fail("out_channels must be divisible by groups");
  if (mode != "zeros" && mode != "reflect" && mode != "replicate" && mode != "circular")
    l.fail("padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got "
           "padding_mode='%s'",
           mode.c_str());
  std::string padding;                // the literal forward passes
  std::vector<int64_t> pad_twice;     // F.pad's amounts for a padding_mode
  const IValue &p = a["padding"];
  if (p.isString()) {
    if (transposed) l.fail("padding must be an int or a tuple of ints for ConvTranspose");
    std::string ps = p.toStringRef();
    if (ps != "same" && ps != "valid")
      l.fail("Invalid padding string '%s', should be one of {'valid', 'same'}", ps.c_str());
    if (ps == "same")
      for (int64_t s : stride)
        if (s != 1) l.fail("padding='same' is not supported for strided convolutions");
    padding = quote(ps);
    pad_twice.assign(2 * nd, 0);
    if (ps == "same")
      for (size_t d = 0; d < nd; ++d) {
        int64_t total = dilation[d] * (k[d] - 1), left = total / 2;
        size_t i = nd - 1 - d;
        pad_twice[2 * i] = left;
        pad_twice[2 * i + 1] = total - left;
      }
  } else {
    std::vector<int64_t> pv = p.isNone() ? std::vector<int64_t>(nd, 0) : a.ints("padding", nd);
    padding = lit(pv);
    for (size_t d = nd; d-- > 0;) {
      pad_twice.push_back(pv[d]);
      pad_twice.push_back(pv[d]);
    }
  }
  std::vector<int64_t> shape = transposed ? std::vector<int64_t>{in, out / groups}
                                          : std::vector<int64_t>{out, in / groups};
  for (int64_t kd : k) shape.push_back(kd);
  at::Tensor w = l.param("weight", shape), b;
  if (a.b("bias")) b = l.param("bias", {out});
  else l.none("bias");
  linear_reset(w, b);
  for (const char *n : {"in_channels", "out_channels", "groups"}) l.attr(n, a.i(n));
  l.attr("padding_mode", mode);
  const std::string d = std::to_string(nd);
  std::ostringstream src;
  if (transposed) {
    if (mode != "zeros") l.fail("Only \"zeros\" padding mode is supported for ConvTranspose%sd",
                                d.c_str());
    std::vector<int64_t> outp = a.ints("output_padding", nd);
    for (size_t i = 0; i < nd; ++i)
      if (outp[i] >= stride[i] && outp[i] >= dilation[i])
        l.fail("output padding must be smaller than either stride or dilation");
    src << "def forward(self, input: Tensor) -> Tensor:\n"
        << "    return torch.conv_transpose" << d << "d(input, self.weight, self.bias, "
        << lit(stride) << ", " << padding << ", " << lit(outp) << ", " << groups << ", "
        << lit(dilation) << ")\n";
  } else if (mode != "zeros") {
    src << "def forward(self, input: Tensor) -> Tensor:\n"
        << "    return torch.conv" << d << "d(torch.ops.aten.pad(input, " << lit(pad_twice)
        << ", " << quote(mode) << ", None), self.weight, self.bias, " << lit(stride) << ", "
        << lit(std::vector<int64_t>(nd, 0)) << ", " << lit(dilation) << ", " << groups << ")\n";
  } else {
    src << "def forward(self, input: Tensor) -> Tensor:\n"
        << "    return torch.conv" << d << "d(input, self.weight, self.bias, " << lit(stride)
        << ", " << padding << ", " << lit(dilation) << ", " << groups << ")\n";
  }
  l.define(src.str());
}

// ---- Normalization -------------------------------------------------------------
// BatchNorm's and GroupNorm's weight (ones) and bias (zeros) of n features,
// or both None without affine.
static void affine_params(Layer &l, bool affine, int64_t n) {
  if (!affine) {
    l.none("weight");
    l.none("bias");
    return;
  }
  at::Tensor w = l.param("weight", {n}), b = l.param("bias", {n});
  at::NoGradGuard no_grad;
  w.fill_(1);
  b.zero_();
}

void batch_norm(Layer &l, int nd) {
  const Args &a = l.a;
  int64_t n = a.i("num_features");
  double eps = a.d("eps");
  bool affine = a.b("affine"), track = a.b("track_running_stats"), has_mom = !a.none("momentum");
  affine_params(l, affine, n);
  if (track) {
    l.buffer("running_mean", at::zeros({n}, l.opt));
    l.buffer("running_var", at::ones({n}, l.opt));
    l.buffer("num_batches_tracked",
             at::tensor(int64_t{0}, l.opt.dtype(at::kLong)).reshape({}));
  } else {
    l.none("running_mean");
    l.none("running_var");
    l.none("num_batches_tracked");
  }
  l.attr("num_features", n);
  l.attr("eps", eps);
  l.attr("affine", affine);
  l.attr("track_running_stats", track);
  std::string check = nd == 1 ? "input.dim() != 2 and input.dim() != 3" : "input.dim() != " + std::to_string(nd + 2);
  std::string expected = nd == 1 ? "2D or 3D" : std::to_string(nd + 2) + "D";
  std::ostringstream s;
  s << "def forward(self, input: Tensor) -> Tensor:\n"
    << "    if " << check << ":\n"
    << "        raise ValueError(\"expected " << expected << " input (got \" + str(input.dim()) + \"D input)\")\n"
    << "    factor = " << (has_mom ? lit(a.d("momentum")) : "0.0") << "\n";
  if (track) {
    s << "    if self.training:\n"
      << "        self.num_batches_tracked.add_(1)\n";
    if (!has_mom) s << "        factor = 1.0 / float(self.num_batches_tracked)\n";
  }
  s << "    if self.training:\n"
    << "        size_prods = input.size(0)\n"
    << "        for i in range(input.dim() - 2):\n"
    << "            size_prods *= input.size(i + 2)\n"
    << "        if size_prods == 1:\n"
    << "            raise ValueError(\"Expected more than 1 value per channel when training, got "
       "input size \" + str(input.size()))\n";
  if (track)
    s << "    return torch.batch_norm(input, self.weight, self.bias, self.running_mean, "
         "self.running_var, self.training, factor, "
      << lit(eps) << ", True)\n";
  else
    s << "    return torch.batch_norm(input, self.weight, self.bias, None, None, True, factor, "
      << lit(eps) << ", True)\n";
  l.define(s.str());
}

void layer_norm(Layer &l) {
  const Args &a = l.a;
  const IValue &ns = a["normalized_shape"];
  size_t dims = ns.isInt() ? 1 : ns.isTuple() ? ns.toTupleRef().elements().size()
                           : ns.isList() ? ns.toListRef().size() : 0;
  std::vector<int64_t> shape = a.ints("normalized_shape", dims);
  bool affine = a.b("elementwise_affine");
  if (affine) {
    at::Tensor w = l.param("weight", shape);
    at::NoGradGuard no_grad;
    w.fill_(1);
    if (a.b("bias")) l.param("bias", shape).zero_();
    else l.none("bias");
  } else {
    l.none("weight");
    l.none("bias");
  }
  l.attr("eps", a.d("eps"));
  l.define("def forward(self, input: Tensor) -> Tensor:\n"
           "    return torch.layer_norm(input, " +
           lit(shape) + ", self.weight, self.bias, " + lit(a.d("eps")) + ", True)\n");
}

void group_norm(Layer &l) {
  const Args &a = l.a;
  int64_t g = a.i("num_groups"), c = a.i("num_channels");
  if (g <= 0 || c % g != 0) l.fail("num_channels must be divisible by num_groups");
  affine_params(l, a.b("affine"), c);
  l.attr("num_groups", g);
  l.attr("num_channels", c);
  l.define("def forward(self, input: Tensor) -> Tensor:\n"
           "    return torch.group_norm(input, " +
           lit(g) + ", self.weight, self.bias, " + lit(a.d("eps")) + ", True)\n");
}


}  // namespace nn
}  // namespace ct
