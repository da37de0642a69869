#pragma once
// The batches the float32-vs-float64 training tests share (thread_count_training_test.cpp,
// adamw_float32_test.cpp): 128 images in [0, 1] and their labels each, Fashion-MNIST's
// first images where the data set is installed, else a fixed random task of the same shapes.
#include <string>
#include <vector>

#include <wick/data/idx.h>

#include "tests/support/reference.h"

namespace wick::test {

struct Batches {
  std::vector<Tensor> x;
  std::vector<Tensor> y;
  bool fashion_mnist = true;  // every batch is Fashion-MNIST's
};

inline Batches make_batches(int count) {
  Batches b;
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  Dataset data;
  try {
    data = load_mnist(dir, true);
  } catch (const Error&) {
  }
  for (int i = 0; i < count; ++i) {
    if (data.size() >= 128 * (i + 1)) {
      b.x.push_back(div(data.inputs.narrow(0, 128 * i, 128).reshape({128, 784}).to(DType::Float32), Scalar(255.0)));
      b.y.push_back(data.targets.narrow(0, 128 * i, 128).contiguous());
    } else {
      b.fashion_mnist = false;
      b.x.push_back(random({128, 784}, DType::Float32, 100 + i, 0, 1));
      b.y.push_back(argmax(b.x.back().narrow(1, 0, 10), 1));
    }
  }
  return b;
}

}  // namespace wick::test
