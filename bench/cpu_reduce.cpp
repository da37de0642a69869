// CPU reductions along the last dim of float32 matrices: sum over each row (reads the
// matrix, writes one value per row) and softmax over each row (reads and writes the matrix).
// Reported as bandwidth, to read against the memcpy baseline in cpu_elementwise.cpp.
#include <omp.h>

#include <wick/wick.h>

#include "bench/bench_support.h"

namespace wick::bench {
namespace {

void sum_rows(benchmark::State& s, const Shape& shape) {
  guarded(s, [&] {
    manual_seed(0);
    Tensor x = randn(shape);
    for (auto _ : s) {
      Tensor out = sum(x, {-1});
      benchmark::DoNotOptimize(out.data_ptr());
    }
    report_bytes(s, (numel_of(shape) + shape[0]) * sizeof(float));
    s.counters["omp_threads"] = omp_get_max_threads();
    s.SetLabel("op=sum_rows dtype=float32 shape=" + dims_str(shape));
  });
}

void softmax_rows(benchmark::State& s, const Shape& shape) {
  guarded(s, [&] {
    manual_seed(0);
    Tensor x = randn(shape);
    for (auto _ : s) {
      Tensor out = softmax(x, -1);
      benchmark::DoNotOptimize(out.data_ptr());
    }
    report_bytes(s, 2.0 * numel_of(shape) * sizeof(float));
    s.counters["omp_threads"] = omp_get_max_threads();
    s.SetLabel("op=softmax dtype=float32 shape=" + dims_str(shape));
  });
}

bool register_all() {
  for (const Shape& shape : {Shape{4096, 4096}, Shape{16384, 1024}}) {
    benchmark::RegisterBenchmark(("cpu/sum_rows/float32/" + dims_str(shape)).c_str(),
                                 [shape](benchmark::State& s) { sum_rows(s, shape); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("cpu/softmax/float32/" + dims_str(shape)).c_str(),
                                 [shape](benchmark::State& s) { softmax_rows(s, shape); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace wick::bench
