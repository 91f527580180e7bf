"""Optimizers as torch.optim has them: ``SGD``, ``Adam``, ``AdamW``, ``RMSprop``,
``Adagrad`` (C: ct_optimizer_*), with torch's options, parameter groups and
state_dict layout, so that a state saved here (``ctorch.save_pickle``) is what
``torch.optim``'s ``load_state_dict`` takes, and the reverse. LR schedules are
in ``ctorch.optim.lr_scheduler``.

    opt = ctorch.optim.Adam(model.parameters(), lr=1e-3)
    loss.backward(); opt.step(); opt.zero_grad()
"""

from ctypes import byref, c_double, c_size_t, c_void_p
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional

from .. import _release
from .._misc import enable_grad
from .._lib import C, G, check
from .._values import from_value, to_value, free_values

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]


def _tensor_array(params: List[Any]) -> Any:
    from ctypes import c_void_p as P
    return (P * len(params))(*[t._ptr() for t in params])


def _options_value(options: Dict[str, Any]) -> Any:
    """(handle, owned list) of a Dict[str, Any] value of options."""
    if not options:
        return None, []
    p, owned = to_value(dict(options))
    return p, [p] if owned else []


class ParamGroup(dict):  # type: ignore[type-arg]
    """One parameter group: a dict whose writes go to the optimizer
    (``group["lr"] = 0.01`` changes the rate of the next step)."""

    def __init__(self, opt: "Optimizer", index: int) -> None:
        super().__init__()
        self._opt, self._index = opt, index
        self._refresh()

    def _refresh(self) -> None:
        out = c_void_p()
        check(G.optimizer_options(byref(out), self._opt._ptr(), self._index))
        dict.clear(self)
        dict.update(self, from_value(out.value))
        out = c_void_p()
        check(G.optimizer_params(byref(out), self._opt._ptr(), self._index))
        dict.__setitem__(self, "params", list(from_value(out.value)))

    def __setitem__(self, name: str, value: Any) -> None:
        if name == "params":
            raise KeyError("a group's parameters cannot be replaced")
        if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
            check(G.optimizer_set_double(self._opt._ptr(), self._index, name.encode(),
                                         float(value)))
            value = float(value)
        else:
            p, owned = to_value(value)
            try:
                check(G.optimizer_set(self._opt._ptr(), self._index, name.encode(), p))
            finally:
                if owned:
                    free_values([p])
        dict.__setitem__(self, name, value)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for k, v in dict(*args, **kwargs).items():
            self[k] = v

    def setdefault(self, name: str, value: Any = None) -> Any:
        if name not in self:
            self[name] = value
        return self[name]


class Optimizer(_release.Handle):
    """Base of the optimizers: ``Adam(params, lr=..., ...)`` where params is an
    iterable of tensors or of dicts (parameter groups with their own options,
    ``{"params": [...], "lr": 0.1}``), as in torch."""

    __slots__ = ("_p", "_groups", "defaults", "__weakref__")
    _algorithm = ""
    _free_c = G.optimizer_free
    _handle_kind = "optimizer"
    _no_copy = "save its state_dict() (save_pickle) and load_state_dict() into a new one"

    def __init__(self, params: Any, **options: Any) -> None:
        self._p = None
        self._groups: List[ParamGroup] = []
        if hasattr(params, "_ptr"):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got a Tensor")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        first = dict(groups[0])
        ps = list(first.pop("params"))
        if not ps:
            raise ValueError("optimizer got an empty parameter list")
        ov, owned = _options_value(options)
        try:
            out = c_void_p()
            check(G.optimizer_new(byref(out), self._algorithm.encode(), _tensor_array(ps),
                                  len(ps), ov))
            self._p = out.value
        finally:
            free_values(owned)
        self._groups.append(ParamGroup(self, 0))
        self.defaults = {k: v for k, v in self._groups[0].items() if k != "params"}
        if first:
            self._groups[0].update(first)
        for g in groups[1:]:
            self.add_param_group(g)

    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        """Adds a group: {"params": tensors, option: value, ...}; options it
        does not set are the constructor's."""
        g = dict(param_group)
        ps = g.pop("params")
        ps = [ps] if hasattr(ps, "_ptr") else list(ps)
        ov, owned = _options_value(g)
        try:
            check(G.optimizer_add_param_group(self._ptr(), _tensor_array(ps), len(ps), ov))
        finally:
            free_values(owned)
        self._groups.append(ParamGroup(self, len(self._groups)))

    @property
    def param_groups(self) -> List[ParamGroup]:
        return self._groups

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient. closure (as in
        torch): re-evaluates the model and returns the loss, run first with
        grad enabled."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        check(C.optimizer_step(self._ptr()))
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        check(G.optimizer_zero_grad(self._ptr(), 1 if set_to_none else 0))

    def state_dict(self) -> Dict[str, Any]:
        """torch.optim's layout: {"state": {index: {...}}, "param_groups":
        [{options..., "params": [index, ...]}]}; the state tensors are the
        optimizer's own (clone what you keep; save_pickle copies)."""
        out = c_void_p()
        check(G.optimizer_state_dict(byref(out), self._ptr()))
        return from_value(out.value)  # type: ignore[no-any-return]

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Loads a state from state_dict() here or torch.optim's (for example
        ``ctorch.load_pickle`` of a torch.save'd one); the state is copied."""
        p, owned = to_value(state_dict)
        try:
            check(G.optimizer_load_state_dict(self._ptr(), p))
        finally:
            if owned:
                free_values([p])
        for g in self._groups:
            g._refresh()

    @property
    def state(self) -> Dict[Any, Dict[str, Any]]:
        """{parameter: its state dict}, as torch's optimizer.state (read only)."""
        packed = self.state_dict()["state"]
        params = [p for g in self._groups for p in g["params"]]
        return {params[i]: s for i, s in packed.items()}

    def __repr__(self) -> str:
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self._groups):
            lines.append("Parameter Group %d" % i)
            for k in sorted(g):
                if k != "params":
                    lines.append("    %s: %r" % (k, g[k]))
        return "\n".join(lines) + "\n)"


def _make(name: str, algorithm: str, doc: str) -> type:
    return type(name, (Optimizer,), {"__slots__": (), "_algorithm": algorithm, "__doc__": doc})


SGD = _make("SGD", "sgd", "torch.optim.SGD: lr=1e-3, momentum=0, dampening=0, "
            "weight_decay=0, nesterov=False, maximize=False.")
Adam = _make("Adam", "adam", "torch.optim.Adam: lr=1e-3, betas=(0.9, 0.999), eps=1e-8, "
             "weight_decay=0, amsgrad=False, maximize=False, decoupled_weight_decay=False.")
AdamW = _make("AdamW", "adamw", "torch.optim.AdamW: lr=1e-3, betas=(0.9, 0.999), eps=1e-8, "
              "weight_decay=1e-2, amsgrad=False, maximize=False.")
RMSprop = _make("RMSprop", "rmsprop", "torch.optim.RMSprop: lr=1e-2, alpha=0.99, eps=1e-8, "
                "weight_decay=0, momentum=0, centered=False, maximize=False.")
Adagrad = _make("Adagrad", "adagrad", "torch.optim.Adagrad: lr=1e-2, lr_decay=0, "
                "weight_decay=0, initial_accumulator_value=0, eps=1e-10, maximize=False.")

from . import lr_scheduler  # noqa: E402
