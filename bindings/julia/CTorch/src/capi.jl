# The raw C API: one Julia function per C function of include/ctorch.h, same
# name, same argument order (`@cfunc`), plus `UNBOUND`, the functions that are
# deliberately not bound and why. Everything else in CTorch calls C through
# these wrappers.
#
# The library path is only known at run time (see library.jl), so every C
# function is called through a function pointer resolved once in `__init__`
# and stored in a `const Ref`. A call costs one load plus an indirect call.

const P = Ptr{Cvoid}

# (symbol, slot) pairs filled by `_resolve_symbols!`.
const _SYMBOLS = Tuple{Symbol,Base.RefValue{Ptr{Cvoid}}}[]

@noinline function _missing_symbol(name::Symbol)
    throw(CTorchError(CT_ERR_NOT_SUPPORTED, "libctorch is not loaded, or $(_LIBPATH[]) does not " *
                                 "export $(name); see the error CTorch logged when it loaded"))
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

"The address of a C function of libctorch, to hand to C as a callback."
_c_address(name::Symbol) = (e = _SYMBOLS[findfirst(e -> e[1] === name, _SYMBOLS)]; e[2][])

# ---- Versions, errors, settings ------------------------------------------
@cfunc ct_version Cstring ()
@cfunc ct_abi_version Int32 ()
@cfunc ct_torch_version Cstring ()
@cfunc ct_last_error Cstring ()
@cfunc ct_last_error_code Int32 ()
@cfunc ct_set_error Int32 (Int32, Cstring)
@cfunc ct_clear_error Cvoid ()
@cfunc ct_warnings_count Csize_t ()
@cfunc ct_warnings_get Cstring (Csize_t,)
@cfunc ct_warnings_clear Cvoid ()
@cfunc ct_free Cvoid (P,)
@cfunc ct_set_cpp_backtraces Cvoid (Int32,)
@cfunc ct_cuda_is_compiled Int32 ()
@cfunc ct_cuda_is_available Int32 ()
@cfunc ct_cuda_device_count Int32 ()
@cfunc ct_cuda_synchronize Int32 (Int32,)
@cfunc ct_get_num_threads Int32 ()
@cfunc ct_set_num_threads Int32 (Int32,)
@cfunc ct_get_num_interop_threads Int32 ()
@cfunc ct_set_num_interop_threads Int32 (Int32,)
@cfunc ct_cpu_fuser_set Int32 (Int32,)
@cfunc ct_cpu_fuser_is_enabled Int32 ()
@cfunc ct_lstm_guard_set Int32 (Int32,)
@cfunc ct_lstm_guard_state Int32 ()
@cfunc ct_lstm_guard_check Int32 (Ptr{Float64},)
@cfunc ct_cuda_current_device Int32 (Ptr{Int32},)
@cfunc ct_cuda_set_device Int32 (Int32,)
@cfunc ct_cuda_current_stream Int32 (Ptr{P}, Int32)
@cfunc ct_cuda_set_stream Int32 (Ptr{P}, Int32, P)
@cfunc ct_cuda_stream_synchronize Int32 (P, Int32)
@cfunc ct_cuda_stream_wait_stream Int32 (P, P, Int32)
@cfunc ct_cuda_empty_cache Int32 ()
@cfunc ct_cuda_manual_seed_all Int32 (UInt64,)
@cfunc ct_cuda_memory_allocated Int32 (Ptr{Csize_t}, Int32)
@cfunc ct_cuda_memory_reserved Int32 (Ptr{Csize_t}, Int32)
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
@cfunc ct_tensor_nbytes Csize_t (P,)
@cfunc ct_tensor_is_pinned Int32 (P,)
@cfunc ct_tensor_pin_memory Int32 (Ptr{P}, P)
@cfunc ct_tensor_to_dlpack Int32 (Ptr{P}, P, Int32, Int64)
@cfunc ct_tensor_to_dlpack_versioned Int32 (Ptr{P}, P, Int32, Int64)
@cfunc ct_tensor_from_dlpack Int32 (Ptr{P}, P)
@cfunc ct_tensor_from_dlpack_versioned Int32 (Ptr{P}, P)
@cfunc ct_tensor_dtype Int32 (P,)
@cfunc ct_tensor_layout Int32 (Ptr{Int32}, P)
@cfunc ct_tensor_device_type Int32 (P,)
@cfunc ct_tensor_device_index Int32 (P,)
@cfunc ct_tensor_data_ptr P (P,)
@cfunc ct_tensor_is_contiguous Int32 (P,)
@cfunc ct_tensor_requires_grad Int32 (P,)
@cfunc ct_tensor_is_defined Int32 (P,)
@cfunc ct_tensor_info_get Int32 (P, P)
@cfunc ct_tensor_defined Int32 (P,)
@cfunc ct_tensor_to_string Int32 (Ptr{Ptr{UInt8}}, P)
@cfunc ct_tensor_equal Int32 (Ptr{Int32}, P, P)
@cfunc ct_tensor_allclose Int32 (Ptr{Int32}, P, P, Cdouble, Cdouble, Int32)

# ---- Dtype support, memory formats, quantized and sparse tensors (raw) -------
@cfunc ct_dtype_is_supported Int32 (Int32,)
@cfunc ct_tensor_is_contiguous_format Int32 (Ptr{Int32}, P, Int32)
@cfunc ct_tensor_contiguous_format Int32 (Ptr{P}, P, Int32)
@cfunc ct_tensor_suggest_memory_format Int32 (Ptr{Int32}, P)
@cfunc ct_tensor_q_scheme Int32 (Ptr{Int32}, P)
@cfunc ct_tensor_q_scale Int32 (Ptr{Cdouble}, P)
@cfunc ct_tensor_q_zero_point Int32 (Ptr{Int64}, P)
@cfunc ct_tensor_q_per_channel_scales Int32 (Ptr{P}, P)
@cfunc ct_tensor_q_per_channel_zero_points Int32 (Ptr{P}, P)
@cfunc ct_tensor_q_per_channel_axis Int32 (Ptr{Int64}, P)
@cfunc ct_tensor_int_repr Int32 (Ptr{P}, P)
@cfunc ct_tensor_dequantize Int32 (Ptr{P}, P)
@cfunc ct_tensor_quantize_per_tensor Int32 (Ptr{P}, P, Cdouble, Int64, Int32)
@cfunc ct_tensor_quantize_per_channel Int32 (Ptr{P}, P, P, P, Int64, Int32)
@cfunc ct_tensor_make_per_tensor_quantized Int32 (Ptr{P}, P, Cdouble, Int64)
@cfunc ct_tensor_make_per_channel_quantized Int32 (Ptr{P}, P, P, P, Int64)
@cfunc ct_tensor_sparse_indices Int32 (Ptr{P}, P)
@cfunc ct_tensor_sparse_values Int32 (Ptr{P}, P)
@cfunc ct_tensor_sparse_compressed_indices Int32 (Ptr{P}, P)
@cfunc ct_tensor_sparse_plain_indices Int32 (Ptr{P}, P)
@cfunc ct_tensor_to_dense Int32 (Ptr{P}, P)
@cfunc ct_value_object_class Int32 (Ptr{Ptr{UInt8}}, P)
@cfunc ct_value_object_state Int32 (Ptr{P}, P)
@cfunc ct_value_object_args Int32 (Ptr{P}, P)

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
@cfunc ct_value_from_module Int32 (Ptr{P}, P)
@cfunc ct_value_dict_get Int32 (Ptr{P}, P, P)
@cfunc ct_value_dict_get_str Int32 (Ptr{P}, P, Cstring)
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
@cfunc ct_pickle_verify Int32 (Cstring,)
@cfunc ct_pickle_load_buffer Int32 (Ptr{P}, P, Csize_t)
@cfunc ct_pickle_save_buffer Int32 (Ptr{P}, Ptr{Csize_t}, P)

# ---- Modules and scripts ----------------------------------------------------
@cfunc ct_module_load Int32 (Ptr{P}, Cstring, Int32, Int32)
@cfunc ct_module_verify Int32 (Cstring,)
@cfunc ct_module_load_buffer Int32 (Ptr{P}, Ptr{UInt8}, Csize_t, Int32, Int32)
@cfunc ct_module_free Cvoid (P,)
@cfunc ct_module_forward Int32 (Ptr{P}, P, Ptr{P}, Csize_t)
@cfunc ct_module_forward_tensors Int32 (Ptr{P}, Csize_t, Ptr{Csize_t}, P, Cstring, Ptr{P}, Csize_t)
@cfunc ct_module_method_results Int32 (Ptr{Int32}, Ptr{Int64}, P, Cstring)
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
@cfunc ct_module_save_buffer Int32 (Ptr{P}, Ptr{Csize_t}, P, P)
@cfunc ct_module_extra_files Int32 (Ptr{P}, P)
@cfunc ct_module_named_attributes Int32 (Ptr{P}, P, Int32)
@cfunc ct_module_optimize_for_inference Int32 (Ptr{P}, P)
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
@cfunc ct_op_call_tensors_values Int32 (Ptr{P}, Csize_t, P, Ptr{P}, Csize_t, Ptr{P}, Csize_t)
@cfunc ct_op_num_returns Int32 (Ptr{Csize_t}, P, Csize_t)
@cfunc ct_op_num_arguments Int32 (Ptr{Csize_t}, P, Csize_t)
@cfunc ct_op_argument Int32 (Ptr{Ptr{UInt8}}, Ptr{Ptr{UInt8}}, Ptr{Ptr{UInt8}}, Ptr{Int32}, P, Csize_t, Csize_t)
@cfunc ct_op_return Int32 (Ptr{Ptr{UInt8}}, Ptr{Ptr{UInt8}}, P, Csize_t, Csize_t)
@cfunc ct_op_tensors_only Int32 (Ptr{Int32}, P, Csize_t)
@cfunc ct_op_call_name Int32 (Ptr{P}, Cstring, Ptr{P}, Csize_t, Ptr{Ptr{UInt8}}, Ptr{P}, Csize_t)


"""
    CTorch.UNBOUND

Functions of include/ctorch.h that CTorch deliberately does not bind, with the
reason (a test checks that every other header function has a `@cfunc`).
"""
const UNBOUND = Dict{String,String}(
    "ct_tensor_from_blob" =>
        "its deleter is a C function pointer that torch may call on any thread, and Julia " *
        "before 1.9 cannot be entered from a foreign thread; Tensor(A) uses " *
        "ct_tensor_from_blob_queued (the release queue) instead",
    "ct_op_register" =>
        "the kernel is a C callback that TorchScript may run on its own (inter-op) threads, " *
        "which Julia before 1.9 cannot be entered from; register custom ops in C/C++ and " *
        "load them with CTorch.load_library")
