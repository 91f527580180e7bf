# The learning-rate schedulers' state_dict / load_state_dict!, in
# torch.optim.lr_scheduler's layout (the keys of its `state_dict()`, so a
# scheduler saved by PyTorch resumes here and the other way round).

# Hyperparameters each scheduler keeps, by torch's key (its field has the same name).
_sched_fields(::StepLR) = (:step_size, :gamma)
_sched_fields(::CosineAnnealingLR) = (:T_max, :eta_min)
_sched_fields(::LinearLR) = (:start_factor, :end_factor, :total_iters)
_sched_fields(::ExponentialLR) = (:gamma,)
_sched_fields(::LambdaLR) = ()
_sched_fields(::OneCycleLR) = (:total_steps, :cycle_momentum, :use_beta1)

const _PHASE_KEYS = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")

"""
    state_dict(sched::LRScheduler) -> Dict{String,Any}
    load_state_dict!(sched::LRScheduler, sd) -> sched

The scheduler's state as `torch.optim.lr_scheduler`'s `state_dict()`:
`base_lrs`, `last_epoch`, `_step_count`, `_last_lr`, `verbose`,
`_get_lr_called_within_step` and the scheduler's own settings (`step_size`,
`gamma`, `T_max`, ...; `LambdaLR`'s `lr_lambdas` is `[nothing, ...]`, the
function is not saved, as in torch). `load_state_dict!` takes such a `Dict`
(from `state_dict`, or a PyTorch checkpoint read with `pickle_load`) and
resumes: the next `step!(sched)` continues from `last_epoch`. The optimizer's
own state (its `lr`s) is loaded with `load_state_dict!(opt, ...)`.
"""
function state_dict(sched::LRScheduler)
    s = sched.s
    sd = Dict{String,Any}("base_lrs" => copy(s.base_lrs), "last_epoch" => s.last_epoch,
                          "_step_count" => s.step_count, "_last_lr" => last_lr(sched),
                          "verbose" => false, "_get_lr_called_within_step" => false)
    for f in _sched_fields(sched)
        sd[String(f)] = getfield(sched, f)
    end
    sched isa LambdaLR && (sd["lr_lambdas"] = Any[nothing for _ in s.base_lrs])
    if sched isa OneCycleLR
        sd["_schedule_phases"] = [Dict{String,Any}(zip(_PHASE_KEYS, (p[1], map(String, p[2:5])...)))
                                  for p in sched.phases]
        sd["_anneal_func_type"] = String(sched.anneal_strategy)
    end
    return sd
end

function load_state_dict!(sched::LRScheduler, sd)
    get(k) = haskey(sd, k) ? sd[k] : throw(ArgumentError("scheduler state_dict lacks \"$k\""))
    s = sched.s
    base = Float64[x for x in get("base_lrs")]
    length(base) == length(s.base_lrs) ||
        throw(ArgumentError("the state_dict has $(length(base)) groups, the optimizer $(length(s.base_lrs))"))
    for f in _sched_fields(sched)
        haskey(sd, String(f)) && setfield!(sched, f, convert(fieldtype(typeof(sched), f), sd[String(f)]))
    end
    if sched isa OneCycleLR && haskey(sd, "_schedule_phases")
        sched.phases = [(Float64(p["end_step"]), Symbol(p["start_lr"]), Symbol(p["end_lr"]),
                         Symbol(p["start_momentum"]), Symbol(p["end_momentum"])) for p in sd["_schedule_phases"]]
        haskey(sd, "_anneal_func_type") && (sched.anneal_strategy = Symbol(sd["_anneal_func_type"]))
    end
    s.base_lrs = base
    s.last_epoch = Int(get("last_epoch"))
    s.step_count = Int(get("_step_count"))
    s.initial = false
    return sched
end
