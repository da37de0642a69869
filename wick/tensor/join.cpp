#include <wick/tensor/join.h>

namespace wick {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  WICK_CHECK(!tensors.empty(), "cat: expects at least one tensor");
  // Like torch.cat, 1-d empty tensors are skipped (legacy behaviour people rely on).
  // Skipped tensors still take part in the result dtype, as in torch.cat.
  std::vector<const Tensor*> parts;
  DType dtype = tensors[0].dtype();
  for (const Tensor& t : tensors) {
    WICK_CHECK(t.defined(), "cat: undefined tensor in the list");
    dtype = promote_types(dtype, t.dtype());
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(&t);
  }
  if (parts.empty()) return tensors[0].to(dtype).clone();
  const Tensor& first = *parts[0];
  WICK_CHECK(first.dim() > 0, "cat: zero-dimensional tensors cannot be concatenated");
  int64_t d = wrap_dim("cat", dim, first.dim());
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& t = *parts[i];
    WICK_CHECK(t.dim() == first.dim(), "cat: tensor ", i, " has shape ", shape_str(t.shape()), " but tensor 0 has ",
               shape_str(first.shape()), " (different number of dims)");
    WICK_CHECK(t.device() == first.device(), "cat: tensor ", i, " is on ", t.device(), " but tensor 0 is on ",
               first.device());
    for (int64_t k = 0; k < t.dim(); ++k)
      WICK_CHECK(k == d || t.shape()[k] == first.shape()[k], "cat: tensor ", i, " has shape ", shape_str(t.shape()),
                 " but tensor 0 has ", shape_str(first.shape()), " (they must match except in dim ", d, ")");
    total += t.shape()[d];
  }
  Shape shape = first.shape();
  shape[d] = total;
  Tensor out = empty(shape, Options(dtype, first.device()));
  int64_t at = 0;
  for (const Tensor* t : parts) {
    int64_t n = t->shape()[d];
    if (n > 0) out.narrow(d, at, n).copy_(*t);
    at += n;
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  WICK_CHECK(!tensors.empty(), "stack: expects at least one tensor");
  int64_t d = wrap_dim("stack", dim, tensors[0].dim() + 1);
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    WICK_CHECK(tensors[i].shape() == tensors[0].shape(), "stack: tensor ", i, " has shape ",
               shape_str(tensors[i].shape()), " but tensor 0 has ", shape_str(tensors[0].shape()));
    parts.push_back(tensors[i].unsqueeze(d));
  }
  return cat(parts, d);
}

}  // namespace wick
