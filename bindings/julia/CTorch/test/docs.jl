# Every exported name, and every optimizer and scheduler, has a docstring
# (`?name` never says "No documentation found"). Included by runtests.jl.

# Where Base.Docs.doc looks: the docstrings of the binding in any module.
_hasdoc(m::Module, n::Symbol) =
    (b = Base.Docs.Binding(m, n); any(mod -> haskey(Base.Docs.meta(mod), b), Base.Docs.modules))

@testset "docstrings" begin
    missing_docs = String[]
    for m in (CTorch, CTorch.nn, CTorch.Distributed), n in names(m)
        n === nameof(m) || _hasdoc(m, n) || push!(missing_docs, "$m.$n")
    end
    for n in (:ops, :Optimizer, :SGD, :Adam, :AdamW, :RMSprop, :Adagrad, :LRScheduler, :StepLR,
              :CosineAnnealingLR, :LinearLR, :LambdaLR, :ExponentialLR, :OneCycleLR)
        _hasdoc(CTorch, n) || push!(missing_docs, "CTorch.$n")
    end
    isempty(missing_docs) || println("no docstring: ", join(missing_docs, ", "))
    @test isempty(missing_docs)
    # what `?CTorch.AdamW` prints
    @test occursin("torch.optim.AdamW", string(Base.Docs.doc(Base.Docs.Binding(CTorch, :AdamW))))
    @test occursin("CosineAnnealingLR", string(Base.Docs.doc(Base.Docs.Binding(CTorch, :CosineAnnealingLR))))
end
