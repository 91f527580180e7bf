"""
    CTorch

Julia binding of libctorch, the stable C interface to LibTorch: tensors with
zero-copy array views in both index orders, Julia arrays as tensors without a
copy, TorchScript models, every torch operator by name, custom autograd
functions and operators in torch's dispatcher (`CTorch.Library`) written in Julia,
torch.nn's layers (`CTorch.nn`).

A CPU `Tensor` is an `AbstractArray` in torch's index order (`size(t)` is
torch's shape, `t[i,j]` is torch's `t[i-1,j-1]`).

The library is found in this order (`CTorch.library_candidates()`, and
`CTorch.library_info()` says which was used): `ENV["CTORCH_LIBRARY"]`; the
library of the `ctorch` Python package of the `python3` on PATH (`pip install
libctorch`); the system's (ldconfig, pkg-config: the Debian package); the
repository's `build*/` trees; the system loader. Each must have this binding's
ABI version. Start Julia with the repository's `scripts/julia` (it preloads
libgcc_s and a compatible libunwind where Debian's julia needs them); where they
are missing, `using CTorch` refuses to load and prints the command that works
(`CTorch.safe_command()`). See bindings/julia/README.md.
"""
module CTorch

using Libdl

export Tensor, CTorchError, Device, BFloat16, ScriptModule, AutogradFunction, FunctionCtx,
       unsafe_array, torch_view, with_array, with_view, free!, release_unused!,
       forward, named_parameters, named_buffers, eval!, train!,
       backward, grad, requires_grad, requires_grad!, zero_grad!, matmul, device,
       save_for_backward!, saved_tensors, ops, Value, Script, Generator,
       withscope, @scoped, keep!, Optimizer, step!, autocast, nn

include("capi.jl")
include("errors.jl")
include("library.jl")
include("handles.jl")
include("scope.jl")
include("dtypes.jl")
include("tensor.jl")
include("arrays.jl")
include("show.jl")
include("values.jl")
include("ops.jl")
include("broadcast.jl")
include("wrappers.jl")       # reshape(t, :), view, PermutedDimsArray, ... of a Tensor are Tensors
include("module.jl")
include("autograd.jl")
include("oplibrary.jl")
include("package.jl")
include("runtime.jl")
include("optim.jl")
include("schedstate.jl")     # schedulers' state_dict / load_state_dict!
include("nn.jl")            # CTorch.nn: torch.nn's layers and init; params, load_state_dict!, ...
include("distributed.jl")   # CTorch.Distributed: stores, process groups, collectives, DDP
include("docstrings.jl")    # docstrings of one-liners and aliases

const _LOADED = Ref(false)

"`true` once libctorch was found and checked (see `CTorch.library_path()`)."
isloaded() = _LOADED[]

function __init__()
    # First, before anything can throw inside LibTorch: the unwinder check.
    _check_unwind_pitfall()
    _load_library!() || return   # also checks the ABI version
    _resolve_symbols!() || return
    _init_callbacks!()
    _init_op_callbacks!()
    _LOADED[] = true
    return nothing
end

include("precompile.jl")   # last: inference of the common methods, cached in the .ji

end # module
