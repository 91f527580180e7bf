# Memory that follows the step: `withscope(f)` / `@scoped` free, when the
# block ends, the handle of every Tensor made inside it on this thread,
# except what the block returns and what `keep!` marks. LibTorch's memory
# is invisible to Julia's garbage collector, so results left to it are freed
# late (a 512x64 `exp` cost 475 us through the GC, 30 us freed at once, and
# 600 training steps grew RSS by 371 MiB). Freeing a handle is always safe:
# torch keeps a tensor alive while anything else refers to it (an autograd
# graph, a module, another handle); a freed handle throws when used.

# One stack of scopes per thread (Julia 1.5 tasks do not migrate between
# threads); each scope is the list of tensors made inside it. Sized in
# __init__ (the thread count is the running process's, not precompile's).
const _SCOPES = Vector{Vector{Vector{Any}}}()
# Emptied scope lists kept for reuse, per thread: a new `Any[]` and its first
# `push!` cost more than a small kernel call's C work (~270 ns of ~1 us).
const _SPARE_SCOPES = Vector{Vector{Vector{Any}}}()
function _init_scopes!()
    empty!(_SCOPES); append!(_SCOPES, [Vector{Any}[] for _ in 1:Threads.nthreads()])
    empty!(_SPARE_SCOPES); append!(_SPARE_SCOPES, [Vector{Any}[] for _ in 1:Threads.nthreads()])
    return nothing
end

# A scope list: a spare one (empty, capacity kept) or a new one.
@inline function _take_scope_list()
    spare = _SPARE_SCOPES[Threads.threadid()]
    return isempty(spare) ? sizehint!(Any[], 4) : pop!(spare)
end
# Gives an emptied list back (at most 16 kept per thread; none that grew big).
@inline function _give_scope_list(made::Vector{Any})
    empty!(made)
    spare = _SPARE_SCOPES[Threads.threadid()]
    length(spare) < 16 && push!(spare, made)
    return nothing
end

@inline function _in_scope(x)
    stack = _SCOPES[Threads.threadid()]
    isempty(stack) || push!(stack[end], x)
    return nothing
end

"""
    withscope(f) -> f()'s result
    @scoped expr

Runs `f()` and then frees every `Tensor` handle made inside it on this
thread (by ops, factories, modules, autograd functions' forwards) except
the ones in its result (a `Tensor`, or one inside a returned `Tuple`,
`NamedTuple`, `Array`, `Dict` or `Pair`) and the ones passed to
[`keep!`](@ref). Use it around a training step:

```julia
for step in 1:600
    loss = withscope() do
        l = loss_fn(model(x), y)
        backward(l)
        step!(opt)
        l
    end
end
```

Scopes nest; a tensor kept by an inner scope belongs to the outer one. The
tensors' memory is released when nothing else refers to it (parameters, the
autograd graph and other handles still do).
"""
function withscope(f)
    stack = _SCOPES[Threads.threadid()]
    push!(stack, _take_scope_list())
    result = nothing
    try
        result = f()
    finally
        # Also when f throws: then nothing made inside survives.
        _end_scope!(pop!(stack), result, stack)
    end
    return result
end

function _end_scope!(made::Vector{Any}, result, stack)
    survivors = IdDict{Any,Nothing}()
    _mark_returned!(survivors, result)
    outer = isempty(stack) ? nothing : stack[end]
    for x in made
        if haskey(survivors, x)
            outer === nothing || push!(outer, x)
        else
            _finalize(x)
        end
    end
    isempty(made) || _poll_release_queue()
    _give_scope_list(made)
    return nothing
end

macro scoped(ex)
    return :(withscope(() -> $(esc(ex))))
end

"""
    keep!(t::Tensor) -> t

Keeps `t` when the scopes around it on this thread end (a parameter made
inside a step, a tensor stored in a struct): it is taken out of their lists.
"""
function keep!(t::Tensor)
    for scope in _SCOPES[Threads.threadid()]
        filter!(x -> x !== t, scope)   # identity: a Tensor's == compares elements
    end
    return t
end

_mark_returned!(s, x::Tensor) = (s[x] = nothing; nothing)
_mark_returned!(s, x::Union{Tuple,NamedTuple,AbstractArray,Pair}) =
    (eltype(x) <: Number || foreach(y -> _mark_returned!(s, y), x); nothing)
_mark_returned!(s, x::AbstractDict) = (foreach(y -> _mark_returned!(s, y), values(x)); nothing)
_mark_returned!(s, x) = nothing
