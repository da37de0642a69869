#pragma once
// Convolution layers (NCHW). Weights [out, in / groups, k...] ([in, out / groups, kh, kw]
// for the transposed form) and an optional bias [out], initialised like PyTorch
// (init::layer_default_). The arguments mean what they mean in autograd/nn_ops.h.
#include <wick/nn/module.h>
#include <wick/tensor/conv.h>
#include <wick/tensor/generator.h>

namespace wick {

struct Conv2dOptions {
  Size2 stride = 1;
  Size2 padding = 0;
  Size2 dilation = 1;
  int64_t groups = 1;
  bool bias = true;
};

class Conv2d : public UnaryModule {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel, const Conv2dOptions& conv = {},
         const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "Conv2d"; }
  Variable forward(const Variable& x) override;
  void reset_parameters(Generator* g = nullptr);

  Variable weight;  // [out, in / groups, kh, kw]
  Variable bias;    // [out] or undefined

 private:
  Conv2dOptions conv_;
};

struct Conv1dOptions {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
};

class Conv1d : public UnaryModule {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel, const Conv1dOptions& conv = {},
         const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "Conv1d"; }
  Variable forward(const Variable& x) override;
  void reset_parameters(Generator* g = nullptr);

  Variable weight;  // [out, in / groups, k]
  Variable bias;

 private:
  Conv1dOptions conv_;
};

struct ConvTranspose2dOptions {
  Size2 stride = 1;
  Size2 padding = 0;
  Size2 output_padding = 0;
  int64_t groups = 1;
  Size2 dilation = 1;
  bool bias = true;
};

class ConvTranspose2d : public UnaryModule {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, Size2 kernel, const ConvTranspose2dOptions& conv = {},
                  const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "ConvTranspose2d"; }
  Variable forward(const Variable& x) override;
  void reset_parameters(Generator* g = nullptr);

  Variable weight;  // [in, out / groups, kh, kw]
  Variable bias;

 private:
  ConvTranspose2dOptions conv_;
};

}  // namespace wick
