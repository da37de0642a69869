#pragma once
// The small task the training tests share (the loop tests; the distributed tests train it
// in several processes and in one as the reference): four Gaussian blobs in 8 dimensions
// and an MLP, both fixed by their seeds.
#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <wick/autograd/ops.h>
#include <wick/data/dataset.h>
#include <wick/nn/activation.h>
#include <wick/nn/containers.h>
#include <wick/nn/linear.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>
#include <wick/train/loop.h>

namespace wick::test {

inline std::shared_ptr<Dataset> training_blobs(int64_t n, uint64_t seed = 1) {
  Generator g(seed);
  Tensor labels = randint(0, 4, {n}, DType::Int64, &g);
  Tensor centres = mul(randn({4, 8}, {}, &g), 3.0);
  std::vector<int64_t> l = labels.to_vector<int64_t>();
  Tensor x = randn({n, 8}, {}, &g);
  for (int64_t i = 0; i < n; ++i) x.select(0, i).add_(centres.select(0, l[i]));
  return std::make_shared<Dataset>(x, labels);
}

inline std::shared_ptr<Sequential> training_mlp(uint64_t seed = 2) {
  Generator g(seed);
  auto net = std::make_shared<Sequential>();
  net->push_back(std::make_shared<Linear>(8, 16, true, Options{}, &g));
  net->push_back(std::make_shared<ReLU>());
  net->push_back(std::make_shared<Linear>(16, 4, true, Options{}, &g));
  return net;
}

// Every parameter's values in registration order, as float64 (to compare two runs).
inline std::vector<double> flat_parameters(const Module& m) {
  std::vector<double> out;
  for (const auto& p : m.parameters()) {
    auto v = p.data().cpu().to(DType::Float64).contiguous().to_vector<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// A path in gtest's temporary folder, unique to this process: `prefix` names the suite.
inline std::string temp_path(const std::string& prefix, const std::string& name) {
  return ::testing::TempDir() + "/wick_" + prefix + "_" + std::to_string(::getpid()) + "_" + name;
}

// Loop options for tests: `epochs` epochs, no log lines, no progress bar.
inline LoopOptions quiet_loop(int64_t epochs) {
  LoopOptions o;
  o.max_epochs = epochs;
  o.log_epochs = false;
  o.trainer.progress = Progress::Style::Off;
  return o;
}

}  // namespace wick::test
