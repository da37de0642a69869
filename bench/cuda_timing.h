#pragma once
// GPU timing for the CUDA benchmarks: CUDA events around a batch of calls on the current
// stream, so the time is the GPU's and the host's launch cost hides behind the queue. The
// benchmark iteration is one batch and its reported (manual) time is the mean per call;
// waiting for the batch happens outside the timed span.
#include <benchmark/benchmark.h>

#include <string>
#include <utility>

#include <wick/tensor/cuda.h>

namespace wick::bench {

template <class Op>
void time_on_gpu(benchmark::State& s, int batch, Op&& op) {
  op();  // warm-up: first launch, allocator cache, library handles
  cuda::synchronize();
  cuda::Event start(true), stop(true);
  for (auto _ : s) {
    start.record();
    for (int i = 0; i < batch; ++i) op();
    stop.record();
    stop.synchronize();
    s.SetIterationTime(static_cast<double>(start.elapsed_ms(stop)) * 1e-3 / batch);
  }
  s.counters["batch"] = batch;
}

// Registers a case whose body times itself with time_on_gpu (manual time, microseconds).
template <class Fn>
benchmark::internal::Benchmark* register_gpu_case(const std::string& name, Fn&& fn) {
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))->UseManualTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace wick::bench
