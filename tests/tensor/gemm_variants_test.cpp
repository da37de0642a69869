// The matrix product's copies per instruction set (kernels/cpu/serial_gemm.h): every copy
// this CPU can run computes each storage order like a float64 loop, the one in use is the
// widest supported, and copies the CPU cannot run are never asked for their table.
#include <gtest/gtest.h>

#include <cmath>

#include <wick/tensor/cpu_capability.h>

#include "kernels/cpu/serial_gemm.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

template <class T>
void check_copy(const cpu::GemmVariant& v) {
  const int64_t M = 37, N = 29, K = 53;
  const std::vector<double> a = values(random({M * K}, DType::Float64, 1)), b = values(random({K * N}, DType::Float64, 2));
  for (int order_a : {cpu::kRowMajor, cpu::kColMajor})
    for (int order_b : {cpu::kRowMajor, cpu::kColMajor}) {
      SCOPED_TRACE(std::string(v.name) + (sizeof(T) == 4 ? " float" : " double") + " orders " +
                   std::to_string(order_a) + std::to_string(order_b));
      // a [M, K] and b [K, N] stored in the asked order with leading dims padded by 3.
      const int64_t lda = (order_a == cpu::kRowMajor ? K : M) + 3, ldb = (order_b == cpu::kRowMajor ? N : K) + 3;
      std::vector<T> pa(static_cast<size_t>(lda * (order_a == cpu::kRowMajor ? M : K))), pb(static_cast<size_t>(ldb * (order_b == cpu::kRowMajor ? K : N)));
      for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k)
          pa[static_cast<size_t>(order_a == cpu::kRowMajor ? i * lda + k : k * lda + i)] = static_cast<T>(a[static_cast<size_t>(i * K + k)]);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j)
          pb[static_cast<size_t>(order_b == cpu::kRowMajor ? k * ldb + j : j * ldb + k)] = static_cast<T>(b[static_cast<size_t>(k * N + j)]);
      std::vector<T> c(static_cast<size_t>(M * N), T(1));  // += alpha * a @ b onto ones
      v.fn<T>(order_a, order_b)(M, N, K, pa.data(), lda, pb.data(), ldb, c.data(), N, T(2));
      const double tol = sizeof(T) == 4 ? 1e-5 : 1e-13;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double want = 1, scale = 1;
          for (int64_t k = 0; k < K; ++k) {
            const double x = static_cast<T>(a[static_cast<size_t>(i * K + k)]), y = static_cast<T>(b[static_cast<size_t>(k * N + j)]);
            want += 2 * x * y;
            scale += std::abs(2 * x * y);
          }
          ASSERT_LE(std::abs(c[static_cast<size_t>(i * N + j)] - want), tol * scale) << "[" << i << ", " << j << "]";
        }
    }
}

TEST(GemmVariants, EverySupportedCopyComputesEveryOrder) {
  int count = 0;
  const cpu::GemmVariantInfo* all = cpu::gemm_variants(&count);
  ASSERT_GE(count, 1);
  EXPECT_STREQ(all[0].name, "baseline");
  EXPECT_TRUE(all[0].supported);
  const char* widest = nullptr;
  for (int i = 0; i < count; ++i) {
    SCOPED_TRACE(all[i].name);
    EXPECT_EQ(all[i].variant != nullptr, all[i].supported);  // an unsupported copy is never asked
    if (!all[i].supported) continue;
    widest = all[i].name;
    EXPECT_STREQ(all[i].variant->name, all[i].name);
    EXPECT_GE(all[i].variant->column_unit<float>(), 1);
    check_copy<float>(*all[i].variant);
    check_copy<double>(*all[i].variant);
  }
  if (std::getenv("WICK_CPU_ISA") == nullptr) EXPECT_EQ(cpu_capability(), widest);
}

}  // namespace
}  // namespace wick::test
