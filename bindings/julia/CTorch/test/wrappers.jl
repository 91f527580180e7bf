# Base's array wrappers of a Tensor keep autograd (they are Tensors) or are
# refused; never a silent copy without the gradient. Included by runtests.jl.

@testset "Base wrappers of a Tensor keep the gradient" begin
    A = [1.0 2 3; 4 5 6]
    v = collect(1.0:6.0)
    # name => (function of an array, the tensor it is applied to)
    cases = [
        "reshape(v, 1, :)" => (x -> reshape(x, 1, :), v),
        "reshape(v, (:, 3))" => (x -> reshape(x, (:, 3)), v),
        "reshape(v, 2, 3)" => (x -> reshape(x, 2, 3), v),
        "reshape(v, :)" => (x -> reshape(x, :), v),
        "view(v, 2:4)" => (x -> view(x, 2:4), v),
        "view(v, 1:2:5)" => (x -> view(x, 1:2:5), v),
        "view(A, :, 2)" => (x -> view(x, :, 2), A),
        "view(A, 2, 1:2)" => (x -> view(x, 2, 1:2), A),
        "view(A, :)" => (x -> view(x, :), A),
        "@view A[1, :]" => (x -> @view(x[1, :]), A),
        "selectdim(A, 2, 3)" => (x -> selectdim(x, 2, 3), A),
        "selectdim(A, 1, 1:1)" => (x -> selectdim(x, 1, 1:1), A),
        "PermutedDimsArray(A, (2, 1))" => (x -> PermutedDimsArray(x, (2, 1)), A),
        "permutedims(A)" => (x -> permutedims(x), A),
        "permutedims(A, (2, 1))" => (x -> permutedims(x, (2, 1)), A),
        "permutedims(v)" => (x -> permutedims(x), v),
        "transpose(A)" => (x -> transpose(x), A),
        "A'" => (x -> x', A),
        "v'" => (x -> x', v),
        "vec(A)" => (x -> vec(x), A),
        "reverse(v)" => (x -> reverse(x), v),
        "reverse(A; dims = 2)" => (x -> reverse(x; dims = 2), A),
        "A[:, 2:3]" => (x -> x[:, 2:3], A),
        "v[2:2:6]" => (x -> x[2:2:6], v),
        "dropdims" => (x -> dropdims(reshape(x, 1, :); dims = 1), v),
    ]
    for (name, (f, X)) in cases
        @testset "$name" begin
            t = C.requires_grad!(C.tensor(X))
            y = f(t)
            @test y isa Tensor
            @test size(y) == size(f(X)) && Array(y) == collect(f(X))
            w = C.tensor(collect(Float64, 1:length(y)))       # weights: the gradient tells places
            s = C.ops.aten.sum(y .* reshape(w, size(y)))
            backward(s)
            g = grad(t)
            @test g !== nothing
            ref = zeros(size(X))                               # d/dX sum(f(X) .* W)
            W = reshape(collect(Float64, 1:length(y)), size(f(X)))
            for i in eachindex(X)
                E = zeros(size(X)); E[i] = 1
                ref[i] = sum(collect(f(E)) .* W)
            end
            @test g !== nothing && Array(g) == ref
        end
    end

    @testset "views share memory" begin
        t = C.tensor([1.0 2 3; 4 5 6])
        p0, p1 = C.data_ptr(t), C.data_ptr(t) + 6 * sizeof(Float64)
        for y in (view(t, 2, :), view(t, :, 2:3), PermutedDimsArray(t, (2, 1)), selectdim(t, 2, 1))
            @test p0 <= C.data_ptr(y) < p1                     # inside t's memory
        end
        v = C.tensor(collect(1.0:6.0))
        @test C.data_ptr(reshape(v, 2, :)) == C.data_ptr(v) && C.data_ptr(view(v, 3:4)) == C.data_ptr(v) + 16
        view(t, 2, 2:3) .= 0
        @test Array(t) == [1.0 2 3; 4 0 0]
        x = t[:, 1]                                            # getindex copies, as for arrays
        x .= 9
        @test Array(t)[:, 1] == [1.0, 4.0]
    end

    @testset "refused, never silently copied" begin
        t = C.requires_grad!(C.tensor(collect(1.0:6.0)))
        m = C.requires_grad!(C.tensor([1.0 2 3; 4 5 6]))
        x = C.ones(Float64, 2, 3)
        # wrappers made by hand, in a broadcast with a Tensor
        for W in (Base.ReshapedArray(t, (2, 3), ()), SubArray(m, (1:2, 1:3)))
            err = try x .* W; nothing catch e; e end
            @test err isa ArgumentError && occursin("without its gradient", err.msg)
        end
        # without grad they are copied as Julia arrays are
        @test Array(x .* Base.ReshapedArray(C.tensor(collect(1.0:6.0)), (2, 3), ())) == reshape(1.0:6.0, 2, 3)
        # indices torch cannot view
        @test_throws ArgumentError view(t, [1, 3])
        @test_throws ArgumentError view(t, 5:-1:1)
        @test_throws ArgumentError view(m, 1:2)                 # one index for two dimensions
        err = try t[[1, 3]]; nothing catch e; e end
        @test err isa ArgumentError && occursin("index_select", err.msg)
        @test Array(C.tensor(collect(1.0:6.0))[[1, 3]]) == [1.0, 3.0]   # no grad: Julia's copy
        @test m[2, 3] == 6.0 && m[4] == 5.0                     # numbers are fine
        @test_throws DimensionMismatch reshape(t, 4, :)
        @test_throws BoundsError view(m, 3, :)
    end
end

@testset "Tensor of Julia array wrappers" begin
    A = [1.0 2 3; 4 5 6]
    for (name, X) in ("view(A, 1:2, :)" => view(A, 1:2, :), "@view A[:, 2]" => @view(A[:, 2]),
                      "view(A, 2, 1:2:3)" => view(A, 2, 1:2:3), "A'" => A', "transpose(A)" => transpose(A),
                      "reshape(view)" => reshape(view(A, :, 1:2), 4))
        @testset "$name (zero-copy)" begin
            t = Tensor(X)
            @test size(t) == size(X) && Array(t) == collect(X)
            p = X isa SubArray || X isa Base.ReshapedArray ? pointer(X) : pointer(A)
            @test C.data_ptr(t) == p                           # the same memory
            t .= t .* 0 .+ 7                                   # a write is seen by the Julia side
            @test all(==(7.0), collect(X))
            A .= [1.0 2 3; 4 5 6]
        end
    end
    for (name, X) in ("1:5" => 1:5, "BitArray" => BitArray([true false; false true]),
                      "reversed view" => view(collect(1.0:4.0), 4:-1:1), "Float32 range" => 0.5f0:1:2.5f0)
        @testset "$name (a copy)" begin
            t = Tensor(X)
            @test t isa Tensor && eltype(t) == eltype(X) && size(t) == size(X) && Array(t) == collect(X)
        end
    end
    t = Tensor(view(A, :, 1); requires_grad = true)
    @test C.requires_grad(t)
end
