// The fused cross-entropy on CUDA (kernels/cuda/loss.cu) against the CPU kernels: the loss,
// the gradient that the forward writes and autograd's backward scales, and the backward from
// the saved log-sum-exps, on vocabulary widths 1, 7, 1000 and 50257 (GPT-2's: rows start
// anywhere, so heads and tails around the 16-byte packs), strided classes ([N, C, d]), one
// example ([C]) and an empty batch, every floating dtype, non-contiguous and misaligned
// logits, ignored positions, label smoothing, class weights, probability targets and every
// reduction. And the asynchronous report of an out-of-range target.
#include "tests/support/cuda_compare.h"

namespace wick::test {
namespace {

struct LossTol {
  double rtol, atol;
};
// float32: the CPU sums in double, CUDA in float32; 16-bit: the CUDA gradient is rounded
// once more where the backward scales it (bfloat16 steps are 0.4-0.8%).
LossTol loss_tol(DType t) {
  switch (t) {
    case DType::Float64: return {1e-10, 1e-12};
    case DType::Float32: return {1e-4, 1e-5};
    case DType::Float16: return {1e-2, 1e-4};
    default: return {2e-2, 1e-4};
  }
}

struct LossCase {
  const char* name;
  bool weights;
  double smoothing;
  bool probabilities;
  bool ignored;  // every third position's target is ignore_index
  Reduction reduction;
  Layout layout;
};

const std::vector<LossCase> kCases = {
    {"plain mean", false, 0, false, false, Reduction::Mean, Layout::Contiguous},
    {"ignored sum", false, 0, false, true, Reduction::Sum, Layout::Offset},
    {"smoothing none", false, 0.1, false, true, Reduction::None, Layout::Transposed},
    {"weights mean", true, 0, false, true, Reduction::Mean, Layout::Contiguous},
    {"weights smoothing mean", true, 0.2, false, true, Reduction::Mean, Layout::Offset},
    {"weights smoothing none", true, 0.2, false, false, Reduction::None, Layout::Contiguous},
    {"probabilities mean", false, 0.1, true, false, Reduction::Mean, Layout::Transposed},
    {"probabilities weights sum", true, 0, true, false, Reduction::Sum, Layout::Offset},
};

// loss, d loss / d logits through autograd (the forward's gradient, scaled by the incoming
// one: 1 for Mean, 2.5 for Sum, random per position for None) and cross_entropy_backward
// from the saved lse with another incoming gradient, flattened into one tensor.
// v: logits, index target, weight, probability target, per-position gradient.
Tensor loss_and_gradients(const std::vector<Tensor>& v, const LossCase& c) {
  CrossEntropyOptions o;
  if (c.weights) o.weight = v[2];
  o.label_smoothing = c.smoothing;
  o.reduction = c.reduction;
  const Tensor& target = c.probabilities ? v[3] : v[1];
  Variable x(v[0], true);
  Variable loss = cross_entropy(x, target, o);
  if (c.reduction == Reduction::None) {
    loss.backward(v[4]);
  } else if (c.reduction == Reduction::Sum) {
    (loss * 2.5).backward();
  } else {
    loss.backward();
  }
  const Tensor g = c.reduction == Reduction::None ? mul(v[4], 0.5) : scalar_tensor(1.5, v[0].options());
  const Tensor classic = cross_entropy_backward(g, v[0], target, cross_entropy_forward(v[0], target, o), o);
  return cat({loss.data().reshape({-1}), x.grad().data().reshape({-1}), classic.reshape({-1})}, 0);
}

void check_shape(const Shape& shape, const std::vector<DType>& dtypes, const std::vector<LossCase>& cases) {
  const int64_t C = shape.size() == 1 ? shape[0] : shape[1];
  Shape positions;
  if (shape.size() > 1) {
    positions = shape;
    positions.erase(positions.begin() + 1);
  }
  int64_t count = 1;
  for (int64_t d : positions) count *= d;
  for (DType dt : dtypes) {
    for (const LossCase& c : cases) {
      const std::string what = std::string(c.name) + " " + dtype_name(dt) + " " + shape_str(shape) + " " +
                               layout_name(c.layout);
      std::vector<int64_t> t;
      for (double d : values(random(positions, DType::Int64, 51, 0, static_cast<double>(C - 1))))
        t.push_back(static_cast<int64_t>(d));
      if (c.ignored)
        for (size_t k = 0; k < t.size(); k += 3) t[k] = -100;
      const Tensor target = tensor<int64_t>(t).reshape(positions);
      const std::vector<Tensor> in = {with_layout(random(shape, dt, 52, -4, 4), c.layout), target,
                                      random({C}, dt, 53, 0.5, 2), softmax(random(shape, dt, 54), shape.size() > 1 ? 1 : 0),
                                      random(positions, dt, 55, -1, 1)};
      const LossTol tol = loss_tol(dt);
      expect_cuda_matches_cpu(what, in, [&](const std::vector<Tensor>& v) { return loss_and_gradients(v, c); },
                              tol.rtol, tol.atol);
    }
  }
}

const std::vector<DType> kLossDtypes = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

TEST(CudaLoss, FusedCrossEntropySmallVocabularies) {
  WICK_REQUIRE_CUDA();
  for (const Shape& shape : {Shape{5, 1}, Shape{6, 7}, Shape{7}, Shape{3, 7, 4}, Shape{0, 7}})
    check_shape(shape, kLossDtypes, kCases);
}

TEST(CudaLoss, FusedCrossEntropyBlockPerPosition) {
  WICK_REQUIRE_CUDA();
  check_shape({4, 1000}, kLossDtypes, kCases);  // a warp per position, packs and a tail
  check_shape({3, 5000}, {DType::BFloat16}, kCases);  // a block of 256
}

TEST(CudaLoss, FusedCrossEntropyGpt2Vocabulary) {
  WICK_REQUIRE_CUDA();
  // 50257 is odd: the rows of a contiguous [N, 50257] start at every 2-byte offset.
  check_shape({3, 50257}, {DType::BFloat16, DType::Float32},
              {kCases[0], kCases[1], kCases[4], kCases[5], kCases[6]});
  check_shape({3, 50257}, {DType::Float16, DType::Float64}, {kCases[2]});
}

// backward with retain_graph leaves the saved gradient as it was: a second backward adds
// the same gradient again; without it the gradient is written over the saved one.
TEST(CudaLoss, RetainedGraphKeepsTheForwardsGradient) {
  for (Device device : cpu_and_cuda()) {
    SCOPED_TRACE(device.str());
    const Tensor x = random({4, 9}, DType::Float32, 61).to(device);
    const Tensor target = tensor<int64_t>({1, 8, 0, 3}).to(device);
    const Tensor g = random({4}, DType::Float32, 62).to(device);
    CrossEntropyOptions o;
    o.reduction = Reduction::None;
    Variable once(x, true);
    cross_entropy(once, target, o).backward(g);
    Variable twice(x, true);
    Variable loss = cross_entropy(twice, target, o);
    loss.backward(g, /*retain_graph=*/true);
    loss.backward(g);
    EXPECT_TRUE(all_close(values(twice.grad().data()), values(mul(once.grad().data(), 2.0)), 1e-6, 1e-7));
    expect_error([&] { loss.backward(g); }, {"CrossEntropyBackward", "second time"});
  }
}

// Without a gradient wanted the forward writes none (the memory is what it was).
TEST(CudaLoss, NoGradientNoSavedGradient) {
  for (Device device : cpu_and_cuda()) {
    const Tensor x = random({4, 9}, DType::Float32, 63).to(device);
    const Tensor target = tensor<int64_t>({1, 8, 0, 3}).to(device);
    EXPECT_FALSE(cross_entropy_forward(x, target).dlogits.defined());
    const CrossEntropyResult r = cross_entropy_forward(x, target, {}, true);
    ASSERT_TRUE(r.dlogits.defined());
    EXPECT_EQ(r.dlogits.shape(), x.shape());
    NoGradGuard no_grad;
    Variable v(x, true);
    EXPECT_FALSE(cross_entropy(v, target).requires_grad());
  }
}

// An out-of-range target on CUDA: the forward does not wait for its kernel, which records the
// target; the host's next wait raises it, whatever the wait, and then it is cleared.
TEST(CudaLoss, OutOfRangeTargetIsRaisedAtTheNextWaitThenCleared) {
  WICK_REQUIRE_CUDA();
  const Tensor x = random({2, 3}, DType::Float32, 71).cuda();
  const Tensor bad = tensor<int64_t>({0, 7}).cuda(), good = tensor<int64_t>({0, 2}).cuda();
  const std::vector<std::string> parts = {"cross_entropy", "target 7", "at position 1", "out of range for 3 classes"};
  Tensor loss;
  EXPECT_NO_THROW(loss = cross_entropy(x, bad));
  std::vector<std::string> at_sync = parts;
  at_sync.push_back("cuda::synchronize");
  expect_error([] { cuda::synchronize(); }, at_sync);
  // Cleared: good calls and later waits run on.
  EXPECT_NO_THROW(cuda::synchronize());
  EXPECT_NO_THROW(cross_entropy(x, good).item<float>());
  // Each later error is raised again, at whichever wait comes first.
  expect_error([&] { cross_entropy(x, bad).item<float>(); }, parts);
  expect_error(
      [&] {
        CrossEntropyOptions o;
        o.reduction = Reduction::None;
        Variable v(x, true);
        cross_entropy(v, tensor<int64_t>({-5, 1}).cuda(), o).backward(ones({2}, Device::cuda()));
        cuda::current_stream().synchronize();
      },
      {"cross_entropy", "target -5", "at position 0", "cuda::Stream::synchronize"});
  expect_error(
      [&] {
        CrossEntropyOptions o;
        o.label_smoothing = 0.1;
        o.weight = ones({3}, Device::cuda());
        (void)cross_entropy(x, bad, o);
        cuda::Event done;
        done.record();
        done.synchronize();
      },
      {"cross_entropy", "target 7", "cuda::Event::synchronize"});
  // The position with the bad target counted as ignored: the good one's loss is there.
  CrossEntropyOptions none;
  none.reduction = Reduction::None;
  const Tensor per_position = cross_entropy(x, bad, none);
  expect_error([&] { (void)per_position.to(Device::cpu()); }, parts);
  EXPECT_EQ(values(per_position)[1], 0.0);
  EXPECT_NO_THROW(cuda::synchronize());
}

}  // namespace
}  // namespace wick::test
