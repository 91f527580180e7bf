# Custom layers written in Julia (AutogradFunction, CTorch.Library kernels and
# autograd formulas): the Julia stack of an exception they raise reaches the
# user, and what they receive under autocast(:cpu).
# Included by runtests.jl; alone: scripts/julia bindings/julia/CTorch/test/custom_layers.jl

using Test
using CTorch
using CTorch: ops

# The kernels below throw on the line they record, so the tests can look for
# "custom_layers.jl:LINE" in the printed error.
const THROW_LINES = Dict{Symbol,Int}()
function layer_kernel_refuses(x)
    THROW_LINES[:kernel] = @__LINE__; error("the Julia kernel refused its input")
end
function layer_backward_refuses(g)
    THROW_LINES[:backward] = @__LINE__; throw(DomainError(-1, "the Julia backward refused"))
end
function layer_array_kernel_refuses(x::Array)
    THROW_LINES[:arrays] = @__LINE__; throw(ArgumentError("the array kernel refused"))
end

# The error of `f()` and the text Julia's REPL would print for it.
function caught(f)
    try
        f()
    catch e
        return e, sprint(showerror, e, catch_backtrace())
    end
    error("no exception")
end

# The user's frame: the function's name and this file's line of the throw.
names_frame(text, fname, key) =
    occursin(string(fname), text) && occursin("custom_layers.jl:$(THROW_LINES[key])", text)

@testset "custom layers: the Julia stack of an exception in a callback" begin
    lib = CTorch.Library("tracejl")
    try
        CTorch.define(lib, "refuse(Tensor x) -> Tensor")
        CTorch.impl(lib, "refuse", :CPU) do x
            layer_kernel_refuses(x)
        end
        e, text = caught(() -> CTorch.ops.tracejl.refuse(CTorch.ones(2)))
        @test e isa CTorchError && e.code == CTorch.CT_ERR_CALLBACK
        @test occursin("the Julia kernel refused its input", e.message)
        @test e.cause isa ErrorException && e.cause.msg == "the Julia kernel refused its input"
        @test names_frame(text, :layer_kernel_refuses, :kernel)
        # the same through the kernel's other entry (values, not tensors only)
        CTorch.define(lib, "refuse2(Tensor x, int n) -> Tensor")
        CTorch.impl(lib, "refuse2", :CPU) do x, n
            layer_kernel_refuses(x)
        end
        e, text = caught(() -> CTorch.ops.tracejl.refuse2(CTorch.ones(2), 3))
        @test e.cause isa ErrorException && names_frame(text, :layer_kernel_refuses, :kernel)

        # arrays = true
        CTorch.define(lib, "refuse_arrays(Tensor x) -> Tensor")
        CTorch.impl(lib, "refuse_arrays", :CPU; arrays = true) do x
            layer_array_kernel_refuses(x)
        end
        e, text = caught(() -> CTorch.ops.tracejl.refuse_arrays(CTorch.ones(2)))
        @test e.cause isa ArgumentError && names_frame(text, :layer_array_kernel_refuses, :arrays)

        # an autograd formula (impl_autograd): raised by backward
        CTorch.define(lib, "twice(Tensor x) -> Tensor")
        CTorch.impl(lib, "twice", :CPU) do x
            x * 2
        end
        CTorch.impl_autograd(lib, "twice") do args, result, grads
            layer_backward_refuses(grads[1])
        end
        x = requires_grad!(CTorch.ones(3))
        y = CTorch.ops.tracejl.twice(x)
        e, text = caught(() -> backward(ops.aten.sum(y)))
        @test e isa CTorchError && e.code == CTorch.CT_ERR_CALLBACK
        @test e.cause isa DomainError && names_frame(text, :layer_backward_refuses, :backward)

        # through a TorchScript model that calls the operator
        m = ScriptModule("CallsRefuse")
        CTorch.define!(m, "def forward(self, x):\n    return torch.ops.tracejl.refuse(x) + 1\n")
        e, text = caught(() -> m(CTorch.ones(2)))
        @test e isa CTorchError && e.code == CTorch.CT_ERR_TORCH
        @test e.cause isa ErrorException && names_frame(text, :layer_kernel_refuses, :kernel)
    finally
        close(lib)
    end

    # AutogradFunction: forward and backward
    F = AutogradFunction((ctx, x) -> layer_kernel_refuses(x), (ctx, g) -> g)
    e, text = caught(() -> F(CTorch.ones(2)))
    @test e isa CTorchError && e.code == CTorch.CT_ERR_CALLBACK
    @test e.cause isa ErrorException && names_frame(text, :layer_kernel_refuses, :kernel)
    B = AutogradFunction((ctx, x) -> CTorch.clone(x), (ctx, g) -> layer_backward_refuses(g))
    y = B(requires_grad!(CTorch.ones(2)))
    e, text = caught(() -> backward(ops.aten.sum(y)))
    @test e.cause isa DomainError && names_frame(text, :layer_backward_refuses, :backward)
    # the callback's frames stop at the trampoline: none of CTorch's own callback frames
    @test !occursin("_run_trampoline", text) && !occursin("_kernel_call", text)

    # A nested failure: a Julia kernel that calls a failing Julia operator shows both.
    lib2 = CTorch.Library("tracejl2")
    try
        CTorch.define(lib2, "inner(Tensor x) -> Tensor")
        CTorch.impl(lib2, "inner", :CPU) do x
            layer_kernel_refuses(x)
        end
        CTorch.define(lib2, "outer(Tensor x) -> Tensor")
        CTorch.impl(lib2, "outer", :CPU) do x
            CTorch.ops.tracejl2.inner(x)
        end
        e, text = caught(() -> CTorch.ops.tracejl2.outer(CTorch.ones(2)))
        @test e.cause isa CTorchError && e.cause.cause isa ErrorException
        @test names_frame(text, :layer_kernel_refuses, :kernel)
    finally
        close(lib2)
    end

    # A CT_ERR_CALLBACK that no Julia exception caused (ctorch's own check of
    # the returned gradients) has no cause, also when a record of another
    # callback's exception was left behind.
    CTorch._record_callback_error(ErrorException("stale"), nothing, "a stale message")
    Wrong = AutogradFunction((ctx, x) -> CTorch.clone(x), (ctx, g) -> CTorch.ones(5))
    e, _ = caught(() -> backward(ops.aten.sum(Wrong(requires_grad!(CTorch.ones(2))))))
    @test e isa CTorchError && e.code == CTorch.CT_ERR_CALLBACK && e.cause === nothing
    # other errors have none either, and print as before
    e, text = caught(() -> ops.aten.mm(CTorch.ones(2, 3), CTorch.ones(2, 3)))
    @test e isa CTorchError && e.cause === nothing && startswith(text, "CTorchError(CT_ERR_")
end

# ---- autocast(:cpu) -------------------------------------------------------------

# A loop kernel on two arrays of one element type, as custom layers are
# usually written: under autocast it would get BFloat16 and Float32.
function scale_rows!(y::Array{T,2}, x::Array{T,2}, w::Array{T,1}) where {T}
    @inbounds for j in axes(x, 2), i in axes(x, 1)
        y[i, j] = x[i, j] * w[i]
    end
    return y
end

@testset "custom layers under autocast(:cpu)" begin
    CTorch.manual_seed(0)
    lin = CTorch.nn.Linear(4, 3)
    w = requires_grad!(CTorch.tensor(Float32[1, 2, 3]))
    x = CTorch.randn(5, 4)
    seen = Any[]

    # What a layer receives: x from an autocast op (linear) is BFloat16, the
    # layer's own parameter stays Float32, and autocast is still on inside.
    Probe = AutogradFunction(
        function (ctx, h, w)
            push!(seen, (eltype(h), eltype(w), CTorch.is_autocast_enabled(:cpu),
                         eltype(matmul(h, CTorch.ones(3, 2)))))
            ops.aten.mul(h, w)
        end,
        (ctx, g) -> (ops.aten.mul(g, 1), nothing))
    autocast(:cpu) do
        Probe(lin(x), w)
    end
    @test seen == [(BFloat16, Float32, true, BFloat16)]

    # A layer that casts its input to its parameter's type (what
    # torch.amp.custom_fwd(cast_inputs=torch.float32) does) runs its Float32
    # kernel and gives a Float32 result with gradients for both.
    Scale = AutogradFunction(
        function (ctx, h, w)
            h32 = CTorch.contiguous(CTorch.to(h, eltype(w)))   # the cast
            save_for_backward!(ctx, h32, w)
            out = CTorch.empty_like(h32)
            GC.@preserve h32 w out scale_rows!(unsafe_array(out), unsafe_array(h32), unsafe_array(w))
            out
        end,
        function (ctx, gy)
            hs, ws = saved_tensors(ctx)
            (ops.aten.mul(gy, ws), ops.aten.sum(ops.aten.mul(gy, hs), [0]))
        end; name = "ScaleRows")
    h16 = autocast(:cpu) do
        lin(x)
    end
    y = autocast(:cpu) do
        Scale(lin(x), w)
    end
    @test eltype(h16) == BFloat16 && eltype(y) == Float32
    @test Array(y) ≈ Array(CTorch.to(h16, Float32)) .* [1 2 3]
    backward(ops.aten.sum(y))
    @test eltype(grad(w)) == Float32 && eltype(grad(CTorch.params(lin)[1])) == Float32
    @test Array(grad(w)) ≈ vec(sum(Array(CTorch.to(h16, Float32)); dims = 1)) rtol = 1e-2
    # Without the cast the same kernel gets BFloat16 and Float32 arrays: no method.
    NoCast = AutogradFunction(
        function (ctx, h, w)
            out = CTorch.empty_like(h)
            GC.@preserve h w out scale_rows!(unsafe_array(out), unsafe_array(h), unsafe_array(w))
            out
        end, (ctx, g) -> (g, nothing))
    e = try autocast(() -> NoCast(lin(x), w), :cpu); nothing catch err; err end
    @test e isa CTorchError && e.cause isa MethodError
    # ... and the same layer outside autocast gets Float32 from linear.
    @test eltype(NoCast(lin(x), w)) == Float32

    # An operator kernel (CTorch.Library) gets the same types: torch's autocast
    # has no rule for a custom operator, so the arguments pass as they are.
    lib = CTorch.Library("acjl")
    try
        CTorch.define(lib, "scale_rows(Tensor x, Tensor w) -> Tensor")
        CTorch.impl(lib, "scale_rows", :CPU; arrays = true) do x, w
            push!(seen, (eltype(x), eltype(w)))
            T = promote_type(eltype(x), eltype(w))          # the cast, on arrays
            xt = T.(x)
            scale_rows!(similar(xt), xt, T.(w))
        end
        empty!(seen)
        y = autocast(:cpu) do
            CTorch.ops.acjl.scale_rows(lin(x), w)
        end
        @test seen == [(BFloat16, Float32)]
        @test eltype(y) == Float32 && Array(y) ≈ Array(CTorch.to(h16, Float32)) .* [1 2 3]
    finally
        close(lib)
    end
end
