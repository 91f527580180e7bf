"""torch.nn.functional's common functions on ctorch tensors, each one
LibTorch operator call with torch's argument names and defaults."""

from typing import Any, Optional

from .. import ops

__all__ = ["linear", "relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax",
           "dropout", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "cosine_embedding_loss", "layer_norm", "embedding"]

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction(reduction: str) -> int:
    try:
        return _REDUCTIONS[reduction]
    except KeyError:
        raise ValueError("{} is not a valid value for reduction".format(reduction)) from None


def linear(input: Any, weight: Any, bias: Any = None) -> Any:
    return ops.aten.linear(input, weight, bias)


def relu(input: Any, inplace: bool = False) -> Any:
    return ops.aten.relu_(input) if inplace else ops.aten.relu(input)


def gelu(input: Any, approximate: str = "none") -> Any:
    return ops.aten.gelu(input, approximate=approximate)


def silu(input: Any, inplace: bool = False) -> Any:
    return ops.aten.silu_(input) if inplace else ops.aten.silu(input)


def sigmoid(input: Any) -> Any:
    return ops.aten.sigmoid(input)


def tanh(input: Any) -> Any:
    return ops.aten.tanh(input)


def softmax(input: Any, dim: int, dtype: Any = None) -> Any:
    return ops.aten.softmax(input, dim, dtype)


def log_softmax(input: Any, dim: int, dtype: Any = None) -> Any:
    return ops.aten.log_softmax(input, dim, dtype)


def dropout(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
    if p < 0.0 or p > 1.0:
        raise ValueError("dropout probability has to be between 0 and 1, but got {}".format(p))
    if inplace:
        return ops.aten.dropout_(input, p, training)
    return ops.aten.dropout(input, p, training)


def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Any:
    return ops.aten.layer_norm(input, list(normalized_shape), weight, bias, eps, True)


def embedding(input: Any, weight: Any, padding_idx: Optional[int] = None) -> Any:
    return ops.aten.embedding(weight, input, -1 if padding_idx is None else padding_idx)


def cross_entropy(input: Any, target: Any, weight: Any = None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Any:
    return ops.aten.cross_entropy_loss(input, target, weight, _reduction(reduction),
                                       ignore_index, label_smoothing)


def nll_loss(input: Any, target: Any, weight: Any = None, ignore_index: int = -100,
             reduction: str = "mean") -> Any:
    return ops.aten.nll_loss_nd(input, target, weight, _reduction(reduction), ignore_index)


def mse_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    a, b = ops.aten.broadcast_tensors([input, target])
    return ops.aten.mse_loss(a, b, _reduction(reduction))


def l1_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    a, b = ops.aten.broadcast_tensors([input, target])
    return ops.aten.l1_loss(a, b, _reduction(reduction))


def smooth_l1_loss(input: Any, target: Any, reduction: str = "mean", beta: float = 1.0) -> Any:
    a, b = ops.aten.broadcast_tensors([input, target])
    if beta == 0.0:
        return ops.aten.l1_loss(a, b, _reduction(reduction))
    return ops.aten.smooth_l1_loss(a, b, _reduction(reduction), beta)


def binary_cross_entropy(input: Any, target: Any, weight: Any = None,
                         reduction: str = "mean") -> Any:
    return ops.aten.binary_cross_entropy(input, target, weight, _reduction(reduction))


def binary_cross_entropy_with_logits(input: Any, target: Any, weight: Any = None,
                                     reduction: str = "mean", pos_weight: Any = None) -> Any:
    return ops.aten.binary_cross_entropy_with_logits(input, target, weight, pos_weight,
                                                     _reduction(reduction))


def kl_div(input: Any, target: Any, reduction: str = "mean", log_target: bool = False) -> Any:
    if reduction == "batchmean":
        out = ops.aten.kl_div(input, target, 2, log_target=log_target)
        return out / input.shape[0] if input.dim() != 0 else out
    return ops.aten.kl_div(input, target, _reduction(reduction), log_target=log_target)


def cosine_embedding_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0,
                          reduction: str = "mean") -> Any:
    return ops.aten.cosine_embedding_loss(input1, input2, target, margin, _reduction(reduction))
