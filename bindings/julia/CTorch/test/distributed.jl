# CTorch.Distributed (ct_store_*, ct_process_group_*, collectives, ct_ddp_*).
# Included by runtests.jl (needs `using Test, CTorch`). Bad inputs run in this
# process on one-rank groups; the two-rank part starts two julia processes
# (test/dist_worker.jl) that join from torchrun's environment variables and
# serialize what they saw, checked here.

using Serialization, Sockets

const _DIST_TEST = joinpath(@__DIR__)
include(joinpath(_DIST_TEST, "dist_worker.jl"))    # module DistWorker
using .DistWorker: dist_ddp_data, DDP_STEPS, DDP_LR, _le_hex

# A CTorchError's (code, message) from f(), or what else it threw / returned.
function _dist_err(f)
    try
        f()
        return (:no_error, "")
    catch e
        e isa CTorch.CTorchError || rethrow()
        return (e.code, e.message)
    end
end

# A port the OS says is free now (bound to port 0, then closed).
function _free_port()
    srv = Sockets.listen(Sockets.IPv4("127.0.0.1"), 0)
    _, p = Sockets.getsockname(srv)
    close(srv)
    return Int(p)
end

function _two_free_ports()
    a = _free_port()
    b = _free_port()
    while b == a
        b = _free_port()
    end
    return a, b
end

# The full-batch, single-process training the DDP ranks must match.
function _ddp_reference()
    X, Y, W0, B0 = dist_ddp_data()
    w, b = copy(W0), copy(B0)
    for _ in 1:DDP_STEPS
        r = X * w' .+ b .- Y                    # 8 x 1
        gw = (2 / length(Y)) .* (r' * X)        # 1 x 3
        gb = [(2 / length(Y)) * sum(r)]
        w .-= DDP_LR .* gw
        b .-= DDP_LR .* gb
    end
    return w, b
end

# What every rank of dist_rank.jl's protocol prints, computed here.
function _protocol_expected(n)
    x = zeros(Float32, 1000)
    for r in 0:n-1, i in 0:999
        x[i+1] += Float32(((i * (r + 1)) % 97) / 7.0)   # gloo sums in rank order; n = 2 is exact
    end
    y = Int64[(n - 1) * 10 + i for i in 0:3]
    z = reduce(vcat, [Float32[r, r + 0.5] for r in 0:n-1])
    return "allreduce $(_le_hex(x))\nbroadcast $(_le_hex(y))\nallgather $(_le_hex(z))\ndone\n"
end

const D = CTorch.Distributed

@testset "distributed" begin
if !D.is_available()
    @skip_test "libctorch without c10d: ct_distributed_is_compiled() == 0"
    @test !D.is_gloo_available() && !D.is_nccl_available()
    e = _dist_err(() -> D.TCPStore("127.0.0.1", 0; is_master = true))
    @test e[1] == CTorch.CT_ERR_NOT_SUPPORTED
elseif !D.is_gloo_available()
    # c10d with NCCL only (a PyPI wheel's LibTorch): the groups here are Gloo's.
    @skip_test "libctorch without Gloo: ct_distributed_has_backend(\"gloo\") == 0"
    @test D.is_nccl_available()
else

# Start the two ranks first: they take seconds to start, the in-process tests run meanwhile.
master_port, rank_port = _two_free_ports()
outdir = mktempdir()
procs = map(0:1) do r
    env = copy(ENV)
    env["MASTER_ADDR"] = "127.0.0.1"
    env["MASTER_PORT"] = string(master_port)
    env["RANK"] = string(r)
    env["WORLD_SIZE"] = "2"
    env["LOCAL_RANK"] = string(r)
    cmd = `$(Base.julia_cmd()) --startup-file=no --project=$(Base.active_project()) $(joinpath(_DIST_TEST, "dist_worker.jl")) $(joinpath(outdir, "rank$r")) $rank_port`
    run(pipeline(setenv(cmd, env); stdout = joinpath(outdir, "out$r"), stderr = joinpath(outdir, "err$r")); wait = false)
end

@testset "stores" begin
    s = D.TCPStore("127.0.0.1", 0; is_master = true, world_size = 1, timeout = 2)
    @test D.port(s) > 0
    @test occursin("TCPStore(port $(D.port(s)))", sprint(show, s))
    s["k"] = "v1"
    @test String(s["k"]) == "v1"
    s["bytes"] = UInt8[0, 1, 255]
    @test s["bytes"] == UInt8[0, 1, 255]
    long = repeat("0123456789", 100)                  # longer than the first read's buffer
    s["long"] = long
    @test String(s["long"]) == long
    s["empty"] = ""
    @test s["empty"] == UInt8[]
    @test D.add!(s, "counter", 5) == 5
    @test D.add!(s, "counter") == 6
    @test D.add!(s, "counter", -10) == -4
    # a client of the same server sees the keys
    c = D.TCPStore("127.0.0.1", D.port(s); timeout = 2)
    @test String(c["k"]) == "v1" && D.port(c) == D.port(s)
    # a prefix view: its keys live under "pre/"
    v = D.PrefixStore("pre", s)
    v["k"] = "in view"
    @test String(s["pre/k"]) == "in view" && String(v["k"]) == "in view" && String(s["k"]) == "v1"
    @test sprint(show, v) == "PrefixStore()"
    # a key that never comes: CT_ERR_TIMEOUT naming it, after the store's timeout
    t = @elapsed e = _dist_err(() -> c["never_set_key"])
    @test e[1] == CTorch.CT_ERR_TIMEOUT
    @test occursin("never_set_key", e[2])
    @test 1 <= t < 10
    err = try c["never_set_key"] catch x; x end
    @test occursin("CT_ERR_TIMEOUT", sprint(showerror, err))
    # a file store
    f = joinpath(mktempdir(), "store")
    fs = D.FileStore(f, 1)
    fs["a"] = "b"
    @test String(fs["a"]) == "b" && D.add!(fs, "n", 2) == 2
    @test sprint(show, fs) == "FileStore()"
    e = _dist_err(() -> D.port(fs))
    @test e[1] == CTorch.CT_ERR_NOT_SUPPORTED
    close(fs); close(v); close(c)
    # bad arguments
    e = _dist_err(() -> D.TCPStore("127.0.0.1", 70000; is_master = true))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("70000", e[2])
    e = _dist_err(() -> D.TCPStore("127.0.0.1", -1; is_master = true))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT
    e = _dist_err(() -> D.TCPStore("127.0.0.1", 0; is_master = true, timeout = 0))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("timeout", e[2])
    e = _dist_err(() -> D.TCPStore("127.0.0.1", D.port(s); is_master = true, timeout = 1))
    @test e[1] == CTorch.CT_ERR_IO                      # port in use
    t = @elapsed e = _dist_err(() -> D.TCPStore("127.0.0.1", _free_port(); timeout = 1))
    @test e[1] in (CTorch.CT_ERR_IO, CTorch.CT_ERR_TIMEOUT)   # nothing listening
    @test t < 10
    e = _dist_err(() -> D.FileStore("/nonexistent_dir/x/store", 1))
    @test e[1] == CTorch.CT_ERR_IO
    @test_throws ArgumentError s["nul\0key"] = "x"      # not representable as a C string
    close(s)
    @test D.isfreed(s)
    e = _dist_err(() -> s["k"])
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("freed", e[2])
    close(s)                                            # twice is fine
end

@testset "one-rank group" begin
    s = D.TCPStore("127.0.0.1", 0; is_master = true, world_size = 1, timeout = 20)
    pg = D.init_process_group(; store = s, rank = 0, world_size = 1, timeout = 20)
    @test D.rank(pg) == 0 && D.world_size(pg) == 1
    @test sprint(show, pg) == "ProcessGroup(rank 0 of 1)"
    t = Tensor(Float32[1, 2])
    @test D.all_reduce!(pg, t) === t && Array(t) == Float32[1, 2]
    @test Array(D.all_reduce!(pg, Tensor([2.0, 4.0]); op = :avg)) == [2.0, 4.0]
    @test Array(D.all_reduce!(pg, Tensor(Int64[3]); op = "MAX")) == [3]
    @test Array(broadcast!(pg, Tensor(Int32[5]), 0)) == Int32[5]
    @test [Array(o) for o in D.all_gather(pg, Tensor([1.5]))] == [[1.5]]
    out = C.zeros(2)
    @test D.reduce_scatter!(pg, out, [C.ones(2)]) === out && Array(out) == [1, 1]
    outs = [C.zeros(Float32, 1)]
    D.all_to_all!(pg, outs, [C.ones(Float32, 1)])
    @test Array(outs[1]) == Float32[1]
    @test D.barrier(pg) === nothing
    w = D.barrier(pg; async = true)
    @test w isa D.Work
    wait(w)
    @test D.is_completed(w) && isready(w)
    @test occursin("completed", sprint(show, w))
    e = _dist_err(() -> D.source_rank(w))               # not a receive
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT
    close(w)
    @test sprint(show, w) == "Work(<freed>)"
    e = _dist_err(() -> wait(w))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("freed", e[2])
    # subgroups of one rank
    g = D.new_group(pg, [0])
    @test g isa D.ProcessGroup && D.world_size(g) == 1
    close(g)
    e = _dist_err(() -> D.new_group(pg, [1]))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT
    e = _dist_err(() -> D.new_group(pg, [0, 0]))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT

    # bad inputs: (status, message)
    e = _dist_err(() -> D.all_reduce!(pg, Tensor(Float32[1]); op = :median))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("median", e[2])
    e = _dist_err(() -> D.all_reduce!(pg, Tensor(Float32[1]); op = 99))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("99", e[2])
    e = _dist_err(() -> D.all_reduce!(pg, Tensor(Float32[1 2; 3 4])))   # column-major: not contiguous for torch
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("contiguous", e[2])
    e = _dist_err(() -> broadcast!(pg, Tensor(Float32[1]), 1))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("root 1", e[2])
    e = _dist_err(() -> D.all_gather!(pg, Tensor[], Tensor(Float32[1])))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("0 tensors, the group 1", e[2])
    e = _dist_err(() -> D.all_gather!(pg, [C.zeros(Float64, 1)], Tensor(Float32[1])))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("Double", e[2])
    e = _dist_err(() -> D.all_gather!(pg, [C.zeros(Float32, 3)], Tensor(Float32[1])))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("[3]", e[2])
    e = _dist_err(() -> D.reduce_scatter!(pg, C.zeros(1), [C.zeros(1), C.zeros(1)]))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("2 tensors", e[2])
    e = _dist_err(() -> D.all_to_all!(pg, [C.zeros(1)], Tensor[]))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT
    e = _dist_err(() -> D.send(pg, Tensor(Float32[1]), 3))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("dst 3", e[2])
    e = _dist_err(() -> D.recv!(pg, Tensor(Float32[1]), 5))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("src 5", e[2])
    e = _dist_err(() -> D.all_reduce!(pg, Tensor(Float32[1]); op = :band))   # bitwise on floats
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("integer", e[2])
    @test Array(D.all_reduce!(pg, Tensor(Int32[6]); op = &)) == Int32[6]
    # groups that cannot be made
    e = _dist_err(() -> D.ProcessGroup(s; rank = 1, world_size = 1))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("rank", e[2])
    e = _dist_err(() -> D.ProcessGroup(s; rank = 0, world_size = 1, backend = "carrier-pigeon"))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("carrier-pigeon", e[2])
    if !C.cuda_is_available()
        e = _dist_err(() -> D.ProcessGroup(s; rank = 0, world_size = 1, backend = :nccl))
        @test e[1] == CTorch.CT_ERR_NOT_SUPPORTED && occursin("nccl", lowercase(e[2]))
    end
    e = _dist_err(() -> D.ProcessGroup(s; rank = 0, world_size = 1, timeout = 0))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT
    e = withenv("MASTER_ADDR" => nothing, "MASTER_PORT" => nothing, "RANK" => nothing,
                "WORLD_SIZE" => nothing, "TORCHELASTIC_USE_AGENT_STORE" => nothing) do
        _dist_err(() -> D.init_process_group(; timeout = 5))
    end
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("MASTER_ADDR", e[2])
    e = withenv("MASTER_ADDR" => "127.0.0.1", "MASTER_PORT" => "not-a-port", "RANK" => "0",
                "WORLD_SIZE" => "1", "TORCHELASTIC_USE_AGENT_STORE" => nothing) do
        _dist_err(() -> D.init_process_group(; timeout = 5))
    end
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("MASTER_PORT", e[2])
    e = _dist_err(() -> D.init_process_group(; init_method = "file:///tmp/x"))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("init_method", e[2])
    # a rank that never comes: CT_ERR_TIMEOUT saying how many arrived, after the timeout
    s2 = D.TCPStore("127.0.0.1", 0; is_master = true, timeout = 5)
    t = @elapsed e = _dist_err(() -> D.ProcessGroup(s2; rank = 0, world_size = 2, timeout = 1))
    @test e[1] == CTorch.CT_ERR_TIMEOUT
    @test occursin("1", e[2]) && occursin("2", e[2])
    @test t < 15
    close(s2)
    # init_method tcp:// (rank 0 of 1)
    g = D.init_process_group(; init_method = "tcp://127.0.0.1:$(_free_port())", rank = 0, world_size = 1, timeout = 10)
    @test D.world_size(g) == 1 && Array(D.all_reduce!(g, Tensor([1.0]))) == [1.0]
    close(g)

    # DDP on one rank: a forward-less wrapper, bad parameters
    p1 = requires_grad!(C.zeros(3))
    ddp = D.DistributedDataParallel(pg, [p1])
    @test D.parameters(ddp) == [p1]
    e = _dist_err(() -> ddp(C.ones(3)))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("prepare_backward!", e[2])
    out = ops.aten.sum(p1 .* 2)
    @test D.prepare_backward!(ddp, (out, "not a tensor")) === ddp
    backward(out)
    @test Array(grad(p1)) == [2, 2, 2]
    @test occursin("1 parameters", sprint(show, ddp))
    close(ddp)
    @test sprint(show, ddp) == "DistributedDataParallel(<freed>)"
    e = _dist_err(() -> D.DistributedDataParallel(pg, Tensor[]))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("no parameters", e[2])
    e = _dist_err(() -> D.DistributedDataParallel(pg, [C.zeros(3)]))   # does not require grad
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("requires grad", e[2])
    # a step whose backward missed a parameter (without find_unused_parameters)
    pa, pb = requires_grad!(C.zeros(2)), requires_grad!(C.zeros(2))
    ddp2 = D.DDP(x -> ops.aten.sum(pa .* x), pg, [pa, pb])
    backward(ddp2(C.ones(2)))
    e = _dist_err(() -> ddp2(C.ones(2)))
    @test e[1] == CTorch.CT_ERR_TORCH && !isempty(e[2])
    close(ddp2)
    pa, pb = requires_grad!(C.zeros(2)), requires_grad!(C.zeros(2))
    ddp3 = D.DDP(x -> ops.aten.sum(pa .* x), pg, [pa, pb]; find_unused_parameters = true)
    for _ in 1:2
        backward(ddp3(C.ones(2)))
    end
    @test Array(grad(pa)) == [2, 2]
    close(ddp3)

    close(pg)
    @test sprint(show, pg) == "ProcessGroup(<freed>)"
    e = _dist_err(() -> D.all_reduce!(pg, Tensor(Float32[1])))
    @test e[1] == CTorch.CT_ERR_INVALID_ARGUMENT && occursin("freed", e[2])
    close(s)
end

@testset "two ranks (julia processes, env://)" begin
    done = timedwait(() -> all(p -> !Base.process_running(p), procs), 90.0; pollint = 0.1)
    done === :ok || foreach(kill, procs)
    @test done === :ok
    res = Dict{String,Any}[]
    for r in 0:1
        f = joinpath(outdir, "rank$r")
        log = read(joinpath(outdir, "out$r"), String) * read(joinpath(outdir, "err$r"), String)
        ok = success(procs[r+1]) && isfile(f)
        ok || println(stderr, "rank $r failed (exit $(procs[r+1].exitcode)):\n", log)
        @test ok
        push!(res, isfile(f) ? deserialize(f) : Dict{String,Any}("error" => log))
    end
    @test !haskey(res[1], "error") && !haskey(res[2], "error")
    ref_w, ref_b = _ddp_reference()
    expected_protocol = _protocol_expected(2)
    for (i, d) in enumerate(res)
        haskey(d, "error") && continue
        r = i - 1
        @test d["rank"] == r && d["world"] == 2
        @test d["show"] == "ProcessGroup(rank $r of 2)"
        @test d["sum"] == Float32[3, 6]
        @test d["avg"] == [0.5, 5.0]
        @test d["max"] == [5, 0]
        @test d["min"] == [0, -1]
        @test d["prod"] == [6]
        @test d["bor"] == Int32[3]
        @test d["broadcast"] == Int32[1, 101]
        @test d["all_gather"] == [Float32[0, 0.5], Float32[1, 1.5]]
        @test d["all_gather_new"] == [[0, 0, 0], [1, 1, 1]]
        @test d["reduce_scatter"] == [sum(10 * (r + 1) + q for q in 0:1)]
        @test d["all_to_all"] == [100q + r + 1 for q in 0:1]
        if r == 0
            @test d["p2p"] == (Float32[4, 5], true, true)
            @test d["wait_timeout"][1] == CTorch.CT_ERR_TIMEOUT
            @test occursin("rank 0 of 2", d["wait_timeout"][2])
            # the header: "a wait that runs out returns CT_ERR_TIMEOUT and the work goes on"
            @test d["late"] == ([42], true)
            @test d["sub1"] === nothing
        else
            @test d["p2p"] == (Float32[1, 2, 3], 0)
            @test d["late"] === :sent
            @test d["sub1"] == (0, 1, [7])
        end
        @test d["async_work"] === true
        @test d["async"] == ([2.0, 2.0, 2.0], true)
        @test d["sub2"] == (r, 2, [3])
        X, Y, W0, B0 = dist_ddp_data()
        @test d["ddp_synced"] == (W0, B0)               # rank 0's parameters everywhere
        @test isapprox(d["ddp_params"][1], ref_w; atol = 1e-5)
        @test isapprox(d["ddp_params"][2], ref_b; atol = 1e-5)
        @test d["ddp_module_params"][1] ≈ ref_w atol = 1e-5
        @test d["ddp_module_params"][2] ≈ ref_b atol = 1e-5
        @test d["ddp_module_n"] == 2
        @test occursin("2 parameters", d["ddp_show"])
        @test d["protocol"] == expected_protocol
    end
    # the two ranks trained the same parameters
    if !haskey(res[1], "error") && !haskey(res[2], "error")
        @test res[1]["ddp_params"] == res[2]["ddp_params"]
    end
    rm(outdir; recursive = true, force = true)
end

end # is_available
end # testset distributed
