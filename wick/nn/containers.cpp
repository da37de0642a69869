#include <wick/nn/containers.h>

#include <string>

namespace wick {

namespace {

// Index i (negative from the end) into a container of n, checked.
size_t position(const char* op, int64_t i, size_t n) {
  const int64_t size = static_cast<int64_t>(n);
  WICK_CHECK(i >= -size && i < size, op, ": index ", i, " is out of range for ", size, " modules");
  return static_cast<size_t>(i < 0 ? i + size : i);
}

}  // namespace

Sequential::Sequential(std::initializer_list<std::shared_ptr<UnaryModule>> modules) {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<UnaryModule> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

Variable Sequential::forward(const Variable& x) {
  Variable y = x;
  for (const auto& m : modules_) y = m->forward(y);
  return y;
}

const std::shared_ptr<UnaryModule>& Sequential::operator[](int64_t i) const {
  return modules_[position("Sequential", i, modules_.size())];
}

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (const auto& m : modules) push_back(m);
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

const std::shared_ptr<Module>& ModuleList::operator[](int64_t i) const {
  return modules_[position("ModuleList", i, modules_.size())];
}

}  // namespace wick
