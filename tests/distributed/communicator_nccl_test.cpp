// NcclCommunicator: the Gloo cases on CUDA tensors, one rank per visible device (threads of
// this process), plus a single-rank communicator. Skipped without a GPU. (Two ranks on one
// GPU would need NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1.)
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <wick/distributed/comm/communicator.h>
#include <wick/distributed/comm/nccl_communicator.h>

#include "tests/distributed/communicator_test_store.h"
#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using Clock = std::chrono::steady_clock;
using test::MapStore;
using test::run_ranks;
using wick::test::expect_error;
using wick::test::matches;
using wick::test::values;

NcclOptions nccl_quick(int timeout_ms = 30000) {
  NcclOptions o;
  o.timeout = Milliseconds(timeout_ms);
  return o;
}

Tensor input_on(int rank, const Shape& shape, DType dtype, uint64_t salt) {
  return test::rank_input(rank, shape, dtype, salt).to(Device::cuda(rank));
}

std::vector<double> reference(int size, const Shape& shape, DType dtype, uint64_t salt, ReduceOp op) {
  return test::reduce_reference(size, shape, dtype, salt, op);
}

// A macro because GTEST_SKIP only leaves the function it is written in.
#define WICK_REQUIRE_GPU() \
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device"

// Ranks: 1, and one per device when there are several.
std::vector<int> rank_counts() {
  std::vector<int> counts = {1};
  if (cuda::device_count() > 1) counts.push_back(cuda::device_count());
  return counts;
}

TEST(NcclCommunicator, WithoutCudaBuildSaysSo) {
  if (nccl_is_built()) GTEST_SKIP() << "built with CUDA";
  MapStore store;
  expect_error([&] { NcclCommunicator comm(store, 0, 1, 0); }, {"NcclCommunicator", "built without CUDA"});
  expect_error([&] { make_communicator(store, 0, 1, Device::cuda(0)); }, {"built without CUDA"});
}

TEST(NcclCommunicator, CollectivesMatchTheReference) {
  WICK_REQUIRE_GPU();
  for (int size : rank_counts()) {
    MapStore store;
    run_ranks(size, [&](int rank) {
      cuda::DeviceGuard guard(rank);
      NcclCommunicator comm(store, rank, size, rank, nccl_quick());
      uint64_t salt = 0;
      for (DType dtype : {DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::UInt8, DType::Float16})
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min}) {
          if (op == ReduceOp::Mean && !is_floating(dtype)) continue;
          for (Shape shape : {Shape{0}, Shape{1}, Shape{7, 3}, Shape{100003}}) {
            ++salt;
            Tensor t = input_on(rank, shape, dtype, salt);
            comm.all_reduce({t}, op)->wait();
            cuda::synchronize(rank);
            const double tol = dtype == DType::Float16 ? 2e-2 : -1;
            EXPECT_TRUE(matches(t, shape, dtype, reference(size, shape, dtype, salt, op), tol, tol))
                << size << " ranks, " << dtype_name(dtype) << " " << reduce_op_name(op) << " " << shape_str(shape);
          }
        }
      // A group of mixed sizes, issued twice before waiting.
      std::vector<Tensor> group = {input_on(rank, {3, 5}, DType::Float32, 500),
                                   input_on(rank, {0}, DType::Float32, 501),
                                   input_on(rank, {1000}, DType::Float32, 502)};
      auto w = comm.all_reduce(group, ReduceOp::Sum);
      w->wait();
      cuda::synchronize(rank);
      EXPECT_TRUE(matches(group[2], {1000}, DType::Float32, reference(size, {1000}, DType::Float32, 502, ReduceOp::Sum),
                          1e-5, 1e-5));

      const int root = size - 1;
      Tensor b = input_on(rank, {4, 5}, DType::Float32, 600);
      comm.broadcast({b}, root)->wait();
      Tensor r = input_on(rank, {33}, DType::Int64, 601);
      comm.reduce({r}, root, ReduceOp::Sum)->wait();
      Tensor in = input_on(rank, {4, 3}, DType::Float32, 602);
      Tensor gathered = empty({size, 4, 3}, Options(DType::Float32, Device::cuda(rank)));
      comm.all_gather(in, gathered)->wait();
      Tensor whole = input_on(rank, {size * 5}, DType::Float64, 603);
      Tensor mine = empty({5}, Options(DType::Float64, Device::cuda(rank)));
      comm.reduce_scatter(whole, mine, ReduceOp::Mean)->wait();
      comm.barrier();
      cuda::synchronize(rank);
      EXPECT_TRUE(matches(b, {4, 5}, DType::Float32, values(test::rank_input(root, {4, 5}, DType::Float32, 600))));
      if (rank == root)
        EXPECT_TRUE(matches(r, {33}, DType::Int64, reference(size, {33}, DType::Int64, 601, ReduceOp::Sum)));
      else EXPECT_TRUE(matches(r, {33}, DType::Int64, values(test::rank_input(rank, {33}, DType::Int64, 601))));
      std::vector<double> expected;
      for (int q = 0; q < size; ++q) {
        auto v = values(test::rank_input(q, {4, 3}, DType::Float32, 602));
        expected.insert(expected.end(), v.begin(), v.end());
      }
      EXPECT_TRUE(matches(gathered, {size, 4, 3}, DType::Float32, expected));
      auto all = reference(size, {size * 5}, DType::Float64, 603, ReduceOp::Mean);
      EXPECT_TRUE(
          matches(mine, {5}, DType::Float64, std::vector<double>(all.begin() + rank * 5, all.begin() + rank * 5 + 5)));

      if (size > 1) {
        if (rank == 0) {
          for (int peer = 1; peer < size; ++peer) comm.send(input_on(0, {10}, DType::Int32, 700 + peer), peer)->wait();
        } else {
          Tensor got = empty({10}, Options(DType::Int32, Device::cuda(rank)));
          comm.recv(got, 0)->wait();
          cuda::synchronize(rank);
          EXPECT_TRUE(matches(got, {10}, DType::Int32, values(test::rank_input(0, {10}, DType::Int32, 700 + rank))));
        }
        comm.barrier();
      }
    });
  }
}

TEST(NcclCommunicator, RejectsBadArguments) {
  WICK_REQUIRE_GPU();
  MapStore store;
  cuda::DeviceGuard guard(0);
  NcclCommunicator comm(store, 0, 1, 0, nccl_quick());
  expect_error([&] { comm.all_reduce({zeros({3})}, ReduceOp::Sum); },
               {"NcclCommunicator::all_reduce", "[3] float32 on cpu", "GlooCommunicator"});
  expect_error([&] { comm.all_reduce({zeros({3}, Options(DType::Int32, Device::cuda(0)))}, ReduceOp::Mean); },
               {"all_reduce", "mean needs a floating dtype"});
  expect_error([&] { comm.broadcast({zeros({3}, Options(Device::cuda(0)))}, 3); }, {"broadcast", "out of range"});
}

TEST(NcclCommunicator, MissingRankFailsConstructionWithinTheTimeout) {
  WICK_REQUIRE_GPU();
  MapStore store;
  cuda::DeviceGuard guard(0);
  const auto start = Clock::now();
  expect_error([&] { NcclCommunicator comm(store, 1, 2, 0, nccl_quick(500)); },
               {"NcclCommunicator", "rank 1 of 2", "rank 0 did not publish", "unique_id", "500 ms"});
  expect_error([&] { NcclCommunicator comm(store, 0, 2, 0, nccl_quick(2000)); }, {"NcclCommunicator", "timed out"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(20));
}

TEST(NcclCommunicator, CommunicatorsInARowOnOneStoreEachRendezvousAfresh) {
  WICK_REQUIRE_GPU();
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two CUDA devices";
  MapStore store;
  run_ranks(2, [&](int rank) {
    cuda::DeviceGuard guard(rank);
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE("round " + std::to_string(round) + ", rank " + std::to_string(rank));
      // Rank 0 comes late, so rank 1 looks for the unique id before this round's is published.
      if (rank == 0 && round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      NcclCommunicator comm(store, rank, 2, rank, nccl_quick(5000));
      Tensor t = full({5}, rank + 1 + round, Options(DType::Float32, Device::cuda(rank)));
      comm.all_reduce({t}, ReduceOp::Sum)->wait();
      EXPECT_TRUE(matches(t, {5}, DType::Float32, std::vector<double>(5, 3.0 + 2 * round)));
    }
  });
}

TEST(NcclCommunicator, SendRecvExchangesBothWaysBetweenTwoRanks) {
  WICK_REQUIRE_GPU();
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two CUDA devices";
  MapStore store;
  run_ranks(2, [&](int rank) {
    cuda::DeviceGuard guard(rank);
    NcclCommunicator comm(store, rank, 2, rank, nccl_quick(10000));
    const int other = 1 - rank;
    // Both ranks send to each other at once (a send completes only when the matching recv
    // runs), twice in a row.
    for (int round = 0; round < 2; ++round) {
      Tensor got = empty({1 << 16}, Options(DType::Float32, Device::cuda(rank)));
      comm.send_recv(input_on(rank, {1 << 16}, DType::Float32, 60 + round), other, got, other)->wait();
      EXPECT_EQ(values(got), values(test::rank_input(other, {1 << 16}, DType::Float32, 60 + round)));
    }
    // It matches a plain send and recv on the peer.
    Tensor got = empty({5}, Options(DType::Int64, Device::cuda(rank)));
    if (rank == 0) {
      comm.send_recv(input_on(0, {5}, DType::Int64, 62), 1, got, 1)->wait();
    } else {
      comm.recv(got, 0)->wait();
      comm.send(input_on(1, {5}, DType::Int64, 62), 0)->wait();
    }
    EXPECT_EQ(values(got), values(test::rank_input(other, {5}, DType::Int64, 62)));
    comm.barrier();
  });
}

TEST(NcclCommunicator, MemoryOfDroppedWorkIsNotReusedBeforeTheWorkRuns) {
  WICK_REQUIRE_GPU();
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two CUDA devices";
  MapStore store;
  const int64_t n = 1 << 20;
  run_ranks(2, [&](int rank) {
    cuda::DeviceGuard guard(rank);
    NcclCommunicator comm(store, rank, 2, rank, nccl_quick(10000));
    comm.barrier();
    if (rank == 0) {
      // The all-reduce cannot run before rank 1 joins; its work and tensor are dropped at once.
      Tensor t = full({n}, 1.0, Options(DType::Float32, Device::cuda(0)));
      void* const p = t.data_ptr();
      comm.all_reduce({t}, ReduceOp::Sum);
      t = Tensor();
      Tensor u = empty({n}, Options(DType::Float32, Device::cuda(0)));
      EXPECT_NE(u.data_ptr(), p);
      u.fill_(7.0);
      comm.barrier();  // the all-reduce has written its result by now
      cuda::synchronize(0);
      EXPECT_EQ(values(u), std::vector<double>(static_cast<size_t>(n), 7.0));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      Tensor t = full({n}, 2.0, Options(DType::Float32, Device::cuda(1)));
      comm.all_reduce({t}, ReduceOp::Sum)->wait();
      comm.barrier();
      EXPECT_EQ(values(t), std::vector<double>(static_cast<size_t>(n), 3.0));
    }
  });
}

TEST(NcclCommunicator, AbortFailsLaterWork) {
  WICK_REQUIRE_GPU();
  MapStore store;
  cuda::DeviceGuard guard(0);
  NcclCommunicator comm(store, 0, 1, 0, nccl_quick());
  Tensor t = zeros({3}, Options(Device::cuda(0)));
  auto pending = comm.all_reduce({t}, ReduceOp::Sum);
  comm.abort();
  expect_error([&] { pending->wait(); }, {"aborted"});
  expect_error([&] { comm.all_reduce({t}, ReduceOp::Sum); }, {"all_reduce", "aborted"});
}

TEST(MakeCommunicator, PicksNcclForCuda) {
  WICK_REQUIRE_GPU();
  MapStore store;
  cuda::DeviceGuard guard(0);
  auto comm = make_communicator(store, 0, 1, Device::cuda(0));
  EXPECT_EQ(comm->device(), Device::cuda(0));
  EXPECT_NE(dynamic_cast<NcclCommunicator*>(comm.get()), nullptr);
}

}  // namespace
}  // namespace wick::distributed
