# Precompilation: the methods a first script uses (load a model, run it, ops,
# broadcasts, reductions, Array, printing, autograd, an optimizer step), for
# the common element types and ranks, inferred while the package is
# precompiled and cached in its .ji, so a fresh `julia` process does not infer
# them again at first use. Julia 1.5 has no PrecompileTools; plain
# `precompile(f, argtypes)` statements work there and on current Julia. The
# list came from `julia --trace-compile=FILE` over such a script (what is
# compiled at run time), generalised over types. Only inference is cached:
# nothing here calls libctorch (the library is loaded in __init__).
# Measured in bench/bench_julia.jl ("time to first forward", and the "first
# call:" rows: first show, first training step).

function _precompile_kw(f, kw::NamedTuple, argtypes::Tuple)
    precompile(Core.kwfunc(f), (typeof(kw), typeof(f), argtypes...))
end

function _precompile_()
    ccall(:jl_generating_output, Cint, ()) == 1 || return nothing
    Bc{F,A} = Broadcast.Broadcasted{TensorStyle,Nothing,F,A}
    # The Tensor{T,N} constructors behind every result (_tensor).
    for T in (Float32, Float64, Int64, Bool), N in 0:4
        precompile(_MAKERS[dtype_code(T)][N+1], (Ptr{Cvoid},))
    end
    precompile(__init__, ())
    precompile(_tensor, (Ptr{Cvoid},))
    for f in (op, _split_op_name, load, ScriptModule)
        precompile(f, (String,))
    end
    _precompile_kw(load, (device = :cpu,), (String,))
    precompile(save, (ScriptModule, String))
    precompile(define!, (ScriptModule, String))
    precompile(eval!, (ScriptModule,))
    precompile(named_parameters, (ScriptModule,))
    precompile(_finalize, (ScriptModule,))
    precompile(getproperty, (OpsRoot, Symbol))
    precompile(getproperty, (OpNamespace, Symbol))
    precompile(ct_op_find, (Base.RefValue{Ptr{Cvoid}}, String, String))
    precompile(ct_op_find, (Base.RefValue{Ptr{Cvoid}}, String, Cstring))
    for x in (Int64, Float64, Float32, Bool, String, Vector{Int64}, Symbol, Nothing)
        precompile(_new_value, (x,))
    end
    precompile(from_value, (Ptr{Cvoid},))
    for f in (rand, randn, zeros, ones, empty), n in 1:4
        precompile(f, ntuple(_ -> Int, n))
    end
    for T in (Float32, Float64, Int64, Bool), N in 0:2
        TT = Tensor{T,N}
        precompile(_finalize, (TT,))
        precompile(_tensor_like, (Ptr{Cvoid}, TT))
        precompile(Array, (TT,))
        precompile(unsafe_array, (Type{T}, TT))
        precompile(unsafe_array, (TT,))
        precompile(torch_view, (TT,))
        precompile(size, (TT,))
        precompile(strides, (TT,))
        precompile(item, (TT,))
        precompile(_number, (TT,))
        precompile(collect, (TT,))
        precompile(sum, (TT,))
        precompile(maximum, (TT,))
        precompile(minimum, (TT,))
        precompile(prod, (TT,))
        precompile(mean, (TT,))
        precompile(==, (TT, TT))
        precompile(_with_eltype, (TT, Type{T}))
        precompile(_bc_result, (TT, Type{T}))
        precompile(_new_value, (TT,))
        precompile(_call_raw, (Ptr{Cvoid}, Tuple{TT}))
        precompile(_call_raw, (Ptr{Cvoid}, Tuple{TT,TT}))
        precompile(_call_tensors1, (Ptr{Cvoid}, Tuple{TT,TT}))
        precompile(_call_tensors1, (Ptr{Cvoid}, Tuple{TT}))
        N >= 1 && precompile(getindex, (TT, ntuple(_ -> Int, N)...))
        N >= 1 && precompile(setindex!, (TT, T, ntuple(_ -> Int, N)...))
        if N >= 1
            for f in (sum, maximum, minimum, mean)
                _precompile_kw(f, (dims = 1,), (TT,))
            end
        end
        T === Float32 || T === Float64 || continue
        A = Array{T,N}
        precompile(Tensor, (A,))
        precompile(tensor, (A,))
        precompile(requires_grad!, (TT,))
        precompile(requires_grad!, (TT, Bool))
        precompile(grad, (TT,))
        precompile(zero_grad!, (TT,))
        precompile(backward, (TT,))
        precompile(clone, (TT,))
        precompile(detach, (TT,))
        precompile(call_tensor, (Op, TT))
        precompile(call_tensor, (Op, TT, TT))
        precompile(-, (TT,))
        for S in (Int64, T)
            precompile(*, (TT, S)); precompile(*, (S, TT)); precompile(/, (TT, S))
        end
        for f in (+, -)
            precompile(f, (TT, TT))
        end
        precompile(matmul, (TT, TT))
        precompile(Tuple{Op,TT})
        precompile(Tuple{Op,TT,TT})
        precompile(Tuple{Op,TT,Vararg{Any}})
        # modules: forward with tensors
        precompile(Tuple{ScriptModule,TT})
        precompile(forward, (ScriptModule, TT))
        # broadcasting (Float32: the common case)
        T === Float32 && N >= 1 || continue
        for f in (+, -, *, /)
            for (X, Y) in ((TT, TT), (TT, Int64), (TT, T), (Int64, TT))
                precompile(Broadcast.broadcasted, (typeof(f), X, Y))
                precompile(Broadcast.materialize, (Bc{typeof(f),Tuple{X,Y}},))
            end
            precompile(Broadcast.materialize!, (TT, Bc{typeof(f),Tuple{TT,Int64}}))
            N >= 2 && precompile(Broadcast.materialize, (Bc{typeof(f),Tuple{TT,Tensor{T,1}}},))
        end
        for f in (exp, sqrt, tanh, -)
            precompile(Broadcast.broadcasted, (typeof(f), TT))
            precompile(Broadcast.materialize, (Bc{typeof(f),Tuple{TT}},))
        end
        precompile(Broadcast.materialize, (Bc{typeof(Base.literal_pow),Tuple{Base.RefValue{typeof(^)},TT,Base.RefValue{Val{2}}}},))
        precompile(Broadcast.materialize!, (TT, Broadcast.Broadcasted{Broadcast.DefaultArrayStyle{0},Nothing,typeof(identity),Tuple{Int64}}))
        precompile(Broadcast.materialize!, (TT, Bc{typeof(identity),Tuple{TT}}))
    end
    for T in (Float32, Float64)
        M, V = Tensor{T,2}, Tensor{T,1}
        precompile(*, (M, M)); precompile(*, (M, V)); precompile(*, (V, M))
        precompile(adjoint, (M,)); precompile(adjoint, (V,)); precompile(^, (M, Int))
    end
    # autograd, scopes, optimizers
    precompile(withscope, (Function,))
    precompile(no_grad, (Function,))
    precompile(_forward_trampoline, (Ptr{Cvoid}, Ptr{Ptr{Cvoid}}, UInt64, Ptr{Ptr{Cvoid}}, UInt64))
    precompile(_backward_trampoline, (Ptr{Cvoid}, Ptr{Ptr{Cvoid}}, UInt64, Ptr{Ptr{Cvoid}}, UInt64))
    for T in (Float32,), N in 1:2
        ps = Vector{Tensor{T,N}}
        _precompile_kw(Adam, (lr = 0.01,), (ps,))
        _precompile_kw(SGD, (lr = 0.01,), (ps,))
    end
    precompile(Adam, (Vector{Tensor},))
    _precompile_kw(Adam, (lr = 0.01,), (Vector{Tensor},))
    _precompile_kw(SGD, (lr = 0.01,), (Vector{Tensor},))
    precompile(step!, (Optimizer,))
    precompile(zero_grad!, (Optimizer,))
    precompile(_finalize, (Optimizer,))
    _precompile_printing_()
    _precompile_training_()
    return nothing
end

# Printing: the REPL's display (show with MIME text/plain on an IOContext of
# the terminal), print/println (show on the stream: a terminal, a file, a
# pipe) and string/repr (an IOBuffer), for the common element types and
# ranks, down to Base's array printing of the zero-copy view (an Array for
# ranks 0 and 1, a PermutedDimsArray in torch's index order above); and of
# modules and optimizers.
function _precompile_printing_()
    plain = MIME"text/plain"
    for IOT in (Base.TTY, IOStream, Base.PipeEndpoint, Base.GenericIOBuffer{Vector{UInt8}})
        CT = IOContext{IOT}
        for io in (CT, IOT)
            precompile(show, (io, ScriptModule))
            precompile(show, (io, plain, ScriptModule))
            precompile(show, (io, Optimizer))
            precompile(show, (io, plain, Optimizer))
        end
        for T in (Float32, Float64, Int64, Int32, Bool, BFloat16, Float16), N in 0:3
            (T === Float32 || T === Float64 || T === Int64 || N <= 2) || continue
            TT = Tensor{T,N}
            V = N <= 1 ? Array{T,N} : (p = ntuple(i -> N + 1 - i, N); PermutedDimsArray{T,N,p,p,Array{T,N}})
            for io in (CT, IOT)
                precompile(show, (io, plain, TT))
                precompile(show, (io, TT))
                precompile(summary, (io, TT))
            end
            precompile(_print_elements, (CT, V))
            precompile(_print_elements, (CT, V, Bool))
            isdefined(Base, :print_array) && precompile(Base.print_array, (CT, V))
            precompile(show, (CT, V))
        end
    end
    for T in (Float32, Float64, Int64, Bool), N in 0:2
        precompile(string, (Tensor{T,N},))
        precompile(repr, (Tensor{T,N},))
        precompile(sprint, (typeof(show), Tensor{T,N}))
    end
    return nothing
end

# Training: building CTorch.nn layers, a forward through a module, a loss,
# backward, an optimizer step and zero_grad!, as the README's loop does.
# Concrete signatures only: precompile() with an abstract argument (`Any`,
# `Tensor`) caches nothing on Julia 1.5 (it returns false).
function _precompile_training_()
    M = ScriptModule
    for (f, argtypes) in ((nn.Linear, (Int, Int)), (nn.Linear, (Int, Int, Bool)),
                          (nn.ReLU, ()), (nn.Tanh, ()), (nn.Sigmoid, ()), (nn.GELU, ()),
                          (nn.Flatten, ()), (nn.Dropout, (Float64,)), (nn.Softmax, ()),
                          (nn.Conv2d, (Int, Int, Int)), (nn.Conv2d, (Int, Int, Tuple{Int,Int})),
                          (nn.Conv1d, (Int, Int, Int)), (nn.MaxPool2d, (Int,)),
                          (nn.BatchNorm1d, (Int,)), (nn.BatchNorm2d, (Int,)), (nn.LayerNorm, (Int,)),
                          (nn.Embedding, (Int, Int)), (nn.LSTM, (Int, Int)),
                          (nn.MSELoss, ()), (nn.CrossEntropyLoss, ()), (nn.L1Loss, ()),
                          (nn.BCEWithLogitsLoss, ()), (nn.NLLLoss, ()))
        precompile(f, argtypes)
    end
    _precompile_kw(nn.Conv2d, (padding = 1,), (Int, Int, Int))
    _precompile_kw(nn.Linear, (bias = false,), (Int, Int))
    for n in 1:6
        precompile(nn.Sequential, ntuple(_ -> M, n))
    end
    precompile(params, (M,))
    precompile(named_parameters, (M,))
    precompile(zero_grad!, (M,))
    precompile(train!, (M,))
    precompile(eval!, (M,))
    for T in (Float32, Float64), N in 1:4
        TT = Tensor{T,N}
        precompile(Tuple{M,TT})
        precompile(Tuple{M,TT,TT})
        precompile(Tuple{M,TT,Tensor{Int64,1}})
        precompile(forward, (M, TT))
        precompile(forward, (M, TT, TT))
        precompile(forward, (M, TT, Tensor{Int64,1}))
        precompile(_forward_tensors, (M, Tuple{TT}))
        precompile(_forward_tensors, (M, Tuple{TT,TT}))
        precompile(_forward_tensors, (M, Tuple{TT,Tensor{Int64,1}}))
    end
    for T in (Float32, Float64)
        L = Tensor{T,0}
        precompile(backward, (L,))
        _precompile_kw(backward, (retain_graph = true,), (L,))
        precompile(item, (L,))
        precompile(getindex, (L,))
    end
    for ps in (Vector{Tensor}, Vector{Tensor{Float32,2}})
        for f in (SGD, Adam, AdamW)
            _precompile_kw(f, (lr = 0.01,), (ps,))
            _precompile_kw(f, (lr = 1,), (ps,))
        end
        _precompile_kw(SGD, (lr = 0.01, momentum = 0.9), (ps,))
        _precompile_kw(Adam, (lr = 0.01, weight_decay = 0.01), (ps,))
    end
    _precompile_kw(zero_grad!, (set_to_none = true,), (Optimizer,))
    _precompile_kw(zero_grad!, (set_to_none = true,), (M,))
    return nothing
end

_precompile_()
