// Batches delivered to a CUDA device (wick/data/cuda_delivery.h): the same contents as on the
// CPU for every field kind, the host not blocked by the copy, page-locked buffers reused,
// and no batch left in flight when a loader stops. Run by the simulator build in CI.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include <wick/data/cuda_delivery.h>
#include <wick/data/data_loader.h>
#include <wick/data/token_dataset.h>
#include <wick/wick.h>

#include "tests/support/reference.h"

// Defined only by the CUDA simulator (cudasim): the busy work below is sized by it.
extern "C" int cudasimSetDeviceMemoryLimit(int device, size_t bytes) __attribute__((weak));

namespace wick {
namespace {

// Example i: a transposed (non-contiguous) float32 [3, 2], an int64 number, a float64 number,
// a uint8 [4] and an empty float32 [0]: every layout and dtype a batch field may have.
class Mixed : public MapDataset {
 public:
  explicit Mixed(int64_t n) : n_(n) {}
  using MapDataset::get;
  int64_t size() const override { return n_; }
  Example get(int64_t i) const override {
    check_index("Mixed::get", i, n_);
    Example e;
    e.set("x", (arange(0.0, 6.0).reshape({2, 3}) * static_cast<double>(i + 1)).to(DType::Float32).transpose(0, 1));
    e.set("id", i);
    e.set("w", 0.5 * static_cast<double>(i));
    e.set("bytes", full({4}, static_cast<double>(i % 256)).to(DType::UInt8));
    e.set("none", empty({0}, DType::Float32));
    return e;
  }

 private:
  int64_t n_;
};

// Field by field, dtype, shape and bytes (as float64) of a CUDA batch against a CPU one.
void expect_same_batch(const Example& gpu, const Example& cpu) {
  ASSERT_EQ(gpu.names(), cpu.names());
  for (size_t f = 0; f < cpu.size(); ++f) {
    const Tensor& g = gpu.at(f);
    const Tensor& c = cpu.at(f);
    SCOPED_TRACE(cpu.fields()[f].first);
    EXPECT_TRUE(g.is_cuda());
    EXPECT_EQ(g.dtype(), c.dtype());
    EXPECT_EQ(g.shape(), c.shape());
    EXPECT_EQ(g.to(DType::Float64).to_vector<double>(), c.to(DType::Float64).to_vector<double>());
  }
}

// Keeps the current stream busy for much longer than a loader needs to hand out a batch:
// about a second in the simulator, and 8 GiB of writes (milliseconds) on a GPU.
Tensor queue_busy_work() {
  const bool simulated = cudasimSetDeviceMemoryLimit != nullptr;
  Tensor busy = empty({simulated ? int64_t{1} << 20 : int64_t{1} << 28}, Options(DType::Float32, Device::cuda(0)));
  for (int i = 0; i < (simulated ? 40 : 8); ++i) busy.fill_(static_cast<double>(i));
  return busy;
}

TEST(CudaDelivery, LoaderBatchesOnTheDeviceEqualTheCpuOnes) {
  WICK_REQUIRE_CUDA();
  auto data = std::make_shared<Mixed>(23);
  for (int64_t workers : {0, 3}) {
    SCOPED_TRACE(workers);
    DataLoaderOptions o;
    o.batch_size = 5;
    o.shuffle = true;
    o.seed = 7;
    o.num_workers = workers;
    DataLoader cpu(data, o);
    o.device = Device::cuda(0);
    DataLoader gpu(data, o);
    for (int64_t epoch : {0, 1}) {
      cpu.start_epoch(epoch);
      gpu.start_epoch(epoch);
      while (std::optional<Example> c = cpu.next()) {
        std::optional<Example> g = gpu.next();
        ASSERT_TRUE(g);
        expect_same_batch(*g, *c);
      }
      EXPECT_FALSE(gpu.next());
    }
    // Exact resume mid-epoch on the device too.
    cpu.resume({1, 2});
    gpu.resume({1, 2});
    expect_same_batch(*gpu.next(), *cpu.next());
  }
}

TEST(CudaDelivery, IterableBatchesOnTheDeviceEqualTheCpuOnes) {
  WICK_REQUIRE_CUDA();
  auto data = std::make_shared<TokenStream>(arange(int64_t{0}, int64_t{200}), 6, 11);
  DataLoaderOptions o;
  o.batch_size = 3;
  o.num_workers = 2;
  o.seed = 3;
  DataLoader cpu(data, o);
  o.device = Device::cuda(0);
  DataLoader gpu(data, o);
  int64_t batches = 0;
  while (std::optional<Example> c = cpu.next()) {
    std::optional<Example> g = gpu.next();
    ASSERT_TRUE(g);
    expect_same_batch(*g, *c);
    ++batches;
  }
  EXPECT_FALSE(gpu.next());
  EXPECT_GT(batches, 2);
  // Skipping (resume) re-reads batches that were already on their way to the device.
  cpu.resume({0, 2});
  gpu.resume({0, 2});
  expect_same_batch(*gpu.next(), *cpu.next());
}

// With Tensor::to(device) on next()'s thread (what the loader did before), next() returned
// only after the copy, which the device runs after the work already queued: here, after all
// of queue_busy_work(). The delivery leaves the waiting to the device.
TEST(CudaDelivery, NextReturnsWhileTheDeviceIsStillBusy) {
  WICK_REQUIRE_CUDA();
  for (int64_t workers : {0, 2}) {
    SCOPED_TRACE(workers);
    DataLoaderOptions o;
    o.batch_size = 4;
    o.num_workers = workers;
    o.device = Device::cuda(0);
    DataLoader loader(std::make_shared<Mixed>(12), o);
    loader.start_epoch(0);
    cuda::synchronize(0);
    Tensor busy = queue_busy_work();
    std::optional<Example> b = loader.next();
    ASSERT_TRUE(b);
    EXPECT_FALSE(cuda::current_stream(0).query()) << "next() waited for the device's queued work";
    // Reading the batch orders after its copy (the current stream waits for it).
    EXPECT_EQ(b->at("id").to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  }
}

// A batch taken while another stream is current is ready on that stream, and its memory is
// not handed out again before that stream's work on it has run.
TEST(CudaDelivery, BatchTakenOnAnotherStreamIsReadyThere) {
  WICK_REQUIRE_CUDA();
  DataLoaderOptions o;
  o.batch_size = 6;
  o.num_workers = 2;
  o.device = Device::cuda(0);
  DataLoader loader(std::make_shared<Mixed>(12), o);
  loader.start_epoch(0);
  cuda::Stream side = cuda::Stream::create(0);
  std::vector<float> seen;
  {
    cuda::StreamGuard on_side(side);
    Tensor busy = queue_busy_work();
    std::optional<Example> b = loader.next();
    ASSERT_TRUE(b);
    Tensor doubled = b->at("x") * 2.0;
    seen = doubled.to_vector<float>();
  }
  std::vector<float> expected;
  for (int64_t i = 0; i < 6; ++i) {
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 2; ++c) expected.push_back(2.0f * static_cast<float>((c * 3 + r) * (i + 1)));
    }
  }
  EXPECT_EQ(seen, expected);
}

// Stopping with batches prefetched onto the device (workers ahead, copies queued behind busy
// work) waits for their copies before their memory is reused, and does not hang.
TEST(CudaDelivery, StoppingWithBatchesInFlightIsClean) {
  WICK_REQUIRE_CUDA();
  DataLoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 3;
  o.prefetch = 4;
  o.device = Device::cuda(0);
  auto data = std::make_shared<Mixed>(40);
  {
    DataLoader loader(data, o);
    Tensor busy = queue_busy_work();
    ASSERT_TRUE(loader.next());
    loader.start_epoch(1);  // restarts with the first epoch's batches still in flight
    ASSERT_TRUE(loader.next());
    busy = queue_busy_work();
  }  // destroyed with more in flight
  Tensor after = full({1000}, 2.0, Options(DType::Float32, Device::cuda(0)));
  EXPECT_EQ(after.sum().item<double>(), 2000.0);
}

// The page-locked pool: buffers are reused once their copy is done, so a long run allocates
// a handful, not one per batch; a field larger than any pooled buffer gets a new one.
TEST(CudaDelivery, PageLockedBuffersAreReused) {
  WICK_REQUIRE_CUDA();
  CudaDeliverer deliverer(Device::cuda(0));
  Tensor a = arange(0.0, 64.0).to(DType::Float32);
  Tensor b = arange(int64_t{0}, int64_t{10});
  for (int i = 0; i < 50; ++i) {
    CudaDelivery d = deliverer.send({a, b});
    deliverer.receive(d);
    EXPECT_EQ(d.tensors[0].to_vector<float>(), a.to_vector<float>());
    EXPECT_EQ(d.tensors[1].to_vector<int64_t>(), b.to_vector<int64_t>());
  }
  EXPECT_LE(deliverer.buffers_allocated(), 4);
  const int64_t before = deliverer.buffers_allocated();
  CudaDelivery big = deliverer.send({arange(0.0, 4096.0)});
  deliverer.receive(big);
  EXPECT_EQ(deliverer.buffers_allocated(), before + 1);
  EXPECT_EQ(big.tensors[0].sum().item<double>(), 4095.0 * 4096.0 / 2.0);
  // A strided tensor is gathered into its buffer.
  Tensor t = a.reshape({8, 8}).transpose(0, 1);
  CudaDelivery strided = deliverer.send({t});
  deliverer.receive(strided);
  EXPECT_EQ(strided.tensors[0].to_vector<float>(), t.contiguous().to_vector<float>());
  test::expect_error([&] { deliverer.send({a.to(Device::cuda(0))}); }, {"CudaDeliverer", "CPU"});
  test::expect_error([] { CudaDeliverer bad(Device::cpu()); }, {"CudaDeliverer", "CUDA device"});
}

}  // namespace
}  // namespace wick
