// CUDA convolutions (cuDNN) and pooling against the CPU kernels: strides, padding, dilation,
// groups, transposed convolutions, every floating dtype, non-contiguous inputs, empty batches.
// float32 runs with TF32 off (the default), so it matches the CPU closely.
#include <atomic>
#include <cmath>
#include <thread>
#include <cstdlib>

#include "tests/support/cuda_compare.h"

// The simulator's own API (cudasim/include/cudasim/cudasim.h), declared weak: it is there
// only when the tests are linked against cudasim, and null otherwise.
extern "C" int cudasimSetDeviceMemoryLimit(int device, size_t bytes) __attribute__((weak));
extern "C" size_t cudasimDeviceMemoryUsed(int device) __attribute__((weak));

// Under the simulator the kernel tests are linked with --wrap=cudnnCreate,--wrap=cudnnDestroy
// (tests/kernels/CMakeLists.txt), so these count the cuDNN handles wick makes and destroys.
// Elsewhere nothing calls them and the __real_ functions stay null.
extern "C" {
int __real_cudnnCreate(void** handle) __attribute__((weak));
int __real_cudnnDestroy(void* handle) __attribute__((weak));
}
namespace {
std::atomic<int> g_cudnn_created{0}, g_cudnn_destroyed{0};
}  // namespace
extern "C" int __wrap_cudnnCreate(void** handle) {
  const int status = __real_cudnnCreate(handle);
  if (status == 0) ++g_cudnn_created;
  return status;
}
extern "C" int __wrap_cudnnDestroy(void* handle) {
  const int status = __real_cudnnDestroy(handle);
  if (status == 0) ++g_cudnn_destroyed;
  return status;
}

namespace wick::test {
namespace {

const std::vector<DType> kFloats = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

// Sums of up to ~50 products of values in [-2, 2]: 16-bit results differ by their rounding.
double conv_rtol(DType t) { return t == DType::Float64 ? 1e-10 : t == DType::Float32 ? 1e-4 : 2e-2; }
double conv_atol(DType t) { return t == DType::Float64 ? 1e-10 : t == DType::Float32 ? 1e-4 : t == DType::Float16 ? 5e-2 : 0.3; }

struct ConvCase {
  Shape x, w;
  Size2 stride, padding, dilation;
  int64_t groups;
};
const std::vector<ConvCase> kConvs = {
    {{2, 3, 9, 8}, {4, 3, 3, 3}, 1, 1, 1, 1},
    {{3, 4, 11, 7}, {6, 2, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 2},
    {{2, 4, 6, 6}, {4, 1, 3, 3}, 1, 1, 1, 4},
    {{1, 5, 5, 5}, {3, 5, 1, 1}, 1, 0, 1, 1},
    {{0, 3, 5, 5}, {2, 3, 3, 3}, 1, 0, 1, 1},
};

TEST(CudaConv, Conv2dForwardAndGradients) {
  WICK_REQUIRE_CUDA();
  uint64_t seed = 1;
  for (const ConvCase& c : kConvs)
    for (DType t : kFloats)
      for (Layout l : {Layout::Contiguous, Layout::Transposed}) {
        const Tensor x = with_layout(random(c.x, t, seed++), l), w = random(c.w, t, seed++);
        const Tensor b = random({c.w[0]}, t, seed++);
        const std::string what = shape_str(c.x) + " * " + shape_str(c.w) + " " + dtype_name(t) + " " + layout_name(l);
        expect_cuda_matches_cpu("conv2d " + what, {x, w, b}, [&](const std::vector<Tensor>& in) {
          return conv2d(in[0], in[1], in[2], c.stride, c.padding, c.dilation, c.groups);
        }, conv_rtol(t), conv_atol(t));
        const Tensor y = conv2d(x, w, {}, c.stride, c.padding, c.dilation, c.groups);
        const Tensor gy = random(y.shape(), t, seed++);
        expect_cuda_matches_cpu("conv2d_backward_input " + what, {gy, w}, [&](const std::vector<Tensor>& in) {
          return conv2d_backward_input(in[0], in[1], c.x, c.stride, c.padding, c.dilation, c.groups);
        }, conv_rtol(t), conv_atol(t));
        expect_cuda_matches_cpu("conv2d_backward_weight " + what, {gy, x}, [&](const std::vector<Tensor>& in) {
          return conv2d_backward_weight(in[0], in[1], c.w, c.stride, c.padding, c.dilation, c.groups);
        }, conv_rtol(t), t == DType::Float64 ? 1e-10 : 10 * conv_atol(t));
      }
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = values(a), y = values(b);
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

TEST(CudaConv, RunsTheChosenHeuristicsEntryUnderItsMathType) {
  WICK_REQUIRE_CUDA();
  if (!cudasimSetDeviceMemoryLimit) GTEST_SKIP() << "relies on the simulator's cuDNN heuristics";
  // With TF32 allowed the descriptor permits tensor cores, and for this small 3x3
  // convolution the simulator's heuristics rank the FMA kernel of WINOGRAD_NONFUSED first
  // (its tensor-core kernel costs a copy pass more). Run under that entry's math type
  // (CUDNN_FMA_MATH), float32 is not rounded to TF32; run under the descriptor's, it is.
  cuda::set_allow_tf32(true);
  struct Restore {
    ~Restore() { cuda::set_allow_tf32(false); }
  } restore;
  const Tensor x = random({1, 8, 16, 16}, DType::Float32, 901), w = random({8, 8, 3, 3}, DType::Float32, 902);
  const Tensor expected = conv2d(x.to(DType::Float64), w.to(DType::Float64), {}, 1, 1, 1, 1);
  const Tensor y = conv2d(x.cuda(), w.cuda(), {}, 1, 1, 1, 1).cpu();
  EXPECT_LT(max_abs_diff(y, expected), 1e-4);
}

TEST(CudaConv, AlgorithmWorkspaceFitsTheMemoryLeft) {
  WICK_REQUIRE_CUDA();
  if (!cudasimSetDeviceMemoryLimit) GTEST_SKIP() << "needs the simulator's device memory limit";
  // The fastest forward algorithm for this convolution (WINOGRAD_NONFUSED) wants ~5 MiB of
  // workspace; the device is left with ~3 MiB (2 of them for the output), so an algorithm
  // with a smaller workspace must be chosen instead of running out of memory.
  const Tensor x = random({1, 64, 64, 64}, DType::Float32, 903), w = random({64, 64, 3, 3}, DType::Float32, 904);
  const Tensor expected = conv2d(x.to(DType::Float64), w.to(DType::Float64), {}, 1, 1, 1, 1);
  const Tensor xd = x.cuda(), wd = w.cuda();
  cuda::synchronize();
  cuda::empty_cache();
  const size_t limit = cudasimDeviceMemoryUsed(0) + (size_t{3} << 20);
  ASSERT_EQ(cudasimSetDeviceMemoryLimit(0, limit), 0);
  struct Restore {
    ~Restore() {
      const char* env = std::getenv("CUDASIM_DEVICE_MEMORY");
      (void)cudasimSetDeviceMemoryLimit(0, env ? std::strtoull(env, nullptr, 10) : (size_t{16} << 30));
    }
  } restore;
  Tensor y;
  EXPECT_NO_THROW(y = conv2d(xd, wd, {}, 1, 1, 1, 1).cpu());
  if (y.defined()) EXPECT_LT(max_abs_diff(y, expected), 1e-3);
}

TEST(CudaConv, CudnnHandlesAreDestroyedWhenTheirThreadEnds) {
  WICK_REQUIRE_CUDA();
  if (!__real_cudnnCreate) GTEST_SKIP() << "needs the simulator build's --wrap of cudnnCreate/cudnnDestroy";
  const Tensor x = random({1, 2, 5, 5}, DType::Float32, 905).cuda(), w = random({3, 2, 3, 3}, DType::Float32, 906).cuda();
  const int created = g_cudnn_created.load(), destroyed = g_cudnn_destroyed.load();
  for (int i = 0; i < 3; ++i) {
    std::thread([&] {
      cuda::DeviceGuard guard(0);
      conv2d(x, w, {}, 1, 1, 1, 1);
      cuda::synchronize();
    }).join();
  }
  EXPECT_EQ(g_cudnn_created.load() - created, 3);
  EXPECT_EQ(g_cudnn_destroyed.load() - destroyed, 3);
}

TEST(CudaConv, Conv1dAndTransposed) {
  WICK_REQUIRE_CUDA();
  uint64_t seed = 500;
  for (DType t : {DType::Float32, DType::Float64}) {
    expect_cuda_matches_cpu("conv1d", {random({2, 4, 13}, t, seed++), random({6, 2, 3}, t, seed++)},
                            [](const std::vector<Tensor>& in) { return conv1d(in[0], in[1], {}, 2, 1, 2, 2); },
                            conv_rtol(t), conv_atol(t));
    expect_cuda_matches_cpu(
        "conv_transpose2d", {random({2, 4, 5, 4}, t, seed++), random({4, 3, 3, 3}, t, seed++), random({6}, t, seed++)},
        [](const std::vector<Tensor>& in) { return conv_transpose2d(in[0], in[1], in[2], 2, 1, 1, 2); },
        conv_rtol(t), conv_atol(t));
    expect_cuda_matches_cpu(
        "conv_transpose2d output_padding past the stride",
        {random({2, 2, 3, 4}, t, seed++), random({2, 3, 2, 2}, t, seed++), random({3}, t, seed++)},
        [](const std::vector<Tensor>& in) { return conv_transpose2d(in[0], in[1], in[2], 1, 0, {1, 2}, 1, {2, 3}); },
        conv_rtol(t), conv_atol(t));
  }
}

TEST(CudaPool, MaxAvgAdaptiveForwardAndBackward) {
  WICK_REQUIRE_CUDA();
  uint64_t seed = 900;
  const Shape xs = {2, 3, 9, 10};
  for (DType t : kFloats)
    for (Layout l : {Layout::Contiguous, Layout::Sliced}) {
      const Tensor x = with_layout(random(xs, t, seed++), l);
      const std::string what = std::string(dtype_name(t)) + " " + layout_name(l);
      expect_cuda_matches_cpu("max_pool2d " + what, {x}, [](const std::vector<Tensor>& in) {
        auto [y, idx] = max_pool2d(in[0], 3, 2, 1, {1, 2}, true);
        return cat({y.to(DType::Float64), idx.to(DType::Float64)});
      });
      auto [y, idx] = max_pool2d(x, 3, 2, 1, {1, 2}, true);
      const Tensor gy = random(y.shape(), t, seed++);
      expect_cuda_matches_cpu("max_pool2d_backward " + what, {gy, idx}, [&](const std::vector<Tensor>& in) {
        return max_pool2d_backward(in[0], in[1], xs);
      }, conv_rtol(t), conv_atol(t));
      for (bool cip : {true, false}) {
        expect_cuda_matches_cpu("avg_pool2d " + what, {x}, [&](const std::vector<Tensor>& in) {
          return avg_pool2d(in[0], {3, 2}, 2, 1, true, cip);
        }, conv_rtol(t), conv_atol(t));
        const Tensor ga = random(avg_pool2d(x, {3, 2}, 2, 1, true, cip).shape(), t, seed++);
        expect_cuda_matches_cpu("avg_pool2d_backward " + what, {ga}, [&](const std::vector<Tensor>& in) {
          return avg_pool2d_backward(in[0], xs, {3, 2}, 2, 1, true, cip);
        }, conv_rtol(t), conv_atol(t));
      }
      expect_cuda_matches_cpu("adaptive_avg_pool2d " + what, {x}, [](const std::vector<Tensor>& in) {
        return adaptive_avg_pool2d(in[0], {4, 3});
      }, conv_rtol(t), conv_atol(t));
      expect_cuda_matches_cpu("adaptive_avg_pool2d_backward " + what, {random({2, 3, 4, 3}, t, seed++)},
                              [&](const std::vector<Tensor>& in) { return adaptive_avg_pool2d_backward(in[0], xs); },
                              conv_rtol(t), conv_atol(t));
    }
  // ceil_mode windows larger than the input: one overhanging window per row and column.
  for (DType t : kFloats) {
    const Tensor x = random({2, 3, 2, 3}, t, seed++);
    expect_cuda_matches_cpu("max_pool2d overhanging " + std::string(dtype_name(t)), {x},
                            [](const std::vector<Tensor>& in) {
                              auto [y, idx] = max_pool2d(in[0], 3, 2, 0, 1, true);
                              return cat({y.to(DType::Float64), idx.to(DType::Float64)});
                            });
    for (bool cip : {true, false})
      expect_cuda_matches_cpu("avg_pool2d overhanging " + std::string(dtype_name(t)), {x},
                              [&](const std::vector<Tensor>& in) { return avg_pool2d(in[0], 3, 2, 0, true, cip); },
                              conv_rtol(t), conv_atol(t));
  }
}

}  // namespace
}  // namespace wick::test
