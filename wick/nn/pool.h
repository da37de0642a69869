#pragma once
// Pooling layers (NCHW): parameter-free modules over the pooling ops of wick/autograd/nn_ops.h.
#include <optional>

#include <wick/nn/module.h>
#include <wick/tensor/conv.h>

namespace wick {

// stride defaults to the kernel size.
class MaxPool2d : public UnaryModule {
 public:
  explicit MaxPool2d(Size2 kernel, std::optional<Size2> stride = std::nullopt, Size2 padding = 0, Size2 dilation = 1,
                     bool ceil_mode = false)
      : kernel_(kernel), stride_(stride), padding_(padding), dilation_(dilation), ceil_mode_(ceil_mode) {}
  const char* type_name() const override { return "MaxPool2d"; }
  Variable forward(const Variable& x) override;

 private:
  Size2 kernel_;
  std::optional<Size2> stride_;
  Size2 padding_, dilation_;
  bool ceil_mode_;
};

class AvgPool2d : public UnaryModule {
 public:
  explicit AvgPool2d(Size2 kernel, std::optional<Size2> stride = std::nullopt, Size2 padding = 0,
                     bool ceil_mode = false, bool count_include_pad = true)
      : kernel_(kernel), stride_(stride), padding_(padding), ceil_mode_(ceil_mode),
        count_include_pad_(count_include_pad) {}
  const char* type_name() const override { return "AvgPool2d"; }
  Variable forward(const Variable& x) override;

 private:
  Size2 kernel_;
  std::optional<Size2> stride_;
  Size2 padding_;
  bool ceil_mode_, count_include_pad_;
};

class AdaptiveAvgPool2d : public UnaryModule {
 public:
  explicit AdaptiveAvgPool2d(Size2 output_size) : output_size_(output_size) {}
  const char* type_name() const override { return "AdaptiveAvgPool2d"; }
  Variable forward(const Variable& x) override;

 private:
  Size2 output_size_;
};

}  // namespace wick
