// DistributedDataParallel for your own loop: two ranks as threads (Gloo on loopback) start
// from rank 0's parameters, average their gradients after backward (equal to one process's
// gradient of the mean loss over both ranks' examples), accumulate without communication
// under no_sync, and take the same SGD steps as one process on the combined batches.
#include <wick/autograd/nn_ops.h>
#include <wick/distributed/data_parallel/distributed_data_parallel.h>
#include <wick/distributed/comm/gloo_communicator.h>
#include <wick/nn/linear.h>
#include <wick/optim/sgd.h>

#include "tests/distributed/communicator_test_store.h"
#include "tests/support/reference.h"
#include "tests/support/training_fixture.h"

namespace wick::distributed {
namespace {

using test::MapStore;
using test::run_ranks;
using wick::test::all_close;

std::vector<double> flat(const std::vector<Tensor>& ts) {
  std::vector<double> out;
  for (const Tensor& t : ts) {
    auto v = t.to(DType::Float64).contiguous().to_vector<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}
std::vector<double> parameters_of(Module& m) {
  std::vector<Tensor> ts;
  for (const auto& p : m.parameters()) ts.push_back(p.data());
  return flat(ts);
}
std::vector<double> gradients_of(Module& m) {
  std::vector<Tensor> ts;
  for (const auto& p : m.parameters()) ts.push_back(p.grad().data());
  return flat(ts);
}

// Mean cross-entropy of the MLP on examples [begin, begin + n) of the blobs.
Variable loss_on(Module& net, int64_t begin, int64_t n) {
  static const auto data = wick::test::training_blobs(64, 5);
  auto& seq = dynamic_cast<UnaryModule&>(net);
  return cross_entropy(seq.forward(Variable(data->inputs.narrow(0, begin, n))), data->targets.narrow(0, begin, n));
}

GlooOptions ddp_quick() {
  GlooOptions o;
  o.timeout = Milliseconds(20000);
  return o;
}

TEST(DistributedDataParallel, StartsFromRankZerosParametersAndAveragesGradients) {
  // One process on the 16 examples both ranks see together.
  auto single = wick::test::training_mlp(2);
  loss_on(*single, 0, 16).backward();
  const std::vector<double> want_grad = gradients_of(*single), want_params = parameters_of(*single);

  std::vector<std::vector<double>> params(2), grads(2);
  MapStore store;
  run_ranks(2, [&](int rank) {
    GlooCommunicator comm(store, rank, 2, ddp_quick());
    auto net = wick::test::training_mlp(rank == 0 ? 2 : 99);  // rank 1 starts elsewhere
    DistributedDataParallel ddp(*net, &comm, {.bucket_bytes = 300});  // several buckets
    params[rank] = parameters_of(*net);
    ddp.backward(loss_on(*net, 8 * rank, 8));  // each rank its half; means of equal halves
    grads[rank] = gradients_of(*net);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(params[r], want_params) << "rank " << r;
    EXPECT_TRUE(all_close(grads[r], want_grad, 1e-5, 1e-6)) << "rank " << r;
  }
  EXPECT_EQ(grads[0], grads[1]);  // the same all-reduce result on both
}

TEST(DistributedDataParallel, NoSyncAccumulatesLocallyAndTheNextBackwardAveragesTheSum) {
  auto single = wick::test::training_mlp(2);
  // Micro-batch a: examples [0, 4) on rank 0, [4, 8) on rank 1; b: [8, 12) and [12, 16).
  // Averaged over ranks, the gradient of (loss_a + loss_b) per rank is the gradient of
  // the mean over [0, 8) plus the mean over [8, 16).
  loss_on(*single, 0, 8).backward();
  loss_on(*single, 8, 8).backward();
  const std::vector<double> want = gradients_of(*single);

  std::vector<std::vector<double>> local(2), synced(2);
  MapStore store;
  run_ranks(2, [&](int rank) {
    GlooCommunicator comm(store, rank, 2, ddp_quick());
    auto net = wick::test::training_mlp(2);
    DistributedDataParallel ddp(*net, &comm);
    {
      auto guard = ddp.no_sync();
      ddp.backward(loss_on(*net, 4 * rank, 4));
      auto nested = ddp.no_sync();  // nesting keeps it off
    }
    local[rank] = gradients_of(*net);
    ddp.backward(loss_on(*net, 8 + 4 * rank, 4));
    synced[rank] = gradients_of(*net);
  });
  EXPECT_NE(local[0], local[1]);  // no communication under no_sync
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(all_close(synced[r], want, 1e-5, 1e-6)) << "rank " << r;
}

TEST(DistributedDataParallel, TrainingStepsMatchOneProcessOnTheCombinedBatches) {
  auto single = wick::test::training_mlp(3);
  SGD opt(single->named_parameters(), SGDOptions{.lr = 0.2, .momentum = 0.9});
  for (int step = 0; step < 4; ++step) {
    opt.zero_grad();
    loss_on(*single, 16 * step, 16).backward();
    opt.step();
  }
  const std::vector<double> want = parameters_of(*single);

  std::vector<std::vector<double>> got(2);
  MapStore store;
  run_ranks(2, [&](int rank) {
    GlooCommunicator comm(store, rank, 2, ddp_quick());
    auto net = wick::test::training_mlp(3);
    SGD local_opt(net->named_parameters(), SGDOptions{.lr = 0.2, .momentum = 0.9});
    DistributedDataParallel ddp(*net, &comm);
    for (int step = 0; step < 4; ++step) {
      local_opt.zero_grad();
      ddp.backward(loss_on(*net, 16 * step + 8 * rank, 8));
      local_opt.step();
    }
    got[rank] = parameters_of(*net);
  });
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(all_close(got[r], want, 1e-5, 1e-6)) << "rank " << r;
}

TEST(DistributedDataParallel, AWorldOfOneIsPlainBackward) {
  auto a = wick::test::training_mlp(4), b = wick::test::training_mlp(4);
  DistributedDataParallel ddp(*a, nullptr);
  EXPECT_EQ(ddp.world_size(), 1);
  ddp.backward(loss_on(*a, 0, 16));
  loss_on(*b, 0, 16).backward();
  EXPECT_EQ(gradients_of(*a), gradients_of(*b));
  wick::test::expect_error([&] { DistributedDataParallel(*a, nullptr, {.bucket_bytes = 0}); },
                           {"DistributedDataParallel", "bucket_bytes must be > 0"});
}

}  // namespace
}  // namespace wick::distributed
