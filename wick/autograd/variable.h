#pragma once
// Variable: a Tensor plus what reverse-mode autograd needs (requires_grad, grad, the node
// that produced it, gradient hooks). Tensor knows nothing of this (Flashlight's and lamp's
// split). Copying a Variable aliases it, like torch.Tensor.
//
//   Variable w(randn({3, 2}), /*requires_grad=*/true);
//   Variable loss = sum(relu(matmul(x, w)));
//   loss.backward();            // w.grad() now holds d loss / d w
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <wick/tensor/tensor.h>

namespace wick {

class Node;

class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor data, bool requires_grad = false);

  bool defined() const { return impl_ != nullptr; }
  // The value. Writing into it in place bypasses autograd (as with torch's .data).
  const Tensor& data() const;
  Tensor& data();
  // Replaces the value (same shape/dtype/device not required); the graph is unaffected.
  void set_data(Tensor t);

  bool requires_grad() const;
  // Only leaves can be switched; throws for a variable that an op produced.
  Variable& set_requires_grad(bool r);
  bool is_leaf() const;
  // The node that produced this variable (null for leaves) and which of its outputs it is.
  const std::shared_ptr<Node>& grad_fn() const;
  uint32_t output_nr() const;

  // The accumulated gradient (undefined until backward reaches this leaf).
  Variable grad() const;
  void set_grad(Variable g);
  // Drops the gradient (set_to_none, the PyTorch default) or zeroes it in place.
  void zero_grad(bool set_to_none = true);

  // The same value cut from the graph.
  Variable detach() const;

  // Back-propagates from this variable. `gradient` defaults to ones for a one-element
  // variable and is required otherwise. Without retain_graph the graph's saved tensors
  // are freed. With create_graph the backward ops are recorded too (double backward).
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false, bool create_graph = false) const;

  // A hook sees the gradient w.r.t. this variable as soon as it is complete and may
  // return a replacement (or an undefined Variable to keep it). For a leaf it runs before
  // the gradient is accumulated into grad().
  using GradHook = std::function<Variable(const Variable&)>;
  // Runs after the gradient has been accumulated into a leaf's grad() (the distributed
  // reducer starts its all-reduces from these). Leaves only.
  using PostAccumulateHook = std::function<void(const Variable&)>;
  using HookId = uint64_t;
  HookId register_hook(GradHook hook);
  HookId register_post_accumulate_grad_hook(PostAccumulateHook hook);
  void remove_hook(HookId id);

  // Shorthands for the value's metadata.
  const Shape& shape() const { return data().shape(); }
  int64_t dim() const { return data().dim(); }
  int64_t size(int64_t d) const { return data().size(d); }
  int64_t numel() const { return data().numel(); }
  DType dtype() const { return data().dtype(); }
  Device device() const { return data().device(); }
  template <class T> T item() const { return data().item<T>(); }

  // Identity: whether two handles are the same variable.
  bool is_same(const Variable& o) const { return impl_ == o.impl_; }

  struct Impl;
  // For nodes and the engine: the variable's internals.
  const std::shared_ptr<Impl>& impl() const { return impl_; }
  explicit Variable(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<Impl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Variable& v);

}  // namespace wick
