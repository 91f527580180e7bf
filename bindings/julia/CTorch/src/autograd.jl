# Autograd: gradients, and custom autograd functions written in Julia.

"Sets `requires_grad` in place; returns `t`."
requires_grad!(t::Tensor, on::Bool = true) = (check(ct_tensor_set_requires_grad(t, Int32(on))); t)

"""
    backward(t; grad=nothing, retain_graph=false, create_graph=false)

`t.backward(grad)`. CPU backward runs on the calling thread, including Julia
custom functions' backward callbacks. An error raised in a Julia callback
comes back as a `CTorchError` with code `CT_ERR_CALLBACK` whose message
contains the Julia exception (`e.cause`, with its backtrace: `showerror`
prints the callback's frames).
"""
function backward(t::Tensor; grad::Union{Nothing,Tensor} = nothing, retain_graph::Bool = false,
                  create_graph::Bool = false)
    st = GC.@preserve grad ct_tensor_backward(t, grad === nothing ? C_NULL : Base.unsafe_convert(P, grad),
                                              Int32(retain_graph), Int32(create_graph))
    st == CT_OK || _throw_callback_aware(st)
    return nothing
end

"`t.grad`: a Tensor, or `nothing` when there is no gradient."
function grad(t::Tensor)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(ct_tensor_grad(out, t))
    return out[] == C_NULL ? nothing : _tensor(out[])
end
"Sets `t.grad` (`nothing` clears it)."
function grad!(t::Tensor, g::Union{Nothing,Tensor})
    GC.@preserve g check(ct_tensor_set_grad(t, g === nothing ? C_NULL : Base.unsafe_convert(P, g)))
    return t
end
"Zeroes `t.grad` in place if it exists."
zero_grad!(t::Tensor) = (check(ct_tensor_zero_grad(t)); t)
is_leaf(t::Tensor) = ct_tensor_is_leaf(t) == 1
"Name of the autograd node that made `t` (\"AddBackward0\"), or `nothing` for leaves."
function grad_fn_name(t::Tensor)
    out = Ref{Ptr{UInt8}}(C_NULL)
    check(ct_tensor_grad_fn_name(out, t))
    return _take_string(out[])
end

"""
    autograd_grad(outputs, inputs; grad_outputs=nothing, retain_graph=false,
                  create_graph=false, allow_unused=false) -> Vector

`torch.autograd.grad`: the gradients of `outputs` with respect to `inputs`
(a `Tensor` or `nothing` for unused inputs when `allow_unused=true`).
"""
function autograd_grad(outputs, inputs; grad_outputs = nothing, retain_graph::Bool = false,
                       create_graph::Bool = false, allow_unused::Bool = false)
    outs = outputs isa Tensor ? Tensor[outputs] : Tensor[o for o in outputs]
    ins = inputs isa Tensor ? Tensor[inputs] : Tensor[i for i in inputs]
    op = P[Base.unsafe_convert(P, o) for o in outs]
    ip = P[Base.unsafe_convert(P, i) for i in ins]
    gos = grad_outputs === nothing ? nothing :
          grad_outputs isa Tensor ? Any[grad_outputs] : collect(Any, grad_outputs)
    gp = gos === nothing ? P[] : P[g === nothing ? C_NULL : Base.unsafe_convert(P, g) for g in gos]
    res = fill(C_NULL, length(ins))
    st = GC.@preserve outs ins gos ct_autograd_grad(res, op, length(op), ip, length(ip),
                                                   gos === nothing ? C_NULL : pointer(gp),
                                                   Int32(retain_graph), Int32(create_graph),
                                                   Int32(allow_unused))
    st == CT_OK || _throw_callback_aware(st)
    return Any[p == C_NULL ? nothing : _tensor(p) for p in res]
end

# ---- Custom autograd functions ----------------------------------------------------

"""
    FunctionCtx

The `ctx` handed to a custom function's `forward(ctx, inputs...)` and
`backward(ctx, grad_outputs...)`, as in PyTorch:

- `save_for_backward!(ctx, tensors...)` / `saved_tensors(ctx)`: tensors for
  backward (stored detached, which keeps the graph free of reference cycles;
  double backward through saved tensors is therefore not supported).
- `ctx.needs_input_grad`: one `Bool` per input.
- `ctx.data`: a `Dict{Symbol,Any}` for anything else (sizes, constants...).
"""
mutable struct FunctionCtx
    saved::Vector{Tensor}
    needs_input_grad::Vector{Bool}
    data::Dict{Symbol,Any}
end
save_for_backward!(ctx::FunctionCtx, ts::Tensor...) = (append!(ctx.saved, [detach(t) for t in ts]); nothing)
saved_tensors(ctx::FunctionCtx) = Tuple(ctx.saved)

mutable struct _FnState
    forward::Any
    backward::Any
    ctx::FunctionCtx
    idbuf::Vector{Int64}    # memory of the marker tensor: holds our id
end

function _state_of(ctx::Ptr{Cvoid})
    p = ct_tensor_data_ptr(ctx)
    id = UInt(unsafe_load(Ptr{Int64}(p)))
    return lock(_ROOTS_LOCK) do
        _ROOTS[id]::_FnState
    end
end

function _callback_failed(e, bt)
    msg = try
        "Julia exception in custom autograd function: " * sprint(showerror, e)
    catch
        "Julia exception in custom autograd function (message unavailable)"
    end
    msg = replace(msg, '\0' => ' ')
    _record_callback_error(e, bt, msg)
    return ct_set_error(CT_ERR_CALLBACK, msg)
end

@noinline function _throw_callback_aware(st::Int32)
    msg = unsafe_string(ct_last_error())
    throw(_ctorch_error(st, msg))
end

_borrowed_tensor(p::Ptr{Cvoid}) =
    (p == C_NULL || ct_tensor_is_defined(p) == 0) ? nothing : (@_newtensor ct_tensor_ref(out, p))

function _store_new_handle!(slots::Ptr{Ptr{Cvoid}}, i::Int, t)
    if t === nothing
        unsafe_store!(slots, C_NULL, i)
    else
        t isa Tensor || throw(ArgumentError("expected a Tensor or nothing, got $(typeof(t))"))
        out = Ref{Ptr{Cvoid}}(C_NULL)
        check(ct_tensor_ref(out, t))
        unsafe_store!(slots, out[], i)
    end
end

# Both trampolines: every result slot starts NULL; `run(state)` calls the
# user's function and returns one Tensor (or `nothing`) per slot, which get
# new handles. A Julia exception becomes CT_ERR_CALLBACK.
function _run_trampoline(run, ctx::Ptr{Cvoid}, slots::Ptr{Ptr{Cvoid}}, n::Csize_t)::Int32
    try
        for i in 1:Int(n)
            unsafe_store!(slots, C_NULL, i)
        end
        results = run(_state_of(ctx))
        for i in 1:Int(n)
            _store_new_handle!(slots, i, results[i])
        end
        return CT_OK
    catch e
        return _callback_failed(e, catch_backtrace())
    end
end

_borrowed_tensors(handles::Ptr{Ptr{Cvoid}}, n::Csize_t) =
    [_borrowed_tensor(unsafe_load(handles, i)) for i in 1:Int(n)]

function _forward_trampoline(ctx::Ptr{Cvoid}, inputs::Ptr{Ptr{Cvoid}}, n_in::Csize_t,
                             outputs::Ptr{Ptr{Cvoid}}, n_out::Csize_t)::Int32
    return _run_trampoline(ctx, outputs, n_out) do st
        res = st.forward(st.ctx, _borrowed_tensors(inputs, n_in)...)
        outs = res isa Tensor ? (res,) : Tuple(res)
        length(outs) == n_out ||
            throw(ArgumentError("forward returned $(length(outs)) tensors, expected $(Int(n_out))"))
        for o in outs
            o isa Tensor || throw(ArgumentError("forward must return Tensors, got $(typeof(o))"))
        end
        return outs
    end
end

function _backward_trampoline(ctx::Ptr{Cvoid}, grad_outputs::Ptr{Ptr{Cvoid}}, n_out::Csize_t,
                              grad_inputs::Ptr{Ptr{Cvoid}}, n_in::Csize_t)::Int32
    return _run_trampoline(ctx, grad_inputs, n_in) do st
        res = st.backward(st.ctx, _borrowed_tensors(grad_outputs, n_out)...)
        gins = (res isa Tensor || res === nothing) ? (res,) : Tuple(res)
        length(gins) == n_in ||
            throw(ArgumentError("backward returned $(length(gins)) gradients, expected $(Int(n_in)) (one per input)"))
        return gins
    end
end

const _FWD_CFUNC = Ref{Ptr{Cvoid}}(C_NULL)
const _BWD_CFUNC = Ref{Ptr{Cvoid}}(C_NULL)

function _init_callbacks!()
    # the C signatures come from the header (capi_generated.jl's macros)
    _FWD_CFUNC[] = @ct_autograd_forward_fn(_forward_trampoline)
    _BWD_CFUNC[] = @ct_autograd_backward_fn(_backward_trampoline)
end

"""
    AutogradFunction(forward, backward; name="JuliaFunction", n_outputs=1)

A custom autograd function whose `forward(ctx, inputs...)` and
`backward(ctx, grad_outputs...)` are Julia functions (usually working on
zero-copy views, `unsafe_array`/`torch_view`), applied with
`ct_autograd_function_apply`. Call it on tensors: `y = f(x)` (a tuple when
`n_outputs > 1`).

- `forward` runs with grad mode off and returns `n_outputs` tensors that torch
  owns (allocate them with `CTorch.empty_like`, `clone`, ... then fill them
  from Julia). Returning an input itself is not allowed: return a clone.
- `backward` gets one gradient per output (`nothing` where torch has none) and
  returns one per input (`nothing` for "no gradient").
- Threads: for CPU tensors both callbacks run on the calling Julia thread
  (`backward` runs inside `CTorch.backward` / `autograd_grad`). For CUDA
  tensors torch runs backward on its own device thread, which Julia before 1.9
  cannot be entered from, so applying to CUDA tensors is refused there.
- A Julia exception inside a callback never unwinds through C: it becomes
  `ct_set_error(CT_ERR_CALLBACK, message)` and is raised again as a
  `CTorchError` by the call that ran the callback (apply or backward), with
  the Julia exception as `e.cause` and its backtrace (`showerror` prints the
  frames of `forward`/`backward`).
- Under `autocast(:cpu)` an input made by an autocast op (linear, matmul,
  conv) arrives as `BFloat16`, parameters as they are (`Float32`): cast in
  `forward` (see the README, "Custom layers in Julia").
- No closure crosses into C: ctorch gets a small marker tensor as `ctx`, whose
  release (through the release queue) un-roots the Julia state.
"""
struct AutogradFunction
    forward::Any
    backward::Any
    name::String
    n_outputs::Int
end
AutogradFunction(forward, backward; name::AbstractString = "JuliaFunction", n_outputs::Integer = 1) =
    AutogradFunction(forward, backward, String(name), Int(n_outputs))

(f::AutogradFunction)(inputs::Tensor...) =
    apply_function(f.forward, f.backward, inputs...; name = f.name, n_outputs = f.n_outputs)

"""
    apply_function(forward, backward, inputs::Tensor...; name="JuliaFunction", n_outputs=1)

Applies a custom autograd function once (see [`AutogradFunction`](@ref)).
"""
function apply_function(forward, backward, inputs::Tensor...; name::AbstractString = "JuliaFunction",
                        n_outputs::Integer = 1)
    if VERSION < v"1.9" && any(t -> iscuda(device(t)), inputs)
        throw(CTorchError(CT_ERR_NOT_SUPPORTED, "custom autograd functions on CUDA tensors need Julia >= 1.9: torch runs " *
                                    "their backward on its own device thread, which Julia $(VERSION) cannot be " *
                                    "called from"))
    end
    _poll_release_queue()
    ctx = FunctionCtx(Tensor[], Bool[requires_grad(t) for t in inputs], Dict{Symbol,Any}())
    state = _FnState(forward, backward, ctx, Int64[0])
    id = _root!(state)
    state.idbuf[1] = Int64(id)
    # The marker tensor: its memory is state.idbuf; ctorch frees its handle with
    # ct_tensor_free when the graph node is destroyed (any thread, pure C),
    # which queues `id` for release.
    marker = Ref{Ptr{Cvoid}}(C_NULL)
    sizes = Int64[1]
    st = GC.@preserve state ct_tensor_from_blob_queued(marker, pointer(state.idbuf), sizes, 1, C_NULL,
                                                       CT_INT64, CT_DEVICE_CPU, Int32(-1), Ptr{Cvoid}(id))
    if st != CT_OK
        _unroot!(id)
        _throw_last_error(st)
    end
    outs = fill(C_NULL, n_outputs)
    ins = P[Base.unsafe_convert(P, t) for t in inputs]
    st = GC.@preserve inputs ct_autograd_function_apply(outs, n_outputs, ins, length(ins), name,
                                                        _FWD_CFUNC[], _BWD_CFUNC[], marker[],
                                                        _c_address(:ct_tensor_free))
    st == CT_OK || _throw_callback_aware(st)
    res = [_tensor(p) for p in outs]
    return n_outputs == 1 ? res[1] : Tuple(res)
end
