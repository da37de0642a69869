#pragma once
// StateDict: tensors by name, in insertion order (a module's parameters and buffers,
// "block1.conv.weight" first to last). What Module::state_dict gives and load_state_dict
// takes, and what a safetensors file holds.
#include <cstddef>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <wick/tensor/tensor.h>

namespace wick {

class StateDict {
 public:
  using Entry = std::pair<std::string, Tensor>;

  StateDict() = default;
  StateDict(std::initializer_list<Entry> entries);
  // From and to a name-sorted map (what save_safetensors takes and load_safetensors gives).
  explicit StateDict(const std::map<std::string, Tensor>& entries);
  std::map<std::string, Tensor> to_map() const;

  // Adds `name`; throws if it is already there.
  void insert(std::string name, Tensor value);
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // Throws naming the key when it is absent.
  const Tensor& at(const std::string& name) const;
  Tensor& at(const std::string& name);
  // Removes `name` if present; says whether it was.
  bool erase(const std::string& name);

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::vector<std::string> keys() const;
  const std::vector<Entry>& entries() const { return entries_; }
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

 private:
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace wick
