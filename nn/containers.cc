#include "nn/containers.h"

#include <stdexcept>

namespace attograd::nn {

Sequential::Sequential(std::initializer_list<std::shared_ptr<UnaryModule>> modules) {
  for (const auto& m : modules) push_back(m);
}

Sequential& Sequential::push_back(std::shared_ptr<UnaryModule> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
  return *this;
}

Tensor Sequential::forward(const Tensor& x) const {
  Tensor y = x;
  for (const auto& m : modules_) y = (*m)(y);
  return y;
}

UnaryModule& Sequential::operator[](size_t index) const {
  if (index >= modules_.size())
    throw std::out_of_range("Sequential: index " + std::to_string(index) + " is past its " +
                            std::to_string(modules_.size()) + " modules");
  return *modules_[index];
}

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (const auto& m : modules) push_back(m);
}

ModuleList& ModuleList::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
  return *this;
}

Module& ModuleList::operator[](size_t index) const {
  if (index >= modules_.size())
    throw std::out_of_range("ModuleList: index " + std::to_string(index) + " is past its " +
                            std::to_string(modules_.size()) + " modules");
  return *modules_[index];
}

ModuleDict::ModuleDict(
    std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> modules) {
  for (const auto& [key, m] : modules) insert(key, m);
}

ModuleDict& ModuleDict::insert(const std::string& key, std::shared_ptr<Module> module) {
  if (key.find('.') != std::string::npos)
    throw std::invalid_argument("ModuleDict: key '" + key +
                                "' has a dot, which would split its state dict names; use '_'");
  register_module(key, module);  // refuses an empty, taken or null one
  modules_.emplace_back(key, std::move(module));
  return *this;
}

bool ModuleDict::contains(const std::string& key) const {
  for (const auto& entry : modules_)
    if (entry.first == key) return true;
  return false;
}

Module& ModuleDict::operator[](const std::string& key) const {
  for (const auto& [k, m] : modules_)
    if (k == key) return *m;
  std::string keys;
  for (const auto& entry : modules_) keys += (keys.empty() ? "'" : ", '") + entry.first + "'";
  throw std::out_of_range("ModuleDict: no key '" + key + "'; its keys are " +
                          (keys.empty() ? std::string("none") : keys));
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& entry : modules_) out.push_back(entry.first);
  return out;
}

Functional::Functional(std::function<Tensor(const Tensor&)> fn) : fn_(std::move(fn)) {
  if (!fn_) throw std::invalid_argument("Functional: the function is empty");
}

}  // namespace attograd::nn
