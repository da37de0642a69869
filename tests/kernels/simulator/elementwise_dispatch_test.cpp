// Which elementwise kernel a binary op runs, asked of the CUDA simulator
// (cudasimLastLaunchName), with the values checked against the CPU: a broadcast over rows
// whose width is a multiple of the pack (a bias add, a row scale, a tensor with a 0-d one)
// takes the packed rows kernel (issue 45); odd widths, misaligned rows and transposed
// operands take the element-by-element kernel. Built only with -DWICK_CUDA=SIM.
#include <cudasim/cudasim.h>

#include <functional>
#include <string>

#include <wick/tensor/cuda.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

// Runs view(a) + b on the GPU (the view taken there, so its strides reach the kernel),
// checks it against the CPU, and returns the kernel launched.
std::string add_on_gpu(const Tensor& a, const Tensor& b,
                       const std::function<Tensor(const Tensor&)>& view = [](const Tensor& x) { return x; }) {
  const Tensor got = add(view(a.to(Device::cuda())), b.to(Device::cuda()));
  const std::string kernel = cudasimLastLaunchName();
  EXPECT_TRUE(all_close(values(got), values(add(view(a), b)), 0, 0)) << kernel;
  return kernel;
}

TEST(CudaElementwiseDispatch, RowBroadcastsTakeThePackedRowsKernel) {
  WICK_REQUIRE_CUDA();
  for (DType t : {DType::Float32, DType::BFloat16, DType::Float16, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    const Tensor x = random({6, 16}, t, 1);
    EXPECT_EQ(add_on_gpu(x, random({16}, t, 2)), "rows_kernel");         // bias add
    EXPECT_EQ(add_on_gpu(random({16}, t, 2), x), "rows_kernel");         // the bias first
    EXPECT_EQ(add_on_gpu(x, random({6, 1}, t, 3)), "rows_kernel");       // a value per row
    EXPECT_EQ(add_on_gpu(x, random({}, t, 4)), "rows_kernel");           // a 0-d operand
    EXPECT_EQ(add_on_gpu(random({3, 4, 8}, t, 5), random({4, 8}, t, 6)), "rows_kernel");
    // Rows of a wider buffer (a slice of columns): the row starts stay on a pack.
    EXPECT_EQ(add_on_gpu(random({6, 32}, t, 7), random({16}, t, 8), [](const Tensor& x) { return x.narrow(1, 0, 16); }),
              "rows_kernel");
  }
}

TEST(CudaElementwiseDispatch, OtherLayoutsTakeTheElementKernel) {
  WICK_REQUIRE_CUDA();
  const DType t = DType::Float32;
  EXPECT_EQ(add_on_gpu(random({6, 5}, t, 1), random({5}, t, 2)), "strided_kernel");  // odd width
  // A row start off the pack: the slice begins one element in.
  EXPECT_EQ(add_on_gpu(random({6, 20}, t, 3), random({16}, t, 4), [](const Tensor& x) { return x.narrow(1, 1, 16); }),
            "strided_kernel");
  // A transposed operand: unit stride on the outer dim.
  EXPECT_EQ(add_on_gpu(random({16, 6}, t, 5), random({16}, t, 6), [](const Tensor& x) { return x.transpose(0, 1); }),
            "strided_kernel");
  // Contiguous operands of one shape keep the contiguous kernel.
  EXPECT_EQ(add_on_gpu(random({6, 16}, t, 7), random({6, 16}, t, 8)), "contiguous_kernel");
}

}  // namespace
}  // namespace wick::test
