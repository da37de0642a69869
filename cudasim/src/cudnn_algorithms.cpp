// Which cuDNN algorithms exist for a convolution in the simulated device (cudnn.cpp's header
// comment has the model): support, tensor-core kernels, workspace and estimated time.
#include <algorithm>
#include <cstdint>

#include "cudnn_model.h"

namespace cudasim::cudnn {

int algo_count(Dir d) {
  switch (d) {
    case Dir::Forward: return CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    case Dir::BackwardData: return CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    case Dir::BackwardFilter: return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  }
  return 0;
}

namespace {

// The families the three enums share, so that one table serves all directions.
enum class Family { ImplicitGemm, PrecompGemm, Gemm, Direct, Fft, FftTiling, Winograd, WinogradNonfused, Algo0, Algo3 };

Family family(Dir d, int a) {
  switch (d) {
    case Dir::Forward: {
      constexpr Family f[] = {Family::ImplicitGemm, Family::PrecompGemm, Family::Gemm,     Family::Direct,
                              Family::Fft,          Family::FftTiling,   Family::Winograd, Family::WinogradNonfused};
      return f[a];
    }
    case Dir::BackwardData: {
      constexpr Family f[] = {Family::Algo0,     Family::PrecompGemm, Family::Fft,
                              Family::FftTiling, Family::Winograd,    Family::WinogradNonfused};
      return f[a];
    }
    case Dir::BackwardFilter: {
      // BWD_FILTER_ALGO_WINOGRAD is documented as not implemented: Direct stands for "never".
      constexpr Family f[] = {Family::Algo0,  Family::PrecompGemm,      Family::Fft,      Family::Algo3,
                              Family::Direct, Family::WinogradNonfused, Family::FftTiling};
      return f[a];
    }
  }
  return Family::Direct;
}

int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

size_t align256(int64_t bytes) { return static_cast<size_t>((bytes + 255) / 256 * 256); }

// Whether the descriptors let a call run tensor-core kernels.
bool permits_tensor_cores(const Conv& g) { return g.data != CUDNN_DATA_DOUBLE && g.math != CUDNN_FMA_MATH; }

}  // namespace

bool has_tensor_core_kernel(Dir d, int a) {
  const Family f = family(d, a);
  return f == Family::PrecompGemm || f == Family::WinogradNonfused;
}

// What algorithm `a` of direction `d` does for convolution `g`: whether it is supported,
// whether it runs on tensor cores, its workspace, and its estimated time (the heuristics'
// ordering key: relative costs that make the usual winners win, not a measurement).
// `tensor_cores`: run the algorithm's tensor-core kernel if it has one.
AlgoInfo algo_info(Dir d, int a, const Conv& g, bool tensor_cores) {
  const bool f32 = g.data == CUDNN_DATA_FLOAT, f64 = g.data == CUDNN_DATA_DOUBLE;
  const bool half = g.data == CUDNN_DATA_HALF, true_half = half && g.compute == CUDNN_DATA_HALF;
  const bool unit = g.sh == 1 && g.sw == 1, undilated = g.dh == 1 && g.dw == 1;
  const bool fft_geometry = unit && undilated && g.ph < g.R && g.pw < g.S;
  const bool tc = tensor_cores && !f64;
  const int64_t es = static_cast<int64_t>(element_bytes(format_of(g.data)));
  const int64_t x_elems = g.N * g.C * g.H * g.W, w_elems = g.K * g.Cg * g.R * g.S, y_elems = g.N * g.K * g.OH * g.OW;
  const double macs = static_cast<double>(y_elems) * static_cast<double>(g.Cg * g.R * g.S);
  const double t0 = macs / 1.5e7 * (f64 ? 2.0 : 1.0);  // ms at the CUDA cores' rate
  const double launch = 0.005;
  const int64_t planes = g.N * g.C + g.K * g.Cg + g.N * g.K;

  AlgoInfo info;
  // The tensor-core kernel adds NHWC copies of the three operands: workspace and a pass over
  // them (at 1 GB/ms) besides a faster multiply.
  auto tensor_core_kernel = [&](double fma_cost, double tc_cost) {
    info.tensor_cores = tc;
    const int64_t copies = (x_elems + w_elems + y_elems) * es;
    info.time_ms =
        static_cast<float>(tc ? 2 * launch + t0 * tc_cost * (f32 ? 1.0 : 0.5) + static_cast<double>(copies) / 1e9
                              : launch + t0 * fma_cost);
    if (tc) info.workspace += static_cast<size_t>(copies);
  };
  auto fft_time = [&](int64_t fh, int64_t fw, double factor) {
    const double n = static_cast<double>(fh * fw);
    const double transforms = static_cast<double>(planes) * n * std::log2(std::max(2.0, n)) * 2.0;
    const double products = static_cast<double>(g.N * g.K * g.Cg) * static_cast<double>(fh * (fw / 2 + 1)) * 4.0;
    return static_cast<float>(0.02 + factor * (transforms + products) / 1.5e7);
  };
  switch (family(d, a)) {
    case Family::ImplicitGemm:
      info.supported = true;
      info.time_ms = static_cast<float>(launch + 1.4 * t0);
      break;
    case Family::PrecompGemm:  // forward IMPLICIT_PRECOMP_GEMM, backward ALGO_1: an index table
      info.supported = true;
      info.workspace = align256(g.Cg * g.R * g.S * 8);
      tensor_core_kernel(1.0, 0.12);
      break;
    case Family::Gemm:  // explicit im2col of one image
      info.supported = true;
      info.workspace = static_cast<size_t>(g.C * g.R * g.S * g.OH * g.OW * es);
      info.time_ms =
          static_cast<float>(launch + 1.3 * t0 + static_cast<double>(g.N * g.C * g.R * g.S * g.OH * g.OW) / 1e8);
      break;
    case Family::Direct: break;  // never implemented in cuDNN
    case Family::Fft: {
      const int64_t fh = next_pow2(g.H + 2 * g.ph), fw = next_pow2(g.W + 2 * g.pw);
      info.supported = fft_geometry && (f32 || (half && !true_half)) && g.H + 2 * g.ph <= 256 && g.W + 2 * g.pw <= 256;
      info.workspace = static_cast<size_t>(planes * fh * (fw / 2 + 1) * 8);
      info.time_ms = fft_time(fh, fw, 1.0);
      break;
    }
    case Family::FftTiling:
      info.supported = fft_geometry && (f32 || f64 || (half && !true_half)) && g.R <= 32 && g.S <= 32;
      info.workspace = static_cast<size_t>(planes * 32 * 17 * 8);
      info.time_ms = fft_time(32, 32, 1.2 * static_cast<double>(((g.H + 31) / 32) * ((g.W + 31) / 32)));
      break;
    case Family::Winograd:  // fused F(2x2, 3x3): no workspace
      info.supported = unit && undilated && g.R == 3 && g.S == 3 && (f32 || half);
      info.time_ms = static_cast<float>(launch + 0.55 * t0);
      break;
    case Family::WinogradNonfused: {
      const bool geometry = unit && undilated && ((g.R == 3 && g.S == 3) || (g.R == 5 && g.S == 5)) && !f64;
      info.supported = geometry && (f32 || tc);  // 16-bit: tensor-core kernels only
      const int64_t tile = g.R == 3 ? 36 : 64, tiles = ((g.OH + 3) / 4) * ((g.OW + 3) / 4);
      info.workspace = static_cast<size_t>((g.N * g.C * tiles + g.K * g.Cg + g.N * g.K * tiles) * tile * es);
      tensor_core_kernel(0.5, 0.15);
      break;
    }
    case Family::Algo0:  // atomics: no workspace, not deterministic
      info.supported = true;
      info.deterministic = false;
      info.time_ms = static_cast<float>(launch + (d == Dir::BackwardData ? 1.1 : 1.2) * t0);
      break;
    case Family::Algo3:  // split reduction: partial sums in the workspace, not deterministic
      info.supported = undilated;
      info.deterministic = false;
      info.workspace = align256(4 * w_elems * (f64 ? 8 : 4));
      info.time_ms = static_cast<float>(launch + 0.9 * t0);
      break;
  }
  if (!info.supported) info = AlgoInfo{};
  return info;
}

AlgoInfo kernel_for(Dir d, int a, const Conv& g) { return algo_info(d, a, g, permits_tensor_cores(g)); }

int max_count(Dir d) {
  int n = algo_count(d);
  for (int a = 0; a < algo_count(d); ++a) n += has_tensor_core_kernel(d, a);
  return n;
}

}  // namespace cudasim::cudnn
