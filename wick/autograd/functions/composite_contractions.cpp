// The contraction composites of composites.h: tensordot and einsum, templates for Tensor
// and Variable over permute / reshape / sum / diagonal / bmm, so their gradients are those
// primitives' (checked in the gradcheck table).
#include <wick/autograd/composites.h>

#include <algorithm>
#include <string>
#include <vector>

#include <wick/autograd/autocast.h>
#include <wick/autograd/functions/composite_support.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/linalg.h>
#include <wick/tensor/reduce.h>
#include <wick/tensor/shape.h>

namespace wick {

namespace {

using namespace composite_support;

template <class T>
T tensordot_of(const T& a, const T& b, const Dims& dims_a, const Dims& dims_b) {
  const Tensor &va = values(a), &vb = values(b);
  WICK_CHECK(dims_a.size() == dims_b.size(), "tensordot: ", dims_a.size(), " dims of a against ", dims_b.size(),
             " dims of b");
  std::vector<bool> ca(static_cast<size_t>(va.dim()), false), cb(static_cast<size_t>(vb.dim()), false);
  std::vector<int64_t> pa, pb;
  int64_t inner = 1;
  for (size_t k = 0; k < dims_a.size(); ++k) {
    const int64_t da = wrap_dim("tensordot", dims_a[k], va.dim()), db = wrap_dim("tensordot", dims_b[k], vb.dim());
    WICK_CHECK(!ca[da] && !cb[db], "tensordot: a dim appears twice in the contracted dims");
    WICK_CHECK(va.size(da) == vb.size(db), "tensordot: dim ", da, " of a ", shape_str(va.shape()), " and dim ", db,
               " of b ", shape_str(vb.shape()), " differ in size (", va.size(da), " != ", vb.size(db), ")");
    ca[da] = cb[db] = true;
    pa.push_back(da);
    pb.push_back(db);
    inner *= va.size(da);
  }
  std::vector<int64_t> fa, fb;
  Shape out;
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < va.dim(); ++d)
    if (!ca[d]) fa.push_back(d), out.push_back(va.size(d)), rows *= va.size(d);
  for (int64_t d = 0; d < vb.dim(); ++d)
    if (!cb[d]) fb.push_back(d), out.push_back(vb.size(d)), cols *= vb.size(d);
  std::vector<int64_t> order_a = fa, order_b = pb;
  order_a.insert(order_a.end(), pa.begin(), pa.end());
  order_b.insert(order_b.end(), fb.begin(), fb.end());
  T m = mm(reshape(permute(a, order_a), {rows, inner}), reshape(permute(b, order_b), {inner, cols}));
  return reshape(m, out);
}

template <class T>
T tensordot_n(const T& a, const T& b, int64_t n) {
  const Tensor &va = values(a), &vb = values(b);
  WICK_CHECK(n >= 0 && n <= va.dim() && n <= vb.dim(), "tensordot: cannot contract ", n, " dims of shapes ",
             shape_str(va.shape()), " and ", shape_str(vb.shape()));
  Dims da, db;
  for (int64_t k = 0; k < n; ++k) {
    da.push_back(va.dim() - n + k);
    db.push_back(k);
  }
  return tensordot_of(a, b, da, db);
}

// An operand during einsum: its value and one label per dim (0-51: letters, 52+: ellipsis).
template <class T>
struct Labeled {
  T x;
  std::vector<int> labels;
};

constexpr int kEllipsisBase = 52;

int letter_label(const std::string& eq, char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  detail::throw_error("einsum: '", c, "' in \"", eq, "\" is not a letter, ',', '->' or '...'");
}

// The labels of one term; "..." becomes `ellipsis_dims` labels aligned from the right.
std::vector<int> parse_term(const std::string& eq, const std::string& term, int64_t rank, int64_t* ellipsis_dims,
                            int64_t max_ellipsis) {
  std::vector<int> labels;
  int64_t letters = 0;
  bool has_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      WICK_CHECK(!has_ellipsis, "einsum: more than one '...' in a term of \"", eq, "\"");
      has_ellipsis = true;
      i += 2;
    } else {
      letter_label(eq, term[i]);
      ++letters;
    }
  }
  const int64_t e = has_ellipsis ? (rank >= 0 ? rank - letters : max_ellipsis) : 0;
  if (rank >= 0)
    WICK_CHECK(e >= 0 && (has_ellipsis || letters == rank), "einsum: the term \"", term, "\" of \"", eq, "\" has ",
               letters, " letters", has_ellipsis ? " and '...'" : "", " for an operand with ", rank, " dims");
  if (ellipsis_dims) *ellipsis_dims = e;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      for (int64_t k = 0; k < e; ++k) labels.push_back(kEllipsisBase + static_cast<int>(max_ellipsis - e + k));
      i += 2;
    } else {
      labels.push_back(letter_label(eq, term[i]));
    }
  }
  return labels;
}

// Takes the diagonal of every label repeated within one operand.
template <class T>
void merge_repeated(Labeled<T>& op) {
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < op.labels.size() && !again; ++i)
      for (size_t j = i + 1; j < op.labels.size() && !again; ++j)
        if (op.labels[i] == op.labels[j]) {
          const int label = op.labels[i];
          WICK_CHECK(values(op.x).size(i) == values(op.x).size(j), "einsum: a repeated label spans dims of sizes ",
                     values(op.x).size(i), " and ", values(op.x).size(j));
          op.x = diagonal(op.x, 0, static_cast<int64_t>(i), static_cast<int64_t>(j));
          op.labels.erase(op.labels.begin() + static_cast<std::ptrdiff_t>(j));
          op.labels.erase(op.labels.begin() + static_cast<std::ptrdiff_t>(i));
          op.labels.push_back(label);
          again = true;
        }
  }
}

// Sums out the labels of `op` that are not in `keep`.
template <class T>
void sum_unused(Labeled<T>& op, const std::vector<bool>& keep) {
  Dims dims;
  std::vector<int> rest;
  for (size_t i = 0; i < op.labels.size(); ++i) {
    if (keep[op.labels[i]]) rest.push_back(op.labels[i]);
    else dims.push_back(static_cast<int64_t>(i));
  }
  if (dims.empty()) return;
  op.x = sum(op.x, dims, false);
  op.labels = rest;
}

// a and b (each label once) to one operand: labels kept later that both have are batch dims,
// labels in both and not kept are contracted, the others stay; one bmm.
template <class T>
Labeled<T> contract(const Labeled<T>& a, const Labeled<T>& b, const std::vector<bool>& keep) {
  auto pos = [](const std::vector<int>& ls, int l) {
    auto it = std::find(ls.begin(), ls.end(), l);
    return it == ls.end() ? int64_t{-1} : static_cast<int64_t>(it - ls.begin());
  };
  const Tensor &va = values(a.x), &vb = values(b.x);
  std::vector<int> batch, left, right, inner;
  for (int l : a.labels) {
    if (pos(b.labels, l) < 0) left.push_back(l);
    else if (keep[l]) batch.push_back(l);
    else inner.push_back(l);
  }
  for (int l : b.labels)
    if (pos(a.labels, l) < 0) right.push_back(l);
  // Sizes: a size-1 dim broadcasts against the other operand's.
  auto size_in = [&](const Tensor& v, const std::vector<int>& ls, int l) {
    const int64_t p = pos(ls, l);
    return p < 0 ? int64_t{1} : v.size(p);
  };
  auto joint = [&](int l) {
    const int64_t sa = size_in(va, a.labels, l), sb = size_in(vb, b.labels, l);
    WICK_CHECK(sa == sb || sa == 1 || sb == 1, "einsum: a label has sizes ", sa, " and ", sb,
               " in two operands (shapes ", shape_str(va.shape()), " and ", shape_str(vb.shape()), ")");
    return sa == 1 ? sb : sa;  // a size-1 dim takes the other's size, 0 included
  };
  auto arrange = [&](const T& x, const std::vector<int>& ls, const std::vector<std::vector<int>>& groups) {
    std::vector<int64_t> order;
    Shape expanded, folded;
    for (const auto& g : groups) {
      int64_t n = 1;
      for (int l : g) {
        order.push_back(pos(ls, l));
        expanded.push_back(joint(l));
        n *= expanded.back();
      }
      folded.push_back(n);
    }
    return reshape(expand(permute(x, order), expanded), folded);
  };
  const T am = arrange(a.x, a.labels, {batch, left, inner});
  const T bm = arrange(b.x, b.labels, {batch, inner, right});
  Shape out;
  std::vector<int> labels;
  for (const auto* g : {&batch, &left, &right})
    for (int l : *g) {
      out.push_back(joint(l));
      labels.push_back(l);
    }
  return {reshape(bmm(am, bm), out), labels};
}

template <class T>
T einsum_of(const std::string& equation, const std::vector<T>& operands) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq.push_back(c);
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  WICK_CHECK(terms.size() == operands.size(), "einsum: \"", equation, "\" has ", terms.size(), " terms for ",
             operands.size(), " operands");
  // The ellipsis spans the most dims any operand gives it.
  int64_t max_ellipsis = 0;
  std::vector<int64_t> ranks;
  for (size_t k = 0; k < terms.size(); ++k) {
    int64_t e = 0;
    parse_term(eq, terms[k], values(operands[k]).dim(), &e, 64);
    max_ellipsis = std::max(max_ellipsis, e);
  }
  std::vector<Labeled<T>> ops;
  std::array<int, kEllipsisBase + 64> count{};
  for (size_t k = 0; k < terms.size(); ++k) {
    ops.push_back({operands[k], parse_term(eq, terms[k], values(operands[k]).dim(), nullptr, max_ellipsis)});
    for (int l : ops.back().labels) ++count[l];
  }
  std::vector<int> output;
  if (arrow != std::string::npos) {
    output = parse_term(eq, eq.substr(arrow + 2), -1, nullptr, max_ellipsis);
    for (size_t i = 0; i < output.size(); ++i) {
      WICK_CHECK(count[output[i]] > 0, "einsum: output label ", i, " of \"", equation, "\" is in no input");
      WICK_CHECK(std::count(output.begin(), output.end(), output[i]) == 1,
                 "einsum: a label repeats in the output of \"", equation, "\"");
    }
  } else {
    for (int l = kEllipsisBase; l < kEllipsisBase + max_ellipsis; ++l) output.push_back(l);
    for (int l = 0; l < kEllipsisBase; ++l)
      if (count[l] == 1) output.push_back(l);
  }
  for (auto& op : ops) merge_repeated(op);
  // keep[l]: wanted by the output or by an operand not yet contracted.
  auto keep_after = [&](size_t k) {
    std::vector<bool> keep(kEllipsisBase + 64, false);
    for (int l : output) keep[l] = true;
    for (size_t j = k + 1; j < ops.size(); ++j)
      for (int l : ops[j].labels) keep[l] = true;
    return keep;
  };
  Labeled<T> acc = ops[0];
  for (size_t k = 1; k < ops.size(); ++k) {
    std::vector<bool> keep = keep_after(k);
    for (int l : ops[k].labels) keep[l] = true;
    sum_unused(acc, keep);
    std::vector<bool> keep_b = keep_after(k);
    for (int l : acc.labels) keep_b[l] = true;
    sum_unused(ops[k], keep_b);
    acc = contract(acc, ops[k], keep_after(k));
  }
  sum_unused(acc, keep_after(ops.size()));
  std::vector<int64_t> order;
  for (int l : output) {
    auto it = std::find(acc.labels.begin(), acc.labels.end(), l);
    WICK_CHECK(it != acc.labels.end(), "einsum: output label missing after contraction in \"", equation, "\"");
    order.push_back(static_cast<int64_t>(it - acc.labels.begin()));
  }
  return order.empty() ? acc.x : permute(acc.x, order);
}

}  // namespace

#include "wick/autograd/generated/composite_contraction_ops_defs.inc"

}  // namespace wick
