"""
    CTorch

Julia binding of libctorch, the stable C interface to LibTorch: tensors with
zero-copy array views in both index orders, Julia arrays as tensors without a
copy, TorchScript models, every torch operator by name, and custom autograd
functions written in Julia.

The library is found through `ENV["CTORCH_LIBRARY"]`, else the repository's
`build/` tree, else the system loader (`libctorch`). Start Julia with
`LD_PRELOAD=/lib/x86_64-linux-gnu/libgcc_s.so.1` where Julia links libunwind
(Debian's julia does): CTorch warns at load time when it detects that case.
See bindings/julia/README.md.
"""
module CTorch

using Libdl

export Tensor, CTorchError, Device, BFloat16, ScriptModule, AutogradFunction, FunctionCtx,
       unsafe_array, torch_view, with_array, with_view, free!, release_unused!,
       forward, named_parameters, named_buffers, eval!, train!,
       backward, grad, requires_grad, requires_grad!, zero_grad!, matmul, device,
       save_for_backward!, saved_tensors, ops

include("lib.jl")
include("dtypes.jl")
include("tensor.jl")
include("arrays.jl")
include("values.jl")
include("ops.jl")
include("module.jl")
include("autograd.jl")

const _LOADED = Ref(false)

"`true` once libctorch was found and checked (see `CTorch.library_path()`)."
isloaded() = _LOADED[]

function __init__()
    # First, before anything can throw inside LibTorch: the unwinder check.
    _warn_unwind_pitfall()
    _load_library!() || return
    _resolve_symbols!()
    abi = ct_abi_version()
    if abi != ABI_VERSION
        @error "CTorch: libctorch at $(_LIBPATH[]) has ABI version $abi; this binding needs $(ABI_VERSION)"
        return
    end
    _init_callbacks!()
    _LOADED[] = true
    return nothing
end

end # module
