# The operator semantics table (bindings/julia/README.md, "Operators"): every
# operator and form on Tensors means what it means on Julia Arrays. Each row
# is one expression, evaluated twice: with the names bound to Tensors, and
# with the same names bound to the plain Arrays of the same data (`Array(t)`).
# The Tensor result must have the Array result's kind (a Tensor for an array,
# a number for a number, the same exception type), element type, size and
# values. Included by runtests.jl; runs on its own too:
#   scripts/julia bindings/julia/CTorch/test/operators.jl
using Test, LinearAlgebra
using CTorch
const OPS_C = CTorch

const OP_DATA = Dict{Symbol,Array}(
    :a => Float32[1 2 3; 4 5 6],
    :b => Float32[0.5 -1 2; 3 0.25 -2],
    :v => Float32[10, 20],                    # a column for a
    :r => Float32[1 2 3],                     # a 1×3 row
    :x => Float32[1, 2, 3],
    :xc => reshape(Float32[4, 5, 6], 3, 1),
    :m => Float32[1 2; 3 4; 5 6],
    :s => Float32[1 2; 3 4],
    :i => Int64[1 2 3; 4 5 6],
    :d => Float64[0.5 1.5 2.5; -1 -2 -3],
    :bl => Bool[true false true; false false true],
    :e => Float32[])

# `J` stays a Julia Array in both evaluations (Tensor-with-Array rows).
const OP_TABLE = [
    # + and -: equal shapes, as for arrays
    "a + b", "a - b", "-a", "+a", "a + d", "a + i", "-bl", "x + xc", "a + J",
    "a + v", "a - r", "a + x",                        # DimensionMismatch
    "a + 1", "1 - a",                                 # MethodError: no array + number
    # * is the matrix product; numbers scale
    "a * m", "m * a", "a * x", "x * r", "s * s", "a * b'", "a' * b", "m * s",
    "a * b", "x * x",                                 # DimensionMismatch, MethodError
    "2 * a", "a * 2", "a * 2.5", "2.5f0 * a", "a / 2", "i / 2", "i * 3", "2 \\ a",
    # ^ is the matrix power
    "s ^ 2", "s ^ 3", "a ^ 2", "x ^ 2",
    # transposes
    "a'", "transpose(a)", "x'",
    # the .-forms broadcast (Julia's rules: dimensions aligned from the first)
    "a .+ b", "a .+ v", "a .+ r", "a .+ x", "v .+ r", "a .* b", "a ./ b", "a .- 1",
    "1 .- a", "a .* 2.5", "a .^ 2", "a .^ b", "2 .^ a", "i .^ 2", "i ./ 2", "i .+ 1",
    "a .+ J", "a .* b .+ v", "exp.(a)", "sqrt.(a)", "abs.(b)", "sin.(a) .+ cos.(b)",
    "log.(a)", "tanh.(b)", "abs2.(b)", "inv.(a)", "round.(b)", "floor.(b)",
    "float.(i)", "max.(a, 3)", "min.(a, b)", "a .> 3", "a .== b", "b .<= 0", "3 .< a",
    "bl .& (a .> 2)", ".!bl", "a .* pi", "(z -> 2z + 1).(a)",
    "(c = copy(a); c .*= 2; c)", "(c = copy(a); c .= b .+ v; c)", "(c = copy(a); c .= 0; c)",
    "(c = copy(a); c .+= J; c)",
    # reductions: numbers without dims, arrays keeping dims with them
    "sum(a)", "maximum(a)", "minimum(b)", "prod(a)", "sum(i)", "sum(bl)", "prod(i)",
    "sum(a; dims = 1)", "sum(a; dims = 2)", "maximum(a; dims = 1)", "minimum(b; dims = 2)",
    "prod(a; dims = (1, 2))", "sum(i; dims = (1, 2))", "maximum(e)",
    # == compares whole arrays
    "a == a", "a == b", "a == x", "a != b", "a == copy(a)", "a == J",
]

# Names bound in an expression replaced by values (Tensors or Arrays).
_op_subst(ex::Symbol, env) = haskey(env, ex) ? env[ex] : ex
_op_subst(ex::Expr, env) = Expr(ex.head, map(a -> _op_subst(a, env), ex.args)...)
_op_subst(ex, env) = ex

function _op_eval(src::String, env)
    ex = _op_subst(Meta.parse(src), env)
    try
        return Core.eval(Main, ex)
    catch err
        return err
    end
end

function _op_env(tensors::Bool)
    env = Dict{Symbol,Any}(k => (tensors ? OPS_C.tensor(copy(A)) : copy(A)) for (k, A) in OP_DATA)
    env[:J] = Float32[1 0 1; 0 2 0]
    return env
end

_op_same(got, want) = isapprox(Float64.(got), Float64.(want); rtol = 1e-5, atol = 1e-6)

function op_row_ok(src::String)
    want = _op_eval(src, _op_env(false))
    got = _op_eval(src, _op_env(true))
    if want isa Exception
        return got isa Exception && typeof(got) == typeof(want)
    elseif want isa AbstractArray
        return got isa Tensor && eltype(got) == eltype(want) && size(got) == size(want) &&
               _op_same(Array(got), want)
    elseif want isa Bool
        return got === want
    else
        return got isa Number && typeof(got) == typeof(want) && _op_same(got, want)
    end
end

@testset "operators mean what they mean for Arrays" begin
    @testset "$src" for src in OP_TABLE
        @test op_row_ok(src)
    end
end

# The .-forms run as torch ops on whole tensors (not element loops over
# torch's memory): they record autograd like every other op.
@testset "broadcasts are torch ops (autograd records them)" begin
    w = requires_grad!(OPS_C.tensor([1.0, 2.0, 3.0]))
    y = exp.(w) .* w .+ w .^ 2 .- 1
    @test requires_grad(y) && y isa Tensor{Float64,1}
    backward(ops.aten.sum(y))
    W = [1.0, 2.0, 3.0]
    @test Array(grad(w)) ≈ exp.(W) .* (W .+ 1) .+ 2 .* W
    m = requires_grad!(OPS_C.tensor(Float32[1 2; 3 4]))
    q = m * m' .+ Float32[1, 2]                  # matrix product, then a column
    backward(ops.aten.sum(q))
    @test Array(grad(m)) ≈ 2 .* (ones(Float32, 2, 2) * Float32[1 2; 3 4])
end
