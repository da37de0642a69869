// CPU float32 matrix products C = A @ B (n x n x n, 2 n^3 FLOP) through wick::matmul, next to
// Eigen's GEMM called directly on the same sizes with the same number of threads: wick's
// CPU GEMM is Eigen underneath, so the gap is wick's own overhead. Target: n = 1024 at
// >= 100% of Eigen direct.
#include <omp.h>

#include <Eigen/Core>

#include <wick/wick.h>

#include "bench/bench_support.h"

namespace wick::bench {
namespace {

void wick_matmul(benchmark::State& s, int64_t n) {
  guarded(s, [&] {
    manual_seed(0);
    Tensor a = randn({n, n}), b = randn({n, n});
    for (auto _ : s) {
      Tensor c = matmul(a, b);
      benchmark::DoNotOptimize(c.data_ptr());
    }
    report_flops(s, 2.0 * n * n * n);
    s.counters["omp_threads"] = omp_get_max_threads();
    s.SetLabel("op=matmul dtype=float32 shape=" + dims_str({n, n, n}));
  });
}

void eigen_matmul(benchmark::State& s, Eigen::Index n) {
  Eigen::setNbThreads(omp_get_max_threads());
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
  for (auto _ : s) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  report_flops(s, 2.0 * n * n * n);
  s.counters["omp_threads"] = Eigen::nbThreads();
  s.SetLabel("op=matmul_eigen dtype=float32 shape=" + dims_str({n, n, n}));
}

bool register_all() {
  for (const int64_t n : {512, 1024, 2048}) {
    const std::string size = std::to_string(n) + "x" + std::to_string(n) + "x" + std::to_string(n);
    benchmark::RegisterBenchmark(("cpu/matmul/float32/" + size).c_str(),
                                 [n](benchmark::State& s) { wick_matmul(s, n); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("cpu/matmul_eigen/float32/" + size).c_str(),
                                 [n](benchmark::State& s) { eigen_matmul(s, n); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace wick::bench
