// Elementwise entry points: argument checks, PyTorch's type promotion, broadcasting, the
// output's layout, and the in-place rules; the math lives in the unary/binary/where kernels.
#include <wick/tensor/elementwise.h>
#include <wick/tensor/dispatch.h>
#include <wick/tensor/factories.h>

#include <algorithm>
#include <limits>

namespace wick {

namespace {

// --- type promotion (torch.result_type) ---------------------------------------------------

// Operands count in three groups of falling priority: tensors with dims, 0-d tensors, and
// plain numbers. A lower group only matters when its category (bool < integer < floating)
// is higher than everything above it.
struct Promotion {
  std::optional<DType> dimensioned, zero_dim, number;

  void add(const Tensor& t) { merge(t.dim() > 0 ? dimensioned : zero_dim, t.dtype()); }
  // A float number counts as the default float type, an integer as int64.
  void add(const Scalar& s) { merge(number, s.is_floating() ? kDefaultFloat : s.natural_dtype()); }

  DType result() const {
    std::optional<DType> lower = combine(zero_dim, number);
    return *combine(dimensioned, lower);
  }

 private:
  static void merge(std::optional<DType>& slot, DType t) { slot = slot ? promote_types(*slot, t) : t; }
  static std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
    if (!higher) return lower;
    if (!lower || is_floating(*higher)) return higher;
    if (*higher == DType::Bool || is_floating(*lower)) return promote_types(*higher, *lower);
    return higher;  // both integers: the higher group's type wins
  }
};

// --- shared checks --------------------------------------------------------------------------

void check_defined(const char* op, const Tensor& t) { WICK_CHECK(t.defined(), op, ": the tensor is undefined"); }

// The device the op runs on. A 0-d CPU tensor may join tensors on another device (it is
// moved there), as in PyTorch; otherwise all devices must match.
Device common_device(const char* op, std::initializer_list<const Tensor*> ts) {
  const Tensor* first = nullptr;
  for (const Tensor* t : ts)
    if (!(t->dim() == 0 && t->device().is_cpu())) {
      first = t;
      break;
    }
  if (!first) return Device::cpu();
  for (const Tensor* t : ts) {
    if (t->dim() == 0 && t->device().is_cpu()) continue;
    WICK_CHECK(t->device() == first->device(), op, ": expected all tensors on the same device, got ", first->device(),
               " and ", t->device());
  }
  return first->device();
}

// `t` converted to dtype and device, and expanded (stride 0, no copy) to `shape`.
Tensor prepare(const Tensor& t, DType dtype, Device device, const Shape& shape) {
  return t.to(Options(dtype, device)).expand(shape);
}

// The same, without copying t (its storage's reference count is an atomic that every copy
// touches twice) when it already has the dtype, device and shape: t itself, else the
// converted view, kept in `holder`.
const Tensor& prepared(const Tensor& t, DType dtype, Device device, const Shape& shape, Tensor& holder) {
  if (t.dtype() == dtype && t.device() == device && t.shape() == shape) return t;
  holder = prepare(t, dtype, device, shape);
  return holder;
}

// Strides for a new tensor of t's shape whose dims lie in memory in the same order as t's,
// when t is dense (a permutation of a contiguous tensor, as after transpose); otherwise
// row-major. Outputs that follow their input's layout let transposed inputs be walked
// contiguously, as PyTorch does.
Shape strides_like(const Tensor& t) {
  const int64_t nd = t.dim();
  Shape order;
  for (int64_t d = 0; d < nd; ++d)
    if (t.shape()[d] != 1) order.push_back(d);
  // Dims by falling stride, ties in dim order: an insertion sort (stable, and without the
  // buffer std::stable_sort allocates, for a handful of dims).
  for (size_t i = 1; i < order.size(); ++i)
    for (size_t j = i; j > 0 && t.strides()[order[j - 1]] < t.strides()[order[j]]; --j)
      std::swap(order[j - 1], order[j]);
  Shape strides = contiguous_strides(t.shape());
  int64_t expected = 1;
  for (size_t i = order.size(); i-- > 0;) {
    if (t.strides()[order[i]] != expected) return strides;
    expected *= t.shape()[order[i]];
  }
  for (int64_t d = 0; d < nd; ++d)
    if (t.shape()[d] != 1) strides[d] = t.strides()[d];
  return strides;
}

// A new output of `shape` laid out like the first input that already has that shape.
Tensor empty_output(const Shape& shape, const Options& o, std::initializer_list<const Tensor*> like) {
  Tensor out = empty(shape, o);
  if (out.numel() <= 1) return out;
  for (const Tensor* t : like) {
    if (t->shape() != shape) continue;
    Shape st = strides_like(*t);
    return st == out.strides() ? out : out.as_strided(shape, st, 0);
  }
  return out;
}

// An in-place op's other operand must broadcast to self's shape: self is never resized.
void check_broadcasts_to_self(const char* op, const Tensor& self, const Tensor& other) {
  Shape shape = broadcast_shapes(op, self.shape(), other.shape());
  WICK_CHECK(shape == self.shape(), op, ": other of shape ", shape_str(other.shape()),
             " does not broadcast to self's shape ", shape_str(self.shape()), " (an in-place op cannot resize self)");
}

// PyTorch's can_cast: no floating -> integer, nothing but bool -> bool.
bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

// --- binary ---------------------------------------------------------------------------------

bool is_bool_output(BinaryOp op) { return binary_op_is_comparison(op); }

// The dtype the kernel computes in, given the promoted dtype of the operands.
DType compute_dtype(BinaryOp op, DType common) {
  if (op == BinaryOp::LogicalAnd || op == BinaryOp::LogicalOr) return DType::Bool;
  if (binary_op_is_floating(op) && !is_floating(common)) return kDefaultFloat;
  return common;
}

void check_binary_dtype(BinaryOp op, DType compute) {
  const char* name = binary_op_name(op);
  WICK_CHECK(!(binary_op_is_bitwise(op) && is_floating(compute)), name, ": not supported for ", dtype_name(compute),
             " tensors (integer or bool only)");
  WICK_CHECK(!(binary_op_is_shift(op) && (is_floating(compute) || compute == DType::Bool)), name,
             ": not supported for ", dtype_name(compute), " tensors (integer only)");
  if (compute != DType::Bool) return;
  WICK_CHECK(op != BinaryOp::Sub, name, ": subtraction of bool tensors is not supported (use logical_xor or ne)");
  WICK_CHECK(op != BinaryOp::Pow && op != BinaryOp::Remainder && op != BinaryOp::FloorDivide && op != BinaryOp::Fmod,
             name, ": not supported for bool tensors");
}

// The binary op on a and b (either may be a 0-d tensor made from a number), computed in
// the dtype that `common` (their promoted dtype) implies for the op.
Tensor binary_impl(BinaryOp op, const Tensor& a, const Tensor& b, DType common) {
  const char* name = binary_op_name(op);
  check_defined(name, a);
  check_defined(name, b);
  const Device dev = common_device(name, {&a, &b});
  const DType compute = compute_dtype(op, common);
  check_binary_dtype(op, compute);
  const Shape shape = broadcast_shapes(name, a.shape(), b.shape());
  Tensor out = empty_output(shape, Options(is_bool_output(op) ? DType::Bool : compute, dev), {&a, &b});
  if (out.numel() == 0) return out;
  Tensor ha, hb;
  kernel_for(&KernelTable::binary, name, dev)(op, out, prepared(a, compute, dev, shape, ha),
                                              prepared(b, compute, dev, shape, hb));
  return out;
}

// PyTorch refuses a bool operand of a subtraction even when the other promotes it.
void check_no_bool_subtraction(BinaryOp op, bool a_is_bool, bool b_is_bool) {
  WICK_CHECK(op != BinaryOp::Sub || !(a_is_bool || b_is_bool), binary_op_name(op),
             ": subtraction with a bool operand is not supported (to invert a mask use logical_not)");
}

Tensor binary_tt(BinaryOp op, const Tensor& a, const Tensor& b) {
  check_defined(binary_op_name(op), a);
  check_defined(binary_op_name(op), b);
  check_no_bool_subtraction(op, a.dtype() == DType::Bool, b.dtype() == DType::Bool);
  return binary_impl(op, a, b, result_type(a, b));
}

// A number becomes a 0-d tensor of the compute dtype on the tensor's device.
Tensor wrap_number(const Scalar& s, DType dtype, Device device) { return scalar_tensor(s, Options(dtype, device)); }

// float16 and bfloat16 compute in float32 ("opmath", as PyTorch): a number is not rounded to
// 16 bits first (float16 * -92330.0 is finite; x / 2.2e-8 is not x / 0).
bool is_16_bit_float(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

Tensor binary_ts(BinaryOp op, const Tensor& t, const Scalar& s, bool number_first = false) {
  check_defined(binary_op_name(op), t);
  check_no_bool_subtraction(op, t.dtype() == DType::Bool, s.is_bool());
  const DType common = result_type(t, s);
  const DType compute = compute_dtype(op, common);
  if (is_16_bit_float(compute)) {
    const Tensor n = wrap_number(s, DType::Float32, t.device());
    Tensor wide = number_first ? binary_impl(op, n, t, DType::Float32) : binary_impl(op, t, n, DType::Float32);
    return is_bool_output(op) ? wide : wide.to(compute);
  }
  const Tensor n = wrap_number(s, compute, t.device());
  return number_first ? binary_impl(op, n, t, common) : binary_impl(op, t, n, common);
}

void check_integer_pow_exponent(const Tensor& base, const Scalar& exponent) {
  WICK_CHECK(!(is_integral(base.dtype(), true) && !exponent.is_floating() && exponent.to_int() < 0),
             "pow: ", "integers to negative integer powers are not allowed (base ", dtype_name(base.dtype()),
             ", exponent ", exponent.to_int(), ")");
}

// self = op(self, other) in place; other is a tensor or a 0-d tensor made from a number.
Tensor& binary_inplace(const char* opname, BinaryOp op, Tensor& self, const Tensor& other, DType common) {
  check_defined(opname, self);
  check_defined(opname, other);
  const DType compute = compute_dtype(op, common);
  WICK_CHECK(can_cast(compute, self.dtype()), opname, ": result type ", dtype_name(compute),
             " can't be cast to the desired output type ", dtype_name(self.dtype()));
  check_binary_dtype(op, compute);
  const Device dev = common_device(opname, {&self, &other});
  WICK_CHECK(self.device() == dev, opname, ": self is on ", self.device(), " but other is on ", dev);
  check_broadcasts_to_self(opname, self, other);
  check_writable(opname, self);
  if (self.numel() == 0) return self;
  if (compute != self.dtype()) {
    // The kernel computes and writes one dtype, so compute out of place, then convert.
    self.copy_(binary_impl(op, self, other, common));
    return self;
  }
  Tensor b = unaliased_input(prepare(other, compute, dev, self.shape()), self);
  kernel_for(&KernelTable::binary, binary_op_name(op), dev)(op, self, self, b);
  return self;
}

Tensor& binary_inplace_tt(const char* opname, BinaryOp op, Tensor& self, const Tensor& other) {
  check_defined(opname, self);
  check_defined(opname, other);
  check_no_bool_subtraction(op, self.dtype() == DType::Bool, other.dtype() == DType::Bool);
  return binary_inplace(opname, op, self, other, result_type(self, other));
}

Tensor& binary_inplace_ts(const char* opname, BinaryOp op, Tensor& self, const Scalar& s) {
  check_defined(opname, self);
  check_no_bool_subtraction(op, self.dtype() == DType::Bool, s.is_bool());
  DType common = result_type(self, s);
  if (is_16_bit_float(compute_dtype(op, common))) common = DType::Float32;  // opmath, then rounded into self
  return binary_inplace(opname, op, self, wrap_number(s, compute_dtype(op, common), self.device()), common);
}

// --- unary ----------------------------------------------------------------------------------

Tensor unary_impl(UnaryOp op, const Tensor& x, const UnaryParams& p = {}) {
  const char* name = unary_op_name(op);
  check_defined(name, x);
  DType dtype = x.dtype();
  // As PyTorch: these have no integer or bool kernels (exp and the like promote instead).
  const bool floating_only = op == UnaryOp::GeluErf || op == UnaryOp::GeluTanh || op == UnaryOp::Silu ||
                             op == UnaryOp::Softplus || op == UnaryOp::LeakyRelu;
  WICK_CHECK(!floating_only || is_floating(dtype), name, ": not supported for ", dtype_name(dtype),
             " tensors (floating only)");
  WICK_CHECK(!(op == UnaryOp::BitwiseNot && is_floating(dtype)), name, ": not supported for ", dtype_name(dtype),
             " tensors (integer or bool only)");
  WICK_CHECK(!(dtype == DType::Bool && (op == UnaryOp::Abs || op == UnaryOp::Floor || op == UnaryOp::Ceil ||
                                        op == UnaryOp::Round || op == UnaryOp::Trunc || op == UnaryOp::Relu)),
             name, ": not supported for bool tensors");
  if (dtype == DType::Bool && op == UnaryOp::Square) dtype = DType::Int64;  // True * True = 1, as PyTorch
  if (unary_op_is_floating(op) && !is_floating(dtype)) dtype = kDefaultFloat;
  WICK_CHECK(!(dtype == DType::Bool && op == UnaryOp::Neg), name,
             ": negation of a bool tensor is not supported (use logical_not)");
  WICK_CHECK(!(dtype == DType::Bool && op == UnaryOp::Clamp), name, ": not supported for bool tensors");
  Tensor out = empty_output(x.shape(), Options(op == UnaryOp::LogicalNot ? DType::Bool : dtype, x.device()), {&x});
  if (out.numel() == 0) return out;
  kernel_for(&KernelTable::unary, name, x.device())(op, out, x.to(dtype), p);
  return out;
}

UnaryParams clamp_params(const char* op, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  WICK_CHECK(lo || hi, op, ": at least one of min and max must be given");
  const double inf = std::numeric_limits<double>::infinity();
  return UnaryParams{lo ? lo->to_double() : -inf, hi ? hi->to_double() : inf};
}

// clamp's result dtype: a floating bound makes an integer tensor floating (PyTorch's
// promotion with the bounds as numbers).
DType clamp_dtype(const Tensor& x, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  const bool float_bound = (lo && lo->is_floating()) || (hi && hi->is_floating());
  return float_bound && !x.is_floating_point() && x.dtype() != DType::Bool ? kDefaultFloat : x.dtype();
}

}  // namespace

// --- promotion ------------------------------------------------------------------------------

DType result_type(const Tensor& a, const Tensor& b) {
  Promotion p;
  p.add(a);
  p.add(b);
  return p.result();
}

DType result_type(const Tensor& a, const Scalar& b) {
  Promotion p;
  p.add(a);
  p.add(b);
  return p.result();
}

// --- binary ops -----------------------------------------------------------------------------

// The table's rows (wick/tensor/op_kinds.h): the kernel op of the row, with a tensor or a number.
#include "wick/tensor/generated/binary_ops_defs.inc"

Tensor bitwise_left_shift(const Scalar& a, const Tensor& b) {
  return binary_ts(BinaryOp::LeftShift, b, a, /*number_first=*/true);
}
Tensor bitwise_right_shift(const Scalar& a, const Tensor& b) {
  return binary_ts(BinaryOp::RightShift, b, a, /*number_first=*/true);
}
Tensor& bitwise_left_shift_(Tensor& self, const Tensor& other) {
  return binary_inplace_tt("bitwise_left_shift_", BinaryOp::LeftShift, self, other);
}
Tensor& bitwise_left_shift_(Tensor& self, const Scalar& other) {
  return binary_inplace_ts("bitwise_left_shift_", BinaryOp::LeftShift, self, other);
}
Tensor& bitwise_right_shift_(Tensor& self, const Tensor& other) {
  return binary_inplace_tt("bitwise_right_shift_", BinaryOp::RightShift, self, other);
}
Tensor& bitwise_right_shift_(Tensor& self, const Scalar& other) {
  return binary_inplace_ts("bitwise_right_shift_", BinaryOp::RightShift, self, other);
}
Tensor pow(const Tensor& a, const Scalar& b) {
  check_defined("pow", a);
  check_integer_pow_exponent(a, b);
  return binary_ts(BinaryOp::Pow, a, b);
}
Tensor pow(const Scalar& a, const Tensor& b) { return binary_ts(BinaryOp::Pow, b, a, /*number_first=*/true); }

Tensor isnan(const Tensor& x) {
  check_defined("isnan", x);
  return x.is_floating_point() ? ne(x, x) : zeros(x.shape(), Options(DType::Bool, x.device()));
}
Tensor isinf(const Tensor& x) {
  check_defined("isinf", x);
  return x.is_floating_point() ? eq(abs(x), Scalar(std::numeric_limits<double>::infinity()))
                               : zeros(x.shape(), Options(DType::Bool, x.device()));
}
Tensor isfinite(const Tensor& x) {
  check_defined("isfinite", x);
  // x - x is 0 for finite x and NaN for NaN and for +-inf.
  return x.is_floating_point() ? eq(sub(x, x), Scalar(0)) : ones(x.shape(), Options(DType::Bool, x.device()));
}

Tensor operator+(const Scalar& a, const Tensor& b) { return binary_ts(BinaryOp::Add, b, a, /*number_first=*/true); }
Tensor operator-(const Scalar& a, const Tensor& b) { return binary_ts(BinaryOp::Sub, b, a, /*number_first=*/true); }
Tensor operator*(const Scalar& a, const Tensor& b) { return binary_ts(BinaryOp::Mul, b, a, /*number_first=*/true); }
Tensor operator/(const Scalar& a, const Tensor& b) { return binary_ts(BinaryOp::Div, b, a, /*number_first=*/true); }

// --- where ----------------------------------------------------------------------------------

namespace {

Tensor where_impl(const Tensor& cond, const Tensor& a, const Tensor& b, DType dtype) {
  check_defined("where", cond);
  WICK_CHECK(cond.dtype() == DType::Bool, "where: the condition must be a bool tensor, not ", dtype_name(cond.dtype()));
  const Device dev = common_device("where", {&cond, &a, &b});
  const Shape shape = broadcast_shapes("where", broadcast_shapes("where", cond.shape(), a.shape()), b.shape());
  Tensor out = empty_output(shape, Options(dtype, dev), {&a, &b});
  if (out.numel() == 0) return out;
  Tensor hc, ha, hb;
  kernel_for(&KernelTable::where, "where", dev)(out, prepared(cond, DType::Bool, dev, shape, hc),
                                                prepared(a, dtype, dev, shape, ha), prepared(b, dtype, dev, shape, hb));
  return out;
}

}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_defined("where", a);
  check_defined("where", b);
  return where_impl(cond, a, b, result_type(a, b));
}

Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) {
  check_defined("where", a);
  const DType dtype = result_type(a, b);
  return where_impl(cond, a, wrap_number(b, dtype, a.device()), dtype);
}

Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) {
  check_defined("where", b);
  const DType dtype = result_type(b, a);
  return where_impl(cond, wrap_number(a, dtype, b.device()), b, dtype);
}

// --- unary ops ------------------------------------------------------------------------------

// The table's Formula, Node and TensorOnly rows (wick/tensor/op_kinds.h): the kernel op of the row.
#include "wick/tensor/generated/unary_ops_defs.inc"

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return unary_impl(UnaryOp::LeakyRelu, x, UnaryParams{negative_slope, 0.0});
}
Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  check_defined("clamp", x);
  const DType dtype = clamp_dtype(x, lo, hi);
  return unary_impl(UnaryOp::Clamp, dtype == x.dtype() ? x : x.to(dtype), clamp_params("clamp", lo, hi));
}

Tensor gelu(const Tensor& x, GeluApproximation approximate) {
  return unary_impl(approximate == GeluApproximation::Tanh ? UnaryOp::GeluTanh : UnaryOp::GeluErf, x);
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
  WICK_CHECK(beta != 0.0, "softplus: beta must be nonzero");
  return unary_impl(UnaryOp::Softplus, x, UnaryParams{beta, threshold});
}

// Accepts a *Grad op or the op it differentiates (Sigmoid means SigmoidGrad).
Tensor unary_grad(UnaryOp op, const Tensor& x) {
  switch (op) {
    case UnaryOp::Sigmoid: op = UnaryOp::SigmoidGrad; break;
    case UnaryOp::Tanh: op = UnaryOp::TanhGrad; break;
    case UnaryOp::GeluTanh: op = UnaryOp::GeluTanhGrad; break;
    case UnaryOp::GeluErf: op = UnaryOp::GeluErfGrad; break;
    case UnaryOp::Silu: op = UnaryOp::SiluGrad; break;
    default: WICK_CHECK(op >= UnaryOp::SigmoidGrad, "unary_grad: no derivative op for ", unary_op_name(op));
  }
  return unary_impl(op, x);
}

// --- in place -------------------------------------------------------------------------------

Tensor& Tensor::add_(const Tensor& o) { return binary_inplace_tt("add_", BinaryOp::Add, *this, o); }
Tensor& Tensor::add_(const Scalar& o) { return binary_inplace_ts("add_", BinaryOp::Add, *this, o); }
Tensor& Tensor::sub_(const Tensor& o) { return binary_inplace_tt("sub_", BinaryOp::Sub, *this, o); }
Tensor& Tensor::sub_(const Scalar& o) { return binary_inplace_ts("sub_", BinaryOp::Sub, *this, o); }
Tensor& Tensor::mul_(const Tensor& o) { return binary_inplace_tt("mul_", BinaryOp::Mul, *this, o); }
Tensor& Tensor::mul_(const Scalar& o) { return binary_inplace_ts("mul_", BinaryOp::Mul, *this, o); }
Tensor& Tensor::div_(const Tensor& o) { return binary_inplace_tt("div_", BinaryOp::Div, *this, o); }
Tensor& Tensor::div_(const Scalar& o) { return binary_inplace_ts("div_", BinaryOp::Div, *this, o); }

Tensor& Tensor::clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi) {
  check_defined("clamp_", *this);
  WICK_CHECK(dtype() != DType::Bool, "clamp_: not supported for bool tensors");
  WICK_CHECK(clamp_dtype(*this, lo, hi) == dtype(), "clamp_: result type ", dtype_name(clamp_dtype(*this, lo, hi)),
             " (a floating bound) can't be cast to the desired output type ", dtype_name(dtype()));
  const UnaryParams p = clamp_params("clamp_", lo, hi);
  check_writable("clamp_", *this);
  if (numel() > 0) kernel_for(&KernelTable::unary, "clamp_", device())(UnaryOp::Clamp, *this, *this, p);
  return *this;
}

Tensor Tensor::abs() const { return wick::abs(*this); }
Tensor Tensor::exp() const { return wick::exp(*this); }
Tensor Tensor::log() const { return wick::log(*this); }
Tensor Tensor::sqrt() const { return wick::sqrt(*this); }
Tensor Tensor::neg() const { return wick::neg(*this); }

}  // namespace wick
