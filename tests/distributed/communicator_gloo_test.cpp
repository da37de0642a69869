// GlooCommunicator with 1, 2 and 3 ranks as threads of this process on loopback, each rank
// its own communicator over a shared in-memory store; results against float64 references.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <wick/distributed/comm/communicator.h>
#include <wick/distributed/comm/gloo_communicator.h>
#include <wick/distributed/comm/host_staged_communicator.h>
#include <wick/tensor/cpu_memory_stats.h>

#include <gloo/transport/tcp/address.h>
#include <netinet/in.h>

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

GlooOptions quick(int timeout_ms = 10000) {
  GlooOptions o;
  o.timeout = Milliseconds(timeout_ms);
  return o;
}

Tensor input_for(int rank, const Shape& shape, DType dtype, uint64_t salt) {
  return test::rank_input(rank, shape, dtype, salt);
}

double rtol_for(DType t) { return t == DType::Float16 ? 2e-3 : -1; }
double atol_for(DType t) { return t == DType::Float16 ? 2e-2 : (t == DType::Float32 ? 1e-5 : -1); }

class GlooRanks : public ::testing::TestWithParam<int> {};

TEST_P(GlooRanks, AllReduceEveryOpDtypeAndSize) {
  const int size = GetParam();
  const std::vector<DType> dtypes = {DType::Float32, DType::Float64, DType::Int32,   DType::Int64,
                                     DType::UInt8,   DType::Float16, DType::BFloat16};
  const std::vector<ReduceOp> ops = {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min};
  const std::vector<Shape> shapes = {{0}, {1}, {7, 3}, {1001}};
  MapStore store;
  run_ranks(size, [&](int rank) {
    GlooCommunicator comm(store, rank, size, quick());
    uint64_t salt = 0;
    for (DType dtype : dtypes)
      for (ReduceOp op : ops) {
        if (op == ReduceOp::Mean && !is_floating(dtype)) continue;
        for (const Shape& shape : shapes) {
          ++salt;
          Tensor t = input_for(rank, shape, dtype, salt);
          comm.all_reduce({t}, op)->wait();
          auto expected = test::reduce_reference(size, shape, dtype, salt, op);
          double rtol = rtol_for(dtype), atol = atol_for(dtype);
          if (dtype == DType::BFloat16) rtol = 2e-2, atol = 0.3;
          EXPECT_TRUE(matches(t, shape, dtype, expected, rtol, atol))
              << "rank " << rank << " " << dtype_name(dtype) << " " << reduce_op_name(op) << " " << shape_str(shape);
        }
      }
  });
}

TEST_P(GlooRanks, AllReduceLargeMessageSpansSegments) {
  const int size = GetParam();
  const Shape shape = {300001};  // > Gloo's 1 MiB segment in float32
  MapStore store;
  run_ranks(size, [&](int rank) {
    GlooCommunicator comm(store, rank, size, quick());
    Tensor t = input_for(rank, shape, DType::Float32, 5);
    comm.all_reduce({t}, ReduceOp::Sum)->wait();
    EXPECT_TRUE(matches(t, shape, DType::Float32, test::reduce_reference(size, shape, DType::Float32, 5, ReduceOp::Sum),
                        1e-5, 1e-5));
  });
}

TEST_P(GlooRanks, GroupsOfMixedSizesRunInIssueOrder) {
  const int size = GetParam();
  const std::vector<Shape> shapes = {{3, 5}, {0}, {1}, {1000}, {2, 2, 2}};
  MapStore store;
  run_ranks(size, [&](int rank) {
    GlooCommunicator comm(store, rank, size, quick());
    std::vector<Tensor> sums, avgs;
    for (size_t i = 0; i < shapes.size(); ++i) {
      sums.push_back(input_for(rank, shapes[i], DType::Float32, 100 + i));
      avgs.push_back(input_for(rank, shapes[i], DType::Float64, 200 + i));
    }
    // Both issued before either is waited for, as the reducer does from gradient hooks.
    auto w1 = comm.all_reduce(sums, ReduceOp::Sum);
    auto w2 = comm.all_reduce(avgs, ReduceOp::Mean);
    wait_all({w2, w1});
    for (size_t i = 0; i < shapes.size(); ++i) {
      EXPECT_TRUE(matches(sums[i], shapes[i], DType::Float32,
                          test::reduce_reference(size, shapes[i], DType::Float32, 100 + i, ReduceOp::Sum), 1e-5, 1e-5));
      EXPECT_TRUE(matches(avgs[i], shapes[i], DType::Float64,
                          test::reduce_reference(size, shapes[i], DType::Float64, 200 + i, ReduceOp::Mean)));
    }
  });
}

TEST_P(GlooRanks, BroadcastFromTheLastRank) {
  const int size = GetParam();
  const int root = size - 1;
  MapStore store;
  run_ranks(size, [&](int rank) {
    GlooCommunicator comm(store, rank, size, quick());
    Tensor a = input_for(rank, {4, 5}, DType::Float32, 7);
    Tensor b = input_for(rank, {9}, DType::Float32, 8);
    Tensor flags = input_for(rank, {6}, DType::UInt8, 9).to(DType::Bool);
    comm.broadcast({a, b}, root)->wait();
    comm.broadcast({flags}, root)->wait();
    EXPECT_TRUE(matches(a, {4, 5}, DType::Float32, values(input_for(root, {4, 5}, DType::Float32, 7))));
    EXPECT_TRUE(matches(b, {9}, DType::Float32, values(input_for(root, {9}, DType::Float32, 8))));
    EXPECT_TRUE(matches(flags, {6}, DType::Bool, values(input_for(root, {6}, DType::UInt8, 9).to(DType::Bool))));
  });
}

TEST_P(GlooRanks, ReduceLeavesNonRootsUnchanged) {
  const int size = GetParam();
  const int root = size > 1 ? 1 : 0;
  MapStore store;
  run_ranks(size, [&](int rank) {
    GlooCommunicator comm(store, rank, size, quick());
    Tensor a = input_for(rank, {33}, DType::Int64, 11);
    Tensor b = input_for(rank, {2, 3}, DType::Int64, 12);
    comm.reduce({a, b}, root, ReduceOp::Max)->wait();
    if (rank == root) {
      EXPECT_TRUE(matches(a, {33}, DType::Int64, test::reduce_reference(size, {33}, DType::Int64, 11, ReduceOp::Max)));
      EXPECT_TRUE(
          matches(b, {2, 3}, DType::Int64, test::reduce_reference(size, {2, 3}, DType::Int64, 12, ReduceOp::Max)));
    } else {
      EXPECT_TRUE(matches(a, {33}, DType::Int64, values(input_for(rank, {33}, DType::Int64, 11))));
    }
  });
}

TEST_P(GlooRanks, AllGatherAndReduceScatter) {
  const int size = GetParam();
  MapStore store;
  run_ranks(size, [&](int rank) {
    GlooCommunicator comm(store, rank, size, quick());
    Tensor in = input_for(rank, {4, 3}, DType::Float32, 21);
    Tensor gathered = empty({size, 4, 3});
    comm.all_gather(in, gathered)->wait();
    std::vector<double> expected;
    for (int r = 0; r < size; ++r) {
      auto v = values(input_for(r, {4, 3}, DType::Float32, 21));
      expected.insert(expected.end(), v.begin(), v.end());
    }
    EXPECT_TRUE(matches(gathered, {size, 4, 3}, DType::Float32, expected));

    const int64_t n = 5;
    Tensor whole = input_for(rank, {size * n}, DType::Float64, 22);
    Tensor mine = empty({n}, Options(DType::Float64));
    comm.reduce_scatter(whole, mine, ReduceOp::Mean)->wait();
    auto all = test::reduce_reference(size, {size * n}, DType::Float64, 22, ReduceOp::Mean);
    EXPECT_TRUE(
        matches(mine, {n}, DType::Float64, std::vector<double>(all.begin() + rank * n, all.begin() + (rank + 1) * n)));
    // The input is left as it was.
    EXPECT_TRUE(matches(whole, {size * n}, DType::Float64, values(input_for(rank, {size * n}, DType::Float64, 22))));
  });
}

// reduce_scatter_consuming gives reduce_scatter's result and reduces in its input instead
// of a copy: no rank's allocator count rises by an input's size while it runs.
TEST_P(GlooRanks, ReduceScatterConsumingWorksInItsInput) {
  const int size = GetParam();
  MapStore store;
  const int64_t n = 1 << 18;  // 2 MB of float64 per rank's slice
  std::atomic<size_t> before{0}, peak{0};
  run_ranks(size, [&](int rank) {
    GlooCommunicator comm(store, rank, size, quick());
    Tensor whole = input_for(rank, {size * n}, DType::Float64, 23);
    Tensor mine = empty({n}, Options(DType::Float64));
    const size_t input_bytes = whole.nbytes();
    comm.barrier();
    if (rank == 0) {
      cpu_reset_peak_memory_stats();
      before = cpu_memory_stats().allocated;
    }
    comm.barrier();
    comm.reduce_scatter_consuming(std::move(whole), mine, ReduceOp::Sum)->wait();
    comm.barrier();
    if (rank == 0) peak = cpu_memory_stats().peak_allocated;
    comm.barrier();
    EXPECT_LT(peak - before, input_bytes) << "a copy of the input was made";
    auto all = test::reduce_reference(size, {size * n}, DType::Float64, 23, ReduceOp::Sum);
    EXPECT_TRUE(
        matches(mine, {n}, DType::Float64, std::vector<double>(all.begin() + rank * n, all.begin() + (rank + 1) * n)));
  });
}

TEST_P(GlooRanks, SendAndRecvAndBarrier) {
  const int size = GetParam();
  if (size == 1) GTEST_SKIP() << "point to point needs two ranks";
  MapStore store;
  run_ranks(size, [&](int rank) {
    GlooCommunicator comm(store, rank, size, quick());
    if (rank == 0) {
      std::vector<std::shared_ptr<Work>> works;
      for (int peer = 1; peer < size; ++peer) works.push_back(comm.send(input_for(peer, {10}, DType::Int32, 31), peer));
      wait_all(works);
      for (int peer = 1; peer < size; ++peer) {
        Tensor back = empty({2, 2}, Options(DType::Float64));
        comm.recv(back, peer)->wait();
        EXPECT_TRUE(matches(back, {2, 2}, DType::Float64, values(input_for(peer, {2, 2}, DType::Float64, 32))));
      }
    } else {
      Tensor got = empty({10}, Options(DType::Int32));
      comm.recv(got, 0)->wait();
      EXPECT_TRUE(matches(got, {10}, DType::Int32, values(input_for(rank, {10}, DType::Int32, 31))));
      comm.send(input_for(rank, {2, 2}, DType::Float64, 32), 0)->wait();
    }
    comm.barrier();
  });
}

TEST_P(GlooRanks, SendRecvExchangesAroundARing) {
  const int size = GetParam();
  if (size == 1) GTEST_SKIP() << "point to point needs two ranks";
  MapStore store;
  run_ranks(size, [&](int rank) {
    GlooCommunicator comm(store, rank, size, quick());
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    // Every rank sends to the next and receives from the previous at once (with 2 ranks: both
    // ways between them), larger than any transport buffering, twice in a row.
    const int64_t n = 1 << 20;
    for (int round = 0; round < 2; ++round) {
      Tensor got = empty({n}, Options(DType::Float32));
      comm.send_recv(input_for(rank, {n}, DType::Float32, 40 + round), next, got, prev)->wait();
      EXPECT_EQ(values(got), values(input_for(prev, {n}, DType::Float32, 40 + round)));
    }
    // It matches a plain send and recv on the peer.
    if (size == 2) {
      Tensor got = empty({3}, Options(DType::Int64));
      if (rank == 0) {
        comm.send_recv(input_for(0, {3}, DType::Int64, 42), 1, got, 1)->wait();
      } else {
        comm.recv(got, 0)->wait();
        comm.send(input_for(1, {3}, DType::Int64, 42), 0)->wait();
      }
      EXPECT_EQ(values(got), values(input_for(1 - rank, {3}, DType::Int64, 42)));
    }
    comm.barrier();
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooRanks, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

TEST(GlooCommunicator, RejectsBadArguments) {
  MapStore store;
  GlooCommunicator comm(store, 0, 1, quick());
  Tensor f = zeros({2, 3});
  expect_error(
      [&] {
        comm.all_reduce({f, zeros({4}, Options(DType::Float64))}, ReduceOp::Sum);
      },
      {"GlooCommunicator::all_reduce", "[4] float64", "one dtype"});
  expect_error([&] { comm.all_reduce({f.t()}, ReduceOp::Sum); }, {"all_reduce", "[3, 2] float32", "not contiguous"});
  expect_error([&] { comm.all_reduce({zeros({3}, Options(DType::Int32))}, ReduceOp::Mean); },
               {"all_reduce", "mean needs a floating dtype", "int32"});
  expect_error([&] { comm.all_reduce({zeros({3}, Options(DType::Bool))}, ReduceOp::Sum); }, {"all_reduce", "bool"});
  // One ReduceOp enum serves tensors and collectives; the tensor-only reductions are refused.
  expect_error([&] { comm.all_reduce({f}, ReduceOp::Var); }, {"all_reduce", "var is not a collective reduction"});
  expect_error([&] { comm.reduce_scatter(zeros({6}), zeros({6}), ReduceOp::Prod); },
               {"reduce_scatter", "prod is not a collective reduction"});
  expect_error([&] { comm.broadcast({f}, 1); }, {"broadcast", "root 1", "out of range"});
  expect_error([&] { comm.all_gather(f, zeros({5})); }, {"all_gather", "output must hold 1 x 6"});
  expect_error([&] { comm.reduce_scatter(f, zeros({6}, Options(DType::Float64)), ReduceOp::Sum); },
               {"reduce_scatter", "dtypes differ"});
  expect_error([&] { comm.send(f, 0); }, {"send", "itself"});
  expect_error([&] { GlooCommunicator bad(store, 2, 2, quick()); }, {"GlooCommunicator", "rank 2", "out of range"});
}

TEST(GlooCommunicator, CudaTensorsPointAtNccl) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  MapStore store;
  GlooCommunicator comm(store, 0, 1, quick());
  expect_error([&] { comm.all_reduce({zeros({3}, Options(Device::cuda()))}, ReduceOp::Sum); },
               {"all_reduce", "cuda:0", "NcclCommunicator"});
}

TEST(GlooCommunicator, MissingRankFailsConstructionWithinTheTimeout) {
  MapStore store;
  const auto start = Clock::now();
  expect_error([&] { GlooCommunicator comm(store, 0, 2, quick(400)); },
               {"GlooCommunicator: rank 0 of 2", "could not connect"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

// The store of one rank of two that makes Gloo's connection race happen every time: when
// this rank is the listening side of the pair (Gloo connects from the side whose listening
// address is larger), it reads the other rank's address late, so the other rank has
// connected and this rank's device thread has accepted the connection before its own
// connectFullMesh reaches the pair. Gloo then keeps the peer's published listening address
// as the pair's peer, not the accepted socket's, and its errors print that address.
class LateListenerStore final : public Store {
 public:
  LateListenerStore(Store& shared, int rank) : shared_(shared), rank_(rank) {}
  void set(const std::string& key, const Bytes& value) override { shared_.set(key, value); }
  Bytes get(const std::string& key, Milliseconds timeout) override {
    Bytes value = shared_.get(key, timeout);
    if (key == "gloo/" + std::to_string(1 - rank_)) {
      listening_side_ = listens(shared_.get("gloo/" + std::to_string(rank_), timeout), value);
      if (listening_side_) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return value;
  }
  bool listening_side() const { return listening_side_; }

 private:
  // Gloo's rule (tcp::Pair::connect): the side whose address (then port, as stored) is
  // smaller listens.
  static bool listens(const Bytes& mine, const Bytes& theirs) {
    // Copies: getSockaddr() refers into the temporary Address.
    const gloo::transport::tcp::Address mine_address(mine), their_address(theirs);
    const auto& a = reinterpret_cast<const sockaddr_in&>(mine_address.getSockaddr());
    const auto& b = reinterpret_cast<const sockaddr_in&>(their_address.getSockaddr());
    int order = std::memcmp(&a.sin_addr, &b.sin_addr, sizeof a.sin_addr);
    if (order == 0) order = int{a.sin_port} - int{b.sin_port};
    return order < 0;
  }
  Store& shared_;
  int rank_;
  bool listening_side_ = false;
};

// A closed connection names the rank behind it even when Gloo accepted the connection
// before this rank connected the pair (the race behind issue 48, item 4: "Read error
// [127.0.0.1]:6021: Connection reset by peer" with no rank named). The listening side
// waits for a peer that is destroyed; its error must name rank 1 - it.
TEST(GlooCommunicator, NamesAPeerWhoseConnectionWasAcceptedBeforeThisRankConnected) {
  MapStore shared;
  std::vector<std::unique_ptr<LateListenerStore>> stores;
  for (int r = 0; r < 2; ++r) stores.push_back(std::make_unique<LateListenerStore>(shared, r));
  std::vector<std::unique_ptr<GlooCommunicator>> comms(2);
  run_ranks(2, [&](int rank) { comms[rank] = std::make_unique<GlooCommunicator>(*stores[rank], rank, 2, quick()); });
  ASSERT_NE(stores[0]->listening_side(), stores[1]->listening_side());
  const int listener = stores[0]->listening_side() ? 0 : 1;
  comms[1 - listener].reset();  // closes its connection
  expect_error([&] { comms[listener]->all_reduce({zeros({1000})}, ReduceOp::Sum)->wait(); },
               {"[the failed peer is rank " + std::to_string(1 - listener) + " of 2 ("});
}

// An address is found only whole: port 602 is not the start of port 6021.
TEST(GlooCommunicator, APeerAddressIsMatchedWhole) {
  EXPECT_TRUE(detail::mentions_address("Read error [127.0.0.1]:602: Connection reset by peer", "[127.0.0.1]:602"));
  EXPECT_TRUE(detail::mentions_address("Connection closed by peer [127.0.0.1]:602", "[127.0.0.1]:602"));
  EXPECT_FALSE(detail::mentions_address("Read error [127.0.0.1]:6021: Connection reset by peer", "[127.0.0.1]:602"));
  EXPECT_TRUE(detail::mentions_address("[127.0.0.1]:6021 and [127.0.0.1]:602 failed", "[127.0.0.1]:602"));
}

TEST(GlooCommunicator, DeadPeerFailsPendingAndLaterWork) {
  MapStore store;
  run_ranks(2, [&](int rank) {
    auto comm = std::make_unique<GlooCommunicator>(store, rank, 2, quick(1000));
    comm->barrier();
    if (rank == 1) {
      comm.reset();  // stops participating
      return;
    }
    Tensor t = zeros({1000});
    const auto start = Clock::now();
    auto pending = comm->all_reduce({t}, ReduceOp::Sum);
    auto later = comm->all_reduce({t}, ReduceOp::Sum);
    expect_error([&] { pending->wait(); }, {"GlooCommunicator::all_reduce (rank 0 of 2", "[1000] float32"});
    expect_error([&] { later->wait(); }, {"all_reduce", "unusable after an earlier failure"});
    expect_error([&] { comm->all_reduce({t}, ReduceOp::Sum)->wait(); }, {"unusable"});
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  });
}

// How long the others take to notice: a destroyed or aborted rank closes its connections,
// so waiting peers fail at once rather than after their (long) timeout.
TEST(GlooCommunicator, DestroyedOrAbortedPeerFailsTheOthersBeforeTheirTimeout) {
  for (bool abort : {false, true}) {
    MapStore store;
    run_ranks(3, [&](int rank) {
      auto comm = std::make_unique<GlooCommunicator>(store, rank, 3, quick(20000));
      comm->barrier();
      if (rank == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the others are waiting by now
        if (abort) {
          comm->abort();
          std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // aborted, still alive
        } else {
          comm.reset();
        }
        return;
      }
      Tensor t = zeros({100000});
      const auto start = Clock::now();
      expect_error([&] { comm->all_reduce({t}, ReduceOp::Sum)->wait(); }, {"GlooCommunicator::all_reduce"});
      EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1500)) << (abort ? "abort" : "destroy");
    });
  }
}

// abort() fails our own running operation's work at once (Gloo's call itself ends at its
// timeout, which the destructor waits for) and the late peer fails at once too.
TEST(GlooCommunicator, AbortFailsOurRunningOperationAtOnce) {
  MapStore store;
  run_ranks(2, [&](int rank) {
    auto comm = std::make_unique<GlooCommunicator>(store, rank, 2, quick(1500));
    comm->barrier();
    Tensor t = zeros({1000});
    if (rank == 0) {  // late: rank 1 is stuck in its all-reduce when it aborts
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
      const auto start = Clock::now();
      expect_error([&] { comm->all_reduce({t}, ReduceOp::Sum)->wait(); }, {"all_reduce"});
      EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1000));
      return;
    }
    auto pending = comm->all_reduce({t}, ReduceOp::Sum);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto start = Clock::now();
    comm->abort();
    expect_error([&] { pending->wait(); }, {"aborted"});
    EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
  });
}

TEST(GlooCommunicator, AbortFailsLaterWork) {
  MapStore store;
  GlooCommunicator comm(store, 0, 1, quick());
  comm.abort();
  expect_error([&] { comm.all_reduce({zeros({3})}, ReduceOp::Sum)->wait(); }, {"all_reduce", "aborted"});
  expect_error([&] { comm.barrier(); }, {"barrier", "aborted"});
}

TEST(GlooCommunicator, DestroyingFailsQueuedWork) {
  MapStore store;
  std::shared_ptr<Work> work;
  {
    GlooCommunicator comm(store, 0, 1, quick());
    for (int i = 0; i < 50; ++i) work = comm.all_reduce({zeros({10000})}, ReduceOp::Sum);
  }
  // Either it ran before the destruction or it failed saying why; it never hangs.
  try {
    work->wait();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("destroyed"), std::string::npos) << e.what();
  }
}

TEST(MakeCommunicator, PicksGlooForTheCpu) {
  MapStore store;
  auto comm = make_communicator(store, 0, 1, Device::cpu());
  EXPECT_EQ(comm->device(), Device::cpu());
  EXPECT_NE(dynamic_cast<GlooCommunicator*>(comm.get()), nullptr);
  Tensor t = full({3}, 2.0);
  comm->all_reduce({t}, ReduceOp::Mean)->wait();
  EXPECT_TRUE(matches(t, {3}, DType::Float32, {2, 2, 2}));
}

// Sets an environment variable for one scope (the tests of this binary run one at a time).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Issue 25, item 16: two ranks on one GPU with NCCL before 2.30 had nothing to talk
// through, so the main job trained on the CPU. WICK_CUDA_COMMUNICATOR=gloo moves CUDA
// tensors through host memory over Gloo. (Before: NCCL was the only choice for a CUDA device:
// "built without CUDA" in this build, "Duplicate GPU detected" from NCCL < 2.30 on one GPU.)
TEST(MakeCommunicator, CudaTensorsGoThroughGlooWhenTheEnvironmentSaysSo) {
  ScopedEnv gloo("WICK_CUDA_COMMUNICATOR", "gloo");
  const bool gpu = cuda::device_count() > 0;
  MapStore store;
  run_ranks(2, [&](int rank) {
    auto comm = make_communicator(store, rank, 2, Device::cuda(0), Milliseconds(10000));
    EXPECT_EQ(comm->device(), Device::cuda(0));
    EXPECT_NE(dynamic_cast<HostStagedCommunicator*>(comm.get()), nullptr);
    comm->barrier();
    // Both ranks on the one device, as tools/main-job.sh runs them on one GPU.
    Tensor t = full({3}, static_cast<double>(rank + 1), Options(gpu ? Device::cuda(0) : Device::cpu()));
    comm->all_reduce({t}, ReduceOp::Sum)->wait();
    EXPECT_TRUE(matches(t.cpu(), {3}, DType::Float32, {3, 3, 3}));
  });
}

TEST(MakeCommunicator, AnUnknownCudaCommunicatorIsRefused) {
  ScopedEnv bad("WICK_CUDA_COMMUNICATOR", "mpi");
  MapStore store;
  expect_error([&] { make_communicator(store, 0, 1, Device::cuda(0)); },
               {"make_communicator", "WICK_CUDA_COMMUNICATOR='mpi'", "neither 'nccl' nor 'gloo'"});
}

}  // namespace
}  // namespace wick::distributed
