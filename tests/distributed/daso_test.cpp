// DasoSync on 4 threads as 2 nodes x 2 ranks over Gloo: in the warm-up DASO with plain SGD
// is data parallelism over all 4 ranks; in the cycling phase it sends parameters across
// nodes only every few batches; subgroups and the node layout are checked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include <wick/distributed/data_parallel/daso.h>
#include <wick/distributed/data_parallel/data_parallel_sync.h>
#include <wick/optim/sgd.h>
#include <wick/train/loop.h>
#include <wick/tensor/cuda.h>
#include <wick/train/trainer.h>

#include "tests/distributed/communicator_test_store.h"
#include "tests/support/training_fixture.h"

namespace wick::distributed {
namespace {

using test::MapStore;
using test::run_ranks;
using wick::test::expect_error;

constexpr int kRanks = 4;

struct RunResult {
  std::vector<std::vector<double>> params;  // by rank: every parameter, flattened
  std::vector<int64_t> cross_node_bytes;    // by rank, per epoch (DASO) or in all (plain)
  std::vector<TensorMap> model_state, sync_state;  // by rank, at the end
  std::vector<std::string> errors;                 // by rank, with Start::fail_rank
};

// How a run is laid out (ranks, ranks per node, device) and where it starts: from scratch,
// or from a previous run's end (a resume).
struct Start {
  int ranks = kRanks;
  int local_size = 2;
  bool cuda = false;  // rank r on CUDA device r, with NCCL
  int first_epoch = 0;
  const RunResult* from = nullptr;
  bool blocking = true;
  bool load_sync_state = true;
  int64_t accumulate = 1;
  // Rank fail_rank throws at batch fail_batch of epoch fail_epoch (a rank that dies); every
  // rank's error is then recorded instead of thrown.
  int fail_rank = -1, fail_epoch = 0, fail_batch = 0;
  // Rank poison_rank writes poison_value into its parameter "2.weight" after the backward
  // of batch poison_batch of epoch 0 (a step that diverged); errors are recorded as above.
  int poison_rank = -1, poison_batch = 0;
  double poison_value = 0;
  std::chrono::milliseconds timeout = std::chrono::seconds(30);
  bool records_errors() const { return fail_rank >= 0 || poison_rank >= 0; }
};

std::vector<double> flat_params(Module& net) {
  std::vector<double> out;
  for (const Variable& p : net.parameters())
    for (double v : p.data().to_vector<double>()) out.push_back(v);
  return out;
}

// Trains the blob MLP for `epochs` on 4 ranks (or start.ranks), each on its shard of 64
// examples (batches of 8: 2 steps per epoch, unless batch_size says otherwise), with DASO
// (when `daso`) or plain data parallelism over all ranks.
RunResult train(std::optional<DasoOptions> daso, int epochs, double lr = 0.1, int64_t batch_size = 8,
                Start start = {}) {
  auto data = wick::test::training_blobs(64);
  MapStore store;
  RunResult result;
  const int ranks = start.ranks;
  result.params.resize(ranks);
  result.cross_node_bytes.resize(ranks);
  result.model_state.resize(ranks);
  result.sync_state.resize(ranks);
  result.errors.resize(ranks);
  run_ranks(ranks, [&](int rank) {
   try {
    const Device device = start.cuda ? Device::cuda(rank) : Device::cpu();
    std::optional<cuda::DeviceGuard> guard;
    if (start.cuda) guard.emplace(rank);
    auto world = make_communicator(store, rank, ranks, device, start.timeout);
    auto net = wick::test::training_mlp();
    net->to(device);
    SupervisedModel model = classifier(net);
    SGD sgd(net->named_parameters(), SGDOptions{.lr = lr});
    BatchStream stream(data, {.batch_size = batch_size, .seed = 3, .rank = rank, .world_size = ranks, .device = device});
    std::unique_ptr<DistributedSync> sync;
    std::unique_ptr<MeteredCommunicator> metered;
    if (daso) {
      NodeTopology topology = node_topology(*world, rank % start.local_size, start.local_size);
      sync = std::make_unique<DasoSync>(*world, store, *net, *daso, topology, start.timeout);
    } else {
      metered = std::make_unique<MeteredCommunicator>(std::move(world));
      sync = std::make_unique<DataParallelSync>(*metered, *net);
    }
    if (start.from) {
      net->load_state_dict(StateDict(start.from->model_state[rank]));
      // As a checkpoint: only rank 0's sync state is saved and loaded.
      if (rank == 0 && start.load_sync_state) sync->load_state_dict(start.from->sync_state[0]);
    }
    TrainerOptions trainer_options{.accumulate = start.accumulate, .progress = Progress::Style::Off,
                                   .blocking = start.blocking};
    if (rank == start.fail_rank)
      trainer_options.on_batch = [&](const BatchReport& b) {
        if (b.epoch == start.fail_epoch && b.batch == start.fail_batch) throw Error("rank dies here (injected)");
      };
    if (rank == start.poison_rank)
      trainer_options.on_batch = [&](const BatchReport& b) {
        if (b.epoch == 0 && b.batch == start.poison_batch) {
          NoGradGuard no_grad;
          for (const auto& [name, p] : net->named_parameters())
            if (name == "2.weight") p.data().view({-1}).narrow(0, 5, 1).fill_(start.poison_value);
        }
      };
    Trainer trainer(model, &sgd, *sync, trainer_options);
    for (int e = start.first_epoch; e < start.first_epoch + epochs; ++e) trainer.train_epoch(stream, e);
    result.params[rank] = flat_params(*net);
    result.model_state[rank] = snapshot(*net).to_map();
    result.sync_state[rank] = sync->state_dict();
    result.cross_node_bytes[rank] =
        daso ? dynamic_cast<DasoSync&>(*sync).global_bytes() : metered->bytes();
   } catch (const std::exception& e) {
    if (!start.records_errors()) throw;
    result.errors[rank] = e.what();
   }
  });
  return result;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol * (1 + std::abs(b[i]))) << "element " << i;
}

TEST(Daso, WarmupWithPlainSgdIsDataParallelismOverAllRanks) {
  RunResult plain = train(std::nullopt, 3);
  RunResult daso = train(DasoOptions{.total_epochs = 10, .downcast_type = DType::Float32}, 3);
  for (int r = 0; r < kRanks; ++r) {
    expect_close(daso.params[r], plain.params[0], 1e-6);
    expect_close(plain.params[r], plain.params[0], 0);
  }
  // Sent in chunks of 100 elements (212 parameters: 12 first, then 100 and 100).
  RunResult chunked = train(DasoOptions{.total_epochs = 10, .sending_chunk_size = 100, .downcast_type = DType::Float32}, 3);
  for (int r = 0; r < kRanks; ++r) expect_close(chunked.params[r], plain.params[0], 1e-6);
  // A different learning rate gives different parameters: the comparison can fail.
  RunResult other = train(DasoOptions{.total_epochs = 10, .downcast_type = DType::Float32}, 3, 0.05);
  EXPECT_GT(std::abs(other.params[0][0] - plain.params[0][0]), 1e-6);
}

TEST(Daso, WarmupWithGradientAccumulationIsDataParallelismWithIt) {
  // Batches of 2, 3 per step: 8 batches per epoch make steps of 3, 3 and 2 batches.
  RunResult plain = train(std::nullopt, 2, 0.1, 2, {.accumulate = 3});
  RunResult daso = train(DasoOptions{.total_epochs = 10, .downcast_type = DType::Float32}, 2, 0.1, 2,
                         {.accumulate = 3});
  for (int r = 0; r < kRanks; ++r) expect_close(daso.params[r], plain.params[0], 1e-6);
}

TEST(Daso, Bfloat16WarmupStaysCloseToDataParallelism) {
  RunResult plain = train(std::nullopt, 2);
  RunResult daso = train(DasoOptions{.total_epochs = 10}, 2);
  for (int r = 0; r < kRanks; ++r) expect_close(daso.params[r], plain.params[0], 2e-2);
}

constexpr int64_t kParamBytes = (8 * 16 + 16 + 16 * 4 + 4) * 4;  // the MLP in float32

TEST(Daso, WarmupSendsEveryStepInTheDowncastType) {
  RunResult daso = train(DasoOptions{.total_epochs = 10}, 2);
  // 2 epochs x 2 steps, one rank per node sends its parameters in bfloat16.
  int64_t total = 0;
  for (int r = 0; r < kRanks; ++r) total += daso.cross_node_bytes[r];
  EXPECT_EQ(total, 2 * 2 * 2 * kParamBytes / 2);
}

TEST(Daso, CyclingSendsAcrossNodesOnlyEveryFewBatchesAndEndsEachEpochInAgreement) {
  // Batches of 2: 8 steps per epoch. One warm-up epoch, then global_skip 4 (sends at steps
  // 0, 4 and the last), then one cool-down epoch.
  const DasoOptions options{.total_epochs = 5, .warmup_epochs = 1, .cooldown_epochs = 1,
                            .downcast_type = DType::Float32};
  const int epochs = 5;
  RunResult daso = train(options, epochs, 0.05, 2);
  for (int r = 1; r < kRanks; ++r) expect_close(daso.params[r], daso.params[0], 1e-6);
  RunResult plain = train(std::nullopt, epochs, 0.05, 2);
  // Per rank, plain data parallelism all-reduces every gradient (and the step's example
  // count) every step over all ranks, plus the epoch's batch count and statistics.
  EXPECT_EQ(plain.cross_node_bytes[0], epochs * 8 * (kParamBytes + 8) + epochs * (8 + 24));
  int64_t daso_total = 0;
  for (int r = 0; r < kRanks; ++r) daso_total += daso.cross_node_bytes[r];
  // Warm-up and cool-down: 8 sends; the 3 cycling epochs: 3 sends each (no plateau in 3
  // epochs of a falling loss), from one rank per node.
  EXPECT_EQ(daso_total, 2 * (8 + 3 * 3 + 8) * kParamBytes);
  std::printf("cross-node payload per rank and epoch: plain data parallelism %lld bytes, DASO %.0f bytes\n",
              static_cast<long long>(plain.cross_node_bytes[0] / epochs),
              static_cast<double>(daso_total) / kRanks / epochs);
}

TEST(Daso, ResumingFromItsStateGivesTheSameParametersAsAnUninterruptedRun) {
  const DasoOptions options{.total_epochs = 6, .warmup_epochs = 1, .cooldown_epochs = 1,
                            .downcast_type = DType::Float32};
  RunResult straight = train(options, 5, 0.05, 2);
  RunResult first = train(options, 3, 0.05, 2);
  RunResult resumed = train(options, 2, 0.05, 2, {.first_epoch = 3, .from = &first});
  for (int r = 0; r < kRanks; ++r) expect_close(resumed.params[r], straight.params[r], 0);
  EXPECT_EQ(resumed.sync_state[0].at("daso.schedule").to_vector<double>(),
            straight.sync_state[0].at("daso.schedule").to_vector<double>());
  // Without the schedule's state the resumed run would restart in the warm-up phase.
  RunResult forgetful = train(options, 2, 0.05, 2, {.first_epoch = 3, .from = &first, .load_sync_state = false});
  EXPECT_NE(forgetful.params[0], straight.params[0]);
}

TEST(Daso, ARankThatDiesDuringANonBlockingSendMakesEveryRankFailWithinTheTimeout) {
  // Batches of 2 (8 steps per epoch), one warm-up epoch; in epoch 1 (global_skip 4) the
  // ranks with local rank 0 (0 and 2) start a non-blocking send at step 0, merged at step 1.
  // Rank 2 dies between the two.
  const DasoOptions options{.total_epochs = 6, .warmup_epochs = 1, .cooldown_epochs = 1,
                            .downcast_type = DType::Float32};
  auto start = std::chrono::steady_clock::now();
  RunResult r = train(options, 3, 0.05, 2,
                      {.fail_rank = 2, .fail_epoch = 1, .fail_batch = 1, .timeout = std::chrono::seconds(5)});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(r.errors[2].find("injected"), std::string::npos) << r.errors[2];
  for (int rank : {0, 1, 3}) {
    EXPECT_FALSE(r.errors[rank].empty()) << "rank " << rank << " did not fail";
    EXPECT_NE(r.errors[rank].find("failed"), std::string::npos) << r.errors[rank];
  }
  // Which error each rank sees depends on timing (a rank may fail first in its node's group
  // because its node partner already failed), but the first to fail shares a group with
  // rank 2, and its error names that group's ranks.
  bool named = false;
  for (int rank : {0, 1, 3})
    named = named || r.errors[rank].find("ranks 0, 2") != std::string::npos ||
            r.errors[rank].find("ranks 2, 3") != std::string::npos;
  EXPECT_TRUE(named) << r.errors[0] << "\n" << r.errors[1] << "\n" << r.errors[3];
}

// Heat raises at the send of a NaN parameter; wick names the rank and the parameter, and
// the rank's peers fail at once (its groups are aborted) instead of at their timeout.
TEST(Daso, ANaNParameterIsRefusedAtTheNextSendNamingTheRankAndTheParameter) {
  // 2 nodes of 1 rank: every rank sends every batch of the warm-up.
  const DasoOptions options{.total_epochs = 4};
  auto start = std::chrono::steady_clock::now();
  RunResult r = train(options, 1, 0.1, 2,
                      {.ranks = 2, .local_size = 1, .poison_rank = 1, .poison_batch = 1, .poison_value = std::nan("")});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));  // the timeout is 30 s
  // The rank's own error, not one of a group's.
  EXPECT_EQ(r.errors[1].rfind("DASO: rank 1 (node 1, local rank 0) refuses to send parameter '2.weight' [4, 16] "
                              "(1 NaN and 0 infinite of 64 values)",
                              0),
            0u)
      << r.errors[1];
  EXPECT_FALSE(r.errors[0].empty()) << "rank 0 did not fail";
  // A finite value that float16, the wire type of the blocking sends, cannot hold.
  RunResult big = train(DasoOptions{.total_epochs = 4, .downcast_type = DType::Float16}, 1, 0.1, 2,
                        {.ranks = 2, .local_size = 1, .poison_rank = 1, .poison_batch = 1, .poison_value = 1e6});
  EXPECT_NE(big.errors[1].find("parameter '2.weight' [4, 16] (1 of 64 values beyond the range of float16"),
            std::string::npos)
      << big.errors[1];
  // The check on CUDA ranks (NCCL; the simulator's two devices in CI). NCCL's abort does
  // not reach the peer, which fails at its timeout: a short one.
  if (cuda::device_count() >= 2) {
    RunResult on_cuda = train(options, 1, 0.1, 2,
                              {.ranks = 2, .local_size = 1, .cuda = true, .poison_rank = 1, .poison_batch = 1,
                               .poison_value = std::nan(""), .timeout = std::chrono::seconds(3)});
    EXPECT_NE(on_cuda.errors[1].find("refuses to send parameter '2.weight'"), std::string::npos) << on_cuda.errors[1];
  }
  // A large value that the wire type holds is sent.
  RunResult fine = train(DasoOptions{.total_epochs = 4, .downcast_type = DType::Float32}, 1, 0.1, 2,
                         {.ranks = 2, .local_size = 1, .poison_rank = 1, .poison_batch = 1, .poison_value = 1e6});
  EXPECT_EQ(fine.errors, (std::vector<std::string>{"", ""}));
}

// The plateau test gets the epoch's loss as the loop reports it: the mean over every
// example of every rank (Heat takes the plain mean of the ranks' losses; the two agree when
// the ranks hold as many examples, see docs/daso.md). Shards of unequal size, so that the
// two differ, and a node runs out of batches before the other.
TEST(Daso, ThePlateauTestSeesTheLossAveragedOverEveryExample) {
  // 66 examples: ranks 0 and 1 hold 17 (batches of 8, 8, 1), ranks 2 and 3 hold 16.
  auto data = wick::test::training_blobs(66);
  MapStore store;
  std::vector<double> rank_loss(kRanks), rank_examples(kRanks), best(kRanks), reported(kRanks);
  std::vector<std::vector<double>> params(kRanks);
  run_ranks(kRanks, [&](int rank) {
    auto world = make_communicator(store, rank, kRanks, Device::cpu());
    auto net = wick::test::training_mlp();
    SupervisedModel model = classifier(net);
    SGD sgd(net->named_parameters(), SGDOptions{.lr = 0.1});
    BatchStream stream(data, {.batch_size = 8, .seed = 3, .rank = rank, .world_size = kRanks});
    // One warm-up epoch: its loss is the first the plateau test sees.
    DasoSync sync(*world, store, *net, {.total_epochs = 4, .warmup_epochs = 1, .cooldown_epochs = 1},
                  node_topology(*world, rank % 2, 2));
    TrainerOptions options{.progress = Progress::Style::Off};
    options.on_batch = [&](const BatchReport& b) {
      rank_loss[rank] += b.loss * static_cast<double>(b.examples);
      rank_examples[rank] += static_cast<double>(b.examples);
    };
    Trainer trainer(model, &sgd, sync, options);
    reported[rank] = trainer.train_epoch(stream, 0).loss();
    params[rank] = flat_params(*net);
    best[rank] = sync.schedule().state().best_loss;
  });
  double plain = 0, sum = 0, examples = 0;
  for (int r = 0; r < kRanks; ++r) {
    plain += rank_loss[r] / rank_examples[r] / kRanks;
    sum += rank_loss[r];
    examples += rank_examples[r];
  }
  ASSERT_EQ(examples, 66);
  ASSERT_GT(std::abs(plain - sum / examples), 1e-6 * plain);  // the two means differ here
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(best[r], reported[r]) << "rank " << r;
    EXPECT_NEAR(best[r], sum / examples, 1e-6 * plain) << "rank " << r;
  }
  // In the third round both ranks of node 1 had no batch left: the node stepped on zero
  // gradients (its example count of 0 used to make them NaN), and the epoch's last
  // blocking average left every rank with the same finite parameters.
  for (int r = 0; r < kRanks; ++r) {
    for (double v : params[r]) ASSERT_TRUE(std::isfinite(v)) << "rank " << r;
    expect_close(params[r], params[0], 1e-6);
  }
}

TEST(Daso, LoadStateDictRefusesAMalformedState) {
  MapStore store;
  run_ranks(2, [&](int rank) {
    auto world = make_communicator(store, rank, 2, Device::cpu());
    auto net = wick::test::training_mlp();
    DasoSync sync(*world, store, *net, {.total_epochs = 3}, node_topology(*world, rank, 2));
    expect_error([&] { sync.load_state_dict({}); }, {"DASO", "daso.schedule"});
    expect_error([&] { sync.load_state_dict({{"daso.schedule", zeros({3}, DType::Float64)}}); }, {"shape [13]"});
    Tensor bad = sync.state_dict().at("daso.schedule").clone();
    bad.data<double>()[5] = 7;  // send group 7 of 2 ranks per node
    expect_error([&] { sync.load_state_dict({{"daso.schedule", bad}}); }, {"does not fit"});
    bad.data<double>()[5] = 0.5;
    expect_error([&] { sync.load_state_dict({{"daso.schedule", bad}}); }, {"not a valid count"});
    // A plain data-parallel run refuses a checkpoint that holds DASO's state.
    SingleReplica single(*net);
    expect_error([&] { single.load_state_dict(sync.state_dict()); }, {"sync.daso.schedule"});
  });
}

// Heat's DataParallelOptimizer with blocking=false: the reduction overlaps the next batch's
// loading and the step is taken before its forward; the parameters are the same.
TEST(DataParallelOptimizer, NonBlockingStepsGiveTheSameParametersAsBlockingOnes) {
  RunResult blocking = train(std::nullopt, 2, 0.1, 4);
  RunResult overlapped = train(std::nullopt, 2, 0.1, 4, {.blocking = false});
  for (int r = 0; r < kRanks; ++r) expect_close(overlapped.params[r], blocking.params[r], 0);
  RunResult fewer = train(std::nullopt, 1, 0.1, 4, {.blocking = false});
  EXPECT_NE(fewer.params[0], blocking.params[0]);
}

// NCCL subgroups (under the CUDA simulator in CI): 2 ranks on 2 devices, as 2 nodes of 1
// and as 1 node of 2.
TEST(Daso, WarmupOnCudaWithNcclIsDataParallelism) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices (the simulator has them)";
  const DasoOptions options{.total_epochs = 10, .downcast_type = DType::Float32};
  RunResult plain = train(std::nullopt, 2, 0.1, 8, {.ranks = 2, .local_size = 1});
  for (int local_size : {1, 2}) {
    RunResult daso = train(options, 2, 0.1, 8, {.ranks = 2, .local_size = local_size, .cuda = true});
    for (int r = 0; r < 2; ++r) expect_close(daso.params[r], plain.params[0], 1e-6);
  }
  RunResult cycling = train(DasoOptions{.total_epochs = 4, .warmup_epochs = 1, .cooldown_epochs = 1}, 3, 0.05, 2,
                            {.ranks = 2, .local_size = 1, .cuda = true});
  expect_close(cycling.params[1], cycling.params[0], 1e-6);
}

TEST(Daso, NodeTopologyRefusesUnequalNodesAndOtherLayouts) {
  MapStore store;
  EXPECT_THROW(run_ranks(3, [&](int rank) {
                 auto world = make_communicator(store, rank, 3, Device::cpu());
                 node_topology(*world, rank % 2, rank < 2 ? 2 : 1);
               }),
               Error);
  MapStore store2;
  std::vector<std::string> messages(4);
  run_ranks(4, [&](int rank) {
    auto world = make_communicator(store2, rank, 4, Device::cpu());
    try {
      node_topology(*world, rank / 2, 2);  // node-minor: refused
    } catch (const Error& e) {
      messages[rank] = e.what();
    }
  });
  for (const std::string& m : messages) EXPECT_NE(m.find("node-major"), std::string::npos) << m;
}

TEST(Daso, SubgroupsReduceOverTheirOwnRanks) {
  MapStore store;
  std::vector<double> sums(4);
  run_ranks(4, [&](int rank) {
    auto world = make_communicator(store, rank, 4, Device::cpu());
    auto evens = new_group(store, rank, 4, {0, 2}, Device::cpu());
    auto odds = new_group(store, rank, 4, {3, 1}, Device::cpu());
    EXPECT_EQ(evens == nullptr, rank % 2 == 1);
    EXPECT_EQ(odds == nullptr, rank % 2 == 0);
    Communicator& mine = rank % 2 == 0 ? *evens : *odds;
    if (rank == 3) EXPECT_EQ(mine.rank(), 0);
    Tensor t = tensor<double>({static_cast<double>(rank)});
    mine.all_reduce({t}, ReduceOp::Sum)->wait();
    sums[rank] = t.item<double>();
  });
  EXPECT_EQ(sums, (std::vector<double>{2, 4, 2, 4}));
  expect_error([&] { new_group(store, 0, 4, {0, 0}, Device::cpu()); }, {"new_group", "twice"});
  expect_error([&] { new_group(store, 0, 4, {4}, Device::cpu()); }, {"new_group", "outside"});
}

}  // namespace
}  // namespace wick::distributed
