# Low-level layer: locating libctorch, resolving its symbols, raw ccall
# wrappers (one Julia function per C function, same name, same argument
# order), status checking.
#
# The library path is only known at run time (ENV["CTORCH_LIBRARY"], the
# repository's build tree, or the system loader), so every C function is
# called through a function pointer resolved once in `__init__` and stored in
# a `const Ref`. A call costs one load plus an indirect call.

const P = Ptr{Cvoid}

# (symbol, slot) pairs filled by `_resolve_symbols!`.
const _SYMBOLS = Tuple{Symbol,Base.RefValue{Ptr{Cvoid}}}[]

@noinline function _missing_symbol(name::Symbol)
    throw(CTorchError(Int32(10), "libctorch at $(_LIBPATH[]) does not export $(name) " *
                                 "(library older than this binding?)"))
end

"""
    @cfunc name RetType (ArgTypes...)

Declares the raw wrapper `name(args...) = ccall(<resolved name>, RetType, (ArgTypes...), args...)`.
"""
macro cfunc(name, ret, argtypes)
    fp = Symbol("_fp_", name)
    n = length(argtypes.args)
    args = [Symbol("a", i) for i in 1:n]
    quote
        const $(esc(fp)) = Ref{Ptr{Cvoid}}(C_NULL)
        push!(_SYMBOLS, ($(QuoteNode(name)), $(esc(fp))))
        @inline function $(esc(name))($(args...))
            p = $(esc(fp))[]
            p == C_NULL && _missing_symbol($(QuoteNode(name)))
            ccall(p, $(esc(ret)), $(esc(argtypes)), $(args...))
        end
    end
end

# ---- Versions, errors, settings ------------------------------------------
@cfunc ct_version Cstring ()
@cfunc ct_abi_version Int32 ()
@cfunc ct_torch_version Cstring ()
@cfunc ct_last_error Cstring ()
@cfunc ct_last_error_code Int32 ()
@cfunc ct_set_error Int32 (Int32, Cstring)
@cfunc ct_clear_error Cvoid ()
@cfunc ct_free Cvoid (P,)
@cfunc ct_set_cpp_backtraces Cvoid (Int32,)
@cfunc ct_cuda_is_compiled Int32 ()
@cfunc ct_cuda_is_available Int32 ()
@cfunc ct_cuda_device_count Int32 ()
@cfunc ct_cuda_synchronize Int32 (Int32,)
@cfunc ct_get_num_threads Int32 ()
@cfunc ct_set_num_threads Int32 (Int32,)
@cfunc ct_manual_seed Int32 (UInt64,)
@cfunc ct_load_library Int32 (Cstring,)
@cfunc ct_grad_mode_set Cvoid (Int32,)
@cfunc ct_grad_mode_is_enabled Int32 ()
@cfunc ct_inference_mode_push Int32 (Int32,)
@cfunc ct_inference_mode_pop Int32 ()
@cfunc ct_inference_mode_is_enabled Int32 ()
@cfunc ct_dtype_element_size Csize_t (Int32,)
@cfunc ct_dtype_name Cstring (Int32,)
@cfunc ct_device_type_name Cstring (Int32,)

# ---- Tensors ----------------------------------------------------------------
for f in (:ct_tensor_empty, :ct_tensor_zeros, :ct_tensor_ones, :ct_tensor_rand, :ct_tensor_randn)
    @eval @cfunc $f Int32 (Ptr{P}, Ptr{Int64}, Csize_t, Int32, Int32, Int32, Int32)
end
@cfunc ct_tensor_full Int32 (Ptr{P}, Ptr{Int64}, Csize_t, Cdouble, Int32, Int32, Int32, Int32)
@cfunc ct_tensor_arange Int32 (Ptr{P}, Cdouble, Cdouble, Cdouble, Int32, Int32, Int32, Int32)
@cfunc ct_tensor_eye Int32 (Ptr{P}, Int64, Int64, Int32, Int32, Int32, Int32)
@cfunc ct_tensor_from_data Int32 (Ptr{P}, P, Ptr{Int64}, Csize_t, Int32, Int32, Int32)
@cfunc ct_tensor_from_blob_queued Int32 (Ptr{P}, P, Ptr{Int64}, Csize_t, Ptr{Int64}, Int32, Int32, Int32, P)
@cfunc ct_release_queue_poll Int32 (Ptr{P}, Csize_t, Ptr{Csize_t})
@cfunc ct_release_queue_length Csize_t ()
@cfunc ct_tensor_free Cvoid (P,)
@cfunc ct_tensor_ref Int32 (Ptr{P}, P)
@cfunc ct_tensor_clone Int32 (Ptr{P}, P)
@cfunc ct_tensor_detach Int32 (Ptr{P}, P)
@cfunc ct_tensor_contiguous Int32 (Ptr{P}, P)
@cfunc ct_tensor_to Int32 (Ptr{P}, P, Int32, Int32, Int32, Int32, Int32)
@cfunc ct_tensor_copy_ Int32 (P, P, Int32)
@cfunc ct_tensor_fill_ Int32 (P, Cdouble)
@cfunc ct_tensor_ndim Int64 (P,)
@cfunc ct_tensor_sizes Ptr{Int64} (P,)
@cfunc ct_tensor_strides Ptr{Int64} (P,)
@cfunc ct_tensor_numel Int64 (P,)
@cfunc ct_tensor_size Int32 (Ptr{Int64}, P, Int64)
@cfunc ct_tensor_stride Int32 (Ptr{Int64}, P, Int64)
@cfunc ct_tensor_storage_offset Int64 (P,)
@cfunc ct_tensor_element_size Csize_t (P,)
@cfunc ct_tensor_dtype Int32 (P,)
@cfunc ct_tensor_device_type Int32 (P,)
@cfunc ct_tensor_device_index Int32 (P,)
@cfunc ct_tensor_data_ptr P (P,)
@cfunc ct_tensor_is_contiguous Int32 (P,)
@cfunc ct_tensor_requires_grad Int32 (P,)
@cfunc ct_tensor_is_defined Int32 (P,)
@cfunc ct_tensor_to_string Int32 (Ptr{Ptr{UInt8}}, P)
@cfunc ct_tensor_equal Int32 (Ptr{Int32}, P, P)
@cfunc ct_tensor_allclose Int32 (Ptr{Int32}, P, P, Cdouble, Cdouble, Int32)

# ---- Autograd ---------------------------------------------------------------
@cfunc ct_tensor_set_requires_grad Int32 (P, Int32)
@cfunc ct_tensor_backward Int32 (P, P, Int32, Int32)
@cfunc ct_tensor_grad Int32 (Ptr{P}, P)
@cfunc ct_tensor_set_grad Int32 (P, P)
@cfunc ct_tensor_zero_grad Int32 (P,)
@cfunc ct_tensor_is_leaf Int32 (P,)
@cfunc ct_tensor_grad_fn_name Int32 (Ptr{Ptr{UInt8}}, P)
@cfunc ct_autograd_grad Int32 (Ptr{P}, Ptr{P}, Csize_t, Ptr{P}, Csize_t, Ptr{P}, Int32, Int32, Int32)
@cfunc ct_autograd_function_apply Int32 (Ptr{P}, Csize_t, Ptr{P}, Csize_t, Cstring, P, P, P, P)

# ---- Values -----------------------------------------------------------------
@cfunc ct_value_free Cvoid (P,)
@cfunc ct_value_tag Int32 (P,)
@cfunc ct_value_ref Int32 (Ptr{P}, P)
@cfunc ct_value_none Int32 (Ptr{P},)
@cfunc ct_value_from_bool Int32 (Ptr{P}, Int32)
@cfunc ct_value_from_int Int32 (Ptr{P}, Int64)
@cfunc ct_value_from_double Int32 (Ptr{P}, Cdouble)
@cfunc ct_value_from_string Int32 (Ptr{P}, Ptr{UInt8}, Csize_t)
@cfunc ct_value_from_tensor Int32 (Ptr{P}, P)
@cfunc ct_value_from_device Int32 (Ptr{P}, Int32, Int32)
@cfunc ct_value_list Int32 (Ptr{P}, Ptr{P}, Csize_t)
@cfunc ct_value_int_list Int32 (Ptr{P}, Ptr{Int64}, Csize_t)
@cfunc ct_value_double_list Int32 (Ptr{P}, Ptr{Cdouble}, Csize_t)
@cfunc ct_value_bool_list Int32 (Ptr{P}, Ptr{Int32}, Csize_t)
@cfunc ct_value_tensor_list Int32 (Ptr{P}, Ptr{P}, Csize_t)
@cfunc ct_value_tuple Int32 (Ptr{P}, Ptr{P}, Csize_t)
@cfunc ct_value_dict Int32 (Ptr{P}, Ptr{P}, Ptr{P}, Csize_t)
@cfunc ct_value_to_bool Int32 (Ptr{Int32}, P)
@cfunc ct_value_to_int Int32 (Ptr{Int64}, P)
@cfunc ct_value_to_double Int32 (Ptr{Cdouble}, P)
@cfunc ct_value_to_string Int32 (Ptr{Ptr{UInt8}}, Ptr{Csize_t}, P)
@cfunc ct_value_to_tensor Int32 (Ptr{P}, P)
@cfunc ct_value_to_device Int32 (Ptr{Int32}, Ptr{Int32}, P)
@cfunc ct_value_to_module Int32 (Ptr{P}, P)
@cfunc ct_value_len Int32 (Ptr{Csize_t}, P)
@cfunc ct_value_get Int32 (Ptr{P}, P, Csize_t)
@cfunc ct_value_dict_item Int32 (Ptr{P}, Ptr{P}, P, Csize_t)
@cfunc ct_value_to_repr Int32 (Ptr{Ptr{UInt8}}, P)
@cfunc ct_value_type_str Int32 (Ptr{Ptr{UInt8}}, P)
@cfunc ct_pickle_load Int32 (Ptr{P}, Cstring)
@cfunc ct_pickle_save Int32 (P, Cstring)

# ---- Modules and scripts ----------------------------------------------------
@cfunc ct_module_load Int32 (Ptr{P}, Cstring, Int32, Int32)
@cfunc ct_module_load_buffer Int32 (Ptr{P}, Ptr{UInt8}, Csize_t, Int32, Int32)
@cfunc ct_module_free Cvoid (P,)
@cfunc ct_module_forward Int32 (Ptr{P}, P, Ptr{P}, Csize_t)
@cfunc ct_module_call Int32 (Ptr{P}, P, Cstring, Ptr{P}, Csize_t, Ptr{Ptr{UInt8}}, Ptr{P}, Csize_t)
@cfunc ct_module_methods Int32 (Ptr{P}, P)
@cfunc ct_module_named_parameters Int32 (Ptr{P}, P, Int32)
@cfunc ct_module_named_buffers Int32 (Ptr{P}, P, Int32)
@cfunc ct_module_named_children Int32 (Ptr{P}, P, Int32)
@cfunc ct_module_get_attr Int32 (Ptr{P}, P, Cstring)
@cfunc ct_module_set_attr Int32 (P, Cstring, P)
@cfunc ct_module_to Int32 (P, Int32, Int32, Int32, Int32)
@cfunc ct_module_train Int32 (P, Int32)
@cfunc ct_module_eval Int32 (P,)
@cfunc ct_module_is_training Int32 (P,)
@cfunc ct_module_clone Int32 (Ptr{P}, P)
@cfunc ct_module_save Int32 (P, Cstring, P)
@cfunc ct_module_freeze Int32 (Ptr{P}, P)
@cfunc ct_module_new Int32 (Ptr{P}, Cstring)
@cfunc ct_module_register_parameter Int32 (P, Cstring, P, Int32)
@cfunc ct_module_register_buffer Int32 (P, Cstring, P)
@cfunc ct_module_register_module Int32 (P, Cstring, P)
@cfunc ct_module_define Int32 (P, Cstring)
@cfunc ct_script_compile Int32 (Ptr{P}, Cstring)
@cfunc ct_script_free Cvoid (P,)
@cfunc ct_script_functions Int32 (Ptr{P}, P)
@cfunc ct_script_call Int32 (Ptr{P}, P, Cstring, Ptr{P}, Csize_t, Ptr{Ptr{UInt8}}, Ptr{P}, Csize_t)

# ---- Operators ----------------------------------------------------------------
@cfunc ct_op_find Int32 (Ptr{P}, Cstring, Cstring)
@cfunc ct_op_free Cvoid (P,)
@cfunc ct_op_list Int32 (Ptr{P},)
@cfunc ct_op_num_overloads Csize_t (P,)
@cfunc ct_op_schema Int32 (Ptr{Ptr{UInt8}}, P, Csize_t)
@cfunc ct_op_call Int32 (Ptr{P}, P, Ptr{P}, Csize_t, Ptr{Ptr{UInt8}}, Ptr{P}, Csize_t)
@cfunc ct_op_call_tensors Int32 (Ptr{P}, Csize_t, P, Ptr{P}, Csize_t)
@cfunc ct_op_num_returns Int32 (Ptr{Csize_t}, P, Csize_t)
@cfunc ct_op_num_arguments Int32 (Ptr{Csize_t}, P, Csize_t)
@cfunc ct_op_argument Int32 (Ptr{Ptr{UInt8}}, Ptr{Ptr{UInt8}}, Ptr{Ptr{UInt8}}, Ptr{Int32}, P, Csize_t, Csize_t)
@cfunc ct_op_return Int32 (Ptr{Ptr{UInt8}}, Ptr{Ptr{UInt8}}, P, Csize_t, Csize_t)
@cfunc ct_op_call_name Int32 (Ptr{P}, Cstring, Ptr{P}, Csize_t, Ptr{Ptr{UInt8}}, Ptr{P}, Csize_t)

# ---- Errors -------------------------------------------------------------------

const STATUS_NAMES = Dict{Int32,String}(
    0 => "CT_OK", 1 => "CT_ERR_INVALID_ARGUMENT", 2 => "CT_ERR_TYPE", 3 => "CT_ERR_INDEX",
    4 => "CT_ERR_NOT_FOUND", 5 => "CT_ERR_IO", 6 => "CT_ERR_OUT_OF_MEMORY",
    7 => "CT_ERR_NOT_SUPPORTED", 8 => "CT_ERR_TORCH", 9 => "CT_ERR_CALLBACK",
    10 => "CT_ERR_INTERNAL")

"""
    CTorchError(code, message)

Raised for every failing libctorch call. `code` is the frozen `CT_ERR_*` status
number (see `CTorch.STATUS_NAMES`); `message` is the full text of
`ct_last_error()` (first line short, C++/TorchScript detail after it).
"""
struct CTorchError <: Exception
    code::Int32
    message::String
end

function Base.showerror(io::IO, e::CTorchError)
    print(io, "CTorchError(", get(STATUS_NAMES, e.code, string(e.code)), "): ", e.message)
end

@noinline function _throw_last_error(status::Int32)
    throw(CTorchError(status, unsafe_string(ct_last_error())))
end

"Throws a `CTorchError` carrying `ct_last_error()` unless `status == CT_OK`."
@inline check(status::Int32) = (status == 0 || _throw_last_error(status); nothing)

# Reads and frees a caller-owned C string (char ** out-parameter).
function _take_string(p::Ptr{UInt8})
    p == C_NULL && return nothing
    s = unsafe_string(p)
    ct_free(p)
    return s
end

# ---- Locating and loading the library ----------------------------------------

const _LIBPATH = Ref{String}("")
const _LIBHANDLE = Ref{Ptr{Cvoid}}(C_NULL)
const ABI_VERSION = Int32(1)   # CTORCH_ABI_VERSION this binding was written against

const PRELOAD_FIX = "LD_PRELOAD=/lib/x86_64-linux-gnu/libgcc_s.so.1"

"""
    CTorch.library_candidates()

Where `CTorch` looks for libctorch, in order: `ENV["CTORCH_LIBRARY"]`, the
repository's `build/` tree (`<repo>/build/libctorch.so`), then the system
loader (`libctorch`).
"""
function library_candidates()
    c = String[]
    p = get(ENV, "CTORCH_LIBRARY", "")
    isempty(p) || return [p]          # explicit choice: nothing else is tried
    repo = normpath(joinpath(@__DIR__, "..", "..", "..", ".."))
    push!(c, joinpath(repo, "build", "libctorch.so"))
    push!(c, "libctorch")
    return c
end

function _load_library!()
    errs = String[]
    for cand in library_candidates()
        if cand != "libctorch" && !isfile(cand)
            push!(errs, "$cand: no such file")
            continue
        end
        h = Libdl.dlopen(cand, Libdl.RTLD_LAZY | Libdl.RTLD_LOCAL; throw_error = false)
        if h === nothing || h == C_NULL
            push!(errs, "$cand: dlopen failed")
            continue
        end
        _LIBHANDLE[] = h
        _LIBPATH[] = cand == "libctorch" ? something(Libdl.dlpath(h), cand) : abspath(cand)
        return true
    end
    @error "CTorch: libctorch not found; set ENV[\"CTORCH_LIBRARY\"] to the path of libctorch.so" tried = errs
    return false
end

function _resolve_symbols!()
    h = _LIBHANDLE[]
    for (name, slot) in _SYMBOLS
        p = Libdl.dlsym(h, name; throw_error = false)
        slot[] = p === nothing ? C_NULL : p
    end
end

"""
    CTorch.library_path()

The path of the libctorch this session loaded.
"""
library_path() = _LIBPATH[]

# ---- The libunwind pitfall -------------------------------------------------------
#
# Debian's julia links the system libunwind.so.8, which also exports
# `_Unwind_RaiseException`. If the process-wide definition comes from libunwind
# rather than libgcc_s, every C++ `throw` inside LibTorch (even one that ctorch
# catches a few frames up) ends in std::terminate: a bare SIGABRT. Preloading
# libgcc_s makes its definition win.

"""
    CTorch.unwinder_library()

The shared object that provides the process-wide `_Unwind_RaiseException`
(the one C++ `throw` uses), or `nothing` if it cannot be determined.
"""
function unwinder_library()
    p = ccall(:dlsym, Ptr{Cvoid}, (Ptr{Cvoid}, Cstring), C_NULL, "_Unwind_RaiseException")
    p == C_NULL && return nothing
    info = Ref{NTuple{4,Ptr{Cvoid}}}((C_NULL, C_NULL, C_NULL, C_NULL))
    ok = ccall(:dladdr, Cint, (Ptr{Cvoid}, Ptr{NTuple{4,Ptr{Cvoid}}}), p, info)
    (ok == 0 || info[][1] == C_NULL) && return nothing
    return unsafe_string(Ptr{UInt8}(info[][1]))
end

"""
    CTorch.unwind_pitfall()

`true` when C++ exceptions would abort this process: the `_Unwind_RaiseException`
in use comes from libunwind (not libgcc_s). Falls back to checking
`Libdl.dllist()` for libunwind and `ENV["LD_PRELOAD"]` for libgcc_s.
"""
function unwind_pitfall()
    lib = try
        unwinder_library()
    catch
        nothing
    end
    if lib !== nothing
        return occursin("libunwind", basename(lib))
    end
    has_unwind = any(l -> occursin("libunwind", basename(l)), Libdl.dllist())
    preload_ok = occursin("libgcc_s", get(ENV, "LD_PRELOAD", ""))
    return has_unwind && !preload_ok
end

# Second pitfall (Debian 11's julia 1.5.3 on Debian 12): the system libunwind
# 1.6 makes Julia's *own* exceptions segfault when they unwind through
# JIT-compiled code. Heuristic: Julia < 1.6 using the system libunwind.so.8
# while dpkg says libunwind8 is 1.4 or newer.
function julia_exceptions_unsafe()
    VERSION >= v"1.6" && return false
    libs = filter(l -> occursin("libunwind.so.8", l), Libdl.dllist())
    isempty(libs) && return false
    real = realpath(first(libs))
    startswith(real, "/usr/lib/") || startswith(real, "/lib/") || return false
    status = "/var/lib/dpkg/status"
    isfile(status) || return false
    ver = nothing
    open(status) do io
        inpkg = false
        for line in eachline(io)
            if startswith(line, "Package: ")
                inpkg = line == "Package: libunwind8"
            elseif inpkg && startswith(line, "Version: ")
                ver = line[10:end]
                break
            end
        end
    end
    ver === nothing && return false
    m = match(r"^(\d+)\.(\d+)", ver)
    m === nothing && return false
    return (parse(Int, m[1]), parse(Int, m[2])) >= (1, 4)
end

function _warn_unwind_pitfall()
    if julia_exceptions_unsafe()
        @warn "CTorch: this julia $(VERSION) uses the system libunwind (libunwind8 >= 1.4), with which " *
              "a Julia exception thrown through compiled code crashes the process (segfault), " *
              "so errors from libctorch could not be caught. Preload the libunwind julia was built " *
              "against (bindings/julia/get-libunwind.sh DIR), e.g.\n    " * PRELOAD_FIX *
              ":DIR/libunwind.so.8 julia ..."
    end
    unwind_pitfall() || return false
    @warn "CTorch: this Julia process resolves C++ exception unwinding to libunwind (" *
          something(unwinder_library(), "libunwind") * "), not libgcc_s. Any error raised " *
          "inside LibTorch (a bad file, a shape mismatch, ...) will then abort the whole " *
          "process with SIGABRT instead of becoming a CTorchError. Fix: start Julia with\n" *
          "    " * PRELOAD_FIX * " julia ...\n(see bindings/julia/README.md)."
    return true
end
