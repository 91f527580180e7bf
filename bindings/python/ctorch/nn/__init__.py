"""ctorch.nn: what torch.nn has that works on tensors ctorch holds
(``ctorch.nn.utils``: gradient clipping). Layers live in TorchScript modules
(``ctorch.load``, ``ctorch.compile_script``)."""

from . import utils

__all__ = ["utils"]
