# One Julia rank of the mixed-language group test (tests/distributed/mixed_group.py):
#
#   scripts/julia bindings/julia/CTorch/test/dist_rank.jl --rank R --world N --port P
#
# The protocol is the same for the C, Python, PyTorch and Julia ranks:
#  1. TCPStore on 127.0.0.1:P, is_master = (R == 0), world_size N, timeout 60 s;
#  2. process group "gloo", rank R of N, timeout 60 s;
#  3. x: 1000 Float32, x[i] = Float32(((i*(R+1)) % 97) / 7.0) (i from 0, in Float64);
#     all_reduce SUM; prints "allreduce <hex of the 4000 little-endian bytes>";
#  4. y: 4 Int64, R*10 + i; broadcast from rank N-1; prints "broadcast <hex of 32 bytes>";
#  5. z = Float32[R, R + 0.5]; all_gather into N tensors of 2; prints
#     "allgather <hex of the 8N bytes, rank order>";
#  6. barrier; prints "done"; exit 0. Any error: printed to stderr, exit 1.
#
# test/distributed.jl includes this file and calls `dist_rank_protocol` (the
# script's main part runs only when it is the program).

using CTorch
using CTorch: Tensor

_le_hex(a::Vector) = bytes2hex(reinterpret(UInt8, htol.(a)))

function dist_rank_protocol(rank::Integer, world::Integer, port::Integer; io::IO = stdout)
    D = CTorch.Distributed
    store = D.TCPStore("127.0.0.1", port; is_master = rank == 0, world_size = world, timeout = 60)
    pg = D.ProcessGroup(store; backend = "gloo", rank = rank, world_size = world, timeout = 60)
    try
        x = Float32[Float32(((i * (rank + 1)) % 97) / 7.0) for i in 0:999]
        D.all_reduce!(pg, Tensor(x); op = :sum)          # Tensor(x) is x's memory: x is the result
        println(io, "allreduce ", _le_hex(x))
        y = Int64[rank * 10 + i for i in 0:3]
        broadcast!(pg, Tensor(y), world - 1)
        println(io, "broadcast ", _le_hex(y))
        zs = [zeros(Float32, 2) for _ in 1:world]
        D.all_gather!(pg, Tensor.(zs), Tensor(Float32[rank, rank + 0.5]))
        println(io, "allgather ", _le_hex(reduce(vcat, zs)))
        D.barrier(pg)
        println(io, "done")
        flush(io)
    finally
        close(pg)
        close(store)
    end
    return nothing
end

function _dist_rank_main(args)
    opts = Dict{String,Int}()
    i = 1
    while i <= length(args)
        a = args[i]
        if a in ("--rank", "--world", "--port") && i < length(args)
            opts[a[3:end]] = parse(Int, args[i+1])
            i += 2
        else
            error("unknown argument $(repr(a)); usage: dist_rank.jl --rank R --world N --port P")
        end
    end
    for k in ("rank", "world", "port")
        haskey(opts, k) || error("missing --$k; usage: dist_rank.jl --rank R --world N --port P")
    end
    dist_rank_protocol(opts["rank"], opts["world"], opts["port"])
end

function _dist_rank_run(args)
    code = try
        _dist_rank_main(args)
        0
    catch e
        println(stderr, "dist_rank.jl (julia rank): ", sprint(showerror, e))
        1
    end
    flush(stdout)
    return code
end

if abspath(PROGRAM_FILE) == @__FILE__
    exit(_dist_rank_run(ARGS))
end
