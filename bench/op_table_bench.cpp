// The op tables' rows timed (issue 24, item 4: a perf mode over the test rows): each row of
// the unary, binary and reduction tables (tests/autograd/{unary,binary,reduce}_table.h) at
// each of its dtypes, on the CPU and, where there is a CUDA device (a GPU, or the
// simulator), on it; inputs drawn as the tests draw them (the row's domain), 1024 x 1024
// elements by default (--shape=RxC), the reductions over the last dim. Names are
// unary/expm1/float16/cpu, binary/atan2/float32/cuda:0, reduce/logsumexp/float32/cpu; pick
// with --benchmark_filter. A row added to a table is timed here without a line of its own.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>

#include "bench/cuda_timing.h"
#include "tests/autograd/binary_table.h"
#include "tests/autograd/reduce_table.h"
#include "tests/autograd/unary_table.h"

namespace {

using namespace wick;
using namespace wick::test;

// CUDA: GPU time per call over batches (bench/cuda_timing.h); CPU: wall time per call.
void time_op(benchmark::State& s, Device d, const std::function<Tensor()>& op) {
  if (d.is_cuda()) return wick::bench::time_on_gpu(s, 10, op);
  for (auto _ : s) benchmark::DoNotOptimize(op());
}

template <class Make>
void add(const std::string& name, Device d, Make make) {
  auto* b = benchmark::RegisterBenchmark((name + "/" + d.str()).c_str(), [d, make](benchmark::State& s) {
    const std::function<Tensor()> op = make(d);  // inputs drawn only when the benchmark is picked
    time_op(s, d, op);
  });
  b->Unit(benchmark::kMicrosecond);
  if (d.is_cuda()) b->UseManualTime();
}

// --shape=RxC, taken out of argv before Google Benchmark reads the rest.
Shape take_shape(int& argc, char** argv) {
  Shape shape = {1024, 1024};
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--shape=", 8) != 0) continue;
    long long rows = 0, cols = 0;
    if (std::sscanf(argv[i] + 8, "%lldx%lld", &rows, &cols) != 2 || rows < 0 || cols < 0)
      throw Error("op_table_bench: --shape wants RxC (two non-negative counts), got " + std::string(argv[i] + 8));
    shape = {rows, cols};
    for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
    --argc;
    break;
  }
  return shape;
}

}  // namespace

int main(int argc, char** argv) {
  const Shape shape = take_shape(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::vector<Device> devices = {Device::cpu()};
  if (cuda::device_count() > 0) devices.push_back(Device::cuda());
  for (Device d : devices) {
    for (const UnaryRow& r : unary_table())
      for (DType t : r.dtypes)
        add("unary/" + name_part(r.name) + "/" + dtype_name(t), d, [&r, t, shape](Device on) {
          const Tensor x = random(shape, t, 1, r.lo, r.hi).to(on);
          return [&r, x] { return r.op(x); };
        });
    for (const BinaryRow& r : binary_table())
      for (DType t : r.dtypes)
        add("binary/" + name_part(r.name) + "/" + dtype_name(t), d, [&r, t, shape](Device on) {
          const Tensor a = row_input(r, false, shape, t, 1).to(on), b = row_input(r, true, shape, t, 2).to(on);
          return [&r, a, b] { return r.op(a, b); };
        });
    for (const ReduceRow& r : reduce_rows())
      for (DType t : r.dtypes)
        add("reduce/" + name_part(r.name) + "/" + dtype_name(t), d, [&r, t, shape](Device on) {
          const Tensor x = row_input(r, shape, t, 1).to(on);
          return [&r, x] { return r.op(x, {-1}, false); };
        });
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
