# Tests of the CTorch Julia binding.
#
# Run (scripts/julia sets the preloads Debian's julia needs and the project):
#   scripts/julia --threads=4 bindings/julia/CTorch/test/runtests.jl
# CTORCH_LIBRARY: the libctorch.so to test (default: the repository's build tree).
# CTORCH_TEST_MODELS: directory with <name>.pt / <name>_io.pt made by
# tests/models/make_models.py (PyTorch reference outputs); skipped if absent.

# Preflight: can this julia throw and catch its own exceptions through
# compiled code? Debian 11's julia 1.5.3 on Debian 12's libunwind 1.6 cannot
# (segfault); then every @test_throws would kill the run. Skip (77) with the fix.
let cmd = `$(Base.julia_cmd()) --startup-file=no -e "f(x) = sqrt(x); try f(-1.0) catch; end; print(:ok)"`
    # No exception may be thrown here: with the broken unwinder that would
    # itself crash this process. ignorestatus: a crashed child is not an error.
    buf = IOBuffer()
    proc = run(pipeline(ignorestatus(cmd); stdout = buf, stderr = devnull))
    ok = proc.exitcode == 0 && String(take!(buf)) == "ok"
    if !ok
        println(stderr, "SKIP: this julia crashes when a Julia exception unwinds through compiled code ",
                "(system libunwind incompatible with julia $(VERSION)). Preload the libunwind it was built ",
                "against: bindings/julia/get-libunwind.sh DIR, then ",
                "LD_PRELOAD=/lib/x86_64-linux-gnu/libgcc_s.so.1:DIR/libunwind.so.8")
        exit(77)
    end
end

using Test
using CTorch
using CTorch: ops

const C = CTorch

# A test that cannot run in this build: printed for scripts/ci/check_skips.py
# (each leg lists the skips it expects) and counted as Broken by Test.
macro skip_test(reason)
    quote
        local r = $(esc(reason))
        println("[  SKIPPED ] julia: ", r)
        @test_skip r
    end
end

# torch's row-major reshape (Base.reshape on a Tensor is Julia's column-major one).
treshape(t, dims...) = ops.aten.reshape(t, Int64[dims...])

# Relative-tolerance comparison of Julia arrays / numbers.
approx(a, b; rtol = 1e-5, atol = 1e-6) = all(isapprox.(a, b; rtol = rtol, atol = atol))

# ---- custom layers written in Julia (the seed scenario) ----------------------

f!(x) = (x .*= 2)                               # in place
function g_kernel!(y::AbstractArray, x::AbstractArray)   # function barrier
    @inbounds for i in eachindex(x, y)
        y[i] = x[i]^3 + sin(x[i])
    end
    return y
end
function g(x::Tensor)                           # output allocated by torch
    y = C.empty_like(x)
    g_kernel!(unsafe_array(y), unsafe_array(x))
    return y
end

const Double = AutogradFunction(
    (ctx, x) -> (y = C.clone(x); f!(unsafe_array(y)); y),
    (ctx, gy) -> (gx = C.clone(gy); f!(unsafe_array(gx)); gx);
    name = "JuliaDouble")

const CubeSin = AutogradFunction(
    function (ctx, x)
        save_for_backward!(ctx, x)
        return g(x)
    end,
    function (ctx, gy)
        (x,) = saved_tensors(ctx)
        gx = C.empty_like(x)
        gyc = C.contiguous(gy)          # a new handle: unsafe_array does not keep it alive
        GC.@preserve gyc begin
            X, GY, GX = unsafe_array(x), unsafe_array(gyc), unsafe_array(gx)
            GX .= GY .* (3 .* X .^ 2 .+ cos.(X))
        end
        return gx
    end;
    name = "JuliaCubeSin")

# Two inputs, two outputs: (x*y, x+y)
const MulAdd = AutogradFunction(
    function (ctx, x, y)
        save_for_backward!(ctx, x, y)
        p = C.empty_like(x); s = C.empty_like(x)
        unsafe_array(p) .= unsafe_array(x) .* unsafe_array(y)
        unsafe_array(s) .= unsafe_array(x) .+ unsafe_array(y)
        return (p, s)
    end,
    function (ctx, gp, gs)
        x, y = saved_tensors(ctx)
        gp = gp === nothing ? C.zeros_like(x) : gp
        gs = gs === nothing ? C.zeros_like(x) : gs
        return (gp .* y .+ gs, gp .* x .+ gs)
    end;
    name = "JuliaMulAdd", n_outputs = 2)

function fd_grad(f, x::Vector{Float64}; h = 1e-6)
    gr = similar(x)
    for i in eachindex(x)
        xp = copy(x); xp[i] += h
        xm = copy(x); xm[i] -= h
        gr[i] = (f(xp) - f(xm)) / (2h)
    end
    return gr
end

# n backward passes through CubeSin. A top-level function, so that no local
# of a testset keeps the last graph (and its Julia state) alive.
function cubesin_steps(n)
    for i in 1:n
        z = requires_grad!(C.ones(3))
        backward(ops.aten.sum(CubeSin(z)))
    end
    return nothing
end

# Wraps n Julia arrays as tensors, one at a time; the most arrays rooted at
# once. A top-level function: locals of a testset can outlive it.
function churn_rooted(n)
    peak = 0
    for i in 1:n
        t = Tensor(rand(Float32, 100))
        u = t * 2
        peak = max(peak, C.rooted_count())
    end
    return peak
end

@testset "CTorch" begin

@testset "library" begin
    @test C.isloaded()
    @test C.ct_abi_version() == C.ABI_VERSION
    @test C.version() isa VersionNumber
    @test !isempty(C.torch_version())
    @test isfile(C.library_path()) || C.library_path() != ""
    info = C.library_info()
    @test info.path == C.library_path() && info.abi == C.ABI_VERSION
    @test info.libtorch == C.torch_version() && !isempty(info.found_by)
    haskey(ENV, "CTORCH_LIBRARY") && @test info.found_by == "CTORCH_LIBRARY"
    # the system's libctorch (ldconfig, pkg-config) and python3's package are asked
    @test C._system_libraries() isa Vector{String}
    @test C._python_package_library() === nothing || isfile(C._python_package_library())
    @test occursin("LD_PRELOAD=", C.safe_command()) && occursin("--project=", C.safe_command())
    # The test runner preloads libgcc_s, so C++ exceptions are safe.
    @test !C.unwind_pitfall()
    @test C.unwinder_library() === nothing || occursin("libgcc_s", C.unwinder_library())
    # found as the Python package finds it
    cands = C.library_candidates()
    @test last(cands) == ("system loader" => "libctorch")
    if haskey(ENV, "CTORCH_LIBRARY")
        @test first(cands) == ("CTORCH_LIBRARY" => ENV["CTORCH_LIBRARY"])
    else
        @test all(c -> c.first != "CTORCH_LIBRARY", cands)
    end
    @test any(c -> c.first == "build tree" && endswith(c.second, "/build/libctorch.so"), cands)
end

@testset "header coverage" begin
    header = normpath(joinpath(@__DIR__, "..", "..", "..", "..", "include", "ctorch.h"))
    if isfile(header)
        # the one header parser (scripts/ctorch_header.py), run as a program
        parser = joinpath(dirname(dirname(header)), "scripts", "ctorch_header.py")
        parsed = [split(l) for l in readlines(`python3 $parser $header`)]
        declared = Set(String(l[2]) for l in parsed if l[1] == "function")
        bound = Set(String(name) for (name, _) in C._SYMBOLS)
        @test length(declared) > 150
        # every header function is bound (generated); those the API does not use are
        # listed in UNBOUND (and the README) with a reason
        @test setdiff(declared, bound) == Set{String}()
        @test issubset(keys(C.UNBOUND), declared)
        readme = read(joinpath(@__DIR__, "..", "..", "README.md"), String)
        @test all(f -> occursin(f, readme), keys(C.UNBOUND))
        # the library exports every bound header function
        @test [n for (n, slot) in C._SYMBOLS if String(n) in declared && slot[] == C_NULL] == Symbol[]
        # the named constants are the header's
        defs = Dict(String(l[2]) => parse(Int, l[3]) for l in parsed if l[1] == "constant")
        names = [n for n in Base.names(C; all = true) if startswith(String(n), "CT_") && getfield(C, n) isa Int32]
        @test length(names) > 40
        @test all(n -> get(defs, String(n), nothing) == getfield(C, n), names)
    else
        @skip_test "include/ctorch.h not found (not in the source tree)"
    end
end

@testset "refuses to load without LD_PRELOAD" begin
    # A fresh process without the preload must refuse to load, naming the exact
    # command, before anything can abort (issue 38: it warned, then crashed at the
    # first error). (Only meaningful where julia links libunwind.)
    if any(l -> occursin("libunwind", l), C.Libdl.dllist())
        env = copy(ENV)
        env["LD_PRELOAD"] = join(filter(p -> !occursin("libgcc_s", p), split(get(ENV, "LD_PRELOAD", ""), ':')), ':')
        proj = dirname(@__DIR__)
        code = "using CTorch; print(CTorch.unwind_pitfall())"
        cmd = `$(Base.julia_cmd()) --startup-file=no --project=$proj -e $code`
        err = Pipe()
        p = run(pipeline(ignorestatus(setenv(cmd, env)); stdout = devnull, stderr = err))
        close(err.in)
        msg = read(err, String)
        @test !success(p)
        @test occursin("LD_PRELOAD=/lib/x86_64-linux-gnu/libgcc_s.so.1", msg)
        @test occursin("julia --project=", msg)
        @test occursin("SIGABRT", msg)
        # Loading anyway is the user's choice, with a warning.
        env["CTORCH_ALLOW_UNSAFE_UNWIND"] = "1"
        err = Pipe()
        out = read(pipeline(setenv(cmd, env); stderr = err), String)
        close(err.in)
        @test out == "true"
        @test occursin("Loading anyway", read(err, String))
    else
        @skip_test "julia does not link libunwind here"
    end
end

@testset "errors" begin
    e = try
        C.load("/nonexistent/model.pt"); nothing
    catch err
        err
    end
    @test e isa CTorchError
    @test e.code == C.CT_ERR_NOT_FOUND
    @test occursin("/nonexistent/model.pt", e.message)
    @test occursin("CT_ERR_NOT_FOUND", sprint(showerror, e))
    # a shape mismatch inside LibTorch (C++ exception caught by ctorch)
    e2 = try
        ops.aten.add(C.zeros(2, 3), C.zeros(4, 5)); nothing   # torch's broadcasting fails
    catch err
        err
    end
    @test e2 isa CTorchError
    @test e2.code in (C.CT_ERR_INVALID_ARGUMENT, C.CT_ERR_TYPE, C.CT_ERR_TORCH)
    @test !isempty(e2.message)
    @test_throws CTorchError C.op("aten::definitely_not_an_op")
    @test_throws CTorchError C.Script("def f(x):\n    return undefined_name\n")
    t = C.zeros(2)
    free!(t)
    @test_throws CTorchError size(t)
    free!(t)   # twice is fine
end

@testset "tensor metadata and factories" begin
    t = C.zeros(Float32, 2, 3, 4)
    @test size(t) == (2, 3, 4)                  # torch's order
    @test strides(t) == (12, 4, 1)
    @test size(t, 1) == 2 && size(t, 3) == 4
    @test ndims(t) == 3 && length(t) == 24
    @test eltype(t) == Float32
    @test device(t).type == C.CT_DEVICE_CPU
    @test C.is_contiguous(t)
    @test pointer(t) isa Ptr{Float32}
    @test occursin("CPUFloatType{2,3,4}", C.torch_string(t))
    @test t isa Tensor{Float32,3} && t isa AbstractArray{Float32,3}
    @test C.layout(t) === :strided
    @test Device(:meta) == Device(C.CT_DEVICE_META, -1)
    @test C.item(C.full((1,), 3.5)) == 3.5f0
    @test sum(C.ones(Float64, 3, 3)) === 9.0
    @test Array(C.arange(0, 5)) == collect(0:4)
    @test Array(C.eye(3)) == Float32[1 0 0; 0 1 0; 0 0 1]
    @test eltype(C.arange(0, 5)) == Int64
    @test size(C.rand(5)) == (5,)
    @test size(C.randn(Float64, (2, 2))) == (2, 2)
    r = C.zeros(3; requires_grad = true)
    @test requires_grad(r)
    for T in (Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64, ComplexF32, ComplexF64)
        A = T == BFloat16 ? BFloat16.(Float32[1 2; 3 4]) : T == Bool ? [true false; false true] : T[1 2; 3 4]
        x = Tensor(A)
        @test eltype(x) == T
        @test size(x) == (2, 2)
        @test C.ct_tensor_element_size(x) == sizeof(T)
        @test x == A && Array(x) == A && x[2, 1] == A[2, 1]
        @test Array(C.tensor(A)) == A        # copying constructor
    end
    @test Float32(BFloat16(1.5f0)) == 1.5f0
    @test Float32(BFloat16(3.14159f0)) ≈ 3.14159f0 rtol = 1e-2
    @test Device("cuda:1") == Device(:cuda, 1)
    @test C.to(C.ones(2), Float64) |> eltype == Float64
    x = C.ones(3)
    @test C.clone(x) == x
    c = copy(x)
    @test pointer(c) != pointer(x)
    n = C.newref(x)
    @test pointer(n) == pointer(x)
    fill!(x, 2)
    @test Array(n) == Float32[2, 2, 2]
    copyto!(x, C.zeros(3))
    @test Array(x) == zeros(Float32, 3)
    @test isapprox(C.ones(2), C.full(2, 1.0000001))
end

@testset "zero-copy: torch memory as Julia arrays" begin
    t = treshape(C.arange(Float32, 0, 24), 2, 3, 4)    # torch (2,3,4), value = 12i+4j+k
    tv(i, j, k) = Float32(12i + 4j + k)
    A = unsafe_array(t)
    @test A isa Array{Float32,3}
    @test size(A) == (4, 3, 2)                          # reversed
    @test pointer(A) == pointer(t)                      # same memory
    @test all(A[k+1, j+1, i+1] == tv(i, j, k) for i in 0:1, j in 0:2, k in 0:3)
    V = torch_view(t)
    @test size(V) == (2, 3, 4)                          # torch's order
    @test V isa PermutedDimsArray
    @test all(V[i+1, j+1, k+1] == tv(i, j, k) for i in 0:1, j in 0:2, k in 0:3)
    # writes from Julia are seen by torch, and the other way round
    A[1, 1, 1] = 100
    @test C.item(ops.aten.select(ops.aten.select(ops.aten.select(t, 0, 0), 0, 0), 0, 0)) == 100
    V[2, 3, 4] = -1
    @test C.item(ops.aten.select(ops.aten.select(ops.aten.select(t, 0, 1), 0, 2), 0, 3)) == -1
    ops.aten.mul_(t, 2)
    @test A[1, 1, 1] == 200 && V[2, 3, 4] == -2
    # broadcasting over the views is plain Julia
    s = C.ones(3, 4)
    S = unsafe_array(s)
    S .= S .* 2 .+ 1
    @test Array(s) == fill(3f0, 3, 4)
    W = torch_view(s)
    W .+= reshape(Float32.(1:4), 1, 4)
    @test W[2, 4] == 7 && unsafe_array(s)[4, 2] == 7
    @test C.with_array(sum, s) == sum(Array(s))

    # non-contiguous: transpose and a narrowed slice (storage offset)
    u = treshape(C.arange(Float64, 0, 12), 3, 4)        # u[i,j] = 4i+j
    ut = ops.aten.transpose(u, 0, 1)                     # (4,3), strides (1,4)
    @test !C.is_contiguous(ut)
    @test_throws CTorchError unsafe_array(ut)
    VT = torch_view(ut)
    @test VT isa C.StridedTensorView{Float64,2}
    @test size(VT) == (4, 3) && strides(VT) == (1, 4)
    @test all(VT[j+1, i+1] == 4i + j for i in 0:2, j in 0:3)
    VT[4, 1] = 99                                        # u[0,3]
    @test unsafe_array(u)[4, 1] == 99
    sl = ops.aten.narrow(u, 1, 1, 2)                     # u[:, 1:3]
    @test C.storage_offset(sl) == 1
    VS = torch_view(sl)
    @test all(VS[i+1, j+1] == (i == 0 && j == 2 ? 99 : 4i + j + 1) for i in 0:2, j in 0:1)
    VS .= 0
    @test unsafe_array(u)[2:3, :] == zeros(2, 3)
    ex = ops.aten.expand(C.arange(Float32, 0, 3), [2, 3])  # stride 0
    @test torch_view(ex) == Float32[0 1 2; 0 1 2]
    # 0-dim and empty tensors
    z = C.full((), 5.0)
    @test size(z) == () && unsafe_array(z)[] == 5
    e = C.zeros(0, 3)
    @test size(unsafe_array(e)) == (3, 0)
    @test unsafe_array(Float32, C.ones(2)) isa Vector{Float32}
    @test_throws CTorchError unsafe_array(Float64, C.ones(2))
end

@testset "zero-copy: Julia arrays as tensors" begin
    A = reshape(collect(Float64, 1:24), 4, 3, 2)
    t = Tensor(A)                                  # same index order, column-major strides
    @test size(t) == size(A) == (4, 3, 2)
    @test strides(t) == strides(A) == (1, 4, 12)
    @test pointer(t) == pointer(A)
    @test !C.is_contiguous(t)
    @test all(t[i, j, k] == A[i, j, k] for i in 1:4, j in 1:3, k in 1:2)
    A[2, 3, 1] = -5                                # Julia write, torch sees it
    @test C.item(ops.aten.select(ops.aten.select(ops.aten.select(t, 0, 1), 0, 2), 0, 0)) == -5
    ops.aten.add_(t, 1)                            # torch write, Julia sees it
    @test A[2, 3, 1] == -4 && A[1, 1, 1] == 2
    fill!(t, 7)
    @test all(==(7), A)

    # a reversed view of the memory: the tensor torch calls contiguous
    B = reshape(collect(Int32, 1:6), 2, 3)
    s = Tensor(PermutedDimsArray(B, (2, 1)))
    @test size(s) == (3, 2) && strides(s) == (2, 1)
    @test C.is_contiguous(s) && pointer(s) == pointer(B)
    @test s == permutedims(B) && unsafe_array(s) == B
    @test C.item(ops.aten.select(ops.aten.select(s, 0, 2), 0, 1)) == B[2, 3]
    ops.aten.mul_(s, 10)
    @test B == reshape(collect(Int32, 10:10:60), 2, 3)
    # torch ops on Julia memory
    x = [1f0, 2f0, 3f0]
    y = Tensor(x) .* 2 .+ 1
    @test Array(y) == [3f0, 5f0, 7f0]
    @test_throws CTorchError Tensor(["a", "b"])
end

@testset "release queue and finalizers" begin
    GC.gc(); GC.gc(); C.release_unused!()
    base = C.rooted_count()
    # While tensors over Julia arrays live, those arrays are rooted.
    @test churn_rooted(200) > base
    GC.gc(); GC.gc()
    C.release_unused!()
    @test C.rooted_count() == base

    # The array stays rooted while any torch view of its memory lives.
    A = collect(Float64, 1:10)
    p = pointer(A)
    t = Tensor(A)
    v = ops.aten.narrow(t, 0, 2, 3)       # a view: shares A's memory
    @test pointer(v) == p + 2 * sizeof(Float64)
    free!(t)
    A = nothing
    GC.gc(); GC.gc(); C.release_unused!()
    @test C.rooted_count() == base + 1    # v still uses the memory
    @test Array(v) == [3.0, 4.0, 5.0]
    free!(v)                              # last user: queued and polled by free!
    @test C.rooted_count() == base
    # explicit free! of many handles, then the finalizers of the rest
    ts = [C.rand(10) for _ in 1:100]
    foreach(free!, ts[1:50])
    @test all(C.isfreed, ts[1:50]) && !any(C.isfreed, ts[51:100])
    ts = nothing
    collected = Threads.Atomic{Int}(0)
    (() -> for _ in 1:10
        finalizer(_ -> Threads.atomic_add!(collected, 1), C.rand(10))
    end)()
    GC.gc(); GC.gc()
    @test collected[] > 0                  # unreferenced tensors are collected
end

@testset "AbstractArray interface (CPU Tensor)" begin
    J = Float32[1 2 3; 4 5 6]
    t = C.tensor(J)                                 # a contiguous torch copy
    # one index convention: size, indexing, Array, Tensor(A), dims agree
    @test t isa AbstractMatrix{Float32}
    @test size(t) == size(J) == size(Array(t)) == size(Tensor(J)) == (2, 3)
    @test axes(t) == axes(J) && length(t) == 6 && ndims(t) == 2
    @test t[2, 1] == J[2, 1] == 4 && t[1, 3] == 3
    @test t[4] == J[4]                              # linear index, column-major as for J
    @test t[2, :] == J[2, :] && t[:, 3] == J[:, 3]
    @test Array(t) == J && convert(Array, t) == J && collect(t) == J && Array{Float64}(t) == J
    @test t == J && J == t
    @test [x for x in t] == J && sum(x for x in t) == sum(J)   # iteration
    @test vec(t) == vec(J) && reshape(t, 3, 2) == reshape(J, 3, 2)
    @test t' == J' && transpose(t) == transpose(J)
    @test sum(t; dims = 1) == sum(J; dims = 1) && sum(t; dims = 2) == sum(J; dims = 2)
    @test_throws ArgumentError sum(t; dims = 3)
    @test_throws BoundsError t[3, 1]
    # writes go to torch memory
    t[1, 2] = 20
    @test C.item(ops.aten.select(ops.aten.select(t, 0, 0), 0, 1)) == 20
    # broadcasting: results are tensors, in-place broadcasts write torch memory
    u = t .+ 1
    @test u isa Tensor{Float32,2} && u == [1 20 3; 4 5 6] .+ 1
    p = pointer(t)
    t .= t .* 2 .+ J
    @test pointer(t) == p && t == 2 .* [1 20 3; 4 5 6] .+ J
    @test (t .> 10) isa Tensor{Bool,2}
    A = zeros(Float32, 2, 3)
    A .= t .- 1                                     # into a Julia array
    @test A == Array(t) .- 1
    # similar: a torch tensor of the same kind
    s = similar(t)
    @test s isa Tensor{Float32,2} && size(s) == (2, 3) && pointer(s) != p
    @test similar(t, Float64, (4,)) isa Tensor{Float64,1}
    @test similar(t, String) isa Matrix{String}
    # non-contiguous tensors index through their strides
    tt = ops.aten.t(t)
    @test !C.is_contiguous(tt) && tt == permutedims(Array(t)) && tt[3, 2] == t[2, 3]
    # all metadata in one call
    info = C.tensor_info(tt)
    @test info.ndim == 2 && info.dtype == C.CT_FLOAT32 && info.device_type == C.CT_DEVICE_CPU
    @test info.numel == 6 && info.data == C.data_ptr(tt) && info.is_contiguous == 0
    @test unsafe_load(info.sizes, 1) == 3 && unsafe_load(info.strides, 1) == 1
    # 0-dim
    z = ops.aten.sum(C.tensor(J))                   # a tensor; sum(t) is a number
    @test z isa Tensor{Float32,0} && z[] == 21 && sum(C.tensor(J)) === 21f0
    # GPU tensors refuse element access with a clear message
    @test occursin("only CPU tensors", sprint(showerror, try C._not_cpu(t, "indexing") catch e; e end))
end

@testset "printing" begin
    t = C.tensor(Float32[1 2; 3 4])
    @test summary(t) == "2×2 Tensor{Float32,2} on cpu"
    @test summary(C.zeros(3; requires_grad = true)) == "3-element Tensor{Float32,1} on cpu, requires_grad"
    txt = sprint(show, MIME"text/plain"(), t)
    @test startswith(txt, "2×2 Tensor{Float32,2} on cpu:\n") && occursin("3.0", txt)
    @test sprint(show, t) == "Tensor(Float32[1.0 2.0; 3.0 4.0])"
    big = C.zeros(1000, 1000)
    tb = @elapsed txt = sprint(show, MIME"text/plain"(), big)
    @test length(txt) < 5000 && occursin("⋮", txt) && occursin("…", txt)
    @test length(sprint(show, big)) < 5000
    @test tb < 5
    f = C.zeros(2); free!(f)
    @test sprint(show, f) == "CTorch.Tensor(<freed>)"
end

@testset "values" begin
    s = C.Script("""
def ident_all(d: Dict[str, Tensor], l: List[int], s: str, i: int, f: float, b: bool,
              o: Optional[Tensor], t: Tuple[int, str], fl: List[float], tl: List[Tensor]):
    return d, l, s, i, f, b, o, t, fl, tl

def kw(x: Tensor, k: int = 2, name: str = "a"):
    return x * k, name

def none_out(x: Tensor):
    return None

def dev(x: Tensor):
    return x.device
""")
    @test Set(C.functions(s)) == Set(["ident_all", "kw", "none_out", "dev"])
    x = C.ones(2)
    d = Dict("a" => x)
    r = s(:ident_all, d, [1, 2, 3], "hé", 7, 2.5, true, nothing, (4, "four"), [1.5, 2.5], [x, x])
    @test r isa Tuple && length(r) == 10
    @test r[1] isa Dict{String,<:Tensor} && pointer(r[1]["a"]) == pointer(x)   # same tensor, no copy
    @test r[2] == [1, 2, 3] && r[2] isa Vector{Int64}
    @test r[3] == "hé"
    @test r[4] === 7
    @test r[5] === 2.5
    @test r[6] === true
    @test r[7] === nothing
    @test r[8] == (4, "four")
    @test r[9] == [1.5, 2.5]
    @test r[10] isa Vector{Tensor} && pointer(r[10][2]) == pointer(x)
    y, nm = C.call(s, "kw", x; k = 5, name = "z")
    @test Array(y) == [5f0, 5f0] && nm == "z"
    @test s(:kw, x)[2] == "a"
    @test s(:none_out, x) === nothing
    @test s(:dev, x) == Device(:cpu, -1) || s(:dev, x).type == C.CT_DEVICE_CPU
    e = try
        s(:kw, x; bogus = 1); nothing
    catch err
        err
    end
    @test e isa CTorchError
    # pickle round trip
    f = tempname() * ".pt"
    C.pickle_save(Dict("w" => C.arange(Float32, 0, 4), "n" => C.ones(2)), f)
    back = C.pickle_load(f)
    @test Array(back["w"]) == Float32[0, 1, 2, 3]
    rm(f)
end

@testset "ops by name and operators" begin
    a = Tensor(Float32[1, 2, 3, 4])
    b = Tensor(Float32[10, 20, 30, 40])
    A, B = Array(a), Array(b)
    @test Array(ops.aten.add(a, b; alpha = 2)) == A .+ 2 .* B
    @test Array(ops.aten.var"add.Tensor"(a, b)) == A .+ B
    @test Array(C.op("aten::add.Tensor")(a, b)) == A .+ B
    @test ops.aten.add === ops.aten.add || ops.aten.add.ptr == ops.aten.add.ptr    # cached
    # Julia's operators (the full table: operators.jl)
    @test Array(a + b) == A + B && Array(a - b) == A - B && Array(-a) == -A
    @test Array(a .* b) == A .* B && Array(b ./ a) ≈ B ./ A
    @test Array(2 * a) == 2A && Array(a * 2.5f0) == 2.5f0 * A && Array(a / 2) == A / 2
    @test Array(a .^ 2) == A .^ 2 && approx(Array(a .^ b), A .^ B; rtol = 1e-4)
    @test Array(exp.(a)) ≈ exp.(A)
    M = Tensor(Float32[1 2; 3 4])             # torch [[1,3],[2,4]]
    N = Tensor(Float32[5 6; 7 8])
    # one index order: torch's matmul is Julia's matrix product, and so is `*`
    @test Array(matmul(M, N)) == Float32[1 2; 3 4] * Float32[5 6; 7 8]
    @test Array(M * N) == Float32[1 2; 3 4] * Float32[5 6; 7 8]
    @test sum(a) === 10f0
    @test sum(M; dims = 1) == sum(Float32[1 2; 3 4]; dims = 1) == Float32[4 6]
    @test sum(M; dims = 2) == Float32[3 7]'
    @test C.mean(M; dims = (1, 2)) == fill(2.5f0, 1, 1)
    @test C.mean(a) === 2.5f0 && C.mean(Tensor([1, 2])) === 1.5
    # multiple results
    v, i = ops.aten.max(Tensor(Float32[3, 9, 1]), 0)
    @test C.item(v) == 9 && C.item(i) == 1
    @test C.call_tensor(ops.aten.var"add.Tensor", a, b) isa Tensor
    @test occursin("aten::add.Tensor", join(C.schemas(C.op("aten::add.Tensor"))))
    @test "aten::add.Tensor" in C.list_ops()
    @test_throws CTorchError ops.aten.add(a, "nope")
    # tensors-only path (ct_op_call_tensors), decided once per op
    mask(o) = [n for n in 1:8 if (o.tensor_mask >> n) & 1 != 0]
    @test mask(C.op("aten::add.Tensor")) == [2]          # alpha takes its default
    @test mask(C.op("aten::neg.default")) == [1]         # ".default": the unnamed overload
    @test C.schemas(C.op("aten::neg.default")) == ["aten::neg(Tensor self) -> Tensor"]
    @test isempty(mask(ops.aten.add))                    # overload set: ct_op_call
    @test isempty(mask(C.op("aten::sort.default")))      # two results
    @test isempty(mask(C.op("aten::max.dim")))           # dim has no default
    @test Array(C.op("aten::sub.Tensor")(b, a)) == B .- A
    @test Array(ops.aten.add(a, b)) == A .+ B
    y = ops.aten.add_(C.clone(a), b)                     # in place: same result as before
    @test Array(y) == A .+ B
    vs, is = C.op("aten::sort.default")(Tensor(Float32[3, 1, 2]))
    @test Array(vs) == [1, 2, 3] && Array(is) == [1, 2, 0]
    @test_throws CTorchError C.call_tensor(C.op("aten::sort.default"), a)
    @test_throws CTorchError ops.aten.add(a, Tensor(Float32[1, 2, 3]))   # torch error, not a crash
    @test_throws DimensionMismatch a + Tensor(Float32[1, 2, 3])          # Julia's shape check
    dead = Tensor(Float32[1, 2, 3, 4]); free!(dead)
    @test_throws CTorchError a + dead
end

@testset "LibTorch warnings and undefined tensors" begin
    # an op that gets no gradient for some inputs returns undefined tensors: `nothing`
    x = C.rand(1, 1, 4, 4); w = C.rand(1, 1, 3, 3); go = C.rand(1, 1, 2, 2)
    r = ops.aten.convolution_backward(go, x, w, nothing, [1, 1], [0, 0], [1, 1], false, [0, 0], 1,
                                      [true, false, false])
    @test r[1] isa Tensor{Float32,4} && size(r[1]) == (1, 1, 4, 4)
    @test r[2] === nothing && r[3] === nothing
    # LibTorch's warnings (kept by libctorch per thread) come out as @warn, once
    out = C.zeros(1)
    @test_logs (:warn, r"LibTorch: .*resized") ops.aten.add(C.ones(4), C.ones(4); out = out)
    @test size(out) == (4,) && C.ct_warnings_count() == 0
end

@testset "modules" begin
    m = ScriptModule("JuliaMade")
    w = Tensor(Float32[1 4; 2 5; 3 6])         # torch (3,2)
    C.register_parameter!(m, "w", w)
    C.register_buffer!(m, "b", C.ones(2))
    C.define!(m, """
def forward(self, x):
    return torch.matmul(x, self.w) + self.b

def scaled(self, x, k: float = 1.0, shift: int = 0):
    return self.forward(x) * k + shift
""")
    x = C.ones(1, 3)
    y = m(x)
    @test Array(y) == Float32[7 16]
    @test Array(forward(m, x)) == Array(y)
    @test Array(m(:scaled, x; k = 2.0, shift = 1)) == 2 .* Array(y) .+ 1
    @test Array(C.call(m, "scaled", x, 3.0)) == 3 .* Array(y)
    @test haskey(C.method_schemas(m), "scaled")
    ps = named_parameters(m)
    @test collect(keys(ps)) == ["w"]
    @test pointer(ps["w"]) == pointer(w)       # the module's own memory
    C.no_grad(() -> ps["w"] .= 0)              # broadcast into it (a parameter: no autograd)
    @test Array(m(x)) == Float32[1 1]
    @test haskey(named_buffers(m), "b")
    @test C.getattr(m, "b") isa Tensor
    C.setattr!(m, "b", C.zeros(2))
    @test Array(m(x)) == zeros(Float32, 1, 2)
    eval!(m); @test !C.is_training(m)
    train!(m); @test C.is_training(m)
    C.eval(m); @test !C.is_training(m)
    C.to(m, Float64)
    @test eltype(named_parameters(m)["w"]) == Float64
    f = tempname() * ".pt"
    C.save(m, f; extra_files = Dict("meta" => "from julia"))
    m2 = C.load(f)
    @test eltype(named_parameters(m2)["w"]) == Float64
    @test Array(m2(C.ones(Float64, 1, 3))) == zeros(1, 2)
    m3 = C.load(read(f))
    @test Array(m3(:scaled, C.ones(Float64, 1, 3); shift = 2)) == fill(2.0, 1, 2)
    @test C.extra_files(m2) == Dict("meta" => "from julia")
    @test C.load(C.save_bytes(m2)) isa ScriptModule
    rm(f)
    e = try
        m(C.ones(1, 7)); nothing
    catch err
        err
    end
    @test e isa CTorchError && e.code == C.CT_ERR_TORCH
    @test_throws CTorchError m(:no_such_method, x)
    free!(m)
    @test_throws CTorchError m(x)
end

@testset "tensors-only forward: one C call, no value handles" begin
    m = ScriptModule("TwoOut")
    C.define!(m, "def forward(self, x, y):\n    return x + y, x * y\n\ndef one(self, x):\n    return x\n")
    x = C.tensor(Float32[1, 2]); y = C.tensor(Float32[3, 4])
    begin
        # While the forward runs, every C function that makes or reads a
        # ct_value is unavailable: the call succeeds only if it uses none.
        slots = [getfield(C, Symbol("_fp_", n)) for n in (:ct_value_from_tensor, :ct_value_to_tensor,
                                                          :ct_module_forward, :ct_module_call, :ct_value_free)]
        saved = [s[] for s in slots]
        r = try
            foreach(s -> s[] = C_NULL, slots)
            m(x, y)
        finally
            foreach((s, v) -> s[] = v, slots, saved)
        end
        @test r isa Tuple{Tensor,Tensor} && r[1] == [4, 6] && r[2] == [3, 8]
    end
    @test m(:one, x) == [1, 2]                   # other methods: the general path
    # results that are not all tensors take the general path
    m2 = ScriptModule("Mixed")
    C.define!(m2, "def forward(self, x):\n    return x, 3\n")
    r2 = m2(x)
    @test r2[1] == [1, 2] && r2[2] === 3
end

@testset "a method runs once per call, whatever it returns (issue 21)" begin
    m = ScriptModule("Counted")
    C.register_buffer!(m, "calls", C.zeros(Int64, 1))
    body(ret) = "    self.calls.add_(1)\n" * (isempty(ret) ? "" : "    return $ret\n")
    methods = ("one" => "x", "pair" => "x, x + 1", "listed" => "[x, x]",
               "named" => "{'a': x}", "nothing" => "", "many" => join(fill("x", 20), ", "))
    C.define!(m, join(("def $name(self, x):\n" * body(ret) for (name, ret) in methods)))
    x = C.tensor(Float32[1, 2])
    calls() = Int(C.getattr(m, "calls")[1])
    for round in 0:1
        for (i, (name, _)) in enumerate(methods)
            r = m(Symbol(name), x)
            @test calls() == round * length(methods) + i
        end
    end
    @test m(:one, x) isa Tensor && m(:pair, x)[2] == [2, 3]
    @test m(:many, x) isa NTuple{20,Tensor}
    @test m(:listed, x) isa AbstractVector && m(:named, x) isa AbstractDict
    @test m(:nothing, x) === nothing
end

@testset "PyTorch reference models" begin
    dir = get(ENV, "CTORCH_TEST_MODELS", "")
    # PyTorch-made models only: c_* is written by the C tests, and nms needs
    # torchvision's op library (tested in tests/c/test_load_library.c).
    ios = isdir(dir) ? filter(f -> endswith(f, "_io.pt") && !startswith(f, "c_") &&
                                   f != "nms_io.pt", readdir(dir)) : String[]
    if isempty(ios)
        @skip_test "no reference models in CTORCH_TEST_MODELS=$(repr(dir))"
    end
    same(a::Tensor, b::Tensor) = size(a) == size(b) && eltype(a) == eltype(b) &&
        (eltype(a) <: AbstractFloat ? isapprox(a, b; rtol = 1e-4, atol = 1e-5) : a == b)
    same(a::Union{Tuple,AbstractVector}, b::Union{Tuple,AbstractVector}) =
        length(a) == length(b) && all(same(x, y) for (x, y) in zip(a, b))
    same(a::AbstractDict, b::AbstractDict) = Set(keys(a)) == Set(keys(b)) && all(same(a[k], b[k]) for k in keys(a))
    same(a, b) = a == b
    for io in ios
        name = io[1:end-length("_io.pt")]
        path = joinpath(dir, name * ".pt")
        isfile(path) || continue
        @testset "$name" begin
            ref = try
                C.pickle_load(joinpath(dir, io))
            catch err
                # LibTorch 1.13's unpickler lacks the APPEND opcode (a
                # one-element list in torch.save's output): a C-side limit.
                (err isa CTorchError && occursin("Unknown opcode", err.message)) || rethrow()
                @skip_test "$name: LibTorch's unpickler lacks the APPEND opcode"
                nothing
            end
            if ref !== nothing
                m = C.load(path)
                eval!(m)
                out = C.no_grad(() -> m(ref["inputs"]...))
                @test same(out, ref["output"])
                if haskey(ref, "param_names")
                    @test Set(keys(named_parameters(m))) == Set(String.(ref["param_names"]))
                end
            end
        end
    end
end

@testset "LSTM guard: no-grad LSTM matches float64" begin
    # A 2-layer LSTM(8, 3) over deterministic values, in float32 without grad
    # and in float64 (never oneDNN's path); tests/c/test_lstm_guard.c has the
    # detection and route tests.
    s = C.Script("""
def vals(shape: List[int], phase: float, double: bool):
    n = 1
    for s in shape:
        n *= s
    t = torch.sin(torch.arange(n).double() * 0.7373 + phase).mul(0.6).reshape(shape)
    return t if double else t.float()

def lstm(double: bool, bidirectional: bool):
    I, H, N, T, L = 8, 3, 2, 5, 2
    D = 2 if bidirectional else 1
    params: List[Tensor] = []
    k = 0.0
    for layer in range(L):
        inp = I if layer == 0 else H * D
        for d in range(D):
            for shape in [[4 * H, inp], [4 * H, H], [4 * H], [4 * H]]:
                k += 1.0
                params.append(vals(shape, k, double))
    x = vals([N, T, I], 0.5, double)
    h0 = vals([L * D, N, H], 1.5, double)
    c0 = vals([L * D, N, H], 2.5, double)
    out, h, c = torch.lstm(x, [h0, c0], params, True, L, 0.0, False, bidirectional, True)
    return torch.cat([out.flatten(), h.flatten(), c.flatten()]).double()
""")
    for bidir in (false, true)
        want = Array(s(:lstm, true, bidir))
        got = Array(C.no_grad(() -> s(:lstm, false, bidir)))
        @test maximum(abs.(got .- want)) <= 1e-5
    end
    state = C.lstm_guard_state()
    if startswith(C.torch_version(), "1.")
        @test state == -1
        @test_throws CTorchError C.lstm_guard!(true)
        @test_throws CTorchError C.lstm_guard_check()
        C.lstm_guard!(nothing)
    else
        @test state == (C.lstm_guard_check() > 1e-3 ? 1 : 0)
    end
    @test_throws MethodError C.lstm_guard!(1)
end

@testset "autograd" begin
    x = requires_grad!(Tensor([1.0, 2.0, 3.0]))
    l = ops.aten.sum(x .* x)
    @test C.grad_fn_name(l) !== nothing
    backward(l)
    @test Array(grad(x)) == [2.0, 4.0, 6.0]
    zero_grad!(x)
    @test Array(grad(x)) == zeros(3)
    @test C.is_leaf(x) && !C.is_leaf(l)
    C.grad!(x, nothing)
    @test grad(x) === nothing
    gs = C.autograd_grad(ops.aten.sum(x .^ 3), [x])
    @test Array(gs[1]) == 3 .* [1.0, 2.0, 3.0] .^ 2
    @test C.no_grad(() -> requires_grad(x * 2)) == false
end

@testset "custom autograd functions in Julia" begin
    # f! (in place on a torch-allocated clone)
    x = requires_grad!(Tensor([1.0, -2.0, 3.5]))
    y = Double(x)
    @test Array(y) == [2.0, -4.0, 7.0]
    @test C.grad_fn_name(y) isa String
    backward(ops.aten.sum(y .* y))               # d/dx sum((2x)^2) = 8x
    @test Array(grad(x)) ≈ 8 .* [1.0, -2.0, 3.5]

    # g (output allocated with torch's empty_like): finite differences ...
    x0 = [0.3, -1.2, 2.0, 0.7]
    x = requires_grad!(Tensor(copy(x0)))
    y = CubeSin(x)
    @test Array(y) ≈ x0 .^ 3 .+ sin.(x0)
    w = Tensor([1.0, -0.5, 2.0, 0.25])
    backward(ops.aten.sum(y .* w))
    gjl = Array(grad(x))
    loss(v) = sum((v .^ 3 .+ sin.(v)) .* [1.0, -0.5, 2.0, 0.25])
    @test approx(gjl, fd_grad(loss, x0); rtol = 1e-5, atol = 1e-6)
    # ... and the same layer written with torch ops
    xt = requires_grad!(Tensor(copy(x0)))
    yt = xt .^ 3 .+ sin.(xt)
    backward(ops.aten.sum(yt .* w))
    @test approx(gjl, Array(grad(xt)); rtol = 1e-12, atol = 1e-12)
    @test approx(Array(y), Array(yt))

    # Float32, 2-D, inside a larger graph, and two inputs / two outputs
    a = requires_grad!(C.rand(3, 4))
    b = requires_grad!(C.rand(3, 4))
    p, s = MulAdd(a * 1, b)
    backward(ops.aten.sum(p .* 3 .+ s))
    @test isapprox(grad(a), b .* 3 .+ 1; rtol = 1e-6)
    @test isapprox(grad(b), a .* 3 .+ 1; rtol = 1e-6)
    ga = C.autograd_grad(ops.aten.sum(MulAdd(a, b)[1]), [a, b])
    @test isapprox(ga[1], b) && isapprox(ga[2], a)

    # A Julia exception in forward: a CTorchError from apply, no crash
    Bad = AutogradFunction((ctx, x) -> error("forward exploded"), (ctx, g) -> g)
    e = try
        Bad(C.ones(2)); nothing
    catch err
        err
    end
    @test e isa CTorchError && e.code == C.CT_ERR_CALLBACK
    @test occursin("forward exploded", e.message)
    # ... and in backward: a CTorchError from backward
    BadB = AutogradFunction((ctx, x) -> C.clone(x), (ctx, g) -> throw(DomainError(-1, "backward exploded")))
    x = requires_grad!(C.ones(2))
    y = BadB(x)
    e = try
        backward(ops.aten.sum(y)); nothing
    catch err
        err
    end
    @test e isa CTorchError && e.code == C.CT_ERR_CALLBACK
    @test occursin("backward exploded", e.message)
    # wrong number of gradients
    Wrong = AutogradFunction((ctx, x) -> C.clone(x), (ctx, g) -> (g, g))
    @test_throws CTorchError backward(ops.aten.sum(Wrong(requires_grad!(C.ones(2)))))

    # The Julia state is released when torch drops the graph.
    GC.gc(); GC.gc(); C.release_unused!()
    base = C.rooted_count()
    cubesin_steps(20)
    # Finalizers run one collection after their object dies, and each freed
    # handle can make the next one unreachable: collect until nothing changes.
    for _ in 1:10
        GC.gc(); C.release_unused!()
        C.rooted_count() == base && break
    end
    @test C.rooted_count() == base
    # no graph recorded (grad mode off): released right away
    C.no_grad(() -> CubeSin(C.ones(2)))
    C.release_unused!()
    @test C.rooted_count() == base
end

@testset "threads" begin
    # Ops and module calls from several Julia threads at once (the test runs
    # with --threads=4; tests/julia.cmake).
    @test Threads.nthreads() > 1
    m = ScriptModule("T")
    C.define!(m, "def forward(self, x):\n    return x * 2 + 1\n")
    n = 64
    res = Vector{Bool}(undef, n)
    tids = zeros(Int, n)
    Threads.@threads for i in 1:n
        tids[i] = Threads.threadid()
        ok = true
        for k in 1:20
            x = C.full((16,), Float64(i); dtype = Float64)
            ok &= Array(m(x)) == fill(2.0i + 1, 16)
            ok &= Array(x + x) == fill(2.0i, 16)
        end
        res[i] = ok
    end
    @test all(res)
    @test length(unique(tids)) > 1          # really ran on several threads
end


@testset "withscope: the handles a step made are freed when it ends" begin
    x = C.full((4,), 2.0; dtype = Float64)
    inner = Ref{Any}(nothing)
    kept = Ref{Any}(nothing)
    r = withscope() do
        a = x + x
        b = a .* a
        inner[] = a
        kept[] = keep!(a * 3)
        (b, [a .+ 1])
    end
    @test Array(r[1]) == fill(16.0, 4) && Array(r[2][1]) == fill(5.0, 4)
    @test C.isfreed(inner[])                    # made inside, not returned
    @test_throws CTorchError Array(inner[])     # a freed handle throws, no crash
    @test !C.isfreed(kept[]) && Array(kept[]) == fill(12.0, 4)
    @test !C.isfreed(x)                         # made before the scope
    mid = Ref{Any}(nothing)
    out = withscope() do                        # nested: the inner result is the outer's
        mid[] = withscope(() -> x * 5)
        @test !C.isfreed(mid[])
        mid[] .+ 1
    end
    @test C.isfreed(mid[]) && Array(out) == fill(11.0, 4)
    t = Ref{Any}(nothing)
    @test_throws ErrorException withscope() do  # an error still frees
        t[] = x * 7
        error("boom")
    end
    @test C.isfreed(t[])
    @test Array(@scoped (x * 2) .+ 1) == fill(5.0, 4)
    # A parameter's gradient survives: the graph and the parameter hold it.
    w = C.full((3,), 1.0; dtype = Float64)
    requires_grad!(w, true)
    withscope() do
        backward(C.ops.aten.sum(w .* w))
        nothing
    end
    @test Array(grad(w)) == fill(2.0, 3)
    # Threads: each thread's scope is its own.
    ok = fill(false, 8)
    Threads.@threads for i in 1:8
        r = withscope(() -> (x * i) .+ 0)
        ok[i] = Array(r) == fill(2.0i, 4)
    end
    @test all(ok)
end

@testset "runtime controls: backend flags, generators, CUDA without a device" begin
    for name in keys(C.BACKEND_FLAGS)
        local was
        try
            was = C.backend_flag(name)
        catch e
            @test e isa CTorchError && e.code == C.CT_ERR_NOT_SUPPORTED   # a newer flag
            continue
        end
        C.backend_flag!(name, !was)
        @test C.backend_flag(name) == !was
        C.backend_flag!(name, was)
        @test C.backend_flag(name) == was
    end
    @test_throws CTorchError C.backend_flag(:no_such_flag)
    @test C.float32_matmul_precision() == "highest"
    C.float32_matmul_precision!("high")
    @test C.float32_matmul_precision() == "high" && C.backend_flag(:matmul_allow_tf32)
    C.float32_matmul_precision!("highest")
    @test_throws CTorchError C.float32_matmul_precision!("fast")

    g = C.manual_seed!(Generator(), 1234)
    @test C.initial_seed(g) == 1234
    state = C.get_state(g)
    @test eltype(state) == UInt8 && length(state) == 5056
    a = Array(ops.aten.rand([8]; generator = g))
    b = Array(ops.aten.rand([8]; generator = g))
    @test a != b
    C.set_state!(g, Vector{UInt8}(Array(state)))
    @test Array(ops.aten.rand([8]; generator = g)) == a
    C.manual_seed(42)
    @test C.initial_seed(C.default_generator()) == 42
    err = try C.set_state!(g, zeros(UInt8, 10)); nothing catch e; e end
    @test err isa CTorchError && err.code == C.CT_ERR_INVALID_ARGUMENT
    if !C.cuda_is_available()
        for f in (() -> C.cuda_max_memory_allocated(), () -> C.cuda_memory_stats(),
                  () -> C.CUDAEvent(timing = true), () -> C.CUDAGraph(),
                  () -> Generator(device = :cuda))
            err = try f(); nothing catch e; e end
            @test err isa CTorchError && err.code == C.CT_ERR_NOT_SUPPORTED
        end
    end
end

ONECYCLE_TORCH_LRS = [0.020000000000000018, 0.49720771772545586, 0.4058728269748815,
                            0.23131855133348753, 0.0667387650944153, 2e-06]
ONECYCLE_TORCH_MOMENTA = [0.95, 0.8505584586887436, 0.8688255099070633, 0.9037365046793212,
                                0.9366525935914912, 0.95]

@testset "training: optimizers, schedules, clipping, autocast, loss scaling" begin
    # Adam against its formula, step for step
    w = requires_grad!(Tensor(Float32[0.5, -1.5]), true)
    g = Float32[0.3, -0.7]
    opt = C.Adam([w]; lr = 0.01, betas = (0.9, 0.999))
    @test C.algorithm(opt) == :adam && C.num_groups(opt) == 1
    @test C.getoption(opt, :betas) == (0.9, 0.999) && C.getoption(opt, :lr) == 0.01
    m, v, x = zeros(2), zeros(2), Float64.(Array(w))
    for t in 1:4
        C.grad!(w, Tensor(copy(g)))
        step!(opt)
        m .= 0.9 .* m .+ 0.1 .* g
        v .= 0.999 .* v .+ 0.001 .* Float64.(g) .^ 2
        x .-= 0.01 .* (m ./ (1 - 0.9^t)) ./ (sqrt.(v) ./ sqrt(1 - 0.999^t) .+ 1e-8)
        @test Array(w) ≈ x rtol = 1e-5
    end
    # state_dict in torch's layout, through a torch.save-format pickle and back
    sd = C.state_dict(opt)
    @test sort(collect(keys(sd["state"][0]))) == ["exp_avg", "exp_avg_sq", "step"]
    @test sd["param_groups"][1]["params"] == [0]
    bytes = C.pickle_bytes(sd)
    w2 = requires_grad!(Tensor(Array(w)), true)
    opt2 = C.Adam([w2])
    C.load_state_dict!(opt2, C.pickle_load(bytes))
    @test C.getoption(opt2, :lr) == 0.01
    for _ in 1:3
        C.grad!(w, Tensor(copy(g))); C.grad!(w2, Tensor(copy(g)))
        step!(opt); step!(opt2)
        @test Array(w) == Array(w2)
    end
    zero_grad!(opt)
    @test grad(w) === nothing
    # groups and options
    b = requires_grad!(Tensor(Float32[1, 2]), true)
    sgd = C.SGD([w2]; lr = 0.1, momentum = 0.9)
    C.add_param_group!(sgd, [b]; lr = 0.5)
    @test C.num_groups(sgd) == 2 && C.getoption(sgd, :lr; group = 2) == 0.5
    @test C.getoption(sgd, :momentum; group = 2) == 0.9
    C.setoption!(sgd, :nesterov, true)
    @test C.getoption(sgd, :nesterov) === true
    err = try C.setoption!(sgd, :lr, -1.0); nothing catch e; e end
    @test err isa CTorchError && err.code == C.CT_ERR_INVALID_ARGUMENT && occursin("Invalid learning rate", err.message)
    err = try C.Adam([w]; lrr = 0.1); nothing catch e; e end
    @test err isa CTorchError && occursin("adam has no option 'lrr'", err.message)
    err = try C.SGD([w, w]); nothing catch e; e end
    @test err isa CTorchError && occursin("appears twice", err.message)
    # schedules: torch's formulas
    p1 = requires_grad!(Tensor(Float32[1]), true)
    o = C.SGD([p1]; lr = 0.1)
    sched = C.CosineAnnealingLR(o; T_max = 10, eta_min = 0.001)
    lrs = Float64[]
    for _ in 1:10
        step!(o); step!(sched); push!(lrs, C.last_lr(sched)[1])
    end
    @test lrs ≈ [0.001 + 0.099 * (1 + cos(pi * e / 10)) / 2 for e in 1:10] rtol = 1e-12
    @test C.getoption(o, :initial_lr) == 0.1
    o = C.SGD([p1]; lr = 0.1)
    st = C.StepLR(o; step_size = 2, gamma = 0.5)
    got = Float64[]
    for _ in 1:5
        step!(st); push!(got, C.last_lr(st)[1])
    end
    @test got == [0.1, 0.05, 0.05, 0.025, 0.025]
    o = C.SGD([p1]; lr = 0.1)
    lin = C.LinearLR(o; start_factor = 0.25, total_iters = 3)
    got = [C.last_lr(lin)[1]]
    for _ in 1:4
        step!(lin); push!(got, C.last_lr(lin)[1])
    end
    @test got ≈ [0.025, 0.05, 0.075, 0.1, 0.1]
    # OneCycleLR against torch's numbers (torch.optim.lr_scheduler.OneCycleLR(SGD(lr=0.1,
    # momentum=0.9), max_lr=0.5, total_steps=6), printed by torch 1.13 and 2.15 alike)
    o = C.SGD([p1]; lr = 0.1, momentum = 0.9)
    oc = C.OneCycleLR(o; max_lr = 0.5, total_steps = 6)
    got, moms = [C.last_lr(oc)[1]], [C.getoption(o, :momentum)]
    for _ in 1:5
        step!(o); step!(oc); push!(got, C.last_lr(oc)[1]); push!(moms, C.getoption(o, :momentum))
    end
    @test got ≈ ONECYCLE_TORCH_LRS rtol = 1e-12
    @test moms ≈ ONECYCLE_TORCH_MOMENTA rtol = 1e-12
    @test_throws ArgumentError step!(step!(oc))
    # clipping
    a = requires_grad!(Tensor(Float32[0, 0]), true)
    C.grad!(a, Tensor(Float32[3, 4]))
    n = C.clip_grad_norm!([a], 1.0)
    @test n[] ≈ 5.0f0 && Array(grad(a)) ≈ Float32[3, 4] ./ (5 + 1e-6)
    C.clip_grad_value!([a], 0.1)
    @test maximum(abs.(Array(grad(a)))) <= 0.1f0
    # autocast: matmul in BFloat16 inside, Float32 outside
    xm = Tensor(rand(Float32, 4, 4))
    y = autocast(:cpu) do
        @test C.is_autocast_enabled(:cpu) && C.autocast_dtype(:cpu) == BFloat16
        matmul(xm, xm)
    end
    @test eltype(y) == BFloat16 && eltype(matmul(xm, xm)) == Float32
    @test !C.is_autocast_enabled(:cpu)
    @test_throws CTorchError autocast(() -> nothing, :tpu)
    # loss scaling: a NaN skips the step and backs the scale off
    q = requires_grad!(Tensor(Float32[1, 1]), true)
    oq = C.SGD([q]; lr = 1.0)
    s = C.GradScaler(device = :cpu, init_scale = 8.0, growth_interval = 1)
    backward(ops.aten.sum(C.scale(s, q)))
    @test Array(grad(q)) == Float32[8, 8]
    @test C.step!(s, oq) == true && Array(q) == Float32[0, 0]
    C.update!(s)
    @test C.get_scale(s) == 16.0
    C.grad!(q, Tensor(Float32[NaN, 1]))
    @test C.step!(s, oq) == false && Array(q) == Float32[0, 0]
    C.update!(s)
    @test C.get_scale(s) == 8.0
    @test C.state_dict(s)["scale"] == 8.0
end


include("tasks.jl")       # scopes per task, kernels on several threads
include("wrappers.jl")    # reshape(t, :), view, PermutedDimsArray, ... keep autograd
include("docs.jl")        # every exported name has a docstring
include("schedulers.jl")  # schedulers' state_dict / load_state_dict!
include("operators.jl")
include("oplibrary.jl")
include("custom_layers.jl") # a callback's Julia stack in its error; custom layers under autocast
include("package.jl")
include("distributed.jl")
include("nn.jl")
include("twins.jl")      # set_twin, check_twin, to_pytorch

end # testset CTorch
