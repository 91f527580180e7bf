# TorchScript twins of Julia operators (CTorch.set_twin, ct_library_set_twin),
# CTorch.check_twin, and CTorch.to_pytorch (ct_module_to_pytorch): a model with
# a Julia layer becomes one that PyTorch loads without ctorch.
# Included by runtests.jl; also runs on its own:
#   scripts/julia bindings/julia/CTorch/test/twins.jl

if !@isdefined(C)
    using Test, CTorch
    const C = CTorch
end
using CTorch.nn: state_dict

# The exception a call throws (nothing if it returns).
twin_error(f) = try f(); nothing catch e; e end

const SOFTSIGN_TWIN = "def softsign(x: Tensor) -> Tensor:\n    return x / (1 + torch.abs(x))\n"

function twin_softsign!(y::AbstractArray, x::AbstractArray)
    @inbounds for i in eachindex(x, y)
        y[i] = x[i] / (1 + abs(x[i]))
    end
    return y
end

# softsign (Julia loop kernel and backward); scale_mul(x, y, a) = a*x*y + y;
# badgrad: the right values, a backward off by a factor 2.
function twin_register!(lib)
    C.define(lib, "softsign(Tensor x) -> Tensor")
    C.impl(lib, "softsign", :CPU) do x
        xc, y = C.contiguous(x), C.empty_like(x)
        twin_softsign!(unsafe_array(y), unsafe_array(xc))
        y
    end
    C.impl_autograd(lib, "softsign") do args, result, grads
        grads[1] ./ (1 .+ abs.(args[1])) .^ 2
    end
    C.define(lib, "scale_mul(Tensor x, Tensor y, float a=2.0) -> Tensor")
    C.impl(lib, "scale_mul", :CPU) do x, y, a
        a .* x .* y .+ y
    end
    C.impl_autograd(lib, "scale_mul") do args, result, grads
        x, y, a = args
        (a .* y .* grads[1], (a .* x .+ 1) .* grads[1], nothing)
    end
    C.define(lib, "badgrad(Tensor x) -> Tensor")
    C.impl(lib, "badgrad", :CPU) do x
        2 .* x
    end
    C.impl_autograd(lib, "badgrad") do args, result, grads
        4 .* grads[1]
    end
    return lib
end

# A module whose forward calls operator ns::name.
function op_layer(ns, name)
    m = ScriptModule("JuliaOp_$name")
    C.define!(m, "def forward(self, x):\n    return torch.ops.$ns.$name(x)\n")
    return m
end

@testset "TorchScript twins of Julia operators, to_pytorch" begin
    lib = twin_register!(C.Library("jltwin"))

    @testset "set_twin and check_twin" begin
        # no twin yet
        e = twin_error(() -> C.check_twin(lib, "softsign", C.randn(3)))
        @test e isa ArgumentError && occursin("jltwin::softsign has no twin", e.msg)
        # the right twin: results and gradients agree (Float32 and Float64, 2-D)
        @test C.set_twin(lib, "softsign", SOFTSIGN_TWIN) === nothing
        @test lib.twins["jltwin::softsign"] == SOFTSIGN_TWIN
        @test C.check_twin(lib, "softsign", C.randn(4, 5)) === nothing
        @test C.check_twin(lib, "jltwin::softsign", C.tensor([-3.0, -0.5, 0.0, 2.0]); rtol = 1e-12) === nothing
        # the arguments are not changed, nor given gradients
        x = C.requires_grad!(C.tensor([1.0, -2.0]))
        C.check_twin(lib, "softsign", x)
        @test Array(x) == [1.0, -2.0] && C.grad(x) === nothing
        # several arguments, a float one (passed on to both)
        C.set_twin(lib, "scale_mul", "def scale_mul(x: Tensor, y: Tensor, a: float = 2.0) -> Tensor:\n" *
                                     "    return a * x * y + y\n")
        C.check_twin(lib, "scale_mul", C.randn(Float64, 3), C.randn(Float64, 3), 1.5)
        @test true
        # a wrong twin: check_twin throws with the largest difference
        wrong = "def softsign(x: Tensor) -> Tensor:\n    return x / (1 + x * x)\n"
        C.set_twin(lib, "softsign", wrong)
        xs = [-2.0, 0.5, 3.0]
        e = twin_error(() -> C.check_twin(lib, "softsign", C.tensor(xs)))
        @test e isa AssertionError
        @test occursin("result 1 of jltwin::softsign and its twin differ by up to", e.msg)
        want = maximum(abs.(xs ./ (1 .+ abs.(xs)) .- xs ./ (1 .+ xs .^ 2)))
        @test parse(Float64, split(e.msg)[end]) ≈ want rtol = 1e-6
        # a wrong shape
        C.set_twin(lib, "softsign", "def softsign(x: Tensor) -> Tensor:\n    return x.sum()\n")
        e = twin_error(() -> C.check_twin(lib, "softsign", C.randn(2, 2)))
        @test e isa AssertionError && occursin("shape", e.msg)
        # right values, a wrong gradient (the Julia backward): the gradients are compared
        C.set_twin(lib, "badgrad", "def badgrad(x: Tensor) -> Tensor:\n    return 2 * x\n")
        e = twin_error(() -> C.check_twin(lib, "badgrad", C.tensor([1.0, 2.0])))
        @test e isa AssertionError
        @test occursin("gradient of argument 1 of jltwin::badgrad and its twin differ by up to 2.0", e.msg)
        # a second call replaces the twin
        C.set_twin(lib, "softsign", SOFTSIGN_TWIN)
        C.check_twin(lib, "softsign", C.randn(6))
        @test lib.twins["jltwin::softsign"] == SOFTSIGN_TWIN
    end

    @testset "set_twin errors" begin
        before = copy(lib.twins)
        # a different number of arguments
        e = twin_error(() -> C.set_twin(lib, "softsign", "def softsign(x: Tensor, y: Tensor) -> Tensor:\n    return x\n"))
        @test e isa CTorchError && e.code == C.CT_ERR_INVALID_ARGUMENT && occursin("arguments", e.message)
        # no function of that name (among several)
        e = twin_error(() -> C.set_twin(lib, "softsign", "def other(x: Tensor) -> Tensor:\n    return x\n" *
                                                         "def g(x: Tensor) -> Tensor:\n    return x\n"))
        @test e isa CTorchError && e.code == C.CT_ERR_INVALID_ARGUMENT
        # an operator this library did not define
        e = twin_error(() -> C.set_twin(lib, "nosuchop", "def nosuchop(x: Tensor) -> Tensor:\n    return x\n"))
        @test e isa CTorchError && e.code == C.CT_ERR_INVALID_ARGUMENT && occursin("jltwin::nosuchop", e.message)
        # TorchScript that does not compile
        e = twin_error(() -> C.set_twin(lib, "softsign", "def softsign(x: Tensor) -> Tensor:\n    return x +\n"))
        @test e isa CTorchError && e.code == C.CT_ERR_TORCH
        # nothing changed: the old twins stay
        @test lib.twins == before
        C.check_twin(lib, "softsign", C.randn(3))
    end

    @testset "to_pytorch: a model with a Julia layer" begin
        C.define(lib, "notwin(Tensor x) -> Tensor")
        C.impl(lib, "notwin", :CPU) do x
            C.clone(x)
        end
        C.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), op_layer("jltwin", "softsign"), nn.Linear(8, 3))
        x = C.randn(5, 4)
        y = model(x)
        @test size(y) == (5, 3)
        # without twins: refused, naming each operator without one
        bare = nn.Sequential(nn.Linear(4, 4), op_layer("jltwin", "notwin"))
        e = twin_error(() -> C.to_pytorch(bare))
        @test e isa CTorchError && e.code == C.CT_ERR_NOT_SUPPORTED
        @test occursin("jltwin::notwin", e.message)
        C.define(lib, "notwin2(Tensor x) -> Tensor")
        C.impl(x -> C.clone(x), lib, "notwin2", :CPU)
        two = nn.Sequential(op_layer("jltwin", "notwin"), op_layer("jltwin", "notwin2"))
        e = twin_error(() -> C.to_pytorch(two))
        @test e isa CTorchError && occursin("jltwin::notwin", e.message) && occursin("jltwin::notwin2", e.message)
        @test Array(C.to_pytorch(op_layer("jltwin", "badgrad"))(C.tensor([1.0, 3.0]))) == [2.0, 6.0]
        # with the twin: a copy computing the same, with the same state
        pt = C.to_pytorch(model)
        @test pt isa ScriptModule && pt !== model
        @test Array(pt(x)) ≈ Array(y) rtol = 1e-5
        sd, sdp = state_dict(model), state_dict(pt)
        @test sort(collect(keys(sdp))) == sort(collect(keys(sd))) == ["0.bias", "0.weight", "2.bias", "2.weight"]
        @test all(Array(sdp[k]) == Array(sd[k]) for k in keys(sd))
        # parameters are copied, not shared
        sdp["0.bias"][1] = 42
        @test Array(sd["0.bias"])[1] != 42
        sdp["0.bias"][1] = Array(sd["0.bias"])[1]
        # saved and loaded (in memory and in a file)
        dir = mktempdir()
        path = C.save(pt, joinpath(dir, "model_pt.pt"))
        C.save(model, joinpath(dir, "model_ctorch.pt"))
        back = C.load(path)
        @test Array(back(x)) ≈ Array(y) rtol = 1e-5
        # the library freed: the copy (and its saved file) still run, the original fails
        close(lib)
        @test isempty(lib.twins)
        @test Array(pt(x)) ≈ Array(y) rtol = 1e-5
        @test Array(C.load(path)(x)) ≈ Array(y) rtol = 1e-5
        e = twin_error(() -> model(x))
        @test e isa CTorchError && e.code == C.CT_ERR_NOT_FOUND && occursin("jltwin::softsign", e.message)
        # PyTorch alone (no ctorch, no Julia) opens the copy, and not the original
        py = "/usr/bin/python3"
        C.pickle_save(x, joinpath(dir, "x.pt"))
        C.pickle_save(y, joinpath(dir, "y.pt"))
        check = """
        import sys, torch
        x, y = torch.load(sys.argv[2]), torch.load(sys.argv[3])
        m = torch.jit.load(sys.argv[1])
        torch.testing.assert_close(m(x), y, rtol=1e-5, atol=1e-6)
        try:
            torch.jit.load(sys.argv[4])
        except Exception as e:
            assert "jltwin" in str(e), e
            print("refused")
        """
        script = joinpath(dir, "check.py")
        write(script, check)
        has_torch = isfile(py) && success(pipeline(`$py -c "import torch"`; stdout = devnull, stderr = devnull))
        if has_torch
            out = read(`$py $script $path $(joinpath(dir, "x.pt")) $(joinpath(dir, "y.pt")) $(joinpath(dir, "model_ctorch.pt"))`, String)
            @test strip(out) == "refused"
        else
            @skip_test "no /usr/bin/python3 with torch"
        end
    end
end
