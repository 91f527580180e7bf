// torch.nn's sequence layers for ct_module_new_nn: LSTM, GRU and RNN (over
// torch.lstm/gru/rnn_*), MultiheadAttention (F.multi_head_attention_forward's
// steps) and TransformerEncoderLayer.
#include "nn_layer.h"

namespace ct {
namespace nn {

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


}  // namespace nn
}  // namespace ct
