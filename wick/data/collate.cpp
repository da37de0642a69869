#include <wick/data/collate.h>

#include <algorithm>

#include <wick/tensor/factories.h>
#include <wick/tensor/join.h>

namespace wick {

namespace {

// Throws unless every example has example 0's field names, in its order.
void check_same_fields(const char* op, const std::vector<Example>& examples) {
  for (size_t b = 1; b < examples.size(); ++b) {
    WICK_CHECK(examples[b].names() == examples[0].names(), op, ": example ", b, " of the batch has fields (",
               examples[b].names_str(), ") but example 0 has (", examples[0].names_str(), ")");
  }
}

Tensor stack_field(const char* op, const std::vector<Example>& examples, size_t f) {
  const std::string& name = examples[0].fields()[f].first;
  std::vector<Tensor> parts;
  parts.reserve(examples.size());
  const Tensor& first = examples[0].at(f);
  for (size_t b = 0; b < examples.size(); ++b) {
    const Tensor& t = examples[b].at(f);
    WICK_CHECK(t.shape() == first.shape() && t.dtype() == first.dtype(), op, ": field '", name, "' of example ", b,
               " is ", shape_str(t.shape()), " ", dtype_name(t.dtype()), " but example 0's is ",
               shape_str(first.shape()), " ", dtype_name(first.dtype()),
               " (pad_collate pads variable first dims)");
    parts.push_back(t);
  }
  return stack(parts, 0);
}

}  // namespace

Example stack_collate(std::vector<Example> examples) {
  if (examples.empty()) return Example();
  check_same_fields("stack_collate", examples);
  Example out;
  for (size_t f = 0; f < examples[0].size(); ++f)
    out.set(examples[0].fields()[f].first, stack_field("stack_collate", examples, f));
  return out;
}

Collate pad_collate(double pad_value, std::vector<std::string> fields) {
  return [pad_value, fields = std::move(fields)](std::vector<Example> examples) {
    if (examples.empty()) return Example();
    check_same_fields("pad_collate", examples);
    for (const std::string& name : fields) {
      WICK_CHECK(examples[0].has(name), "pad_collate: no field '", name, "' to pad (fields: ",
                 examples[0].names_str(), ")");
    }
    Example out;
    const int64_t batch = static_cast<int64_t>(examples.size());
    for (size_t f = 0; f < examples[0].size(); ++f) {
      const std::string& name = examples[0].fields()[f].first;
      const Tensor& first = examples[0].at(f);
      const bool pad = fields.empty() ? first.dim() >= 1 : std::find(fields.begin(), fields.end(), name) != fields.end();
      if (!pad) {
        out.set(name, stack_field("pad_collate", examples, f));
        continue;
      }
      WICK_CHECK(first.dim() >= 1, "pad_collate: field '", name, "' is 0-d; only fields with a first dim are padded");
      int64_t longest = 0;
      std::vector<int64_t> lengths;
      for (int64_t b = 0; b < batch; ++b) {
        const Tensor& t = examples[b].at(f);
        const bool same_rest = t.dim() == first.dim() && std::equal(t.shape().begin() + 1, t.shape().end(),
                                                                    first.shape().begin() + 1);
        WICK_CHECK(same_rest && t.dtype() == first.dtype(), "pad_collate: field '", name, "' of example ", b, " is ",
                   shape_str(t.shape()), " ", dtype_name(t.dtype()), " but example 0's is ", shape_str(first.shape()),
                   " ", dtype_name(first.dtype()), " (only the first dim may differ)");
        lengths.push_back(t.size(0));
        longest = std::max(longest, t.size(0));
      }
      std::vector<int64_t> shape{batch, longest};
      shape.insert(shape.end(), first.shape().begin() + 1, first.shape().end());
      Tensor padded = full(shape, pad_value, first.dtype());
      for (int64_t b = 0; b < batch; ++b) {
        if (lengths[b] > 0) padded.select(0, b).narrow(0, 0, lengths[b]).copy_(examples[b].at(f));
      }
      out.set(name, padded);
      out.set(name + "_length", tensor<int64_t>(lengths));
    }
    return out;
  };
}

}  // namespace wick
