// CUDA reductions on 64M-element matrices (sum of each row of [8192, 8192], of each column
// (over the rows), and of all elements), the column sum of a bias gradient ([8192, 768] over
// the rows), and softmax along the last dim of [32768, 1024], [8192, 4096] and [4096, 32768],
// float32 and bfloat16. Bandwidth counts the input read and the output written once each.
// Targets (bench/README.md): sums >= 85% of copy bandwidth and never slower than torch;
// softmax >= 80% of copy bandwidth.
#include <wick/wick.h>

#include "bench/bench_support.h"
#include "bench/cuda_timing.h"

namespace wick::bench {
namespace {

const int kBatch = static_cast<int>(sized(20, 1));

// op: "sum_rows" (sum over the last dim), "sum_cols" (over the first), "sum_all" or
// "softmax" (over the last dim).
void reduction(benchmark::State& s, const std::string& op, const Shape& shape, DType dtype) {
  guarded(s, [&] {
    manual_seed(0);
    Tensor x = randn(shape, Device::cuda()).to(dtype);
    int64_t out_numel = 1;
    if (op == "sum_rows") {
      out_numel = shape[0];
      time_on_gpu(s, kBatch, [&] { benchmark::DoNotOptimize(sum(x, {-1}).data_ptr()); });
    } else if (op == "sum_cols") {
      out_numel = shape[1];
      time_on_gpu(s, kBatch, [&] { benchmark::DoNotOptimize(sum(x, {0}).data_ptr()); });
    } else if (op == "sum_all") {
      time_on_gpu(s, kBatch, [&] { benchmark::DoNotOptimize(sum(x).data_ptr()); });
    } else {
      out_numel = x.numel();
      time_on_gpu(s, kBatch, [&] { benchmark::DoNotOptimize(softmax(x, -1).data_ptr()); });
    }
    report_bytes(s, static_cast<double>(x.numel() + out_numel) * static_cast<double>(element_size(dtype)));
    s.SetLabel("op=" + op + " dtype=" + dtype_name(dtype) + " shape=" + dims_str(shape));
  });
}

bool register_all() {
  struct Case {
    const char* op;
    Shape shape;
  };
  const int64_t r = sized(1, 64);  // smoke runs divide every dim by 64
  for (const Case& c : {Case{"sum_rows", {8192 / r, 8192 / r}}, Case{"sum_cols", {8192 / r, 8192 / r}},
                        Case{"sum_cols", {8192 / r, 768 / r}}, Case{"sum_all", {8192 / r, 8192 / r}},
                        Case{"softmax", {32768 / r, 1024 / r}}, Case{"softmax", {8192 / r, 4096 / r}},
                        Case{"softmax", {4096 / r, 32768 / r}}}) {
    for (const DType dtype : {DType::Float32, DType::BFloat16}) {
      const std::string id = std::string("cuda/") + c.op + "/" + dtype_name(dtype) + "/" + dims_str(c.shape);
      register_gpu_case(id, [c, dtype](benchmark::State& s) { reduction(s, c.op, c.shape, dtype); });
    }
  }
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace wick::bench
