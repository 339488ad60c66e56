// Modules that hold modules, as torch.nn's: Sequential (a chain of one-input modules, itself
// one), ModuleList (an indexed list) and ModuleDict (modules by name, in insertion order), and
// Functional, any Tensor -> Tensor function as a module (libtorch's nn::Functional) so that an
// activation can sit in a Sequential. Children are registered under their index ("0", "1", ...)
// or their key, so state dict keys are torch's: a Sequential's first Linear's weight is
// "0.weight" in both.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/module.h"

namespace attograd::nn {

/// torch.nn.Sequential: forward(x) runs each module in order on the previous one's output,
/// each through its operator() (so their hooks run). Modules are shared: the same one added
/// twice is applied twice, its parameters listed once.
class Sequential : public UnaryModule {
 public:
  Sequential() = default;
  /// Throws std::invalid_argument for a null module.
  Sequential(std::initializer_list<std::shared_ptr<UnaryModule>> modules);
  /// Appends `module` under the name of its index; returns *this.
  Sequential& push_back(std::shared_ptr<UnaryModule> module);
  /// An empty Sequential is the identity, as torch's.
  Tensor forward(const Tensor& x) const override;
  size_t size() const { return modules_.size(); }
  /// The module at `index`; throws std::out_of_range past the end.
  UnaryModule& operator[](size_t index) const;

 private:
  std::vector<std::shared_ptr<UnaryModule>> modules_;
};

/// torch.nn.ModuleList: modules of any kind, indexed; it has no forward (the owner decides how
/// to call them, e.g. a GPT's blocks in a loop).
class ModuleList : public Module {
 public:
  ModuleList() = default;
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);
  /// Appends `module` under the name of its index; throws std::invalid_argument for null.
  ModuleList& push_back(std::shared_ptr<Module> module);
  size_t size() const { return modules_.size(); }
  /// The module at `index` (throws std::out_of_range past the end); as M with get<M>(), which
  /// throws std::invalid_argument when it is another kind.
  Module& operator[](size_t index) const;
  template <typename M>
  M& get(size_t index) const {
    auto* m = dynamic_cast<M*>(&(*this)[index]);
    if (m == nullptr)
      throw std::invalid_argument("ModuleList: module " + std::to_string(index) +
                                  " is not of the kind asked for");
    return *m;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

/// torch.nn.ModuleDict: modules by key, in insertion order. Keys are names as register_module
/// takes them (no dot: a key is one level of the state dict's names).
class ModuleDict : public Module {
 public:
  ModuleDict() = default;
  ModuleDict(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> modules);
  /// Adds `module` under `key`. Throws std::invalid_argument for a null module, an empty key, a
  /// key with a dot, or a key already present (torch replaces; a silent replacement would
  /// leave the old module's parameters in an optimizer built before).
  ModuleDict& insert(const std::string& key, std::shared_ptr<Module> module);
  bool contains(const std::string& key) const;
  /// The module under `key`; throws std::out_of_range naming the key and the keys there are.
  Module& operator[](const std::string& key) const;
  /// The keys in insertion order.
  std::vector<std::string> keys() const;
  size_t size() const { return modules_.size(); }

 private:
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> modules_;
};

/// A function of one tensor as a module without parameters (libtorch's nn::Functional), e.g.
/// Functional(relu) in a Sequential.
class Functional : public UnaryModule {
 public:
  /// Throws std::invalid_argument for an empty function.
  explicit Functional(std::function<Tensor(const Tensor&)> fn);
  Tensor forward(const Tensor& x) const override { return fn_(x); }

 private:
  std::function<Tensor(const Tensor&)> fn_;
};

}  // namespace attograd::nn
