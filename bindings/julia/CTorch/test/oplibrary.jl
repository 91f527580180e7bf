# Operators in torch's dispatcher with Julia kernels (CTorch.Library,
# ct_library_*): values, meta, autograd against finite differences, errors,
# freeing, and a saved TorchScript model whose forward calls the Julia kernel.
# Included by runtests.jl; also runs on its own:
#   scripts/julia bindings/julia/CTorch/test/oplibrary.jl

if !@isdefined(C)
    using Test, CTorch
    const C = CTorch
end

softsign_ref(x) = x / (1 + abs(x))
softsign_grad_ref(x) = 1 / (1 + abs(x))^2

# The CPU kernel: zero-copy views of the input and of a torch-owned output.
function softsign_kernel!(y::AbstractArray, x::AbstractArray)
    @inbounds for i in eachindex(x, y)
        y[i] = x[i] / (1 + abs(x[i]))
    end
    return y
end

# Kernel calls counted per key.
const OPLIB_CALLS = Dict{Symbol,Int}()
_count!(k) = (OPLIB_CALLS[k] = get(OPLIB_CALLS, k, 0) + 1)

# Registers softsign (CPU, Meta, autograd) and scale_mul(x, y, a) = a*x*y + y
# (CPU kernel through CTorch ops, autograd with one gradient per argument).
function oplib_register!(lib)
    C.define(lib, "softsign(Tensor x) -> Tensor")
    C.impl(lib, "softsign", :CPU) do x
        _count!(:cpu)
        y = C.empty_like(x)
        softsign_kernel!(unsafe_array(y), unsafe_array(x))
        y
    end
    C.impl(lib, "softsign", :Meta) do x
        _count!(:meta)
        C.empty_like(x)
    end
    C.impl_autograd(lib, "softsign") do args, result, grads
        _count!(:backward)
        x, = args
        @assert result isa Tensor && size(result) == size(x)
        grads[1] ./ (1 .+ abs.(x)) .^ 2
    end
    C.define(lib, "scale_mul(Tensor x, Tensor y, float a=2.0) -> Tensor")
    C.impl(lib, "scale_mul", :CPU) do x, y, a
        _count!(:scale_mul)
        a .* x .* y .+ y
    end
    C.impl_autograd(lib, "scale_mul") do args, result, grads
        x, y, a = args
        g = grads[1]
        (a .* y .* g, (a .* x .+ 1) .* g, nothing)
    end
    return lib
end

# Central finite differences of f (Vector -> Vector) at x, as a Jacobian.
function fd_jacobian(f, x::Vector{Float64}; h = 1e-6)
    y0 = f(x)
    J = zeros(length(y0), length(x))
    for i in eachindex(x)
        xp = copy(x); xp[i] += h
        xm = copy(x); xm[i] -= h
        J[:, i] = (f(xp) - f(xm)) / (2h)
    end
    return J
end

# The Jacobian autograd gives for output `y` with respect to `x` (row by row).
function ad_jacobian(y::Tensor, x::Tensor)
    n = length(y)
    J = zeros(n, length(x))
    for j in 1:n
        e = zeros(n); e[j] = 1
        g = C.autograd_grad(y, x; grad_outputs = C.tensor(e), retain_graph = true)[1]
        J[j, :] = Array(g)
    end
    return J
end

@testset "operators with Julia kernels (CTorch.Library)" begin
    empty!(OPLIB_CALLS)
    lib = oplib_register!(C.Library("myjl"))
    @test isopen(lib)
    @test "myjl::softsign" in C.list_ops()

    @testset "values" begin
        xs = [-2.5, -0.5, 0.0, 0.75, 3.0]
        y = C.ops.myjl.softsign(C.tensor(xs))
        @test y isa Tensor{Float64,1}
        @test Array(y) ≈ softsign_ref.(xs) rtol = 1e-15
        @test OPLIB_CALLS[:cpu] == 1
        # 2-D, Float32, through the op handle by qualified name
        X = Float32[1 -2 3; -4 5 -6]
        y2 = C.op("myjl::softsign")(C.tensor(X))
        @test size(y2) == (2, 3) && eltype(y2) == Float32
        @test Array(y2) ≈ softsign_ref.(X)
        @test OPLIB_CALLS[:cpu] == 2
        # several arguments, a float with a default, a kernel made of CTorch ops
        a, b = randn(4), randn(4)
        @test Array(C.ops.myjl.scale_mul(C.tensor(a), C.tensor(b), 3.0)) ≈ 3 .* a .* b .+ b
        @test Array(C.ops.myjl.scale_mul(C.tensor(a), C.tensor(b))) ≈ 2 .* a .* b .+ b
        @test OPLIB_CALLS[:scale_mul] == 2
    end

    @testset "all-Tensor schemas take the tensors-only kernel form" begin
        @test C._tensors_only_schema("myjl::softsign(Tensor x) -> Tensor")
        @test C._tensors_only_schema("ns::f(Tensor a, Tensor b) -> (Tensor, Tensor)")
        @test C._tensors_only_schema("ns::f(Tensor a) -> (Tensor out, Tensor idx)")
        @test !C._tensors_only_schema("ns::f(Tensor x, float a=2.0) -> Tensor")
        @test !C._tensors_only_schema("ns::f(Tensor? x) -> Tensor")
        @test !C._tensors_only_schema("ns::f(Tensor(a!) x) -> Tensor(a!)")
        @test !C._tensors_only_schema("ns::f(Tensor x) -> ()")
        @test !C._tensors_only_schema("ns::f() -> Tensor")
        @test !C._tensors_only_schema("ns::f(Tensor[] x) -> Tensor")
        @test !C._tensors_only_schema("ns::f(Tensor x, *, Tensor y) -> Tensor")
        @test C._op_schema_string("myjl::softsign") == "myjl::softsign(Tensor x) -> Tensor"
        @test C._op_schema_string("myjl::nosuchop") == ""
        # a tensors-form kernel with two results and a wrong return
        C.define(lib, "minmax2(Tensor a, Tensor b) -> (Tensor, Tensor)")
        C.impl(lib, "minmax2", :CPU) do a, b
            (min.(a, b), max.(a, b))
        end
        lo, hi = C.ops.myjl.minmax2(C.tensor([1.0, 5.0]), C.tensor([3.0, 2.0]))
        @test Array(lo) == [1.0, 2.0] && Array(hi) == [3.0, 5.0]
        C.define(lib, "onlyone(Tensor a) -> (Tensor, Tensor)")
        C.impl(lib, "onlyone", :CPU) do a
            a
        end
        err = try C.ops.myjl.onlyone(C.tensor([1.0])); nothing catch e; e end
        @test err isa CTorchError && err.code == C.CT_ERR_CALLBACK
        @test occursin("returned 1 results, expected 2", err.message)
    end

    @testset "a kernel's handles are freed when it returns, unless kept" begin
        seen = Any[]
        C.define(lib, "seen(Tensor x) -> Tensor")
        C.impl(lib, "seen", :CPU) do x
            y = C.empty_like(x)
            unsafe_array(y) .= 2 .* unsafe_array(x)
            t = C.tensor([7.0])
            push!(seen, x, y, t, C.keep!(C.tensor([8.0])))
            y
        end
        y = C.ops.myjl.seen(C.tensor([1.0, 2.0]))
        @test Array(y) == [2.0, 4.0]               # the result outlives the Julia handle
        @test C.isfreed(seen[1]) && C.isfreed(seen[2]) && C.isfreed(seen[3])
        @test !C.isfreed(seen[4]) && Array(seen[4]) == [8.0]
        # a scope around the call is untouched by the kernel's own scope
        z = C.withscope() do
            C.ops.myjl.seen(C.tensor([3.0]))
        end
        @test Array(z) == [6.0]
        # autograd backward: the handles it is given are freed too
        grads_seen = Any[]
        C.impl_autograd(lib, "seen") do args, result, grads
            push!(grads_seen, args[1], result, grads[1])
            2 .* grads[1]
        end
        x = C.requires_grad!(C.tensor([1.0, 2.0]))
        C.backward(C.ops.aten.sum(C.ops.myjl.seen(x)))
        @test Array(C.grad(x)) == [2.0, 2.0]
        @test length(grads_seen) == 3 && all(C.isfreed, grads_seen)
    end

    @testset "meta: shapes only, the CPU kernel is not called" begin
        ncpu = OPLIB_CALLS[:cpu]
        m = C.empty(Float32, (3, 7); device = :meta)
        ym = C.ops.myjl.softsign(m)
        @test C.device(ym) == Device(:meta)
        @test size(ym) == (3, 7) && eltype(ym) == Float32
        @test OPLIB_CALLS[:meta] == 1
        @test OPLIB_CALLS[:cpu] == ncpu
    end

    @testset "autograd vs central finite differences (Float64)" begin
        (function ()   # a frame of its own: no graph outlives the testset
            x0 = [-2.5, -0.5, 0.3, 0.75, 3.0]
            x = C.requires_grad!(C.tensor(x0))
            y = C.ops.myjl.softsign(x)
            @test C.grad_fn_name(y) == "myjl::softsign"
            Jad = ad_jacobian(y, x)
            Jfd = fd_jacobian(v -> Array(C.ops.myjl.softsign(C.tensor(v))), x0)
            @test maximum(abs.(Jad .- Jfd)) < 1e-6
            @test OPLIB_CALLS[:backward] == length(x0)
            # backward() fills .grad on the calling thread
            C.backward(C.ops.aten.sum(y))
            @test Array(C.grad(x)) ≈ softsign_grad_ref.(x0) rtol = 1e-12
            # two tensor arguments and a float: one gradient per tensor argument
            a0, b0 = randn(4), randn(4)
            a = C.requires_grad!(C.tensor(a0)); b = C.requires_grad!(C.tensor(b0))
            z = C.ops.myjl.scale_mul(a, b, 1.5)
            @test ad_jacobian(z, a) ≈ fd_jacobian(v -> Array(C.ops.myjl.scale_mul(C.tensor(v), C.tensor(b0), 1.5)), a0) atol = 1e-6
            @test ad_jacobian(z, b) ≈ fd_jacobian(v -> Array(C.ops.myjl.scale_mul(C.tensor(a0), C.tensor(v), 1.5)), b0) atol = 1e-6
            # no recording without requires_grad: no node
            @test C.grad_fn_name(C.ops.myjl.softsign(C.tensor(x0))) === nothing
        end)()
    end

    @testset "a Julia exception in a kernel is a CTorchError" begin
        (function ()   # a frame of its own: no graph outlives the testset
            C.define(lib, "bad(Tensor x) -> Tensor")
            C.impl(lib, "bad", :CPU) do x
                error("kernel refuses this input")
            end
            err = try
                C.ops.myjl.bad(C.ones(2)); nothing
            catch e
                e
            end
            @test err isa CTorchError
            @test err.code == C.CT_ERR_CALLBACK
            @test occursin("kernel refuses this input", err.message)
            @test occursin("myjl::bad", err.message)
            # a wrong result type is reported the same way, and the op keeps working
            C.define(lib, "wrong(Tensor x) -> Tensor")
            C.impl(lib, "wrong", :CPU) do x
                Array(x)    # not a Tensor
            end
            err2 = try
                C.ops.myjl.wrong(C.ones(2)); nothing
            catch e
                e
            end
            @test err2 isa CTorchError && err2.code == C.CT_ERR_CALLBACK
            @test occursin("return a Tensor", err2.message)
            @test Array(C.ops.myjl.softsign(C.tensor([1.0]))) == [0.5]
            # a throwing backward: the backward call throws
            C.define(lib, "badgrad(Tensor x) -> Tensor")
            C.impl(lib, "badgrad", :CPU) do x
                C.clone(x)
            end
            C.impl_autograd(lib, "badgrad") do args, result, grads
                error("no gradient today")
            end
            xg = C.requires_grad!(C.ones(Float64, 3))
            yb = C.ops.myjl.badgrad(xg)
            eb = try
                C.backward(C.ops.aten.sum(yb)); nothing
            catch e
                e
            end
            @test eb isa CTorchError && occursin("no gradient today", eb.message)
        end)()
    end

    @testset "registration errors" begin
        # defined twice
        @test_throws CTorchError C.define(lib, "softsign(Tensor x) -> Tensor")
        e = try C.define(lib, "softsign(Tensor x) -> Tensor"); nothing catch e; e end
        @test e.code == C.CT_ERR_INVALID_ARGUMENT
        @test_throws CTorchError C.define(lib, "not a schema")
        @test_throws CTorchError C.define(lib, "otherns::f(Tensor x) -> Tensor")
        # a second kernel for the same key, an unknown key, an undefined op
        @test_throws CTorchError C.impl(identity, lib, "softsign", :CPU)
        @test_throws CTorchError C.impl(identity, lib, "softsign", :NoSuchKey)
        @test_throws CTorchError C.impl(identity, lib, "undefined_op", :CPU)
        @test_throws CTorchError C.Library("aten")
        # the failed registrations rooted nothing that stays
        C.release_unused!()
        @test count(v -> v isa C._KernelState && v.f === identity, values(C._ROOTS)) == 0
    end

    if Threads.nthreads() > 1
        @testset "a call from another thread fails cleanly" begin
            x = C.tensor([1.0, -1.0])
            owner = Threads.threadid()
            res = Vector{Any}(undef, Threads.nthreads())
            Threads.@threads for i in 1:Threads.nthreads()
                res[i] = Threads.threadid() == owner ? :owner :
                         try C.ops.myjl.softsign(x) catch e; e end
            end
            others = filter(r -> r !== :owner, res)
            @test !isempty(others)
            @test all(r -> r isa CTorchError && r.code == C.CT_ERR_NOT_SUPPORTED, others)
        end
    end

    @testset "freeing the library" begin
        GC.gc(); GC.gc(); C.release_unused!()
        kstates() = [v for v in values(C._ROOTS) if v isa C._KernelState]
        @test length(kstates()) == 13    # every kernel and backward registered above
        # a graph that still uses the autograd kernel (made and used in
        # functions, so no stack slot of this block keeps it)
        graph = Ref{Any}(nothing)
        (() -> (x = C.requires_grad!(C.tensor([0.5, -1.0])); graph[] = (x, C.ops.myjl.softsign(x))))()
        close(lib)
        @test !isopen(lib)
        # the kernels are un-rooted at once; the backward the graph uses stays
        @test [s.name for s in kstates()] == ["myjl::softsign (autograd backward)"]
        # ... and runs: backward after close still works
        (() -> C.backward(C.ops.aten.sum(graph[][2])))()
        @test Array(C.grad(graph[][1])) ≈ softsign_grad_ref.([0.5, -1.0])
        # once the graph is gone, it is un-rooted too
        graph[] = nothing
        GC.gc(); GC.gc(); C.release_unused!()
        @test isempty(kstates())
        # later calls by name fail cleanly (a new lookup: not found)
        e2 = try C.ops.myjl.softsign(C.ones(2)); nothing catch e; e end
        @test e2 isa CTorchError && e2.code == C.CT_ERR_NOT_FOUND
        @test !("myjl::softsign" in C.list_ops())
        @test_throws CTorchError C.define(lib, "again(Tensor x) -> Tensor")
        @test_throws CTorchError C.impl(identity, lib, "softsign", :CPU)
        close(lib)   # twice is fine
        # defining the name again (in a new library) makes it callable again
        lib2 = C.Library("myjl")
        C.define(lib2, "softsign(Tensor x) -> Tensor")
        C.impl(x -> C.clone(x), lib2, "softsign", :CPU)
        @test Array(C.ops.myjl.softsign(C.tensor([2.0]))) == [2.0]
        close(lib2)
    end

    @testset "a saved TorchScript model calls the Julia kernel" begin
        py = "/usr/bin/python3"
        script = """
        import sys, torch
        lib = torch.library.Library("myjlts", "DEF")
        lib.define("softsign(Tensor x) -> Tensor")
        class M(torch.nn.Module):
            def forward(self, x):
                return torch.ops.myjlts.softsign(x) * 2
        torch.jit.script(M()).save(sys.argv[1])
        """
        # torch.jit.script reads the class's source: write it to a file
        dir = mktempdir()
        src = joinpath(dir, "make_softsign_model.py")
        write(src, script)
        path = joinpath(dir, "softsign_model.pt")
        made = isfile(py) && success(pipeline(`$py $src $path`; stdout = devnull, stderr = devnull))
        if !made
            @skip_test "no /usr/bin/python3 with torch.library to make the model"
        else
            tslib = C.Library("myjlts")
            ncalls = Ref(0)
            C.define(tslib, "softsign(Tensor x) -> Tensor")
            C.impl(tslib, "softsign", :CPU) do x
                ncalls[] += 1
                y = C.empty_like(x)
                softsign_kernel!(unsafe_array(y), unsafe_array(x))
                y
            end
            m = C.load(path)
            xs = Float32[-3 -1 0; 0.5 2 4]
            y = C.forward(m, C.tensor(xs))
            @test y isa Tensor && size(y) == (2, 3)
            @test Array(y) ≈ 2 .* softsign_ref.(xs)
            @test ncalls[] == 1
            y = C.forward(m, C.tensor(xs))
            @test ncalls[] == 2
            close(tslib)
            e = try C.forward(m, C.tensor(xs)); nothing catch e; e end
            @test e isa CTorchError && occursin("was removed", e.message)
            @test ncalls[] == 2
        end
    end
end

# ---- kernels on Julia arrays (impl / impl_autograd with arrays=true) -------------

# What the kernels saw, for the tests below.
const ARR_SEEN = Dict{Symbol,Any}()

@testset "kernels on arrays (arrays=true)" begin
    lib = C.Library("myjlarr")
    C.define(lib, "softsign(Tensor x) -> Tensor")
    C.impl(lib, "softsign", :CPU; arrays = true) do x
        ARR_SEEN[:x] = copy(x)         # (x itself is valid only during the call)
        ARR_SEEN[:x_ptr] = pointer(x)
        y = softsign_kernel!(similar(x), x)
        ARR_SEEN[:y_ptr] = pointer(y)
        ARR_SEEN[:y_size] = size(y)
        y
    end
    C.impl_autograd(lib, "softsign"; arrays = true) do args, result, grads
        (x,), (gy,) = args, grads
        ARR_SEEN[:bw_types] = (typeof(x), typeof(result), typeof(gy))
        gy ./ (1 .+ abs.(x)) .^ 2
    end
    # the values form (a float argument), a backward with one gradient per argument
    C.define(lib, "scale_mul(Tensor x, Tensor y, float a=2.0) -> Tensor")
    C.impl(lib, "scale_mul", :CPU; arrays = true) do x, y, a
        a .* x .* y .+ y
    end
    C.impl_autograd(lib, "scale_mul"; arrays = true) do (x, y, a), r, (g,)
        (a .* y .* g, (a .* x .+ 1) .* g, nothing)
    end
    # in place: written through the argument's array
    C.define(lib, "scale_(Tensor(a!) x, float a) -> Tensor(a!)")
    C.impl(lib, "scale_", :CPU; arrays = true) do x, a
        ARR_SEEN[:inplace_ptr] = pointer(x)
        x .*= a
        x
    end
    # add(x, y): its backward returns the incoming gradient array itself
    C.define(lib, "add2(Tensor x, Tensor y) -> Tensor")
    C.impl(lib, "add2", :CPU; arrays = true) do x, y
        x .+ y
    end
    C.impl_autograd(lib, "add2"; arrays = true) do args, r, (g,)
        (g, g)
    end
    # several results; a result that is a reshape of an argument (copied)
    C.define(lib, "minmax2(Tensor a, Tensor b) -> (Tensor, Tensor)")
    C.impl(lib, "minmax2", :CPU; arrays = true) do a, b
        (min.(a, b), max.(a, b))
    end
    C.define(lib, "flat(Tensor x) -> Tensor")
    C.impl(lib, "flat", :CPU; arrays = true) do x
        vec(x)          # shares x's memory in Julia
    end

    @testset "the kernel gets the tensor's memory (zero copy), sizes reversed" begin
        x = C.randn(Float32, 3, 4)
        y = C.ops.myjlarr.softsign(x)
        @test ARR_SEEN[:x_ptr] == Ptr{Float32}(C.data_ptr(x))
        @test typeof(ARR_SEEN[:x]) == Matrix{Float32} && size(ARR_SEEN[:x]) == (4, 3)
        @test ARR_SEEN[:y_size] == (4, 3)
        @test size(y) == (3, 4) && eltype(y) == Float32 && C.is_contiguous(y)
        @test Array(y) ≈ softsign_ref.(Array(x))
        # 3-D, Float64, through a TorchScript-free path with 0 elements too
        x3 = C.randn(2, 3, 5)
        @test Array(C.ops.myjlarr.softsign(x3)) ≈ softsign_ref.(Array(x3))
        @test size(ARR_SEEN[:x]) == (5, 3, 2)
        @test size(C.ops.myjlarr.softsign(C.empty(Float32, (0, 3)))) == (0, 3)
    end

    @testset "a returned Array becomes the result without a copy" begin
        x = C.randn(Float64, 2, 3)
        y = C.ops.myjlarr.softsign(x)
        @test Ptr{Float64}(C.data_ptr(y)) == ARR_SEEN[:y_ptr]
        GC.gc(); C.release_unused!()
        @test Array(y) ≈ softsign_ref.(Array(x))      # still alive: rooted while y is
        lo, hi = C.ops.myjlarr.minmax2(C.tensor([1.0, 5.0]), C.tensor([3.0, 2.0]))
        @test Array(lo) == [1.0, 2.0] && Array(hi) == [3.0, 5.0]
        # a result sharing an argument's memory is copied
        x = C.tensor(Float32[1 2; 3 4])
        f = C.ops.myjlarr.flat(x)
        @test size(f) == (4,) && Array(f) == Float32[1, 2, 3, 4]   # torch's row-major order
        @test C.data_ptr(f) != C.data_ptr(x)
    end

    @testset "writes through the array reach the tensor" begin
        x = C.tensor([1.0, -2.0, 3.0])
        r = C.ops.myjlarr.scale_(x, 2.0)
        @test ARR_SEEN[:inplace_ptr] == Ptr{Float64}(C.data_ptr(x))
        @test Array(x) == [2.0, -4.0, 6.0]
        @test C.data_ptr(r) == C.data_ptr(x)
        # a non-contiguous mutable argument: its contiguous copy is copied back
        X = C.tensor([1.0 2.0 3.0; 4.0 5.0 6.0])
        Xt = C.ops.aten.t(X)
        @test !C.is_contiguous(Xt)
        C.ops.myjlarr.scale_(Xt, 10.0)
        @test Array(X) == [10.0 20.0 30.0; 40.0 50.0 60.0]
    end

    @testset "a non-contiguous argument arrives contiguous" begin
        X = C.tensor(Float32[1 -2 3; -4 5 -6])
        Xt = C.ops.aten.t(X)                 # (3,2), strides (1,3)
        @test !C.is_contiguous(Xt)
        y = C.ops.myjlarr.softsign(Xt)
        A = ARR_SEEN[:x]
        @test size(A) == (2, 3)             # reversed sizes of the (3,2) argument
        @test A == permutedims(Array(Xt))   # A[j,i] == Xt[i,j]: contiguous row-major data
        @test Array(y) ≈ softsign_ref.(Array(Xt))
        @test ARR_SEEN[:x_ptr] != Ptr{Float32}(C.data_ptr(Xt))   # a copy, as it must be
    end

    @testset "gradients through an arrays=true backward" begin
        xs = [-2.5, -0.5, 0.1, 0.75, 3.0]
        x = requires_grad!(C.tensor(xs))
        y = C.ops.myjlarr.softsign(x)
        C.backward(C.ops.aten.sum(y))
        @test Array(C.grad(x)) ≈ softsign_grad_ref.(xs) rtol = 1e-12
        @test ARR_SEEN[:bw_types] == (Vector{Float64}, Vector{Float64}, Vector{Float64})
        # against finite differences, two tensor arguments and a float
        a0, b0 = randn(4), randn(4)
        a, b = requires_grad!(C.tensor(a0)), requires_grad!(C.tensor(b0))
        z = C.ops.myjlarr.scale_mul(a, b, 1.5)
        J = ad_jacobian(z, a)
        @test J ≈ fd_jacobian(v -> 1.5 .* v .* b0 .+ b0, a0) rtol = 1e-6
        @test ad_jacobian(z, b) ≈ fd_jacobian(v -> 1.5 .* a0 .* v .+ v, b0) rtol = 1e-6
        # a backward that returns the incoming gradient's array itself
        p, q = requires_grad!(C.randn(2, 3)), requires_grad!(C.randn(2, 3))
        s = C.ops.myjlarr.add2(p, q)
        C.backward(s; grad = C.tensor(fill(3.0f0, 2, 3)))
        @test Array(C.grad(p)) == fill(3.0f0, 2, 3) && Array(C.grad(q)) == fill(3.0f0, 2, 3)
    end

    @testset "inside a Sequential like any other layer" begin
        layer = ScriptModule("ArraySoftsign")
        C.define!(layer, "def forward(self, x):\n    return torch.ops.myjlarr.softsign(x)\n")
        model = C.nn.Sequential(C.nn.Linear(4, 6), layer, C.nn.Linear(6, 2))
        x = C.randn(5, 4)
        out = model(x)
        @test size(out) == (5, 2)
        C.backward(C.ops.aten.sum(out))
        @test all(p -> C.grad(p) !== nothing, C.params(model))
    end

    @testset "errors" begin
        e = try C.impl(lib, "softsign", :Meta; arrays = true) do x; x; end; nothing catch e; e end
        @test e isa ArgumentError && occursin("meta tensors have no memory", e.msg)
        C.define(lib, "badret(Tensor x) -> Tensor")
        C.impl(lib, "badret", :CPU; arrays = true) do x
            Any[1, "a"]
        end
        e = try C.ops.myjlarr.badret(C.randn(2)); nothing catch e; e end
        @test e isa CTorchError && e.code == C.CT_ERR_CALLBACK
        @test C._mutable_args("ns::f(Tensor(a!) x, int[] d=[1, 2], *, Tensor(b!)? out=None, float a) -> Tensor") == [1, 3]
        @test C._mutable_args("ns::f(Tensor x) -> Tensor") == Int[]
    end
    close(lib)
end
