# Training: optimizers (ct_optimizer_*), learning-rate schedules with torch's
# formulas, gradient clipping (ct_clip_grad_*), autocast scopes
# (ct_autocast_*) and the loss scaler (ct_grad_scaler_*).

"""
    opt = Optimizer(:adam, params; lr = 1e-3, betas = (0.9, 0.999), ...)
    SGD(params; lr, momentum, ...), Adam(...), AdamW(...), RMSprop(...), Adagrad(...)

torch.optim's algorithms, options (torch's keyword names and defaults) and
state_dict layout. `step!(opt)`, `zero_grad!(opt)`, `getoption(opt, :lr)`,
`setoption!(opt, :lr, 0.01)`, `add_param_group!(opt, params; options...)`,
`state_dict(opt)` / `load_state_dict!(opt, sd)` (what Python's
`optimizer.state_dict()` holds; save it with `pickle_save`).
"""
function Optimizer(algorithm::Symbol, params; options...)
    ps = _param_vector(params)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    _with_options(options) do ov
        GC.@preserve ps check(ct_optimizer_new(out, String(algorithm), _ptrs(ps), length(ps), ov))
    end
    return Optimizer(Val(:own), out[])
end

SGD(params; kw...) = Optimizer(:sgd, params; kw...)
Adam(params; kw...) = Optimizer(:adam, params; kw...)
AdamW(params; kw...) = Optimizer(:adamw, params; kw...)
RMSprop(params; kw...) = Optimizer(:rmsprop, params; kw...)
Adagrad(params; kw...) = Optimizer(:adagrad, params; kw...)

_param_vector(params::Tensor) = Tensor[params]
_param_vector(params::AbstractDict) = Tensor[t for t in values(params)]
_param_vector(params) = Tensor[t for t in params]
_ptrs(ps::Vector{Tensor}) = P[Base.unsafe_convert(P, t) for t in ps]

function _with_options(f, options)
    isempty(options) && return f(C_NULL)
    v = _new_value(Dict{String,Any}(String(k) => (x isa Tuple ? x : x) for (k, x) in options))
    try
        return f(v)
    finally
        ct_value_free(v)
    end
end

function add_param_group!(opt::Optimizer, params; options...)
    ps = _param_vector(params)
    _with_options(options) do ov
        GC.@preserve ps check(ct_optimizer_add_param_group(opt, _ptrs(ps), length(ps), ov))
    end
    return opt
end

"One update of every parameter that has a gradient (torch's `optimizer.step()`)."
step!(opt::Optimizer) = (check(ct_optimizer_step(opt)); opt)
"Gradients become undefined (`set_to_none = true`, torch's default) or zero."
zero_grad!(opt::Optimizer; set_to_none::Bool = true) = (check(ct_optimizer_zero_grad(opt, Int32(set_to_none))); opt)
num_groups(opt::Optimizer) = (r = Ref{Csize_t}(0); check(ct_optimizer_num_groups(r, opt)); Int(r[]))
algorithm(opt::Optimizer) = (r = Ref{Ptr{UInt8}}(C_NULL); check(ct_optimizer_algorithm(r, opt)); Symbol(unsafe_string(r[])))
"The parameters of group `group` (1-based)."
params(opt::Optimizer; group::Integer = 1) = from_value(@_newvalue ct_optimizer_params(out, opt, _group(group)))
"All options of a group as a `Dict{String,Any}` (a copy)."
options(opt::Optimizer; group::Integer = 1) = from_value(@_newvalue ct_optimizer_options(out, opt, _group(group)))
_group(g::Integer) = g >= 1 ? Csize_t(g - 1) : throw(CTorchError(CT_ERR_INDEX, "groups count from 1, not $g"))

"""
    getoption(opt, :lr; group = 1)
    setoption!(opt, :lr, 0.01; group = 1)

One option of a parameter group (torch's `param_groups[i]["lr"]`).
"""
function getoption(opt::Optimizer, name::Union{Symbol,AbstractString}; group::Integer = 1)
    from_value(@_newvalue ct_optimizer_get(out, opt, _group(group), String(name)))
end
function setoption!(opt::Optimizer, name::Union{Symbol,AbstractString}, value::Real; group::Integer = 1)
    check(ct_optimizer_set_double(opt, _group(group), String(name), Float64(value)))
    return opt
end
function setoption!(opt::Optimizer, name::Union{Symbol,AbstractString}, value; group::Integer = 1)
    _with_values(Any[value]) do vp
        check(ct_optimizer_set(opt, _group(group), String(name), vp[1]))
    end
    return opt
end
# Bool is a Real: it is an option's own kind, not a number
setoption!(opt::Optimizer, name::Union{Symbol,AbstractString}, value::Bool; group::Integer = 1) =
    invoke(setoption!, Tuple{Optimizer,Union{Symbol,AbstractString},Any}, opt, name, value; group = group)

"torch.optim's `state_dict()`: `Dict(\"state\" => ..., \"param_groups\" => [...])`."
state_dict(opt::Optimizer) = from_value(@_newvalue ct_optimizer_state_dict(out, opt))
function load_state_dict!(opt::Optimizer, sd)
    _with_values(Any[sd]) do vp
        check(ct_optimizer_load_state_dict(opt, vp[1]))
    end
    return opt
end

# ---- learning-rate schedules (torch.optim.lr_scheduler's recursive formulas) ----

"""
    sched = StepLR(opt; step_size, gamma = 0.1)
    CosineAnnealingLR(opt; T_max, eta_min = 0.0)
    LinearLR(opt; start_factor = 1/3, end_factor = 1.0, total_iters = 5)
    LambdaLR(opt, epoch -> factor)
    ExponentialLR(opt; gamma), OneCycleLR(opt; max_lr, total_steps, ...)

Set every group's `lr` as torch's schedulers do (the same updates, so the same
rates); call `step!(sched)` after `step!(opt)`. `last_lr(sched)`.
"""
abstract type LRScheduler end

mutable struct _SchedState
    opt::Optimizer
    base_lrs::Vector{Float64}
    last_epoch::Int
    step_count::Int
    initial::Bool
end

function _sched_init(opt::Optimizer)
    n = num_groups(opt)
    for g in 1:n
        haskey(options(opt; group = g), "initial_lr") ||
            setoption!(opt, :initial_lr, getoption(opt, :lr; group = g); group = g)
    end
    return _SchedState(opt, [Float64(getoption(opt, :initial_lr; group = g)) for g in 1:n], -1, 0, true)
end

_lrs(s::_SchedState) = [Float64(getoption(s.opt, :lr; group = g)) for g in 1:length(s.base_lrs)]

function step!(sched::LRScheduler)
    s = sched.s
    s.step_count += 1
    s.last_epoch += 1
    for (g, lr) in enumerate(_get_lr(sched))
        setoption!(s.opt, :lr, lr; group = g)
    end
    s.initial = false
    return sched
end
last_lr(sched::LRScheduler) = _lrs(sched.s)
_start(sched::LRScheduler) = step!(sched)

mutable struct StepLR <: LRScheduler
    s::_SchedState
    step_size::Int
    gamma::Float64
end
StepLR(opt::Optimizer; step_size::Integer, gamma::Real = 0.1) = _start(StepLR(_sched_init(opt), step_size, gamma))
_get_lr(x::StepLR) = (e = x.s.last_epoch; e == 0 || e % x.step_size != 0 ? _lrs(x.s) : _lrs(x.s) .* x.gamma)

mutable struct CosineAnnealingLR <: LRScheduler
    s::_SchedState
    T_max::Int
    eta_min::Float64
end
CosineAnnealingLR(opt::Optimizer; T_max::Integer, eta_min::Real = 0.0) =
    _start(CosineAnnealingLR(_sched_init(opt), T_max, eta_min))
function _get_lr(x::CosineAnnealingLR)
    e, T, m, s = x.s.last_epoch, x.T_max, x.eta_min, x.s
    s.initial && return _lrs(s)
    if s.step_count == 1 && e > 0
        return [m + (b - m) * (1 + cos(e * pi / T)) / 2 for b in s.base_lrs]
    elseif mod(e - 1 - T, 2T) == 0
        return [lr + (b - m) * (1 - cos(pi / T)) / 2 for (b, lr) in zip(s.base_lrs, _lrs(s))]
    end
    return [(1 + cos(pi * e / T)) / (1 + cos(pi * (e - 1) / T)) * (lr - m) + m for lr in _lrs(s)]
end

mutable struct LinearLR <: LRScheduler
    s::_SchedState
    start_factor::Float64
    end_factor::Float64
    total_iters::Int
end
function LinearLR(opt::Optimizer; start_factor::Real = 1 / 3, end_factor::Real = 1.0, total_iters::Integer = 5)
    0 < start_factor <= 1 || throw(ArgumentError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1."))
    0 <= end_factor <= 1 || throw(ArgumentError("Ending multiplicative factor expected to be between 0 and 1."))
    return _start(LinearLR(_sched_init(opt), start_factor, end_factor, total_iters))
end
function _get_lr(x::LinearLR)
    e, s = x.s.last_epoch, x.s
    e == 0 && return _lrs(s) .* x.start_factor
    (s.initial || e > x.total_iters) && return _lrs(s)
    d = x.end_factor - x.start_factor
    return [lr * (1.0 + d / (x.total_iters * x.start_factor + (e - 1) * d)) for lr in _lrs(s)]
end

mutable struct LambdaLR{F} <: LRScheduler
    s::_SchedState
    f::F
end
LambdaLR(opt::Optimizer, f) = _start(LambdaLR(_sched_init(opt), f))
_get_lr(x::LambdaLR) = [b * x.f(x.s.last_epoch) for b in x.s.base_lrs]

mutable struct ExponentialLR <: LRScheduler
    s::_SchedState
    gamma::Float64
end
ExponentialLR(opt::Optimizer; gamma::Real) = _start(ExponentialLR(_sched_init(opt), gamma))
_get_lr(x::ExponentialLR) = x.s.initial ? _lrs(x.s) : _lrs(x.s) .* x.gamma

"""
    OneCycleLR(opt; max_lr, total_steps, pct_start = 0.3, anneal_strategy = :cos,
               cycle_momentum = true, base_momentum = 0.85, max_momentum = 0.95,
               div_factor = 25.0, final_div_factor = 1e4, three_phase = false)

torch's 1cycle policy; the momentum (Adam's beta1) cycles the other way.
"""
mutable struct OneCycleLR <: LRScheduler
    s::_SchedState
    total_steps::Int
    phases::Vector{Tuple{Float64,Symbol,Symbol,Symbol,Symbol}}
    anneal_strategy::Symbol
    cycle_momentum::Bool
    use_beta1::Bool
end
function OneCycleLR(opt::Optimizer; max_lr::Real, total_steps::Integer, pct_start::Real = 0.3,
                    anneal_strategy::Symbol = :cos, cycle_momentum::Bool = true,
                    base_momentum::Real = 0.85, max_momentum::Real = 0.95, div_factor::Real = 25.0,
                    final_div_factor::Real = 1e4, three_phase::Bool = false)
    total_steps > 0 || throw(ArgumentError("Expected positive integer total_steps, but got $total_steps"))
    0 <= pct_start <= 1 || throw(ArgumentError("Expected float between 0 and 1 pct_start, but got $pct_start"))
    anneal_strategy in (:cos, :linear) || throw(ArgumentError("anneal_strategy must be :cos or :linear"))
    n = total_steps
    phases = three_phase ?
        [(Float64(pct_start * n) - 1, :initial_lr, :max_lr, :max_momentum, :base_momentum),
         (Float64(2 * pct_start * n) - 2, :max_lr, :initial_lr, :base_momentum, :max_momentum),
         (Float64(n - 1), :initial_lr, :min_lr, :max_momentum, :max_momentum)] :
        [(Float64(pct_start * n) - 1, :initial_lr, :max_lr, :max_momentum, :base_momentum),
         (Float64(n - 1), :max_lr, :min_lr, :base_momentum, :max_momentum)]
    use_beta1 = haskey(options(opt), "betas")
    if cycle_momentum && !use_beta1 && !haskey(options(opt), "momentum")
        throw(ArgumentError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled"))
    end
    for g in 1:num_groups(opt)
        setoption!(opt, :initial_lr, max_lr / div_factor; group = g)
        setoption!(opt, :max_lr, max_lr; group = g)
        setoption!(opt, :min_lr, max_lr / div_factor / final_div_factor; group = g)
        if cycle_momentum
            _set_momentum!(opt, g, use_beta1, max_momentum)
            setoption!(opt, :max_momentum, max_momentum; group = g)
            setoption!(opt, :base_momentum, base_momentum; group = g)
        end
    end
    return _start(OneCycleLR(_sched_init(opt), total_steps, phases, anneal_strategy, cycle_momentum, use_beta1))
end
_set_momentum!(opt, g, use_beta1, m) = use_beta1 ?
    setoption!(opt, :betas, (Float64(m), getoption(opt, :betas; group = g)[2]); group = g) :
    setoption!(opt, :momentum, m; group = g)
_anneal(x::OneCycleLR, a, b, pct) = x.anneal_strategy === :cos ? b + (a - b) / 2.0 * (cos(pi * pct) + 1) : (b - a) * pct + a
function _get_lr(x::OneCycleLR)
    step = x.s.last_epoch
    step > x.total_steps && throw(ArgumentError("Tried to step $step times. The specified number of total steps is $(x.total_steps)"))
    lrs = Float64[]
    for g in 1:length(x.s.base_lrs)
        o = options(x.s.opt; group = g)
        start = 0.0
        for (i, (stop, lr0, lr1, m0, m1)) in enumerate(x.phases)
            if step <= stop || i == length(x.phases)
                pct = (step - start) / (stop - start)
                push!(lrs, _anneal(x, o[String(lr0)], o[String(lr1)], pct))
                x.cycle_momentum && _set_momentum!(x.s.opt, g, x.use_beta1, _anneal(x, o[String(m0)], o[String(m1)], pct))
                break
            end
            start = stop
        end
    end
    return lrs
end

# ---- gradient clipping ----

"""
    clip_grad_norm!(params, max_norm; norm_type = 2.0, error_if_nonfinite = false) -> Tensor

torch.nn.utils.clip_grad_norm_: scales the gradients so that their total norm
is at most `max_norm`; returns the total norm before clipping (0-dim tensor).
"""
function clip_grad_norm!(params, max_norm::Real; norm_type::Real = 2.0, error_if_nonfinite::Bool = false)
    ps = _param_vector(params)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    GC.@preserve ps check(ct_clip_grad_norm(out, _ptrs(ps), length(ps), Float64(max_norm),
                                            Float64(norm_type), Int32(error_if_nonfinite)))
    return _tensor(out[])
end
"torch.nn.utils.clip_grad_value_: clamps every gradient into [-v, v]."
function clip_grad_value!(params, v::Real)
    ps = _param_vector(params)
    GC.@preserve ps check(ct_clip_grad_value(_ptrs(ps), length(ps), Float64(v)))
    return nothing
end

# ---- autocast and loss scaling ----

_amp_device(d::Symbol) = d === :cpu ? Int32(CT_DEVICE_CPU) : d === :cuda ? Int32(CT_DEVICE_CUDA) :
    throw(CTorchError(CT_ERR_INVALID_ARGUMENT, "autocast and GradScaler are for :cpu or :cuda, not :$d"))

"""
    autocast(device::Symbol; dtype = nothing, enabled = true, cache_enabled = true) do
        ...
    end

torch.autocast for this thread: ops inside run in Float16 (`:cuda`) or BFloat16
(`:cpu`) where torch's autocast lists say so. `dtype`: `Float16` or `BFloat16`.
"""
function autocast(f, device::Symbol; dtype = nothing, enabled::Bool = true, cache_enabled::Bool = true)
    code = dtype === nothing ? Int32(0) : Int32(dtype_code(dtype))
    check(ct_autocast_push(_amp_device(device), code, Int32(enabled), Int32(cache_enabled)))
    try
        return f()
    finally
        check(ct_autocast_pop())
    end
end
is_autocast_enabled(device::Symbol) = (r = Ref{Int32}(0); check(ct_autocast_is_enabled(r, _amp_device(device))); r[] == 1)
autocast_dtype(device::Symbol) = (r = Ref{Int32}(0); check(ct_autocast_dtype(r, _amp_device(device))); julia_type(r[]))

"""
    s = GradScaler(; device = :cuda, init_scale = 65536.0, growth_factor = 2.0,
                   backoff_factor = 0.5, growth_interval = 2000, enabled = true)

torch.amp.GradScaler: `backward(scale(s, loss))`, `step!(s, opt)` (skips the
step when a gradient holds an inf or NaN; returns whether it stepped),
`update!(s)`; `unscale!(s, opt)` before clipping; `get_scale(s)`.
"""
function GradScaler(; device::Symbol = :cuda, init_scale::Real = 65536.0, growth_factor::Real = 2.0,
                    backoff_factor::Real = 0.5, growth_interval::Integer = 2000, enabled::Bool = true)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(ct_grad_scaler_new(out, _amp_device(device), Float64(init_scale), Float64(growth_factor),
                             Float64(backoff_factor), Int64(growth_interval), Int32(enabled)))
    return GradScaler(Val(:own), out[])
end
scale(s::GradScaler, t::Tensor) = (out = Ref{Ptr{Cvoid}}(C_NULL); check(ct_grad_scaler_scale(out, s, t)); _tensor(out[]))
unscale!(s::GradScaler, opt::Optimizer) = (check(ct_grad_scaler_unscale(s, opt)); s)
step!(s::GradScaler, opt::Optimizer) = (r = Ref{Int32}(0); check(ct_grad_scaler_step(r, s, opt)); r[] == 1)
update!(s::GradScaler) = (check(ct_grad_scaler_update(s)); s)
get_scale(s::GradScaler) = (r = Ref{Float64}(0); check(ct_grad_scaler_current_scale(r, s)); r[])
state_dict(s::GradScaler) = from_value(@_newvalue ct_grad_scaler_state_dict(out, s))
function load_state_dict!(s::GradScaler, sd)
    _with_values(Any[sd]) do vp
        check(ct_grad_scaler_load_state_dict(s, vp[1]))
    end
    return s
end
