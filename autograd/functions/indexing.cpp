// Backward nodes of the indexing ops. Picking elements (index_select, gather, embedding,
// masked_select) sends the gradient back by adding it into zeros at the picked places;
// writing elements (scatter, index_add, masked_fill) sends the gradient of what was
// written to the source by picking it out again. Index tensors are not differentiable.
#include <wick/autograd/functions/constants.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/indexing.h>

namespace wick {

namespace {

class IndexSelectBackward final : public Node {
 public:
  IndexSelectBackward(Shape in, int64_t dim, Tensor index) : in_(std::move(in)), dim_(dim), index_(std::move(index)) {}
  const char* name() const override { return "IndexSelectBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    return {index_add(zeros_like_shape(in_, g[0]), dim_, index_, g[0])};
  }
  bool release_saved() override { return release(index_); }

 private:
  Shape in_;
  int64_t dim_;
  Tensor index_;
};

class GatherBackward final : public Node {
 public:
  GatherBackward(Shape in, int64_t dim, Tensor index) : in_(std::move(in)), dim_(dim), index_(std::move(index)) {}
  const char* name() const override { return "GatherBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    return {scatter_add(zeros_like_shape(in_, g[0]), dim_, index_, g[0])};
  }
  bool release_saved() override { return release(index_); }

 private:
  Shape in_;
  int64_t dim_;
  Tensor index_;
};

// scatter: x's gradient is zero where it was overwritten; src's (when src is a Variable)
// is the gradient at the places it went to.
class ScatterBackward final : public Node {
 public:
  ScatterBackward(int64_t dim, Tensor index, bool has_src) : dim_(dim), index_(std::move(index)), has_src_(has_src) {}
  const char* name() const override { return "ScatterBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Variable gx = scatter(g[0], dim_, index_, Scalar(0.0));
    if (!has_src_) return {gx};
    return {gx, gather(g[0], dim_, index_)};
  }
  bool release_saved() override { return release(index_); }

 private:
  int64_t dim_;
  Tensor index_;
  bool has_src_;
};

// scatter_add / index_add: x's gradient passes unchanged; src's is picked from the places
// it was added to (times alpha for index_add).
class AddAtIndexBackward final : public Node {
 public:
  AddAtIndexBackward(bool is_index_add, int64_t dim, Tensor index, double alpha)
      : is_index_add_(is_index_add), dim_(dim), index_(std::move(index)), alpha_(alpha) {}
  const char* name() const override { return is_index_add_ ? "IndexAddBackward" : "ScatterAddBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    if (!is_index_add_) return {g[0], gather(g[0], dim_, index_)};
    Variable gs = index_select(g[0], dim_, index_);
    return {g[0], alpha_ == 1.0 ? gs : mul(gs, alpha_)};
  }
  bool release_saved() override { return release(index_); }

 private:
  bool is_index_add_;
  int64_t dim_;
  Tensor index_;
  double alpha_;
};

class MaskedFillBackward final : public Node {
 public:
  explicit MaskedFillBackward(Tensor mask) : mask_(std::move(mask)) {}
  const char* name() const override { return "MaskedFillBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {masked_fill(g[0], mask_, Scalar(0.0))}; }
  bool release_saved() override { return release(mask_); }

 private:
  Tensor mask_;
};

// masked_select picks, in row-major order of the broadcast shape, the elements where the
// mask is true: the gradient is added back at those flat positions, then summed to x's shape.
class MaskedSelectBackward final : public Node {
 public:
  MaskedSelectBackward(Shape in, Tensor mask) : in_(std::move(in)), mask_(std::move(mask)) {}
  const char* name() const override { return "MaskedSelectBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Shape full = broadcast_shapes("masked_select", in_, mask_.shape());
    Tensor positions = nonzero(mask_.broadcast_to(full).reshape({-1})).reshape({-1});
    Variable flat = index_add(zeros_like_shape({numel_of(full)}, g[0]), 0, positions, g[0]);
    return {sum_to(reshape(flat, full), in_)};
  }
  bool release_saved() override { return release(mask_); }

 private:
  Shape in_;
  Tensor mask_;
};

}  // namespace

Variable index_select(const Variable& x, int64_t dim, const Tensor& index) {
  Variable out(index_select(x.data(), dim, index));
  record<IndexSelectBackward>({&x}, {&out}, x.shape(), dim, index);
  return out;
}

Variable gather(const Variable& x, int64_t dim, const Tensor& index) {
  Variable out(gather(x.data(), dim, index));
  record<GatherBackward>({&x}, {&out}, x.shape(), dim, index);
  return out;
}

Variable scatter(const Variable& x, int64_t dim, const Tensor& index, const Variable& src) {
  Variable out(scatter(x.data(), dim, index, src.data()));
  record<ScatterBackward>({&x, &src}, {&out}, dim, index, true);
  return out;
}

Variable scatter(const Variable& x, int64_t dim, const Tensor& index, const Scalar& value) {
  Variable out(scatter(x.data(), dim, index, value));
  record<ScatterBackward>({&x}, {&out}, dim, index, false);
  return out;
}

Variable scatter_add(const Variable& x, int64_t dim, const Tensor& index, const Variable& src) {
  Variable out(scatter_add(x.data(), dim, index, src.data()));
  record<AddAtIndexBackward>({&x, &src}, {&out}, false, dim, index, 1.0);
  return out;
}

Variable index_add(const Variable& x, int64_t dim, const Tensor& index, const Variable& src, double alpha) {
  Variable out(index_add(x.data(), dim, index, src.data(), alpha));
  record<AddAtIndexBackward>({&x, &src}, {&out}, true, dim, index, alpha);
  return out;
}

Variable masked_fill(const Variable& x, const Tensor& mask, const Scalar& value) {
  Variable out(masked_fill(x.data(), mask, value));
  record<MaskedFillBackward>({&x}, {&out}, mask);
  return out;
}

Variable masked_select(const Variable& x, const Tensor& mask) {
  Variable out(masked_select(x.data(), mask));
  record<MaskedSelectBackward>({&x}, {&out}, x.shape(), mask);
  return out;
}

// embedding = index_select of rows by the flattened indices, reshaped to [..., dim].
Variable embedding(const Variable& weight, const Tensor& indices) {
  if (!needs_grad({&weight})) return Variable(embedding(weight.data(), indices));
  WICK_CHECK(weight.dim() == 2, "embedding: weight must be 2-d [num, dim], got ", shape_str(weight.shape()));
  Shape out_shape = indices.shape();
  out_shape.push_back(weight.size(1));
  return reshape(index_select(weight, 0, indices.reshape({-1})), out_shape);
}

}  // namespace wick
