#include <wick/data/example.h>

namespace wick {

Example::Example(std::initializer_list<std::pair<std::string, Tensor>> fields) {
  for (const auto& [name, value] : fields) {
    WICK_CHECK(!has(name), "Example: duplicate field '", name, "'");
    fields_.emplace_back(name, value);
  }
}

Example Example::tuple(const std::vector<Tensor>& parts) {
  Example e;
  for (size_t i = 0; i < parts.size(); ++i) e.fields_.emplace_back(std::to_string(i), parts[i]);
  return e;
}

Example& Example::set(const std::string& name, Tensor value) {
  for (auto& field : fields_) {
    if (field.first == name) {
      field.second = std::move(value);
      return *this;
    }
  }
  fields_.emplace_back(name, std::move(value));
  return *this;
}

Example& Example::set(const std::string& name, int64_t value) {
  return set(name, scalar_tensor(value, DType::Int64));
}

Example& Example::set(const std::string& name, double value) {
  return set(name, scalar_tensor(value, DType::Float64));
}

void Example::erase(const std::string& name) {
  for (auto it = fields_.begin(); it != fields_.end(); ++it) {
    if (it->first == name) {
      fields_.erase(it);
      return;
    }
  }
  detail::throw_error("Example::erase: no field '", name, "' (fields: ", names_str(), ")");
}

bool Example::has(const std::string& name) const {
  for (const auto& field : fields_)
    if (field.first == name) return true;
  return false;
}

const Tensor& Example::at(const std::string& name) const {
  for (const auto& field : fields_)
    if (field.first == name) return field.second;
  detail::throw_error("Example: no field '", name, "' (fields: ", names_str(), ")");
}

Tensor& Example::at(const std::string& name) {
  return const_cast<Tensor&>(static_cast<const Example&>(*this).at(name));
}

const Tensor& Example::at(size_t position) const {
  WICK_CHECK(position < fields_.size(), "Example: no field at position ", position, " (", fields_.size(),
             " fields: ", names_str(), ")");
  return fields_[position].second;
}

int64_t Example::int_at(const std::string& name) const {
  const Tensor& t = at(name);
  WICK_CHECK(t.numel() == 1, "Example::int_at: field '", name, "' has shape ", shape_str(t.shape()),
             ", not a single number");
  return t.item<int64_t>();
}

double Example::float_at(const std::string& name) const {
  const Tensor& t = at(name);
  WICK_CHECK(t.numel() == 1, "Example::float_at: field '", name, "' has shape ", shape_str(t.shape()),
             ", not a single number");
  return t.item<double>();
}

std::vector<std::string> Example::names() const {
  std::vector<std::string> out;
  out.reserve(fields_.size());
  for (const auto& field : fields_) out.push_back(field.first);
  return out;
}

std::string Example::names_str() const {
  if (fields_.empty()) return "none";
  std::string out;
  for (const auto& field : fields_) {
    if (!out.empty()) out += ", ";
    out += field.first;
  }
  return out;
}

}  // namespace wick
