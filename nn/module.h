// Module: the nn building block (as torch.nn.Module). A module owns named parameters and named
// child modules; parameters are leaf Tensors with requires_grad set.
//
// A ParameterArena holds every parameter of a model in ONE aligned buffer (and every gradient in
// a second one), so optimizer updates, zero_grad, gradient-norm clipping and checkpoint writes
// are single loops over contiguous memory. As llm.c's malloc_and_point_parameters, it is laid out
// first and allocated once: modules built while an arena is open register their parameters
// unallocated, then allocate() makes the two buffers, points each parameter into them and runs
// the initialisers in registration order (so a seed draws the same numbers as without an arena).
// A tensor that already has storage is never re-pointed, since views taken of it would keep the
// old data. The parameters lie in the order given to allocate(); a model that puts each optimizer
// group's parameters side by side (GPT: the decayed weights first) gets each group updated as one
// range (optim.h).
//
// State dicts (torch.nn.Module.state_dict / load_state_dict): a module's parameters and buffers
// (tensors saved with it but never trained: a table computed once, running statistics) under
// dotted names. load_state_dict checks every key, shape and dtype first and writes only when all
// pass, naming every problem in one error; check_state_dict is that check for sources that are
// not tensors yet (a file's header: nn/serialize.h streams each tensor from the file
// straight into its place once the check has passed, with no copy of the whole state).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace attograd::nn {

/// A state dict: tensors under dotted names ("h.0.attn.c_attn.weight"), in order.
using StateDict = std::vector<std::pair<std::string, Tensor>>;

/// One tensor of a state dict as a loader sees it before reading it (a safetensors header
/// entry, say): its key, shape, dtype as the source names it ("f32", "F16"), and whether its
/// values convert to a given dtype. A source that stores a tensor in another layout than the
/// module's (GPT-2 files store Conv1D weights transposed) gives the shape in the module's
/// layout and says how it is stored in `layout`, which messages quote.
struct StateDictEntry {
  std::string key;
  Shape shape;
  std::string dtype;
  std::function<bool(DType)> converts_to;
  std::string layout;
};

/// What load_state_dict left out when not strict (torch's _IncompatibleKeys): the module's keys
/// the state dict lacks (those tensors keep their values) and the state dict's keys the module
/// has no place for (ignored), each in its own order.
struct LoadStateDictResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

/// Base class of every layer and model.
class Module {
 public:
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Every parameter, recursively, in registration order, with dotted names as in PyTorch's
  /// state_dict ("h.0.attn.c_attn.weight"). A tensor registered under two names (a weight tied
  /// between modules) is listed once, under its first name, as in torch; state_dict() keeps
  /// every name.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  /// The same tensors without names.
  std::vector<Tensor> parameters() const;
  /// Total number of scalars in all parameters.
  int64_t num_parameters() const;

  /// Training mode (dropout active) or evaluation mode, recursively.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  /// Sets every parameter's gradient to zero (keeps the buffers).
  void zero_grad();

  /// Adds a parameter (marked requires_grad) of `shape` and `dtype` and returns it; `init`
  /// writes its values once it has storage: at once, or, while a ParameterArena is open on this
  /// thread, when that arena is allocated (so whatever init reads, a Generator say, must live
  /// until then). Until then the parameter is unallocated and reading it throws.
  Tensor register_parameter(const std::string& name, const Shape& shape, DType dtype,
                            std::function<void(Tensor&)> init);
  /// Adds a parameter holding value's values. Without an open arena that is `value` itself (now
  /// requiring grad); with one, a new parameter that gets a copy when the arena is allocated,
  /// unless `value` is a parameter the open arena holds (trainable or frozen): then it is tied,
  /// the same tensor under a second name (listed once by named_parameters(), its requires_grad
  /// as set). A trainable leaf the arena does not hold is refused (std::invalid_argument).
  Tensor register_parameter(const std::string& name, Tensor value);

  /// Adds a buffer (torch's register_buffer): a tensor that belongs to the module but is not a
  /// parameter: no gradient, not in parameters(), never touched by an optimizer or the arena.
  /// A persistent buffer is saved and loaded with the module (state_dict); one that is not (a
  /// table the constructor computes from the config) is listed by named_buffers() only.
  /// Returns it (the same storage: load_state_dict writes into it in place). Throws
  /// std::invalid_argument for an undefined tensor or one that requires grad (register it as a
  /// parameter instead), and for a name as register_parameter.
  Tensor register_buffer(const std::string& name, Tensor tensor, bool persistent = true);
  /// Every buffer, recursively, with dotted names, in the order of named_parameters().
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;

  /// This module (named "") and every module below it, depth first in registration order, with
  /// dotted names ("h.0.attn"), as torch's named_modules(). The pointers live as long as this
  /// module does.
  std::vector<std::pair<std::string, Module*>> named_modules();
  std::vector<std::pair<std::string, const Module*>> named_modules() const;
  /// Calls fn on every module below this one, then on this one (children first, as torch's
  /// apply), e.g. to re-initialise every Linear (dynamic_cast<Linear*>(&m)). Returns *this.
  Module& apply(const std::function<void(Module&)>& fn);

  /// Parameters and buffers under dotted names: each module's parameters, then its buffers,
  /// then its children's, in registration order (torch's state_dict order). The tensors are
  /// detached views of the module's own (no copy): they change when the module does.
  StateDict state_dict() const;
  /// Copies `state` into this module's parameters and buffers (torch's load_state_dict), all or
  /// nothing: every key is checked first (see check_state_dict) and nothing is written unless
  /// every check passes. Values convert between f32 and f64 (never to or from i64). Not strict,
  /// keys missing from `state` keep their values and unknown keys are ignored; both are
  /// returned. A wrong shape or dtype is an error either way (as in torch). Throws
  /// std::invalid_argument naming every problem.
  LoadStateDictResult load_state_dict(const StateDict& state, bool strict = true);
  /// load_state_dict's check alone, for a source that is not tensors yet. Throws
  /// std::invalid_argument listing, in one message, every key given twice, every shape that
  /// differs from the module's, every dtype that does not convert to the module's, and with
  /// `strict` every missing and every unexpected key; `what` (e.g. "the file") names where the
  /// entries come from in the message, and `fix` what to do about it (empty: when only missing or
  /// unexpected keys refuse a strict load, that strict = false loads the others). Returns the
  /// missing and unexpected keys.
  LoadStateDictResult check_state_dict(const std::vector<StateDictEntry>& entries, bool strict,
                                       const std::string& what = "the state dict",
                                       const std::string& fix = "") const;

  /// Adds a child module and returns it (torch's register_module, public as there: a module can
  /// be added to another from outside it). Its name may hold dots ("h.0", as GPT-2's blocks).
  /// Throws std::invalid_argument for an empty name or an empty part between its dots ("a.",
  /// ".b", "a..b"), a name this module already uses, a name
  /// that is another's plus ".…" or the reverse (a child "h" and a child "h.0": their state dict
  /// keys could coincide), a null module, or a module that is this one or holds it below (see
  /// check_not_inside). A module may be registered under several parents (a shared layer): the
  /// tree is then a graph without cycles, and every walk of it ends.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    check_new_name("register_module", name, /*allow_dots=*/true);
    if (module == nullptr)
      throw std::invalid_argument("register_module: module '" + name + "' is null");
    check_not_inside("register_module", name, *module);
    children_.emplace_back(name, module);
    return module;
  }

  /// Puts `module` in place of the child registered as `name` and returns it (libtorch's
  /// replace_module; in Python, assigning `mlp.c_fc = new` does both). The tree walks
  /// (parameters(), state_dict(), named_modules()) then reach the new module; a layer that also
  /// holds the child in a member (MLP::c_fc) must be given the returned pointer too:
  /// `mlp.c_fc = mlp.replace_module("c_fc", adapter)`. Throws std::invalid_argument when no
  /// child has that name, for a null module, or one that holds this module (check_not_inside).
  template <typename M>
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> module) {
    if (module == nullptr)
      throw std::invalid_argument("replace_module: module '" + name + "' is null");
    std::shared_ptr<Module>& slot = child_slot("replace_module", name);
    check_not_inside("replace_module", name, *module);
    slot = module;
    return module;
  }

 protected:
  Module() = default;

 private:
  using Named = std::vector<std::pair<std::string, Tensor>>;
  // Appends, under `prefix`, the tensors `pick` chooses of each module, recursively.
  void collect(const std::string& prefix, Named Module::*pick, Named& out) const;
  void collect_state(const std::string& prefix, Named& out) const;
  template <typename M>
  static void collect_modules(M& module, const std::string& prefix,
                              std::vector<std::pair<std::string, M*>>& out);
  // Throws std::invalid_argument for an empty name, a dot in a tensor's name (it would split
  // its key in a state dict), a name this module already has, or one that nests with another
  // ("h" and "h.0").
  void check_new_name(const char* what, const std::string& name, bool allow_dots) const;
  // Throws std::invalid_argument when `module`, about to be registered as `name`, is this module
  // or holds it among the modules below it: this module would then be inside itself
  // (`s->push_back(s)`, or a holds b and b takes a), every walk of the tree (parameters(),
  // state_dict(), train(), apply()) would recurse without end until the stack overflows, and
  // the shared_ptrs of the cycle would never be freed. Registration is the one place children
  // are added, so every container gets the check.
  // `what` names the caller in the message.
  void check_not_inside(const char* what, const std::string& name, const Module& module) const;
  // The child registered as `name`. Throws std::invalid_argument naming `what` and the children
  // there are when there is none.
  std::shared_ptr<Module>& child_slot(const char* what, const std::string& name);

  Named params_;
  Named buffers_;
  std::vector<std::string> non_persistent_;  // names of buffers_ left out of state_dict()
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

/// Removes the hook it was returned for (torch's RemovableHandle). remove() is idempotent and
/// safe after the module is gone; dropping the handle keeps the hook.
class HookHandle {
 public:
  HookHandle() = default;
  explicit HookHandle(std::function<void()> remove) : remove_(std::move(remove)) {}
  void remove() {
    if (remove_) std::exchange(remove_, nullptr)();
  }

 private:
  std::function<void()> remove_;
};

/// A module of one input and one output, x -> forward(x), as most of torch.nn is (Linear,
/// LayerNorm, Dropout, an MLP, Sequential). Call it as `module(x)`: the call runs the forward
/// hooks around forward() (torch's Module.__call__); calling forward() itself skips them.
///
/// A module whose forward also takes state (attention and GPT-2's Block with a KV cache, or a
/// place to record attention weights) has a call of its own for it, `attn(x, cache)`, which runs
/// the same hooks around that forward (call_with_hooks): a hook runs on every call of a module,
/// as torch's do, so a hook that edits a block's output acts the same in training and in cached
/// decoding. With a cache, its input and output are the new positions only, (B, T_new, C).
class UnaryModule : public Module {
 public:
  /// torch's forward pre-hook: hook(module, input) before forward(); a Tensor it returns
  /// replaces the input (std::nullopt keeps it).
  using ForwardPreHook =
      std::function<std::optional<Tensor>(const UnaryModule& module, const Tensor& input)>;
  /// torch's forward hook: hook(module, input, output) after forward(); a Tensor it returns
  /// replaces the output. Keep an activation with `output.detach()` (a view, no copy).
  using ForwardHook = std::function<std::optional<Tensor>(
      const UnaryModule& module, const Tensor& input, const Tensor& output)>;

  /// The module's computation; shapes and errors are each module's.
  virtual Tensor forward(const Tensor& x) const = 0;
  /// Pre-hooks (in registration order, each seeing the input the previous one left), forward,
  /// then hooks (the same way with the output).
  Tensor operator()(const Tensor& x) const;

  /// torch's register_forward_pre_hook / register_forward_hook. A hook may remove itself or
  /// another while running: the call in progress runs the hooks it started with.
  HookHandle register_forward_pre_hook(ForwardPreHook hook);
  HookHandle register_forward_hook(ForwardHook hook);
  /// Whether any hook is registered: a module that would compute this one's output inside a
  /// fused op (MLP's c_fc within linear_gelu) calls it as its own layers only when this is true,
  /// so that the hooks see what they always saw.
  bool has_hooks() const { return !hooks_->pre.empty() || !hooks_->post.empty(); }

 protected:
  UnaryModule() = default;
  /// The call of a forward that takes more than x: the pre-hooks, f(input), then the hooks, as
  /// operator() runs them around forward(x). A module with such a forward calls it only through
  /// here, e.g. `call_with_hooks(x, [&](const Tensor& in) { return forward(in, cache); })`.
  template <typename F>
  Tensor call_with_hooks(const Tensor& x, F&& f) const {
    if (hooks_->pre.empty() && hooks_->post.empty()) return f(x);
    const Hooks hooks = *hooks_;  // a hook may remove hooks: this call runs those it started with
    const Tensor input = run_pre_hooks(hooks, x);
    return run_hooks(hooks, input, f(input));
  }

 private:
  struct Hooks {
    int64_t next_id = 0;
    std::vector<std::pair<int64_t, ForwardPreHook>> pre;
    std::vector<std::pair<int64_t, ForwardHook>> post;
  };
  // The input after hooks.pre, each seeing what the previous one left.
  Tensor run_pre_hooks(const Hooks& hooks, Tensor input) const;
  // The output after hooks.post, the same way.
  Tensor run_hooks(const Hooks& hooks, const Tensor& input, Tensor output) const;
  // Shared with the handles (weakly), which may outlive the module.
  std::shared_ptr<Hooks> hooks_ = std::make_shared<Hooks>();
};

/// One contiguous buffer holding all of a model's parameters, and one for their gradients:
///
///     nn::ParameterArena arena;   // open: parameters registered on this thread are laid out here
///     Net net(gen);               // registers its parameters, unallocated
///     arena.allocate(net);        // one buffer each for values and gradients; inits run; closed
///
/// Every parameter is a view into params(), its gradient (zeroed) a view into grads(). The arena
/// only holds tensors: it need not outlive the module, nor the module it. Not movable: modules
/// find the open arena through a per-thread pointer to it.
class ParameterArena {
 public:
  /// Opens the arena on this thread (arenas nest: the innermost open one takes the parameters).
  ParameterArena();
  /// Closes the arena if allocate() was never called (e.g. a model constructor threw).
  ~ParameterArena();
  ParameterArena(const ParameterArena&) = delete;
  ParameterArena& operator=(const ParameterArena&) = delete;

  /// Allocates module's parameters in registration order; see the other overload.
  void allocate(const Module& module) { allocate(module.named_parameters()); }
  /// Allocates the two buffers, places the given parameters in the given order (a model's own
  /// grouping), runs every registered initialiser in registration order, and closes the arena.
  /// Throws std::logic_error when the arena is not open or a parameter was not registered while
  /// it was (one that already has storage names the fix: build the module after opening the
  /// arena), or when a parameter registered here is missing from the list;
  /// std::invalid_argument when they mix dtypes or there are none.
  void allocate(std::vector<std::pair<std::string, Tensor>> named_parameters);

  /// All parameters as one flat (N,) tensor, in the order they were given.
  const Tensor& params() const { return params_; }
  /// All gradients, same layout. A gradient zero_grad left unwritten (backward did not reach its
  /// parameter since) is written with its zeros first.
  const Tensor& grads() const;
  /// The parameters in arena order, with their names.
  const std::vector<std::pair<std::string, Tensor>>& named_parameters() const { return named_; }

  /// Zeroes all gradients without writing them (Tensor::zero_grad_deferred on each parameter):
  /// the next backward writes each parameter's first gradient over the old values, and
  /// grads(), grad_norm(), clip_grad_norm() and each parameter's grad() write the zeros of
  /// any it did not reach. A training step saves the pass over all gradients (2.8% of GPT-2
  /// small's step). A flat gradient tensor kept from grads() before this call, and read before
  /// grads() is called again, may hold old values: call grads() again.
  void zero_grad();
  /// L2 norm of all gradients together, accumulated in double (one SIMD pass).
  double grad_norm() const;
  /// How many parameters are NaN or infinite: 0 for a model fit to save. (A sum of squares
  /// would also flag finite f64 values above 1e154, so each value is tested.)
  int64_t num_non_finite() const;
  /// Scales all gradients by clip_scale(norm, max_norm), so their global L2 norm is at most
  /// max_norm (torch's clip_grad_norm_); returns the norm before clipping. max_norm <= 0
  /// disables clipping. A NaN or infinite norm is torch's case too: with error_if_nonfinite it
  /// throws std::runtime_error and changes nothing; without, every gradient is multiplied by
  /// the factor (NaN, or 0 for an infinite norm), never left unscaled. (A training step instead
  /// hands clip_scale's factor to AdamW::step, which applies it as it reads each gradient: one
  /// pass less; the trainer stops on a non-finite norm first.)
  double clip_grad_norm(double max_norm, bool error_if_nonfinite = false);

 private:
  friend class Module;  // register_parameter lays parameters out in the open arena
  /// The innermost arena open on this thread, or null.
  static ParameterArena*& open_arena();
  void close();

  Tensor params_, grads_;
  std::vector<std::pair<std::string, Tensor>> named_;
  // Registered while open: each parameter and its initialiser, in registration order.
  std::vector<std::pair<Tensor, std::function<void(Tensor&)>>> pending_;
  ParameterArena* enclosing_ = nullptr;  // the arena open before this one
  bool open_ = true;
};

/// The factor torch.nn.utils.clip_grad_norm_ multiplies every gradient by: min(1, max_norm /
/// (norm + 1e-6)) (the 1e-6 keeps a zero norm finite); 1 when max_norm <= 0 (no clipping). As
/// torch.clamp, NaN for a NaN norm (std::min(1, NaN) would say 1) and 0 for an infinite one.
double clip_scale(double norm, double max_norm);

/// torch.nn.utils.clip_grad_norm_(params, max_norm) for any list of tensors, no ParameterArena
/// needed: the L2 norm of all their gradients together (accumulated in double), then every
/// gradient scaled in place by clip_scale(norm, max_norm); returns the norm before clipping.
/// A tensor without a gradient yet is skipped (torch skips a None grad); f32 and f64 may mix.
/// Throws std::invalid_argument naming the position of a tensor that does not require grad
/// (it can never have one: a list of the wrong tensors). A non-finite norm as
/// ParameterArena::clip_grad_norm (error_if_nonfinite, torch's option). A model's arena does the
/// same in one pass over its flat buffer (ParameterArena::clip_grad_norm), the fast path for
/// training.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm,
                      bool error_if_nonfinite = false);

}  // namespace attograd::nn
