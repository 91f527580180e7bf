# One rank of the two-rank test in test/distributed.jl (started by it, twice):
#
#   julia --project=... dist_worker.jl OUTFILE RANK_PORT
#
# Joins the group from torchrun's environment (MASTER_ADDR, MASTER_PORT, RANK,
# WORLD_SIZE, set by the parent), runs collectives, point-to-point, a subgroup
# and DistributedDataParallel, then the mixed-language protocol of
# dist_rank.jl on RANK_PORT, and serializes what it saw (a Dict) to OUTFILE
# for the parent to check. An error is recorded under "error".

module DistWorker

using Serialization
using CTorch
using CTorch: Tensor, ops, requires_grad!, backward, grad, step!, zero_grad!, named_parameters
const C = CTorch
const D = CTorch.Distributed

include(joinpath(@__DIR__, "dist_rank.jl"))

function ddp_train(ddp, params, x, y; steps, lr)
    opt = C.SGD(params; lr = lr)
    for _ in 1:steps
        zero_grad!(opt)
        loss = ops.aten.mse_loss(ddp(x), y)
        backward(loss)
        step!(opt)
    end
    return [Array(p) for p in params]
end

function worker(res::Dict{String,Any}, rank_port::Int)
    t0 = time()
    pg = D.init_process_group(; timeout = 30)            # env:// (as under torchrun)
    r, n = D.rank(pg), D.world_size(pg)
    res["rank"], res["world"], res["show"] = r, n, sprint(show, pg)
    res["init_s"] = time() - t0

    # all_reduce: sum (Julia memory, zero-copy), avg, max, min (a function as op)
    a = Float32[r + 1, 2 * (r + 1)]
    D.all_reduce!(pg, Tensor(a))
    res["sum"] = a
    res["avg"] = Array(D.all_reduce!(pg, Tensor(Float64[r, 10r]); op = :avg))
    res["max"] = Array(D.all_reduce!(pg, Tensor(Int64[5r, -r]); op = :max))
    res["min"] = Array(D.all_reduce!(pg, Tensor(Int64[5r, -r]); op = min))
    res["prod"] = Array(D.all_reduce!(pg, Tensor(Int64[r + 2]); op = *))
    res["bor"] = Array(D.all_reduce!(pg, Tensor(Int32[1 << r]); op = :bor))

    # broadcast from the last rank
    res["broadcast"] = Array(broadcast!(pg, Tensor(Int32[r, 100 + r]), n - 1))

    # all_gather into given tensors, and the allocating form
    outs = [C.zeros(Float32, 2) for _ in 1:n]
    D.all_gather!(pg, outs, Tensor(Float32[r, r + 0.5]))
    res["all_gather"] = [Array(o) for o in outs]
    res["all_gather_new"] = [Array(o) for o in D.all_gather(pg, Tensor(Int64[r, r, r]))]

    # reduce_scatter: ins[j] = [10j + r]; rank r gets sum over ranks of their ins[r+1]
    out = C.zeros(Int64, 1)
    D.reduce_scatter!(pg, out, [Tensor(Int64[10j + r]) for j in 1:n])
    res["reduce_scatter"] = Array(out)

    # all_to_all: ins[j] = [100r + j]; outs[j] = rank j-1's ins[r+1]
    outs2 = [C.zeros(Int64, 1) for _ in 1:n]
    D.all_to_all!(pg, outs2, [Tensor(Int64[100r + j]) for j in 1:n])
    res["all_to_all"] = [Array(o)[1] for o in outs2]

    # point to point: 0 -> 1 (blocking, any source), 1 -> 0 (async, known source)
    if r == 0
        D.send(pg, Tensor(Float32[1, 2, 3]), 1; tag = 7)
        b = zeros(Float32, 2)
        w = D.recv!(pg, Tensor(b), 1; tag = 8, async = true)
        wait(w)
        res["p2p"] = (b, D.is_completed(w), isready(w))
    else
        b = zeros(Float32, 3)
        src = D.recv!(pg, Tensor(b); tag = 7)
        w = D.send(pg, Tensor(Float32[4, 5]), 0; tag = 8, async = true)
        wait(w)
        res["p2p"] = (b, src)
    end

    # async all_reduce; a wait that runs out (the sender is late), then succeeds
    t = C.ones(Float64, 3)
    w = D.all_reduce!(pg, t; async = true)
    res["async_work"] = w isa D.Work
    wait(w)
    res["async"] = (Array(t), D.is_completed(w))
    # A wait that runs out (the sender is late), then the same work succeeds.
    # On a subgroup of its own, so that a failure here leaves `pg` usable.
    gt = D.new_group(pg, [0, 1])
    try
        if r == 0
            late = zeros(Int64, 1)
            wl = D.recv!(gt, Tensor(late), 1; tag = 9, async = true)
            e = try
                wait(wl; timeout = 0.3); nothing
            catch err
                err
            end
            res["wait_timeout"] = e isa C.CTorchError ? (e.code, e.message) : e
            D.barrier(pg)
            wait(wl)
            res["late"] = (late, D.is_completed(wl))
        else
            D.barrier(pg)
            D.send(gt, Tensor(Int64[42]), 0; tag = 9)
            res["late"] = :sent
        end
    catch err
        res["late"] = sprint(showerror, err)
    end
    close(gt)

    # subgroups: {1} (rank 0 is not a member) and {1, 0}
    g1 = D.new_group(pg, [1])
    res["sub1"] = g1 === nothing ? nothing : (D.rank(g1), D.world_size(g1), Array(D.all_reduce!(g1, Tensor(Int64[7]))))
    g2 = D.new_group(pg, [1, 0])
    res["sub2"] = (D.rank(g2), D.world_size(g2), Array(D.all_reduce!(g2, Tensor(Int64[r + 1]))))
    g1 === nothing || close(g1)
    close(g2)

    # DistributedDataParallel: y = x w' + b, mse, SGD. Rank r has rows 4r+1:4r+4
    # of the full batch; the parameters start different on each rank (DDP
    # copies rank 0's). The parent trains on the full batch in one process.
    X, Y, W0, B0 = dist_ddp_data()
    rows = 4r+1:4r+4
    x, y = Tensor(X[rows, :]), Tensor(Y[rows, :])
    w = requires_grad!(Tensor(W0 .+ r))                # rank 1's start is wrong on purpose
    bb = requires_grad!(Tensor(B0 .- r))
    ddp = D.DistributedDataParallel(pg, [w, bb]) do x
        ops.aten.linear(x, w, bb)
    end
    res["ddp_synced"] = (Array(w), Array(bb))          # rank 0's after the constructor
    res["ddp_params"] = ddp_train(ddp, [w, bb], x, y; steps = DDP_STEPS, lr = DDP_LR)
    res["ddp_show"] = sprint(show, ddp)
    close(ddp)
    # the same over a ScriptModule (ct_ddp_new_module)
    m = C.ScriptModule("DistLinear")
    C.register_parameter!(m, "w", Tensor(W0 .* (1 + r)))
    C.register_parameter!(m, "b", Tensor(B0 .* (1 + r)))
    C.define!(m, "def forward(self, x):\n    return torch.matmul(x, self.w.t()) + self.b\n")
    mddp = D.DDP(pg, m)
    ps = named_parameters(m)
    res["ddp_module_params"] = ddp_train(mddp, [ps["w"], ps["b"]], x, y; steps = DDP_STEPS, lr = DDP_LR)
    res["ddp_module_n"] = length(D.parameters(mddp))
    close(mddp)

    D.barrier(pg)
    close(pg)
    res["collectives_s"] = time() - t0

    # the mixed-language protocol of dist_rank.jl (its own store and group)
    io = IOBuffer()
    dist_rank_protocol(r, n, rank_port; io = io)
    res["protocol"] = String(take!(io))
    res["total_s"] = time() - t0
    return res
end

# shared with the parent (test/distributed.jl includes this file)
const DDP_STEPS = 5
const DDP_LR = 0.1
function dist_ddp_data()
    X = [sin(0.7i + 1.3j) for i in 1:8, j in 1:3]          # 8 x 3
    Y = reshape([cos(0.5i) + 0.1i for i in 1:8], 8, 1)      # 8 x 1
    W0 = [0.3 -0.2 0.1]                                     # 1 x 3 (torch's Linear weight)
    B0 = [0.05]
    return X, Y, W0, B0
end

end # module DistWorker

function _worker_main(args)
    outfile, rank_port = args[1], parse(Int, args[2])
    res = Dict{String,Any}()
    code = 0
    try
        DistWorker.worker(res, rank_port)
    catch e
        res["error"] = sprint(showerror, e, catch_backtrace())
        println(stderr, res["error"])
        code = 1
    end
    DistWorker.serialize(outfile, res)
    return code
end

if abspath(PROGRAM_FILE) == @__FILE__
    exit(_worker_main(ARGS))
end
