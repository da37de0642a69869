// The composites (wick/autograd/composites.h, distances.h, wick/nn/loss.h) on CUDA against the CPU:
// they are built from primitives whose kernels have their own tables, so these cases check
// the composition on the device (index tensors, host reads, broadcast constants), forward
// and through autograd, on random, non-contiguous and odd-shaped inputs.
#include <wick/autograd/composites.h>
#include <wick/autograd/distances.h>
#include <wick/autograd/nn_ops.h>
#include <wick/nn/loss.h>

#include "tests/support/cuda_compare.h"

namespace wick::test {
namespace {

// The gradient of sum(f(x) * w) for a fixed random w: one backward through the composite.
OpFn grad_of(std::function<Variable(const Variable&)> f) {
  return [f](const std::vector<Tensor>& in) {
    Variable x(in[0].clone(), true);
    Variable y = f(x);
    Tensor w = random(y.shape(), y.dtype(), 99).to(y.data().device());
    sum(mul(y, Variable(w))).backward();
    return x.grad().data();
  };
}

TEST(CudaComposites, ShapeAndIndexing) {
  WICK_REQUIRE_CUDA();
  uint64_t seed = 1;
  for (DType t : {DType::Float32, DType::Float64}) {
    const Tensor x = with_layout(random({2, 3, 5}, t, seed++), Layout::Transposed);
    const Tensor idx = tensor<int64_t>({4, 0, -1, 2});
    const std::vector<std::pair<std::string, std::function<Variable(const Variable&)>>> ops = {
        {"pad reflect", [](const Variable& v) { return pad(v, {2, 1, 1, 2}, PadMode::Reflect); }},
        {"pad circular", [](const Variable& v) { return pad(v, {3, 0}, PadMode::Circular); }},
        {"pad constant", [](const Variable& v) { return pad(v, {1, -2, 0, 1}, PadMode::Constant, 2.5); }},
        {"diagonal", [](const Variable& v) { return diagonal(v, 1, 2, 1); }},
        {"repeat_interleave", [](const Variable& v) { return repeat_interleave(v, tensor<int64_t>({1, 0, 2}), 1); }},
        {"take", [idx](const Variable& v) { return take(v, idx); }},
        {"index_fill", [](const Variable& v) { return index_fill(v, 2, tensor<int64_t>({0, 3}), -1.5); }},
        {"amax", [](const Variable& v) { return amax(v, {0, 2}); }},
        {"var correction", [](const Variable& v) { return var(v, {2}, 2.5, true); }},
        {"einsum", [](const Variable& v) { return einsum("bij,bkj->bik", {v, v}); }},
        {"tensordot", [](const Variable& v) { return tensordot(v, v, {0, 2}, {0, 2}); }},
        {"normalize", [](const Variable& v) { return normalize(v, 2.0, 1); }},
        {"cdist", [](const Variable& v) { return cdist(v, v); }},
        {"im2col", [](const Variable& v) { return im2col(v, {2, 2}, 1, 1, {1, 2}); }},
        {"col2im", [](const Variable& v) { return col2im(v, {1, 7}, {1, 3}, 1, 0, 1); }},
    };
    for (const auto& [name, f] : ops) {
      const std::string what = name + " " + dtype_name(t);
      expect_cuda_matches_cpu(what, {x}, [f = f](const std::vector<Tensor>& in) { return f(Variable(in[0])).data(); });
      expect_cuda_matches_cpu(what + " gradient", {x}, grad_of(f));
    }
  }
}

TEST(CudaComposites, PoolingAndResampling) {
  WICK_REQUIRE_CUDA();
  uint64_t seed = 50;
  for (DType t : {DType::Float32, DType::Float64}) {
    const Tensor x4 = with_layout(random({2, 3, 7, 6}, t, seed++), Layout::Sliced);
    const Tensor x5 = random({1, 2, 4, 5, 6}, t, seed++);
    const Tensor x3 = random({2, 3, 9}, t, seed++);
    const std::vector<std::tuple<std::string, Tensor, std::function<Variable(const Variable&)>>> ops = {
        {"max_pool1d", x3, [](const Variable& v) { return max_pool1d(v, 3, 2, 1, 1, true); }},
        {"avg_pool1d", x3, [](const Variable& v) { return avg_pool1d(v, 4, 2, 2, false, false); }},
        {"max_pool3d", x5, [](const Variable& v) { return max_pool3d(v, {2, 3, 2}, Size3{2, 1, 2}, Size3{1, 1, 0}); }},
        {"avg_pool3d divisor", x5, [](const Variable& v) { return avg_pool3d(v, 2, 2, 1, true, true, 5); }},
        {"adaptive_max_pool2d", x4, [](const Variable& v) { return adaptive_max_pool2d(v, {3, 4}); }},
        {"interpolate nearest", x4, [](const Variable& v) { return interpolate(v, Shape{10, 4}); }},
        {"interpolate bilinear", x4,
         [](const Variable& v) { return interpolate(v, std::vector<double>{1.5, 0.5}, InterpolateMode::Linear); }},
        {"interpolate trilinear aligned", x5,
         [](const Variable& v) { return interpolate(v, Shape{3, 7, 2}, InterpolateMode::Linear, true); }},
    };
    for (const auto& [name, x, f] : ops) {
      const std::string what = name + " " + dtype_name(t);
      expect_cuda_matches_cpu(what, {x}, [f = f](const std::vector<Tensor>& in) { return f(Variable(in[0])).data(); });
      expect_cuda_matches_cpu(what + " gradient", {x}, grad_of(f));
    }
  }
}

TEST(CudaComposites, ConvTranspose3d) {
  WICK_REQUIRE_CUDA();
  uint64_t seed = 70;
  for (DType t : {DType::Float32, DType::Float64}) {
    const Tensor x = with_layout(random({2, 4, 3, 2, 3}, t, seed++), Layout::Transposed);
    const Tensor w = random({4, 3, 2, 3, 2}, t, seed++), b = random({6}, t, seed++);
    auto conv = [](const Variable& in, const Variable& weight, const Variable& bias) {
      return conv_transpose3d(in, weight, bias, Size3{2, 1, 2}, Size3{1, 1, 0}, Size3{1, 0, 1}, 2, Size3{1, 2, 1});
    };
    // Each operand in turn is the input under test; the others are constants on its device.
    const std::vector<std::tuple<std::string, Tensor, std::function<Variable(const Variable&)>>> ops = {
        {"input", x,
         [&](const Variable& v) {
           return conv(v, Variable(w.to(v.data().device())), Variable(b.to(v.data().device())));
         }},
        {"weight", w, [&](const Variable& v) { return conv(Variable(x.to(v.data().device())), v, Variable()); }},
        {"unbatched input", x.select(0, 1),
         [&](const Variable& v) { return conv(v, Variable(w.to(v.data().device())), Variable()); }},
    };
    for (const auto& [name, in, f] : ops) {
      const std::string what = "conv_transpose3d " + name + " " + dtype_name(t);
      expect_cuda_matches_cpu(what, {in}, [f = f](const std::vector<Tensor>& a) { return f(Variable(a[0])).data(); },
                              t == DType::Float32 ? 1e-5 : -1, t == DType::Float32 ? 1e-5 : -1);
      expect_cuda_matches_cpu(what + " gradient", {in}, grad_of(f), t == DType::Float32 ? 1e-5 : -1,
                              t == DType::Float32 ? 1e-5 : -1);
    }
  }
}

TEST(CudaComposites, Losses) {
  WICK_REQUIRE_CUDA();
  uint64_t seed = 80;
  for (DType t : {DType::Float32, DType::Float64}) {
    const Tensor x = random({4, 5}, t, seed++), y = random({4, 5}, t, seed++);
    const Tensor probs = random({4, 5}, t, seed++, 0.05, 0.95);
    const std::vector<std::pair<std::string, std::function<Variable(const Variable&)>>> ops = {
        {"huber_loss", [y](const Variable& v) { return huber_loss(v, Variable(y.to(v.data().device())), Reduction::Sum, 0.7); }},
        {"poisson_nll_loss", [y](const Variable& v) { return poisson_nll_loss(v, Variable(abs(y).to(v.data().device())), true, true); }},
        {"binary_cross_entropy",
         [probs](const Variable& v) { return binary_cross_entropy(sigmoid(v), Variable(probs.to(v.data().device()))); }},
        {"cosine_similarity", [y](const Variable& v) { return cosine_similarity(v, Variable(y.to(v.data().device()))); }},
    };
    for (const auto& [name, f] : ops) {
      const std::string what = name + " " + dtype_name(t);
      expect_cuda_matches_cpu(what, {x}, [f = f](const std::vector<Tensor>& in) { return f(Variable(in[0])).data(); });
      expect_cuda_matches_cpu(what + " gradient", {x}, grad_of(f));
    }
    // CTC over [T, N, C] log-probabilities.
    const Tensor logits = random({6, 2, 4}, t, seed++);
    const Tensor targets = tensor<int64_t>({1, 2, 3, 1}, {2, 2});
    auto ctc = [targets](const Variable& v) {
      return ctc_loss(log_softmax(v, 2), targets.to(v.data().device()), {6, 5}, {2, 1});
    };
    expect_cuda_matches_cpu("ctc_loss " + std::string(dtype_name(t)), {logits},
                            [ctc](const std::vector<Tensor>& in) { return ctc(Variable(in[0])).data(); });
    expect_cuda_matches_cpu("ctc_loss gradient " + std::string(dtype_name(t)), {logits}, grad_of(ctc));
  }
}

}  // namespace
}  // namespace wick::test
