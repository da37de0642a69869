// DataParallelSync: buckets by size, gradient all-reduces started from the hooks while
// backward still runs, zeros from a replica without a backward, and single-process data
// parallelism on threads matching one process on the combined batches.
#include <wick/autograd/nn_ops.h>
#include <wick/distributed/data_parallel/data_parallel_sync.h>
#include <wick/distributed/data_parallel/distributed_training.h>
#include <wick/optim/sgd.h>

#include <cmath>

#include "tests/support/training_fixture.h"
#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using wick::test::all_close;
using wick::test::expect_error;

class DoneWork final : public Work {
 public:
  void wait() override {}
};

// Pretends to be rank 0 of 2 whose peer contributes nothing: all_reduce leaves values as
// they are and counts the launches.
class CountingCommunicator final : public Communicator {
 public:
  int launched = 0;
  std::vector<DType> dtypes;  // of each all-reduce, in launch order
  int rank() const override { return 0; }
  int size() const override { return 2; }
  Device device() const override { return Device::cpu(); }
  std::shared_ptr<Work> all_reduce(std::vector<Tensor> tensors, ReduceOp) override {
    ++launched;
    dtypes.push_back(tensors.at(0).dtype());
    return std::make_shared<DoneWork>();
  }
  std::shared_ptr<Work> broadcast(std::vector<Tensor>, int) override { return std::make_shared<DoneWork>(); }
  std::shared_ptr<Work> reduce(std::vector<Tensor>, int, ReduceOp) override { return std::make_shared<DoneWork>(); }
  std::shared_ptr<Work> all_gather(const Tensor&, Tensor) override { return std::make_shared<DoneWork>(); }
  std::shared_ptr<Work> reduce_scatter(const Tensor&, Tensor, ReduceOp) override { return std::make_shared<DoneWork>(); }
  std::shared_ptr<Work> send(const Tensor&, int) override { return std::make_shared<DoneWork>(); }
  std::shared_ptr<Work> recv(Tensor, int) override { return std::make_shared<DoneWork>(); }
  std::shared_ptr<Work> send_recv(const Tensor&, int, Tensor, int) override { return std::make_shared<DoneWork>(); }
  void barrier() override {}
  void abort() override {}
};

std::vector<double> flat(Module& m) {
  std::vector<double> out;
  for (const auto& p : m.parameters()) {
    auto v = p.data().cpu().to(DType::Float64).to_vector<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

bool equal(const Tensor& a, const Tensor& b) { return a.shape() == b.shape() && all(eq(a, b)).item<bool>(); }

Variable loss_of(Module& net, int64_t n = 16) {
  auto data = wick::test::training_blobs(n);
  auto& seq = dynamic_cast<UnaryModule&>(net);
  return cross_entropy(seq.forward(Variable(data->inputs)), data->targets);
}

TEST(DataParallelSync, BucketsFollowTheSizeCap) {
  auto net = wick::test::training_mlp();  // 4 parameters: 512 + 64 + 256 + 16 bytes
  CountingCommunicator comm;
  EXPECT_EQ(DataParallelSync(comm, *net).num_buckets(), 1u);
  EXPECT_EQ(DataParallelSync(comm, *net, {.bucket_bytes = 1}).num_buckets(), 4u);
  EXPECT_EQ(DataParallelSync(comm, *net, {.bucket_bytes = 300}).num_buckets(), 2u);
  expect_error([&] { DataParallelSync(comm, *net, {.bucket_bytes = 0}); }, {"bucket_bytes must be > 0"});
}

TEST(DataParallelSync, StartsAllReducesWhileBackwardStillRuns) {
  auto net = wick::test::training_mlp();
  CountingCommunicator comm;
  DataParallelSync sync(comm, *net, {.bucket_bytes = 1});  // one parameter per bucket
  // The first layer's weight gets its gradient last: by then the later layers' buckets
  // must have been launched.
  int launched_before_first_layer = -1;
  Variable first_weight = net->parameters().front();
  first_weight.register_hook([&](const Variable&) {
    launched_before_first_layer = comm.launched;
    return Variable();
  });
  sync.arm(16, 0);
  EXPECT_EQ(comm.launched, 1);  // the example count, before any bucket
  sync.backward(loss_of(*net), 16);
  EXPECT_GE(launched_before_first_layer, 3);  // the count and two buckets
  sync.finish();
  EXPECT_EQ(comm.launched, 5);  // the example count and 4 buckets
  // Not armed (an accumulation step): no collective at all.
  loss_of(*net).backward();
  EXPECT_EQ(comm.launched, 5);
}

TEST(DataParallelSync, AReplicaWithoutBackwardContributesZeros) {
  auto net = wick::test::training_mlp();
  CountingCommunicator comm;
  DataParallelSync sync(comm, *net);
  sync.arm(0, 0);
  sync.finish();  // no backward ran, no example anywhere
  EXPECT_EQ(comm.launched, 2);  // the example count and the bucket
  for (const auto& p : net->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().data().abs().sum().item<double>(), 0.0);  // zeros, not 0 / 0
  }
}

// The sums stay in the buckets: after the sync each gradient is its slot of a bucket (no
// copy out; parameters of one bucket share its memory), the example count is known from
// arm on (seed_count, the backward's seed), and a gradient kept as that view through
// the next backward accumulates there and is reduced where it is.
TEST(DataParallelSync, GradientsBecomeViewsOfTheBuckets) {
  auto net = wick::test::training_mlp();
  CountingCommunicator comm;
  DataParallelSync sync(comm, *net);  // one bucket
  sync.arm(16, 0);
  EXPECT_EQ(sync.seed_count().item<double>(), 16.0);
  EXPECT_EQ(sync.seed_count().dim(), 0);
  sync.backward(loss_of(*net), 16);  // seeded 16 / 16
  std::vector<Tensor> local;
  for (const auto& p : net->parameters()) local.push_back(p.grad().data().clone());
  const std::vector<Variable> params = net->parameters();
  sync.finish();
  for (size_t i = 0; i < params.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(params[i].grad().data().shares_storage(params[0].grad().data()));
    EXPECT_TRUE(equal(params[i].grad().data(), local[i]));
  }
  sync.arm(16, 0);
  sync.backward(loss_of(*net), 16);  // no zero_grad: accumulates into the views
  sync.finish();
  for (size_t i = 0; i < params.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(params[i].grad().data().shares_storage(params[0].grad().data()));
    EXPECT_TRUE(all_close(wick::test::values(params[i].grad().data()), wick::test::values(mul(local[i], 2.0)), 1e-6, 1e-7));
  }
  EXPECT_EQ(comm.launched, 4);  // per step the count and the bucket
  expect_error([&] { DataParallelSync(comm, *net).seed_count(); }, {"seed_count before arm"});
}

// When the backward was seeded with sums (the last batch of an accumulated step: earlier
// backwards hold sums), finish divides them by the summed example count
// (this fake's peer adds nothing: 16): over each bucket when the gradients are its views,
// after the copy back, at the gradients' precision, when the bucket travels compressed.
TEST(DataParallelSync, DividesTheSumsByTheSummedCount) {
  for (std::optional<DType> reduce_dtype : {std::optional<DType>(), std::optional<DType>(DType::BFloat16)}) {
    SCOPED_TRACE(reduce_dtype ? "bfloat16 buckets" : "float32 buckets");
    auto net = wick::test::training_mlp();
    CountingCommunicator comm;
    DataParallelSync sync(comm, *net, {.bucket_bytes = 64, .reduce_dtype = reduce_dtype});
    sync.arm(16, 1);
    sync.backward(loss_of(*net), 16);  // seeded 16: a sum over the examples
    const std::vector<Variable> params = net->parameters();
    std::vector<Tensor> expected;
    for (const auto& p : params) {
      Tensor g = p.grad().data().clone();
      if (reduce_dtype) g = g.to(*reduce_dtype).to(g.dtype());
      expected.push_back(g.mul_(1.0 / 16));
    }
    sync.finish();
    for (size_t i = 0; i < params.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_TRUE(equal(params[i].grad().data(), expected[i]));
    }
  }
}

// reduce_dtype: float32 gradients travel in a bfloat16 bucket and come back rounded once.
TEST(DataParallelSync, CompressedBucketsTravelIn16Bits) {
  auto net = wick::test::training_mlp();
  CountingCommunicator comm;
  DataParallelSync sync(comm, *net, {.reduce_dtype = DType::BFloat16});
  sync.arm(16, 0);
  sync.backward(loss_of(*net), 16);
  std::vector<Tensor> before;
  for (const auto& p : net->parameters()) before.push_back(p.grad().data().clone());
  sync.finish();
  EXPECT_EQ(comm.dtypes.front(), DType::Float64);  // the example count is not compressed
  EXPECT_EQ(comm.dtypes.back(), DType::BFloat16);  // the one bucket
  size_t i = 0;
  for (const auto& p : net->parameters()) {
    EXPECT_EQ(p.grad().dtype(), DType::Float32);
    EXPECT_TRUE(equal(p.grad().data(), before[i].to(DType::BFloat16).to(DType::Float32)));
    ++i;
  }
  expect_error([&] { DataParallelSync(comm, *net, {.reduce_dtype = DType::Float32}); },
               {"reduce_dtype must be bfloat16 or float16", "float32"});
}

// Replicas on `devices` train like one CPU process on the combined batches.
void expect_local_data_parallel_matches(const std::vector<Device>& devices) {
  auto data = wick::test::training_blobs(64);
  const int replicas = static_cast<int>(devices.size());
  std::vector<std::shared_ptr<Sequential>> nets;
  std::vector<std::unique_ptr<BatchStream>> trains, valids;
  std::vector<LocalReplica> locals;
  for (int r = 0; r < replicas; ++r) {
    nets.push_back(wick::test::training_mlp());
    nets.back()->to(devices[r]);
    trains.push_back(std::make_unique<BatchStream>(data, BatchStreamOptions{.batch_size = 8, .seed = 3, .rank = r, .world_size = replicas, .device = devices[r]}));
    valids.push_back(std::make_unique<BatchStream>(data, BatchStreamOptions{.batch_size = 32, .shuffle = false, .rank = r, .world_size = replicas, .device = devices[r]}));
    locals.push_back({classifier(nets.back()), trains.back().get(), valids.back().get()});
  }
  LoopOptions options;
  options.max_epochs = 2;
  options.log_epochs = false;
  options.trainer.progress = Progress::Style::Off;
  auto make_sgd = [](Module& m) -> std::unique_ptr<Optimizer> {
    return std::make_unique<SGD>(m.named_parameters(), SGDOptions{.lr = 0.1, .momentum = 0.9});
  };
  LoopState state = local_data_parallel_training(locals, make_sgd, options);
  EXPECT_EQ(state.learning_curve.size(), 2u);

  auto single = wick::test::training_mlp();
  SupervisedModel model = classifier(single);
  SGD opt(single->named_parameters(), SGDOptions{.lr = 0.1, .momentum = 0.9});
  BatchStream train(data, {.batch_size = 8 * replicas, .seed = 3});
  BatchStream valid(data, {.batch_size = 32 * replicas, .shuffle = false});
  fit(model, opt, train, &valid, options);
  for (int r = 0; r < replicas; ++r) EXPECT_TRUE(all_close(flat(*nets[r]), flat(*single), 1e-4, 1e-5)) << "replica " << r;
}


// Compressed to bfloat16 on two replicas: the replicas stay identical, and the model is
// float32's to bfloat16's resolution (and not bit for bit: the compression happened).
TEST(LocalDataParallel, Bf16CompressedGradientsKeepReplicasIdentical) {
  auto data = wick::test::training_blobs(64);
  auto train_with = [&](std::optional<DType> reduce_dtype) {
    std::vector<std::shared_ptr<Sequential>> nets;
    std::vector<std::unique_ptr<BatchStream>> trains;
    std::vector<LocalReplica> locals;
    for (int r = 0; r < 2; ++r) {
      nets.push_back(wick::test::training_mlp());
      trains.push_back(std::make_unique<BatchStream>(
          data, BatchStreamOptions{.batch_size = 8, .seed = 3, .rank = r, .world_size = 2}));
      locals.push_back({classifier(nets.back()), trains.back().get(), nullptr});
    }
    LoopOptions options = wick::test::quiet_loop(2);
    auto make_sgd = [](Module& m) -> std::unique_ptr<Optimizer> {
      return std::make_unique<SGD>(m.named_parameters(), SGDOptions{.lr = 0.1, .momentum = 0.9});
    };
    local_data_parallel_training(locals, make_sgd, options, {.reduce_dtype = reduce_dtype});
    return std::make_pair(flat(*nets[0]), flat(*nets[1]));
  };
  auto [full0, full1] = train_with(std::nullopt);
  auto [bf0, bf1] = train_with(DType::BFloat16);
  EXPECT_EQ(bf0, bf1);
  EXPECT_TRUE(all_close(bf0, full0, 2e-2, 2e-2));
  EXPECT_NE(bf0, full0);
}

// fp16 with loss scaling on two replicas, an inf in replica 1's loss at its third batch
// only: both replicas skip that step together and stay identical.
TEST(LocalDataParallel, Fp16SkipsAStepOnEveryReplicaWhenOneFindsAnInf) {
  auto data = wick::test::training_blobs(64);
  std::vector<std::shared_ptr<Sequential>> nets;
  std::vector<std::unique_ptr<BatchStream>> trains;
  std::vector<LocalReplica> locals;
  std::vector<std::vector<std::vector<double>>> seen(2);  // per replica, the parameters at each batch
  std::vector<int> batches(2, 0);
  for (int r = 0; r < 2; ++r) {
    nets.push_back(wick::test::training_mlp());
    trains.push_back(std::make_unique<BatchStream>(
        data, BatchStreamOptions{.batch_size = 8, .shuffle = false, .rank = r, .world_size = 2}));
    SupervisedModel model = classifier(nets.back());
    model.step = [&, r](Module& m, const Batch& b) {
      seen[r].push_back(flat(m));
      Variable loss = cross_entropy(dynamic_cast<UnaryModule&>(m).forward(Variable(b.inputs)), b.targets);
      if (r == 1 && batches[r] == 2) loss = mul(loss, INFINITY);
      ++batches[r];
      return StepOutput{loss, {}};
    };
    locals.push_back({model, trains.back().get(), nullptr});
  }
  LoopOptions options = wick::test::quiet_loop(1);
  options.trainer.precision = Precision::Float16;
  options.trainer.grad_scaler.init_scale = 256;  // no overflow but the injected inf
  auto make_sgd = [](Module& m) -> std::unique_ptr<Optimizer> {
    return std::make_unique<SGD>(m.named_parameters(), SGDOptions{.lr = 0.1});
  };
  local_data_parallel_training(locals, make_sgd, options);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("replica " + std::to_string(r));
    ASSERT_EQ(seen[r].size(), 4u);
    EXPECT_NE(seen[r][1], seen[r][2]);  // step 1 happened
    EXPECT_EQ(seen[r][2], seen[r][3]);  // step 2 (replica 1's inf) was skipped here too
  }
  EXPECT_EQ(seen[0], seen[1]);
  EXPECT_EQ(flat(*nets[0]), flat(*nets[1]));
}

TEST(LocalDataParallel, TwoCpuReplicasMatchOneProcessOnTheCombinedBatches) {
  expect_local_data_parallel_matches({Device::cpu(), Device::cpu()});
}

TEST(LocalDataParallel, ThreeCpuReplicasMatchOneProcessOnTheCombinedBatches) {
  expect_local_data_parallel_matches({Device::cpu(), Device::cpu(), Device::cpu()});
}

TEST(LocalDataParallel, ACpuAndAGpuReplicaMatchOneProcess) {
  WICK_REQUIRE_CUDA();
  expect_local_data_parallel_matches({Device::cpu(), Device::cuda(0)});
}

}  // namespace
}  // namespace wick::distributed
