#pragma once
// Example: one sample (or one collated batch) as named tensors in insertion order, the
// C++ counterpart of the dicts and tuples a PyTorch Dataset returns.
//   - numbers are 0-d tensors: int64 for integers, float64 for floating point;
//   - a tuple is the fields "0", "1", ... (Example::tuple);
//   - the accessors throw wick::Error naming the missing field and the fields present.
// An Example is a value: copying it copies the names and aliases the tensors (like
// copying a Tensor). It is not synchronised; one thread at a time.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <wick/tensor/tensor.h>

namespace wick {

class Example {
 public:
  Example() = default;
  // Fields in the given order; throws on a duplicate name.
  Example(std::initializer_list<std::pair<std::string, Tensor>> fields);
  // The fields "0", "1", ... holding `parts` in order.
  static Example tuple(const std::vector<Tensor>& parts);

  // Adds a field at the end, or replaces the tensor of an existing one (keeping its place).
  Example& set(const std::string& name, Tensor value);
  Example& set(const std::string& name, int64_t value);  // an int64 0-d tensor
  Example& set(const std::string& name, int value) { return set(name, static_cast<int64_t>(value)); }
  Example& set(const std::string& name, double value);   // a float64 0-d tensor
  // Removes a field; throws if it is not there.
  void erase(const std::string& name);

  bool has(const std::string& name) const;
  // The field's tensor; throws "Example: no field 'x' (fields: a, b)" when absent.
  const Tensor& at(const std::string& name) const;
  Tensor& at(const std::string& name);
  const Tensor& operator[](const std::string& name) const { return at(name); }
  const Tensor& at(size_t position) const;  // by insertion position
  // The field's single element (any 1-element tensor) as an integer or a double.
  int64_t int_at(const std::string& name) const;
  double float_at(const std::string& name) const;

  size_t size() const { return fields_.size(); }
  bool empty() const { return fields_.empty(); }
  std::vector<std::string> names() const;
  const std::vector<std::pair<std::string, Tensor>>& fields() const { return fields_; }
  // "a, b, c": for messages.
  std::string names_str() const;

 private:
  std::vector<std::pair<std::string, Tensor>> fields_;
};

}  // namespace wick
