// Entry points of the sort family: argument checks and output shapes, the sort kernel
// (KernelTable::sort), and the selections composed from the sorted values and indices.
#include <wick/tensor/dtype_limits.h>
#include <wick/tensor/dispatch.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/indexing.h>
#include <wick/tensor/join.h>
#include <wick/tensor/reduce.h>
#include <wick/tensor/sort.h>

#include <algorithm>

namespace wick {

namespace {

// x sorted along dim d (x at least 1-d): the kernel sorts rows of the last dim, so d is
// swapped with it around the call.
std::pair<Tensor, Tensor> sort_along(const char* op, const Tensor& x, int64_t d, bool descending) {
  const int64_t last = x.dim() - 1;
  Tensor in = x.transpose(d, last).contiguous();
  Tensor values = empty(in.shape(), x.options());
  Tensor indices = empty(in.shape(), Options(DType::Int64, x.device()));
  if (in.numel() > 0) kernel_for(&KernelTable::sort, op, x.device())(values, indices, in, descending);
  if (d == last) return {values, indices};
  return {values.transpose(d, last).contiguous(), indices.transpose(d, last).contiguous()};
}

void check_not_bool(const char* op, const Tensor& x) {
  WICK_CHECK(x.dtype() != DType::Bool, op, ": not supported for bool tensors (got shape ", shape_str(x.shape()),
             "), as in PyTorch");
}

// An op that selects one element along a dim: the input as at least 1-d, the wrapped dim,
// its size (checked non-empty) and the shape of the result.
struct Selection {
  Tensor in;
  int64_t d = 0, n = 1;
  Shape out_shape;
};

Selection plan_selection(const char* op, const Tensor& x, int64_t dim, bool keepdim) {
  WICK_CHECK(x.defined(), op, ": undefined tensor");
  Selection s;
  s.d = wrap_dim(op, dim, x.dim());
  s.in = x.dim() == 0 ? x.reshape({1}) : x;
  s.n = s.in.size(s.d);
  WICK_CHECK(s.n > 0, op, ": cannot select along dim ", dim, " of size 0 of a tensor of shape ", shape_str(x.shape()));
  if (x.dim() > 0) {
    s.out_shape = x.shape();
    if (keepdim) s.out_shape[s.d] = 1;
    else s.out_shape.erase(s.out_shape.begin() + s.d);
  }
  return s;
}

// The sorted values and indices at `pos` (int64, the sorted shape with dim d of size 1).
std::pair<Tensor, Tensor> pick(const std::pair<Tensor, Tensor>& sorted, const Selection& s, const Tensor& pos) {
  return {gather(sorted.first, s.d, pos).reshape(s.out_shape), gather(sorted.second, s.d, pos).reshape(s.out_shape)};
}

std::pair<Tensor, Tensor> median_along(const char* op, const Tensor& x, int64_t dim, bool keepdim, bool ignore_nan) {
  const Selection s = plan_selection(op, x, dim, keepdim);
  check_not_bool(op, x);
  const auto sorted = sort_along(op, s.in, s.d, false);
  Shape kept = s.in.shape();
  kept[s.d] = 1;
  const Options index_options(DType::Int64, x.device());
  Tensor pos = full(kept, (s.n - 1) / 2, index_options);
  if (x.is_floating_point()) {
    // NaNs sort last: the first of them is at n - nans, and the numbers before it.
    const Tensor nans = sum(isnan(sorted.first), {s.d}, /*keepdim=*/true);
    if (ignore_nan) pos = floor_divide(maximum((s.n - 1) - nans, 0), full({}, 2, index_options));
    else pos = where(gt(nans, 0), s.n - nans, pos);
  }
  return pick(sorted, s, pos);
}

// True where a new run of equal values starts along d (each NaN starts its own run).
Tensor run_starts(const Tensor& v, int64_t d) {
  const int64_t n = v.size(d);
  Tensor first = ones(v.narrow(d, 0, std::min<int64_t>(n, 1)).shape(), Options(DType::Bool, v.device()));
  if (n <= 1) return first;
  return cat({first, ne(v.narrow(d, 1, n - 1), v.narrow(d, 0, n - 1))}, d);
}

// The permutation that sorts the rows of m [n, c] lexicographically, stably: a stable sort
// by each column from the last to the first.
Tensor lexicographic_order(const Tensor& m) {
  Tensor perm = arange(0, m.size(0), 1, Options(DType::Int64, m.device()));
  for (int64_t c = m.size(1) - 1; c >= 0; --c) {
    const Tensor key = index_select(m.select(1, c), 0, perm);
    perm = index_select(perm, 0, sort_along("unique", key, 0, false).second);
  }
  return perm;
}

// unique and unique_consecutive: x as rows [n, c] (elements, or slices along dim), rows
// ordered (sorted, or as they are), and the first row of each run of equal rows kept.
UniqueResult unique_runs(const char* op, const Tensor& x, bool return_inverse, bool return_counts,
                         std::optional<int64_t> dim, bool sorted) {
  WICK_CHECK(x.defined(), op, ": undefined tensor");
  WICK_CHECK(!dim || x.dim() > 0, op, ": dim ", dim.value_or(0), " given for a 0-d tensor, which has no slices (as in PyTorch)");
  const Tensor in = x.dim() == 0 ? x.reshape({1}) : x;
  const int64_t d = dim ? wrap_dim(op, *dim, x.dim()) : 0;
  Tensor rows = x.reshape({x.numel(), 1});
  if (dim) {
    std::vector<int64_t> order{d};
    int64_t c = 1;
    for (int64_t k = 0; k < in.dim(); ++k) {
      if (k == d) continue;
      order.push_back(k);
      c *= in.size(k);
    }
    WICK_CHECK(c > 0 || in.size(d) == 0, op, ": the slices along dim ", *dim, " of a tensor of shape ",
               shape_str(x.shape()), " are empty, so they cannot be told apart (as in PyTorch)");
    // PyTorch takes an empty dim only when it is the tensor's one empty dim.
    WICK_CHECK(in.size(d) > 0 || std::count(in.shape().begin(), in.shape().end(), 0) == 1, op, ": dim ", *dim,
               " of a tensor of shape ", shape_str(x.shape()), " is one of several empty dims (as in PyTorch, refused)");
    rows = in.permute(order).reshape({in.size(d), c});
  }
  const int64_t n = rows.size(0);
  const Options index_options(DType::Int64, x.device());
  const Tensor perm = sorted ? lexicographic_order(rows) : arange(0, n, 1, index_options);
  const Tensor ordered = index_select(rows, 0, perm);
  Tensor starts = ones({std::min<int64_t>(n, 1)}, Options(DType::Bool, x.device()));
  if (n > 1) starts = cat({starts, any(ne(ordered.narrow(0, 1, n - 1), ordered.narrow(0, 0, n - 1)), {1})}, 0);
  const Tensor firsts = masked_select(perm, starts);
  UniqueResult r;
  r.values = dim ? index_select(in, d, firsts) : index_select(x.reshape({-1}), 0, firsts);
  if (!return_inverse && !return_counts) return r;
  const Tensor group = cumsum(starts, 0) - 1;
  if (return_inverse) {
    r.inverse = scatter(zeros({n}, index_options), 0, perm, group);
    if (!dim) r.inverse = r.inverse.reshape(x.shape());
  }
  if (return_counts) r.counts = scatter_add(zeros({firsts.size(0)}, index_options), 0, group, ones_like(group));
  return r;
}

}  // namespace

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
  WICK_CHECK(x.defined(), "sort: undefined tensor");
  const int64_t d = wrap_dim("sort", dim, x.dim());
  if (x.dim() > 0) return sort_along("sort", x, d, descending);
  auto [values, indices] = sort_along("sort", x.reshape({1}), 0, descending);
  return {values.view({}), indices.view({})};
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending) { return sort(x, dim, descending).second; }

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest) {
  WICK_CHECK(x.defined(), "topk: undefined tensor");
  check_not_bool("topk", x);
  const int64_t d = wrap_dim("topk", dim, x.dim());
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  WICK_CHECK(k >= 0 && k <= n, "topk: k = ", k, " is out of range for dim ", dim, " of size ", n,
             " of a tensor of shape ", shape_str(x.shape()), " (expected 0 <= k <= ", n, ")");
  auto [values, indices] = sort(x, d, largest);
  if (x.dim() == 0) return {values, indices};
  return {values.narrow(d, 0, k).contiguous(), indices.narrow(d, 0, k).contiguous()};
}

std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  const Selection s = plan_selection("kthvalue", x, dim, keepdim);
  if (x.dim() > 0) check_not_bool("kthvalue", x);  // PyTorch takes a 0-d bool (nothing to compare)
  WICK_CHECK(k >= 1 && k <= s.n, "kthvalue: k = ", k, " is out of range for dim ", dim, " of size ", s.n,
             " of a tensor of shape ", shape_str(x.shape()), " (expected 1 <= k <= ", s.n, ")");
  const auto sorted = sort_along("kthvalue", s.in, s.d, false);
  return {sorted.first.narrow(s.d, k - 1, 1).reshape(s.out_shape),
          sorted.second.narrow(s.d, k - 1, 1).reshape(s.out_shape)};
}

// The median of no elements is NaN, as PyTorch's, which fills NaN and converts it to the
// dtype: true for bool, else the integer type's lowest value (0 for uint8).
Tensor median_of_nothing(const Tensor& x) {
  const DType t = x.dtype();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double v = is_floating(t) ? nan : t == DType::Bool ? 1.0 : lowest_finite(t);
  return full({}, v, x.options());
}

Tensor median(const Tensor& x) {
  WICK_CHECK(x.defined(), "median: undefined tensor");
  if (x.numel() == 0) return median_of_nothing(x);
  return median_along("median", x.reshape({-1}), 0, false, false).first;
}

Tensor nanmedian(const Tensor& x) {
  WICK_CHECK(x.defined(), "nanmedian: undefined tensor");
  if (x.numel() == 0) return median_of_nothing(x);
  return median_along("nanmedian", x.reshape({-1}), 0, false, true).first;
}

std::pair<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim) {
  return median_along("median", x, dim, keepdim, false);
}

std::pair<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim) {
  return median_along("nanmedian", x, dim, keepdim, true);
}

// Runs of equal values in the sorted row, counted per run (scatter_add by run number); the
// first largest count is the smallest most frequent value, whose run ends at the running
// total of the counts up to it.
std::pair<Tensor, Tensor> mode(const Tensor& x, int64_t dim, bool keepdim) {
  const Selection s = plan_selection("mode", x, dim, keepdim);
  const auto sorted = sort_along("mode", s.in, s.d, false);
  const Tensor run = cumsum(run_starts(sorted.first, s.d), s.d) - 1;
  const Tensor counts = scatter_add(zeros_like(run), s.d, run, ones_like(run));
  const Tensor most = argmax(counts, s.d, /*keepdim=*/true);
  return pick(sorted, s, gather(cumsum(counts, s.d), s.d, most) - 1);
}

UniqueResult unique(const Tensor& x, bool return_inverse, bool return_counts, std::optional<int64_t> dim) {
  return unique_runs("unique", x, return_inverse, return_counts, dim, true);
}

UniqueResult unique_consecutive(const Tensor& x, bool return_inverse, bool return_counts,
                                std::optional<int64_t> dim) {
  return unique_runs("unique_consecutive", x, return_inverse, return_counts, dim, false);
}

}  // namespace wick
