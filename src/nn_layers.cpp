// torch.nn's layers, losses and containers as TorchScript modules
// (ct_module_new_nn): each layer's constructor signature as a schema, its
// checks with torch.nn's messages, its parameters and buffers registered and
// initialized in torch.nn's order, and its forward as TorchScript source, so
// that a model runs, trains and saves like any module and torch.jit.load
// opens it.
#include "nn_layer.h"

#include "schema.h"

#include <functional>
#include <set>

namespace ct {
namespace nn {

const char *const kFactory = "*, Device? device=None, ScalarType? dtype=None";

namespace {

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

}  // namespace

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
