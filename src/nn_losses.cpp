// torch.nn's loss modules for ct_module_new_nn (CrossEntropyLoss, NLLLoss,
// MSELoss, L1Loss, SmoothL1Loss, HuberLoss, BCELoss, BCEWithLogitsLoss,
// KLDivLoss, CosineEmbeddingLoss), as torch.nn.functional computes them.
#include "nn_layer.h"

namespace ct {
namespace nn {

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


}  // namespace nn
}  // namespace ct
