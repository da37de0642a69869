// Backward of matmul. For C = A @ B (batched, broadcasting): dA = dC @ B^T and
// dB = A^T @ dC, each summed back over the batch dims its input was broadcast along.
// 1-d operands are handled by reshaping them to matrices with differentiable reshapes.
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/linalg.h>

namespace wick {

namespace {

class MatmulBackward final : public Node {
 public:
  MatmulBackward(Variable a, Variable b) : a_(std::move(a)), b_(std::move(b)) {}
  const char* name() const override { return "MatmulBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Variable ga = sum_to(matmul(g[0], transpose(b_, -1, -2)), a_.shape());
    Variable gb = sum_to(matmul(transpose(a_, -1, -2), g[0]), b_.shape());
    return {ga, gb};
  }
  bool release_saved() override {
    a_ = b_ = Variable();
    return true;
  }

 private:
  Variable a_, b_;
};

}  // namespace

Variable matmul(const Variable& a, const Variable& b) {
  WICK_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: both arguments need at least 1 dim, got shapes ",
             shape_str(a.shape()), " and ", shape_str(b.shape()));
  if (a.dim() == 1 && b.dim() == 1) return sum(mul(a, b));
  if (a.dim() == 1) {
    Variable r = matmul(reshape(a, {1, a.size(0)}), b);
    Shape s = r.shape();
    s.erase(s.end() - 2);
    return reshape(r, s);
  }
  if (b.dim() == 1) {
    Variable r = matmul(a, reshape(b, {b.size(0), 1}));
    Shape s = r.shape();
    s.pop_back();
    return reshape(r, s);
  }
  Variable out(matmul(a.data(), b.data()));
  record<MatmulBackward>({&a, &b}, {&out}, a, b);
  return out;
}

}  // namespace wick
