# CTorch.nn: torch.nn's layers built by libctorch (ct_module_new_nn), torch.nn.init
# (ct_tensor_nn_init), and params / state_dict / load_state_dict! / zero_grad! on
# modules. Included by runtests.jl; also runs on its own:
#   scripts/julia bindings/julia/CTorch/test/nn.jl

if !@isdefined(C)
    using Test, CTorch
    const C = CTorch
end
using CTorch.nn: params, state_dict, load_state_dict!, zero_grad!, init!
import REPL   # Base.Docs.doc (docstrings as `?` shows them)

# The CTorchError a call throws (nothing if it returns).
nn_error(f) = try f(); nothing catch e; e end

@testset "nn: torch.nn's layers" begin
    @testset "Linear: torch's init, deterministic under a seed" begin
        C.manual_seed(42)
        l = nn.Linear(16, 8)
        @test l isa ScriptModule
        ps = named_parameters(l)
        @test sort(collect(keys(ps))) == ["bias", "weight"]
        w, b = Array(ps["weight"]), Array(ps["bias"])
        @test size(w) == (8, 16) && size(b) == (8,) && eltype(w) == Float32
        # kaiming_uniform_(a=sqrt(5)) and the bias init: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        bound = 1 / sqrt(16)
        @test all(abs.(w) .<= bound) && all(abs.(b) .<= bound)
        @test maximum(abs.(w)) > bound / 2            # spread over the bound, not a constant
        @test length(unique(w)) == length(w)
        C.manual_seed(42)
        l2 = nn.Linear(16, 8)
        @test Array(named_parameters(l2)["weight"]) == w && Array(named_parameters(l2)["bias"]) == b
        C.manual_seed(43)
        @test Array(named_parameters(nn.Linear(16, 8))["weight"]) != w
        # params: torch's order, the module's own tensors
        p = params(l)
        @test p isa Vector{Tensor} && length(p) == 2
        @test size(p[1]) == (8, 16) && size(p[2]) == (8,)
        p[2][1] = 7
        @test Array(named_parameters(l)["bias"])[1] == 7
        # keywords with torch's names; element types as dtype
        nb = nn.Linear(4, 3; bias = false)
        @test collect(keys(named_parameters(nb))) == ["weight"]
        @test eltype(params(nn.Linear(4, 3; dtype = Float64, device = :cpu))[1]) == Float64
        x = C.rand(5, 4)
        y = nb(x)
        @test size(y) == (5, 3)
        @test Array(y) ≈ Array(x) * Array(params(nb)[1])'
    end

    @testset "Sequential chains its layers" begin
        C.manual_seed(0)
        a, r, b = nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)
        m = nn.Sequential(a, r, b)
        x = C.rand(5, 4)
        y = m(x)
        @test y isa Tensor && size(y) == (5, 2)
        @test Array(y) ≈ Array(b(r(a(x))))
        sd = state_dict(m)
        @test sort(collect(keys(sd))) == ["0.bias", "0.weight", "2.bias", "2.weight"]
        @test Array(sd["2.weight"]) == Array(named_parameters(b)["weight"])
        @test !requires_grad(sd["2.weight"]) && requires_grad(params(b)[1])   # detached,
        sd["2.weight"][1, 1] = 5                                              # same memory
        @test Array(params(b)[1])[1, 1] == 5
        @test [size(p) for p in params(m)] == [(8, 4), (8,), (2, 8), (2,)]
        # buffers are in the state_dict; tuples of ints for sizes
        bn = nn.BatchNorm1d(3)
        @test sort(collect(keys(state_dict(bn)))) ==
              ["bias", "num_batches_tracked", "running_mean", "running_var", "weight"]
        conv = nn.Conv2d(1, 2, (3, 3); padding = (1, 1))
        @test size(params(conv)[1]) == (2, 1, 3, 3)
        @test size(conv(C.rand(1, 1, 5, 5))) == (1, 2, 5, 5)
        @test size(nn.Conv2d(1, 2, 3; padding = "same", stride = (1, 1))(C.rand(1, 1, 4, 4))) == (1, 2, 4, 4)
        @test size(nn.MaxPool2d((2, 2))(C.rand(1, 1, 4, 4))) == (1, 1, 2, 2)
        @test size(nn.LayerNorm((4,))(C.rand(2, 4))) == (2, 4)
        @test sort(collect(keys(named_parameters(nn.ModuleList([a, b]))))) ==
              ["0.bias", "0.weight", "1.bias", "1.weight"]
        @test sort(collect(keys(named_parameters(nn.ModuleDict(Dict("enc" => a)))))) == ["enc.bias", "enc.weight"]
        @test sort(collect(keys(named_parameters(nn.LSTM(3, 4))))) ==
              ["bias_hh_l0", "bias_ih_l0", "weight_hh_l0", "weight_ih_l0"]
        ce = nn.CrossEntropyLoss()(C.tensor(Float32[0 0; 0 0]), C.tensor(Int64[0, 1]))
        @test C.item(ce) ≈ log(2)
    end

    @testset "a training step reduces an MSE loss" begin
        C.manual_seed(1)
        m = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1))
        lossf = nn.MSELoss()
        x = C.randn(32, 3)
        yt = C.tensor(reshape(Float32[sum(Array(x)[i, :]) for i in 1:32], 32, 1))
        opt = C.SGD(params(m); lr = 0.05)
        loss0 = lossf(m(x), yt)
        backward(loss0)
        @test all(p -> grad(p) !== nothing, params(m))
        step!(opt)
        loss1 = lossf(m(x), yt)
        @test C.item(loss1) < C.item(loss0)
        zero_grad!(m)
        @test all(p -> grad(p) === nothing, params(m))
        for _ in 1:50
            zero_grad!(m)
            backward(lossf(m(x), yt))
            step!(opt)
        end
        @test C.item(lossf(m(x), yt)) < C.item(loss0) / 4
        backward(lossf(m(x), yt))
        zero_grad!(m; set_to_none = false)
        @test all(p -> grad(p) !== nothing && all(iszero, Array(grad(p))), params(m))
    end

    @testset "load_state_dict!: round trip, strict" begin
        C.manual_seed(2)
        src = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
        C.manual_seed(3)
        dst = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
        x = C.rand(6, 4)
        @test Array(dst(x)) != Array(src(x))
        r = load_state_dict!(dst, state_dict(src))
        @test r == (missing_keys = String[], unexpected_keys = String[])
        @test Array(dst(x)) == Array(src(x))
        for (k, v) in state_dict(src)
            @test Array(state_dict(dst)[k]) == Array(v)
        end
        # copies, not the same tensors
        params(src)[1][1, 1] = 100
        @test Array(params(dst)[1])[1, 1] != 100
        # a missing key: strict fails and changes nothing
        sd = Dict(k => C.zeros(size(v)...) for (k, v) in state_dict(src))
        delete!(sd, "2.bias")
        before = Array(params(dst)[1])
        e = nn_error(() -> load_state_dict!(dst, sd))
        @test e isa CTorchError && e.code == C.CT_ERR_INVALID_ARGUMENT
        @test occursin("Missing key", e.message) && occursin("2.bias", e.message)
        @test Array(params(dst)[1]) == before
        # not strict: loads what is there, reports the rest
        sd["extra.weight"] = C.zeros(1)
        r = load_state_dict!(dst, sd; strict = false)
        @test r.missing_keys == ["2.bias"] && r.unexpected_keys == ["extra.weight"]
        @test all(iszero, Array(params(dst)[1]))
        # a size mismatch fails whatever strict says
        e = nn_error(() -> load_state_dict!(dst, Dict("0.weight" => C.zeros(2, 2)); strict = false))
        @test e isa CTorchError && occursin("size mismatch", e.message)
    end

    @testset "state_dict keeps torch's order (CTorch.StateDict)" begin
        C.manual_seed(0)
        m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(2, 1))
        sd = state_dict(m)
        order = ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                 "1.num_batches_tracked", "4.weight", "4.bias"]
        @test sd isa C.StateDict && sd isa AbstractDict{String,Tensor}
        @test collect(keys(sd)) == order && length(sd) == 9
        @test [k for (k, _) in sd] == order && haskey(sd, "1.running_var") && !haskey(sd, "2.weight")
        @test get(sd, "nope", :none) === :none && nn_error(() -> sd["nope"]) isa KeyError
        # an ordered snapshot; replacing keeps the place, a new key goes last
        snap = C.StateDict(k => C.clone(v) for (k, v) in sd)
        @test collect(keys(snap)) == order && all(Array(snap[k]) == Array(sd[k]) for k in order)
        @test pointer(snap["0.weight"]) != pointer(sd["0.weight"])
        snap["0.bias"] = C.zeros(2)
        snap["extra"] = C.ones(1)
        @test collect(keys(snap)) == [order; "extra"] && all(iszero, Array(snap["0.bias"]))
        delete!(snap, "0.weight")
        @test collect(keys(snap)) == [order[2:end]; "extra"] && Array(snap["extra"]) == [1.0f0]
        @test collect(keys(copy(snap))) == collect(keys(snap))
        # the order reaches torch.save's file (Python's list(sd)) and the C value
        ks, _ = C._ordered_tensors(C._new_value(sd))
        @test ks == order
        @test load_state_dict!(m, C.pickle_load(C.pickle_bytes(sd))).missing_keys == String[]
    end

    @testset "init!: torch.nn.init" begin
        w = C.zeros(64, 32)
        @test init!(w, :kaiming_uniform_; a = sqrt(5)) === w
        bound = 1 / sqrt(32)
        @test all(abs.(Array(w)) .<= bound) && maximum(abs.(Array(w))) > bound / 2
        C.manual_seed(5); init!(w, :xavier_normal_); w1 = Array(w)
        C.manual_seed(5); init!(w, :xavier_normal_); @test Array(w) == w1
        @test abs(sum(w1) / length(w1)) < 0.05 && 0.5 < sqrt(sum(w1 .^ 2) / length(w1)) / sqrt(2 / 96) < 1.5
        init!(w, :constant_, 0.25)
        @test all(==(0.25f0), Array(w))
        init!(w, :uniform; a = 2, b = 3)              # trailing _ optional
        @test all(x -> 2 <= x <= 3, Array(w))
        g = C.Generator(); C.manual_seed!(g, 7)
        init!(w, :normal_; std = 0.1, generator = g); w2 = Array(w)
        C.manual_seed!(g, 7)
        init!(w, :normal_; std = 0.1, generator = g)
        @test Array(w) == w2
        # no autograd recorded on a parameter
        p = params(nn.Linear(3, 2))[1]
        init!(p, :zeros_)
        @test all(iszero, Array(p)) && requires_grad(p)
        e = nn_error(() -> init!(C.zeros(3), :kaiming_uniform_))
        @test e isa CTorchError && occursin("fewer than 2 dimensions", e.message)
        e = nn_error(() -> init!(w, :no_such_init_))
        @test e isa CTorchError && occursin("no_such_init_", e.message)
        @test haskey(nn.init_methods(), "kaiming_uniform_")
    end

    @testset "errors name the problem" begin
        e = nn_error(() -> nn.layer("NoSuchLayer", 1))
        @test e isa CTorchError && e.code == C.CT_ERR_INVALID_ARGUMENT
        @test occursin("NoSuchLayer", e.message)
        e = nn_error(() -> nn.Conv2d(1, 2, 3; groups = 0))
        @test e isa CTorchError && e.code == C.CT_ERR_INVALID_ARGUMENT
        @test occursin("groups must be a positive integer", e.message)
        e = nn_error(() -> nn.Linear(4, 3; bias = false, biass = true))
        @test e isa CTorchError && occursin("biass", e.message)
        e = nn_error(() -> nn.Linear(4))
        @test e isa CTorchError && occursin("out_features", e.message)
    end

    @testset "one documented function per layer" begin
        # the fixed list is the loaded library's
        @test sort([String(n) for n in nn.LAYERS]) == sort(collect(keys(nn.layers())))
        for n in nn.LAYERS
            @test isdefined(nn, n) && n in names(nn)
        end
        d = string(Base.Docs.doc(nn.Conv2d))
        @test occursin("torch.nn.Conv2d", d)
        @test occursin("nn::Conv2d(int in_channels, int out_channels, int[2] kernel_size", d)
        @test occursin("nn::Linear(int in_features, int out_features, bool bias=True", string(Base.Docs.doc(nn.Linear)))
        @test occursin("Chain", string(Base.Docs.doc(nn.Sequential)))
    end
end
