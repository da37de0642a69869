// Conformance of the simulated cuBLAS GEMMs: results against a naive double-precision
// reference (column-major, computed here), argument checks, math modes and compute types,
// streams, workspaces, and faults found asynchronously on the device.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <cudasim/cudasim.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

// Device memory holding a std::vector's worth of T.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p_), bytes()), cudaSuccess); }
  explicit DeviceArray(const std::vector<T>& v) : DeviceArray(v.size()) { upload(v); }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }
  size_t bytes() const { return std::max<size_t>(n_, 1) * sizeof(T); }
  void upload(const std::vector<T>& v) { ASSERT_EQ(cudaMemcpy(p_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess); }
  std::vector<T> download() const {
    std::vector<T> v(n_);
    EXPECT_EQ(cudaMemcpy(v.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }

 private:
  size_t n_;
  T* p_ = nullptr;
};

// Small dyadic values (multiples of 1/8 in [-1, 1]): float sums of their products are exact,
// so float and double results can be compared for equality.
std::vector<double> values(size_t n, int seed) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>((static_cast<int>(i) * 7919 + seed * 104729) % 17 - 8) / 8.0;
  return v;
}

template <class T>
std::vector<T> as(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// C = alpha * op(A) @ op(B) + beta * C, column-major, op = 'N' or 'T'.
void reference_gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, double alpha, const double* A, int64_t lda,
                    const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double a = ta == 'N' ? A[i + p * lda] : A[p + i * lda];
        const double b = tb == 'N' ? B[p + j * ldb] : B[j + p * ldb];
        s += a * b;
      }
      C[i + j * ldc] = alpha * s + (beta == 0 ? 0.0 : beta * C[i + j * ldc]);
    }
}

char op_char(cublasOperation_t op) { return op == CUBLAS_OP_N ? 'N' : 'T'; }

class Handle {
 public:
  Handle() { EXPECT_EQ(cublasCreate(&h_), CUBLAS_STATUS_SUCCESS); }
  ~Handle() {
    if (h_) cublasDestroy(h_);
  }
  operator cublasHandle_t() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

// Restores device 0 and leaves no error behind, even when an assertion returns early.
struct OnDevice {
  explicit OnDevice(int d) { EXPECT_EQ(cudaSetDevice(d), cudaSuccess); }
  ~OnDevice() {
    cudaDeviceReset();
    cudaGetLastError();
    cudaSetDevice(0);
  }
};

// One strided-batched GEMM of T (float with CUBLAS_COMPUTE_32F or double with 64F) against
// the reference, with every operand's leading dimension larger than its rows.
template <class T>
void check_gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, int64_t batch,
                bool broadcast_a, double alpha, double beta) {
  SCOPED_TRACE(testing::Message() << "op " << op_char(ta) << op_char(tb) << " m " << m << " n " << n << " k " << k
                                  << " batch " << batch << (broadcast_a ? " (A broadcast)" : ""));
  const bool dbl = sizeof(T) == 8;
  const int64_t a_rows = ta == CUBLAS_OP_N ? m : k, a_cols = ta == CUBLAS_OP_N ? k : m;
  const int64_t b_rows = tb == CUBLAS_OP_N ? k : n, b_cols = tb == CUBLAS_OP_N ? n : k;
  const int64_t lda = a_rows + 3, ldb = b_rows + 1, ldc = m + 2;
  const int64_t sa = broadcast_a ? 0 : lda * a_cols + 5, sb = ldb * b_cols, sc = ldc * n + 7;
  const std::vector<double> A = values(static_cast<size_t>(broadcast_a ? lda * a_cols : sa * batch), 1);
  const std::vector<double> B = values(static_cast<size_t>(sb * batch), 2);
  std::vector<double> C = values(static_cast<size_t>(sc * batch), 3);
  DeviceArray<T> dA(as<T>(A)), dB(as<T>(B)), dC(as<T>(C));

  Handle h;
  const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
  ASSERT_EQ(cublasGemmStridedBatchedEx_64(h, ta, tb, m, n, k, &a, dA.get(), dbl ? CUDA_R_64F : CUDA_R_32F, lda, sa,
                                          dB.get(), dbl ? CUDA_R_64F : CUDA_R_32F, ldb, sb, &b, dC.get(),
                                          dbl ? CUDA_R_64F : CUDA_R_32F, ldc, sc, batch,
                                          dbl ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<T> got = dC.download();
  for (int64_t bi = 0; bi < batch; ++bi)
    reference_gemm(op_char(ta), op_char(tb), m, n, k, alpha, A.data() + bi * sa, lda, B.data() + bi * sb, ldb, beta,
                   C.data() + bi * sc, ldc);
  // Dyadic inputs: every result is exact in float. Padding between columns and batches is
  // left as it was.
  for (size_t i = 0; i < C.size(); ++i) ASSERT_EQ(static_cast<double>(got[i]), C[i]) << "element " << i;
}

const cublasOperation_t kOps[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};

TEST(CublasGemm, EveryTransposeMatchesTheReference) {
  for (cublasOperation_t ta : kOps)
    for (cublasOperation_t tb : kOps) {
      check_gemm<float>(ta, tb, 5, 7, 3, 1, false, 1.0, 0.0);
      check_gemm<double>(ta, tb, 6, 5, 9, 1, false, -0.5, 0.0);
    }
}

TEST(CublasGemm, LargeShapesCrossEveryBlockEdge) {
  // More rows than one row block (256) and a column count that is not a multiple of 4.
  check_gemm<float>(CUBLAS_OP_N, CUBLAS_OP_N, 300, 11, 37, 1, false, 1.0, 0.0);
  check_gemm<float>(CUBLAS_OP_T, CUBLAS_OP_N, 260, 9, 40, 2, false, 2.0, 1.0);
  check_gemm<double>(CUBLAS_OP_N, CUBLAS_OP_T, 257, 6, 31, 1, false, 1.0, -1.0);
}

TEST(CublasGemm, StridedBatchesAndABroadcastBatch) {
  check_gemm<float>(CUBLAS_OP_N, CUBLAS_OP_N, 4, 3, 5, 3, false, 1.0, 0.0);
  check_gemm<float>(CUBLAS_OP_T, CUBLAS_OP_N, 4, 3, 5, 4, true, 1.0, 0.0);  // stride 0: one A for every batch
  check_gemm<double>(CUBLAS_OP_N, CUBLAS_OP_T, 3, 6, 2, 3, true, 0.5, 2.0);
}

TEST(CublasGemm, BetaOneAccumulatesIntoC) {
  for (cublasOperation_t ta : kOps) check_gemm<float>(ta, CUBLAS_OP_N, 4, 5, 6, 2, false, 2.0, 1.0);
  check_gemm<double>(CUBLAS_OP_T, CUBLAS_OP_T, 7, 3, 4, 2, false, -1.0, 0.25);
}

TEST(CublasGemm, BetaZeroDoesNotReadC) {
  const int m = 3, n = 4, k = 2;
  DeviceArray<float> A(as<float>(values(m * k, 1))), B(as<float>(values(k * n, 2)));
  DeviceArray<float> C(std::vector<float>(m * n, std::numeric_limits<float>::quiet_NaN()));
  Handle h;
  const float alpha = 1.0f, beta = 0.0f;
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, A.get(), CUDA_R_32F, m, B.get(), CUDA_R_32F, k,
                         &beta, C.get(), CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<double> want(m * n);
  const std::vector<double> a = values(m * k, 1), b = values(k * n, 2);
  reference_gemm('N', 'N', m, n, k, 1.0, a.data(), m, b.data(), k, 0.0, want.data(), m);
  const std::vector<float> got = C.download();
  for (int i = 0; i < m * n; ++i) EXPECT_EQ(got[i], want[i]) << i;
}

TEST(CublasGemm, EmptyKScalesC) {
  DeviceArray<double> C(std::vector<double>{1, 2, 3, 4});
  DeviceArray<double> A(1), B(1);
  Handle h;
  const double alpha = 1, beta = 3;
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 0, &alpha, A.get(), CUDA_R_64F, 2, B.get(), CUDA_R_64F, 1,
                         &beta, C.get(), CUDA_R_64F, 2, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(C.download(), (std::vector<double>{3, 6, 9, 12}));
}

// A 1 x 1 x 2 product whose first input has more than 10 mantissa bits, computed with each
// way of asking for float: only TF32 modes round it (to 10 bits, to nearest).
float one_product(cublasHandle_t h, float a0, cublasComputeType_t compute) {
  DeviceArray<float> A(std::vector<float>{a0, 1.0f}), B(std::vector<float>{1.0f, 0.0f}), C(1);
  const float alpha = 1, beta = 0;
  EXPECT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &alpha, A.get(), CUDA_R_32F, 1, B.get(), CUDA_R_32F, 2,
                         &beta, C.get(), CUDA_R_32F, 1, compute, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return C.download()[0];
}

TEST(CublasGemm, Tf32RoundsInputsToTenMantissaBits) {
  const float x = 1.0f + 0x1p-11f + 0x1p-12f;  // 1.00000000011b: nearest TF32 is 1 + 2^-10
  const float tf32 = 1.0f + 0x1p-10f;
  Handle h;
  EXPECT_EQ(one_product(h, x, CUBLAS_COMPUTE_32F), x);
  EXPECT_EQ(one_product(h, x, CUBLAS_COMPUTE_32F_FAST_TF32), tf32);
  EXPECT_EQ(one_product(h, -x, CUBLAS_COMPUTE_32F_FAST_TF32), -tf32);
  EXPECT_EQ(one_product(h, 1.0f + 0x1p-12f, CUBLAS_COMPUTE_32F_FAST_TF32), 1.0f);  // rounds down
  // The math mode asks for TF32 on the default compute type, not on the pedantic one.
  ASSERT_EQ(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(one_product(h, x, CUBLAS_COMPUTE_32F), tf32);
  EXPECT_EQ(one_product(h, x, CUBLAS_COMPUTE_32F_PEDANTIC), x);
  ASSERT_EQ(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(one_product(h, x, CUBLAS_COMPUTE_32F), x);
}

TEST(CublasGemm, FastHalfAndBfloat16ComputeTypesRoundInputs) {
  Handle h;
  EXPECT_EQ(one_product(h, 1.0f + 0x1p-12f, CUBLAS_COMPUTE_32F_FAST_16F), 1.0f);  // half: 10 bits
  EXPECT_EQ(one_product(h, 1.0f + 0x1p-9f, CUBLAS_COMPUTE_32F_FAST_16F), 1.0f + 0x1p-9f);
  EXPECT_EQ(one_product(h, 1.0f + 0x1p-9f, CUBLAS_COMPUTE_32F_FAST_16BF), 1.0f);  // bfloat16: 7 bits
  EXPECT_EQ(one_product(h, 1.0f + 0x1p-7f, CUBLAS_COMPUTE_32F_FAST_16BF), 1.0f + 0x1p-7f);
}

TEST(CublasGemm, FloatComputeAccumulatesInFloat) {
  // 1 + 8 * 2^-25: in float each addition of 2^-25 (a quarter ulp of 1) rounds back to 1.
  const int k = 9;
  std::vector<float> a(k, 0x1p-25f);
  a[0] = 1.0f;
  DeviceArray<float> A(a), B(std::vector<float>(k, 1.0f)), C(1);
  DeviceArray<double> Ad(std::vector<double>(a.begin(), a.end())), Bd(std::vector<double>(k, 1.0)), Cd(1);
  Handle h;
  const float alpha = 1, beta = 0;
  const double alpha_d = 1, beta_d = 0;
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, k, &alpha, A.get(), CUDA_R_32F, 1, B.get(), CUDA_R_32F, k,
                         &beta, C.get(), CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, k, &alpha_d, Ad.get(), CUDA_R_64F, 1, Bd.get(),
                         CUDA_R_64F, k, &beta_d, Cd.get(), CUDA_R_64F, 1, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(C.download()[0], 1.0f);
  EXPECT_EQ(Cd.download()[0], 1.0 + 8 * 0x1p-25);
}

// 16-bit inputs with float accumulation, into a 16-bit or a float C.
template <class H, class ToH, class FromH>
void check_16bit(cudaDataType type, ToH to_h, FromH from_h) {
  const int m = 5, n = 3, k = 7;
  const std::vector<double> a = values(m * k, 4), b = values(k * n, 5), c = values(m * n, 6);
  std::vector<H> ah, bh, ch;
  for (double v : a) ah.push_back(to_h(static_cast<float>(v)));
  for (double v : b) bh.push_back(to_h(static_cast<float>(v)));
  for (double v : c) ch.push_back(to_h(static_cast<float>(v)));
  DeviceArray<H> A(ah), B(bh), C16(ch);
  DeviceArray<float> C32(as<float>(c));
  std::vector<double> want = c;
  reference_gemm('T', 'N', m, n, k, 0.5, a.data(), k, b.data(), k, 1.0, want.data(), m);
  Handle h;
  const float alpha = 0.5f, beta = 1.0f;
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, A.get(), type, k, B.get(), type, k, &beta,
                         C16.get(), type, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, A.get(), type, k, B.get(), type, k, &beta,
                         C32.get(), CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<H> got16 = C16.download();
  const std::vector<float> got32 = C32.download();
  for (int i = 0; i < m * n; ++i) {
    EXPECT_EQ(got32[i], want[i]) << i;
    EXPECT_EQ(from_h(got16[i]), from_h(to_h(static_cast<float>(want[i])))) << i;  // C rounded once
  }
}

TEST(CublasGemm, HalfAndBfloat16InputsAccumulateInFloat) {
  check_16bit<__half>(CUDA_R_16F, [](float f) { return __float2half(f); }, [](__half h) { return __half2float(h); });
  check_16bit<__nv_bfloat16>(CUDA_R_16BF, [](float f) { return __float2bfloat16(f); },
                             [](__nv_bfloat16 h) { return __bfloat162float(h); });
}

TEST(CublasGemm, HalfComputeTakesHalfScalars) {
  // 2048 + 1 + 1 in half precision: 2049 is not a half, so each addition rounds back.
  std::vector<__half> a = {__float2half(2048.0f), __float2half(1.0f), __float2half(1.0f)};
  std::vector<__half> b(3, __float2half(1.0f));
  DeviceArray<__half> A(a), B(b), C(1);
  Handle h;
  const __half alpha = __float2half(1.0f), beta = __float2half(0.0f);
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 3, &alpha, A.get(), CUDA_R_16F, 1, B.get(), CUDA_R_16F, 3,
                         &beta, C.get(), CUDA_R_16F, 1, CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(__half2float(C.download()[0]), 2048.0f);
}

TEST(CublasGemm, LeadingDimensionsSmallerThanRowsAreInvalid) {
  DeviceArray<float> A(64), B(64), C(64);
  Handle h;
  const float one = 1, zero = 0;
  auto call = [&](cublasOperation_t ta, cublasOperation_t tb, int64_t lda, int64_t ldb, int64_t ldc) {
    return cublasGemmStridedBatchedEx_64(h, ta, tb, 4, 3, 2, &one, A.get(), CUDA_R_32F, lda, 0, B.get(), CUDA_R_32F,
                                         ldb, 0, &zero, C.get(), CUDA_R_32F, ldc, 0, 1, CUBLAS_COMPUTE_32F,
                                         CUBLAS_GEMM_DEFAULT);
  };
  EXPECT_EQ(call(CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 4), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(call(CUBLAS_OP_N, CUBLAS_OP_N, 3, 2, 4), CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  EXPECT_EQ(call(CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 4), CUBLAS_STATUS_SUCCESS);        // A is k x m
  EXPECT_EQ(call(CUBLAS_OP_T, CUBLAS_OP_N, 1, 2, 4), CUBLAS_STATUS_INVALID_VALUE);  // lda < k
  EXPECT_EQ(call(CUBLAS_OP_N, CUBLAS_OP_N, 4, 1, 4), CUBLAS_STATUS_INVALID_VALUE);  // ldb < k
  EXPECT_EQ(call(CUBLAS_OP_N, CUBLAS_OP_T, 4, 3, 4), CUBLAS_STATUS_SUCCESS);        // B is n x k
  EXPECT_EQ(call(CUBLAS_OP_N, CUBLAS_OP_T, 4, 2, 4), CUBLAS_STATUS_INVALID_VALUE);  // ldb < n
  EXPECT_EQ(call(CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 3), CUBLAS_STATUS_INVALID_VALUE);  // ldc < m
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(CublasGemm, BadSizesEnumsAndScalarsAreInvalid) {
  DeviceArray<float> A(64), B(64), C(64);
  Handle h;
  const float one = 1, zero = 0;
  auto call = [&](int64_t m, int64_t n, int64_t k, int64_t batch, cublasOperation_t ta, cudaDataType type,
                  cublasComputeType_t compute, int algo, const void* alpha) {
    return cublasGemmStridedBatchedEx_64(h, ta, CUBLAS_OP_N, m, n, k, alpha, A.get(), type, 4, 16, B.get(), type, 4,
                                         16, &zero, C.get(), type, 4, 16, batch, compute,
                                         static_cast<cublasGemmAlgo_t>(algo));
  };
  const auto N = CUBLAS_OP_N;
  EXPECT_EQ(call(2, 2, 2, 1, N, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT, &one), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(call(-1, 2, 2, 1, N, CUDA_R_32F, CUBLAS_COMPUTE_32F, -1, &one), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(call(2, -1, 2, 1, N, CUDA_R_32F, CUBLAS_COMPUTE_32F, -1, &one), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(call(2, 2, -1, 1, N, CUDA_R_32F, CUBLAS_COMPUTE_32F, -1, &one), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(call(2, 2, 2, -1, N, CUDA_R_32F, CUBLAS_COMPUTE_32F, -1, &one), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(call(2, 2, 2, 1, CUBLAS_OP_CONJG, CUDA_R_32F, CUBLAS_COMPUTE_32F, -1, &one), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(call(2, 2, 2, 1, N, static_cast<cudaDataType>(99), CUBLAS_COMPUTE_32F, -1, &one),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(call(2, 2, 2, 1, N, CUDA_R_32F, static_cast<cublasComputeType_t>(12345), -1, &one),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(call(2, 2, 2, 1, N, CUDA_R_32F, CUBLAS_COMPUTE_32F, 50, &one), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(call(2, 2, 2, 1, N, CUDA_R_32F, CUBLAS_COMPUTE_32F, -1, nullptr), CUBLAS_STATUS_INVALID_VALUE);
  // Empty products launch nothing.
  EXPECT_EQ(call(0, 2, 2, 1, N, CUDA_R_32F, CUBLAS_COMPUTE_32F, -1, &one), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(call(2, 2, 2, 0, N, CUDA_R_32F, CUBLAS_COMPUTE_32F, -1, &one), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(CublasGemm, UnsupportedTypeCombinations) {
  DeviceArray<double> A(16), B(16), C(16);
  Handle h;
  const double one = 1;
  auto call = [&](cudaDataType at, cudaDataType bt, cudaDataType ct, cublasComputeType_t compute) {
    return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, A.get(), at, 2, B.get(), bt, 2, &one, C.get(), ct,
                        2, compute, CUBLAS_GEMM_DEFAULT);
  };
  EXPECT_EQ(call(CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_64F), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(call(CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_32F), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(call(CUDA_R_16F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(call(CUDA_R_16F, CUDA_R_16F, CUDA_R_16BF, CUBLAS_COMPUTE_32F), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(call(CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F_FAST_TF32), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(call(CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_16F), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(call(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_16F), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(CublasGemm, SixtyFourBitSizesAndLeadingDimensions) {
  DeviceArray<float> A(std::vector<float>{1, 2, 3}), B(std::vector<float>{2}), C(3);
  Handle h;
  const float one = 1, zero = 0;
  // One column each: a leading dimension past 2^32 touches nothing more, and a 32-bit
  // truncation (to 2) would be smaller than m = 3.
  const int64_t ld = (int64_t{1} << 32) + 2;
  ASSERT_EQ(cublasGemmStridedBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 3, 1, 1, &one, A.get(), CUDA_R_32F, ld, 0,
                                          B.get(), CUDA_R_32F, ld, 0, &zero, C.get(), CUDA_R_32F, ld, 0, 1,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(C.download(), (std::vector<float>{2, 4, 6}));
  // m past 2^31 is checked in 64 bits (n = 0: nothing is launched).
  const int64_t big = int64_t{3} << 30;
  EXPECT_EQ(cublasGemmStridedBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, big, 0, 5, &one, A.get(), CUDA_R_32F, big, 0,
                                          B.get(), CUDA_R_32F, 5, 0, &zero, C.get(), CUDA_R_32F, big, 0, 1,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasGemmStridedBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, big, 0, 5, &one, A.get(), CUDA_R_32F, big - 1,
                                          0, B.get(), CUDA_R_32F, 5, 0, &zero, C.get(), CUDA_R_32F, big, 0, 1,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_INVALID_VALUE);
}

TEST(CublasGemm, ThirtyTwoBitFormsAgreeWithTheSixtyFourBitOnes) {
  const int m = 4, n = 3, k = 5, batch = 2;
  const std::vector<double> a = values(m * k * batch, 7), b = values(k * n * batch, 8);
  DeviceArray<float> A(as<float>(a)), B(as<float>(b)), C1(m * n * batch), C2(m * n * batch), C3(m * n), C4(m * n);
  Handle h;
  const float one = 1, zero = 0;
  ASSERT_EQ(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A.get(), CUDA_R_32F, m, m * k,
                                       B.get(), CUDA_R_32F, k, k * n, &zero, C1.get(), CUDA_R_32F, m, m * n, batch,
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGemmStridedBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A.get(), CUDA_R_32F, m, m * k,
                                          B.get(), CUDA_R_32F, k, k * n, &zero, C2.get(), CUDA_R_32F, m, m * n, batch,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A.get(), CUDA_R_32F, m, B.get(), CUDA_R_32F, k,
                         &zero, C3.get(), CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_ALGO3),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGemmEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A.get(), CUDA_R_32F, m, B.get(), CUDA_R_32F, k,
                            &zero, C4.get(), CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<double> want(m * n * batch);
  for (int bi = 0; bi < batch; ++bi)
    reference_gemm('N', 'N', m, n, k, 1, a.data() + bi * m * k, m, b.data() + bi * k * n, k, 0,
                   want.data() + bi * m * n, m);
  EXPECT_EQ(C1.download(), as<float>(want));
  EXPECT_EQ(C2.download(), as<float>(want));
  want.resize(m * n);
  EXPECT_EQ(C3.download(), as<float>(want));
  EXPECT_EQ(C4.download(), as<float>(want));
}

TEST(CublasHandle, NullHandleIsNotInitialized) {
  const float one = 1;
  cudaStream_t s = nullptr;
  cublasMath_t mode;
  EXPECT_EQ(cublasGemmStridedBatchedEx_64(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, nullptr, CUDA_R_32F, 1, 0,
                                          nullptr, CUDA_R_32F, 1, 0, &one, nullptr, CUDA_R_32F, 1, 0, 1,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasSetStream(nullptr, nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasGetStream(nullptr, &s), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasSetWorkspace(nullptr, nullptr, 0), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasSetMathMode(nullptr, CUBLAS_DEFAULT_MATH), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasGetMathMode(nullptr, &mode), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasDestroy(nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasCreate(nullptr), CUBLAS_STATUS_INVALID_VALUE);
}

TEST(CublasHandle, StreamAndMathModeAccessors) {
  Handle h;
  cudaStream_t s = nullptr, got = reinterpret_cast<cudaStream_t>(1);
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cublasGetStream(h, &got), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(got, nullptr);  // a new handle uses the legacy default stream
  ASSERT_EQ(cublasSetStream(h, s), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGetStream(h, &got), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(got, s);

  cublasMath_t mode;
  ASSERT_EQ(cublasGetMathMode(h, &mode), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(mode, CUBLAS_DEFAULT_MATH);
  const auto flags = static_cast<cublasMath_t>(CUBLAS_TF32_TENSOR_OP_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  ASSERT_EQ(cublasSetMathMode(h, flags), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGetMathMode(h, &mode), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(mode, flags);
  EXPECT_EQ(cublasSetMathMode(h, static_cast<cublasMath_t>(5)), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSetMathMode(h, static_cast<cublasMath_t>(64)), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(CublasHandle, WorkspaceMustBeAlignedMemoryOfTheHandlesDevice) {
  Handle h;
  DeviceArray<char> ws(4096);
  std::vector<char> host(4096);
  EXPECT_EQ(cublasSetWorkspace(h, ws.get(), 4096), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetWorkspace(h, ws.get() + 256, 1024), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetWorkspace(h, nullptr, 0), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetWorkspace(h, ws.get() + 16, 1024), CUBLAS_STATUS_INVALID_VALUE);  // misaligned
  EXPECT_EQ(cublasSetWorkspace(h, ws.get(), 8192), CUBLAS_STATUS_INVALID_VALUE);       // past the allocation
  void* aligned_host = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(host.data()) + 255) / 256 * 256);
  EXPECT_EQ(cublasSetWorkspace(h, aligned_host, 256), CUBLAS_STATUS_INVALID_VALUE);  // host memory
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  {
    DeviceArray<char> other(4096);
    EXPECT_EQ(cublasSetWorkspace(h, other.get(), 4096), CUBLAS_STATUS_INVALID_VALUE);  // memory of cuda:1
  }
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

TEST(CublasHandle, RunsInOrderOnTheHandlesStream) {
  // C1 = A @ B, then C2 = C1 @ B on the same stream: the second product sees the first.
  const int n = 64;
  const std::vector<double> a = values(n * n, 9), b = values(n * n, 10);
  DeviceArray<double> A(a), B(b), C1(n * n), C2(n * n);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  Handle h;
  ASSERT_EQ(cublasSetStream(h, s), CUBLAS_STATUS_SUCCESS);
  const double one = 1, zero = 0;
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A.get(), CUDA_R_64F, n, B.get(), CUDA_R_64F, n,
                         &zero, C1.get(), CUDA_R_64F, n, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, C1.get(), CUDA_R_64F, n, B.get(), CUDA_R_64F, n,
                         &zero, C2.get(), CUDA_R_64F, n, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  std::vector<double> c1(n * n), c2(n * n);
  reference_gemm('N', 'N', n, n, n, 1, a.data(), n, b.data(), n, 0, c1.data(), n);
  reference_gemm('N', 'N', n, n, n, 1, c1.data(), n, b.data(), n, 0, c2.data(), n);
  EXPECT_EQ(C2.download(), c2);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(CublasHandle, LaunchesOnAnotherDevicesStreamFail) {
  Handle h;  // cuda:0
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  cudaStream_t s1;
  ASSERT_EQ(cudaStreamCreate(&s1), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  DeviceArray<float> A(4), B(4), C(4);
  const float one = 1, zero = 0;
  auto call = [&] {
    return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, A.get(), CUDA_R_32F, 2, B.get(), CUDA_R_32F, 2,
                        &zero, C.get(), CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  ASSERT_EQ(cublasSetStream(h, s1), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(call(), CUBLAS_STATUS_EXECUTION_FAILED);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  ASSERT_EQ(cublasSetStream(h, nullptr), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(call(), CUBLAS_STATUS_SUCCESS);
  // The handle used while another device is current.
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(call(), CUBLAS_STATUS_EXECUTION_FAILED);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamDestroy(s1), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(CublasFaults, HostMatrixIsAnIllegalAddressOnTheStream) {
  OnDevice on(1);
  std::vector<float> host_a(4, 1.0f);
  DeviceArray<float> B(4), C(4);
  {
    Handle h;
    const float one = 1, zero = 0;
    // The call itself succeeds: the fault is found when the GEMM runs.
    ASSERT_EQ(cublasGemmStridedBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, host_a.data(), CUDA_R_32F, 2,
                                            0, B.get(), CUDA_R_32F, 2, 0, &zero, C.get(), CUDA_R_32F, 2, 0, 1,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    const std::string detail = cudasimLastErrorDetail();
    EXPECT_NE(detail.find("cublasGemmStridedBatchedEx_64"), std::string::npos) << detail;
    EXPECT_NE(detail.find("matrix A"), std::string::npos) << detail;
    // Sticky: later launches on the device fail at once.
    EXPECT_EQ(cublasGemmStridedBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, B.get(), CUDA_R_32F, 2, 0,
                                            B.get(), CUDA_R_32F, 2, 0, &zero, C.get(), CUDA_R_32F, 2, 0, 1,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_EXECUTION_FAILED);
  }
}

TEST(CublasFaults, WholeBatchRangeIsChecked) {
  OnDevice on(1);
  DeviceArray<float> A(8), B(4), C(8);
  Handle h;
  const float one = 1, zero = 0;
  // Two batches of A with stride 8 reach 12 floats of an 8-float allocation.
  ASSERT_EQ(cublasGemmStridedBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, A.get(), CUDA_R_32F, 2, 8,
                                          B.get(), CUDA_R_32F, 2, 0, &zero, C.get(), CUDA_R_32F, 2, 4, 2,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  EXPECT_NE(std::string(cudasimLastErrorDetail()).find("matrix A"), std::string::npos) << cudasimLastErrorDetail();
}

TEST(CublasFaults, FreedWorkspaceIsAnIllegalAddressUntilSetStreamResetsIt) {
  OnDevice on(1);
  DeviceArray<float> A(4), B(4), C(4);
  Handle h;
  const float one = 1, zero = 0;
  auto call = [&] {
    return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, A.get(), CUDA_R_32F, 2, B.get(), CUDA_R_32F, 2,
                        &zero, C.get(), CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  void* ws = nullptr;
  ASSERT_EQ(cudaMalloc(&ws, 1 << 20), cudaSuccess);
  ASSERT_EQ(cublasSetWorkspace(h, ws, 1 << 20), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaFree(ws), cudaSuccess);
  // cublasSetStream puts cuBLAS's own workspace back: the freed one is not used.
  ASSERT_EQ(cublasSetStream(h, nullptr), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(call(), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  ASSERT_EQ(cudaMalloc(&ws, 1 << 20), cudaSuccess);
  ASSERT_EQ(cublasSetWorkspace(h, ws, 1 << 20), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaFree(ws), cudaSuccess);
  ASSERT_EQ(call(), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  EXPECT_NE(std::string(cudasimLastErrorDetail()).find("workspace"), std::string::npos) << cudasimLastErrorDetail();
}

TEST(CublasStatus, StringsNameEveryStatus) {
  for (cublasStatus_t s : {CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_NOT_INITIALIZED, CUBLAS_STATUS_INVALID_VALUE,
                           CUBLAS_STATUS_NOT_SUPPORTED, CUBLAS_STATUS_EXECUTION_FAILED}) {
    ASSERT_NE(cublasGetStatusString(s), nullptr);
    EXPECT_GT(std::string(cublasGetStatusString(s)).size(), 5u);
  }
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_NE(std::string(cublasGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED)),
            std::string(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE)));
}

}  // namespace
