# CTorch demo: custom layers written in Julia on torch's own memory, and a
# TorchScript model run from Julia.
#
#   scripts/julia examples/julia/demo.jl [model.pt [sizes]]
#
# With a model path (a torch.jit.save'd module taking one (1,3,H,W) or (N,4)
# float tensor... any module whose forward takes one tensor of the size given
# by ARGS[2], e.g. "1,3,224,224") it runs that model; without, it builds a
# small model from CTorch.nn's layers, with a method added in TorchScript.

using CTorch, CTorch.nn
const C = CTorch

println("libctorch ", C.version(), " on LibTorch ", C.torch_version(), " (", C.library_path(), ")")

# ---- 1. A tensor is a Julia array over torch's memory --------------------------
t = ops.aten.reshape(C.arange(Float32, 0, 24), [2, 3, 4])   # torch sizes (2,3,4)
@assert size(t) == (2, 3, 4) && t[2, 3, 4] == 23      # torch's t[1,2,3]
t[1, 1, 1] = 100                                      # written in torch's memory
@assert C.item(ops.aten.select(ops.aten.select(ops.aten.select(t, 0, 0), 0, 0), 0, 0)) == 100
t[1, 1, 1] = 0
A = unsafe_array(t)                                   # the raw memory: Julia 4×3×2, same memory
@assert pointer(A) == pointer(t) && A[4, 3, 2] == 23
println(summary(t), "; unsafe_array: ", summary(A))
show(stdout, MIME"text/plain"(), C.tensor(Float32[1 2; 3 4])); println()

# ---- 2. The seed's custom layers ------------------------------------------------------
f!(x) = (x .*= 2)                                     # in place, on torch memory

function g_kernel!(y, x)                              # function barrier: type-stable loop
    @inbounds for i in eachindex(x, y)
        y[i] = x[i] > 0 ? x[i] : 0.1f0 * x[i]         # leaky ReLU, as a plain loop
    end
    return y
end
function g(x::Tensor)                                 # output allocated by torch
    y = C.empty_like(x)
    g_kernel!(unsafe_array(y), unsafe_array(x))
    return y
end

f!(unsafe_array(t))                                   # torch sees the change
@assert sum(t) == 2 * sum(0:23)                       # a reduction is a number, as for arrays
println("f! doubled the tensor in place: sum = ", sum(t))

# As autograd functions: forward and backward are Julia code over zero-copy arrays.
const Double = AutogradFunction(
    (ctx, x) -> (y = C.clone(x); f!(unsafe_array(y)); y),
    (ctx, gy) -> (gx = C.clone(gy); f!(unsafe_array(gx)); gx);
    name = "JuliaDouble")

const LeakyReLU = AutogradFunction(
    function (ctx, x)
        save_for_backward!(ctx, x)
        return g(x)
    end,
    function (ctx, gy)
        (x,) = saved_tensors(ctx)
        gx = C.empty_like(x)
        gyc = C.contiguous(gy)
        GC.@preserve x gx gyc begin     # unsafe_array does not keep its tensor alive
            unsafe_array(gx) .= unsafe_array(gyc) .* ifelse.(unsafe_array(x) .> 0, 1f0, 0.1f0)
        end
        return gx
    end;
    name = "JuliaLeakyReLU")

x = requires_grad!(Tensor(Float32[-2, -1, 0.5, 3]))
y = LeakyReLU(Double(x))
loss = ops.aten.sum(y .* y)                           # a 0-dim tensor to differentiate
backward(loss)
println("x = ", Array(x), "\ny = ", Array(y), "\ndloss/dx = ", Array(grad(x)))
# check against the same computation with torch ops
x2 = requires_grad!(Tensor(Float32[-2, -1, 0.5, 3]))
d = x2 * 2
y2 = ops.aten.leaky_relu(d, 0.1)
backward(ops.aten.sum(y2 .* y2))
@assert isapprox(grad(x), grad(x2); rtol = 1e-5)
println("gradients match torch's own ops")

# ---- 3. A model from Julia -------------------------------------------------------------
if !isempty(ARGS)
    m = C.load(ARGS[1])
    eval!(m)
    dims = length(ARGS) >= 2 ? parse.(Int, split(ARGS[2], ',')) : [1, 3, 224, 224]
    inp = C.randn(dims...)
else
    # torch.nn's layers (CTorch.nn), plus a method of our own in TorchScript
    m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    C.define!(m, """
def logits(self, x, temperature: float = 1.0):
    return self.forward(x) / temperature
""")
    inp = Tensor(rand(Float32, 5, 4))                 # Julia memory, no copy: torch (5,4)
end
out = C.no_grad(() -> m(inp))
println("model output: ", summary(out))
for (name, p) in state_dict(m)          # parameters and buffers, torch's order
    println("  ", name, " ", size(p), " ", eltype(p))
end
if isempty(ARGS)
    println("logits(T=2) == forward/2: ", isapprox(m(:logits, inp; temperature = 2.0), out / 2))
end
println("demo OK")
