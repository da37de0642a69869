// CPU elementwise ops against the memory-bandwidth baseline: std::memcpy of the same 16M
// floats (read 64 MB + write 64 MB), then add, mul and gelu on 16M contiguous float32, and
// add/gelu on [4096, 4096] inputs that are transposed views ("transposed": the output takes
// their layout, as in PyTorch, so memory is walked in order) and add with only its second
// input transposed ("mixed": the output is row-major, so one input is read with a stride of
// 4096). Targets (bench/README.md): contiguous ops >= 60% of memcpy bandwidth, transposed
// and mixed within 3x of contiguous.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <wick/wick.h>

#include "bench/bench_support.h"

namespace wick::bench {
namespace {

constexpr int64_t kNumel = int64_t{1} << 24;  // 16M floats = 64 MB
constexpr int64_t kSide = 4096;               // kSide * kSide == kNumel

// std::memcpy split into one contiguous chunk per thread: the bandwidth the ops can hope for
// with that many threads.
void memcpy_baseline(benchmark::State& s) {
  const int threads = static_cast<int>(s.range(0));
  std::vector<float> src(kNumel, 1.0f), dst(kNumel, 0.0f);
  const int64_t chunk = (kNumel + threads - 1) / threads;
  for (auto _ : s) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      const int64_t b = t * chunk, e = std::min(kNumel, b + chunk);
      if (b < e) std::memcpy(dst.data() + b, src.data() + b, static_cast<size_t>(e - b) * sizeof(float));
    }
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  report_bytes(s, 2.0 * kNumel * sizeof(float));
  s.counters["omp_threads"] = threads;
  s.SetLabel("op=memcpy dtype=float32 shape=" + dims_str({kNumel}));
}

// op(a, b) returns the output; it reads `inputs` of a and b (gelu reads only a).
template <class Op>
void elementwise(benchmark::State& s, const std::string& name, const Shape& shape, const std::string& layout,
                 int inputs, Op op) {
  guarded(s, [&] {
    manual_seed(0);
    Tensor a = randn(shape), b = randn(shape);
    if (layout == "transposed") a = a.t();
    if (layout != "contiguous") b = b.t();
    for (auto _ : s) {
      Tensor out = op(a, b);
      benchmark::DoNotOptimize(out.data_ptr());
    }
    report_bytes(s, (inputs + 1.0) * numel_of(shape) * sizeof(float));
    s.counters["omp_threads"] = omp_get_max_threads();
    s.SetLabel("op=" + name + " dtype=float32 shape=" + dims_str(shape) + " layout=" + layout);
  });
}

// add with every output fresh from the operating system: the CPU allocator's cache is
// emptied (untimed) after each call, so the next output's pages are faulted in on first
// write. The gap to `add` is what that cache saves.
void add_fresh_pages(benchmark::State& s) {
  guarded(s, [&] {
    manual_seed(0);
    Tensor a = randn({kNumel}), b = randn({kNumel});
    for (auto _ : s) {
      {
        Tensor out = add(a, b);
        benchmark::DoNotOptimize(out.data_ptr());
      }
      s.PauseTiming();
      cpu_empty_cache();
      s.ResumeTiming();
    }
    report_bytes(s, 3.0 * kNumel * sizeof(float));
    s.SetLabel("op=add dtype=float32 shape=" + dims_str({kNumel}) + " layout=contiguous alloc=fresh_pages");
  });
}

Tensor add_op(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor mul_op(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor gelu_op(const Tensor& a, const Tensor&) { return gelu(a); }

bool register_all() {
  auto* copy = benchmark::RegisterBenchmark("cpu/memcpy/float32/16777216", memcpy_baseline)->ArgName("threads")->Arg(1);
  if (omp_get_max_threads() > 1) copy->Arg(omp_get_max_threads());
  copy->UseRealTime()->Unit(benchmark::kMillisecond);

  const Shape flat{kNumel}, square{kSide, kSide};
  struct Case {
    const char* name;
    Tensor (*op)(const Tensor&, const Tensor&);
    int inputs;
    const char* layout;
  };
  for (const Case& c : {Case{"add", add_op, 2, "contiguous"}, Case{"mul", mul_op, 2, "contiguous"},
                        Case{"gelu", gelu_op, 1, "contiguous"}, Case{"add", add_op, 2, "transposed"},
                        Case{"add", add_op, 2, "mixed"}, Case{"gelu", gelu_op, 1, "transposed"}}) {
    const bool contiguous = std::string(c.layout) == "contiguous";
    const Shape shape = contiguous ? flat : square;
    const std::string id = std::string("cpu/") + c.name + (contiguous ? "" : std::string("_") + c.layout) +
                           "/float32/" + dims_str(shape);
    benchmark::RegisterBenchmark(id.c_str(),
                                 [c, shape](benchmark::State& s) {
                                   elementwise(s, c.name, shape, c.layout, c.inputs, c.op);
                                 })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("cpu/add_fresh_pages/float32/16777216", add_fresh_pages)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace wick::bench
