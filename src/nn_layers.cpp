// torch.nn's layers, losses and containers as TorchScript modules
// (ct_module_new_nn): each layer's constructor signature as a schema, its
// checks with torch.nn's messages, its parameters and buffers registered and
// initialized in torch.nn's order, and its forward as TorchScript source, so
// that a model runs, trains and saves like any module and torch.jit.load
// opens it.
#include "nn.h"

#include "locks.h"
#include "schema.h"
#include "script.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

namespace ct {
namespace nn {
namespace {

using c10::IValue;

// ---- TorchScript literals ----------------------------------------------------
std::string lit(double v) {
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  if (std::isnan(v)) return "float(\"nan\")";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s(buf);
  if (s.find_first_of(".e") == std::string::npos) s += ".";
  return s;
}
std::string lit(int64_t v) { return std::to_string(v); }
std::string lit(bool v) { return v ? "True" : "False"; }
std::string lit(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
std::string quote(const std::string &v) {
  std::string s = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') s += '\\';
    s += c;
  }
  return s + "\"";
}

// ---- A layer under construction -----------------------------------------------
class Layer {
 public:
  Layer(const std::string &qualname, const Args &a)
      : Layer(qualname, a, a.factory()) {}
  Layer(const std::string &qualname, const Args &a, at::TensorOptions options)
      : m(c10::QualifiedName("__torch__.torch.nn.modules." + qualname)), a(a), opt(options) {
    m.register_attribute("training", c10::BoolType::get(), IValue(true));
  }
  // An uninitialized parameter of torch.nn's name and shape (requires grad).
  at::Tensor param(const char *name, std::vector<int64_t> sizes) {
    for (int64_t s : sizes)
      if (s < 0)
        fail("Trying to create tensor with negative dimension %lld: [%s] for %s", (long long)s,
             join(sizes).c_str(), name);
    at::Tensor t = at::empty(sizes, opt);
    t.set_requires_grad(true);
    m.register_parameter(name, t, /*is_buffer=*/false);
    return t;
  }
  // A parameter or buffer torch.nn sets to None (not in the state_dict).
  void none(const char *name) {
    m.register_attribute(name, c10::OptionalType::create(c10::TensorType::get()), IValue());
  }
  at::Tensor buffer(const char *name, at::Tensor t) {
    m.register_buffer(name, t);
    return t;
  }
  void attr(const char *name, const IValue &v) { m.register_attribute(name, v.type(), v); }
  void child(const std::string &name, const torch::jit::Module &c) { m.register_module(name, c); }
  void define(const std::string &source) {
    ct::RegistryRead registry_read;
    m.define(source, ct::op_resolver());
  }
  [[noreturn]] void fail(const char *fmt, ...) const __attribute__((format(printf, 2, 3))) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: %s", a.call().c_str(), buf);
  }
  static std::string join(const std::vector<int64_t> &v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s;
  }

  torch::jit::Module m;
  const Args &a;
  at::TensorOptions opt;
};

const char *const kFactory = "*, Device? device=None, ScalarType? dtype=None";

// A layer inside a layer (MultiheadAttention's out_proj, ...): built from the
// table with these arguments and the parent's dtype and device.
torch::jit::Module child_layer(const Layer &parent, const char *name, std::vector<IValue> args,
                               std::vector<std::pair<std::string, IValue>> kw = {});

// ---- Linear, Bilinear, Identity, Flatten ---------------------------------------
void linear(Layer &l) {
  int64_t in = l.a.i("in_features"), out = l.a.i("out_features");
  at::Tensor w = l.param("weight", {out, in}), b;
  if (l.a.b("bias")) b = l.param("bias", {out});
  else l.none("bias");
  linear_reset(w, b);
  l.attr("in_features", in);
  l.attr("out_features", out);
  l.define("def forward(self, input: Tensor) -> Tensor:\n"
           "    return torch.linear(input, self.weight, self.bias)\n");
}

void bilinear(Layer &l) {
  int64_t in1 = l.a.i("in1_features"), in2 = l.a.i("in2_features"), out = l.a.i("out_features");
  at::Tensor w = l.param("weight", {out, in1, in2}), b;
  if (l.a.b("bias")) b = l.param("bias", {out});
  else l.none("bias");
  double bound = in1 > 0 ? 1 / std::sqrt(static_cast<double>(in1)) : 0;
  uniform(w, -bound, bound);
  if (b.defined()) uniform(b, -bound, bound);
  l.define("def forward(self, input1: Tensor, input2: Tensor) -> Tensor:\n"
           "    return torch.bilinear(input1, input2, self.weight, self.bias)\n");
}

void identity(Layer &l) { l.define("def forward(self, input: Tensor) -> Tensor:\n    return input\n"); }

void flatten(Layer &l) {
  l.attr("start_dim", l.a.i("start_dim"));
  l.attr("end_dim", l.a.i("end_dim"));
  l.define("def forward(self, input: Tensor) -> Tensor:\n"
           "    return torch.flatten(input, " +
           lit(l.a.i("start_dim")) + ", " + lit(l.a.i("end_dim")) + ")\n");
}

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
  shape.insert(shape.end(), k.begin(), k.end());
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
void batch_norm(Layer &l, int nd) {
  const Args &a = l.a;
  int64_t n = a.i("num_features");
  double eps = a.d("eps");
  bool affine = a.b("affine"), track = a.b("track_running_stats"), has_mom = !a.none("momentum");
  if (affine) {
    at::Tensor w = l.param("weight", {n}), b = l.param("bias", {n});
    at::NoGradGuard no_grad;
    w.fill_(1);
    b.zero_();
  } else {
    l.none("weight");
    l.none("bias");
  }
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
  if (a.b("affine")) {
    at::Tensor w = l.param("weight", {c}), b = l.param("bias", {c});
    at::NoGradGuard no_grad;
    w.fill_(1);
    b.zero_();
  } else {
    l.none("weight");
    l.none("bias");
  }
  l.attr("num_groups", g);
  l.attr("num_channels", c);
  l.define("def forward(self, input: Tensor) -> Tensor:\n"
           "    return torch.group_norm(input, " +
           lit(g) + ", self.weight, self.bias, " + lit(a.d("eps")) + ", True)\n");
}

void dropout(Layer &l, const char *fn) {
  double p = l.a.d("p");
  if (p < 0 || p > 1) l.fail("dropout probability has to be between 0 and 1, but got %g", p);
  l.attr("p", p);
  l.define(std::string("def forward(self, input: Tensor) -> Tensor:\n    return torch.") + fn +
           (l.a.b("inplace") ? "_" : "") + "(input, " + lit(p) + ", self.training)\n");
}

// ---- Embedding ---------------------------------------------------------------
void embedding(Layer &l) {
  const Args &a = l.a;
  int64_t num = a.i("num_embeddings"), dim = a.i("embedding_dim"), pad = -1;
  if (!a.none("padding_idx")) {
    pad = a.i("padding_idx");
    if (pad >= num || pad < -num) l.fail("Padding_idx must be within num_embeddings");
    if (pad < 0) pad += num;
  }
  at::Tensor w = l.param("weight", {num, dim});
  normal(w, 0, 1);
  if (pad >= 0) {
    at::NoGradGuard no_grad;
    w[pad].fill_(0);
  }
  l.attr("num_embeddings", num);
  l.attr("embedding_dim", dim);
  std::ostringstream s;
  s << "def forward(self, input: Tensor) -> Tensor:\n";
  if (!a.none("max_norm"))
    s << "    input = input.contiguous()\n"
      << "    torch.embedding_renorm_(self.weight.detach(), input, " << lit(a.d("max_norm")) << ", "
      << lit(a.d("norm_type")) << ")\n";
  s << "    return torch.embedding(self.weight, input, " << pad << ", "
    << lit(a.b("scale_grad_by_freq")) << ", " << lit(a.b("sparse")) << ")\n";
  l.define(s.str());
}

// ---- Recurrent layers --------------------------------------------------------
void rnn(Layer &l, const std::string &kind) {
  const Args &a = l.a;
  int64_t in = a.i("input_size"), h = a.i("hidden_size"), layers = a.i("num_layers");
  bool bias = a.b("bias"), bf = a.b("batch_first"), bidir = a.b("bidirectional");
  double drop = a.d("dropout");
  std::string op = kind == "LSTM" ? "lstm" : kind == "GRU" ? "gru" : "";
  if (kind == "RNN") {
    std::string nl = a.s("nonlinearity");
    if (nl != "tanh" && nl != "relu") l.fail("Unknown nonlinearity '%s'. Select from 'tanh' or 'relu'.", nl.c_str());
    op = "rnn_" + nl;
  }
  if (drop < 0 || drop > 1)
    l.fail("dropout should be a number in range [0, 1] representing the probability of an "
           "element being zeroed");
  if (h <= 0) l.fail("hidden_size must be greater than zero");
  if (layers <= 0) l.fail("num_layers must be greater than zero");
  if (kind == "LSTM" && a.i("proj_size") != 0) {
    if (a.i("proj_size") < 0) l.fail("proj_size should be a positive integer or zero to disable projections");
    ct::raise(CT_ERR_NOT_SUPPORTED, "%s: proj_size > 0 is not built by ctorch", a.call().c_str());
  }
  int64_t gate = (kind == "LSTM" ? 4 : kind == "GRU" ? 3 : 1) * h, dirs = bidir ? 2 : 1;
  std::vector<at::Tensor> all;
  std::string names;
  for (int64_t layer = 0; layer < layers; ++layer)
    for (int64_t d = 0; d < dirs; ++d) {
      int64_t lin = layer == 0 ? in : h * dirs;
      std::string suf = "_l" + std::to_string(layer) + (d ? "_reverse" : "");
      std::vector<std::pair<std::string, std::vector<int64_t>>> ps = {
          {"weight_ih" + suf, {gate, lin}}, {"weight_hh" + suf, {gate, h}}};
      if (bias) {
        ps.push_back({"bias_ih" + suf, {gate}});
        ps.push_back({"bias_hh" + suf, {gate}});
      }
      for (auto &p : ps) {
        all.push_back(l.param(p.first.c_str(), p.second));
        names += (names.empty() ? "self." : ", self.") + p.first;
      }
    }
  double stdv = 1.0 / std::sqrt(static_cast<double>(h));
  for (at::Tensor &t : all) uniform(t, -stdv, stdv);
  l.attr("input_size", in);
  l.attr("hidden_size", h);
  l.attr("num_layers", layers);
  l.attr("batch_first", bf);
  l.attr("bidirectional", bidir);
  const std::string bd = bf ? "0" : "1", zeros = "torch.zeros(" + lit(layers * dirs) +
                                                  ", max_batch_size, " + lit(h) +
                                                  ", dtype=input.dtype, device=input.device)";
  const std::string tail = "[" + names + "], " + lit(bias) + ", " + lit(layers) + ", " +
                           lit(drop) + ", self.training, " + lit(bidir) + ", " + lit(bf) + ")";
  std::ostringstream s;
  bool lstm = kind == "LSTM";
  if (lstm)
    s << "def forward(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None) -> "
         "Tuple[Tensor, Tuple[Tensor, Tensor]]:\n";
  else
    s << "def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:\n";
  s << "    if input.dim() != 2 and input.dim() != 3:\n"
    << "        raise ValueError(\"" << kind << ": Expected input to be 2D or 3D, got \" + str(input.dim()) + \"D tensor instead\")\n"
    << "    is_batched = input.dim() == 3\n"
    << "    if not is_batched:\n"
    << "        input = input.unsqueeze(" << bd << ")\n"
    << "    max_batch_size = input.size(" << bd << ")\n";
  if (lstm) {
    s << "    if hx is None:\n"
      << "        h0 = " << zeros << "\n"
      << "        c0 = " << zeros << "\n"
      << "    else:\n"
      << "        h0, c0 = hx\n"
      << "        if not is_batched:\n"
      << "            h0 = h0.unsqueeze(1)\n"
      << "            c0 = c0.unsqueeze(1)\n"
      << "    output, h, c = torch.lstm(input, [h0, c0], " << tail << "\n"
      << "    if not is_batched:\n"
      << "        output = output.squeeze(" << bd << ")\n"
      << "        h = h.squeeze(1)\n"
      << "        c = c.squeeze(1)\n"
      << "    return output, (h, c)\n";
  } else {
    s << "    if hx is None:\n"
      << "        h0 = " << zeros << "\n"
      << "    else:\n"
      << "        h0 = hx\n"
      << "        if not is_batched:\n"
      << "            h0 = h0.unsqueeze(1)\n"
      << "    output, h = torch." << op << "(input, h0, " << tail << "\n"
      << "    if not is_batched:\n"
      << "        output = output.squeeze(" << bd << ")\n"
      << "        h = h.squeeze(1)\n"
      << "    return output, h\n";
  }
  l.define(s.str());
}

// ---- Activations: (signature arguments, forward expression) ------------------
struct Activation {
  const char *name, *args, *expr, *inplace_expr;
};
const Activation kActivations[] = {
    {"ReLU", "bool inplace=False", "torch.relu(input)", "torch.relu_(input)"},
    {"ReLU6", "bool inplace=False", "torch.ops.aten.hardtanh(input, 0., 6.)",
     "torch.ops.aten.hardtanh_(input, 0., 6.)"},
    {"LeakyReLU", "float negative_slope=0.01, bool inplace=False",
     "torch.ops.aten.leaky_relu(input, {negative_slope})",
     "torch.ops.aten.leaky_relu_(input, {negative_slope})"},
    {"ELU", "float alpha=1., bool inplace=False", "torch.ops.aten.elu(input, {alpha})",
     "torch.ops.aten.elu_(input, {alpha})"},
    {"SELU", "bool inplace=False", "torch.selu(input)", "torch.selu_(input)"},
    {"CELU", "float alpha=1., bool inplace=False", "torch.celu(input, {alpha})",
     "torch.celu_(input, {alpha})"},
    {"GELU", "str approximate=\"none\"", "torch.ops.aten.gelu(input, approximate={approximate})",
     nullptr},
    {"SiLU", "bool inplace=False", "torch.ops.aten.silu(input)", "torch.ops.aten.silu_(input)"},
    {"Mish", "bool inplace=False", "torch.ops.aten.mish(input)", "torch.ops.aten.mish_(input)"},
    {"Sigmoid", "", "torch.sigmoid(input)", nullptr},
    {"Tanh", "", "torch.tanh(input)", nullptr},
    {"Hardtanh", "float min_val=-1., float max_val=1., bool inplace=False",
     "torch.ops.aten.hardtanh(input, {min_val}, {max_val})",
     "torch.ops.aten.hardtanh_(input, {min_val}, {max_val})"},
    {"Hardswish", "bool inplace=False", "torch.ops.aten.hardswish(input)",
     "torch.ops.aten.hardswish_(input)"},
    {"Hardsigmoid", "bool inplace=False", "torch.ops.aten.hardsigmoid(input)",
     "torch.ops.aten.hardsigmoid_(input)"},
    {"Softplus", "float beta=1., float threshold=20.",
     "torch.ops.aten.softplus(input, {beta}, {threshold})", nullptr},
    {"Softsign", "", "input / (input.abs() + 1)", nullptr},
    {"Tanhshrink", "", "input - input.tanh()", nullptr},
};

void activation(Layer &l, const Activation &act) {
  bool inplace = l.a.has("inplace") && l.a.b("inplace");
  std::string e = inplace && act.inplace_expr ? act.inplace_expr : act.expr;
  for (size_t open; (open = e.find('{')) != std::string::npos;) {
    size_t close = e.find('}', open);
    std::string name = e.substr(open + 1, close - open - 1);
    const IValue &v = l.a[name.c_str()];
    e.replace(open, close - open + 1, v.isString() ? quote(v.toStringRef()) : lit(l.a.d(name.c_str())));
  }
  l.define("def forward(self, input: Tensor) -> Tensor:\n    return " + e + "\n");
}

void softmax(Layer &l, const char *fn) {
  std::string dim = l.a.none("dim") ? "_legacy_dim" : lit(l.a.i("dim"));
  if (!l.a.none("dim")) l.attr("dim", l.a.i("dim"));
  std::ostringstream s;
  s << "def forward(self, input: Tensor) -> Tensor:\n";
  if (l.a.none("dim"))
    s << "    _legacy_dim = 1\n"
      << "    if input.dim() == 0 or input.dim() == 1 or input.dim() == 3:\n"
      << "        _legacy_dim = 0\n";
  s << "    return torch." << fn << "(input, " << dim << ")\n";
  l.define(s.str());
}

// ---- Pooling -----------------------------------------------------------------
void max_pool(Layer &l, size_t nd) {
  const Args &a = l.a;
  auto k = a.ints("kernel_size", nd), st = a.none("stride") ? k : a.ints("stride", nd),
       p = a.ints("padding", nd), d = a.ints("dilation", nd);
  for (size_t i = 0; i < nd; ++i)
    if (p[i] * 2 > k[i]) l.fail("pad should be at most half of effective kernel size");
  std::string args = "input, " + lit(k) + ", " + lit(st) + ", " + lit(p) + ", " + lit(d) + ", " +
                     lit(a.b("ceil_mode")) + ")";
  std::string n = std::to_string(nd);
  if (a.b("return_indices"))
    l.define("def forward(self, input: Tensor) -> Tuple[Tensor, Tensor]:\n    return torch.ops.aten.max_pool" +
             n + "d_with_indices(" + args + "\n");
  else
    l.define("def forward(self, input: Tensor) -> Tensor:\n    return torch.max_pool" + n + "d(" +
             args + "\n");
}

void avg_pool(Layer &l, size_t nd) {
  const Args &a = l.a;
  auto k = a.ints("kernel_size", nd), st = a.none("stride") ? k : a.ints("stride", nd),
       p = a.ints("padding", nd);
  for (size_t i = 0; i < nd; ++i)
    if (p[i] * 2 > k[i]) l.fail("pad should be at most half of effective kernel size");
  std::string args = "input, " + lit(k) + ", " + lit(st) + ", " + lit(p) + ", " +
                     lit(a.b("ceil_mode")) + ", " + lit(a.b("count_include_pad"));
  if (nd == 1) {
    l.define("def forward(self, input: Tensor) -> Tensor:\n    return torch.avg_pool1d(" + args +
             ")\n");
    return;
  }
  std::string div = a.none("divisor_override") ? "None" : lit(a.i("divisor_override"));
  l.define("def forward(self, input: Tensor) -> Tensor:\n    return torch.ops.aten.avg_pool" +
           std::to_string(nd) + "d(" + args + ", " + div + ")\n");
}

void adaptive_pool(Layer &l, size_t nd, bool max) {
  auto o = l.a.ints("output_size", nd);
  std::string n = std::to_string(nd);
  if (!max) {
    l.define("def forward(self, input: Tensor) -> Tensor:\n    return torch.ops.aten.adaptive_avg_pool" +
             n + "d(input, " + lit(o) + ")\n");
    return;
  }
  bool idx = l.a.b("return_indices");
  l.define(std::string("def forward(self, input: Tensor) -> ") +
           (idx ? "Tuple[Tensor, Tensor]" : "Tensor") +
           ":\n    return torch.ops.aten.adaptive_max_pool" + n + "d(input, " + lit(o) + ")" +
           (idx ? "" : "[0]") + "\n");
}

// ---- Losses -------------------------------------------------------------------
int64_t reduction(Layer &l) {
  if (l.a.has("reduce") && (!l.a.none("size_average") || !l.a.none("reduce")))
    ct::raise(CT_ERR_NOT_SUPPORTED,
              "%s: size_average and reduce are deprecated in torch and not built by ctorch; use "
              "reduction",
              l.a.call().c_str());
  std::string r = l.a.s("reduction");
  if (r == "none") return 0;
  if (r == "mean") return 1;
  if (r == "sum") return 2;
  l.fail("%s is not a valid value for reduction", r.c_str());
}

void weight_buffer(Layer &l, const char *name) {
  if (l.a.none(name)) l.none(name);
  else l.buffer(name, l.a[name].toTensor());
}

void loss(Layer &l, const std::string &kind) {
  const std::string hdr = "def forward(self, input: Tensor, target: Tensor) -> Tensor:\n";
  std::string red;
  if (kind != "KLDivLoss") red = lit(reduction(l));
  std::string body;
  if (kind == "CrossEntropyLoss") {
    weight_buffer(l, "weight");
    body = "    return torch.cross_entropy_loss(input, target, self.weight, " + red + ", " +
           lit(l.a.i("ignore_index")) + ", " + lit(l.a.d("label_smoothing")) + ")\n";
  } else if (kind == "NLLLoss") {
    weight_buffer(l, "weight");
    body = "    return torch.nll_loss_nd(input, target, self.weight, " + red + ", " +
           lit(l.a.i("ignore_index")) + ")\n";
  } else if (kind == "MSELoss" || kind == "L1Loss" || kind == "SmoothL1Loss" ||
             kind == "HuberLoss") {
    std::string fn = kind == "MSELoss" ? "mse_loss" : kind == "L1Loss" ? "l1_loss"
                     : kind == "SmoothL1Loss" ? "smooth_l1_loss" : "huber_loss";
    std::string extra;
    if (kind == "SmoothL1Loss") {
      if (l.a.d("beta") == 0.0) fn = "l1_loss";
      else extra = ", " + lit(l.a.d("beta"));
    }
    if (kind == "HuberLoss") extra = ", " + lit(l.a.d("delta"));
    body = "    expanded = torch.broadcast_tensors([input, target])\n"
           "    return torch.ops.aten." + fn + "(expanded[0], expanded[1], " + red + extra + ")\n";
  } else if (kind == "BCELoss") {
    weight_buffer(l, "weight");
    body = "    if target.size() != input.size():\n"
           "        raise ValueError(\"Using a target size (\" + str(target.size()) + \") that is "
           "different to the input size (\" + str(input.size()) + \") is deprecated. Please ensure "
           "they have the same size.\")\n"
           "    weight = self.weight\n"
           "    if weight is not None:\n"
           "        weight = weight.expand(torch.broadcast_tensors([target, weight])[0].size())\n"
           "    return torch.ops.aten.binary_cross_entropy(input, target, weight, " + red + ")\n";
  } else if (kind == "BCEWithLogitsLoss") {
    weight_buffer(l, "weight");
    weight_buffer(l, "pos_weight");
    body = "    if target.size() != input.size():\n"
           "        raise ValueError(\"Target size (\" + str(target.size()) + \") must be the same "
           "as input size (\" + str(input.size()) + \")\")\n"
           "    return torch.binary_cross_entropy_with_logits(input, target, self.weight, "
           "self.pos_weight, " + red + ")\n";
  } else if (kind == "KLDivLoss") {
    if (!l.a.none("size_average") || !l.a.none("reduce"))
      ct::raise(CT_ERR_NOT_SUPPORTED, "%s: size_average and reduce are deprecated; use reduction",
                l.a.call().c_str());
    std::string r = l.a.s("reduction"), lt = lit(l.a.b("log_target"));
    if (r == "batchmean")
      body = "    reduced = torch.kl_div(input, target, 2, log_target=" + lt + ")\n"
             "    if input.dim() != 0:\n"
             "        reduced = reduced / input.size(0)\n"
             "    return reduced\n";
    else if (r == "none" || r == "mean" || r == "sum")
      body = "    return torch.kl_div(input, target, " +
             std::string(r == "none" ? "0" : r == "mean" ? "1" : "2") + ", log_target=" + lt + ")\n";
    else
      l.fail("%s is not a valid value for reduction", r.c_str());
  } else if (kind == "CosineEmbeddingLoss") {
    l.define("def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:\n"
             "    return torch.cosine_embedding_loss(input1, input2, target, " +
             lit(l.a.d("margin")) + ", " + red + ")\n");
    return;
  }
  l.define(hdr + body);
}

// ---- Containers ----------------------------------------------------------------
torch::jit::Module module_of(const Layer &l, const IValue &v, const std::string &what) {
  if (!v.isObject() || !v.toObjectRef().type()->is_module())
    ct::raise(CT_ERR_TYPE, "%s: %s is %s, not a module", l.a.call().c_str(), what.c_str(),
              v.type()->str().c_str());
  return torch::jit::Module(v.toObject());
}

// The type a module's forward takes first (after self), as source text.
std::string forward_input_type(const Layer &l, const torch::jit::Module &m, const std::string &name) {
  auto fn = m.find_method("forward");
  if (!fn)
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: module %s has no forward method", l.a.call().c_str(),
              name.c_str());
  const auto &args = fn->function().getSchema().arguments();
  if (args.size() < 2) return "Tensor";
  return args[1].type()->annotation_str();
}

void sequential(Layer &l, const std::vector<std::pair<std::string, IValue>> &items) {
  std::ostringstream s;
  std::vector<torch::jit::Module> mods;
  for (const auto &it : items) {
    mods.push_back(module_of(l, it.second, "module '" + it.first + "'"));
    l.child(it.first, mods.back());
  }
  if (items.empty()) {
    l.define("def forward(self, input: Tensor) -> Tensor:\n    return input\n");
    return;
  }
  s << "def forward(self, input: " << forward_input_type(l, mods[0], items[0].first) << "):\n"
    << "    x = input\n";
  for (size_t i = 0; i < items.size(); ++i)
    s << "    x" << i << " = getattr(self, " << quote(items[i].first) << ").forward("
      << (i ? "x" + std::to_string(i - 1) : std::string("x")) << ")\n";
  s << "    return x" << items.size() - 1 << "\n";
  l.define(s.str());
}

// ---- Attention ---------------------------------------------------------------
// F.multi_head_attention_forward's steps (torch's slow path, which its fast
// path equals), with this layer's constants written in.
void multihead_attention(Layer &l) {
  const Args &a = l.a;
  int64_t e = a.i("embed_dim"), h = a.i("num_heads");
  if (e <= 0 || h <= 0)
    l.fail("embed_dim and num_heads must be greater than 0, got embed_dim=%lld and num_heads=%lld "
           "instead",
           (long long)e, (long long)h);
  if ((e / h) * h != e) l.fail("embed_dim must be divisible by num_heads");
  int64_t hd = e / h, kdim = a.none("kdim") ? e : a.i("kdim"), vdim = a.none("vdim") ? e : a.i("vdim");
  bool same = kdim == e && vdim == e, bias = a.b("bias"), bias_kv = a.b("add_bias_kv"),
       zero_attn = a.b("add_zero_attn"), bf = a.b("batch_first");
  double drop = a.d("dropout");
  at::Tensor in_w, q_w, k_w, v_w, in_b;
  if (same) {
    in_w = l.param("in_proj_weight", {3 * e, e});
  } else {
    q_w = l.param("q_proj_weight", {e, e});
    k_w = l.param("k_proj_weight", {e, kdim});
    v_w = l.param("v_proj_weight", {e, vdim});
    l.none("in_proj_weight");
  }
  if (bias) in_b = l.param("in_proj_bias", {3 * e});
  else l.none("in_proj_bias");
  // torch makes out_proj (a Linear: it draws its init) before bias_k/v
  torch::jit::Module out_proj = child_layer(l, "Linear", {e, e}, {{"bias", bias}});
  at::Tensor bk, bv;
  if (bias_kv) {
    bk = l.param("bias_k", {1, 1, e});
    bv = l.param("bias_v", {1, 1, e});
  } else {
    l.none("bias_k");
    l.none("bias_v");
  }
  l.child("out_proj", out_proj);
  // _reset_parameters
  if (same) xavier_uniform(in_w);
  else {
    xavier_uniform(q_w);
    xavier_uniform(k_w);
    xavier_uniform(v_w);
  }
  {
    at::NoGradGuard no_grad;
    if (bias) {
      in_b.zero_();
      out_proj.attr("bias").toTensor().zero_();
    }
  }
  if (bias_kv) {
    normal(bk, 0., std::sqrt(2.0 / static_cast<double>(bk.size(1) * bk.size(2) + bk.size(0) * bk.size(2))));
    normal(bv, 0., std::sqrt(2.0 / static_cast<double>(bv.size(1) * bv.size(2) + bv.size(0) * bv.size(2))));
  }
  l.attr("embed_dim", e);
  l.attr("num_heads", h);
  l.attr("batch_first", bf);
  const std::string H = lit(h), HD = lit(hd), E = lit(e);
  std::ostringstream s;
  s << "def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: "
       "Optional[Tensor] = None, need_weights: bool = True, attn_mask: Optional[Tensor] = None, "
       "average_attn_weights: bool = True, is_causal: bool = False) -> Tuple[Tensor, "
       "Optional[Tensor]]:\n"
    << "    if is_causal and attn_mask is None:\n"
    << "        raise RuntimeError(\"need attn_mask if specifying the is_causal hint\")\n"
    << "    is_batched = query.dim() == 3\n";
  if (bf)
    s << "    if is_batched:\n"
      << "        query = query.transpose(1, 0)\n"
      << "        key = key.transpose(1, 0)\n"
      << "        value = value.transpose(1, 0)\n";
  s << "    kpm = key_padding_mask\n"
    << "    if not is_batched:\n"
    << "        query = query.unsqueeze(1)\n"
    << "        key = key.unsqueeze(1)\n"
    << "        value = value.unsqueeze(1)\n"
    << "        if kpm is not None:\n"
    << "            kpm = kpm.unsqueeze(0)\n"
    << "    tgt_len = query.size(0)\n"
    << "    bsz = query.size(1)\n";
  if (same)
    s << "    ws = self.in_proj_weight.chunk(3)\n"
      << "    w_q = ws[0]\n    w_k = ws[1]\n    w_v = ws[2]\n";
  else
    s << "    w_q = self.q_proj_weight\n    w_k = self.k_proj_weight\n    w_v = self.v_proj_weight\n";
  s << "    b_q: Optional[Tensor] = None\n    b_k: Optional[Tensor] = None\n    b_v: Optional[Tensor] = None\n";
  if (bias)
    s << "    bs = self.in_proj_bias.chunk(3)\n"
      << "    b_q = bs[0]\n    b_k = bs[1]\n    b_v = bs[2]\n";
  s << "    q = torch.linear(query, w_q, b_q)\n"
    << "    k = torch.linear(key, w_k, b_k)\n"
    << "    v = torch.linear(value, w_v, b_v)\n"
    << "    mask = attn_mask\n"
    << "    if mask is not None:\n"
    << "        if mask.dtype == 0:  # uint8\n"
    << "            mask = mask.to(11)  # bool\n"
    << "        if mask.dtype == 11:  # bool\n"
    << "            mask = torch.zeros_like(mask, dtype=q.dtype).masked_fill_(mask, float(\"-inf\"))\n"
    << "        if mask.dim() == 2:\n"
    << "            mask = mask.unsqueeze(0)\n"
    << "    if kpm is not None:\n"
    << "        if kpm.dtype == 11:  # bool\n"
    << "            kpm = torch.zeros_like(kpm, dtype=q.dtype).masked_fill_(kpm, float(\"-inf\"))\n";
  if (bias_kv)
    s << "    k = torch.cat([k, self.bias_k.repeat(1, bsz, 1)])\n"
      << "    v = torch.cat([v, self.bias_v.repeat(1, bsz, 1)])\n"
      << "    if mask is not None:\n"
      << "        mask = torch.ops.aten.pad(mask, [0, 1], \"constant\", None)\n"
      << "    if kpm is not None:\n"
      << "        kpm = torch.ops.aten.pad(kpm, [0, 1], \"constant\", None)\n";
  s << "    q = q.contiguous().view(tgt_len, bsz * " << H << ", " << HD << ").transpose(0, 1)\n"
    << "    k = k.contiguous().view(k.size(0), bsz * " << H << ", " << HD << ").transpose(0, 1)\n"
    << "    v = v.contiguous().view(v.size(0), bsz * " << H << ", " << HD << ").transpose(0, 1)\n";
  if (zero_attn)
    s << "    k = torch.cat([k, torch.zeros([bsz * " << H << ", 1, " << HD
      << "], dtype=k.dtype, device=k.device)], 1)\n"
      << "    v = torch.cat([v, torch.zeros([bsz * " << H << ", 1, " << HD
      << "], dtype=v.dtype, device=v.device)], 1)\n"
      << "    if mask is not None:\n"
      << "        mask = torch.ops.aten.pad(mask, [0, 1], \"constant\", None)\n"
      << "    if kpm is not None:\n"
      << "        kpm = torch.ops.aten.pad(kpm, [0, 1], \"constant\", None)\n";
  s << "    src_len = k.size(1)\n"
    << "    if kpm is not None:\n"
    << "        kpm = kpm.view(bsz, 1, 1, src_len).expand(-1, " << H << ", -1, -1).reshape(bsz * "
    << H << ", 1, src_len)\n"
    << "        if mask is None:\n"
    << "            mask = kpm\n"
    << "        else:\n"
    << "            mask = mask + kpm\n"
    << "    q = q / " << lit(std::sqrt(static_cast<double>(hd))) << "\n"
    << "    if mask is not None:\n"
    << "        attn = torch.baddbmm(mask, q, k.transpose(-2, -1))\n"
    << "    else:\n"
    << "        attn = torch.bmm(q, k.transpose(-2, -1))\n"
    << "    attn = torch.softmax(attn, -1)\n";
  if (drop > 0)
    s << "    if self.training:\n"
      << "        attn = torch.dropout(attn, " << lit(drop) << ", True)\n";
  s << "    out = torch.bmm(attn, v)\n"
    << "    out = out.transpose(0, 1).contiguous().view(tgt_len * bsz, " << E << ")\n"
    << "    out = torch.linear(out, self.out_proj.weight, self.out_proj.bias)\n"
    << "    out = out.view(tgt_len, bsz, out.size(1))\n"
    << "    weights: Optional[Tensor] = None\n"
    << "    if need_weights:\n"
    << "        wts = attn.view(bsz, " << H << ", tgt_len, src_len)\n"
    << "        if average_attn_weights:\n"
    << "            wts = wts.sum(dim=1) / " << H << "\n"
    << "        if not is_batched:\n"
    << "            wts = wts.squeeze(0)\n"
    << "        weights = wts\n"
    << "    if not is_batched:\n"
    << "        out = out.squeeze(1)\n";
  if (bf)
    s << "    else:\n"
      << "        out = out.transpose(1, 0)\n";
  s << "    return out, weights\n";
  l.define(s.str());
}

// torch.nn.TransformerEncoderLayer: its children in torch's order (their
// initialization draws in that order) and forward (post- or pre-norm).
void transformer_encoder_layer(Layer &l) {
  const Args &a = l.a;
  int64_t d = a.i("d_model"), ff = a.i("dim_feedforward");
  double drop = a.d("dropout"), eps = a.d("layer_norm_eps");
  bool bias = a.b("bias"), bf = a.b("batch_first"), norm_first = a.b("norm_first");
  const IValue &act = a["activation"];
  std::string act_expr;
  c10::optional<torch::jit::Module> act_module;
  if (act.isNone() || act.isString()) {
    if (act.isNone() || act.toStringRef() == "relu") act_expr = "torch.relu(x)";
    else if (act.toStringRef() == "gelu") act_expr = "torch.ops.aten.gelu(x)";
    else
      l.fail("activation should be relu/gelu, not %s", act.toStringRef().c_str());
  } else if (act.isObject() && act.toObjectRef().type()->is_module()) {
    act_module.emplace(act.toObject());
    act_expr = "self.activation.forward(x)";
  } else {
    ct::raise(CT_ERR_TYPE, "%s: activation must be \"relu\", \"gelu\" or a module, got %s",
              a.call().c_str(), act.type()->str().c_str());
  }
  l.child("self_attn", child_layer(l, "MultiheadAttention", {d, a["nhead"]},
                                   {{"dropout", drop}, {"bias", bias}, {"batch_first", bf}}));
  l.child("linear1", child_layer(l, "Linear", {d, ff}, {{"bias", bias}}));
  l.child("dropout", child_layer(l, "Dropout", {drop}));
  l.child("linear2", child_layer(l, "Linear", {ff, d}, {{"bias", bias}}));
  l.child("norm1", child_layer(l, "LayerNorm", {d}, {{"eps", eps}, {"bias", bias}}));
  l.child("norm2", child_layer(l, "LayerNorm", {d}, {{"eps", eps}, {"bias", bias}}));
  l.child("dropout1", child_layer(l, "Dropout", {drop}));
  l.child("dropout2", child_layer(l, "Dropout", {drop}));
  if (act_module) l.child("activation", *act_module);
  l.attr("norm_first", norm_first);
  std::ostringstream s;
  s << "def _sa_block(self, x: Tensor, attn_mask: Optional[Tensor], key_padding_mask: "
       "Optional[Tensor]) -> Tensor:\n"
    << "    x = self.self_attn.forward(x, x, x, key_padding_mask=key_padding_mask, "
       "need_weights=False, attn_mask=attn_mask)[0]\n"
    << "    return self.dropout1.forward(x)\n"
    << "def _ff_block(self, x: Tensor) -> Tensor:\n"
    << "    x = self.linear2.forward(self.dropout.forward(" << act_expr.replace(act_expr.find("(x)"), 3, "(self.linear1.forward(x))") << "))\n"
    << "    return self.dropout2.forward(x)\n"
    << "def forward(self, src: Tensor, src_mask: Optional[Tensor] = None, src_key_padding_mask: "
       "Optional[Tensor] = None, is_causal: bool = False) -> Tensor:\n"
    << "    x = src\n";
  if (norm_first)
    s << "    x = x + self._sa_block(self.norm1.forward(x), src_mask, src_key_padding_mask)\n"
      << "    x = x + self._ff_block(self.norm2.forward(x))\n";
  else
    s << "    x = self.norm1.forward(x + self._sa_block(x, src_mask, src_key_padding_mask))\n"
      << "    x = self.norm2.forward(x + self._ff_block(x))\n";
  s << "    return x\n";
  l.define(s.str());
}

// ---- The table -------------------------------------------------------------------
struct Entry {
  std::string name, signature, qualname;
  std::function<void(Layer &)> build;
};

std::vector<Entry> make_table() {
  std::vector<Entry> t;
  auto add = [&](const std::string &name, const std::string &args, const std::string &file,
                 std::function<void(Layer &)> f, bool factory = true) {
    std::string sig = "nn::" + name + "(" + args;
    if (factory) sig += std::string(args.empty() ? "" : ", ") + kFactory;
    t.push_back({name, sig + ") -> ()", file + "." + name, std::move(f)});
  };
  add("Linear", "int in_features, int out_features, bool bias=True", "linear", linear);
  add("Bilinear", "int in1_features, int in2_features, int out_features, bool bias=True", "linear",
      bilinear);
  add("Identity", "", "linear", identity, false);
  add("Flatten", "int start_dim=1, int end_dim=-1", "flatten", flatten, false);
  for (int nd = 1; nd <= 3; ++nd) {
    std::string d = std::to_string(nd), ints = "int[" + d + "]";
    add("Conv" + d + "d",
        "int in_channels, int out_channels, " + ints + " kernel_size, " + ints +
            " stride=1, Any? padding=None, " + ints +
            " dilation=1, int groups=1, bool bias=True, str padding_mode=\"zeros\"",
        "conv", [nd](Layer &l) { conv(l, nd, false); });
    add("ConvTranspose" + d + "d",
        "int in_channels, int out_channels, " + ints + " kernel_size, " + ints +
            " stride=1, Any? padding=None, " + ints + " output_padding=0, int groups=1, bool bias=True, " +
            ints + " dilation=1, str padding_mode=\"zeros\"",
        "conv", [nd](Layer &l) { conv(l, nd, true); });
    add("BatchNorm" + d + "d",
        "int num_features, float eps=1e-05, float? momentum=0.1, bool affine=True, bool "
        "track_running_stats=True",
        "batchnorm", [nd](Layer &l) { batch_norm(l, nd); });
    add("MaxPool" + d + "d",
        ints + " kernel_size, " + ints + "? stride=None, " + ints + " padding=0, " + ints +
            " dilation=1, bool return_indices=False, bool ceil_mode=False",
        "pooling", [nd](Layer &l) { max_pool(l, nd); }, false);
    add("AvgPool" + d + "d",
        ints + " kernel_size, " + ints + "? stride=None, " + ints +
            " padding=0, bool ceil_mode=False, bool count_include_pad=True" +
            (nd > 1 ? ", int? divisor_override=None" : ""),
        "pooling", [nd](Layer &l) { avg_pool(l, nd); }, false);
    add("AdaptiveAvgPool" + d + "d", ints + " output_size", "pooling",
        [nd](Layer &l) { adaptive_pool(l, nd, false); }, false);
    add("AdaptiveMaxPool" + d + "d", ints + " output_size, bool return_indices=False", "pooling",
        [nd](Layer &l) { adaptive_pool(l, nd, true); }, false);
  }
  add("LayerNorm", "Any normalized_shape, float eps=1e-05, bool elementwise_affine=True, bool bias=True",
      "normalization", layer_norm);
  add("GroupNorm", "int num_groups, int num_channels, float eps=1e-05, bool affine=True",
      "normalization", group_norm);
  add("Dropout", "float p=0.5, bool inplace=False", "dropout",
      [](Layer &l) { dropout(l, "dropout"); }, false);
  add("AlphaDropout", "float p=0.5, bool inplace=False", "dropout",
      [](Layer &l) { dropout(l, "alpha_dropout"); }, false);
  add("Embedding",
      "int num_embeddings, int embedding_dim, int? padding_idx=None, float? max_norm=None, float "
      "norm_type=2., bool scale_grad_by_freq=False, bool sparse=False",
      "sparse", embedding);
  add("MultiheadAttention",
      "int embed_dim, int num_heads, float dropout=0., bool bias=True, bool add_bias_kv=False, "
      "bool add_zero_attn=False, int? kdim=None, int? vdim=None, bool batch_first=False",
      "activation", multihead_attention);
  add("TransformerEncoderLayer",
      "int d_model, int nhead, int dim_feedforward=2048, float dropout=0.1, Any? activation=None, "
      "float layer_norm_eps=1e-05, bool batch_first=False, bool norm_first=False, bool bias=True",
      "transformer", transformer_encoder_layer);
  const std::string rnn_args =
      "int input_size, int hidden_size, int num_layers=1, bool bias=True, bool batch_first=False, "
      "float dropout=0., bool bidirectional=False";
  add("LSTM", rnn_args + ", int proj_size=0", "rnn", [](Layer &l) { rnn(l, "LSTM"); });
  add("GRU", rnn_args, "rnn", [](Layer &l) { rnn(l, "GRU"); });
  add("RNN",
      "int input_size, int hidden_size, int num_layers=1, str nonlinearity=\"tanh\", bool "
      "bias=True, bool batch_first=False, float dropout=0., bool bidirectional=False",
      "rnn", [](Layer &l) { rnn(l, "RNN"); });
  for (const Activation &act : kActivations) {
    const Activation *ap = &act;
    add(act.name, act.args, "activation", [ap](Layer &l) { activation(l, *ap); }, false);
  }
  add("Softmax", "int? dim=None", "activation", [](Layer &l) { softmax(l, "softmax"); }, false);
  add("LogSoftmax", "int? dim=None", "activation", [](Layer &l) { softmax(l, "log_softmax"); },
      false);
  const std::string legacy = "Any? size_average=None, Any? reduce=None, str reduction=\"mean\"";
  auto loss_of = [](const std::string &k) { return [k](Layer &l) { loss(l, k); }; };
  add("CrossEntropyLoss",
      "Tensor? weight=None, Any? size_average=None, int ignore_index=-100, Any? reduce=None, str "
      "reduction=\"mean\", float label_smoothing=0.",
      "loss", loss_of("CrossEntropyLoss"), false);
  add("NLLLoss",
      "Tensor? weight=None, Any? size_average=None, int ignore_index=-100, Any? reduce=None, str "
      "reduction=\"mean\"",
      "loss", loss_of("NLLLoss"), false);
  add("MSELoss", legacy, "loss", loss_of("MSELoss"), false);
  add("L1Loss", legacy, "loss", loss_of("L1Loss"), false);
  add("SmoothL1Loss", legacy + ", float beta=1.", "loss", loss_of("SmoothL1Loss"), false);
  add("HuberLoss", "str reduction=\"mean\", float delta=1.", "loss",
      [](Layer &l) { loss(l, "HuberLoss"); }, false);
  add("BCELoss", "Tensor? weight=None, " + legacy, "loss", loss_of("BCELoss"), false);
  add("BCEWithLogitsLoss", "Tensor? weight=None, " + legacy + ", Tensor? pos_weight=None", "loss",
      loss_of("BCEWithLogitsLoss"), false);
  add("KLDivLoss", legacy + ", bool log_target=False", "loss", loss_of("KLDivLoss"), false);
  add("CosineEmbeddingLoss", "float margin=0., " + legacy, "loss",
      loss_of("CosineEmbeddingLoss"), false);
  return t;
}

// Containers take modules, not a signature: Sequential(*modules) or
// Sequential(dict), ModuleList(list), ModuleDict(dict).
std::vector<std::pair<std::string, IValue>> container_items(const Layer &l, const std::string &kind,
                                                            const ct_value *const *args, size_t n,
                                                            size_t nkw) {
  if (nkw) ct::raise(CT_ERR_INVALID_ARGUMENT, "%s takes no keyword arguments", l.a.call().c_str());
  std::vector<std::pair<std::string, IValue>> items;
  auto from_dict = [&](const IValue &d) {
    for (const auto &e : d.toGenericDict()) {
      if (!e.key().isString())
        ct::raise(CT_ERR_TYPE, "%s: module names must be str, got %s", l.a.call().c_str(),
                  e.key().type()->str().c_str());
      const std::string &name = e.key().toStringRef();
      if (name.empty() || name.find('.') != std::string::npos)
        ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: module name '%s' is empty or contains \".\"",
                  l.a.call().c_str(), name.c_str());
      items.emplace_back(name, e.value());
    }
  };
  auto from_list = [&](const std::vector<IValue> &v) {
    for (size_t i = 0; i < v.size(); ++i) items.emplace_back(std::to_string(i), v[i]);
  };
  const bool one = n == 1;
  if (kind == "Sequential") {
    if (one && args[0]->v.isGenericDict()) from_dict(args[0]->v);
    else {
      std::vector<IValue> v;
      for (size_t i = 0; i < n; ++i) v.push_back(args[i]->v);
      from_list(v);
    }
  } else if (n > 1) {
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s takes at most 1 argument, got %zu", l.a.call().c_str(), n);
  } else if (one && !args[0]->v.isNone()) {
    const IValue &v = args[0]->v;
    if (kind == "ModuleDict") {
      if (!v.isGenericDict())
        ct::raise(CT_ERR_TYPE, "%s takes a dict of str to modules, got %s", l.a.call().c_str(),
                  v.type()->str().c_str());
      from_dict(v);
    } else {
      if (!v.isList() && !v.isTuple())
        ct::raise(CT_ERR_TYPE, "%s takes a list of modules, got %s", l.a.call().c_str(),
                  v.type()->str().c_str());
      from_list(v.isList() ? v.toListRef().vec() : v.toTupleRef().elements().vec());
    }
  }
  std::set<std::string> seen;
  for (const auto &it : items) {
    (void)module_of(l, it.second, "module '" + it.first + "'");
    if (!seen.insert(it.first).second)
      ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: module name '%s' appears twice", l.a.call().c_str(),
                it.first.c_str());
  }
  return items;
}

const std::vector<Entry> &table() {
  static const std::vector<Entry> t = make_table();
  return t;
}
const c10::FunctionSchema &signature(size_t i) {
  static const std::vector<c10::FunctionSchema> parsed = [] {
    std::vector<c10::FunctionSchema> v;
    for (const Entry &e : table()) v.push_back(parse_signature(e.signature.c_str()));
    return v;
  }();
  return parsed[i];
}
const char *const kContainers[] = {"Sequential", "ModuleList", "ModuleDict"};

torch::jit::Module child_layer(const Layer &parent, const char *name, std::vector<IValue> args,
                               std::vector<std::pair<std::string, IValue>> kw) {
  const auto &t = table();
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].name != name) continue;
    std::vector<ct_value> values;
    values.reserve(args.size() + kw.size());
    std::vector<const ct_value *> pos, kwv;
    std::vector<const char *> kwn;
    for (IValue &v : args) values.push_back(ct_value{std::move(v), nullptr});
    for (auto &k : kw) values.push_back(ct_value{std::move(k.second), nullptr});
    for (size_t j = 0; j < args.size(); ++j) pos.push_back(&values[j]);
    for (size_t j = 0; j < kw.size(); ++j) {
      kwn.push_back(kw[j].first.c_str());
      kwv.push_back(&values[args.size() + j]);
    }
    std::unique_ptr<Args> a;
    if (ct::nn::bind(parent.a.call().c_str(), signature(i), pos.data(), pos.size(), kwn.data(),
             kwv.data(), kwn.size(), &a) != CT_OK)
      ct::raise(ct_last_error_code(), "%s", ct_last_error());
    Layer l(t[i].qualname, *a, parent.opt);
    t[i].build(l);
    return l.m;
  }
  ct::raise(CT_ERR_INTERNAL, "no layer %s", name);
}

}  // namespace
}  // namespace nn
}  // namespace ct

extern "C" {

ct_status ct_module_new_nn(ct_module **out, const char *layer, const ct_value *const *args,
                           size_t n, const char *const *kwnames, const ct_value *const *kwvalues,
                           size_t nkw) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(layer);
    using namespace ct::nn;
    for (const char *c : kContainers) {
      if (std::string(c) != layer) continue;
      if (ct_status st = ct::check_call_args(ct_fn_, args, n, kwnames, kwvalues, nkw)) return st;
      static const c10::FunctionSchema none = parse_signature("nn::container() -> ()");
      Args a(c, none, {});
      Layer l(std::string("container.") + c, a);
      auto items = container_items(l, c, args, n, nkw);
      if (std::string(c) == "Sequential") sequential(l, items);
      else
        for (const auto &it : items) l.child(it.first, torch::jit::Module(it.second.toObject()));
      *out = new ct_module{std::move(l.m), {}};
      return CT_OK;
    }
    const auto &t = table();
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i].name != layer) continue;
      std::unique_ptr<Args> a;
      if (ct_status st = bind(ct_fn_, signature(i), args, n, kwnames, kwvalues, nkw, &a))
        return st;
      Layer l(t[i].qualname, *a);
      t[i].build(l);
      *out = new ct_module{std::move(l.m), {}};
      return CT_OK;
    }
    std::string known;
    for (const auto &e : t) known += (known.empty() ? "" : ", ") + e.name;
    for (const char *c : kContainers) known += std::string(", ") + c;
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: unknown layer '%s' (known: %s)", ct_fn_,
                         layer, known.c_str());
  });
}

ct_status ct_module_nn_layers(ct_value **out) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    c10::impl::GenericDict d(c10::StringType::get(), c10::StringType::get());
    for (const auto &e : ct::nn::table()) d.insert(e.name, e.signature);
    d.insert("Sequential", "nn::Sequential(Module... modules) -> ()");
    d.insert("ModuleList", "nn::ModuleList(Module[]? modules=None) -> ()");
    d.insert("ModuleDict", "nn::ModuleDict(Dict(str, Module)? modules=None) -> ()");
    *out = ct::new_value(d);
    return CT_OK;
  });
}

}  // extern "C"
