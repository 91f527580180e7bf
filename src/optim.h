// Internal to the optimizers (optim.cpp: options and entry points,
// optim_steps.cpp: the algorithms, optim_state.cpp: state_dict) and to the loss
// scaler (amp.cpp).
#pragma once

#include "internal.h"

#include <mutex>

namespace ct::optim {

enum class Algo { SGD, Adam, AdamW, RMSprop, Adagrad };

// How an option's value is checked.
enum class Kind {
  NonNegative,   // a number >= 0 (torch: "Invalid ... value")
  Number,        // any finite or infinite number
  Bool,          // True / False
  OptionalBool,  // None / True / False (foreach)
  FalseOnly,     // False (differentiable, capturable); True is not supported
  NoneOrFalse,   // None / False (fused)
  Betas,         // a pair of numbers in [0, 1)
};

struct OptionSpec {
  const char *name;
  Kind kind;
  const char *what;  // torch's word in "Invalid <what>: <value>"
};

using c10::IValue;
using Dict = c10::impl::GenericDict;

inline Dict new_dict() { return Dict(c10::StringType::get(), c10::AnyType::get()); }

struct AlgoInfo {
  Algo algo;
  const char *name;
  std::vector<OptionSpec> specs;
  std::vector<IValue> defaults;  // parallel to specs
};

const std::vector<AlgoInfo> &algorithms();

bool is_number(const IValue &v);
double number(const IValue &v);
double get_number(const Dict &g, const char *name);
bool get_bool(const Dict &g, const char *name);
// Checks every option of a group and what spans options; throws ct::Error.
// Replaces betas by a tuple of doubles of its own (never the caller's list).
void check_group(const char *func, const AlgoInfo &a, Dict &g);
// A new "step" state: a float32 0-dim tensor, as torch >= 1.12 makes.
at::Tensor new_step();

}  // namespace ct::optim

struct ct_optimizer {
  const ct::optim::AlgoInfo *info;
  // Every option: torch's defaults overridden by ct_optimizer_new's options.
  ct::optim::Dict defaults = ct::optim::new_dict();
  struct Group {
    std::vector<at::Tensor> params;
    ct::optim::Dict options = ct::optim::new_dict();
    std::vector<ct::optim::Dict> state;  // per parameter; empty until its first step
  };
  std::vector<Group> groups;
  mutable std::mutex mu;
};

namespace ct::optim {
// optim_steps.cpp: one step over every parameter with a gradient (no locking).
void step_all(const char *func, ct_optimizer *o);
// optim_state.cpp: torch.optim's state_dict(); load_state_dict() (all or nothing).
IValue state_dict(const ct_optimizer *o);
void load_state_dict(const char *func, ct_optimizer *o, const IValue &sd);
}  // namespace ct::optim

namespace ct {
// The parameters of every group, in order (locks the optimizer).
std::vector<at::Tensor> optimizer_params(ct_optimizer *o);
// One step as ct_optimizer_step takes it (locks; throws ct::Error).
void optimizer_step(const char *func, ct_optimizer *o);
}  // namespace ct
