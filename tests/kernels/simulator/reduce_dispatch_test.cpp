// Which kernel a reduction or softmax runs, asked of the CUDA simulator
// (cudasimLastLaunchName), with the values checked against the CPU (issue 45, items 4 and 5):
// - reductions over rows of unit-stride columns ([R, C] over R, [A, R, C] over R) take the
//   column kernel, in 16-byte packs when the width and the view allow (<V>) and element by
//   element otherwise (<1>), in one launch whether or not the rows are split into chunks;
//   unit-stride rows keep the row and split kernels, other layouts the generic kernel;
// - softmax rows up to 4096 take the register rows kernel (several rows per block), packed
//   16-bit rows of 16392-32768 elements the long-row kernel (512 threads, two blocks per
//   multiprocessor), longer packed rows the shared-memory kernel.
// Built only with -DWICK_CUDA=SIM.
#include <cudasim/cudasim.h>

#include <functional>
#include <string>

#include <wick/tensor/cuda.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

struct Dispatched {
  std::string kernel;
  unsigned long long launches;
};

// Runs f on x's copy on the GPU (the view taken there by `view`), checks it against the CPU
// and returns the last kernel launched and how many.
Dispatched reduce_dispatch_on_gpu(const Tensor& x, const std::function<Tensor(const Tensor&)>& f, double tol = 1e-5,
                                  const std::function<Tensor(const Tensor&)>& view = [](const Tensor& t) { return t; }) {
  const Tensor xg = view(x.to(Device::cuda()));
  cuda::synchronize();
  const unsigned long long before = cudasimKernelLaunches();
  const Tensor got = f(xg);
  const std::string kernel = cudasimLastLaunchName();
  cuda::synchronize();
  const unsigned long long launches = cudasimKernelLaunches() - before;
  EXPECT_TRUE(all_close(values(got), values(f(view(x))), tol, tol)) << kernel;
  return {kernel, launches};
}

Tensor column_sum(const Tensor& x) { return sum(x, {0}); }

TEST(CudaReduceDispatch, ColumnReductionsTakeTheColumnKernelInOneLaunch) {
  WICK_REQUIRE_CUDA();
  for (DType t : {DType::Float32, DType::BFloat16, DType::Float64, DType::Int64}) {
    SCOPED_TRACE(dtype_name(t));
    const double tol = t == DType::BFloat16 ? 1e-2 : 1e-5;
    // A bias gradient: rows few (no split) and many (chunks finished by the last block).
    Dispatched d = reduce_dispatch_on_gpu(random({40, 64}, t, 1), column_sum, tol);
    EXPECT_EQ(d.kernel, "reduce_columns_kernel<V>");
    EXPECT_EQ(d.launches, 1u);
    d = reduce_dispatch_on_gpu(random({3000, 16}, t, 2), column_sum, tol);
    EXPECT_EQ(d.kernel, "reduce_columns_kernel<V>");
    EXPECT_EQ(d.launches, 1u);
    // The middle dim of [A, R, C], and both outer dims of [R1, R2, C] (they merge).
    EXPECT_EQ(reduce_dispatch_on_gpu(random({3, 50, 32}, t, 3), [](const Tensor& x) { return sum(x, {1}); }, tol).kernel,
              "reduce_columns_kernel<V>");
    EXPECT_EQ(reduce_dispatch_on_gpu(random({30, 7, 32}, t, 4), [](const Tensor& x) { return sum(x, {0, 1}); }, tol).kernel,
              "reduce_columns_kernel<V>");
    // Odd widths and a view starting one element in: element by element, still one launch.
    d = reduce_dispatch_on_gpu(random({2000, 5}, t, 5), column_sum, tol);
    EXPECT_EQ(d.kernel, "reduce_columns_kernel<1>");
    EXPECT_EQ(d.launches, 1u);
    EXPECT_EQ(reduce_dispatch_on_gpu(random({40, 65}, t, 6), column_sum, tol,
                                     [](const Tensor& x) { return x.narrow(1, 1, 64); })
                  .kernel,
              "reduce_columns_kernel<1>");
  }
  // Welford's state is 24 bytes: at most 64 bytes of states per thread, so float32 var
  // reads two columns per load (8-byte packs), still the packed kernel.
  EXPECT_EQ(reduce_dispatch_on_gpu(random({64, 32}, DType::Float32, 7), [](const Tensor& x) { return var(x, {0}); })
                .kernel,
            "reduce_columns_kernel<V>");
  EXPECT_EQ(reduce_dispatch_on_gpu(random({64, 32}, DType::Float32, 8), [](const Tensor& x) { return max(x, 0).second; })
                .kernel,
            "reduce_columns_kernel<V>");
}

TEST(CudaReduceDispatch, OtherLayoutsKeepTheirKernels) {
  WICK_REQUIRE_CUDA();
  const DType t = DType::Float32;
  // Unit-stride rows: a warp per row, or a few long rows split over blocks in one launch.
  EXPECT_EQ(reduce_dispatch_on_gpu(random({64, 100}, t, 1), [](const Tensor& x) { return sum(x, {1}); }).kernel,
            "reduce_rows_kernel");
  const Dispatched full = reduce_dispatch_on_gpu(random({1 << 18}, t, 2), [](const Tensor& x) { return sum(x); }, 1e-4);
  EXPECT_EQ(full.kernel, "reduce_split_kernel");
  EXPECT_EQ(full.launches, 1u);
  // Reductions over two dims that do not merge: the generic kernel.
  EXPECT_EQ(reduce_dispatch_on_gpu(random({32, 16, 8}, t, 3), [](const Tensor& x) { return sum(x, {0, 2}); }).kernel,
            "reduce_kernel");
  // The sum over dim 0 of a transposed view reads unit-stride rows: the row kernel.
  EXPECT_EQ(reduce_dispatch_on_gpu(random({24, 16}, t, 4), column_sum, 1e-5,
                                   [](const Tensor& x) { return x.transpose(0, 1); })
                .kernel,
            "reduce_rows_kernel");
  // Switched off (KernelTuning::reduce_unit_stride): the generic kernel for columns too.
  cuda::KernelTuning generic;
  generic.reduce_unit_stride = false;
  cuda::set_kernel_tuning(generic);
  EXPECT_EQ(reduce_dispatch_on_gpu(random({40, 64}, t, 5), column_sum).kernel, "reduce_kernel");
  cuda::set_kernel_tuning({});
}

TEST(CudaSoftmaxDispatch, EachRowLengthTakesItsKernel) {
  WICK_REQUIRE_CUDA();
  const auto sm = [](const Tensor& x) { return softmax(x, 1); };
  for (DType t : {DType::BFloat16, DType::Float16, DType::Float32}) {
    SCOPED_TRACE(dtype_name(t));
    const double tol = t == DType::Float32 ? 1e-5 : 1e-2;
    EXPECT_EQ(reduce_dispatch_on_gpu(random({9, 100}, t, 1), sm, tol).kernel, "softmax_rows_kernel");
    EXPECT_EQ(reduce_dispatch_on_gpu(random({5, 4096}, t, 2), sm, tol).kernel, "softmax_rows_kernel");
    EXPECT_EQ(reduce_dispatch_on_gpu(random({3, 4097}, t, 3), sm, tol).kernel, "softmax_rows_kernel");  // unpacked
    // 32768: 16-bit rows in 512-thread blocks (8 packs per thread, two blocks per
    // multiprocessor); float32 rows in shared memory.
    EXPECT_EQ(reduce_dispatch_on_gpu(random({2, 32768}, t, 4), sm, tol).kernel,
              t == DType::Float32 ? "softmax_smem_kernel" : "softmax_long_kernel");
    EXPECT_EQ(reduce_dispatch_on_gpu(random({2, 16392}, t, 5), sm, tol).kernel,
              t == DType::Float32 ? "softmax_smem_kernel" : "softmax_long_kernel");
    EXPECT_EQ(reduce_dispatch_on_gpu(random({1, 40000}, t, 6), sm, tol).kernel, "softmax_smem_kernel");
  }
  // 16384 16-bit elements (2048 packs) stay in the register rows (1024 threads, 2 packs each).
  EXPECT_EQ(reduce_dispatch_on_gpu(random({2, 16384}, DType::BFloat16, 7), sm, 1e-2).kernel, "softmax_rows_kernel");
  EXPECT_EQ(reduce_dispatch_on_gpu(random({2, 32768}, DType::BFloat16, 8),
                                   [](const Tensor& x) { return log_softmax(x, 1); }, 1e-2)
                .kernel,
            "softmax_long_kernel");
}

}  // namespace
}  // namespace wick::test
