#include "nn/module.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/optimizer.h"
#include "autograd/ops.h"

namespace attograd::nn {

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  Named all, out;
  collect("", &Module::params_, all);
  // A tensor registered under two names (a tied weight) is listed once, under its first name,
  // as torch's named_parameters() does: an optimizer given parameters() would otherwise update
  // it twice a step (AdamW refuses a tensor given twice). state_dict() keeps every name.
  for (auto& [name, t] : all) {
    const bool seen = std::any_of(out.begin(), out.end(),
                                  [&t = t](const auto& entry) { return entry.second.is_same(t); });
    if (!seen) out.emplace_back(std::move(name), t);
  }
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  Named out;
  collect("", &Module::buffers_, out);
  return out;
}

void Module::collect(const std::string& prefix, Named Module::*pick, Named& out) const {
  for (const auto& [name, t] : this->*pick) out.emplace_back(prefix + name, t);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", pick, out);
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& t : parameters()) n += t.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (const Tensor& t : parameters()) t.zero_grad();
}

void Module::check_new_name(const char* what, const std::string& name, bool allow_dots) const {
  if (name.empty()) throw std::invalid_argument(std::string(what) + ": the name is empty");
  if (!allow_dots && name.find('.') != std::string::npos)
    throw std::invalid_argument(std::string(what) + ": '" + name +
                                "' holds a dot, which would split its state dict key; "
                                "use a child module for a nested name");
  // A dotted name's parts are names too: "a." or ".b" (or "a..b") would give a state dict key
  // with an empty part ("a..weight"), which no dotted path can name back.
  if (allow_dots &&
      (name.front() == '.' || name.back() == '.' || name.find("..") != std::string::npos))
    throw std::invalid_argument(std::string(what) + ": '" + name +
                                "' has an empty part between its dots (it starts or ends with "
                                "a dot, or holds two in a row); name each part, as \"h.0\"");
  // The first name of a list that is `name`, or nests with it: a key of the state dict is the
  // names on its path joined by dots, so two names of which one is the other plus ".…" (a child
  // "h" beside a child "h.0") could give two tensors one key: save would keep one, load write it
  // into both. Refused here, while both names are at hand.
  auto conflict = [&](const auto& list) -> std::optional<std::string> {
    for (const auto& kv : list)
      if (kv.first == name || kv.first.starts_with(name + ".") || name.starts_with(kv.first + "."))
        return kv.first;
    return std::nullopt;
  };
  for (const std::optional<std::string>& other :
       {conflict(params_), conflict(buffers_), conflict(children_)}) {
    if (!other) continue;
    if (*other == name)
      throw std::invalid_argument(std::string(what) + ": this module already has a '" + name +
                                  "' (a parameter, buffer or child); each name is registered once");
    throw std::invalid_argument(std::string(what) + ": '" + name + "' and '" + *other +
                                "' of this module would give state dict keys that can coincide ('" +
                                *other + "' and '" + name +
                                "' joined with the names below them); choose a name that neither "
                                "is nor starts with the other plus a dot");
  }
}

void Module::check_not_inside(const char* what, const std::string& name,
                              const Module& module) const {
  // A walk of the modules below `module`, with an explicit stack: the tree below it has no cycle
  // (each of its registrations passed this check), so the walk ends; a module shared by two
  // parents is visited once. `path` is the module's dotted name below `module` ("" for itself).
  std::vector<std::pair<const Module*, std::string>> stack{{&module, ""}};
  std::set<const Module*> seen{&module};
  while (!stack.empty()) {
    auto [m, path] = std::move(stack.back());
    stack.pop_back();
    if (m == this)
      throw std::invalid_argument(
          std::string(what) + ": '" + name + "' " +
          (path.empty() ? "is this module itself" : "holds this module (as its '" + path + "')") +
          ", so registering it would put the module inside itself, and every walk of the "
          "tree (parameters(), state_dict(), train()) would never end; register another "
          "module, or a new one built alike if you meant a copy");
    for (const auto& [child_name, child] : m->children_)
      if (seen.insert(child.get()).second)
        stack.emplace_back(child.get(), path.empty() ? child_name : path + "." + child_name);
  }
}

Tensor Module::register_parameter(const std::string& name, const Shape& shape, DType dtype,
                                  std::function<void(Tensor&)> init) {
  check_new_name("register_parameter", name, false);
  ParameterArena* arena = ParameterArena::open_arena();
  Tensor p = arena != nullptr ? Tensor::unallocated(shape, dtype) : Tensor::empty(shape, dtype);
  p.set_requires_grad(true);
  if (arena != nullptr) {
    arena->pending_.emplace_back(p, std::move(init));
  } else {
    init(p);
  }
  params_.emplace_back(name, p);
  return p;
}

Tensor Module::register_parameter(const std::string& name, Tensor value) {
  check_new_name("register_parameter", name, false);
  if (!value.defined())
    throw std::invalid_argument("register_parameter: '" + name + "' is an undefined tensor");
  if (ParameterArena* arena = ParameterArena::open_arena()) {
    // A parameter the arena holds already (another module's, trainable or frozen): tied, the
    // same tensor under a second name, as without an arena; its requires_grad stays as set. A
    // copy would train apart and be listed twice by named_parameters().
    const bool pending = std::any_of(arena->pending_.begin(), arena->pending_.end(),
                                     [&](const auto& entry) { return entry.first.is_same(value); });
    if (pending) {
      params_.emplace_back(name, value);
      return value;
    }
    if (value.requires_grad() && value.is_leaf())
      throw std::invalid_argument(
          "register_parameter: '" + name +
          "' is a trainable tensor that the open ParameterArena does not hold (a parameter of "
          "a module built before it was opened, or in another arena), so it can be neither "
          "tied nor laid out here; build both modules while the arena is open, or register "
          "value.detach() for a parameter of its own that starts from a copy");
    return register_parameter(name, value.shape(), value.dtype(),
                              [value](Tensor& p) { p.copy_from(value); });
  }
  value.set_requires_grad(true);
  params_.emplace_back(name, value);
  return value;
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor, bool persistent) {
  check_new_name("register_buffer", name, false);
  if (!tensor.defined())
    throw std::invalid_argument("register_buffer: '" + name + "' is an undefined tensor");
  if (tensor.requires_grad())
    throw std::invalid_argument("register_buffer: '" + name +
                                "' requires grad; a buffer is never trained: register it with "
                                "register_parameter, or pass tensor.detach()");
  buffers_.emplace_back(name, tensor);
  if (!persistent) non_persistent_.push_back(name);
  return tensor;
}

std::shared_ptr<Module>& Module::child_slot(const char* what, const std::string& name) {
  std::string names;
  for (auto& [child_name, child] : children_) {
    if (child_name == name) return child;
    names += (names.empty() ? "" : ", ") + child_name;
  }
  throw std::invalid_argument(
      std::string(what) + ": no child module '" + name + "'; " +
      (names.empty() ? "this module has none" : "its children are " + names));
}

template <typename M>
void Module::collect_modules(M& module, const std::string& prefix,
                             std::vector<std::pair<std::string, M*>>& out) {
  out.emplace_back(prefix, &module);
  for (const auto& [name, child] : module.children_)
    collect_modules<M>(*child, prefix.empty() ? name : prefix + "." + name, out);
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  collect_modules<Module>(*this, "", out);
  return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out;
  collect_modules<const Module>(*this, "", out);
  return out;
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [name, child] : children_) child->apply(fn);
  fn(*this);
  return *this;
}

void Module::collect_state(const std::string& prefix, Named& out) const {
  for (const auto& [name, t] : params_) out.emplace_back(prefix + name, t.detach());
  for (const auto& [name, t] : buffers_)
    if (std::find(non_persistent_.begin(), non_persistent_.end(), name) == non_persistent_.end())
      out.emplace_back(prefix + name, t.detach());
  for (const auto& [name, child] : children_) child->collect_state(prefix + name + ".", out);
}

StateDict Module::state_dict() const {
  Named out;
  collect_state("", out);
  return out;
}

namespace {

// "'fc.weight' (4, 3) f32": a key as every problem names it.
std::string described(const std::string& key, const Shape& shape, const std::string& dtype) {
  return "'" + key + "' " + shape_str(shape) + " " + dtype;
}

// "a, b, c" with at most `limit` items, then how many more: a model of a thousand tensors
// loaded into the wrong module must not make a message of a thousand lines.
std::string listed(const std::vector<std::string>& items, size_t limit = 20) {
  std::string s;
  for (size_t i = 0; i < items.size() && i < limit; ++i) s += (i ? ", " : "") + items[i];
  if (items.size() > limit) s += " and " + std::to_string(items.size() - limit) + " more";
  return s;
}

}  // namespace

LoadStateDictResult Module::check_state_dict(const std::vector<StateDictEntry>& entries,
                                             bool strict, const std::string& what,
                                             const std::string& fix) const {
  const StateDict mine = state_dict();
  std::map<std::string, const Tensor*> by_key;
  for (const auto& [key, t] : mine) by_key.emplace(key, &t);
  std::map<std::string, const StateDictEntry*> given;
  LoadStateDictResult result;
  std::vector<std::string> twice, mismatched, unexpected_described, missing_described;
  for (const StateDictEntry& e : entries) {
    if (!given.emplace(e.key, &e).second) {
      twice.push_back("'" + e.key + "'");
      continue;
    }
    const auto it = by_key.find(e.key);
    const std::string stored = e.layout.empty() ? "" : " (" + e.layout + ")";
    if (it == by_key.end()) {
      result.unexpected_keys.push_back(e.key);
      unexpected_described.push_back(described(e.key, e.shape, e.dtype) + stored);
      continue;
    }
    const Tensor& t = *it->second;
    if (e.shape != t.shape())
      mismatched.push_back("'" + e.key + "' is " + shape_str(e.shape) + stored + " in " + what +
                           " but " + shape_str(t.shape()) + " in the module");
    else if (!e.converts_to || !e.converts_to(t.dtype()))
      mismatched.push_back("'" + e.key + "' is " + e.dtype + " in " + what +
                           ", which does not convert to the module's " + dtype_name(t.dtype()));
  }
  for (const auto& [key, t] : mine)
    if (!given.count(key)) {
      result.missing_keys.push_back(key);
      missing_described.push_back(described(key, t.shape(), dtype_name(t.dtype())));
    }
  std::vector<std::string> problems;
  if (strict && !missing_described.empty())
    problems.push_back(std::to_string(missing_described.size()) +
                       " missing (in the module, not in " + what +
                       "): " + listed(missing_described));
  if (strict && !unexpected_described.empty())
    problems.push_back(std::to_string(unexpected_described.size()) + " unexpected (in " + what +
                       ", not in the module): " + listed(unexpected_described));
  if (!mismatched.empty())
    problems.push_back(std::to_string(mismatched.size()) + " mismatched: " + listed(mismatched));
  if (!twice.empty())
    problems.push_back(std::to_string(twice.size()) + " given twice: " + listed(twice));
  if (problems.empty()) return result;
  std::string message = "load_state_dict: nothing was loaded from " + what + ": ";
  for (size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
  if (!fix.empty())
    message += "; " + fix;
  else if (strict && mismatched.empty() && twice.empty())
    message += " (strict = false loads the keys both have and returns the others)";
  throw std::invalid_argument(message);
}

LoadStateDictResult Module::load_state_dict(const StateDict& state, bool strict) {
  std::vector<StateDictEntry> entries;
  for (const auto& [key, t] : state) {
    if (!t.defined())
      throw std::invalid_argument("load_state_dict: '" + key + "' is an undefined tensor");
    const bool floating = t.dtype() != DType::i64;
    entries.push_back(
        {.key = key,
         .shape = t.shape(),
         .dtype = dtype_name(t.dtype()),
         .converts_to = [floating](DType to) { return floating == (to != DType::i64); },
         .layout = {}});
  }
  LoadStateDictResult result = check_state_dict(entries, strict);
  std::map<std::string, const Tensor*> source;
  for (const auto& [key, t] : state) source.emplace(key, &t);
  NoGradGuard no_grad;  // cast below is part of no graph
  for (auto& [key, dst] : state_dict()) {
    const auto it = source.find(key);
    if (it == source.end()) continue;
    const Tensor& src = *it->second;
    dst.copy_from(src.dtype() == dst.dtype() ? src : cast(src, dst.dtype()));
  }
  return result;
}

ParameterArena*& ParameterArena::open_arena() {
  thread_local ParameterArena* innermost = nullptr;
  return innermost;
}

ParameterArena::ParameterArena() : enclosing_(open_arena()) { open_arena() = this; }

ParameterArena::~ParameterArena() { close(); }

void ParameterArena::close() {
  if (!open_) return;
  open_ = false;
  // Unlink this arena from the chain of open ones (it is the innermost unless arenas were
  // allocated out of order).
  for (ParameterArena** a = &open_arena(); *a != nullptr; a = &(*a)->enclosing_) {
    if (*a == this) {
      *a = enclosing_;
      break;
    }
  }
}

void ParameterArena::allocate(std::vector<std::pair<std::string, Tensor>> named_parameters) {
  if (!open_)
    throw std::logic_error("ParameterArena: already allocated; an arena is allocated once");
  close();  // also when this fails: later modules must not register into a broken arena
  named_ = std::move(named_parameters);
  if (named_.empty()) throw std::invalid_argument("ParameterArena: the module has no parameters");
  const DType dtype = named_.front().second.dtype();
  int64_t total = 0;
  for (auto& [name, t] : named_) {
    if (t.dtype() != dtype)
      throw std::invalid_argument("ParameterArena: parameter '" + name + "' is " +
                                  dtype_name(t.dtype()) + " but the first is " + dtype_name(dtype) +
                                  "; a model has one dtype");
    total += t.numel();
  }
  params_ = Tensor::empty({total}, dtype);
  grads_ = Tensor::zeros({total}, dtype);
  int64_t offset = 0;
  for (auto& [name, t] : named_) {
    try {
      t.allocate_in(params_, offset);
    } catch (const std::logic_error&) {
      throw std::logic_error(
          "ParameterArena: parameter '" + name +
          "' already has its own storage; build the "
          "module after opening the arena (ParameterArena arena; then the module; then "
          "arena.allocate(module)), so that its parameters are allocated inside it");
    }
    Tensor g = Tensor::unallocated(t.shape(), dtype);
    g.allocate_in(grads_, offset);
    t.set_grad(g);
    offset += t.numel();
  }
  for (auto& [p, init] : pending_) {
    if (!p.shares_storage(params_))
      throw std::logic_error("ParameterArena: a " + shape_str(p.shape()) +
                             " parameter registered while the arena "
                             "was open is missing from the parameters given to allocate()");
    init(p);
  }
  pending_.clear();
}

void ParameterArena::zero_grad() {
  for (const auto& [name, p] : named_) p.zero_grad_deferred();
}

const Tensor& ParameterArena::grads() const {
  for (const auto& [name, p] : named_) p.grad();  // writes the zeros zero_grad deferred
  return grads_;
}

double ParameterArena::grad_norm() const {
  const Tensor& g = grads();
  return dispatch_floating(g.dtype(), "grad_norm", [&]<typename T>() {
    return std::sqrt(kernels::sum_squares_double<T>(g.data<T>(), g.numel()));
  });
}

int64_t ParameterArena::num_non_finite() const {
  return dispatch_floating(params_.dtype(), "num_non_finite", [&]<typename T>() {
    const T* p = params_.data<T>();
    return static_cast<int64_t>(
        std::count_if(p, p + params_.numel(), [](T v) { return !std::isfinite(v); }));
  });
}

namespace {

// g *= scale, in place (one SIMD pass over a contiguous gradient), as a new version of g.
void scale_in_place(const Tensor& g, double scale) {
  dispatch_floating(g.dtype(), "clip_grad_norm", [&]<typename T>() {
    T* data = g.data<T>();
    kernels::binary_scalar_right<T>(kernels::BinaryOp::mul, data, data, static_cast<T>(scale),
                                    g.numel());
  });
  g.bump_version();
}

}  // namespace

double clip_scale(double norm, double max_norm) {
  if (!(max_norm > 0)) return 1.0;
  const double coef = max_norm / (norm + 1e-6);
  // std::min(1.0, NaN) is 1: a NaN norm would scale by 1, as if nothing were wrong. torch.clamp
  // keeps the NaN, and so does this.
  return std::isnan(coef) ? coef : std::min(1.0, coef);
}

namespace {

// torch's error_if_nonfinite=True: refused before any gradient is scaled.
void check_finite_norm(double norm, bool error_if_nonfinite) {
  if (!error_if_nonfinite || std::isfinite(norm)) return;
  throw std::runtime_error(
      std::string("clip_grad_norm: the total norm of the gradients is ") +
      (std::isnan(norm) ? "nan" : "inf") +
      ", so they cannot be clipped; no gradient was changed (error_if_nonfinite=true: without "
      "it, torch's result, every gradient is multiplied by the nan or 0 factor)");
}

}  // namespace

double ParameterArena::clip_grad_norm(double max_norm, bool error_if_nonfinite) {
  const double norm = grad_norm();
  check_finite_norm(norm, error_if_nonfinite);
  const double scale = clip_scale(norm, max_norm);
  if (!(scale >= 1)) scale_in_place(grads_, scale);  // a NaN factor is applied, as in torch
  return norm;
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm, bool error_if_nonfinite) {
  std::vector<Tensor> grads;
  double sum_squares = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].requires_grad())
      throw std::invalid_argument("clip_grad_norm: tensor " + std::to_string(i) +
                                  " of the list does not require grad, so it has no gradient to "
                                  "clip; pass the parameters (module.parameters())");
    const Tensor g = params[i].grad();
    if (!g.defined()) continue;
    // The engine allocates gradients whole (or as slices of an arena's flat buffer); one set
    // by hand may be a view, which one pass over numel() elements would misread.
    if (!g.is_contiguous())
      throw std::invalid_argument("clip_grad_norm: the gradient of tensor " + std::to_string(i) +
                                  " is a strided view; set_grad() a contiguous tensor");
    sum_squares += dispatch_floating(g.dtype(), "clip_grad_norm", [&]<typename T>() {
      return kernels::sum_squares_double<T>(g.data<T>(), g.numel());
    });
    grads.push_back(g);
  }
  const double norm = std::sqrt(sum_squares);
  check_finite_norm(norm, error_if_nonfinite);
  const double scale = clip_scale(norm, max_norm);
  if (!(scale >= 1))  // a NaN factor is applied, as in torch
    for (const Tensor& g : grads) scale_in_place(g, scale);
  return norm;
}

Tensor UnaryModule::operator()(const Tensor& x) const {
  return call_with_hooks(x, [this](const Tensor& input) { return forward(input); });
}

Tensor UnaryModule::run_pre_hooks(const Hooks& hooks, Tensor input) const {
  for (const auto& [id, hook] : hooks.pre)
    if (std::optional<Tensor> replaced = hook(*this, input)) input = std::move(*replaced);
  return input;
}

Tensor UnaryModule::run_hooks(const Hooks& hooks, const Tensor& input, Tensor output) const {
  for (const auto& [id, hook] : hooks.post)
    if (std::optional<Tensor> replaced = hook(*this, input, output)) output = std::move(*replaced);
  return output;
}

namespace {

// A handle that erases entry `id` of (hooks->*list), if the hooks still exist.
template <typename List>
HookHandle removing(const std::shared_ptr<void>& owner, List* list, int64_t id) {
  return HookHandle([weak = std::weak_ptr<void>(owner), list, id] {
    const std::shared_ptr<void> alive = weak.lock();  // the module (its hooks) still exists
    if (!alive) return;
    std::erase_if(*list, [id](const auto& entry) { return entry.first == id; });
  });
}

}  // namespace

HookHandle UnaryModule::register_forward_pre_hook(ForwardPreHook hook) {
  if (!hook) throw std::invalid_argument("register_forward_pre_hook: the hook is empty");
  const int64_t id = hooks_->next_id++;
  hooks_->pre.emplace_back(id, std::move(hook));
  return removing(hooks_, &hooks_->pre, id);
}

HookHandle UnaryModule::register_forward_hook(ForwardHook hook) {
  if (!hook) throw std::invalid_argument("register_forward_hook: the hook is empty");
  const int64_t id = hooks_->next_id++;
  hooks_->post.emplace_back(id, std::move(hook));
  return removing(hooks_, &hooks_->post, id);
}

}  // namespace attograd::nn
