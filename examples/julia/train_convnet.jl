# Trains a small conv net from Julia with CTorch alone: the net is built from
# CTorch.nn's layers (torch.nn's Conv2d, BatchNorm2d, ReLU, MaxPool2d, Flatten,
# Dropout, Linear), with one layer written in Julia: softsign, an operator in
# torch's dispatcher ("examples::softsign") whose kernel and backward are plain
# Julia loops on torch's memory, with a TorchScript twin. Training uses ctorch's
# Adam, a cosine schedule and gradient clipping, each step in a `withscope`
# (its tensors freed when it ends). Saves the model for PyTorch
# (`CTorch.to_pytorch`: the twin in place of the Julia kernel) and checkpoints
# in torch.save's format that PyTorch resumes (examples/check_training.py).
#
#   scripts/julia examples/julia/train_convnet.jl [OUTDIR [STEPS]]

using CTorch, CTorch.nn
const C = CTorch

# ---- the Julia layer: y = x / (1 + |x|) ---------------------------------------------

# Plain loops behind function barriers (type-stable on the arrays' element type).
function softsign!(y, x)
    @inbounds for i in eachindex(x, y)
        y[i] = x[i] / (1 + abs(x[i]))
    end
    return y
end
function softsign_grad!(gx, gy, x)
    @inbounds for i in eachindex(x, gx, gy)
        d = 1 + abs(x[i])
        gx[i] = gy[i] / (d * d)
    end
    return gx
end

# The operator, its kernel and backward, and its twin: what PyTorch runs in the
# saved model (checked against the kernel in main). With `arrays = true` the
# kernel and the backward get Julia Arrays on torch's memory (no copy; sizes
# reversed, as unsafe_array gives them) and return Arrays, which become the
# result / gradient tensors without a copy.
const LIB = C.Library("examples")
C.define(LIB, "softsign(Tensor x) -> Tensor")
C.impl(LIB, "softsign", :CPU; arrays = true) do x
    softsign!(similar(x), x)
end
C.impl_autograd(LIB, "softsign"; arrays = true) do (x,), y, (gy,)
    softsign_grad!(similar(x), gy, x)
end
C.set_twin(LIB, "softsign", "def softsign(x: Tensor) -> Tensor:\n" *
                            "    return x / (1 + torch.abs(x))\n")

function softsign_layer()
    m = ScriptModule("Softsign")
    C.define!(m, "def forward(self, x):\n    return torch.ops.examples.softsign(x)\n")
    return m
end

build_model() = nn.Sequential(nn.Conv2d(1, 8, 3; padding = 1), nn.BatchNorm2d(8), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.1), softsign_layer(),
                              nn.Linear(128, 4))

# ---- data, checkpoints -------------------------------------------------------------

# n 8x8 images of 4 classes: a bright bar in one of four places, plus noise.
function make_data(n, gen)
    x = ops.aten.randn([n, 1, 8, 8]; generator = gen)
    y = ops.aten.randint(4, [n]; generator = gen)
    GC.@preserve x y begin
        A, labels = unsafe_array(x), unsafe_array(y)   # torch's memory, sizes reversed
        for i in 1:n
            r = 2 + 2 * labels[i]                      # torch rows 1+2k, 2+2k (0-based)
            A[:, r:min(r + 1, 8), 1, i] .+= 0.7f0           # (the last bar is one row)
        end
    end
    return x, y
end

# A checkpoint in torch.save's format: the model's state_dict (torch's order), the
# optimizer's, the schedule's state (torch's CosineAnnealingLR.load_state_dict takes
# it), the data, and the default generator's state (Dropout's masks).
function save_checkpoint(path, model, opt, sched, x, y, step; extra...)
    ck = Dict{String,Any}("model" => C.StateDict(k => C.clone(v) for (k, v) in state_dict(model)),
                          "optimizer" => C.state_dict(opt), "scheduler" => C.state_dict(sched),
                          "data" => (x, y), "step" => step,
                          "rng_state" => C.get_state(C.default_generator()))
    for (k, v) in extra
        ck[String(k)] = v
    end
    C.pickle_save(ck, path)
end

function main(outdir, steps)
    mkpath(outdir)
    C.check_twin(LIB, "softsign", C.randn(4, 5))
    gen = C.manual_seed!(Generator(), 0)
    x, y = make_data(256, gen)
    C.manual_seed(0)
    model = build_model()
    ps = params(model)
    opt = C.Adam(ps; lr = 0.02)
    sched = C.CosineAnnealingLR(opt; T_max = steps, eta_min = 0.001)
    lossf = nn.CrossEntropyLoss()
    losses = Float64[]
    for step in 0:steps-1
        # a checkpoint mid-way (before this step's forward): PyTorch resumes from it
        step == steps ÷ 2 && save_checkpoint(joinpath(outdir, "checkpoint_mid.pt"), model, opt, sched, x, y, step)
        withscope() do
            loss = lossf(model(x), y)
            zero_grad!(opt)
            backward(loss)
            C.clip_grad_norm!(ps, 5.0)
            step!(opt)
            step!(sched)
            push!(losses, loss[])
        end
        if step % 10 == 0 || step == steps - 1
            println("step ", lpad(step, 3), "  loss ", round(losses[end]; digits = 4),
                    "  lr ", round(C.last_lr(sched)[1]; digits = 5))
        end
    end
    @assert losses[end] < 0.5 * losses[1] losses
    eval!(model)
    probe = C.no_grad() do
        model(ops.aten.slice(x, 0, 0, 16))                 # x[1:16]: the first 16 samples
    end
    C.save(C.to_pytorch(model), joinpath(outdir, "model.pt"))
    save_checkpoint(joinpath(outdir, "checkpoint.pt"), model, opt, sched, x, y, steps;
                    probe_logits = probe, losses = losses)
    println("saved $outdir/model.pt (for PyTorch), checkpoint_mid.pt and checkpoint.pt")
end

main(length(ARGS) >= 1 ? ARGS[1] : "train_out", length(ARGS) >= 2 ? parse(Int, ARGS[2]) : 60)
