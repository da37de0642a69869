#pragma once
// The simulated cuDNN's convolution model, shared by cudnn.cpp (the API: descriptors, checks,
// launches) and the two files that hold the model's parts: cudnn_algorithms.cpp (which
// algorithms exist for a convolution, their workspace, tensor-core use and estimated time)
// and cudnn_convolution.cpp (the arithmetic every algorithm performs).
#include <cudnn.h>

#include <cstddef>
#include <cstdint>

#include "float_formats.h"

namespace cudasim::cudnn {

// The element format of a data type (descriptors accept only these four).
inline ElementFormat format_of(cudnnDataType_t t) {
  switch (t) {
    case CUDNN_DATA_DOUBLE: return ElementFormat::Float64;
    case CUDNN_DATA_FLOAT: return ElementFormat::Float32;
    case CUDNN_DATA_HALF: return ElementFormat::Half;
    default: return ElementFormat::BFloat16;
  }
}

struct Strides {
  int64_t n, c, h, w;
};

// x is N x C x H x W, the filter K x Cg x R x S (Cg = C / G input channels per group), y is
// N x K x OH x OW; for backward data x is dx and y is dy, for backward filter the filter is dw.
struct Conv {
  int64_t N, C, H, W, K, Cg, R, S, OH, OW, G;
  int64_t ph, pw, sh, sw, dh, dw;
  bool flip;  // CUDNN_CONVOLUTION: the filter is applied mirrored
  cudnnDataType_t data, compute;
  cudnnMathType_t math;
  Strides xs, ws, ys;
};

enum class Dir { Forward, BackwardData, BackwardFilter };

struct AlgoInfo {
  bool supported = false;
  bool tensor_cores = false;
  size_t workspace = 0;
  float time_ms = -1.0f;
  bool deterministic = true;
};

// The algorithms of a direction (cuDNN's ..._ALGO_COUNT).
int algo_count(Dir d);
// Algorithms plus their second (FMA) kernels: what ...AlgorithmMaxCount returns.
int max_count(Dir d);
// Whether algorithm `a` of direction `d` has a tensor-core kernel besides its FMA one.
bool has_tensor_core_kernel(Dir d, int a);
// What algorithm `a` of direction `d` does for convolution `g`; `tensor_cores`: run the
// algorithm's tensor-core kernel if it has one.
AlgoInfo algo_info(Dir d, int a, const Conv& g, bool tensor_cores);
// What a call with these descriptors runs for algorithm `a` (its math type decides).
AlgoInfo kernel_for(Dir d, int a, const Conv& g);

// The direct convolution on contiguous NCHW buffers, T = float or double: y from x and w;
// dx from w and dy (the adjoint); dw from x and dy. Each writes its output with `=`.
template <class T>
void forward(const Conv& g, const T* __restrict x, const T* __restrict w, T* __restrict y);
template <class T>
void backward_data(const Conv& g, const T* __restrict w, const T* __restrict dy, T* __restrict dx);
template <class T>
void backward_filter(const Conv& g, const T* __restrict x, const T* __restrict dy, T* __restrict dw);

}  // namespace cudasim::cudnn
