// CPU reductions of float32 matrices: sum over each row (reads the matrix, writes one value
// per row) and softmax over each row (reads and writes the matrix); and, for information, the
// other reductions' math (kernels/reduce_math.h) over rows and over columns (dim 0: the
// loops' "accumulate" order). Reported as bandwidth, to read against the memcpy baseline in
// cpu_elementwise.cpp.
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

// One value per row (dim -1) or per column (dim 0) of op(x).
void reduction(benchmark::State& s, const Shape& shape, const std::string& op, Tensor (*run)(const Tensor&), bool rows) {
  guarded(s, [&] {
    manual_seed(0);
    Tensor x = randn(shape);
    for (auto _ : s) {
      Tensor out = run(x);
      benchmark::DoNotOptimize(out.data_ptr());
    }
    report_bytes(s, (numel_of(shape) + shape[rows ? 0 : 1]) * sizeof(float));
    s.counters["omp_threads"] = omp_get_max_threads();
    s.SetLabel("op=" + op + " dtype=float32 shape=" + dims_str(shape));
  });
}

struct Reduction {
  const char* op;
  Tensor (*run)(const Tensor&);
  bool rows;
};
const Reduction kReductions[] = {
    {"var_rows", [](const Tensor& x) { return var(x, {-1}); }, true},
    {"var_cols", [](const Tensor& x) { return var(x, {0}); }, false},
    {"logsumexp_rows", [](const Tensor& x) { return logsumexp(x, {-1}); }, true},
    {"amax_rows", [](const Tensor& x) { return amax(x, {-1}); }, true},
    {"amax_cols", [](const Tensor& x) { return amax(x, {0}); }, false},
    {"argmax_rows", [](const Tensor& x) { return argmax(x, -1); }, true},
};

bool register_all() {
  for (const Reduction& r : kReductions) {
    const Shape shape{4096, 4096};
    benchmark::RegisterBenchmark(("cpu/" + std::string(r.op) + "/float32/" + dims_str(shape)).c_str(),
                                 [r, shape](benchmark::State& s) { reduction(s, shape, r.op, r.run, r.rows); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
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
