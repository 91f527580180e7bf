# Julia-side benchmark of CTorch: call overhead of a small op and of a model
# forward, as median times, next to the C++ floor measured in the same
# process: bench_julia_floor.cpp (built as libbench_julia_floor.so in the
# build tree's bench/ directory, or CTORCH_BENCH_FLOOR) runs torch::add and
# Module::forward between Julia's samples. The custom-operator rows time a
# Julia kernel (CTorch.Library) against the C++ TORCH_LIBRARY kernel of
# bench_custom_ext.cpp (libbench_custom_ext.so, same directory), both called
# through the same op handle. Writes JSON to ARGS[1] if given.
#
#   CTORCH_LIBRARY=build/libctorch.so scripts/julia bench/bench_julia.jl [out.json]

using CTorch
const C = CTorch

C.set_num_threads(1)

# The C++ floor library, if built.
const FLOOR_LIB = let p = get(ENV, "CTORCH_BENCH_FLOOR", "")
    isempty(p) ? joinpath(dirname(C.library_path()), "bench", "libbench_julia_floor.so") : p
end
const FLOOR = isfile(FLOOR_LIB) ? C.Libdl.dlopen(FLOOR_LIB) : nothing
floor_fn(name) = FLOOR === nothing ? nothing : C.Libdl.dlsym(FLOOR, name)

# Median over `samples` of the mean time of `inner` calls, in ns, and its
# minimum; with a floor function, the floor's median measured between the
# samples (same process, interleaved).
function bench(f, inner::Int; samples::Int = 101, floor = nothing)
    for _ in 1:inner
        f()
    end
    ts = Float64[]
    fs = Float64[]
    GC.gc()
    for _ in 1:samples
        floor === nothing || push!(fs, ccall(floor, Float64, (Int64,), inner))
        t0 = time_ns()
        for _ in 1:inner
            f()
        end
        push!(ts, (time_ns() - t0) / inner)
    end
    sort!(ts); sort!(fs)
    med(v) = isempty(v) ? NaN : v[(length(v) + 1) ÷ 2]
    return (med(ts), ts[1], med(fs))
end

a = Tensor(Float32[1, 2, 3, 4])
b = Tensor(Float32[5, 6, 7, 8])
add = C.op("aten::add.Tensor")
addset = ops.aten.add

# The bare C sequence a C program would run for one call (ct_op_call_tensors
# on the cached op, free the result), issued from Julia.
const args2 = [Base.unsafe_convert(Ptr{Cvoid}, a), Base.unsafe_convert(Ptr{Cvoid}, b)]
function bare_c()
    out = Ref{Ptr{Cvoid}}(C_NULL)
    C.check(C.ct_op_call_tensors(out, 1, add.ptr, args2, 2))
    C.ct_tensor_free(out[])
end

const ADD_FLOOR = floor_fn(:ctb_add_ns)
results = Pair{String,NTuple{3,Float64}}[]
push!(results, "add 4 floats: bare ct_op_call_tensors from Julia" => bench(bare_c, 2000; floor = ADD_FLOOR))
push!(results, "add 4 floats: call_tensor(cached op, a, b)" => bench(() -> C.call_tensor(add, a, b), 2000; floor = ADD_FLOOR))
push!(results, "add 4 floats: a + b" => bench(() -> a + b, 2000; floor = ADD_FLOOR))
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
push!(results, "model forward (x + 1, 4 floats), tensors-only" =>
              bench(() -> tiny(a), 2000; floor = floor_fn(:ctb_tiny_forward_ns)))
push!(results, "model forward (x + 1, 4 floats), general path" =>
              bench(() -> C.call(tiny, "forward", a), 2000; floor = floor_fn(:ctb_tiny_forward_ns)))

# One training step of bench_train.cpp's conv net: forward, cross-entropy, backward,
# Adam, in a withscope (its handles freed when the step ends, as a training loop does).
const CONVNET_SRC = """
def forward(self, x):
    h = torch.relu(torch.conv2d(x, self.conv_w, self.conv_b, [1, 1], [1, 1]))
    h = torch.flatten(torch.max_pool2d(h, [2, 2]), 1)
    return torch.linear(h / (1 + torch.abs(h)), self.fc_w, self.fc_b)
"""
net = ScriptModule("BenchConvNet")
C.manual_seed(0)
for (name, shape, s) in (("conv_w", (16, 3, 3, 3), 0.2f0), ("conv_b", (16,), 0.1f0),
                         ("fc_w", (10, 4096), 0.02f0), ("fc_b", (10,), 0f0))
    C.register_parameter!(net, name, C.randn(shape...) * s)
end
C.define!(net, CONVNET_SRC)
const NET_PARAMS = Tensor[C.getattr(net, n) for n in ("conv_w", "conv_b", "fc_w", "fc_b")]
const NET_OPT = C.Adam(NET_PARAMS; lr = 1e-3)
const TX, TY = C.randn(32, 3, 32, 32), ops.aten.randint(10, [32])
const XENT = ops.aten.cross_entropy_loss
train_step() = withscope() do
    loss = XENT(net(TX), TY)
    zero_grad!(NET_OPT)
    backward(loss)
    step!(NET_OPT)
    nothing
end
push!(results, "train step conv net 32x3x32x32 (Adam)" =>
              bench(train_step, 2; samples = 41, floor = floor_fn(:ctb_train_step_ns)))

# Layer stack (issue 39): CTorch.nn's Conv1d, BatchNorm1d, LSTM, MultiheadAttention and
# Linear in one module, forward and backward, against the same torch::nn layers in C++.
const STACK = ScriptModule("BenchStack")
for (name, layer) in (("conv", C.nn.Conv1d(16, 32, 3; padding = 1)), ("bn", C.nn.BatchNorm1d(32)),
                      ("lstm", C.nn.LSTM(32, 32)), ("attn", C.nn.MultiheadAttention(32, 4)),
                      ("head", C.nn.Linear(32, 10)))
    C.register_module!(STACK, name, layer)
end
C.define!(STACK, """
def forward(self, x: Tensor) -> Tensor:
    h = torch.relu(self.bn.forward(self.conv.forward(x)))
    h = h.permute(2, 0, 1)
    h = self.lstm.forward(h)[0]
    a = self.attn.forward(h, h, h, need_weights=False)[0]
    return self.head.forward(a.mean(0))
""")
const SX, SY = C.randn(8, 16, 32), ops.aten.randint(10, [8])
stack_step() = withscope() do
    C.zero_grad!(STACK)
    backward(XENT(STACK(SX), SY))
    nothing
end
push!(results, "train step layer stack (conv, bn, LSTM, attention)" =>
              bench(stack_step, 2; samples = 41, floor = floor_fn(:ctb_layer_stack_ns)))

# Custom operators (issue 24): softsign as a Julia kernel registered through
# CTorch.Library, against the same loop in a C++ TORCH_LIBRARY extension
# (bench_custom_ext.cpp, built as libbench_custom_ext.so next to the floor
# library, or CTORCH_BENCH_CUSTOM_EXT), loaded with CTorch.load_library. Both
# are called the same way, through torch's dispatcher on a cached op handle
# (call_tensor: ct_op_call_tensors), interleaved in this process, so the two
# rows differ only in the kernel: on 4 floats the cost of the boxed Julia
# kernel (values, handles, the trampoline), on 1M floats a loop kernel where
# that cost should vanish. The caller frees each result at once, as C++ does.
const CUSTOM_EXT = let p = get(ENV, "CTORCH_BENCH_CUSTOM_EXT", "")
    isempty(p) ? joinpath(dirname(C.library_path()), "bench", "libbench_custom_ext.so") : p
end
const JL_LIB = C.Library("ctbench_jl")
C.define(JL_LIB, "softsign(Tensor x) -> Tensor")
# The loop behind a function barrier (the kernel's arguments arrive untyped).
function softsign_loop!(ya::Array{T}, xa::Array{T}) where {T}
    @inbounds for i in eachindex(xa, ya)
        ya[i] = xa[i] / (one(T) + abs(xa[i]))
    end
end
C.impl(JL_LIB, "softsign", :CPU) do x
    y = C.empty_like(x)
    softsign_loop!(unsafe_array(y), unsafe_array(x))   # zero-copy views
    y
end

# Interleaved medians of two functions: per sample, `inner` calls of each, the
# order alternating. Returns (median f, min f, median g), in ns. gc_each: a
# young collection (GC.gc(false), untimed) after each sample's calls, so the
# garbage of one sample is gone before the next (see the 1M row).
function bench_pair(f, g, inner::Int; samples::Int = 41, gc_each::Bool = false)
    for _ in 1:inner
        f(); g()
    end
    ts, gs = Float64[], Float64[]
    GC.gc()
    function timed(h)
        t0 = time_ns()
        for _ in 1:inner
            h()
        end
        t = (time_ns() - t0) / inner
        gc_each && GC.gc(false)
        return t
    end
    for s in 1:samples
        if isodd(s)
            push!(ts, timed(f)); push!(gs, timed(g))
        else
            push!(gs, timed(g)); push!(ts, timed(f))
        end
    end
    sort!(ts); sort!(gs)
    med(v) = v[(length(v) + 1) ÷ 2]
    return (med(ts), ts[1], med(gs))
end

const FLOOR_NAMES = Dict{String,String}()
if isfile(CUSTOM_EXT)
    C.load_library(CUSTOM_EXT)
    let jl_op = C.op("ctbench_jl::softsign"), cpp_op = C.op("ctbench_cpp::softsign")
        # One call and its result freed at once (the C++ row frees at scope end).
        call_free(o, x) = (C.free!(C.call_tensor(o, x)); nothing)
        # The kernel's handles (its argument and result) are freed when it
        # returns (its scope, oplibrary.jl), so calls in a loop reuse memory as
        # the C++ kernel's do; no collection between samples is needed.
        for (n, label, inner, samples, gc_each) in ((4, "4 floats", 2000, 101, false),
                                                     (1 << 20, "1M floats", 1, 101, false))
            x = C.randn(n)
            Array(C.call_tensor(jl_op, x)) ≈ Array(C.call_tensor(cpp_op, x)) ||
                error("bench_julia.jl: the Julia and C++ softsign kernels differ")
            name = "custom op softsign $label: Julia kernel"
            push!(results, name => bench_pair(() -> call_free(jl_op, x), () -> call_free(cpp_op, x), inner;
                                              samples = samples, gc_each = gc_each))
            FLOOR_NAMES[name] = "C++ TORCH_LIBRARY kernel, same call path"
        end
    end
else
    println("custom op rows skipped: no $(CUSTOM_EXT) (ninja -C build bench_custom_ext)")
end

# Start-up, each in a fresh julia process (this one's `using` made the
# precompile cache): the time `using CTorch` takes, and the time to first
# forward (from before `using` to the output of a saved model's first forward,
# copied to an Array: using + load + forward). Median and minimum of 3 runs.
const STARTUP_CODE = """
t0 = time_ns()
using CTorch
t1 = time_ns()
m = CTorch.load(ARGS[1])
y = CTorch.no_grad(() -> m(CTorch.randn(8, 64)))
A = Array(y)
t2 = time_ns()
println(t1 - t0, " ", t2 - t0)
"""
function startup_times(model; runs::Int = 3)
    path = joinpath(mktempdir(), "startup_mlp.pt")
    C.save(model, path)
    project = dirname(dirname(pathof(CTorch)))
    cmd = `$(Base.julia_cmd()) --startup-file=no --project=$project -e $STARTUP_CODE $path`
    us, fs = Float64[], Float64[]
    for _ in 1:runs
        u, f = parse.(Float64, split(read(cmd, String)))
        push!(us, u); push!(fs, f)
    end
    sort!(us); sort!(fs)
    return (us[(runs + 1) ÷ 2], us[1], NaN), (fs[(runs + 1) ÷ 2], fs[1], NaN)
end
let (u, f) = startup_times(m)
    push!(results, "start-up: using CTorch (fresh process)" => u)
    push!(results, "start-up: time to first forward (fresh process)" => f)
end

# First calls, each in a fresh julia process (after `using CTorch`, which the
# rows above time): the first `show` of a tensor as the REPL displays it
# (text/plain, :limit) and of a module, building a small MLP with its loss and
# SGD, its first training step (forward, loss, zero_grad!, backward, step!)
# and, for comparison, its second. What the first calls take beyond the
# second is compilation: src/precompile.jl caches the inference of these
# paths in the package's precompile cache. Median and minimum of 3 runs.
const FIRST_CALL_CODE = """
using CTorch
const C = CTorch
io = IOContext(IOBuffer(), :limit => true, :displaysize => (24, 80))
t0 = time_ns()
show(io, MIME"text/plain"(), C.randn(3, 4))
t1 = time_ns()
model = C.nn.Sequential(C.nn.Linear(4, 16), C.nn.ReLU(), C.nn.Linear(16, 1))
loss_fn = C.nn.MSELoss()
opt = C.SGD(C.nn.params(model); lr = 0.01)
t2 = time_ns()
show(io, MIME"text/plain"(), model)
t3 = time_ns()
x, y = C.randn(32, 4), C.randn(32, 1)
function step(model, loss_fn, opt, x, y)
    loss = loss_fn(model(x), y)
    zero_grad!(opt)
    backward(loss)
    step!(opt)
    return C.item(loss)
end
t4 = time_ns()
step(model, loss_fn, opt, x, y)
t5 = time_ns()
step(model, loss_fn, opt, x, y)
t6 = time_ns()
println(t1 - t0, " ", t2 - t1, " ", t3 - t2, " ", t5 - t4, " ", t6 - t5)
"""
function first_call_times(; runs::Int = 3)
    project = dirname(dirname(pathof(CTorch)))
    cmd = `$(Base.julia_cmd()) --startup-file=no --project=$project -e $FIRST_CALL_CODE`
    cols = [Float64[] for _ in 1:5]
    for _ in 1:runs
        for (c, v) in zip(cols, parse.(Float64, split(read(cmd, String))))
            push!(c, v)
        end
    end
    return [(sort(c)[(runs + 1) ÷ 2], minimum(c), NaN) for c in cols]
end
let names = ("first call: show(tensor) 3x4 (fresh process)",
             "first call: build MLP, MSELoss, SGD (fresh process)",
             "first call: show(module) (fresh process)",
             "first call: training step MLP (fresh process)",
             "second training step MLP (same process)")
    for (name, t) in zip(names, first_call_times())
        push!(results, name => t)
    end
end

fmt(ns) = isnan(ns) ? "-" : ns >= 1e8 ? string(round(ns / 1e9; digits = 3), " s") :
          string(round(ns / 1000; digits = 3), " µs")
println()
println(rpad("benchmark", 52), lpad("median", 12), lpad("min", 12), lpad("C++ floor", 12), lpad("ratio", 8))
println("-"^96)
for (name, (med, mn, fl)) in results
    println(rpad(name, 52), lpad(fmt(med), 12), lpad(fmt(mn), 12), lpad(fmt(fl), 12),
            lpad(isnan(fl) ? "-" : string(round(med / fl; digits = 2), "x"), 8))
end
println("-"^96)
FLOOR === nothing && println("no C++ floor: $(FLOOR_LIB) not found (ninja -C build bench_julia_floor)")
println("C++ floors: torch::add and Module::forward, measured between the samples in this process;")
println("custom op rows: the C++ TORCH_LIBRARY kernel through the same call, interleaved")

if !isempty(ARGS)
    open(ARGS[1], "w") do io
        println(io, "{")
        println(io, "  \"julia_version\": \"", VERSION, "\",")
        println(io, "  \"torch_version\": \"", C.torch_version(), "\",")
        println(io, "  \"unit\": \"ns\",")
        println(io, "  \"results\": [")
        for (i, (name, (med, mn, fl))) in enumerate(results)
            print(io, "    {\"name\": \"", name, "\", \"median_ns\": ", round(med; digits = 1),
                  ", \"min_ns\": ", round(mn; digits = 1))
            isnan(fl) || print(io, ", \"floor_ns\": ", round(fl; digits = 1))
            haskey(FLOOR_NAMES, name) && print(io, ", \"floor_name\": \"", FLOOR_NAMES[name], "\"")
            print(io, "}")
            println(io, i < length(results) ? "," : "")
        end
        println(io, "  ]")
        println(io, "}")
    end
    println("wrote ", ARGS[1])
end
