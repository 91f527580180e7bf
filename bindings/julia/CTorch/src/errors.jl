# CTorchError and status checking.

"""
    CTorchError(code, message)

Raised for every failing libctorch call. `code` is the frozen `CT_ERR_*` status
(`CTorch.CT_ERR_TYPE`, ...; names in `CTorch.STATUS_NAMES`); `message` is the
full text of `ct_last_error()` (first line short, C++/TorchScript detail after
it).

When the call failed because Julia code it ran threw (a custom autograd
function, an operator kernel or autograd formula of a `CTorch.Library`; code
`CT_ERR_CALLBACK`, or `CT_ERR_TORCH` through a TorchScript model), `cause` is
that Julia exception and `backtrace` its backtrace (`catch_backtrace()` in the
callback); `showerror` (and so the REPL) prints the callback's frames (the
user's kernel, with file and line) after the message. Both are `nothing`
otherwise.
"""
struct CTorchError <: Exception
    code::Int32
    message::String
    cause::Any
    backtrace::Any
end
CTorchError(code::Integer, message::AbstractString) = CTorchError(Int32(code), String(message), nothing, nothing)

function Base.showerror(io::IO, e::CTorchError)
    print(io, "CTorchError(", get(STATUS_NAMES, e.code, string(e.code)), "): ", e.message)
    e.cause === nothing && return
    if e.backtrace !== nothing
        frames = _callback_frames(e.backtrace)
        if !isempty(frames)
            print(io, "\nJulia stack of the callback's exception (", typeof(e.cause), "):")
            Base.show_backtrace(io, frames)
        end
    end
    if e.cause isa CTorchError && e.cause.cause !== nothing
        print(io, "\n\nwhich was raised by\n")
        showerror(io, e.cause)
    end
    return
end

# The frames of a callback's backtrace above the trampoline that ran it (the
# user's function and what it called); the rest is C and the caller's frames,
# which the CTorchError's own backtrace shows.
const _TRAMPOLINES = (:_kernel_call, :_run_trampoline, :_op_kernel_trampoline,
                      :_op_tensor_kernel_trampoline, :_op_backward_trampoline,
                      :_forward_trampoline, :_backward_trampoline)
function _callback_frames(bt)
    frames = Base.StackTraces.StackFrame[]
    # Looked up one entry at a time, stopping at the trampoline: the C frames
    # below it are never symbolized (slow, and LLVM's DWARF reader may warn).
    try
        for ip in bt
            fs = Base.StackTraces.lookup(ip)
            any(f -> f.func in _TRAMPOLINES, fs) && break
            append!(frames, fs)
        end
    catch
    end
    filter!(f -> !f.from_c, frames)
    # and without the trampoline's own closures (CTorch's files) below the user's frames
    while length(frames) > 1 && startswith(string(frames[end].file), _SRC_DIR)
        pop!(frames)
    end
    return frames
end
const _SRC_DIR = @__DIR__

# The last Julia exception raised in a callback, (exception, backtrace,
# message given to ct_set_error), kept in the calling task's storage
# (callbacks run in the task that called into ctorch) until the failing call
# turns the status into a CTorchError.
const _CALLBACK_ERROR_KEY = :CTorch_callback_error

function _record_callback_error(e, bt, msg::String)
    try
        task_local_storage(_CALLBACK_ERROR_KEY, (e, bt, msg))
    catch
    end
    return nothing
end

# The CTorchError for `status` and `msg` (ct_last_error()), with the recorded
# Julia exception when `msg` carries its message (CT_ERR_CALLBACK, or
# CT_ERR_TORCH when TorchScript called the kernel); a record left by a
# callback whose error went elsewhere is dropped.
function _ctorch_error(status::Int32, msg::String)
    tls = task_local_storage()
    rec = get(tls, _CALLBACK_ERROR_KEY, nothing)
    rec === nothing && return CTorchError(status, msg)
    delete!(tls, _CALLBACK_ERROR_KEY)
    e, bt, m = rec
    occursin(m, msg) || return CTorchError(status, msg)
    return CTorchError(status, msg, e, bt)
end

@noinline function _throw_last_error(status::Int32)
    msg = unsafe_string(ct_last_error())
    _check_warnings()
    throw(_ctorch_error(status, msg))
end

"Throws a `CTorchError` carrying `ct_last_error()` unless `status == CT_OK`; shows LibTorch's warnings."
@inline check(status::Int32) = (status == CT_OK || _throw_last_error(status); _check_warnings(); nothing)

# LibTorch's warnings: libctorch keeps them per thread (ct_warnings_*) instead
# of printing them; CTorch shows them as `@warn` after the call that raised them.
@inline _check_warnings() = (ct_warnings_count() != 0 && _show_warnings(); nothing)
@noinline function _show_warnings()
    n = ct_warnings_count()
    msgs = [unsafe_string(ct_warnings_get(i)) for i in 0:n-1]
    ct_warnings_clear()
    for m in msgs
        @warn "LibTorch: " * m
    end
    return true
end

# Reads and frees a caller-owned C string (char ** out-parameter).
function _take_string(p::Ptr{UInt8})
    p == C_NULL && return nothing
    s = unsafe_string(p)
    ct_free(p)
    return s
end
