// Backward nodes of the shape ops: each maps the gradient back through the inverse view.
// Slices (narrow and select are slices) write their gradient into zeros with slice_scatter;
// cat hands each input its stretch and split/chunk cat their pieces' gradients back; to() converts the gradient back to
// the input's dtype and device.
#include <wick/autograd/functions/constants.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/join.h>

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

class PermuteBackward final : public Node {
 public:
  explicit PermuteBackward(std::vector<int64_t> inverse) : inverse_(std::move(inverse)) {}
  const char* name() const override { return "PermuteBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {permute(g[0], inverse_)}; }

 private:
  std::vector<int64_t> inverse_;
};

// The slice's gradient written into zeros of the input's shape.
class SliceBackward final : public Node {
 public:
  SliceBackward(Shape in, int64_t dim, int64_t start, int64_t end, int64_t step)
      : in_(std::move(in)), dim_(dim), start_(start), end_(end), step_(step) {}
  const char* name() const override { return "SliceBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    return {slice_scatter(zeros_like_shape(in_, g[0]), g[0], dim_, start_, end_, step_)};
  }

 private:
  Shape in_;
  int64_t dim_, start_, end_, step_;
};

// x gets the gradient outside the slice, src the gradient inside it.
class SliceScatterBackward final : public Node {
 public:
  SliceScatterBackward(Shape src, int64_t dim, int64_t start, int64_t end, int64_t step)
      : src_(std::move(src)), dim_(dim), start_(start), end_(end), step_(step) {}
  const char* name() const override { return "SliceScatterBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    return {slice_scatter(g[0], zeros_like_shape(src_, g[0]), dim_, start_, end_, step_),
            slice(g[0], dim_, start_, end_, step_)};
  }

 private:
  Shape src_;
  int64_t dim_, start_, end_, step_;
};

// Each input gets its own stretch of the gradient along dim.
class CatBackward final : public Node {
 public:
  CatBackward(std::vector<int64_t> sizes, int64_t dim) : sizes_(std::move(sizes)), dim_(dim) {}
  const char* name() const override { return "CatBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    std::vector<Variable> out;
    int64_t start = 0;
    for (int64_t n : sizes_) {
      if (n < 0) {  // a legacy 1-d empty input, skipped by the forward
        out.push_back(Variable(zeros({0}, g[0].data().options())));
        continue;
      }
      out.push_back(narrow(g[0], dim_, start, n));
      start += n;
    }
    return out;
  }

 private:
  std::vector<int64_t> sizes_;
  int64_t dim_;
};

// split/chunk: one node for all pieces, so the gradient is one cat (pieces whose gradient
// is undefined contribute zeros) rather than one input-sized buffer per piece.
class SplitBackward final : public Node {
 public:
  SplitBackward(std::vector<Shape> pieces, int64_t dim) : pieces_(std::move(pieces)), dim_(dim) {}
  const char* name() const override { return "SplitBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    const Variable* any = nullptr;
    for (const Variable& gi : g)
      if (gi.defined()) any = &gi;
    std::vector<Variable> parts;
    for (size_t i = 0; i < pieces_.size(); ++i)
      parts.push_back(g[i].defined() ? g[i] : zeros_like_shape(pieces_[i], *any));
    return {cat(parts, dim_)};
  }

 private:
  std::vector<Shape> pieces_;
  int64_t dim_;
};

class CloneBackward final : public Node {
 public:
  const char* name() const override { return "CloneBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {g[0]}; }
};

// to(dtype/device): the gradient goes back to the input's dtype and device.
class ToBackward final : public Node {
 public:
  explicit ToBackward(Options in) : in_(in) {}
  const char* name() const override { return "ToBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {to(g[0], in_)}; }

 private:
  Options in_;
};

}  // namespace

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

Variable squeeze(const Variable& x) {
  Variable out(x.data().squeeze());
  record<ReshapeBackward>({&x}, {&out}, x.shape());
  return out;
}

Variable permute(const Variable& x, const std::vector<int64_t>& dims) {
  Variable out(x.data().permute(dims));
  if (needs_grad({&x})) {
    std::vector<int64_t> inverse(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) inverse[wrap_dim("permute", dims[i], x.dim())] = static_cast<int64_t>(i);
    record<PermuteBackward>({&x}, {&out}, std::move(inverse));
  }
  return out;
}

Variable narrow(const Variable& x, int64_t dim, int64_t start, int64_t length) {
  Variable out(x.data().narrow(dim, start, length));
  if (needs_grad({&x})) {
    // narrow's start may be negative (from the end) and its length is exact: as a slice,
    // the start is wrapped first.
    int64_t s = start < 0 ? start + x.size(dim) : start;
    record<SliceBackward>({&x}, {&out}, x.shape(), dim, s, s + length, 1);
  }
  return out;
}

Variable select(const Variable& x, int64_t dim, int64_t index) {
  Tensor out = x.data().select(dim, index);  // checks dim and index
  if (!needs_grad({&x})) return Variable(out);
  // select = a one-element slice with the dim dropped: its gradient is placed like a slice's.
  int64_t d = wrap_dim("select", dim, x.dim());
  int64_t i = index < 0 ? index + x.size(d) : index;
  return reshape(slice(x, d, i, i + 1), out.shape());
}

Variable slice_scatter(const Variable& x, const Variable& src, int64_t dim, int64_t start, int64_t end, int64_t step) {
  Tensor out = x.data().clone();
  Tensor view = out.slice(dim, start, end, step);
  WICK_CHECK(view.shape() == src.shape(), "slice_scatter: src has shape ", shape_str(src.shape()), " but the slice of ",
             shape_str(x.shape()), " along dim ", dim, " has shape ", shape_str(view.shape()));
  view.copy_(src.data());
  Variable result(out);
  record<SliceScatterBackward>({&x, &src}, {&result}, src.shape(), dim, start, end, step);
  return result;
}

std::vector<Variable> split(const Variable& x, const std::vector<int64_t>& sizes, int64_t dim) {
  std::vector<Variable> pieces;
  for (const Tensor& t : x.data().split(sizes, dim)) pieces.emplace_back(t);
  if (needs_grad({&x})) {
    std::vector<Variable*> outputs;
    std::vector<Shape> shapes;
    for (Variable& p : pieces) {
      outputs.push_back(&p);
      shapes.push_back(p.shape());
    }
    connect(std::make_shared<SplitBackward>(std::move(shapes), wrap_dim("split", dim, x.dim())), {&x}, outputs);
  }
  return pieces;
}

std::vector<Variable> split(const Variable& x, int64_t split_size, int64_t dim) {
  std::vector<int64_t> sizes;
  for (const Tensor& t : x.data().split(split_size, dim)) sizes.push_back(t.size(dim));
  return split(x, sizes, dim);
}

std::vector<Variable> chunk(const Variable& x, int64_t chunks, int64_t dim) {
  std::vector<int64_t> sizes;
  for (const Tensor& t : x.data().chunk(chunks, dim)) sizes.push_back(t.size(dim));
  return split(x, sizes, dim);
}

Variable cat(const std::vector<Variable>& xs, int64_t dim) {
  std::vector<Tensor> data;
  std::vector<const Variable*> inputs;
  for (const Variable& x : xs) {
    data.push_back(x.data());
    inputs.push_back(&x);
  }
  Variable out(cat(data, dim));
  if (needs_grad(inputs)) {
    int64_t d = wrap_dim("cat", dim, out.dim());
    std::vector<int64_t> sizes;
    // A 1-d empty input is skipped whatever the others' shapes (PyTorch's legacy rule): -1.
    for (const Variable& x : xs) sizes.push_back(x.dim() == 1 && x.numel() == 0 && out.dim() != 1 ? -1 : x.size(d));
    connect(std::make_shared<CatBackward>(std::move(sizes), d), inputs, {&out});
  }
  return out;
}

Variable stack(const std::vector<Variable>& xs, int64_t dim) {
  WICK_CHECK(!xs.empty(), "stack: needs at least one variable");
  std::vector<Variable> expanded;
  int64_t d = wrap_dim("stack", dim, xs[0].dim() + 1);
  for (const Variable& x : xs) {
    WICK_CHECK(x.shape() == xs[0].shape(), "stack: all shapes must be equal, got ", shape_str(xs[0].shape()), " and ",
               shape_str(x.shape()));
    expanded.push_back(unsqueeze(x, d));
  }
  return cat(expanded, d);
}

Variable contiguous(const Variable& x) {
  if (x.data().is_contiguous()) return x;
  return clone(x);
}

Variable clone(const Variable& x) {
  Variable out(x.data().clone());
  record<CloneBackward>({&x}, {&out});
  return out;
}

Variable to(const Variable& x, DType t) { return to(x, Options(t, x.device())); }
Variable to(const Variable& x, Device d) { return to(x, Options(x.dtype(), d)); }

Variable to(const Variable& x, const Options& o) {
  Tensor t = x.data().to(o);
  if (t.shares_storage(x.data()) && t.dtype() == x.dtype()) return x;
  Variable out(t);
  record<ToBackward>({&x}, {&out}, x.data().options());
  return out;
}

#include "wick/autograd/generated/view_ops_defs.inc"

}  // namespace wick
