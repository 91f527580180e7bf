# Schedulers' state_dict / load_state_dict! (torch.optim.lr_scheduler's
# layout). Included by runtests.jl.

@testset "scheduler state_dict round trip" begin
    # The keys torch 1.13's schedulers' state_dict() holds (printed by
    # torch.optim.lr_scheduler.X(...).state_dict().keys()).
    torch_keys = Dict(
        :StepLR => ["_get_lr_called_within_step", "_last_lr", "_step_count", "base_lrs", "gamma", "last_epoch", "step_size", "verbose"],
        :CosineAnnealingLR => ["T_max", "_get_lr_called_within_step", "_last_lr", "_step_count", "base_lrs", "eta_min", "last_epoch", "verbose"],
        :LinearLR => ["_get_lr_called_within_step", "_last_lr", "_step_count", "base_lrs", "end_factor", "last_epoch", "start_factor", "total_iters", "verbose"],
        :ExponentialLR => ["_get_lr_called_within_step", "_last_lr", "_step_count", "base_lrs", "gamma", "last_epoch", "verbose"],
        :LambdaLR => ["_get_lr_called_within_step", "_last_lr", "_step_count", "base_lrs", "last_epoch", "lr_lambdas", "verbose"],
        :OneCycleLR => ["_get_lr_called_within_step", "_last_lr", "_schedule_phases", "_step_count", "base_lrs", "cycle_momentum", "last_epoch", "total_steps", "use_beta1", "verbose"])
    makers = (
        :StepLR => o -> C.StepLR(o; step_size = 2, gamma = 0.5),
        :CosineAnnealingLR => o -> C.CosineAnnealingLR(o; T_max = 7, eta_min = 0.01),
        :LinearLR => o -> C.LinearLR(o; start_factor = 0.25, total_iters = 4),
        :ExponentialLR => o -> C.ExponentialLR(o; gamma = 0.8),
        :LambdaLR => o -> C.LambdaLR(o, e -> 0.9^e),
        :OneCycleLR => o -> C.OneCycleLR(o; max_lr = 1.0, total_steps = 12))
    for (name, make) in makers
        @testset "$name" begin
            newopt() = C.SGD([C.requires_grad!(C.zeros(Float64, 2))]; lr = 0.1, momentum = 0.9)
            o1 = newopt(); s1 = make(o1)
            for _ in 1:5; C.step!(o1); C.step!(s1); end
            sd = C.state_dict(s1)
            @test sort(collect(keys(sd)) |> k -> filter(x -> x != "_anneal_func_type", k)) == torch_keys[name]
            @test sd["last_epoch"] == 5 && sd["_step_count"] == 6 && sd["_last_lr"] == C.last_lr(s1)
            # resume: a new optimizer with the old one's state, a new scheduler with sd
            o2 = newopt(); C.load_state_dict!(o2, C.state_dict(o1))
            s2 = make(o2)
            C.load_state_dict!(o2, C.state_dict(o1))           # the scheduler's construction set lr
            @test C.load_state_dict!(s2, sd) === s2
            @test C.state_dict(s2) == sd
            for _ in 1:5
                C.step!(o1); C.step!(s1); C.step!(o2); C.step!(s2)
                @test C.last_lr(s2) ≈ C.last_lr(s1)
            end
        end
    end
    # a state_dict with settings: they are taken over (torch updates __dict__)
    o = C.SGD([C.requires_grad!(C.zeros(Float64, 2))]; lr = 0.1)
    s = C.StepLR(o; step_size = 2)
    sd = C.state_dict(s); sd["step_size"] = 3; sd["gamma"] = 0.25
    C.load_state_dict!(s, sd)
    @test s.step_size == 3 && s.gamma == 0.25
    @test_throws ArgumentError C.load_state_dict!(s, Dict("last_epoch" => 1))
end
