# Julia-side benchmark of CTorch: call overhead of a small op and of a model
# forward, as median times. The C/C++ floor is measured by the C benchmark;
# this prints Julia's absolute numbers (plus the bare C call sequence made
# from Julia, for reference) and writes JSON to ARGS[1] if given.
#
#   LD_PRELOAD=/lib/x86_64-linux-gnu/libgcc_s.so.1 CTORCH_LIBRARY=build/libctorch.so \
#     julia --startup-file=no --project=bindings/julia/CTorch bench/bench_julia.jl [out.json]

using CTorch
const C = CTorch

C.set_num_threads(1)

# Median over `samples` of the mean time of `inner` calls, in ns.
function bench(f, inner::Int; samples::Int = 101)
    for _ in 1:inner
        f()
    end
    ts = Float64[]
    GC.gc()
    for _ in 1:samples
        t0 = time_ns()
        for _ in 1:inner
            f()
        end
        push!(ts, (time_ns() - t0) / inner)
    end
    sort!(ts)
    return ts[(samples + 1) ÷ 2], ts[1]
end

a = Tensor(Float32[1, 2, 3, 4])
b = Tensor(Float32[5, 6, 7, 8])
add = C.op("aten::add.Tensor")
addset = ops.aten.add

# The bare C sequence a C program would run for one call (prebuilt argument
# values, ct_op_call, free the result), issued from Julia.
const args2 = [C._value_ptr(a), C._value_ptr(b)]
function bare_c()
    out = Ref{Ptr{Cvoid}}(C_NULL)
    C.check(C.ct_op_call(out, add.ptr, args2, 2, C_NULL, C_NULL, 0))
    C.ct_value_free(out[])
end

results = Pair{String,Tuple{Float64,Float64}}[]
push!(results, "add 4 floats: bare ct_op_call from Julia" => bench(bare_c, 2000))
push!(results, "add 4 floats: call_tensor(cached op, a, b)" => bench(() -> C.call_tensor(add, a, b), 2000))
push!(results, "add 4 floats: a + b" => bench(() -> a + b, 2000))
push!(results, "add 4 floats: cached op(a, b) (generic result)" => bench(() -> add(a, b), 2000))
push!(results, "add 4 floats: ops.aten.add(a, b) (overload set)" => bench(() -> addset(a, b), 2000))
push!(results, "add 4 floats: ops.aten.add(a, b; alpha=2)" => bench(() -> addset(a, b; alpha = 2), 2000))
push!(results, "neg 4 floats: -a" => bench(() -> -a, 2000))

# Model forward: a small MLP built from TorchScript source (no Python).
m = ScriptModule("BenchMlp")
C.register_parameter!(m, "w1", C.randn(64, 128); requires_grad = false)
C.register_parameter!(m, "w2", C.randn(128, 10); requires_grad = false)
C.define!(m, "def forward(self, x):\n    return torch.matmul(torch.relu(torch.matmul(x, self.w1)), self.w2)\n")
eval!(m)
x = C.randn(8, 64)
push!(results, "model forward (MLP 8x64 -> 128 -> 10)" => bench(() -> C.no_grad(() -> m(x)), 200))
tiny = ScriptModule("BenchTiny")
C.define!(tiny, "def forward(self, x):\n    return x + 1\n")
push!(results, "model forward (x + 1, 4 floats)" => bench(() -> tiny(a), 2000))

println()
println(rpad("benchmark", 52), lpad("median", 12), lpad("min", 12))
println("-"^76)
for (name, (med, mn)) in results
    println(rpad(name, 52), lpad(string(round(med / 1000; digits = 3), " µs"), 12),
            lpad(string(round(mn / 1000; digits = 3), " µs"), 12))
end
bare = results[1].second[1]
println("-"^76)
println("Julia overhead of call_tensor over the bare C sequence: ",
        round(results[2].second[1] / bare; digits = 3), "x")
println("(compare with the C benchmark's direct C++ figure for the 1.10x target)")

if !isempty(ARGS)
    open(ARGS[1], "w") do io
        println(io, "{")
        println(io, "  \"julia_version\": \"", VERSION, "\",")
        println(io, "  \"torch_version\": \"", C.torch_version(), "\",")
        println(io, "  \"unit\": \"ns\",")
        println(io, "  \"results\": [")
        for (i, (name, (med, mn))) in enumerate(results)
            print(io, "    {\"name\": \"", name, "\", \"median_ns\": ", round(med; digits = 1),
                  ", \"min_ns\": ", round(mn; digits = 1), "}")
            println(io, i < length(results) ? "," : "")
        end
        println(io, "  ]")
        println(io, "}")
    end
    println("wrote ", ARGS[1])
end
