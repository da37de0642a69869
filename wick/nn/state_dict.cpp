#include <wick/nn/state_dict.h>

namespace wick {

StateDict::StateDict(std::initializer_list<Entry> entries) {
  for (const Entry& e : entries) insert(e.first, e.second);
}

StateDict::StateDict(const std::map<std::string, Tensor>& entries) {
  for (const auto& [name, t] : entries) insert(name, t);
}

std::map<std::string, Tensor> StateDict::to_map() const { return {entries_.begin(), entries_.end()}; }

void StateDict::insert(std::string name, Tensor value) {
  WICK_CHECK(!contains(name), "StateDict::insert: key '", name, "' is already present");
  index_.emplace(name, entries_.size());
  entries_.emplace_back(std::move(name), std::move(value));
}

const Tensor& StateDict::at(const std::string& name) const {
  auto it = index_.find(name);
  WICK_CHECK(it != index_.end(), "StateDict::at: no key '", name, "'");
  return entries_[it->second].second;
}

Tensor& StateDict::at(const std::string& name) {
  return const_cast<Tensor&>(static_cast<const StateDict&>(*this).at(name));
}

bool StateDict::erase(const std::string& name) {
  auto it = index_.find(name);
  if (it == index_.end()) return false;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
  return true;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> k;
  k.reserve(entries_.size());
  for (const Entry& e : entries_) k.push_back(e.first);
  return k;
}

}  // namespace wick
