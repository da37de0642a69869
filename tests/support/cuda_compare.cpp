#include "tests/support/cuda_compare.h"

namespace wick::test {

Tensor same_layout_on(const Tensor& t, Device device) {
  const auto& s = t.storage();
  Tensor flat(s, {static_cast<int64_t>(s->nbytes())}, {1}, 0, DType::UInt8);
  Tensor moved = flat.to(device);
  return Tensor(moved.storage(), t.shape(), t.strides(), t.offset(), t.dtype());
}

void expect_cuda_matches_cpu(const std::string& what, const std::vector<Tensor>& inputs, const OpFn& op, double rtol,
                             double atol) {
  SCOPED_TRACE(what);
  Tensor expected = op(inputs);
  std::vector<Tensor> on_gpu;
  for (const Tensor& t : inputs) on_gpu.push_back(same_layout_on(t, Device::cuda(0)));
  Tensor actual = op(on_gpu);
  ASSERT_TRUE(actual.device().is_cuda()) << "result is on " << actual.device();
  ASSERT_EQ(actual.shape(), expected.shape());
  ASSERT_EQ(actual.dtype(), expected.dtype());
  EXPECT_TRUE(all_close(values(actual), values(expected), rtol < 0 ? default_rtol(expected.dtype()) : rtol,
                        atol < 0 ? default_atol(expected.dtype()) : atol));
}

}  // namespace wick::test
