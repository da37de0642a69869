#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <vector>

#include <wick/data/batch_stream.h>
#include <wick/data/data_loader.h>
#include <wick/data/token_dataset.h>
#include <wick/wick.h>

#include "tests/support/reference.h"

namespace wick {
namespace {

using test::expect_error;

// Example i: "id" = i (int64 0-d) and "x" = float [2] (i, -i). Counts its get() calls.
class Numbered : public MapDataset {
 public:
  explicit Numbered(int64_t n) : n_(n) {}
  using MapDataset::get;
  int64_t size() const override { return n_; }
  Example get(int64_t i) const override {
    check_index("Numbered::get", i, n_);
    calls.fetch_add(1);
    Example e;
    e.set("id", i);
    e.set("x", tensor<float>({static_cast<float>(i), -static_cast<float>(i)}));
    return e;
  }
  mutable std::atomic<int64_t> calls{0};

 private:
  int64_t n_;
};

// Everything an epoch delivers: per batch, the ids and a seed-dependent field, so two runs
// agree only if the same examples got the same seeds in the same batches.
struct EpochRun {
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<double>> noise;
  bool operator==(const EpochRun&) const = default;
};

EpochRun drain(DataLoader& loader) {
  EpochRun r;
  while (std::optional<Example> b = loader.next()) {
    r.ids.push_back(b->at("id").to_vector<int64_t>());
    if (b->has("noise")) r.noise.push_back(b->at("noise").to_vector<double>());
    std::vector<float> x = b->at("x").to_vector<float>();
    for (size_t j = 0; j < r.ids.back().size(); ++j) EXPECT_EQ(x[2 * j], static_cast<float>(r.ids.back()[j]));
  }
  return r;
}

// A transform whose output depends on the example seed only.
std::shared_ptr<const MapDataset> noisy(int64_t n) {
  return transformed(std::make_shared<Numbered>(n), [](Example e, uint64_t seed) {
    e.set("noise", static_cast<double>(seed % 1000003));
    return e;
  });
}

TEST(DataLoader, SameBatchesWithZeroOneAndFourWorkers) {
  std::vector<EpochRun> runs;
  for (int64_t workers : {0, 1, 4}) {
    DataLoaderOptions o;
    o.batch_size = 7;
    o.shuffle = true;
    o.seed = 11;
    o.num_workers = workers;
    o.prefetch = 3;
    DataLoader loader(noisy(101), o);
    EXPECT_EQ(loader.num_batches(), 15);
    for (int64_t epoch : {0, 1}) {
      loader.start_epoch(epoch);
      runs.push_back(drain(loader));
    }
  }
  ASSERT_EQ(runs.size(), 6u);
  for (size_t r = 2; r < runs.size(); ++r) EXPECT_TRUE(runs[r] == runs[r % 2]) << "run " << r;
  EXPECT_FALSE(runs[0] == runs[1]);  // epochs differ
  // Epoch 0 covers every example once in RandomSampler's (= BatchStream's) order.
  std::vector<int64_t> flat;
  for (const auto& b : runs[0].ids) flat.insert(flat.end(), b.begin(), b.end());
  EXPECT_EQ(flat, epoch_order(101, 11, 0));
  EXPECT_EQ(runs[0].ids.back().size(), 101u % 7u);
}

// The in-memory pair through the general loader gives BatchStream's batches: same
// permutation, same batch boundaries; and DistributedSampler shards like BatchStream's
// ranks when the ranks divide the data evenly.
TEST(DataLoader, MatchesBatchStreamOnTheInMemoryPair) {
  std::vector<float> in;
  std::vector<int64_t> tg;
  for (int64_t i = 0; i < 48; ++i) {
    in.push_back(static_cast<float>(i));
    tg.push_back(100 + i);
  }
  auto pair = std::make_shared<const Dataset>(tensor<float>(in, {48, 1}), tensor<int64_t>(tg));
  for (int64_t rank = 0; rank < 3; ++rank) {
    BatchStreamOptions bo;
    bo.batch_size = 5;
    bo.seed = 8;
    bo.rank = rank;
    bo.world_size = 3;
    bo.prefetch = 0;
    BatchStream stream(pair, bo);
    DataLoaderOptions o;
    o.batch_size = 5;
    o.num_workers = 2;
    o.sampler = std::make_shared<DistributedSampler>(48, rank, 3, /*shuffle=*/true, /*seed=*/8);
    DataLoader loader(as_map_dataset(*pair), o);
    for (int64_t epoch : {0, 1}) {
      stream.start_epoch(epoch);
      loader.start_epoch(epoch);
      while (std::optional<Batch> want = stream.next()) {
        std::optional<Example> got = loader.next();
        ASSERT_TRUE(got.has_value());
        EXPECT_EQ(got->names(), (std::vector<std::string>{"input", "target"}));
        EXPECT_EQ(got->at("target").to_vector<int64_t>(), want->targets.to_vector<int64_t>());
        EXPECT_EQ(got->at("input").to_vector<float>(), want->inputs.to_vector<float>());
      }
      EXPECT_FALSE(loader.next().has_value());
    }
  }
  auto part = subset(as_map_dataset(*pair), 10, 13);
  EXPECT_EQ(part->size(), 3);
  EXPECT_EQ(part->get(0).int_at("target"), 110);
  expect_error([&] { part->get(3); }, {"index 3", "3 examples"});
}

TEST(DataLoader, DropLastAndSequentialDefault) {
  DataLoaderOptions o;
  o.batch_size = 4;
  o.drop_last = true;
  o.num_workers = 2;
  DataLoader loader(std::make_shared<Numbered>(10), o);
  EXPECT_EQ(loader.num_batches(), 2);
  EpochRun r = drain(loader);
  EXPECT_EQ(r.ids, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_FALSE(loader.next().has_value());  // stays at the end
}

TEST(DataLoader, ResumeMidEpochGivesTheRestWithoutReadingTheSkipped) {
  for (int64_t workers : {0, 3}) {
    DataLoaderOptions o;
    o.batch_size = 5;
    o.shuffle = true;
    o.seed = 4;
    o.num_workers = workers;
    auto data = noisy(53);
    DataLoader full(data, o);
    full.start_epoch(2);
    EpochRun whole = drain(full);

    DataLoader first(data, o);
    first.start_epoch(2);
    for (int k = 0; k < 4; ++k) ASSERT_TRUE(first.next().has_value());
    const LoaderState at = first.state();
    EXPECT_EQ(at.epoch, 2);
    EXPECT_EQ(at.batches, 4);

    auto counted = std::make_shared<Numbered>(53);
    auto counted_noisy = transformed(counted, [](Example e, uint64_t seed) {
      e.set("noise", static_cast<double>(seed % 1000003));
      return e;
    });
    DataLoader resumed(counted_noisy, o);
    resumed.resume(at);
    EpochRun rest = drain(resumed);
    EXPECT_EQ(rest.ids, std::vector<std::vector<int64_t>>(whole.ids.begin() + 4, whole.ids.end()));
    EXPECT_EQ(rest.noise, std::vector<std::vector<double>>(whole.noise.begin() + 4, whole.noise.end()));
    EXPECT_EQ(counted->calls.load(), 53 - 4 * 5);  // the skipped examples were never read
    EXPECT_EQ(resumed.state().batches, whole.ids.size());
  }
}

// get() of indices >= `gate_from` waits until the test opens the gate; every call records
// the largest batch any worker has reached and checks it against the prefetch bound.
class Gated : public MapDataset {
 public:
  Gated(int64_t n, int64_t batch, int64_t prefetch) : n_(n), batch_(batch), prefetch_(prefetch) {}
  using MapDataset::get;
  int64_t size() const override { return n_; }
  Example get(int64_t i) const override {
    std::unique_lock<std::mutex> lock(mu);
    // The consumer announces a batch before it asks for it, so the loader's count of
    // handed-out batches never exceeds `asked`: batch i / B must be below asked + prefetch.
    if (i / batch_ >= asked + prefetch_) violations++;
    ++calls;
    changed.notify_all();
    changed.wait(lock, [&] { return open || i < gate_from; });
    Example e;
    e.set("id", i);
    e.set("x", tensor<float>({static_cast<float>(i), -static_cast<float>(i)}));
    return e;
  }
  void ask() {
    std::lock_guard<std::mutex> lock(mu);
    ++asked;
  }
  void open_gate() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    changed.notify_all();
  }
  // Waits (a safety limit, not a timing assertion) until `count` calls have been made.
  bool wait_calls(int64_t count) {
    std::unique_lock<std::mutex> lock(mu);
    return changed.wait_for(lock, std::chrono::seconds(60), [&] { return calls >= count; });
  }

  mutable std::mutex mu;
  mutable std::condition_variable changed;
  mutable int64_t calls = 0, violations = 0;
  int64_t asked = 0;
  bool open = false;
  int64_t gate_from = 1 << 30;

 private:
  int64_t n_, batch_, prefetch_;
};

TEST(DataLoader, PrefetchBoundHolds) {
  const int64_t batch = 2, prefetch = 3;
  auto data = std::make_shared<Gated>(40, batch, prefetch);
  DataLoaderOptions o;
  o.batch_size = batch;
  o.num_workers = 4;
  o.prefetch = prefetch;
  DataLoader loader(data, o);
  loader.start_epoch(0);
  // With nobody consuming, the workers make exactly `prefetch` batches and then wait.
  ASSERT_TRUE(data->wait_calls(prefetch * batch));
  for (int64_t k = 0; k < 20; ++k) {
    data->ask();
    std::optional<Example> b = loader.next();
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->at("id").to_vector<int64_t>(), (std::vector<int64_t>{2 * k, 2 * k + 1}));
    // Each batch taken lets the workers make one more (up to the end of the epoch).
    ASSERT_TRUE(data->wait_calls(std::min<int64_t>(40, (k + 1 + prefetch) * batch)));
  }
  EXPECT_FALSE(loader.next().has_value());
  std::lock_guard<std::mutex> lock(data->mu);
  EXPECT_EQ(data->violations, 0);
  EXPECT_EQ(data->calls, 40);
}

TEST(DataLoader, DestructionWithWorkersWaitingDoesNotHang) {
  auto data = std::make_shared<Gated>(1000, 4, 2);
  {
    DataLoaderOptions o;
    o.batch_size = 4;
    o.num_workers = 4;
    o.prefetch = 2;
    DataLoader loader(data, o);
    data->ask();
    ASSERT_TRUE(loader.next().has_value());
    ASSERT_TRUE(data->wait_calls(3 * 4));  // two batches made ahead; the other workers wait for room
  }  // stops and joins the waiting workers
  {
    // A worker blocked inside get() while the loader is destroyed: the destructor waits for
    // the get() it is in (user code cannot be interrupted), which a second thread releases;
    // with prefetch 1 nothing else may be claimed, so the count is exact whichever of the
    // two threads gets there first.
    auto gated = std::make_shared<Gated>(1000, 4, 1);
    gated->gate_from = 0;
    DataLoaderOptions o;
    o.batch_size = 4;
    o.num_workers = 3;
    o.prefetch = 1;
    auto loader = std::make_unique<DataLoader>(gated, o);
    loader->start_epoch(0);
    ASSERT_TRUE(gated->wait_calls(1));  // a worker is stuck in get(0)
    std::thread opener([&] { gated->open_gate(); });
    loader.reset();
    opener.join();
    std::lock_guard<std::mutex> lock(gated->mu);
    EXPECT_LE(gated->calls, 4);  // batch 0 at most: no worker claimed past the bound
    EXPECT_EQ(gated->violations, 0);
  }
  // Restarting an epoch mid-way also stops and joins.
  DataLoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 2;
  DataLoader loader(std::make_shared<Numbered>(100), o);
  ASSERT_TRUE(loader.next().has_value());
  loader.start_epoch(1);
  EXPECT_EQ(drain(loader).ids.size(), 25u);
}

class Failing : public Numbered {
 public:
  Failing(int64_t n, int64_t bad) : Numbered(n), bad_(bad) {}
  using MapDataset::get;
  Example get(int64_t i) const override {
    if (i == bad_) throw std::runtime_error("cannot read record 17");
    return Numbered::get(i);
  }

 private:
  int64_t bad_;
};

TEST(DataLoader, ExceptionInGetSurfacesInNextNamingBatchAndIndex) {
  for (int64_t workers : {0, 1, 4}) {
    DataLoaderOptions o;
    o.batch_size = 4;
    o.num_workers = workers;
    DataLoader loader(std::make_shared<Failing>(40, 17), o);
    for (int k = 0; k < 4; ++k) ASSERT_TRUE(loader.next().has_value()) << workers;  // batches 0..3 come first
    expect_error([&] { loader.next(); }, {"DataLoader", "batch 4", "dataset index 17", "cannot read record 17"});
    EXPECT_FALSE(loader.next().has_value());  // the epoch ended there
    loader.start_epoch(1);                    // and the next one starts cleanly
    EXPECT_TRUE(loader.next().has_value());
  }
}

TEST(DataLoader, CollateErrorsAndOptionErrors) {
  auto ragged = transformed(std::make_shared<Numbered>(8), [](Example e, uint64_t) {
    e.set("x", zeros({e.int_at("id") + 1}));
    return e;
  });
  DataLoaderOptions o;
  o.batch_size = 4;
  DataLoader loader(ragged, o);
  expect_error([&] { loader.next(); }, {"batch 0", "stack_collate", "field 'x'", "example 1", "[2]", "[1]"});
  o.batch_size = 0;
  expect_error([&] { DataLoader bad(ragged, o); }, {"batch_size", "0"});
  o.batch_size = 1;
  o.num_workers = 2;
  o.prefetch = 0;
  expect_error([&] { DataLoader bad(ragged, o); }, {"prefetch"});
  o.prefetch = 1;
  o.sampler = std::make_shared<SequentialSampler>(9);
  DataLoader wrong(ragged, o);
  expect_error([&] { wrong.next(); }, {"sampler gave index 8", "8 examples"});
}

// A stream that fails after `good` examples.
class FailingStream : public IterableDataset {
 public:
  std::unique_ptr<ExampleStream> open(const Shard& shard) const override {
    struct Stream : ExampleStream {
      int64_t worker, made = 0;
      std::optional<Example> next() override {
        if (worker == 1 && made == 3) throw std::runtime_error("disk went away");
        if (made == 10) return std::nullopt;
        Example e;
        e.set("id", worker * 100 + made++);
        e.set("x", tensor<float>({0.f, 0.f}));
        return e;
      }
    };
    auto s = std::make_unique<Stream>();
    s->worker = shard.worker;
    return s;
  }
};

TEST(DataLoader, IterableStreamErrorsNameTheWorkerAndOptionsAreChecked) {
  DataLoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 2;
  DataLoader loader(std::make_shared<FailingStream>(), o);
  // Round-robin: worker 0's batch 0, worker 1's batch 0, worker 0's batch 1, then worker 1
  // fails in its batch 1 (its example 3).
  EXPECT_EQ(loader.next()->at("id").to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(loader.next()->at("id").to_vector<int64_t>(), (std::vector<int64_t>{100, 101}));
  EXPECT_EQ(loader.next()->at("id").to_vector<int64_t>(), (std::vector<int64_t>{2, 3}));
  expect_error([&] { loader.next(); }, {"worker 1", "its batch 1", "example 3", "disk went away"});
  EXPECT_FALSE(loader.next().has_value());
  EXPECT_EQ(loader.num_batches(), -1);
  o.shuffle = true;
  expect_error([&] { DataLoader bad(std::make_shared<FailingStream>(), o); }, {"iterable", "shuffle"});
  o.shuffle = false;
  o.device = Device::cuda(cuda::device_count());
  expect_error([&] { DataLoader bad(std::make_shared<FailingStream>(), o); }, {"not available"});
}

TEST(DataLoader, PadCollateThroughTheLoader) {
  auto ragged = transformed(std::make_shared<Numbered>(6), [](Example e, uint64_t) {
    e.set("x", full({e.int_at("id") % 3}, 5.0));
    return e;
  });
  DataLoaderOptions o;
  o.batch_size = 3;
  o.num_workers = 2;
  o.collate = pad_collate(-1, {"x"});
  DataLoader loader(ragged, o);
  Example b = *loader.next();
  EXPECT_EQ(b.names(), (std::vector<std::string>{"id", "x", "x_length"}));
  EXPECT_EQ(b.at("x").to_vector<float>(), (std::vector<float>{-1, -1, 5, -1, 5, 5}));
  EXPECT_EQ(b.at("x_length").to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
}

TEST(Collate, PadsVariableFirstDimsAndAddsLengths) {
  std::vector<Example> examples;
  for (int64_t len : {2, 0, 3}) {
    Example e;
    e.set("tokens", arange(int64_t{1}, len + 1));
    e.set("label", len);
    examples.push_back(e);
  }
  Example b = pad_collate(-1)(examples);
  EXPECT_EQ(b.names(), (std::vector<std::string>{"tokens", "tokens_length", "label"}));
  EXPECT_EQ(b.at("tokens").shape(), Shape({3, 3}));
  EXPECT_EQ(b.at("tokens").to_vector<int64_t>(), (std::vector<int64_t>{1, 2, -1, -1, -1, -1, 1, 2, 3}));
  EXPECT_EQ(b.at("tokens_length").to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 3}));
  EXPECT_EQ(b.at("label").to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 3}));
  EXPECT_EQ(b.at("label").dtype(), DType::Int64);

  Example s = stack_collate({Example{{"a", zeros({2})}}, Example{{"a", ones({2})}}});
  EXPECT_EQ(s.at("a").shape(), Shape({2, 2}));
  expect_error([&] { stack_collate({Example{{"a", zeros({2})}}, Example{{"b", zeros({2})}}}); },
               {"example 1", "fields (b)", "(a)"});
  expect_error([&] { pad_collate(0, {"nope"})({Example{{"a", zeros({2})}}}); }, {"no field 'nope'"});
}

TEST(Example, FieldsInOrderAndErrorsNameWhatIsThere) {
  Example e;
  e.set("image", zeros({3, 4})).set("label", int64_t{7}).set("weight", 0.5);
  EXPECT_EQ(e.names(), (std::vector<std::string>{"image", "label", "weight"}));
  EXPECT_EQ(e.at("label").dtype(), DType::Int64);
  EXPECT_EQ(e.at("label").dim(), 0);
  EXPECT_EQ(e.at("weight").dtype(), DType::Float64);
  EXPECT_EQ(e.int_at("label"), 7);
  EXPECT_EQ(e.float_at("weight"), 0.5);
  e.set("image", ones({2}));  // replaced in place
  expect_error([&] { e.int_at("image"); }, {"int_at", "image", "[2]"});
  EXPECT_EQ(e.names().front(), "image");
  expect_error([&] { e.at("lable"); }, {"no field 'lable'", "image, label, weight"});
  Example t = Example::tuple({zeros({1}), ones({2})});
  EXPECT_EQ(t.names(), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(t.at(1).numel(), 2);
  expect_error([&] { Example({{"a", zeros({1})}, {"a", zeros({1})}}); }, {"duplicate field 'a'"});
}

TEST(TokenDatasets, WindowsAreShiftedByOneAndDeterministic) {
  Tensor tokens = arange(int64_t{0}, int64_t{1000}).to(DType::Int32);
  auto windows = std::make_shared<TokenWindows>(tokens, 16);
  EXPECT_EQ(windows->size(), 999 / 16);
  DataLoaderOptions o;
  o.batch_size = 8;
  o.seed = 3;
  o.shuffle = true;
  std::vector<int64_t> starts[2];
  for (int64_t workers : {0, 2}) {
    o.num_workers = workers;
    DataLoader loader(windows, o);
    while (std::optional<Example> b = loader.next()) {
      Tensor in = b->at("input"), tg = b->at("target");
      EXPECT_EQ(in.dtype(), DType::Int64);
      std::vector<int64_t> iv = in.to_vector<int64_t>(), tv = tg.to_vector<int64_t>();
      for (int64_t r = 0; r < in.size(0); ++r) {
        starts[workers > 0].push_back(iv[r * 16]);
        for (int64_t c = 0; c < 16; ++c) EXPECT_EQ(tv[r * 16 + c], iv[r * 16 + c] + 1);
        EXPECT_LE(iv[r * 16] + 16, 999);
      }
    }
  }
  EXPECT_EQ(starts[0], starts[1]);
  EXPECT_EQ(TokenWindows(tokens, 16, false).get(3).at("input").to_vector<int64_t>().front(), 48);
  expect_error([&] { TokenWindows(zeros({10}), 4); }, {"TokenWindows", "integer"});
}

// Every window of an iterable epoch comes from exactly one (rank, worker): the union over
// ranks of what the loaders deliver is the windows j = 0..n-1, each once.
TEST(TokenDatasets, StreamShardsCoverEveryWindowOnceAndInterleaveRoundRobin) {
  Tensor tokens = arange(int64_t{0}, int64_t{5000});
  auto stream = std::make_shared<TokenStream>(tokens, 8, 103);
  // The windows of epoch 1 as one unsharded stream makes them.
  std::multiset<int64_t> expected;
  {
    auto s = stream->open(Shard{0, 1, 0, 1, 9, 1});
    while (std::optional<Example> e = s->next()) expected.insert(e->at("input").to_vector<int64_t>()[0]);
  }
  ASSERT_EQ(expected.size(), 103u);
  for (int64_t workers : {0, 1, 3}) {
    std::multiset<int64_t> seen;
    for (int64_t rank = 0; rank < 2; ++rank) {
      DataLoaderOptions o;
      o.batch_size = 4;
      o.seed = 9;
      o.num_workers = workers;
      o.rank = rank;
      o.world_size = 2;
      DataLoader loader(stream, o);
      loader.start_epoch(1);
      int64_t batches = 0;
      while (std::optional<Example> b = loader.next()) {
        for (int64_t v : b->at("input").select(1, 0).to_vector<int64_t>()) seen.insert(v);
        ++batches;
      }
      EXPECT_EQ(loader.state().batches, batches);
    }
    EXPECT_EQ(seen, expected) << workers << " workers";
  }
  // Round-robin: with 3 workers on one rank, batch k comes from worker k % 3 while all run.
  DataLoaderOptions o;
  o.batch_size = 2;
  o.seed = 9;
  o.num_workers = 3;
  DataLoader loader(stream, o);
  std::vector<Example> first;
  for (int k = 0; k < 6; ++k) first.push_back(*loader.next());
  for (int64_t k = 0; k < 6; ++k) {
    auto s = stream->open(Shard{0, 1, k % 3, 3, 9, 0});
    for (int64_t skip = 0; skip < (k / 3) * 2; ++skip) s->next();
    EXPECT_EQ(first[k].at("input").select(0, 0).to_vector<int64_t>(), s->next()->at("input").to_vector<int64_t>());
  }
  // Resume skips (by reading) to the same place.
  LoaderState at = loader.state();
  Example after = *loader.next();
  DataLoader again(stream, o);
  again.resume(at);
  EXPECT_EQ(again.next()->at("input").to_vector<int64_t>(), after.at("input").to_vector<int64_t>());
}

}  // namespace
}  // namespace wick
