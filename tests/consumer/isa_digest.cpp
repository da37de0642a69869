// wick_isa_digest: one line per CPU float loop that has copies for AVX-512, AVX2 and the
// baseline (kernels/cpu/isa_clones.h): a hash of its outputs' bits on fixed inputs.
// isa_digest_same.cmake runs it natively and under qemu on CPUs with AVX2 only and without
// AVX: the lines must be equal, as every copy computes the baseline's bits. The sizes have
// vector bodies and tails (rows of 37 and 300, lanes of 8 and 16).
#include <wick/wick.h>

#include <cstdint>
#include <cstdio>

using namespace wick;

namespace {

uint64_t fnv(const Tensor& t) {
  const Tensor c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < c.nbytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void print(const char* name, std::initializer_list<Tensor> outputs) {
  uint64_t h = 0;
  for (const Tensor& t : outputs) h = h * 31 + fnv(t);
  std::printf("%-30s %016llx\n", name, static_cast<unsigned long long>(h));
}

// Values k / 64 for integers k in [-256, 256), from a linear congruential sequence: the same
// bits on every CPU (randn's log and cos are glibc's, whose FMA and SSE2 versions differ in
// the last bit).
Tensor values(const Shape& shape, DType dtype, uint64_t& state) {
  Tensor t = empty(shape, DType::Float64);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<double>(static_cast<int64_t>(state >> 55) - 256) / 64.0;
  }
  return t.to(dtype);
}

void digests(DType dtype) {
  uint64_t g = 1234;
  auto input = [&](const Shape& shape) { return Variable(values(shape, dtype, g), true); };
  const char* d = dtype == DType::Float32 ? "f32" : "f64";
  char name[64];
  // Lines of double exp, log or tanh start with "glibc": those are glibc's, whose versions
  // for CPUs with FMA and without differ in the last bit, so CPUs without FMA are compared
  // on the other lines only.
  auto label = [&](const char* what, bool libm = false) {
    std::snprintf(name, sizeof name, "%s%s %s", libm && dtype == DType::Float64 ? "glibc " : "", what, d);
    return name;
  };
  {  // binary rows: contiguous, a broadcast row, a scalar, a broadcast column
    Tensor a = values({37, 300}, dtype, g), b = values({37, 300}, dtype, g);
    Tensor row = values({300}, dtype, g);
    print(label("add mul div"), {add(a, b), mul(a, row), div(a, Scalar(3.0)), sub(a.narrow(1, 0, 1), b)});
  }
  {  // reductions: rows (fold) and columns (accumulate), sums and maxima
    Tensor a = values({37, 300}, dtype, g);
    print(label("sum amax"), {sum(a, {1}), sum(a, {0}), sum(a), amax(a, {1}), mean(a, {0})});
    // Rows (fold_contiguous, lane_sum) and columns; logsumexp's double log is glibc's.
    print(label("var"), {var(a, {1}), var(a, {0})});
    std::snprintf(name, sizeof name, "glibc logsumexp %s", d);
    print(name, {logsumexp(a, {1}), logsumexp(a, {0})});
  }
  {  // softmax along rows (lane_sum) and down columns; log-softmax's double log is glibc's
    Tensor a = values({37, 300}, dtype, g);
    print(label("softmax", true), {softmax(a, 1), softmax(a, 0)});
    std::snprintf(name, sizeof name, "glibc log_softmax %s", d);
    print(name, {log_softmax(a, 1), log_softmax(a, 0)});
  }
  {  // layer norm forward and backward (dx, dw, db)
    Variable x = input({37, 300}), w = input({300}), b = input({300});
    Variable y = layer_norm(x, {300}, w, b);
    sum(mul(y, y)).backward();
    print(label("layer_norm"), {y.data(), x.grad().data(), w.grad().data(), b.grad().data()});
  }
  {  // batch norm (training) forward and backward
    Variable x = input({8, 5, 37}), w = input({5}), b = input({5});
    Variable y = batch_norm(x, w, b, Tensor(), Tensor(), true);
    sum(mul(y, y)).backward();
    print(label("batch_norm"), {y.data(), x.grad().data(), w.grad().data(), b.grad().data()});
  }
  {  // cross-entropy forward and backward
    Variable logits = input({37, 300});
    Tensor target = empty({37}, DType::Int64);
    for (int64_t i = 0; i < 37; ++i) target.data<int64_t>()[i] = i * 71 % 300;
    Variable loss = cross_entropy(logits, target);
    loss.backward();
    print(label("cross_entropy", true), {loss.data(), logits.grad().data()});
  }
  {  // fused causal attention forward and backward
    Variable q = input({2, 3, 37, 16}), k = input({2, 3, 37, 16}), v = input({2, 3, 37, 16});
    Variable o = scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true);
    sum(mul(o, o)).backward();
    print(label("attention", true), {o.data(), q.grad().data(), k.grad().data(), v.grad().data()});
  }
  {  // the transcendental loops (WICK_ISA_CLONES)
    Variable x = input({37, 300});
    Variable y = gelu(x, GeluApproximation::Tanh);
    sum(mul(y, y)).backward();
    print(label("exp tanh gelu", true), {exp(x.data()), tanh(x.data()), y.data(), x.grad().data()});
  }
}

}  // namespace

int main() {
  set_num_threads(1);  // the same split of the work in every run
  digests(DType::Float32);
  digests(DType::Float64);
  // Which copies ran: the widest the CPU has (the matrix products are pinned to their baseline).
  std::fprintf(stderr, "%s",
               __builtin_cpu_supports("avx512f") ? "avx512f"
               : __builtin_cpu_supports("avx2")  ? "avx2"
                                                 : "baseline");
  return 0;
}
