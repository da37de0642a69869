// wick_bench_attention_memory: the peak resident memory and time of one attention forward +
// backward on the CPU, one configuration per process (so ru_maxrss is this run's alone).
// bench/attention_compare.py runs it over sequence lengths and backends next to PyTorch.
//
//   wick_bench_attention_memory --backend fused|math --seq 4096 [--heads 4] [--dim 64] [--batch 1]
// prints one JSON line: {"backend", "seq", "heads", "dim", "batch", "seconds", "peak_rss_bytes", "baseline_rss_bytes"}
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <wick/wick.h>

namespace {

long max_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss * 1024L;  // Linux reports KiB
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "fused";
  int64_t seq = 1024, heads = 4, dim = 64, batch = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--backend") backend = value;
    else if (flag == "--seq") seq = std::stoll(value);
    else if (flag == "--heads") heads = std::stoll(value);
    else if (flag == "--dim") dim = std::stoll(value);
    else if (flag == "--batch") batch = std::stoll(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (backend != "fused" && backend != "math") {
    std::fprintf(stderr, "--backend must be fused or math\n");
    return 2;
  }
  using namespace wick;
  const Shape shape{batch, heads, seq, dim};
  Variable q(randn(shape), true), k(randn(shape), true), v(randn(shape), true);
  const Tensor grad = randn(shape);
  const long baseline = max_rss_bytes();
  const auto start = std::chrono::steady_clock::now();
  Variable out = scaled_dot_product_attention(q, k, v, Tensor(), 0.0, /*is_causal=*/true, std::nullopt, false, nullptr,
                                              backend == "fused" ? AttentionBackend::Fused : AttentionBackend::Math);
  out.backward(grad);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "{\"backend\": \"%s\", \"seq\": %lld, \"heads\": %lld, \"dim\": %lld, \"batch\": %lld, \"seconds\": %.6f, "
      "\"peak_rss_bytes\": %ld, \"baseline_rss_bytes\": %ld}\n",
      backend.c_str(), static_cast<long long>(seq), static_cast<long long>(heads), static_cast<long long>(dim),
      static_cast<long long>(batch), seconds, max_rss_bytes(), baseline);
  return 0;
}
