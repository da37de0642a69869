// The NCCL half of wick_bench_allreduce: one rank per visible device as threads; wick's
// NcclCommunicator next to ncclAllReduce on a communicator made with ncclCommInitAll, on the
// same buffers. Built with -DWICK_CUDA=ON only.
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include <wick/distributed/comm/in_process_store.h>
#include <wick/distributed/comm/nccl_communicator.h>
#include <wick/tensor/cuda.h>
#include <wick/tensor/factories.h>

namespace wick::bench {

struct AllReduceRow {
  size_t bytes;
  double wick_seconds;
  double raw_seconds;
};
void print_table(const char* title, int ranks, const std::vector<AllReduceRow>& rows, const char* raw_name);

namespace {

using Clock = std::chrono::steady_clock;

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}

}  // namespace

void bench_nccl_allreduce(const std::vector<size_t>& sizes, double min_seconds) {
  const int ranks = cuda::device_count();
  if (ranks == 0) {
    std::printf("\nNCCL: skipped (no CUDA device)\n");
    return;
  }
  std::vector<ncclComm_t> raw(ranks);
  std::vector<int> devices(ranks);
  for (int i = 0; i < ranks; ++i) devices[i] = i;
  check(ncclCommInitAll(raw.data(), ranks, devices.data()), "ncclCommInitAll");
  distributed::InProcessStore store;
  std::barrier<> sync(ranks);
  std::vector<AllReduceRow> rows(sizes.size());
  std::vector<double> per_rank(ranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank)
    threads.emplace_back([&, rank] {
      cuda::DeviceGuard guard(rank);
      distributed::NcclCommunicator comm(store, rank, ranks, rank);
      cuda::Stream stream = cuda::current_stream(rank);
      for (size_t i = 0; i < sizes.size(); ++i) {
        const int64_t n = static_cast<int64_t>(sizes[i] / sizeof(float));
        Tensor t = full({n}, 1.0f, Options(DType::Float32, Device::cuda(rank)));
        auto time = [&](auto&& op) {
          for (int w = 0; w < 3; ++w) op();
          cuda::synchronize(rank);
          sync.arrive_and_wait();
          int rounds = 0;
          const auto start = Clock::now();
          double elapsed = 0;
          // Every rank runs the same count: a fixed budget of rounds chosen by size.
          const int budget = std::clamp(static_cast<int>(min_seconds * 20e9 / std::max<double>(sizes[i], 1)), 5, 1000);
          for (; rounds < budget; ++rounds) op();
          cuda::synchronize(rank);
          elapsed = std::chrono::duration<double>(Clock::now() - start).count();
          per_rank[rank] = elapsed / rounds;
          sync.arrive_and_wait();
          const double slowest = *std::max_element(per_rank.begin(), per_rank.end());
          sync.arrive_and_wait();
          return slowest;
        };
        const double w = time([&] { comm.all_reduce({t}, ReduceOp::Sum)->wait(); });
        const double g = time([&] {
          check(ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(n), ncclFloat32, ncclSum, raw[rank],
                              static_cast<cudaStream_t>(stream.handle())),
                "ncclAllReduce");
        });
        if (rank == 0) rows[i] = AllReduceRow{sizes[i], w, g};
      }
    });
  for (auto& t : threads) t.join();
  for (ncclComm_t c : raw) ncclCommDestroy(c);
  print_table("NCCL on GPU (one rank per device)", ranks, rows, "nccl");
  if (ranks == 1) std::printf("(one rank: busbw is 0 by definition; compare the times)\n");
}

}  // namespace wick::bench
