// wick_bench_allreduce: all-reduce bus bandwidth of wick's communicators next to the library
// they wrap, called directly on the same buffers in the same run.
//   Gloo (CPU): N ranks as threads of this process on loopback, float32 sum.
//   NCCL (GPU): one rank per visible device, when there is one (allreduce_nccl.cpp).
// busbw = algbw * 2(n-1)/n with algbw = bytes / time (nccl-tests' definition), so numbers
// compare across rank counts. A plain timing program rather than Google Benchmark: every
// measurement needs N threads in lock step, which Google Benchmark's loop models badly.
//
// Usage: wick_bench_allreduce [--ranks N] [--max-bytes B] [--min-seconds S]
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/math.h>

#include <wick/distributed/comm/gloo_communicator.h>
#include <wick/distributed/comm/in_process_store.h>
#include <wick/tensor/factories.h>

namespace wick::bench {

struct AllReduceRow {
  size_t bytes;
  double wick_seconds;
  double raw_seconds;
};

// Defined in allreduce_nccl.cpp (or allreduce_nccl_none.cpp without CUDA).
void bench_nccl_allreduce(const std::vector<size_t>& sizes, double min_seconds);

double busbw_gbps(size_t bytes, double seconds, int ranks) {
  if (seconds <= 0) return 0;
  return static_cast<double>(bytes) / seconds * 2.0 * (ranks - 1) / ranks / 1e9;
}

void print_table(const char* title, int ranks, const std::vector<AllReduceRow>& rows, const char* raw_name) {
  std::printf("\n%s, %d ranks, float32 sum (busbw in GB/s)\n", title, ranks);
  std::printf("%12s %14s %14s %8s %12s\n", "bytes", "wick busbw", (std::string(raw_name) + " busbw").c_str(), "ratio",
              "wick time us");
  for (const AllReduceRow& r : rows) {
    const double w = busbw_gbps(r.bytes, r.wick_seconds, ranks);
    const double g = busbw_gbps(r.bytes, r.raw_seconds, ranks);
    std::printf("%12zu %14.3f %14.3f %8.3f %12.1f\n", r.bytes, w, g, g > 0 ? w / g : 0.0, r.wick_seconds * 1e6);
  }
  std::fflush(stdout);
}

namespace {

using Clock = std::chrono::steady_clock;

// Times `op` on every rank in lock step: warm-up, then as many rounds as fit min_seconds
// (at least 3). Returns seconds per op, the slowest rank's.
double time_in_lock_step(int ranks, std::barrier<>& sync, int rank, double min_seconds, const std::function<void()>& op,
                         std::vector<double>& per_rank, int& rounds_shared) {
  op();
  op();
  sync.arrive_and_wait();
  if (rank == 0) {
    const auto start = Clock::now();
    op();
    const double one = std::chrono::duration<double>(Clock::now() - start).count();
    rounds_shared = std::clamp(static_cast<int>(min_seconds / std::max(one, 1e-7)), 3, 2000);
  } else {
    op();
  }
  sync.arrive_and_wait();
  const int rounds = rounds_shared;
  sync.arrive_and_wait();
  const auto start = Clock::now();
  for (int i = 0; i < rounds; ++i) op();
  per_rank[rank] = std::chrono::duration<double>(Clock::now() - start).count() / rounds;
  sync.arrive_and_wait();
  return *std::max_element(per_rank.begin(), per_rank.end());
}

void bench_gloo(int ranks, const std::vector<size_t>& sizes, double min_seconds) {
  distributed::InProcessStore store;
  std::barrier<> sync(ranks);
  std::vector<double> per_rank(ranks);
  int rounds = 0;
  std::vector<AllReduceRow> rows(sizes.size());
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank)
    threads.emplace_back([&, rank] {
      distributed::GlooOptions options;
      options.timeout = std::chrono::seconds(120);
      distributed::GlooCommunicator comm(store, rank, ranks, options);
      for (size_t i = 0; i < sizes.size(); ++i) {
        const int64_t n = static_cast<int64_t>(sizes[i] / sizeof(float));
        Tensor t = full({n}, 1.0f);
        auto wick_op = [&] { comm.all_reduce({t}, ReduceOp::Sum)->wait(); };
        // Gloo itself: the same algorithm (ring), the same connected context and buffer.
        auto raw_op = [&] {
          gloo::AllreduceOptions opts(comm.gloo_context());
          opts.setOutput<float>(static_cast<float*>(t.data_ptr()), static_cast<size_t>(n));
          opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
          opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
          opts.setTimeout(std::chrono::seconds(120));
          gloo::allreduce(opts);
        };
        // Alternate the order per size so neither side always runs on a warmer cache.
        double w, g;
        if (i % 2 == 0) {
          w = time_in_lock_step(ranks, sync, rank, min_seconds, wick_op, per_rank, rounds);
          g = time_in_lock_step(ranks, sync, rank, min_seconds, raw_op, per_rank, rounds);
        } else {
          g = time_in_lock_step(ranks, sync, rank, min_seconds, raw_op, per_rank, rounds);
          w = time_in_lock_step(ranks, sync, rank, min_seconds, wick_op, per_rank, rounds);
        }
        if (rank == 0) rows[i] = AllReduceRow{sizes[i], w, g};
      }
      sync.arrive_and_wait();
    });
  for (auto& t : threads) t.join();
  print_table("Gloo on CPU (threads on loopback)", ranks, rows, "gloo");
}

}  // namespace
}  // namespace wick::bench

int main(int argc, char** argv) {
  int ranks = 2;
  size_t max_bytes = size_t{256} << 20;
  double min_seconds = 0.3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--ranks") ranks = std::atoi(argv[i + 1]);
    else if (flag == "--max-bytes") max_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--min-seconds") min_seconds = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [--ranks N] [--max-bytes B] [--min-seconds S]\n", argv[0]);
      return 2;
    }
  }
  if (ranks < 2) {
    std::fprintf(stderr, "--ranks must be at least 2\n");
    return 2;
  }
  std::vector<size_t> sizes;
  for (size_t b = 4096; b <= max_bytes; b *= 4) sizes.push_back(b);
  try {
    wick::bench::bench_gloo(ranks, sizes, min_seconds);
    wick::bench::bench_nccl_allreduce(sizes, min_seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wick_bench_allreduce: %s\n", e.what());
    return 1;
  }
  return 0;
}
