// CUDA elementwise ops against the device-to-device copy baseline (cudaMemcpy of 256 MB:
// 256 MB read + 256 MB written), add/mul/gelu on 64M float32 and bfloat16 elements, and
// a transformer's bias add beside a same-shape add, and the host-side cost of one small op
// (a + b on 1024 floats, call to return, no waiting for the GPU). Targets (bench/README.md): >= 85% of copy bandwidth and never slower than torch;
// host cost <= 60% of torch eager's.
#include <cuda_runtime.h>

#include <chrono>

#include <wick/wick.h>

#include "bench/bench_support.h"
#include "bench/cuda_timing.h"
#include "kernels/cuda/cuda_check.h"

namespace wick::bench {
namespace {

const int64_t kNumel = sized(int64_t{1} << 26, 4099);  // 64M elements
const int kBatch = static_cast<int>(sized(20, 1));

void copy_baseline(benchmark::State& s) {
  guarded(s, [&] {
    const Shape shape{kNumel};  // 64M floats = 256 MB
    Tensor src = zeros(shape, Device::cuda()), dst = zeros(shape, Device::cuda());
    auto stream = static_cast<cudaStream_t>(cuda::current_stream().handle());
    time_on_gpu(s, kBatch, [&] {
      WICK_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), src.nbytes(), cudaMemcpyDeviceToDevice, stream));
    });
    report_bytes(s, 2.0 * static_cast<double>(src.nbytes()));
    s.SetLabel("op=copy dtype=float32 shape=" + dims_str(shape));
  });
}

// `inputs` tensors read, one written.
template <class Op>
void elementwise(benchmark::State& s, const std::string& name, DType dtype, int inputs, Op op) {
  guarded(s, [&] {
    const Shape shape{kNumel};
    manual_seed(0);
    Tensor a = randn(shape, Device::cuda()).to(dtype), b = randn(shape, Device::cuda()).to(dtype);
    time_on_gpu(s, kBatch, [&] { op(a, b); });
    report_bytes(s, (inputs + 1.0) * static_cast<double>(kNumel) * static_cast<double>(element_size(dtype)));
    s.SetLabel("op=" + name + " dtype=" + dtype_name(dtype) + " shape=" + dims_str(shape));
  });
}

// A transformer's bias add, x [8192, 768] + b [768] (the packed rows kernel), beside the
// same-shape add x + y [8192, 768] (the contiguous kernel) in the same run: the target is
// the bias add at >= 90% of the contiguous add's bandwidth (issue 45). Bytes: x read, out
// written, b (or y) read.
void bias_add(benchmark::State& s, DType dtype, bool row_vector) {
  guarded(s, [&] {
    const int64_t rows = sized(8192, 3), width = 768;
    manual_seed(0);
    Tensor x = randn({rows, width}, Device::cuda()).to(dtype);
    Tensor b = randn(row_vector ? Shape{width} : Shape{rows, width}, Device::cuda()).to(dtype);
    time_on_gpu(s, kBatch, [&] { benchmark::DoNotOptimize(add(x, b).data_ptr()); });
    report_bytes(s, static_cast<double>(2 * x.numel() + b.numel()) * static_cast<double>(element_size(dtype)));
    s.SetLabel(std::string("op=") + (row_vector ? "bias_add" : "add") + " dtype=" + dtype_name(dtype) +
               " shape=" + dims_str(x.shape()));
  });
}

// Host time of `a + b` on 1024 floats: the launch path only (argument checks, dispatch,
// output allocation from the cache, kernel launch). The GPU work queues up and is waited
// for outside the timed span.
void host_overhead(benchmark::State& s) {
  guarded(s, [&] {
    constexpr int kCalls = 256;
    Tensor a = randn({1024}, Device::cuda()), b = randn({1024}, Device::cuda());
    Tensor warm = add(a, b);
    cuda::synchronize();
    for (auto _ : s) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kCalls; ++i) {
        Tensor c = add(a, b);
        benchmark::DoNotOptimize(c.data_ptr());
      }
      const auto t1 = std::chrono::steady_clock::now();
      s.SetIterationTime(std::chrono::duration<double>(t1 - t0).count() / kCalls);
      cuda::synchronize();
    }
    s.counters["batch"] = kCalls;
    s.SetLabel("op=host_add dtype=float32 shape=1024");
  });
}

void add_op(const Tensor& a, const Tensor& b) { benchmark::DoNotOptimize(add(a, b).data_ptr()); }
void mul_op(const Tensor& a, const Tensor& b) { benchmark::DoNotOptimize(mul(a, b).data_ptr()); }
void gelu_op(const Tensor& a, const Tensor&) { benchmark::DoNotOptimize(gelu(a).data_ptr()); }

bool register_all() {
  register_gpu_case("cuda/copy/float32/" + dims_str({kNumel}), copy_baseline);
  struct Case {
    const char* name;
    void (*op)(const Tensor&, const Tensor&);
    int inputs;
  };
  for (const Case& c : {Case{"add", add_op, 2}, Case{"mul", mul_op, 2}, Case{"gelu", gelu_op, 1}}) {
    for (const DType dtype : {DType::Float32, DType::BFloat16}) {
      const std::string id = std::string("cuda/") + c.name + "/" + dtype_name(dtype) + "/" + dims_str({kNumel});
      register_gpu_case(id, [c, dtype](benchmark::State& s) { elementwise(s, c.name, dtype, c.inputs, c.op); });
    }
  }
  for (const DType dtype : {DType::Float32, DType::BFloat16})
    for (const bool row_vector : {false, true}) {
      const std::string id = std::string("cuda/") + (row_vector ? "bias_add/" : "add/") + dtype_name(dtype) +
                             (row_vector ? "/8192x768+768" : "/8192x768+8192x768");
      register_gpu_case(id, [dtype, row_vector](benchmark::State& s) { bias_add(s, dtype, row_vector); });
    }
  benchmark::RegisterBenchmark("cuda/host_add/float32/1024", host_overhead)
      ->UseManualTime()
      ->Unit(benchmark::kNanosecond);
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace wick::bench
