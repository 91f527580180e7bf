# Scopes and kernels follow the task, not the thread (Julia >= 1.7 moves
# tasks between threads, >= 1.9 adds interactive threads with ids above
# nthreads()); and the package runs on Julia without Base's internals.
# Included by runtests.jl (run with --threads=4, tests/julia.cmake).

# `WeakRef`s of tensors made by `make()` in a function of its own, so no
# stack slot of the caller keeps them.
@noinline weak_tensors(make, n) = [WeakRef(make()) for _ in 1:n]
# Waits for tasks that hand work to each other (no hang when one fails).
function finish(tasks...; secs = 120)
    timedwait(() -> all(istaskdone, tasks), Float64(secs); pollint = 0.01)
    return all(t -> istaskdone(t) && !istaskfailed(t), tasks)
end
function collected(refs)
    for _ in 1:5
        GC.gc()
        all(r -> r.value === nothing, refs) && return true
    end
    return false
end

@testset "tasks: scopes belong to the task" begin
    x = C.full((3,), 1.0; dtype = Float64)

    @testset "a scope that yields keeps its own tensors" begin
        # Two tasks on one thread (@async is sticky), interleaved by hand:
        # A opens a scope and yields, B opens one, A resumes and makes more.
        toA, toB = Channel{Int}(1), Channel{Int}(1)
        made = Dict{Symbol,Any}()
        a = @async begin
            ra = withscope() do
                made[:a1] = x * 1
                put!(toB, 1); take!(toA)          # B is inside its scope now
                made[:a2] = x * 2
                x * 10
            end
            made[:ra] = ra
            put!(toB, 2)
        end
        b = @async begin
            take!(toB)
            rb = withscope() do
                made[:b1] = x * 3
                put!(toA, 1); take!(toB)          # A's scope ends meanwhile
                made[:b1_alive] = !C.isfreed(made[:b1])   # A's end left B's tensors
                made[:b2] = x * 4
                x * 20
            end
            made[:rb] = rb
        end
        @test finish(a, b)
        @test made[:b1_alive]
        @test C.isfreed(made[:a1]) && C.isfreed(made[:a2])
        @test C.isfreed(made[:b1]) && C.isfreed(made[:b2])
        @test Array(made[:ra]) == fill(10.0, 3) && Array(made[:rb]) == fill(20.0, 3)
        # nothing left open: a tensor made outside a scope is the GC's again
        @test collected(weak_tensors(() -> x * 5, 3))
    end

    @testset "many tasks on all threads, yielding inside their scopes" begin
        n = 32
        ok = fill(false, n)
        inner = Vector{Any}(undef, n)
        tasks = [Threads.@spawn begin
                     r = withscope() do
                         t = x * i
                         for k in 1:5
                             sleep(0)                     # may resume on another thread
                             t = t .+ 1
                         end
                         inner[i] = t .* 1                # made inside, not returned
                         withscope(() -> t .+ 0)          # a nested scope's result
                     end
                     ok[i] = Array(r) == fill(i + 5.0, 3) && !C.isfreed(r)
                 end for i in 1:n]
        foreach(wait, tasks)
        @test all(ok)
        @test all(C.isfreed, inner)
    end

    @testset "a kernel that yields while another task opens a scope" begin
        lib = C.Library("jltask")
        C.define(lib, "twice(Tensor x) -> Tensor")
        go, back = Channel{Int}(1), Channel{Int}(1)
        C.impl(lib, "twice", :CPU) do t
            y = t * 2
            put!(go, 1); take!(back)              # the other task runs meanwhile
            y
        end
        res = Ref{Any}(nothing); other = Ref{Any}(nothing)
        k = @async (res[] = C.ops.jltask.twice(x))
        o = @async begin
            take!(go)
            other[] = withscope(() -> (x * 7; x * 8))
            put!(back, 1)
        end
        @test finish(k, o)
        @test Array(res[]) == fill(2.0, 3) && Array(other[]) == fill(8.0, 3)
        # both scopes were closed: later tensors outside any scope are not
        # held by a stale scope list
        @test collected(weak_tensors(() -> x * 9, 3))
        close(lib)
    end

    @testset "kernels called from several threads at once" begin
        nt = Threads.nthreads()
        ok = fill(false, nt)
        # Each thread registers its own operator (kernels run on the thread
        # that registered them) and calls it while the others register,
        # call and free theirs (the kernel-state lookup is always locked).
        Threads.@threads :static for i in 1:nt
            lib = C.Library("jlthr$i")
            C.define(lib, "addi(Tensor x) -> Tensor")
            C.impl(t -> t .+ i, lib, "addi", :CPU)
            good = true
            for k in 1:200
                y = getproperty(C.ops, Symbol("jlthr$i")).addi(x)
                good &= Array(y) == fill(1.0 + i, 3)
                k % 50 == 0 && C.release_unused!()
            end
            close(lib)
            ok[i] = good
        end
        @test all(ok)
    end
end

@testset "no Base internals required" begin
    # the fallbacks give what Base's internals give
    for d in ((), (3,), (2, 3), (2, 0, 4))
        @test C._dims_string(d, false) == Base.dims2string(d)
    end
    for A in (reshape(collect(1.0:6.0), 2, 3), [1, 2, 3], fill(2.5f0))
        ctx = IOContext(IOBuffer(), :limit => true, :compact => true)
        base = sprint(io -> C._print_elements(IOContext(io, ctx), A, true))
        fall = sprint(io -> C._print_elements(IOContext(io, ctx), A, false))
        @test base == fall
    end
    for (f, Ts) in ((+, (Float32, Int)), (-, (Int8,)), (/, (Int, Int)), (*, (Bool, Float64)),
                    (-, (Bool,)), (+, (C.BFloat16, Float32)))
        @test C._promote_op_fallback(f, Ts...) == Base.promote_op(f, Ts...)
    end
end

@testset "printing a meta tensor" begin
    t = C.empty(Float32, (2, 3); device = :meta)
    @test sprint(show, t) == "tensor(..., device='meta', size=(2, 3))"       # as torch's repr
    @test sprint(show, C.empty(Int64, (4,); device = :meta)) ==
          "tensor(..., device='meta', size=(4,), dtype=torch.int64)"
    @test sprint(show, MIME"text/plain"(), t) ==
          "2×3 Tensor{Float32,2} on meta:\ntensor(..., device='meta', size=(2, 3))"
    @test occursin("device='meta'", repr([t]))                             # inside containers too
end
