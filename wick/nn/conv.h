#pragma once
// Convolution layers (NCHW). Weights [out, in / groups, k...] ([in, out / groups, kh, kw]
// for the transposed form) and an optional bias [out], initialised like PyTorch
// (init::layer_default_). The arguments mean what they mean in wick/autograd/nn_ops.h.
#include <variant>

#include <wick/nn/module.h>
#include <wick/tensor/conv.h>
#include <wick/tensor/generator.h>

namespace wick {

// Padding by name (PyTorch's padding="valid" / "same", libtorch's torch::kValid / kSame).
// Valid pads nothing. Same pads each spatial dim by dilation * (kernel - 1) in all, half of
// it before and the rest after (one more after when the total is odd), so that the output
// has the input's size; it needs stride 1.
enum class PaddingKind { Valid, Same };

// What the padding is filled with (PyTorch's padding_mode "zeros", "reflect", "replicate",
// "circular"): zeros, the input reflected about its edge (without repeating it), the edge
// value repeated, or the input wrapped around. Reflect needs each pad smaller than the
// input's size in that dim, circular no larger than it.
enum class PaddingMode { Zeros, Reflect, Replicate, Circular };

// conv2d / conv1d with padding by name (the functional forms of PaddingKind; zeros padding).
// An odd Same total is padded explicitly on the right/bottom, then the convolution pads the
// rest symmetrically, as PyTorch.
Variable conv2d(const Variable& input, const Variable& weight, const Variable& bias, Size2 stride,
                PaddingKind padding, Size2 dilation = 1, int64_t groups = 1);
Variable conv1d(const Variable& input, const Variable& weight, const Variable& bias, int64_t stride,
                PaddingKind padding, int64_t dilation = 1, int64_t groups = 1);

// padding: sizes (the same on both sides of a dim) or PaddingKind::Valid / Same
// (`o.padding = 1`, `o.padding = Size2(1, 2)`, `o.padding = PaddingKind::Same`).
// padding_mode other than Zeros pads the input explicitly with pad() (wick/autograd/composites.h)
// and then convolves without padding, as PyTorch's modules do.
struct Conv2dOptions {
  Size2 stride = 1;
  std::variant<Size2, PaddingKind> padding = Size2(0);
  Size2 dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  PaddingMode padding_mode = PaddingMode::Zeros;
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

// As Conv2dOptions, for one spatial dim.
struct Conv1dOptions {
  int64_t stride = 1;
  std::variant<int64_t, PaddingKind> padding = int64_t{0};
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  PaddingMode padding_mode = PaddingMode::Zeros;
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

// Zeros padding only, given as sizes (PyTorch's transposed convolutions take no other).
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
