// Backward nodes of the reductions: the gradient of a sum is the output gradient broadcast
// back over the reduced dims.
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>

namespace wick {

namespace {

// The output gradient with the reduced dims put back as size 1 (undoing keepdim=false).
Variable restore_reduced_dims(const Variable& g, const Shape& in_shape, const Dims& dims, bool keepdim) {
  if (keepdim || in_shape.empty()) return g;
  Shape s = in_shape;
  int64_t nd = static_cast<int64_t>(in_shape.size());
  std::vector<bool> reduced(in_shape.size(), dims.empty());
  for (int64_t d : dims) reduced[wrap_dim("sum", d, nd)] = true;
  for (size_t i = 0; i < s.size(); ++i)
    if (reduced[i]) s[i] = 1;
  return reshape(g, s);
}

class SumBackward final : public Node {
 public:
  SumBackward(Shape in, Dims dims, bool keepdim) : in_(std::move(in)), dims_(std::move(dims)), keepdim_(keepdim) {}
  const char* name() const override { return "SumBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    return {expand(restore_reduced_dims(g[0], in_, dims_, keepdim_), in_)};
  }

 private:
  Shape in_;
  Dims dims_;
  bool keepdim_;
};

}  // namespace

Variable sum(const Variable& x, const Dims& dims, bool keepdim) {
  Variable out(sum(x.data(), dims, keepdim));
  record<SumBackward>({&x}, {&out}, x.shape(), dims, keepdim);
  return out;
}

// mean = sum / count: a composite, so it needs no backward of its own.
Variable mean(const Variable& x, const Dims& dims, bool keepdim) {
  if (!needs_grad({&x})) return Variable(mean(x.data(), dims, keepdim));
  Variable s = sum(x, dims, keepdim);
  double count = s.numel() == 0 ? 0.0 : static_cast<double>(x.numel() / s.numel());
  return mul(s, 1.0 / count);
}

}  // namespace wick
