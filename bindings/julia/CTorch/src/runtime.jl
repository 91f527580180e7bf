# Runtime controls: backend flags and float32 matmul precision
# (ct_backend_flag_*), random generators (ct_generator_*), and the CUDA
# allocator statistics, events and graphs. Without a CUDA device the CUDA
# ones throw CTorchError(CT_ERR_NOT_SUPPORTED).

const BACKEND_FLAGS = (cudnn_enabled = 0, cudnn_benchmark = 1, cudnn_deterministic = 2,
    cudnn_allow_tf32 = 3, matmul_allow_tf32 = 4, matmul_allow_fp16_reduction = 5,
    matmul_allow_bf16_reduction = 6, deterministic_algorithms = 7,
    deterministic_warn_only = 8, mkldnn_enabled = 9, sdpa_flash = 10, sdpa_math = 11,
    sdpa_mem_efficient = 12, sdpa_cudnn = 13)

_flag_code(name::Symbol) = haskey(BACKEND_FLAGS, name) ? Int32(BACKEND_FLAGS[name]) :
    throw(CTorchError(CT_ERR_INVALID_ARGUMENT, "unknown backend flag :$name (one of $(join(keys(BACKEND_FLAGS), ", ")))"))

"""
    backend_flag(:cudnn_benchmark) -> Bool
    backend_flag!(:cudnn_benchmark, true)

torch's process-wide backend switches (`torch.backends.cudnn.benchmark`, ...);
the names are the keys of `CTorch.BACKEND_FLAGS`.
"""
backend_flag(name::Symbol) = (r = Ref{Int32}(0); check(ct_backend_flag(r, _flag_code(name))); r[] == 1)
backend_flag!(name::Symbol, value::Bool) = (check(ct_set_backend_flag(_flag_code(name), Int32(value))); value)

"`\"highest\"`, `\"high\"` or `\"medium\"` (`torch.get_float32_matmul_precision`)."
float32_matmul_precision() = (r = Ref{Ptr{UInt8}}(C_NULL); check(ct_float32_matmul_precision(r)); unsafe_string(r[]))
float32_matmul_precision!(p::AbstractString) = (check(ct_set_float32_matmul_precision(String(p))); p)

"""
    Generator(; device = :cpu)      a generator of its own (`torch.Generator`)
    default_generator(; device = :cpu)

Random generators: `manual_seed!(g, seed)`, `seed!(g)`, `initial_seed(g)`,
`get_state(g)` (a `Tensor{UInt8}`, torch.Generator.get_state()'s bytes) and
`set_state!(g, state)`. Pass one to an op as `generator = g`.
"""
function Generator(; device::Symbol = :cpu, index::Integer = -1)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(ct_generator_new(out, _gen_device(device), Int32(index)))
    return Generator(Val(:own), out[])
end

function default_generator(; device::Symbol = :cpu, index::Integer = -1)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(ct_generator_default(out, _gen_device(device), Int32(index)))
    return Generator(Val(:own), out[])
end

_gen_device(d::Symbol) = d === :cpu ? Int32(CT_DEVICE_CPU) : d === :cuda ? Int32(CT_DEVICE_CUDA) :
    throw(CTorchError(CT_ERR_INVALID_ARGUMENT, "generators are for :cpu or :cuda, not :$d"))

manual_seed!(g::Generator, seed::Integer) = (check(ct_generator_manual_seed(g, seed % UInt64)); g)
seed!(g::Generator) = (r = Ref{UInt64}(0); check(ct_generator_seed(r, g)); r[])
initial_seed(g::Generator) = (r = Ref{UInt64}(0); check(ct_generator_initial_seed(r, g)); r[])
get_state(g::Generator) = (out = Ref{Ptr{Cvoid}}(C_NULL); check(ct_generator_state(out, g)); _tensor(out[]))
set_state!(g::Generator, state::Tensor) = (check(ct_generator_set_state(g, state)); g)
set_state!(g::Generator, state::AbstractVector{UInt8}) = set_state!(g, Tensor(Vector{UInt8}(state)))

_new_value(g::Generator) = @_newvalue ct_value_from_generator(out, g)

# ---- CUDA: allocator statistics, pool streams, events, graphs -------------------

cuda_max_memory_allocated(device::Integer = -1) = (r = Ref{Csize_t}(0); check(ct_cuda_max_memory_allocated(r, Int32(device))); Int(r[]))
cuda_max_memory_reserved(device::Integer = -1) = (r = Ref{Csize_t}(0); check(ct_cuda_max_memory_reserved(r, Int32(device))); Int(r[]))
cuda_reset_peak_memory_stats(device::Integer = -1) = check(ct_cuda_reset_peak_memory_stats(Int32(device)))
"`Dict{String,Int}` with torch.cuda.memory_stats()'s keys."
cuda_memory_stats(device::Integer = -1) = (out = Ref{Ptr{Cvoid}}(C_NULL); check(ct_cuda_memory_stats(out, Int32(device))); from_value(out[]))
cuda_set_memory_fraction(fraction::Real, device::Integer = -1) = check(ct_cuda_set_memory_fraction(Int32(device), Float64(fraction)))
"A `cudaStream_t` from torch's pool (as `torch.cuda.Stream()`)."
cuda_stream_from_pool(device::Integer = -1; high_priority::Bool = false) =
    (r = Ref{Ptr{Cvoid}}(C_NULL); check(ct_cuda_stream_from_pool(r, Int32(device), Int32(high_priority))); r[])

"`CUDAEvent(; timing=false)`: `record!(e[, stream])`, `synchronize(e)`, `isdone(e)`, `elapsed_ms(start, stop)`."
CUDAEvent(; timing::Bool = false) = (out = Ref{Ptr{Cvoid}}(C_NULL); check(ct_cuda_event_new(out, Int32(timing))); CUDAEvent(Val(:own), out[]))
record!(e::CUDAEvent, stream::Ptr{Cvoid} = C_NULL) = (check(ct_cuda_event_record(e, stream)); e)
synchronize(e::CUDAEvent) = check(ct_cuda_event_synchronize(e))
isdone(e::CUDAEvent) = (r = Ref{Int32}(0); check(ct_cuda_event_query(r, e)); r[] == 1)
elapsed_ms(start::CUDAEvent, stop::CUDAEvent) = (r = Ref{Float64}(0); check(ct_cuda_event_elapsed_ms(r, start, stop)); r[])

"""
    g = CUDAGraph()
    capture(g) do ... end    # the CUDA work inside is captured, not run
    replay(g)

A CUDA graph (`torch.cuda.CUDAGraph`); `reset!(g)` drops the capture.
"""
CUDAGraph() = (out = Ref{Ptr{Cvoid}}(C_NULL); check(ct_cuda_graph_new(out)); CUDAGraph(Val(:own), out[]))
function capture(f, g::CUDAGraph; device::Integer = -1)
    check(ct_cuda_graph_capture_begin(g, Int32(device)))
    try
        return f()
    finally
        check(ct_cuda_graph_capture_end(g))
    end
end
replay(g::CUDAGraph) = check(ct_cuda_graph_replay(g))
reset!(g::CUDAGraph) = (check(ct_cuda_graph_reset(g)); g)
