# Trains a small conv net from Julia with CTorch alone: the net is TorchScript
# built in place, one layer is a plain Julia loop on torch's memory (a custom
# autograd function), and training uses ctorch's Adam, a cosine schedule and
# gradient clipping, each step in a `withscope` (its tensors freed when it
# ends). Saves the model (TorchScript) and checkpoints in torch.save's format
# that PyTorch resumes (examples/check_training.py).
#
#   scripts/julia examples/julia/train_convnet.jl [OUTDIR [STEPS]]

using CTorch
const C = CTorch

# conv -> relu -> pool -> flatten (features), the custom layer, a linear head;
# `forward` holds the custom layer's TorchScript twin, so the saved model runs
# whole in PyTorch.
const SOURCE = """
def features(self, x):
    h = torch.relu(torch.conv2d(x, self.conv_w, self.conv_b, [1, 1], [1, 1]))
    return torch.flatten(torch.max_pool2d(h, [2, 2]), 1)
def head(self, h):
    return torch.linear(h, self.fc_w, self.fc_b)
def forward(self, x):
    h = self.features(x)
    return self.head(h / (1 + torch.abs(h)))
"""

# The custom layer, y = x / (1 + |x|), as plain loops (function barriers).
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
const Softsign = AutogradFunction(
    function (ctx, x)
        save_for_backward!(ctx, x)
        xc, y = C.contiguous(x), C.empty_like(x)
        GC.@preserve xc y softsign!(unsafe_array(y), unsafe_array(xc))
        return y
    end,
    function (ctx, gy)
        (x,) = saved_tensors(ctx)
        xc, gyc, gx = C.contiguous(x), C.contiguous(gy), C.empty_like(x)
        GC.@preserve xc gyc gx softsign_grad!(unsafe_array(gx), unsafe_array(gyc), unsafe_array(xc))
        return gx
    end; name = "Softsign")

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

function build_model(gen)
    m = ScriptModule("ConvNet")
    params = Tensor[]
    for (name, shape, s) in (("conv_w", [8, 1, 3, 3], 0.3f0), ("conv_b", [8], 0.3f0),
                             ("fc_w", [4, 128], 0.1f0), ("fc_b", [4], 0.1f0))
        w = ops.aten.randn(shape; generator = gen) * s   # Float32 scale: stays Float32
        C.register_parameter!(m, name, w)
        push!(params, C.getattr(m, name))
    end
    C.define!(m, SOURCE)
    return m, params
end

function save_checkpoint(path, m, opt, sched, x, y, step; extra...)
    ck = Dict{String,Any}("model" => Dict(k => C.clone(v) for (k, v) in named_parameters(m)),
                          "optimizer" => C.state_dict(opt), "scheduler" => C.state_dict(sched),
                          "data" => (x, y), "step" => step)
    for (k, v) in extra
        ck[String(k)] = v
    end
    C.pickle_save(ck, path)
end

function main(outdir, steps)
    mkpath(outdir)
    gen = C.manual_seed!(Generator(), 0)
    x, y = make_data(256, gen)
    m, params = build_model(gen)
    opt = C.Adam(params; lr = 0.02)
    sched = C.CosineAnnealingLR(opt; T_max = steps, eta_min = 0.001)
    losses = Float64[]
    for step in 0:steps-1
        step == steps ÷ 2 && save_checkpoint(joinpath(outdir, "checkpoint_mid.pt"), m, opt, sched, x, y, step)
        withscope() do
            logits = m(:head, Softsign(m(:features, x)))
            loss = ops.aten.cross_entropy_loss(logits, y)
            zero_grad!(opt)
            backward(loss)
            C.clip_grad_norm!(params, 5.0)
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
    probe = C.no_grad() do
        m(ops.aten.slice(x, 0, 0, 16))
    end
    C.save(m, joinpath(outdir, "model.pt"))
    save_checkpoint(joinpath(outdir, "checkpoint.pt"), m, opt, sched, x, y, steps;
                    probe_logits = probe, losses = losses)
    println("saved $outdir/model.pt, checkpoint_mid.pt and checkpoint.pt")
end

main(length(ARGS) >= 1 ? ARGS[1] : "train_out", length(ARGS) >= 2 ? parse(Int, ARGS[2]) : 60)
