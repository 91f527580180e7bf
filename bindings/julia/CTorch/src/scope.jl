# Memory that follows the step: `withscope(f)` / `@scoped` free, when the
# block ends, the handle of every Tensor made inside it by this task,
# except what the block returns and what `keep!` marks. LibTorch's memory
# is invisible to Julia's garbage collector, so results left to it are freed
# late (a 512x64 `exp` cost 475 us through the GC, 30 us freed at once, and
# 600 training steps grew RSS by 371 MiB). Freeing a handle is always safe:
# torch keeps a tensor alive while anything else refers to it (an autograd
# graph, a module, another handle); a freed handle throws when used.

# One stack of scopes per task, in the task's own storage
# (`task_local_storage()`): a task keeps its scopes when it yields and, on
# Julia >= 1.7, when it moves to another thread in the middle of a scope;
# thread ids are not used (interactive threads have ids above `nthreads()`).
# Each scope is the list of tensors made inside it; `spare` holds emptied
# lists for reuse: a new `Any[]` and its first `push!` cost more than a small
# kernel call's C work (~270 ns of ~1 us). Nothing is shared between tasks,
# so no lock; a finished task's lists go with it to the garbage collector.
mutable struct _TaskScopes
    stack::Vector{Vector{Any}}
    spare::Vector{Vector{Any}}
end
const _SCOPES_KEY = :CTorch_scopes

@inline function _task_scopes()::_TaskScopes
    tls = task_local_storage()
    s = get(tls, _SCOPES_KEY, nothing)
    s === nothing || return s::_TaskScopes
    return _new_task_scopes!(tls)
end
@noinline _new_task_scopes!(tls) =
    (tls[_SCOPES_KEY] = _TaskScopes(Vector{Any}[], Vector{Any}[]))::_TaskScopes

# Open scopes in all tasks: with none, `_in_scope` needs no lookup (a task
# only ever opens its own scopes, so a zero read by it is never stale for it).
const _OPEN_SCOPES = Threads.Atomic{Int}(0)

# A scope list: a spare one (empty, capacity kept) or a new one.
@inline function _take_scope_list(ts::_TaskScopes = _task_scopes())
    return isempty(ts.spare) ? sizehint!(Any[], 4) : pop!(ts.spare)
end
# Gives an emptied list back (at most 16 kept per task; none that grew big).
@inline function _give_scope_list(made::Vector{Any}, ts::_TaskScopes = _task_scopes())
    empty!(made)
    length(ts.spare) < 16 && push!(ts.spare, made)
    return nothing
end

@inline function _in_scope(x)
    _OPEN_SCOPES[] == 0 && return nothing
    stack = _task_scopes().stack
    isempty(stack) || push!(stack[end], x)
    return nothing
end

# Pushes a new scope on this task's stack; `_pop_scope!` takes it off.
@inline function _push_scope!(ts::_TaskScopes = _task_scopes())
    made = _take_scope_list(ts)
    push!(ts.stack, made)
    Threads.atomic_add!(_OPEN_SCOPES, 1)
    return made
end
@inline function _pop_scope!(ts::_TaskScopes, made::Vector{Any})
    popped = !isempty(ts.stack) && ts.stack[end] === made
    popped && pop!(ts.stack)
    Threads.atomic_sub!(_OPEN_SCOPES, 1)
    return popped
end

"""
    withscope(f) -> f()'s result
    @scoped expr

Runs `f()` and then frees every `Tensor` handle made inside it by this
task (by ops, factories, modules, autograd functions' forwards) except
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

Scopes nest; a tensor kept by an inner scope belongs to the outer one.
Scopes belong to the task that opens them: the block may yield (I/O,
`sleep`, a `Channel`) and resume on another thread, other tasks' tensors
never enter it, and tasks started inside it (`@async`, `Threads.@spawn`)
keep their own scopes (give them a `withscope` of their own). The
tensors' memory is released when nothing else refers to it (parameters, the
autograd graph and other handles still do).
"""
function withscope(f)
    ts = _task_scopes()
    made = _push_scope!(ts)
    result = nothing
    try
        result = f()
    finally
        # Also when f throws: then nothing made inside survives.
        _pop_scope!(ts, made)
        _end_scope!(made, result, ts)
    end
    return result
end

function _end_scope!(made::Vector{Any}, result, ts::_TaskScopes)
    survivors = IdDict{Any,Nothing}()
    _mark_returned!(survivors, result)
    outer = isempty(ts.stack) ? nothing : ts.stack[end]
    for x in made
        if haskey(survivors, x)
            outer === nothing || push!(outer, x)
        else
            _finalize(x)
        end
    end
    isempty(made) || _poll_release_queue()
    _give_scope_list(made, ts)
    return nothing
end

macro scoped(ex)
    return :(withscope(() -> $(esc(ex))))
end

"""
    keep!(t::Tensor) -> t

Keeps `t` when the scopes around it in this task end (a parameter made
inside a step, a tensor stored in a struct): it is taken out of their lists.
"""
function keep!(t::Tensor)
    for scope in _task_scopes().stack
        filter!(x -> x !== t, scope)   # identity: a Tensor's == compares elements
    end
    return t
end

_mark_returned!(s, x::Tensor) = (s[x] = nothing; nothing)
_mark_returned!(s, x::Union{Tuple,NamedTuple,AbstractArray,Pair}) =
    (eltype(x) <: Number || foreach(y -> _mark_returned!(s, y), x); nothing)
_mark_returned!(s, x::AbstractDict) = (foreach(y -> _mark_returned!(s, y), values(x)); nothing)
_mark_returned!(s, x) = nothing
