// Backward nodes of the shape ops: each maps the gradient back through the inverse view.
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>

namespace wick {

namespace {

class ReshapeBackward final : public Node {
 public:
  explicit ReshapeBackward(Shape in) : in_(std::move(in)) {}
  const char* name() const override { return "ReshapeBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {reshape(g[0], in_)}; }

 private:
  Shape in_;
};

class TransposeBackward final : public Node {
 public:
  TransposeBackward(int64_t d0, int64_t d1) : d0_(d0), d1_(d1) {}
  const char* name() const override { return "TransposeBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {transpose(g[0], d0_, d1_)}; }

 private:
  int64_t d0_, d1_;
};

class ExpandBackward final : public Node {
 public:
  explicit ExpandBackward(Shape in) : in_(std::move(in)) {}
  const char* name() const override { return "ExpandBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {sum_to(g[0], in_)}; }

 private:
  Shape in_;
};

}  // namespace

Variable reshape(const Variable& x, const Shape& shape) {
  Variable out(x.data().reshape(shape));
  record<ReshapeBackward>({&x}, {&out}, x.shape());
  return out;
}

Variable transpose(const Variable& x, int64_t d0, int64_t d1) {
  Variable out(x.data().transpose(d0, d1));
  record<TransposeBackward>({&x}, {&out}, d0, d1);
  return out;
}

Variable expand(const Variable& x, const Shape& shape) {
  Variable out(x.data().expand(shape));
  record<ExpandBackward>({&x}, {&out}, x.shape());
  return out;
}

Variable sum_to(const Variable& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const Shape& from = x.shape();
  WICK_CHECK(from.size() >= shape.size(), "sum_to: cannot sum shape ", shape_str(from), " to ", shape_str(shape));
  size_t lead = from.size() - shape.size();
  Dims dims;
  for (size_t i = 0; i < from.size(); ++i) {
    if (i < lead) {
      dims.push_back(static_cast<int64_t>(i));
    } else if (shape[i - lead] == 1 && from[i] != 1) {
      dims.push_back(static_cast<int64_t>(i));
    } else {
      WICK_CHECK(shape[i - lead] == from[i], "sum_to: cannot sum shape ", shape_str(from), " to ", shape_str(shape));
    }
  }
  if (dims.empty()) return reshape(x, shape);
  return reshape(sum(x, dims, /*keepdim=*/true), shape);
}

}  // namespace wick
