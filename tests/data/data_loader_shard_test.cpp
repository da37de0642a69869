// DataLoaderOptions::rank / world_size on a map-style dataset without a sampler (issue 49,
// item 2: they were ignored, so every rank of a data-parallel job trained on the whole set
// and DDP hid it): the loader shards itself with the DistributedSampler of the options.
// And the loader's state_dict / load_state_dict (item 3), which Checkpoint keeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include <wick/data/data_loader.h>
#include <wick/data/map_dataset.h>
#include <wick/data/token_dataset.h>
#include <wick/tensor/factories.h>

#include "tests/support/reference.h"

namespace wick {
namespace {

using test::expect_error;

// Example i: "id" = i, and "noise" drawn from the example's seed.
class Ids : public MapDataset {
 public:
  explicit Ids(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  Example get(int64_t i) const override { return get(i, 0); }
  Example get(int64_t i, uint64_t seed) const override {
    check_index("Ids::get", i, n_);
    Example e;
    e.set("id", i);
    e.set("noise", static_cast<int64_t>(seed % 1000003));
    return e;
  }

 private:
  int64_t n_;
};

struct Batches {
  std::vector<std::vector<int64_t>> ids, noise;
  std::vector<int64_t> flat() const {
    std::vector<int64_t> out;
    for (const auto& b : ids) out.insert(out.end(), b.begin(), b.end());
    return out;
  }
};

Batches drain_shard(DataLoader& loader) {
  Batches r;
  while (std::optional<Example> b = loader.next()) {
    r.ids.push_back(b->at("id").to_vector<int64_t>());
    r.noise.push_back(b->at("noise").to_vector<int64_t>());
  }
  return r;
}

Batches epoch_of(int64_t n, DataLoaderOptions o, int64_t epoch) {
  DataLoader loader(std::make_shared<Ids>(n), o);
  loader.start_epoch(epoch);
  return drain_shard(loader);
}

TEST(DataLoaderShards, RanksOfTwoSeeDisjointHalvesCoveringTheSetWithoutASampler) {
  for (bool shuffle : {false, true}) {
    for (int64_t workers : {0, 2}) {
      for (int64_t epoch : {0, 3}) {
        std::vector<int64_t> seen[2];
        for (int64_t rank = 0; rank < 2; ++rank) {
          DataLoaderOptions o;
          o.batch_size = 3;
          o.shuffle = shuffle;
          o.seed = 5;
          o.num_workers = workers;
          o.rank = rank;
          o.world_size = 2;
          DataLoader loader(std::make_shared<Ids>(20), o);
          EXPECT_EQ(loader.num_batches(), 4);  // 10 examples in batches of 3
          loader.start_epoch(epoch);
          seen[rank] = drain_shard(loader).flat();
          // The same as the DistributedSampler PyTorch users give their loaders.
          DataLoaderOptions explicit_sampler = o;
          explicit_sampler.sampler = std::make_shared<DistributedSampler>(20, rank, 2, shuffle, 5, false);
          EXPECT_EQ(epoch_of(20, explicit_sampler, epoch).flat(), seen[rank]);
        }
        const std::string where = std::string(shuffle ? "shuffled" : "in order") + ", " + std::to_string(workers) +
                                  " workers, epoch " + std::to_string(epoch);
        ASSERT_EQ(seen[0].size(), 10u) << where;  // was 20: every rank read everything
        ASSERT_EQ(seen[1].size(), 10u) << where;
        std::set<int64_t> both(seen[0].begin(), seen[0].end());
        both.insert(seen[1].begin(), seen[1].end());
        EXPECT_EQ(both.size(), 20u) << "the halves overlap: " << where;
        EXPECT_EQ(*both.begin(), 0);
        EXPECT_EQ(*both.rbegin(), 19);
      }
    }
  }
  // Shuffled: rank r takes positions r, r + 2, ... of the one-process order.
  DataLoaderOptions one;
  one.batch_size = 20;
  one.shuffle = true;
  one.seed = 5;
  const std::vector<int64_t> everything = epoch_of(20, one, 1).flat();
  DataLoaderOptions r1 = one;
  r1.batch_size = 3;
  r1.rank = 1;
  r1.world_size = 2;
  std::vector<int64_t> odd;
  for (size_t j = 1; j < everything.size(); j += 2) odd.push_back(everything[j]);
  EXPECT_EQ(epoch_of(20, r1, 1).flat(), odd);
}

// An uneven split pads every rank to the same count (as torch's DistributedSampler), so the
// ranks step the same number of times; drop_last cuts the tail instead, and then no example
// is read twice.
TEST(DataLoaderShards, UnevenSplitsPadOrWithDropLastCut) {
  for (bool drop_last : {false, true}) {
    std::vector<int64_t> everything;
    for (int64_t rank = 0; rank < 3; ++rank) {
      DataLoaderOptions o;
      o.batch_size = 2;
      o.shuffle = true;
      o.seed = 1;
      o.drop_last = drop_last;
      o.rank = rank;
      o.world_size = 3;
      const std::vector<int64_t> mine = epoch_of(11, o, 0).flat();
      // Padded: 4 per rank (12 positions). drop_last: 3 per rank, of which one whole batch of 2.
      EXPECT_EQ(mine.size(), drop_last ? 2u : 4u);
      everything.insert(everything.end(), mine.begin(), mine.end());
    }
    std::set<int64_t> distinct(everything.begin(), everything.end());
    if (drop_last) EXPECT_EQ(distinct.size(), everything.size());
    else EXPECT_EQ(distinct.size(), 11u);  // 12 positions, one example twice
  }
}

// A sampler in the options is the user's: rank and world_size do not touch it.
TEST(DataLoaderShards, AGivenSamplerIsUsedAsItIs) {
  DataLoaderOptions o;
  o.batch_size = 4;
  o.rank = 1;
  o.world_size = 2;
  o.sampler = std::make_shared<SequentialSampler>(8);
  EXPECT_EQ(epoch_of(8, o, 0).flat(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(DataLoaderState, LoadStateDictContinuesWithTheRemainingBatches) {
  for (int64_t workers : {0, 3}) {
    DataLoaderOptions o;
    o.batch_size = 4;
    o.shuffle = true;
    o.seed = 17;
    o.num_workers = workers;
    auto data = std::make_shared<Ids>(30);
    DataLoader whole(data, o);
    whole.start_epoch(2);
    const Batches everything = drain_shard(whole);
    ASSERT_EQ(everything.ids.size(), 8u);

    DataLoader first(data, o);
    first.start_epoch(2);
    for (int k = 0; k < 3; ++k) ASSERT_TRUE(first.next().has_value());
    const TensorMap saved = first.state_dict();
    EXPECT_EQ(saved.at("epoch").item<int64_t>(), 2);
    EXPECT_EQ(saved.at("batches").item<int64_t>(), 3);
    EXPECT_EQ(saved.at("seed").item<int64_t>(), 17);
    for (const auto& [key, t] : saved) EXPECT_EQ(t.dtype(), DType::Int64) << key;

    // Another seed in the options: the saved one wins (the order and the example seeds are
    // functions of it), and the position is the saved one.
    DataLoaderOptions other = o;
    other.seed = 99;
    DataLoader resumed(data, other);
    resumed.load_state_dict(saved);
    EXPECT_EQ(resumed.state().epoch, 2);
    EXPECT_EQ(resumed.state().batches, 3);
    EXPECT_EQ(resumed.options().seed, 17u);
    EXPECT_EQ(resumed.state_dict().at("batches").item<int64_t>(), 3);  // saving again saves the same
    resumed.start_epoch(2);  // no skip count: the loaded position
    const Batches rest = drain_shard(resumed);
    EXPECT_EQ(rest.ids, std::vector<std::vector<int64_t>>(everything.ids.begin() + 3, everything.ids.end()));
    EXPECT_EQ(rest.noise, std::vector<std::vector<int64_t>>(everything.noise.begin() + 3, everything.noise.end()));
    // The position is used once: the next epoch (or a restart of this one) is whole.
    resumed.start_epoch(2);
    EXPECT_EQ(drain_shard(resumed).ids, everything.ids);

    // next() without start_epoch continues too.
    DataLoader lazy(data, other);
    lazy.load_state_dict(saved);
    EXPECT_EQ(lazy.num_batches(), 8);
    EXPECT_EQ(drain_shard(lazy).ids, rest.ids);

    // Another epoch, or an explicit skip count, ignores the loaded position.
    DataLoader elsewhere(data, other);
    elsewhere.load_state_dict(saved);
    elsewhere.start_epoch(3);
    EXPECT_EQ(elsewhere.state().batches, 0);
    DataLoader explicit_skip(data, other);
    explicit_skip.load_state_dict(saved);
    explicit_skip.start_epoch(2, 0);
    EXPECT_EQ(drain_shard(explicit_skip).ids, everything.ids);
  }
}

TEST(DataLoaderState, AnIterableLoaderResumesByReReading) {
  std::vector<int64_t> tokens(400);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int64_t>(i);
  auto stream = std::make_shared<TokenStream>(tensor<int64_t>(tokens), 4, 24);
  DataLoaderOptions o;
  o.batch_size = 2;
  o.seed = 3;
  o.num_workers = 2;
  auto first_values = [](DataLoader& l) {
    std::vector<std::vector<int64_t>> out;
    while (std::optional<Example> b = l.next()) out.push_back(b->at("input").select(1, 0).to_vector<int64_t>());
    return out;
  };
  DataLoader whole(stream, o);
  whole.start_epoch(1);
  const auto everything = first_values(whole);
  ASSERT_GT(everything.size(), 4u);
  DataLoader first(stream, o);
  first.start_epoch(1);
  for (int k = 0; k < 4; ++k) ASSERT_TRUE(first.next().has_value());
  DataLoader resumed(stream, o);
  resumed.load_state_dict(first.state_dict());
  EXPECT_EQ(resumed.state_dict().at("dataset_size").item<int64_t>(), -1);
  resumed.start_epoch(1);
  EXPECT_EQ(first_values(resumed), std::vector<std::vector<int64_t>>(everything.begin() + 4, everything.end()));
  // Its shards are per worker: another worker count reads other batches.
  DataLoaderOptions three = o;
  three.num_workers = 3;
  DataLoader other(stream, three);
  expect_error([&] { other.load_state_dict(first.state_dict()); }, {"num_workers 2", "this one has 3"});
}

TEST(DataLoaderState, AStateThatWouldReadOtherExamplesIsRefusedAndChangesNothing) {
  auto data = std::make_shared<Ids>(30);
  DataLoaderOptions o;
  o.batch_size = 4;
  o.shuffle = true;
  o.seed = 2;
  DataLoader saved_from(data, o);
  saved_from.start_epoch(1, 5);
  const TensorMap saved = saved_from.state_dict();

  DataLoaderOptions target_options = o;
  target_options.seed = 8;
  DataLoader target(data, target_options);
  target.start_epoch(0, 2);
  auto refused = [&](const TensorMap& state, const std::vector<std::string>& parts) {
    expect_error([&] { target.load_state_dict(state); }, parts);
    EXPECT_EQ(target.state().epoch, 0);  // as it was
    EXPECT_EQ(target.state().batches, 2);
    EXPECT_EQ(target.options().seed, 8u);
  };
  auto with = [&](const std::string& key, const Tensor& value) {
    TensorMap m = saved;
    m[key] = value;
    return m;
  };
  TensorMap missing = saved;
  missing.erase("epoch");
  refused(missing, {"DataLoader::load_state_dict", "no \"epoch\""});
  refused(with("batches", full({}, 2.5)), {"\"batches\" must be one int64", "float32"});
  refused(with("batches", full({}, int64_t{-1})), {"must be >= 0"});
  refused(with("batches", full({}, int64_t{9})), {"batch 9 of epoch 1", "has 8 batches"});
  refused(with("batch_size", full({}, int64_t{5})), {"batch_size 5", "this one has 4", "counts batches"});
  refused(with("world_size", full({}, int64_t{2})), {"world_size 2", "this one has 1"});
  refused(with("dataset_size", full({}, int64_t{31})), {"dataset_size 31", "this one has 30"});
  refused(with("shuffle", full({}, int64_t{0})), {"shuffle 0", "this one has 1"});
  // And the loader goes on where it was.
  std::optional<Example> b = target.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(target.state().batches, 3);
}

}  // namespace
}  // namespace wick
