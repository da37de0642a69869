#include "tests/support/reference.h"

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

namespace wick::test {

namespace {

// The storage bytes of t on the host.
std::vector<char> host_bytes(const Tensor& t) {
  const Storage& s = *t.storage();
  std::vector<char> bytes(s.nbytes());
  if (s.device().is_cpu()) {
    if (!bytes.empty()) std::memcpy(bytes.data(), s.data(), bytes.size());
    return bytes;
  }
  // Copy the whole storage as a flat uint8 tensor (contiguous, same device) to the host.
  Tensor flat(t.storage(), {static_cast<int64_t>(s.nbytes())}, {1}, 0, DType::UInt8);
  Tensor host = flat.cpu();
  if (!bytes.empty()) std::memcpy(bytes.data(), host.data_ptr(), bytes.size());
  return bytes;
}

double read_as_double(const char* p, DType t) {
  return visit_dtype(t, [&]<class T>() {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return static_cast<double>(static_cast<compute_t<T>>(v));
  });
}

}  // namespace

std::vector<double> values(const Tensor& t) {
  std::vector<char> bytes = host_bytes(t);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  if (t.numel() == 0) return out;
  const size_t es = t.element_size();
  std::vector<int64_t> idx(t.dim(), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t off = t.offset();
    for (int64_t d = 0; d < t.dim(); ++d) off += idx[d] * t.strides()[d];
    out.push_back(read_as_double(bytes.data() + off * es, t.dtype()));
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++idx[d] < t.shape()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

Tensor random(const Shape& shape, DType dtype, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  int64_t n = numel_of(shape);
  std::vector<double> v(static_cast<size_t>(n));
  if (is_floating(dtype)) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (auto& x : v) x = dist(rng);
  } else if (dtype == DType::Bool) {
    for (auto& x : v) x = static_cast<double>(rng() & 1);
  } else {
    double l = dtype == DType::UInt8 ? std::max(lo, 0.0) : lo;
    std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(std::ceil(l)), static_cast<int64_t>(std::floor(hi)));
    for (auto& x : v) x = static_cast<double>(dist(rng));
  }
  return tensor<double>(v, shape).to(dtype);
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Transposed: return "transposed";
    case Layout::Sliced: return "sliced";
    case Layout::Offset: return "offset";
  }
  return "?";
}

Tensor with_layout(const Tensor& t, Layout layout) {
  Tensor c = t.contiguous();
  switch (layout) {
    case Layout::Contiguous: return c.clone();
    case Layout::Transposed: {
      if (t.dim() < 2) return c.clone();
      std::vector<int64_t> rev(t.dim());
      for (int64_t d = 0; d < t.dim(); ++d) rev[d] = t.dim() - 1 - d;
      // A contiguous buffer in reversed-dim order, viewed back in the original order.
      return c.permute(rev).contiguous().permute(rev);
    }
    case Layout::Sliced: {
      if (t.dim() == 0) return c.clone();
      Shape big = t.shape();
      big.back() *= 2;
      Tensor buf = zeros(big, t.options());
      Tensor view = buf.slice(-1, 0, big.back(), 2);
      view.copy_(c);
      return view;
    }
    case Layout::Offset: {
      Tensor buf = zeros({t.numel() + 3}, t.options());
      Tensor view = buf.slice(0, 3, t.numel() + 3).view(t.shape());
      view.copy_(c);
      return view;
    }
  }
  return c;
}

Tensor empty_with_layout(const Shape& shape, const Options& o, Layout layout) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  switch (layout) {
    case Layout::Contiguous: return empty(shape, o);
    case Layout::Transposed: {
      if (nd < 2) return empty(shape, o);
      std::vector<int64_t> rev(nd);
      Shape reversed(shape.rbegin(), shape.rend());
      for (int64_t d = 0; d < nd; ++d) rev[d] = nd - 1 - d;
      return empty(reversed, o).permute(rev);
    }
    case Layout::Sliced: {
      if (nd == 0) return empty(shape, o);
      Shape big = shape;
      big.back() *= 2;
      return empty(big, o).slice(-1, 0, big.back(), 2);
    }
    case Layout::Offset: {
      const int64_t n = numel_of(shape);
      return empty({n + 3}, o).slice(0, 3, n + 3).view(shape);
    }
  }
  return empty(shape, o);
}

std::vector<double> ref_unary(const std::vector<double>& x, const std::function<double(double)>& f) {
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = f(x[i]);
  return out;
}

std::vector<double> ref_broadcast(const std::vector<double>& v, const Shape& from, const Shape& to) {
  int64_t n = numel_of(to);
  std::vector<double> out(static_cast<size_t>(n));
  Shape fstrides = contiguous_strides(from);
  size_t lead = to.size() - from.size();
  std::vector<int64_t> idx(to.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = lead; d < to.size(); ++d)
      if (from[d - lead] != 1) off += idx[d] * fstrides[d - lead];
    out[i] = v[off];
    for (int64_t d = static_cast<int64_t>(to.size()) - 1; d >= 0; --d) {
      if (++idx[d] < to[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

std::vector<double> ref_binary(const std::vector<double>& a, const Shape& sa, const std::vector<double>& b,
                               const Shape& sb, const std::function<double(double, double)>& f) {
  Shape out_shape = broadcast_shapes("ref_binary", sa, sb);
  auto x = ref_broadcast(a, sa, out_shape), y = ref_broadcast(b, sb, out_shape);
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = f(x[i], y[i]);
  return out;
}

::testing::AssertionResult all_close(const std::vector<double>& actual, const std::vector<double>& expected,
                                     double rtol, double atol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "size " << actual.size() << " vs expected " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    double a = actual[i], e = expected[i];
    bool ok;
    if (std::isnan(e)) ok = std::isnan(a);
    else if (std::isinf(e)) ok = a == e;
    else ok = std::fabs(a - e) <= atol + rtol * std::fabs(e);
    if (!ok)
      return ::testing::AssertionFailure() << "element " << i << ": got " << a << ", expected " << e
                                           << " (rtol " << rtol << ", atol " << atol << ")";
  }
  return ::testing::AssertionSuccess();
}

double default_rtol(DType t) {
  switch (t) {
    case DType::Float64: return 1e-12;
    case DType::Float32: return 1e-5;
    case DType::Float16: return 1e-3;
    case DType::BFloat16: return 1e-2;
    default: return 0;
  }
}

double default_atol(DType t) {
  switch (t) {
    case DType::Float64: return 1e-12;
    case DType::Float32: return 1e-6;
    case DType::Float16: return 1e-3;
    case DType::BFloat16: return 1e-2;
    default: return 0;
  }
}

::testing::AssertionResult matches(const Tensor& actual, const Shape& shape, DType dtype,
                                   const std::vector<double>& expected, double rtol, double atol) {
  if (actual.shape() != shape)
    return ::testing::AssertionFailure() << "shape " << shape_str(actual.shape()) << ", expected " << shape_str(shape);
  if (actual.dtype() != dtype)
    return ::testing::AssertionFailure() << "dtype " << dtype_name(actual.dtype()) << ", expected " << dtype_name(dtype);
  return all_close(values(actual), expected, rtol < 0 ? default_rtol(dtype) : rtol,
                   atol < 0 ? default_atol(dtype) : atol);
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message \"" << msg << "\" lacks \"" << p << "\"";
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-wick exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "did not throw (expected a wick::Error mentioning \"" << (parts.empty() ? "" : parts[0]) << "\")";
}

}  // namespace wick::test
