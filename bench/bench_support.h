#pragma once
// What every wick benchmark shares: the counters torch_compare.py reads, the label that
// names a case (op, dtype, shape...) so the script can rebuild it in PyTorch, and turning
// a wick::Error (an op not written yet, a missing kernel) into a skipped benchmark instead
// of a crashed run.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>

#include <wick/tensor/shape.h>

namespace wick::bench {

// WICK_BENCH_SMOKE=1 (ctest's smoke runs on the CUDA simulator): every case at a tiny size
// with one op per timed batch, so each benchmarked path runs once and quickly; the timings
// then mean nothing.
inline bool smoke_run() {
  static const bool smoke = [] {
    const char* v = std::getenv("WICK_BENCH_SMOKE");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  return smoke;
}

// `full` normally, `smoke` in a smoke run (sizes, batch counts).
inline int64_t sized(int64_t full, int64_t smoke) { return smoke_run() ? smoke : full; }

// Bytes counted as every element read plus every element written, once each (memcpy of
// n bytes counts 2n), so the ops compare with the copy baselines.
inline void report_bytes(benchmark::State& s, double bytes_per_iteration) {
  s.SetBytesProcessed(static_cast<int64_t>(bytes_per_iteration * static_cast<double>(s.iterations())));
}

inline void report_flops(benchmark::State& s, double flops_per_iteration) {
  s.counters["FLOP/s"] =
      benchmark::Counter(flops_per_iteration * static_cast<double>(s.iterations()), benchmark::Counter::kIsRate);
}

// "4096x4096" (what torch_compare.py parses back into a shape).
inline std::string dims_str(const Shape& shape) {
  std::string r;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) r += 'x';
    r += std::to_string(shape[i]);
  }
  return r.empty() ? "scalar" : r;
}

// Runs a benchmark body; an exception marks the case as skipped with its message (the JSON
// gets error_occurred/error_message) and the other cases still run.
template <class Body>
void guarded(benchmark::State& s, Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    s.SkipWithError(e.what());
  }
}

}  // namespace wick::bench
