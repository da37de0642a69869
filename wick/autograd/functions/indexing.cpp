// Backward nodes of the indexing ops. Picking elements (index_select, gather, embedding,
// masked_select) sends the gradient back by adding it into zeros at the picked places;
// writing elements (scatter, index_add, masked_fill) sends the gradient of what was
// written to the source by picking it out again. Index tensors are not differentiable.
#include <wick/autograd/autocast.h>
#include <wick/autograd/functions/constants.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/indexing.h>

#include <optional>

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

// `v` (index-shaped) padded with zeros at the end of each dim up to src's shape: an index
// smaller than src uses only src's leading block, and the rest gets no gradient.
Variable pad_to_source(Variable v, const Shape& src) {
  for (int64_t d = 0; d < v.dim(); ++d) {
    const int64_t missing = src[static_cast<size_t>(d)] - v.size(d);
    if (missing <= 0) continue;
    Shape s = v.shape();
    s[static_cast<size_t>(d)] = missing;
    v = cat({v, Variable(zeros(s, v.data().options()))}, d);
  }
  return v;
}

// scatter: x's gradient is zero where it was overwritten; src's (when src is a Variable)
// is the gradient at the places it went to.
class ScatterBackward final : public Node {
 public:
  ScatterBackward(int64_t dim, Tensor index, std::optional<Shape> src)
      : dim_(dim), index_(std::move(index)), src_(std::move(src)) {}
  const char* name() const override { return "ScatterBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Variable gx = scatter(g[0], dim_, index_, Scalar(0.0));
    if (!src_) return {gx};
    return {gx, pad_to_source(gather(g[0], dim_, index_), *src_)};
  }
  bool release_saved() override { return release(index_); }

 private:
  int64_t dim_;
  Tensor index_;
  std::optional<Shape> src_;  // none: a number was scattered
};

// scatter_add / index_add: x's gradient passes unchanged; src's is picked from the places
// it was added to (times alpha for index_add).
class AddAtIndexBackward final : public Node {
 public:
  AddAtIndexBackward(bool is_index_add, int64_t dim, Tensor index, double alpha, Shape src)
      : is_index_add_(is_index_add), dim_(dim), index_(std::move(index)), alpha_(alpha), src_(std::move(src)) {}
  const char* name() const override { return is_index_add_ ? "IndexAddBackward" : "ScatterAddBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    if (!is_index_add_) return {g[0], pad_to_source(gather(g[0], dim_, index_), src_)};
    Variable gs = index_select(g[0], dim_, index_);
    return {g[0], scaled(gs, alpha_)};
  }
  bool release_saved() override { return release(index_); }

 private:
  bool is_index_add_;
  int64_t dim_;
  Tensor index_;
  double alpha_;
  Shape src_;
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

// embedding = index_select of rows by the flattened indices, reshaped to [..., dim].
Variable embedding(const Variable& weight, const Tensor& indices) {
  if (!needs_grad({&weight})) return Variable(embedding(weight.data(), indices));
  WICK_CHECK(weight.dim() == 2, "embedding: weight must be 2-d [num, dim], got ", shape_str(weight.shape()));
  Shape out_shape = indices.shape();
  out_shape.push_back(weight.size(1));
  return reshape(index_select(weight, 0, indices.reshape({-1})), out_shape);
}

#include "wick/autograd/generated/indexing_ops_defs.inc"

}  // namespace wick
