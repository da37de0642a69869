#include <wick/nn/pool.h>

#include <wick/autograd/nn_ops.h>

namespace wick {

Variable MaxPool2d::forward(const Variable& x) {
  return max_pool2d(x, kernel_, stride_, padding_, dilation_, ceil_mode_);
}

Variable AvgPool2d::forward(const Variable& x) {
  return avg_pool2d(x, kernel_, stride_, padding_, ceil_mode_, count_include_pad_);
}

Variable AdaptiveAvgPool2d::forward(const Variable& x) { return adaptive_avg_pool2d(x, output_size_); }

}  // namespace wick
