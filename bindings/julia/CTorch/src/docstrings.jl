# Docstrings of names whose definition is a one-liner or an alias (so that
# `?name` finds every exported name and every optimizer and scheduler);
# test/docs.jl fails on an exported name without one.

@doc """
    requires_grad(t::Tensor) -> Bool

`t.requires_grad`: whether autograd records operations on `t`. Set it with
[`requires_grad!`](@ref).
""" requires_grad

@doc """
    save_for_backward!(ctx::FunctionCtx, tensors::Tensor...)
    saved_tensors(ctx::FunctionCtx) -> Tuple

In an [`AutogradFunction`](@ref)'s forward: keep tensors (detached) for its
backward, which reads them with `saved_tensors(ctx)` (`ctx.save_for_backward`
and `ctx.saved_tensors` in PyTorch).
""" save_for_backward!

@doc (@doc save_for_backward!) saved_tensors

@doc (@doc withscope) :(@scoped)

for (name, alg, py) in ((:SGD, :sgd, "SGD"), (:Adam, :adam, "Adam"), (:AdamW, :adamw, "AdamW"),
                        (:RMSprop, :rmsprop, "RMSprop"), (:Adagrad, :adagrad, "Adagrad"))
    @eval @doc $("""
        CTorch.$name(params; options...) -> Optimizer

    `torch.optim.$py`: `Optimizer(:$alg, params; options...)`, with torch's
    keyword names and defaults (`lr`, `weight_decay`, ...). `params`: a Tensor,
    a collection of tensors or a `Dict` (`nn.params(model)`). See
    [`Optimizer`](@ref) for `step!`, `zero_grad!`, options and `state_dict`.
    """) $name
end

for (name, kw, py) in ((:StepLR, "step_size, gamma = 0.1", "StepLR"),
                       (:CosineAnnealingLR, "T_max, eta_min = 0.0", "CosineAnnealingLR"),
                       (:LinearLR, "start_factor = 1/3, end_factor = 1.0, total_iters = 5", "LinearLR"),
                       (:ExponentialLR, "gamma", "ExponentialLR"))
    @eval @doc $("""
        CTorch.$name(opt::Optimizer; $kw)

    `torch.optim.lr_scheduler.$py`: sets each group's `lr` with torch's formula
    at construction and at every `step!(sched)` (call it after `step!(opt)`);
    `last_lr(sched)`. See [`LRScheduler`](@ref).
    """) $name
end

@doc """
    CTorch.LambdaLR(opt::Optimizer, epoch -> factor)

`torch.optim.lr_scheduler.LambdaLR`: each group's `lr` is its initial `lr`
times `f(epoch)`, at construction and at every `step!(sched)`. See
[`LRScheduler`](@ref).
""" LambdaLR

@doc """
    Distributed.DDP(module, group; ...)

An alias of [`Distributed.DistributedDataParallel`](@ref) (`DDP` in PyTorch's
examples).
""" Distributed.DDP
