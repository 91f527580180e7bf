# Data-parallel training with CTorch.Distributed, one process per rank:
#
#   torchrun --nproc_per_node=2 --no_python scripts/julia bindings/julia/examples/ddp_train.jl
#
# (torchrun sets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE; on Debian 12's
# torch 1.13 with Python 3.11 also pass `--redirects 1 --tee 1`, see
# bindings/julia/README.md.) Each rank fits y = x w' + b on its own data;
# DistributedDataParallel averages the gradients over the ranks while
# backward runs, so every rank takes the same steps.
using CTorch
const C = CTorch
const dist = CTorch.Distributed
if !dist.is_gloo_available()                       # a libctorch without Gloo (PyPI: NCCL)
    println(stderr, "this libctorch has no Gloo backend (c10d with Gloo)")
    exit(0)
end

pg = dist.init_process_group(; timeout = 60)      # env:// (torchrun's variables)
r, n = dist.rank(pg), dist.world_size(pg)

w = requires_grad!(C.zeros(Float32, 1, 4))         # the parameters (torch's Linear layout)
b = requires_grad!(C.zeros(Float32, 1))
model = dist.DistributedDataParallel(pg, [w, b]) do x   # the forward
    C.ops.aten.linear(x, w, b)
end
opt = C.SGD([w, b]; lr = 0.1)

C.manual_seed!(C.default_generator(), r)           # different data on each rank
x = C.randn(Float32, 16, 4)
y = C.ops.aten.sum(x; dim = [1], keepdim = true) .+ 0.5f0   # the answer: w = 1, b = 0.5
for step in 1:200
    withscope() do
        zero_grad!(opt)
        loss = C.ops.aten.mse_loss(model(x), y)    # model(x): forward + prepare_backward!
        backward(loss)                             # gradients all-reduced (averaged) here
        step!(opt)
    end
end

# every rank holds the same parameters
ws = dist.all_gather(pg, w)
@assert all(Array(v) == Array(w) for v in ws)
@assert isapprox(Array(w), ones(Float32, 1, 4); atol = 1e-3) && isapprox(b[1], 0.5f0; atol = 1e-3)
r == 0 && println("$n ranks trained w = ", Array(w), ", b = ", b[1])
dist.barrier(pg)
close(model)
close(pg)
