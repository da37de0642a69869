#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <wick/data/batch_stream.h>
#include <wick/data/transforms.h>
#include <wick/wick.h>

#include "tests/support/reference.h"

namespace wick {
namespace {

using test::expect_error;

// n examples: inputs [n, 2] float = (i, -i), targets int64 i. Each example names itself.
std::shared_ptr<const Dataset> numbered_dataset(int64_t n) {
  std::vector<float> in;
  std::vector<int64_t> tg;
  for (int64_t i = 0; i < n; ++i) {
    in.push_back(static_cast<float>(i));
    in.push_back(-static_cast<float>(i));
    tg.push_back(i);
  }
  return std::make_shared<const Dataset>(tensor<float>(in, {n, 2}), tensor<int64_t>(tg));
}

// Every batch of one epoch, as lists of example ids (checked against inputs and indices).
std::vector<std::vector<int64_t>> epoch_batches(BatchStream& s, int64_t epoch) {
  s.start_epoch(epoch);
  std::vector<std::vector<int64_t>> out;
  while (std::optional<Batch> b = s.next()) {
    std::vector<int64_t> ids = b->targets.to_vector<int64_t>();
    std::vector<float> in = b->inputs.to_vector<float>();
    EXPECT_EQ(b->indices.to_vector<int64_t>(), ids);
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(in[2 * i], static_cast<float>(ids[i]));
    out.push_back(ids);
  }
  return out;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  return all;
}

TEST(EpochOrder, IsAPermutationFixedBySeedAndEpoch) {
  std::vector<int64_t> a = epoch_order(1000, 5, 0), b = epoch_order(1000, 5, 0), c = epoch_order(1000, 5, 1),
                       d = epoch_order(1000, 6, 0);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_EQ(epoch_order(10, 5, 0, /*shuffle=*/false), std::vector<int64_t>(iota.begin(), iota.begin() + 10));
}

TEST(BatchStream, EveryExampleOncePerEpochAndOrdersDifferByEpoch) {
  BatchStreamOptions o;
  o.batch_size = 8;
  o.seed = 3;
  BatchStream s(numbered_dataset(50), o);
  EXPECT_EQ(s.num_batches(), 7);
  EXPECT_EQ(s.num_examples(), 50);
  auto e0 = epoch_batches(s, 0), e1 = epoch_batches(s, 1), e0_again = epoch_batches(s, 0);
  ASSERT_EQ(e0.size(), 7u);
  for (size_t k = 0; k < 6; ++k) EXPECT_EQ(e0[k].size(), 8u);
  EXPECT_EQ(e0.back().size(), 2u);  // the last batch is smaller without drop_last
  std::vector<int64_t> all = flat(e0);
  std::sort(all.begin(), all.end());
  std::vector<int64_t> iota(50);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(all, iota);
  EXPECT_NE(flat(e0), flat(e1));
  EXPECT_EQ(e0, e0_again);
  EXPECT_EQ(flat(e0), epoch_order(50, 3, 0));

  BatchStream same_seed(numbered_dataset(50), o);
  EXPECT_EQ(epoch_batches(same_seed, 1), e1);
}

TEST(BatchStream, NoShuffleKeepsTheDatasetOrder) {
  BatchStreamOptions o;
  o.batch_size = 4;
  o.shuffle = false;
  BatchStream s(numbered_dataset(10), o);
  auto batches = epoch_batches(s, 7);
  EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
}

TEST(BatchStream, DropLast) {
  BatchStreamOptions o;
  o.batch_size = 8;
  o.drop_last = true;
  BatchStream s(numbered_dataset(50), o);
  EXPECT_EQ(s.num_batches(), 6);
  EXPECT_EQ(s.num_examples(), 48);
  auto batches = epoch_batches(s, 0);
  ASSERT_EQ(batches.size(), 6u);
  for (const auto& b : batches) EXPECT_EQ(b.size(), 8u);
  std::vector<int64_t> order = epoch_order(50, 0, 0);
  EXPECT_EQ(flat(batches), std::vector<int64_t>(order.begin(), order.begin() + 48));
}

TEST(BatchStream, StartsEpochZeroByItself) {
  BatchStreamOptions o;
  o.batch_size = 5;
  o.seed = 9;
  BatchStream s(numbered_dataset(10), o);
  std::optional<Batch> b = s.next();
  ASSERT_TRUE(b);
  std::vector<int64_t> order = epoch_order(10, 9, 0);
  EXPECT_EQ(b->targets.to_vector<int64_t>(), std::vector<int64_t>(order.begin(), order.begin() + 5));
}

// Ranks' shards are disjoint and cover the data, and batch k over all ranks is batch k of
// one process with batch size B * W.
TEST(BatchStream, ShardingUnionMatchesOneProcessWithTheCombinedBatch) {
  const int64_t n = 53, b = 4;
  for (int64_t w : {1, 2, 3}) {
    for (bool drop_last : {false, true}) {
      SCOPED_TRACE("world size " + std::to_string(w) + (drop_last ? " drop_last" : ""));
      BatchStreamOptions single;
      single.batch_size = b * w;
      single.seed = 17;
      auto combined = epoch_batches(*std::make_unique<BatchStream>(numbered_dataset(n), single), 2);
      std::vector<std::vector<std::vector<int64_t>>> ranks;
      std::vector<int64_t> everything;
      for (int64_t r = 0; r < w; ++r) {
        BatchStreamOptions o;
        o.batch_size = b;
        o.seed = 17;
        o.rank = r;
        o.world_size = w;
        o.drop_last = drop_last;
        BatchStream s(numbered_dataset(n), o);
        ranks.push_back(epoch_batches(s, 2));
        EXPECT_EQ(static_cast<int64_t>(ranks.back().size()), s.num_batches());
        EXPECT_EQ(static_cast<int64_t>(flat(ranks.back()).size()), s.num_examples());
        for (int64_t id : flat(ranks.back())) everything.push_back(id);
      }
      std::set<int64_t> unique(everything.begin(), everything.end());
      EXPECT_EQ(unique.size(), everything.size()) << "shards overlap";
      if (!drop_last) {
        EXPECT_EQ(static_cast<int64_t>(unique.size()), n) << "shards do not cover the data";
      }
      // Full rounds: the ranks' batch k together is the single process's batch k.
      const size_t full_rounds = static_cast<size_t>(n / (b * w));
      for (size_t k = 0; k < full_rounds; ++k) {
        std::vector<int64_t> together;
        for (const auto& rank : ranks) together.insert(together.end(), rank[k].begin(), rank[k].end());
        std::vector<int64_t> expected = combined[k];
        std::sort(together.begin(), together.end());
        std::sort(expected.begin(), expected.end());
        EXPECT_EQ(together, expected) << "batch " << k;
      }
    }
  }
}

TEST(BatchStream, RanksMayHaveDifferentBatchCounts) {
  BatchStreamOptions o;
  o.batch_size = 2;
  o.world_size = 3;
  o.rank = 0;
  BatchStream r0(numbered_dataset(7), o);  // positions 0, 3, 6: 2 batches
  o.rank = 2;
  BatchStream r2(numbered_dataset(7), o);  // positions 2, 5: 1 batch
  EXPECT_EQ(r0.num_batches(), 2);
  EXPECT_EQ(r0.num_examples(), 3);
  EXPECT_EQ(r2.num_batches(), 1);
  o.rank = 1;
  BatchStream tiny(numbered_dataset(1), o);  // no examples for rank 1
  EXPECT_EQ(tiny.num_batches(), 0);
  tiny.start_epoch(0);
  EXPECT_FALSE(tiny.next());
}

TEST(BatchStream, PrefetchOnAndOffGiveIdenticalBatches) {
  auto data = numbered_dataset(37);
  auto transform = [](Batch b, uint64_t seed) {
    b.inputs = b.inputs + static_cast<double>(seed % 1000);  // shows the seed in the data
    return b;
  };
  std::vector<std::vector<float>> seen[3];
  for (int64_t prefetch : {0, 1, 3}) {
    BatchStreamOptions o;
    o.batch_size = 5;
    o.seed = 8;
    o.prefetch = prefetch;
    o.transform = transform;
    BatchStream s(data, o);
    for (int64_t epoch : {0, 1}) {
      s.start_epoch(epoch);
      while (std::optional<Batch> b = s.next()) seen[prefetch == 0 ? 0 : prefetch == 1 ? 1 : 2].push_back(b->inputs.to_vector<float>());
    }
  }
  EXPECT_EQ(seen[0].size(), 16u);
  EXPECT_EQ(seen[0], seen[1]);
  EXPECT_EQ(seen[0], seen[2]);
}

TEST(BatchStream, TransformSeedDependsOnEpochAndBatchNotRankOrPrefetch) {
  std::vector<uint64_t> seeds[2];
  for (int64_t rank : {0, 1}) {
    BatchStreamOptions o;
    o.batch_size = 2;
    o.world_size = 2;
    o.rank = rank;
    o.prefetch = rank;  // the second rank prefetches, the first does not
    o.transform = [&, rank](Batch b, uint64_t seed) {
      seeds[rank].push_back(seed);
      return b;
    };
    BatchStream s(numbered_dataset(8), o);
    for (int64_t epoch : {0, 1}) {
      s.start_epoch(epoch);
      while (s.next()) {
      }
    }
  }
  EXPECT_EQ(seeds[0], seeds[1]);
  std::set<uint64_t> distinct(seeds[0].begin(), seeds[0].end());
  EXPECT_EQ(distinct.size(), 4u);  // 2 batches x 2 epochs
}

TEST(BatchStream, TransformsRunOnTheBatch) {
  auto data = std::make_shared<const Dataset>(zeros({6, 1, 2, 2}, DType::UInt8) + 51, arange(0, 6, 1));
  BatchStreamOptions o;
  o.batch_size = 4;
  o.transform = [](Batch b, uint64_t seed) {
    b.inputs = to_float_normalized(random_hflip(b.inputs.to(DType::UInt8), 0.5, seed), {0.1}, {0.5});
    return b;
  };
  BatchStream s(data, o);
  std::optional<Batch> b = s.next();
  ASSERT_TRUE(b);
  EXPECT_TRUE(test::matches(b->inputs, {4, 1, 2, 2}, DType::Float32, std::vector<double>(16, (0.2 - 0.1) / 0.5), 1e-6, 1e-6));
}

TEST(BatchStream, TransformExceptionsPropagate) {
  for (int64_t prefetch : {0, 2}) {
    SCOPED_TRACE("prefetch " + std::to_string(prefetch));
    BatchStreamOptions o;
    o.batch_size = 3;
    o.prefetch = prefetch;
    int made = 0;
    o.transform = [&made](Batch b, uint64_t) -> Batch {
      if (++made == 3) throw Error("augment: the third batch is broken");
      return b;
    };
    BatchStream s(numbered_dataset(30), o);
    s.start_epoch(0);
    EXPECT_TRUE(s.next());
    EXPECT_TRUE(s.next());
    expect_error([&] { s.next(); }, {"augment", "third batch"});
    EXPECT_FALSE(s.next());  // the epoch ended at the failure
    made = 100;              // the next epoch works again
    s.start_epoch(1);
    EXPECT_EQ(epoch_batches(s, 1).size(), 10u);
  }
}

TEST(BatchStream, OtherExceptionTypesPropagateToo) {
  BatchStreamOptions o;
  o.batch_size = 3;
  o.transform = [](Batch, uint64_t) -> Batch { throw std::runtime_error("plain failure"); };
  BatchStream s(numbered_dataset(9), o);
  EXPECT_THROW(s.next(), std::runtime_error);
}

TEST(BatchStream, TransformMustKeepTheExampleCount) {
  BatchStreamOptions o;
  o.batch_size = 4;
  o.prefetch = 0;
  o.transform = [](Batch b, uint64_t) {
    b.inputs = b.inputs.narrow(0, 0, 1);
    return b;
  };
  BatchStream s(numbered_dataset(8), o);
  expect_error([&] { s.next(); }, {"BatchStream", "transform", "4 examples"});
}

TEST(BatchStream, DestructionMidEpochDoesNotHang) {
  auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < 20; ++round) {
    BatchStreamOptions o;
    o.batch_size = 2;
    o.prefetch = 2;
    o.transform = [](Batch b, uint64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return b;
    };
    BatchStream s(numbered_dataset(100), o);
    s.start_epoch(0);
    if (round % 2) s.next();                          // the loader is blocked on a full queue
    if (round % 3 == 0) s.start_epoch(1);             // restart mid-epoch
  }
  // Never started, and started with nothing to do.
  { BatchStream s(numbered_dataset(4), BatchStreamOptions{}); }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(BatchStream, Errors) {
  BatchStreamOptions o;
  o.batch_size = 0;
  expect_error([&] { BatchStream(numbered_dataset(4), o); }, {"BatchStream", "batch_size"});
  o.batch_size = 2;
  o.rank = 2;
  o.world_size = 2;
  expect_error([&] { BatchStream(numbered_dataset(4), o); }, {"BatchStream", "rank 2", "world_size = 2"});
  o.rank = 0;
  o.device = Device::cuda(cuda::device_count());
  expect_error([&] { BatchStream(numbered_dataset(4), o); }, {"BatchStream", "not available"});
  expect_error([] { Dataset(zeros({3, 2}), zeros({4})); }, {"Dataset", "[3, 2]", "[4]", "3 vs 4"});
}

TEST(Dataset, Subset) {
  auto data = numbered_dataset(10);
  Dataset part = subset(*data, 3, 7);
  EXPECT_EQ(part.size(), 4);
  EXPECT_EQ(part.targets.to_vector<int64_t>(), (std::vector<int64_t>{3, 4, 5, 6}));
  EXPECT_EQ(subset(*data, 5, 5).size(), 0);
  expect_error([&] { subset(*data, 4, 11); }, {"subset", "[4, 11)", "10 examples"});
  // A view of a view works in a stream (non-contiguous rows are copied once).
  BatchStreamOptions o;
  o.batch_size = 3;
  o.shuffle = false;
  Dataset strided(data->inputs.slice(0, 0, 10, 2), data->targets.slice(0, 0, 10, 2));
  BatchStream s(std::make_shared<const Dataset>(strided), o);
  s.start_epoch(0);
  std::optional<Batch> first = s.next(), second = s.next();
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(s.next());
  EXPECT_EQ(first->targets.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(first->inputs.to_vector<float>(), (std::vector<float>{0, -0.0f, 2, -2, 4, -4}));
  EXPECT_EQ(second->targets.to_vector<int64_t>(), (std::vector<int64_t>{6, 8}));
  EXPECT_EQ(second->indices.to_vector<int64_t>(), (std::vector<int64_t>{3, 4}));  // indices of `strided`
}

// Batches on a GPU: same contents as on the CPU, and ready to use on the current stream.
TEST(BatchStream, BatchUsedOnAnotherStreamKeepsItsMemoryUntilThatStreamIsDone) {
  WICK_REQUIRE_CUDA();
  // Batches of more than 1 MiB (each in its own segment), made on the default stream, which
  // is current at start_epoch().
  const int64_t n = 200000;
  BatchStreamOptions o;
  o.batch_size = n;
  o.shuffle = false;
  o.prefetch = 0;
  o.device = Device::cuda(0);
  BatchStream s(numbered_dataset(n), o);
  s.start_epoch(0);
  cuda::Stream side = cuda::Stream::create(0);
  Tensor busy = empty({int64_t{1} << 22}, Options(DType::Float32, Device::cuda(0)));
  cuda::synchronize(0);
  void* inputs = nullptr;
  void* targets = nullptr;
  {
    // The batch is taken and used on another stream, which writes it after a long stretch of
    // other work; then it is dropped.
    cuda::StreamGuard g(side);
    std::optional<Batch> b = s.next();
    ASSERT_TRUE(b);
    inputs = b->inputs.data_ptr();
    targets = b->targets.data_ptr();
    for (int i = 0; i < 8; ++i) busy.fill_(i);
    b->inputs.fill_(-1.0);
    b->targets.fill_(-1);
  }
  Tensor u = empty({n, 2}, Options(DType::Float32, Device::cuda(0)));
  const bool side_still_busy = !side.query();
  if (side_still_busy) {
    EXPECT_NE(u.data_ptr(), inputs);
    EXPECT_NE(u.data_ptr(), targets);
  }
  u.fill_(3.0);
  cuda::synchronize(0);
  EXPECT_EQ(u.to_vector<float>(), std::vector<float>(static_cast<size_t>(2 * n), 3.0f));
}

TEST(BatchStream, CudaDeliveryMatchesCpu) {
  WICK_REQUIRE_CUDA();
  auto data = numbered_dataset(41);
  for (int64_t prefetch : {0, 2}) {
    BatchStreamOptions o;
    o.batch_size = 6;
    o.seed = 4;
    o.prefetch = prefetch;
    BatchStream cpu(data, o);
    o.device = Device::cuda(0);
    BatchStream gpu(data, o);
    for (int64_t epoch : {0, 1}) {
      cpu.start_epoch(epoch);
      gpu.start_epoch(epoch);
      while (std::optional<Batch> c = cpu.next()) {
        std::optional<Batch> g = gpu.next();
        ASSERT_TRUE(g);
        EXPECT_TRUE(g->inputs.is_cuda());
        EXPECT_TRUE(g->targets.is_cuda());
        EXPECT_EQ(g->inputs.to_vector<float>(), c->inputs.to_vector<float>());
        EXPECT_EQ(g->targets.to_vector<int64_t>(), c->targets.to_vector<int64_t>());
        EXPECT_EQ(g->indices.to_vector<int64_t>(), c->indices.to_vector<int64_t>());
      }
      EXPECT_FALSE(gpu.next());
    }
  }
}

}  // namespace
}  // namespace wick
