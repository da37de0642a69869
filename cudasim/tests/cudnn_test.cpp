// Conformance of the simulated cuDNN convolutions: forward, backward data and backward filter
// against naive double-precision references written here from the definitions, the adjoint
// identities that tie the three together, alpha/beta blending, math types, the v7 heuristics,
// workspace and algorithm checks, descriptor checks, streams, and faults found on the device.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cuDNN 9 deprecates the legacy API

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <cudasim/cudasim.h>
#include <cudnn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace {

struct Geometry {
  int N, C, H, W, K, R, S;
  int ph = 0, pw = 0, sh = 1, sw = 1, dh = 1, dw = 1, G = 1;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int OH() const { return (H + 2 * ph - ((R - 1) * dh + 1)) / sh + 1; }
  int OW() const { return (W + 2 * pw - ((S - 1) * dw + 1)) / sw + 1; }
  int Cg() const { return C / G; }
  size_t x_size() const { return static_cast<size_t>(N) * C * H * W; }
  size_t w_size() const { return static_cast<size_t>(K) * Cg() * R * S; }
  size_t y_size() const { return static_cast<size_t>(N) * K * OH() * OW(); }
};

std::ostream& operator<<(std::ostream& os, const Geometry& g) {
  return os << "x " << g.N << "x" << g.C << "x" << g.H << "x" << g.W << " w " << g.K << "x" << g.Cg() << "x" << g.R
            << "x" << g.S << " pad " << g.ph << "," << g.pw << " stride " << g.sh << "," << g.sw << " dilation " << g.dh
            << "," << g.dw << " groups " << g.G << (g.mode == CUDNN_CONVOLUTION ? " convolution" : "");
}

const Geometry kGeometries[] = {
    {2, 3, 7, 6, 4, 3, 3, 1, 1},                                   // 3x3, padded
    {2, 3, 9, 8, 2, 3, 3, 1, 0, 2, 2},                             // strided
    {1, 2, 9, 9, 3, 3, 3, 2, 2, 1, 1, 2, 2},                       // dilated
    {2, 4, 5, 6, 6, 3, 2, 1, 1, 1, 2, 1, 1, 2},                    // two groups, uneven stride
    {1, 3, 6, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3},                    // depthwise
    {1, 2, 6, 7, 2, 2, 3, 0, 1, 1, 1, 1, 1, 1, CUDNN_CONVOLUTION},  // mirrored filter
    {2, 5, 4, 4, 3, 1, 1, 0, 0, 2, 2},                             // 1x1, strided
    {1, 2, 8, 8, 2, 5, 5, 2, 2},                                   // 5x5
    {1, 2, 5, 7, 3, 3, 3, 2, 3, 3, 2, 2, 1},                       // everything at once
};

// --- references from the definitions -------------------------------------------------------

int filter_index(const Geometry& g, int k, int c, int r, int s) {
  if (g.mode == CUDNN_CONVOLUTION) r = g.R - 1 - r, s = g.S - 1 - s;
  return ((k * g.Cg() + c) * g.R + r) * g.S + s;
}

// y(n, k, oh, ow) = sum over c, r, s of x(n, group(k) * Cg + c, oh*sh - ph + r*dh, ow*sw - pw + s*dw) * w(k, c, r, s).
std::vector<double> ref_forward(const Geometry& g, const std::vector<double>& x, const std::vector<double>& w) {
  std::vector<double> y(g.y_size());
  const int Kg = g.K / g.G;
  for (int n = 0; n < g.N; ++n)
    for (int k = 0; k < g.K; ++k)
      for (int oh = 0; oh < g.OH(); ++oh)
        for (int ow = 0; ow < g.OW(); ++ow) {
          double s = 0;
          for (int c = 0; c < g.Cg(); ++c)
            for (int r = 0; r < g.R; ++r)
              for (int q = 0; q < g.S; ++q) {
                const int ih = oh * g.sh - g.ph + r * g.dh, iw = ow * g.sw - g.pw + q * g.dw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                const int ci = (k / Kg) * g.Cg() + c;
                s += x[((n * g.C + ci) * g.H + ih) * g.W + iw] * w[filter_index(g, k, c, r, q)];
              }
          y[((n * g.K + k) * g.OH() + oh) * g.OW() + ow] = s;
        }
  return y;
}

// dx(n, ci, ih, iw) = sum over the (k, r, s, oh, ow) whose forward tap reads x(n, ci, ih, iw).
std::vector<double> ref_backward_data(const Geometry& g, const std::vector<double>& w, const std::vector<double>& dy) {
  std::vector<double> dx(g.x_size());
  const int Kg = g.K / g.G;
  for (int n = 0; n < g.N; ++n)
    for (int ci = 0; ci < g.C; ++ci)
      for (int ih = 0; ih < g.H; ++ih)
        for (int iw = 0; iw < g.W; ++iw) {
          double s = 0;
          const int group = ci / g.Cg(), c = ci % g.Cg();
          for (int k = group * Kg; k < (group + 1) * Kg; ++k)
            for (int r = 0; r < g.R; ++r)
              for (int q = 0; q < g.S; ++q) {
                const int th = ih + g.ph - r * g.dh, tw = iw + g.pw - q * g.dw;
                if (th < 0 || tw < 0 || th % g.sh != 0 || tw % g.sw != 0) continue;
                const int oh = th / g.sh, ow = tw / g.sw;
                if (oh >= g.OH() || ow >= g.OW()) continue;
                s += dy[((n * g.K + k) * g.OH() + oh) * g.OW() + ow] * w[filter_index(g, k, c, r, q)];
              }
          dx[((n * g.C + ci) * g.H + ih) * g.W + iw] = s;
        }
  return dx;
}

// dw(k, c, r, s) = sum over n, oh, ow of dy(n, k, oh, ow) * x at the tap's input position.
std::vector<double> ref_backward_filter(const Geometry& g, const std::vector<double>& x, const std::vector<double>& dy) {
  std::vector<double> dw(g.w_size());
  const int Kg = g.K / g.G;
  for (int k = 0; k < g.K; ++k)
    for (int c = 0; c < g.Cg(); ++c)
      for (int r = 0; r < g.R; ++r)
        for (int q = 0; q < g.S; ++q) {
          double s = 0;
          const int ci = (k / Kg) * g.Cg() + c;
          for (int n = 0; n < g.N; ++n)
            for (int oh = 0; oh < g.OH(); ++oh)
              for (int ow = 0; ow < g.OW(); ++ow) {
                const int ih = oh * g.sh - g.ph + r * g.dh, iw = ow * g.sw - g.pw + q * g.dw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                s += dy[((n * g.K + k) * g.OH() + oh) * g.OW() + ow] * x[((n * g.C + ci) * g.H + ih) * g.W + iw];
              }
          dw[filter_index(g, k, c, r, q)] = s;
        }
  return dw;
}

// Multiples of 1/8 in [-1, 1]: float sums of their products are exact.
std::vector<double> dyadic(size_t n, int seed) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>((static_cast<int>(i) * 7919 + seed * 104729) % 17 - 8) / 8.0;
  return v;
}

std::vector<double> irrational(size_t n, int seed) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(0.7 * static_cast<double>(i) + seed) + 0.1 * std::cos(1.3 * i * seed);
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// --- device buffers and descriptors ---------------------------------------------------------

size_t element_size(cudnnDataType_t t) { return t == CUDNN_DATA_DOUBLE ? 8 : t == CUDNN_DATA_FLOAT ? 4 : 2; }

// Device memory holding `n` elements of a cuDNN data type, moved to and from doubles.
class Buffer {
 public:
  Buffer(cudnnDataType_t type, size_t n) : type_(type), n_(n) {
    EXPECT_EQ(cudaMalloc(&p_, std::max<size_t>(n, 1) * element_size(type)), cudaSuccess);
  }
  Buffer(cudnnDataType_t type, const std::vector<double>& v) : Buffer(type, v.size()) { upload(v); }
  ~Buffer() { cudaFree(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return p_; }

  void upload(const std::vector<double>& v) {
    std::vector<char> bytes(v.size() * element_size(type_));
    for (size_t i = 0; i < v.size(); ++i) {
      char* dst = bytes.data() + i * element_size(type_);
      if (type_ == CUDNN_DATA_DOUBLE) {
        const double d = v[i];
        std::memcpy(dst, &d, 8);
      } else if (type_ == CUDNN_DATA_FLOAT) {
        const float f = static_cast<float>(v[i]);
        std::memcpy(dst, &f, 4);
      } else if (type_ == CUDNN_DATA_HALF) {
        const __half h = __float2half(static_cast<float>(v[i]));
        std::memcpy(dst, &h, 2);
      } else {
        const __nv_bfloat16 b = __float2bfloat16(static_cast<float>(v[i]));
        std::memcpy(dst, &b, 2);
      }
    }
    ASSERT_EQ(cudaMemcpy(p_, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }

  std::vector<double> download() const {
    std::vector<char> bytes(n_ * element_size(type_));
    EXPECT_EQ(cudaMemcpy(bytes.data(), p_, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<double> v(n_);
    for (size_t i = 0; i < n_; ++i) {
      const char* src = bytes.data() + i * element_size(type_);
      if (type_ == CUDNN_DATA_DOUBLE) {
        std::memcpy(&v[i], src, 8);
      } else if (type_ == CUDNN_DATA_FLOAT) {
        float f;
        std::memcpy(&f, src, 4);
        v[i] = f;
      } else if (type_ == CUDNN_DATA_HALF) {
        __half h;
        std::memcpy(&h, src, 2);
        v[i] = __half2float(h);
      } else {
        __nv_bfloat16 b;
        std::memcpy(&b, src, 2);
        v[i] = __bfloat162float(b);
      }
    }
    return v;
  }

 private:
  cudnnDataType_t type_;
  size_t n_;
  void* p_ = nullptr;
};

// What a value becomes when stored in `type` (the output rounding).
double stored(cudnnDataType_t type, double v) {
  switch (type) {
    case CUDNN_DATA_FLOAT: return static_cast<float>(v);
    case CUDNN_DATA_HALF: return __half2float(__float2half(static_cast<float>(v)));
    case CUDNN_DATA_BFLOAT16: return __bfloat162float(__float2bfloat16(static_cast<float>(v)));
    default: return v;
  }
}

class Handle {
 public:
  Handle() { EXPECT_EQ(cudnnCreate(&h_), CUDNN_STATUS_SUCCESS); }
  ~Handle() {
    if (h_) cudnnDestroy(h_);
  }
  operator cudnnHandle_t() const { return h_; }

 private:
  cudnnHandle_t h_ = nullptr;
};

// The four descriptors of a convolution, NCHW.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnDataType_t type;

  Descriptors(const Geometry& g, cudnnDataType_t t, cudnnMathType_t math, cudnnDataType_t compute) : type(t) {
    EXPECT_EQ(cudnnCreateTensorDescriptor(&x), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnCreateTensorDescriptor(&y), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnCreateFilterDescriptor(&w), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnCreateConvolutionDescriptor(&conv), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, t, g.N, g.C, g.H, g.W), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, t, g.N, g.K, g.OH(), g.OW()), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnSetFilter4dDescriptor(w, t, CUDNN_TENSOR_NCHW, g.K, g.Cg(), g.R, g.S), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnSetConvolution2dDescriptor(conv, g.ph, g.pw, g.sh, g.sw, g.dh, g.dw, g.mode, compute),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnSetConvolutionGroupCount(conv, g.G), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnSetConvolutionMathType(conv, math), CUDNN_STATUS_SUCCESS);
  }
  Descriptors(const Geometry& g, cudnnDataType_t t, cudnnMathType_t math = CUDNN_FMA_MATH)
      : Descriptors(g, t, math, t == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT) {}
  ~Descriptors() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

// alpha and beta in the type cuDNN reads for the data type: double for DOUBLE, else float.
struct Scalars {
  double d[2];
  float f[2];
  bool dbl;
  Scalars(cudnnDataType_t t, double alpha, double beta)
      : d{alpha, beta}, f{static_cast<float>(alpha), static_cast<float>(beta)}, dbl(t == CUDNN_DATA_DOUBLE) {}
  const void* alpha() const { return dbl ? static_cast<const void*>(&d[0]) : &f[0]; }
  const void* beta() const { return dbl ? static_cast<const void*>(&d[1]) : &f[1]; }
};

enum class Dir { Forward, BackwardData, BackwardFilter };

// The supported algorithms of a direction, in the heuristics' order, each once (an algorithm
// with a tensor-core and an FMA kernel is listed twice).
std::vector<int> supported_algos(cudnnHandle_t h, const Descriptors& d, Dir dir) {
  std::vector<int> algos;
  auto take = [&](int algo, cudnnStatus_t status) {
    if (status == CUDNN_STATUS_SUCCESS && std::find(algos.begin(), algos.end(), algo) == algos.end())
      algos.push_back(algo);
  };
  int max = 0, n = 0;
  if (dir == Dir::Forward) {
    EXPECT_EQ(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max), CUDNN_STATUS_SUCCESS);
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(max));
    EXPECT_EQ(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, max, &n, perf.data()),
              CUDNN_STATUS_SUCCESS);
    for (int i = 0; i < n; ++i) take(perf[i].algo, perf[i].status);
  } else if (dir == Dir::BackwardData) {
    EXPECT_EQ(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max), CUDNN_STATUS_SUCCESS);
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(max));
    EXPECT_EQ(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, max, &n, perf.data()),
              CUDNN_STATUS_SUCCESS);
    for (int i = 0; i < n; ++i) take(perf[i].algo, perf[i].status);
  } else {
    EXPECT_EQ(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max), CUDNN_STATUS_SUCCESS);
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<size_t>(max));
    EXPECT_EQ(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, max, &n, perf.data()),
              CUDNN_STATUS_SUCCESS);
    for (int i = 0; i < n; ++i) take(perf[i].algo, perf[i].status);
  }
  EXPECT_FALSE(algos.empty());
  return algos;
}

size_t workspace_for(cudnnHandle_t h, const Descriptors& d, Dir dir, int algo) {
  size_t bytes = 0;
  cudnnStatus_t st;
  switch (dir) {
    case Dir::Forward:
      st = cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                                   &bytes);
      break;
    case Dir::BackwardData:
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x,
                                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), &bytes);
      break;
    default:
      st = cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w,
                                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), &bytes);
  }
  EXPECT_EQ(st, CUDNN_STATUS_SUCCESS);
  return bytes;
}

// Runs one direction with `algo` and a workspace of exactly the size asked for: forward takes
// (x, w) and makes y, backward data (w, dy) makes dx, backward filter (x, dy) makes dw. `out`
// is the output's previous content (read when beta != 0).
std::vector<double> run(cudnnHandle_t h, const Descriptors& d, Dir dir, int algo, const std::vector<double>& in0,
                        const std::vector<double>& in1, const std::vector<double>& out, double alpha = 1,
                        double beta = 0) {
  const size_t bytes = workspace_for(h, d, dir, algo);
  void* ws = nullptr;
  if (bytes) {
    EXPECT_EQ(cudaMalloc(&ws, bytes), cudaSuccess);
  }
  Buffer a(d.type, in0), b(d.type, in1), o(d.type, out);
  const Scalars s(d.type, alpha, beta);
  cudnnStatus_t st;
  switch (dir) {
    case Dir::Forward:
      st = cudnnConvolutionForward(h, s.alpha(), d.x, a.get(), d.w, b.get(), d.conv,
                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws, bytes, s.beta(), d.y, o.get());
      break;
    case Dir::BackwardData:
      st = cudnnConvolutionBackwardData(h, s.alpha(), d.w, a.get(), d.y, b.get(), d.conv,
                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws, bytes, s.beta(), d.x,
                                        o.get());
      break;
    default:
      st = cudnnConvolutionBackwardFilter(h, s.alpha(), d.x, a.get(), d.y, b.get(), d.conv,
                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws, bytes, s.beta(),
                                          d.w, o.get());
  }
  EXPECT_EQ(st, CUDNN_STATUS_SUCCESS) << "algo " << algo;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<double> result = o.download();
  cudaFree(ws);
  return result;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "element " << i;
}

// --- results --------------------------------------------------------------------------------

TEST(CudnnConvolution, EveryDirectionAndAlgorithmMatchesTheReference) {
  Handle h;
  for (const Geometry& g : kGeometries)
    for (cudnnDataType_t t : {CUDNN_DATA_DOUBLE, CUDNN_DATA_FLOAT}) {
      SCOPED_TRACE(testing::Message() << g << (t == CUDNN_DATA_DOUBLE ? " double" : " float"));
      Descriptors d(g, t);
      const std::vector<double> x = dyadic(g.x_size(), 1), w = dyadic(g.w_size(), 2), dy = dyadic(g.y_size(), 3);
      const std::vector<double> y = ref_forward(g, x, w), dx = ref_backward_data(g, w, dy),
                                dw = ref_backward_filter(g, x, dy);
      // Dyadic inputs make every result exact in float as in double.
      for (int algo : supported_algos(h, d, Dir::Forward))
        EXPECT_EQ(run(h, d, Dir::Forward, algo, x, w, std::vector<double>(y.size())), y) << "forward algo " << algo;
      for (int algo : supported_algos(h, d, Dir::BackwardData))
        EXPECT_EQ(run(h, d, Dir::BackwardData, algo, w, dy, std::vector<double>(dx.size())), dx)
            << "backward data algo " << algo;
      for (int algo : supported_algos(h, d, Dir::BackwardFilter))
        EXPECT_EQ(run(h, d, Dir::BackwardFilter, algo, x, dy, std::vector<double>(dw.size())), dw)
            << "backward filter algo " << algo;
    }
}

TEST(CudnnConvolution, BackwardPassesAreTheAdjointsOfTheForward) {
  // <conv(x, w), g> = <x, backward_data(g, w)> = <w, backward_filter(x, g)>.
  Handle h;
  for (const Geometry& g : kGeometries) {
    SCOPED_TRACE(testing::Message() << g);
    Descriptors d(g, CUDNN_DATA_DOUBLE);
    const std::vector<double> x = irrational(g.x_size(), 1), w = irrational(g.w_size(), 2),
                              dy = irrational(g.y_size(), 3);
    const std::vector<double> y = run(h, d, Dir::Forward, supported_algos(h, d, Dir::Forward)[0], x, w,
                                      std::vector<double>(g.y_size()));
    const std::vector<double> dx = run(h, d, Dir::BackwardData, supported_algos(h, d, Dir::BackwardData)[0], w, dy,
                                       std::vector<double>(g.x_size()));
    const std::vector<double> dw = run(h, d, Dir::BackwardFilter, supported_algos(h, d, Dir::BackwardFilter)[0], x, dy,
                                       std::vector<double>(g.w_size()));
    const double forward = dot(y, dy);
    const double scale = 1e-12 * (1 + std::fabs(forward));
    EXPECT_NEAR(dot(x, dx), forward, scale);
    EXPECT_NEAR(dot(w, dw), forward, scale);
  }
}

TEST(CudnnConvolution, SmallCaseComputedByHand) {
  Handle h;
  const Geometry g{1, 1, 3, 3, 1, 2, 2};
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 2, 3, 4}, ones = {1, 1, 1, 1};
  {
    Descriptors d(g, CUDNN_DATA_FLOAT);
    EXPECT_EQ(run(h, d, Dir::Forward, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, x, w, {0, 0, 0, 0}),
              (std::vector<double>{37, 47, 67, 77}));
    EXPECT_EQ(run(h, d, Dir::BackwardData, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, w, ones, std::vector<double>(9)),
              (std::vector<double>{1, 3, 2, 4, 10, 6, 3, 7, 4}));
    EXPECT_EQ(run(h, d, Dir::BackwardFilter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, x, ones, {0, 0, 0, 0}),
              (std::vector<double>{12, 16, 24, 28}));
  }
  Geometry mirrored = g;
  mirrored.mode = CUDNN_CONVOLUTION;  // the filter is applied as {4, 3, 2, 1}
  Descriptors d(mirrored, CUDNN_DATA_FLOAT);
  EXPECT_EQ(run(h, d, Dir::Forward, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, x, w, {0, 0, 0, 0}),
            (std::vector<double>{23, 33, 53, 63}));
  EXPECT_EQ(run(h, d, Dir::BackwardFilter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, x, ones, {0, 0, 0, 0}),
            (std::vector<double>{28, 24, 16, 12}));
}

TEST(CudnnConvolution, AlphaAndBetaBlendIntoTheOutput) {
  Handle h;
  const Geometry g = kGeometries[3];
  Descriptors d(g, CUDNN_DATA_DOUBLE);
  const std::vector<double> x = dyadic(g.x_size(), 4), w = dyadic(g.w_size(), 5), dy = dyadic(g.y_size(), 6);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto blend = [](std::vector<double> r, const std::vector<double>& old, double a, double b) {
    for (size_t i = 0; i < r.size(); ++i) r[i] = a * r[i] + b * old[i];
    return r;
  };
  // beta == 0: the output is not read, NaN there does not matter.
  EXPECT_EQ(run(h, d, Dir::Forward, 0, x, w, std::vector<double>(g.y_size(), nan), 1, 0), ref_forward(g, x, w));
  EXPECT_EQ(run(h, d, Dir::BackwardData, 0, w, dy, std::vector<double>(g.x_size(), nan), 1, 0),
            ref_backward_data(g, w, dy));
  EXPECT_EQ(run(h, d, Dir::BackwardFilter, 0, x, dy, std::vector<double>(g.w_size(), nan), 1, 0),
            ref_backward_filter(g, x, dy));
  // beta == 1 accumulates; other values scale.
  const std::vector<double> y0 = dyadic(g.y_size(), 7), dx0 = dyadic(g.x_size(), 8), dw0 = dyadic(g.w_size(), 9);
  EXPECT_EQ(run(h, d, Dir::Forward, 1, x, w, y0, 2, 1), blend(ref_forward(g, x, w), y0, 2, 1));
  EXPECT_EQ(run(h, d, Dir::BackwardData, 1, w, dy, dx0, 0.5, 1), blend(ref_backward_data(g, w, dy), dx0, 0.5, 1));
  EXPECT_EQ(run(h, d, Dir::BackwardFilter, 1, x, dy, dw0, 1, -2), blend(ref_backward_filter(g, x, dy), dw0, 1, -2));
}

TEST(CudnnConvolution, StridedTensorsAndNhwcFilters) {
  Handle h;
  const Geometry g{2, 3, 5, 4, 2, 3, 2, 1, 0};
  const std::vector<double> x = dyadic(g.x_size(), 10), w = dyadic(g.w_size(), 11);
  const std::vector<double> want = ref_forward(g, x, w);
  // x stored NHWC through explicit strides; y with a gap after every row; w as KRSC.
  const int OH = g.OH(), OW = g.OW(), yrow = OW + 2;
  std::vector<double> x_nhwc(g.x_size()), w_krsc(g.w_size());
  for (int n = 0; n < g.N; ++n)
    for (int c = 0; c < g.C; ++c)
      for (int i = 0; i < g.H; ++i)
        for (int j = 0; j < g.W; ++j)
          x_nhwc[((n * g.H + i) * g.W + j) * g.C + c] = x[((n * g.C + c) * g.H + i) * g.W + j];
  for (int k = 0; k < g.K; ++k)
    for (int c = 0; c < g.C; ++c)
      for (int r = 0; r < g.R; ++r)
        for (int s = 0; s < g.S; ++s) w_krsc[((k * g.R + r) * g.S + s) * g.C + c] = w[((k * g.C + c) * g.R + r) * g.S + s];
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  ASSERT_EQ(cudnnCreateTensorDescriptor(&xd), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnCreateTensorDescriptor(&yd), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnCreateFilterDescriptor(&wd), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnCreateConvolutionDescriptor(&cd), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, g.N, g.C, g.H, g.W),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensor4dDescriptorEx(yd, CUDNN_DATA_FLOAT, g.N, g.K, OH, OW, g.K * OH * yrow, OH * yrow, yrow, 1),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, g.K, g.C, g.R, g.S),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetConvolution2dDescriptor(cd, g.ph, g.pw, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  const size_t y_len = static_cast<size_t>(g.N) * g.K * OH * yrow;
  Buffer bx(CUDNN_DATA_FLOAT, x_nhwc), bw(CUDNN_DATA_FLOAT, w_krsc), by(CUDNN_DATA_FLOAT, std::vector<double>(y_len, -5));
  const float one = 1, zero = 0;
  ASSERT_EQ(cudnnConvolutionForward(h, &one, xd, bx.get(), wd, bw.get(), cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                    nullptr, 0, &zero, yd, by.get()),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<double> got = by.download();
  for (int n = 0; n < g.N; ++n)
    for (int k = 0; k < g.K; ++k)
      for (int i = 0; i < OH; ++i)
        for (int j = 0; j < yrow; ++j) {
          const double v = got[((n * g.K + k) * OH + i) * yrow + j];
          EXPECT_EQ(v, j < OW ? want[((n * g.K + k) * OH + i) * OW + j] : -5.0);  // the gaps are untouched
        }
  cudnnDestroyConvolutionDescriptor(cd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyTensorDescriptor(xd);
}

TEST(CudnnConvolution, HalfAndBfloat16Data) {
  Handle h;
  const Geometry g = kGeometries[0];
  const std::vector<double> x = dyadic(g.x_size(), 12), w = dyadic(g.w_size(), 13);
  const std::vector<double> ref = ref_forward(g, x, w);
  struct Config {
    cudnnDataType_t data, compute;
  };
  for (Config c : {Config{CUDNN_DATA_HALF, CUDNN_DATA_FLOAT}, Config{CUDNN_DATA_HALF, CUDNN_DATA_HALF},
                   Config{CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT}}) {
    SCOPED_TRACE(testing::Message() << "data " << c.data << " compute " << c.compute);
    Descriptors d(g, c.data, CUDNN_TENSOR_OP_MATH, c.compute);
    std::vector<double> want(ref.size());
    for (size_t i = 0; i < ref.size(); ++i) want[i] = stored(c.data, ref[i]);  // one rounding, at the store
    for (int algo : supported_algos(h, d, Dir::Forward)) {
      const std::vector<double> got = run(h, d, Dir::Forward, algo, x, w, std::vector<double>(ref.size()));
      if (c.compute == CUDNN_DATA_FLOAT) {
        EXPECT_EQ(got, want) << "algo " << algo;  // float sums of dyadic products are exact
      } else {
        // TRUE_HALF: cuDNN may round every partial sum to half (27 sums below 32 here).
        expect_near_all(got, want, 0.5 / 32);
      }
    }
  }
  Descriptors bad(g, CUDNN_DATA_BFLOAT16, CUDNN_TENSOR_OP_MATH, CUDNN_DATA_HALF);
  size_t bytes;
  EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(h, bad.x, bad.w, bad.conv, bad.y,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &bytes),
            CUDNN_STATUS_NOT_SUPPORTED);
}

// --- math types -----------------------------------------------------------------------------

// A 1x1 convolution of one input with more than 10 mantissa bits by a filter of 1.
double one_product(cudnnHandle_t h, cudnnDataType_t type, cudnnMathType_t math, Dir dir, int algo) {
  const Geometry g{1, 1, 1, 1, 1, 1, 1};
  Descriptors d(g, type, math);
  const double x = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -12);
  return run(h, d, dir, algo, {x}, {1.0}, {0.0})[0];
}

TEST(CudnnConvolution, TensorCoreKernelsRoundFloatInputsToTf32) {
  Handle h;
  const double exact = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -12), tf32 = 1.0 + std::ldexp(1.0, -10);
  const int precomp = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, implicit = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  EXPECT_EQ(one_product(h, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH, Dir::Forward, precomp), tf32);
  EXPECT_EQ(one_product(h, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, Dir::Forward, precomp), tf32);
  EXPECT_EQ(one_product(h, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, Dir::Forward, precomp), tf32);  // TF32 permitted
  EXPECT_EQ(one_product(h, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, Dir::Forward, precomp), exact);
  EXPECT_EQ(one_product(h, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH, Dir::Forward, implicit), exact);  // no TC kernel
  EXPECT_EQ(one_product(h, CUDNN_DATA_DOUBLE, CUDNN_TENSOR_OP_MATH, Dir::Forward, precomp), exact);
  // Backward: data (x holds w, the filter dy) and filter.
  EXPECT_EQ(one_product(h, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, Dir::BackwardData, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1),
            tf32);
  EXPECT_EQ(one_product(h, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, Dir::BackwardData, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0),
            exact);
  EXPECT_EQ(
      one_product(h, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH, Dir::BackwardFilter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1),
      tf32);
  EXPECT_EQ(one_product(h, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, Dir::BackwardFilter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1),
            exact);
}

TEST(CudnnConvolution, MathTypeSettersAndCompatibility) {
  Handle h;
  const Geometry g = kGeometries[0];
  Descriptors d(g, CUDNN_DATA_HALF, CUDNN_FMA_MATH, CUDNN_DATA_FLOAT);
  cudnnMathType_t math;
  ASSERT_EQ(cudnnGetConvolutionMathType(d.conv, &math), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(math, CUDNN_FMA_MATH);
  EXPECT_EQ(cudnnSetConvolutionMathType(d.conv, static_cast<cudnnMathType_t>(9)), CUDNN_STATUS_BAD_PARAM);
  // WINOGRAD_NONFUSED on 16-bit data exists only on tensor cores: FMA math cannot run it.
  const auto algo = CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
  size_t bytes = 0;
  EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, algo, &bytes), CUDNN_STATUS_NOT_SUPPORTED);
  Buffer x(CUDNN_DATA_HALF, g.x_size()), w(CUDNN_DATA_HALF, g.w_size()), y(CUDNN_DATA_HALF, g.y_size());
  Buffer ws(CUDNN_DATA_FLOAT, 1 << 20);
  const float one = 1, zero = 0;
  EXPECT_EQ(cudnnConvolutionForward(h, &one, d.x, x.get(), d.w, w.get(), d.conv, algo, ws.get(), 4 << 20, &zero, d.y,
                                    y.get()),
            CUDNN_STATUS_NOT_SUPPORTED);
  ASSERT_EQ(cudnnSetConvolutionMathType(d.conv, CUDNN_TENSOR_OP_MATH), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, algo, &bytes), CUDNN_STATUS_SUCCESS);
  ASSERT_LE(bytes, size_t{4} << 20);
  EXPECT_EQ(cudnnConvolutionForward(h, &one, d.x, x.get(), d.w, w.get(), d.conv, algo, ws.get(), bytes, &zero, d.y,
                                    y.get()),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// --- heuristics -----------------------------------------------------------------------------

std::vector<cudnnConvolutionFwdAlgoPerf_t> forward_perf(cudnnHandle_t h, const Descriptors& d) {
  int max = 0, n = 0;
  EXPECT_EQ(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max), CUDNN_STATUS_SUCCESS);
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(max));
  EXPECT_EQ(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, max, &n, perf.data()),
            CUDNN_STATUS_SUCCESS);
  perf.resize(static_cast<size_t>(n));
  return perf;
}

cudnnStatus_t status_of(const std::vector<cudnnConvolutionFwdAlgoPerf_t>& perf, cudnnConvolutionFwdAlgo_t algo) {
  cudnnStatus_t status = CUDNN_STATUS_INTERNAL_ERROR;
  for (const auto& p : perf)
    if (p.algo == algo && status != CUDNN_STATUS_SUCCESS) status = p.status;
  EXPECT_NE(status, CUDNN_STATUS_INTERNAL_ERROR) << "algo " << algo << " missing";
  return status;
}

TEST(CudnnHeuristics, ForwardListIsCompleteOrderedAndHonest) {
  Handle h;
  for (const Geometry& g : kGeometries)
    for (cudnnMathType_t math : {CUDNN_DEFAULT_MATH, CUDNN_FMA_MATH}) {
      SCOPED_TRACE(testing::Message() << g << " math " << math);
      Descriptors d(g, CUDNN_DATA_FLOAT, math);
      const auto perf = forward_perf(h, d);
      std::set<std::pair<int, int>> seen;
      std::set<int> algos;
      bool unsupported_seen = false;
      float last_time = 0;
      for (const auto& p : perf) {
        EXPECT_TRUE(seen.insert({p.algo, p.mathType}).second) << "algo " << p.algo << " math " << p.mathType << " twice";
        algos.insert(p.algo);
        // The documented way to run an entry: the descriptor's math type set to the entry's.
        ASSERT_EQ(cudnnSetConvolutionMathType(d.conv, p.status == CUDNN_STATUS_SUCCESS ? p.mathType : math),
                  CUDNN_STATUS_SUCCESS);
        size_t bytes = 0;
        const cudnnStatus_t ws = cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, p.algo, &bytes);
        ASSERT_EQ(cudnnSetConvolutionMathType(d.conv, math), CUDNN_STATUS_SUCCESS);
        if (p.status == CUDNN_STATUS_SUCCESS) {
          EXPECT_FALSE(unsupported_seen) << "supported algo " << p.algo << " after an unsupported one";
          EXPECT_GE(p.time, last_time);
          last_time = p.time;
          ASSERT_EQ(ws, CUDNN_STATUS_SUCCESS);
          EXPECT_EQ(p.memory, bytes) << "algo " << p.algo;
          EXPECT_EQ(p.determinism, CUDNN_DETERMINISTIC);
          if (math == CUDNN_FMA_MATH) {
            EXPECT_EQ(p.mathType, CUDNN_FMA_MATH);
          }
        } else {
          EXPECT_EQ(p.status, CUDNN_STATUS_NOT_SUPPORTED);
          unsupported_seen = true;
          EXPECT_EQ(ws, CUDNN_STATUS_NOT_SUPPORTED);
        }
      }
      EXPECT_EQ(algos.size(), static_cast<size_t>(CUDNN_CONVOLUTION_FWD_ALGO_COUNT));
      if (math == CUDNN_FMA_MATH) {
        EXPECT_EQ(perf.size(), static_cast<size_t>(CUDNN_CONVOLUTION_FWD_ALGO_COUNT));
      }
      const bool unit_stride = g.sh == 1 && g.sw == 1, undilated = g.dh == 1 && g.dw == 1;
      EXPECT_EQ(status_of(perf, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT), CUDNN_STATUS_NOT_SUPPORTED);
      EXPECT_EQ(status_of(perf, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM), CUDNN_STATUS_SUCCESS);
      EXPECT_EQ(status_of(perf, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD) == CUDNN_STATUS_SUCCESS,
                unit_stride && undilated && g.R == 3 && g.S == 3);
      if (!unit_stride || !undilated) {
        EXPECT_EQ(status_of(perf, CUDNN_CONVOLUTION_FWD_ALGO_FFT), CUDNN_STATUS_NOT_SUPPORTED);
        EXPECT_EQ(status_of(perf, CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING), CUDNN_STATUS_NOT_SUPPORTED);
        EXPECT_EQ(status_of(perf, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED), CUDNN_STATUS_NOT_SUPPORTED);
      }
    }
}

const cudnnConvolutionFwdAlgoPerf_t* find_entry(const std::vector<cudnnConvolutionFwdAlgoPerf_t>& perf,
                                                cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t math) {
  for (const auto& p : perf)
    if (p.algo == algo && p.mathType == math && p.status == CUDNN_STATUS_SUCCESS) return &p;
  return nullptr;
}

TEST(CudnnHeuristics, EntriesMustBeRunUnderTheirMathType) {
  Handle h;
  const Geometry g{8, 16, 16, 16, 16, 3, 3, 1, 1};  // big enough for tensor cores to pay
  Descriptors d(g, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
  const auto perf = forward_perf(h, d);
  std::set<cudnnMathType_t> maths;
  for (const auto& p : perf)
    if (p.status == CUDNN_STATUS_SUCCESS) maths.insert(p.mathType);
  EXPECT_EQ(maths, (std::set<cudnnMathType_t>{CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_FMA_MATH}));
  // The fastest kernel is a tensor-core one that needs a workspace (NHWC copies).
  ASSERT_EQ(perf[0].status, CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(perf[0].mathType, CUDNN_TENSOR_OP_MATH);
  EXPECT_GT(perf[0].memory, 0u);

  // IMPLICIT_PRECOMP_GEMM is listed with both kernels; the FMA one needs less workspace.
  const auto algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  const auto* tc = find_entry(perf, algo, CUDNN_TENSOR_OP_MATH);
  const auto* fma = find_entry(perf, algo, CUDNN_FMA_MATH);
  ASSERT_TRUE(tc && fma);
  EXPECT_LT(fma->memory, tc->memory);
  EXPECT_GT(fma->time, tc->time);

  // Running the FMA entry without setting the descriptor's math type runs the tensor-core
  // kernel, which needs more than the entry's memory: BAD_PARAM. Set as documented, it runs,
  // and exactly in float (dyadic inputs), where the tensor-core kernel rounds to TF32.
  std::vector<double> x = dyadic(g.x_size(), 16), w = dyadic(g.w_size(), 17);
  x[0] = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -12);  // not a TF32 value
  Buffer bx(CUDNN_DATA_FLOAT, x), bw(CUDNN_DATA_FLOAT, w), by(CUDNN_DATA_FLOAT, g.y_size());
  void* ws = nullptr;
  ASSERT_EQ(cudaMalloc(&ws, tc->memory), cudaSuccess);
  const float one = 1, zero = 0;
  EXPECT_EQ(cudnnConvolutionForward(h, &one, d.x, bx.get(), d.w, bw.get(), d.conv, algo, ws, fma->memory, &zero, d.y,
                                    by.get()),
            CUDNN_STATUS_BAD_PARAM);
  ASSERT_EQ(cudnnSetConvolutionMathType(d.conv, fma->mathType), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnConvolutionForward(h, &one, d.x, bx.get(), d.w, bw.get(), d.conv, algo, ws, fma->memory, &zero, d.y,
                                    by.get()),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<double> want = ref_forward(g, x, w);
  std::vector<double> got = by.download();
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << i;
  EXPECT_EQ(got[0], static_cast<double>(static_cast<float>(want[0])));
  // The tensor-core entry under its own math type: inputs rounded to TF32.
  ASSERT_EQ(cudnnSetConvolutionMathType(d.conv, tc->mathType), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnConvolutionForward(h, &one, d.x, bx.get(), d.w, bw.get(), d.conv, algo, ws, tc->memory, &zero, d.y,
                                    by.get()),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  got = by.download();
  EXPECT_NE(got[0], static_cast<double>(static_cast<float>(want[0])));
  EXPECT_NEAR(got[0], want[0], 1e-3 * (1 + std::fabs(want[0])));
  cudaFree(ws);

  // FMA descriptors and double data list no tensor-core kernels.
  Descriptors f(g, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH), dbl(g, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH);
  for (const auto& p : forward_perf(h, f)) EXPECT_EQ(p.mathType, CUDNN_FMA_MATH);
  for (const auto& p : forward_perf(h, dbl)) EXPECT_EQ(p.mathType, CUDNN_DEFAULT_MATH);
}

TEST(CudnnHeuristics, BackwardListsReportDeterminismAndUnsupportedAlgorithms) {
  Handle h;
  const Geometry g = kGeometries[1];  // strided: no FFT or Winograd
  Descriptors d(g, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
  // Room for every algorithm and the second kernel of the two with tensor-core kernels.
  int max_data = 0, max_filter = 0, n = 0;
  ASSERT_EQ(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_data), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_filter), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(max_data, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT + 2);
  EXPECT_EQ(max_filter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT + 2);
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> data(static_cast<size_t>(max_data));
  std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> filter(static_cast<size_t>(max_filter));
  ASSERT_EQ(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, max_data, &n, data.data()),
            CUDNN_STATUS_SUCCESS);
  // ALGO_1 twice (tensor-core and FMA kernels); WINOGRAD_NONFUSED once, unsupported here.
  ASSERT_EQ(n, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT + 1);
  for (int i = 0; i < n; ++i) {
    const bool general = data[i].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || data[i].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    EXPECT_EQ(data[i].status, general ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED) << data[i].algo;
    if (data[i].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0) {
      EXPECT_EQ(data[i].determinism, CUDNN_NON_DETERMINISTIC);
    }
  }
  ASSERT_EQ(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, max_filter, &n, filter.data()),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(n, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT + 1);
  for (int i = 0; i < n; ++i) {
    const auto a = filter[i].algo;
    const bool general = a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
                         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
    EXPECT_EQ(filter[i].status, general ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED) << a;
    if (general) {
      EXPECT_EQ(filter[i].determinism, a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ? CUDNN_DETERMINISTIC
                                                                                : CUDNN_NON_DETERMINISTIC);
    }
  }
  // Fewer entries when fewer are asked for; bad requests.
  ASSERT_EQ(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, 2, &n, filter.data()),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(n, 2);
  EXPECT_EQ(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, 0, &n, filter.data()),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, 2, nullptr, filter.data()),
            CUDNN_STATUS_BAD_PARAM);
  int count = 0;
  ASSERT_EQ(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(count, CUDNN_CONVOLUTION_FWD_ALGO_COUNT + 2);
}

// --- checks ---------------------------------------------------------------------------------

TEST(CudnnChecks, WorkspaceMustHoldWhatTheAlgorithmNeeds) {
  Handle h;
  const Geometry g = kGeometries[0];
  Descriptors d(g, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH);
  Buffer x(CUDNN_DATA_FLOAT, g.x_size()), w(CUDNN_DATA_FLOAT, g.w_size()), y(CUDNN_DATA_FLOAT, g.y_size());
  const float one = 1, zero = 0;
  for (int algo = 0; algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++algo) {
    size_t bytes = 0;
    const auto a = static_cast<cudnnConvolutionFwdAlgo_t>(algo);
    if (cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, a, &bytes) != CUDNN_STATUS_SUCCESS) continue;
    if (bytes == 0) continue;
    SCOPED_TRACE(testing::Message() << "algo " << algo << " needs " << bytes);
    void* ws = nullptr;
    ASSERT_EQ(cudaMalloc(&ws, bytes), cudaSuccess);
    EXPECT_EQ(cudnnConvolutionForward(h, &one, d.x, x.get(), d.w, w.get(), d.conv, a, ws, bytes - 1, &zero, d.y, y.get()),
              CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(cudnnConvolutionForward(h, &one, d.x, x.get(), d.w, w.get(), d.conv, a, nullptr, bytes, &zero, d.y,
                                      y.get()),
              CUDNN_STATUS_BAD_PARAM);
    EXPECT_EQ(cudnnConvolutionForward(h, &one, d.x, x.get(), d.w, w.get(), d.conv, a, ws, bytes, &zero, d.y, y.get()),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    cudaFree(ws);
  }
}

TEST(CudnnChecks, UnsupportedAlgorithmsAreRefused) {
  Handle h;
  const Geometry g = kGeometries[1];  // strided
  Descriptors d(g, CUDNN_DATA_FLOAT);
  Buffer x(CUDNN_DATA_FLOAT, g.x_size()), w(CUDNN_DATA_FLOAT, g.w_size()), y(CUDNN_DATA_FLOAT, g.y_size());
  Buffer ws(CUDNN_DATA_FLOAT, 1 << 22);
  const float one = 1, zero = 0;
  const size_t big = 16 << 20;
  for (auto a : {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT})
    EXPECT_EQ(cudnnConvolutionForward(h, &one, d.x, x.get(), d.w, w.get(), d.conv, a, ws.get(), big, &zero, d.y, y.get()),
              CUDNN_STATUS_NOT_SUPPORTED)
        << a;
  EXPECT_EQ(cudnnConvolutionBackwardFilter(h, &one, d.x, x.get(), d.y, y.get(), d.conv,
                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD, ws.get(), big, &zero, d.w,
                                           w.get()),
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(cudnnConvolutionForward(h, &one, d.x, x.get(), d.w, w.get(), d.conv,
                                    static_cast<cudnnConvolutionFwdAlgo_t>(99), ws.get(), big, &zero, d.y, y.get()),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(CudnnChecks, MismatchedDescriptorsAreBadParams) {
  Handle h;
  Buffer buf(CUDNN_DATA_DOUBLE, 4096), ws(CUDNN_DATA_DOUBLE, 1 << 20);
  auto forward = [&](const Geometry& x_geometry, int k, int c, int r, int s, int groups, int yn, int yc, int yh, int yw,
                     cudnnDataType_t xt = CUDNN_DATA_FLOAT, cudnnDataType_t compute = CUDNN_DATA_FLOAT) {
    Descriptors d(x_geometry, CUDNN_DATA_FLOAT);
    EXPECT_EQ(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, xt, x_geometry.N, x_geometry.C, x_geometry.H,
                                         x_geometry.W),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, r, s), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, yn, yc, yh, yw), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnSetConvolution2dDescriptor(d.conv, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, compute),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnSetConvolutionGroupCount(d.conv, groups), CUDNN_STATUS_SUCCESS);
    const float one = 1, zero = 0;
    return cudnnConvolutionForward(h, &one, d.x, buf.get(), d.w, buf.get(), d.conv,
                                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, ws.get(), 1 << 20, &zero, d.y, buf.get());
  };
  const Geometry x{1, 4, 5, 5, 2, 3, 3};
  EXPECT_EQ(forward(x, 2, 4, 3, 3, 1, 1, 2, 3, 3), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(forward(x, 2, 3, 3, 3, 1, 1, 2, 3, 3), CUDNN_STATUS_BAD_PARAM);   // filter channels != x channels
  EXPECT_EQ(forward(x, 2, 2, 3, 3, 2, 1, 2, 3, 3), CUDNN_STATUS_SUCCESS);    // 2 groups of 2 channels
  EXPECT_EQ(forward(x, 3, 2, 3, 3, 2, 1, 3, 3, 3), CUDNN_STATUS_BAD_PARAM);   // 3 filters in 2 groups
  EXPECT_EQ(forward(x, 2, 4, 3, 3, 3, 1, 2, 3, 3), CUDNN_STATUS_BAD_PARAM);   // 3 groups of 4 channels
  EXPECT_EQ(forward(x, 2, 4, 3, 3, 1, 1, 2, 4, 3), CUDNN_STATUS_BAD_PARAM);   // wrong output height
  EXPECT_EQ(forward(x, 2, 4, 3, 3, 1, 1, 3, 3, 3), CUDNN_STATUS_BAD_PARAM);   // wrong output channels
  EXPECT_EQ(forward(x, 2, 4, 3, 3, 1, 2, 2, 3, 3), CUDNN_STATUS_BAD_PARAM);   // wrong batch
  EXPECT_EQ(forward(x, 2, 4, 6, 3, 1, 1, 2, 1, 3), CUDNN_STATUS_BAD_PARAM);   // filter taller than the input
  EXPECT_EQ(forward(x, 2, 4, 3, 3, 1, 1, 2, 3, 3, CUDNN_DATA_DOUBLE), CUDNN_STATUS_BAD_PARAM);  // mixed types
  EXPECT_EQ(forward(x, 2, 4, 3, 3, 1, 1, 2, 3, 3, CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE),          // no such config
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  // A convolution descriptor that was never set.
  Descriptors d(x, CUDNN_DATA_FLOAT);
  cudnnConvolutionDescriptor_t unset;
  ASSERT_EQ(cudnnCreateConvolutionDescriptor(&unset), CUDNN_STATUS_SUCCESS);
  size_t bytes;
  EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, unset, d.y, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                    &bytes),
            CUDNN_STATUS_BAD_PARAM);
  cudnnDestroyConvolutionDescriptor(unset);
}

TEST(CudnnChecks, DescriptorSettersValidateTheirArguments) {
  cudnnTensorDescriptor_t t;
  cudnnFilterDescriptor_t f;
  cudnnConvolutionDescriptor_t c;
  ASSERT_EQ(cudnnCreateTensorDescriptor(&t), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnCreateFilterDescriptor(&f), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnCreateConvolutionDescriptor(&c), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 1, 1, 1), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, -1, 1, 1), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, static_cast<cudnnDataType_t>(99), 1, 1, 1, 1),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetTensor4dDescriptor(t, static_cast<cudnnTensorFormat_t>(7), CUDNN_DATA_FLOAT, 1, 1, 1, 1),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_FLOAT, 1, 1, 1, 1, 1, 1, 0, 1), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 4, 5), CUDNN_STATUS_SUCCESS);
  cudnnDataType_t type;
  int n, ch, hh, ww, ns, cs, hs, ws;
  ASSERT_EQ(cudnnGetTensor4dDescriptor(t, &type, &n, &ch, &hh, &ww, &ns, &cs, &hs, &ws), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(std::vector<int>({n, ch, hh, ww, ns, cs, hs, ws}), std::vector<int>({2, 3, 4, 5, 60, 20, 5, 1}));
  EXPECT_EQ(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 0, 3, 3), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetConvolution2dDescriptor(c, -1, 0, 1, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetConvolution2dDescriptor(c, 0, 0, 0, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 0, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, static_cast<cudnnConvolutionMode_t>(5),
                                            CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetConvolutionGroupCount(c, 0), CUDNN_STATUS_BAD_PARAM);
  // The output size of a padded, strided, dilated convolution.
  ASSERT_EQ(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 6, 3, 3, 2), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 10, 9), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetConvolution2dDescriptor(c, 1, 2, 2, 3, 2, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  int on, oc, oh, ow;
  ASSERT_EQ(cudnnGetConvolution2dForwardOutputDim(c, t, f, &on, &oc, &oh, &ow), CUDNN_STATUS_SUCCESS);
  // h: (10 + 2 - 5) / 2 + 1 = 4; w: (9 + 4 - 2) / 3 + 1 = 4.
  EXPECT_EQ(std::vector<int>({on, oc, oh, ow}), std::vector<int>({2, 6, 4, 4}));
  ASSERT_EQ(cudnnSetConvolutionGroupCount(c, 3), CUDNN_STATUS_SUCCESS);  // 3 groups want 1-channel filters
  EXPECT_EQ(cudnnGetConvolution2dForwardOutputDim(c, t, f, &on, &oc, &oh, &ow), CUDNN_STATUS_BAD_PARAM);
  cudnnDestroyConvolutionDescriptor(c);
  cudnnDestroyFilterDescriptor(f);
  cudnnDestroyTensorDescriptor(t);
}

TEST(CudnnChecks, HandlesAndStreams) {
  EXPECT_EQ(cudnnCreate(nullptr), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnDestroy(nullptr), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetStream(nullptr, nullptr), CUDNN_STATUS_BAD_PARAM);
  Handle h;
  cudaStream_t got = reinterpret_cast<cudaStream_t>(1);
  ASSERT_EQ(cudnnGetStream(h, &got), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(got, nullptr);
  cudaStream_t s0, s1;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&s1), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudnnSetStream(h, s1), CUDNN_STATUS_MAPPING_ERROR);  // a stream of cuda:1
  ASSERT_EQ(cudnnSetStream(h, s0), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnGetStream(h, &got), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(got, s0);
  // The work runs on the handle's stream.
  const Geometry g = kGeometries[4];
  Descriptors d(g, CUDNN_DATA_DOUBLE);
  const std::vector<double> x = dyadic(g.x_size(), 14), w = dyadic(g.w_size(), 15);
  Buffer bx(CUDNN_DATA_DOUBLE, x), bw(CUDNN_DATA_DOUBLE, w), by(CUDNN_DATA_DOUBLE, g.y_size());
  const double one = 1, zero = 0;
  ASSERT_EQ(cudnnConvolutionForward(h, &one, d.x, bx.get(), d.w, bw.get(), d.conv,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero, d.y, by.get()),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamSynchronize(s0), cudaSuccess);
  EXPECT_EQ(by.download(), ref_forward(g, x, w));
  EXPECT_EQ(cudaStreamDestroy(s0), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s1), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_STREQ(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM");
  EXPECT_STREQ(cudnnGetErrorString(CUDNN_STATUS_NOT_SUPPORTED), "CUDNN_STATUS_NOT_SUPPORTED");
}

// --- faults on the device -------------------------------------------------------------------

struct OnDevice {
  explicit OnDevice(int d) { EXPECT_EQ(cudaSetDevice(d), cudaSuccess); }
  ~OnDevice() {
    cudaDeviceReset();
    cudaGetLastError();
    cudaSetDevice(0);
  }
};

TEST(CudnnFaults, HostInputIsAnIllegalAddressOnTheStream) {
  OnDevice on(1);
  const Geometry g = kGeometries[0];
  std::vector<float> host_x(g.x_size(), 1.0f);
  Buffer w(CUDNN_DATA_FLOAT, g.w_size()), y(CUDNN_DATA_FLOAT, g.y_size());
  {
    Handle h;
    Descriptors d(g, CUDNN_DATA_FLOAT);
    const float one = 1, zero = 0;
    ASSERT_EQ(cudnnConvolutionForward(h, &one, d.x, host_x.data(), d.w, w.get(), d.conv,
                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero, d.y, y.get()),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    const std::string detail = cudasimLastErrorDetail();
    EXPECT_NE(detail.find("cudnnConvolutionForward"), std::string::npos) << detail;
    EXPECT_NE(detail.find("x ("), std::string::npos) << detail;
  }
}

TEST(CudnnFaults, WorkspaceSmallerThanClaimedIsAnIllegalAddress) {
  OnDevice on(1);
  const Geometry g = kGeometries[0];
  Buffer x(CUDNN_DATA_FLOAT, g.x_size()), w(CUDNN_DATA_FLOAT, g.w_size()), y(CUDNN_DATA_FLOAT, g.y_size());
  Handle h;
  Descriptors d(g, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH);
  const auto algo = CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
  size_t bytes = 0;
  ASSERT_EQ(cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, algo, &bytes), CUDNN_STATUS_SUCCESS);
  ASSERT_GT(bytes, 256u);
  void* ws = nullptr;
  ASSERT_EQ(cudaMalloc(&ws, 256), cudaSuccess);  // the size argument below claims more
  const float one = 1, zero = 0;
  ASSERT_EQ(cudnnConvolutionForward(h, &one, d.x, x.get(), d.w, w.get(), d.conv, algo, ws, bytes, &zero, d.y, y.get()),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  EXPECT_NE(std::string(cudasimLastErrorDetail()).find("workspace"), std::string::npos) << cudasimLastErrorDetail();
  cudaFree(ws);
}

}  // namespace
