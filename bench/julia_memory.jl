# Julia memory that follows the step (issue 23, item 3): what a result costs
# when the garbage collector frees it, when `withscope` frees it, and when
# `free!` does; and how far RSS grows over 600 training steps of an MLP
# with and without a scope. A measurement, printed as a table; not a test.
#
#   CTORCH_LIBRARY=build/libctorch.so scripts/julia bench/julia_memory.jl

using CTorch
const C = CTorch
C.set_num_threads(1)

rss_mib() = parse(Int, split(read("/proc/self/statm", String))[2]) * 4096 / 2^20

function per_call_us(f, n)
    f(); f()
    GC.gc()
    t0 = time_ns()
    for _ in 1:n
        f()
    end
    return (time_ns() - t0) / n / 1e3
end

x = C.full((512, 64), 0.5; dtype = Float32)
n = 2000
gc_us = per_call_us(() -> (C.ops.aten.exp(x); nothing), n)
scope_us = per_call_us(() -> withscope(() -> (C.ops.aten.exp(x); nothing)), n)
free_us = per_call_us(() -> (free!(C.ops.aten.exp(x)); nothing), n)

function train(steps, scoped)
    xb = C.full((256, 64), 0.1; dtype = Float32)
    w1 = requires_grad!(C.full((64, 128), 0.01; dtype = Float32))
    w2 = requires_grad!(C.full((128, 10), 0.01; dtype = Float32))
    step() = begin
        y = C.ops.aten.mm(C.ops.aten.relu(C.ops.aten.mm(xb, w1)), w2)
        loss = C.ops.aten.mean(y .* y)
        backward(loss)
        C.no_grad() do
            for w in (w1, w2)
                C.ops.aten.sub_(w, grad(w); alpha = 0.01)
                zero_grad!(w)
            end
        end
        nothing
    end
    for _ in 1:20
        scoped ? withscope(step) : step()
    end
    GC.gc()
    r0 = rss_mib()
    t0 = time_ns()
    for _ in 1:steps
        scoped ? withscope(step) : step()
    end
    t = (time_ns() - t0) / steps / 1e3
    return rss_mib() - r0, t
end

grow_gc, step_gc = train(600, false)
grow_scope, step_scope = train(600, true)

println("| measurement | left to the GC | withscope | free! at once |")
println("| --- | --- | --- | --- |")
println("| aten::exp 512x64, us per call | $(round(gc_us; digits=1)) | $(round(scope_us; digits=1)) | $(round(free_us; digits=1)) |")
println("| MLP step (256x64 -> 128 -> 10, backward, SGD), us | $(round(step_gc; digits=1)) | $(round(step_scope; digits=1)) | |")
println("| RSS growth over 600 steps, MiB | $(round(grow_gc; digits=1)) | $(round(grow_scope; digits=1)) | |")
