#pragma once
// Containers: Sequential chains UnaryModules; ModuleList holds any modules for a layer that
// calls them itself. Children are named by position ("0", "1", ...), as in PyTorch, so a
// Sequential's parameters read "0.weight", "2.bias".
#include <initializer_list>
#include <memory>
#include <vector>

#include <wick/nn/module.h>

namespace wick {

class Sequential : public UnaryModule {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<std::shared_ptr<UnaryModule>> modules);
  const char* type_name() const override { return "Sequential"; }

  void push_back(std::shared_ptr<UnaryModule> module);
  // Each module's output is the next one's input; an empty Sequential is the identity.
  Variable forward(const Variable& x) override;

  size_t size() const { return modules_.size(); }
  // Negative indices count from the end; out of range throws.
  const std::shared_ptr<UnaryModule>& operator[](int64_t i) const;
  // The module at i as its concrete type; throws if it is another type.
  template <class M>
  std::shared_ptr<M> at(int64_t i) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[i]);
    WICK_CHECK(m != nullptr, "Sequential::at: module ", i, " is a ", (*this)[i]->type_name(),
               ", not the type asked for");
    return m;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<UnaryModule>> modules_;
};

class ModuleList : public Module {
 public:
  ModuleList() = default;
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);
  const char* type_name() const override { return "ModuleList"; }

  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return modules_.size(); }
  const std::shared_ptr<Module>& operator[](int64_t i) const;
  template <class M>
  std::shared_ptr<M> at(int64_t i) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[i]);
    WICK_CHECK(m != nullptr, "ModuleList::at: module ", i, " is a ", (*this)[i]->type_name(),
               ", not the type asked for");
    return m;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace wick
