// cuda::Graph on the CUDA simulator: a captured op replays with the inputs' contents at
// launch time, what the capture allocates stays the graph's, eager memory freed during a
// capture is not handed out again while the graph lives, and a wait for the device inside
// the capture is a wick::Error naming the op that waited. Built only with -DWICK_CUDA=SIM.
#include <cudasim/cudasim.h>

#include <cstring>
#include <string>
#include <thread>

#include <wick/tensor/cuda.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

TEST(CudaGraph, AReplayReadsTheInputsAsTheyAreAtLaunch) {
  WICK_REQUIRE_CUDA();
  Tensor x = full({1000}, 1.0f, Device::cuda());
  Tensor y;
  cuda::Graph g;
  g.capture([&] { y = add(mul(x, 2.0f), 1.0f); });
  EXPECT_TRUE(g.captured());
  EXPECT_GE(g.num_nodes(), 2u);
  for (float v : {3.0f, -5.0f}) {
    x.fill_(v);
    g.replay();
    const Tensor host = y.cpu();  // waits for the replay
    for (int64_t i = 0; i < host.numel(); ++i) ASSERT_EQ(host.data<float>()[i], 2 * v + 1) << i;
  }
}

TEST(CudaGraph, CapturedMemoryStaysTheGraphsAndFreedEagerMemoryWaitsForIt) {
  WICK_REQUIRE_CUDA();
  Tensor x = full({4096}, 2.0f, Device::cuda());
  void* const x_address = x.data_ptr();
  void* temp_address = nullptr;
  Tensor y;
  auto g = std::make_unique<cuda::Graph>();
  g->capture([&] {
    Tensor temp = mul(x, 3.0f);
    temp_address = temp.data_ptr();
    y = add(temp, 1.0f);
    x = Tensor();  // the last reference: freed during the capture, read by every replay
  });
  // Neither the eager block the graph reads nor the graph's freed temporary is handed out.
  std::vector<Tensor> eager;
  for (int i = 0; i < 8; ++i) {
    eager.push_back(empty({4096}, Options(DType::Float32, Device::cuda())));
    EXPECT_NE(eager.back().data_ptr(), x_address);
    EXPECT_NE(eager.back().data_ptr(), temp_address);
  }
  g->replay();
  EXPECT_EQ(y.cpu().data<float>()[17], 7.0f);
  eager.clear();
  g.reset();  // the graph goes: its held eager block is reusable again
  bool reused = false;
  for (int i = 0; i < 8 && !reused; ++i) {
    eager.push_back(empty({4096}, Options(DType::Float32, Device::cuda())));
    reused = eager.back().data_ptr() == x_address;
  }
  EXPECT_TRUE(reused) << "the eager block freed during the capture returns once the graph is gone";
}

TEST(CudaGraph, AWaitInsideTheCaptureIsAnErrorNamingTheOp) {
  WICK_REQUIRE_CUDA();
  const Tensor x = full({16}, 1.0f, Device::cuda());
  cuda::Graph g;
  try {
    g.capture([&] { (void)sum(x).item<float>(); });
    FAIL() << "item() inside a capture must throw";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cuda::Graph::capture"), std::string::npos) << m;
    EXPECT_NE(m.find("a copy to the host of a float32 [] tensor"), std::string::npos) << m;
  }
  EXPECT_FALSE(g.captured());
  EXPECT_FALSE(cuda::is_capturing());
  // A raw wait that wick does not check first: the simulator's refusal, with the call named.
  cuda::Graph g2;
  try {
    g2.capture([&] { cuda::synchronize(); });
    FAIL() << "synchronize() inside a capture must throw";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cudaDeviceSynchronize"), std::string::npos) << m;
  }
  EXPECT_EQ(sum(x).item<float>(), 16.0f) << "eager work goes on after a failed capture";
  Tensor y;
  g2.capture([&] { y = mul(x, 3.0f); });  // a graph whose capture failed captures anew
  g2.replay();
  EXPECT_EQ(y.cpu().data<float>()[0], 3.0f);
}

// A capturable AdamW whose gradients stay where they are (zero_grad without set_to_none):
// the captured step reads tables of its own, so an eager step of other tensors in between,
// which replaces the optimizer's cached tables and frees them, leaves the replays right.
TEST(CudaGraph, ACapturedAdamWStepKeepsItsOwnTables) {
  WICK_REQUIRE_CUDA();
  const Tensor g = random({3000}, DType::Float32, 5).cuda(), other = random({3000}, DType::Float32, 6).cuda();
  std::vector<Tensor> results;
  for (bool graphs : {false, true}) {
    Variable p(random({3000}, DType::Float32, 7).cuda(), true);
    AdamW opt({{"p", p}}, AdamOptions{.lr = 1e-2, .weight_decay = 0.1, .capturable = true});
    const auto step_with = [&](const Tensor& grad) {
      p.set_grad(Variable(grad));
      opt.step();
    };
    step_with(g);  // eager: tables for (p, g)
    cuda::Graph graph;
    if (graphs) graph.capture([&] { step_with(g); });
    for (int i = 0; i < 3; ++i) {
      step_with(other);  // eager, other tensors: the cached tables are replaced
      // Memory handed out again gets other bytes.
      std::vector<Tensor> scratch;
      for (int k = 0; k < 8; ++k) scratch.push_back(full({64}, -1.0f, Device::cuda()));
      if (graphs) graph.replay();
      else step_with(g);
    }
    results.push_back(p.data().cpu());
  }
  ASSERT_EQ(results[0].nbytes(), results[1].nbytes());
  EXPECT_EQ(std::memcmp(results[0].data_ptr(), results[1].data_ptr(), results[0].nbytes()), 0);
}

// The capture is thread-local: another thread (a DataLoader's, delivering batches) may wait
// for its own stream meanwhile without failing the capture.
TEST(CudaGraph, AnotherThreadMayWaitDuringTheCapture) {
  WICK_REQUIRE_CUDA();
  const Tensor x = full({64}, 1.0f, Device::cuda());
  Tensor y;
  cuda::Graph g;
  g.capture([&] {
    y = mul(x, 4.0f);
    std::thread([] {
      const cuda::Stream s = cuda::Stream::create();
      cuda::StreamGuard guard(s);
      Tensor z = full({8}, 2.0f, Device::cuda());
      EXPECT_EQ(sum(z).item<float>(), 16.0f);  // a copy to the host: waits for s
    }).join();
  });
  g.replay();
  EXPECT_EQ(y.cpu().data<float>()[5], 4.0f);
}

}  // namespace
}  // namespace wick::test
