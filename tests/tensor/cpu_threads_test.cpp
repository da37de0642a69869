// The CPU kernels' thread pool (kernels/cpu/thread_pool.h, parallel.h) and the matrix
// products that are cut into blocks over its threads (kernels/cpu/matmul.cpp).
#include <array>
#include <cmath>
#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include <functional>
#include <string>

#include <wick/tensor/conv.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/join.h>
#include <wick/tensor/reduce.h>
#include <wick/tensor/dispatch.h>
#include <wick/tensor/threads.h>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

using cpu::ThreadPool;

TEST(CpuThreadPool, RunsEveryIndexOnceOnEveryCall) {
  ThreadPool pool(4);
  ASSERT_EQ(pool.size(), 4);
  struct Counts {
    std::atomic<int> hits[8];
  } counts{};
  for (int call = 0; call < 2000; ++call) {
    const int n = 1 + call % 8;  // fewer and more tasks than threads
    ASSERT_TRUE(pool.run(n, [](void* c, int i) { static_cast<Counts*>(c)->hits[i].fetch_add(1); }, &counts));
  }
  // index i runs in every call with n > i: 2000, 1750, ..., 250 times
  for (int i = 0; i < 8; ++i) EXPECT_EQ(counts.hits[i].load(), 2000 - 250 * i) << i;
}

TEST(CpuThreadPool, RefusesNestedCalls) {
  ThreadPool pool(2);
  std::atomic<int> refused{0};
  std::pair<ThreadPool*, std::atomic<int>*> context(&pool, &refused);
  ASSERT_TRUE(pool.run(
      2,
      [](void* c, int) {
        auto& self = *static_cast<std::pair<ThreadPool*, std::atomic<int>*>*>(c);
        EXPECT_TRUE(ThreadPool::in_task());
        if (!self.first->run(2, [](void*, int) {}, nullptr)) self.second->fetch_add(1);
      },
      &context));
  EXPECT_EQ(refused.load(), 2);
  EXPECT_FALSE(ThreadPool::in_task());
}

TEST(CpuParallelFor, CoversTheRangeOnceFromSeveralCallerThreads) {
  // Callers that find the pool busy run their range themselves; every range is still
  // covered exactly once, and nested calls run serially.
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 200; ++rep) {
        std::vector<int> seen(10007, 0);
        cpu::parallel_for(0, 10007, 64, [&](int64_t b, int64_t e) {
          cpu::parallel_for(b, e, 1, [&](int64_t b2, int64_t e2) {
            for (int64_t i = b2; i < e2; ++i) ++seen[static_cast<size_t>(i)];
          });
        });
        for (int v : seen)
          if (v != 1) wrong.fetch_add(1);
      }
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(CpuParallelFor, CarriesAnExceptionToTheCaller) {
  for (int rep = 0; rep < 50; ++rep)
    EXPECT_THROW(cpu::parallel_for(0, 1000, 1,
                                   [](int64_t, int64_t e) {  // a worker's range, with threads
                                     if (e == 1000) throw std::runtime_error("from the last range");
                                   }),
                 std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int64_t> sum{0};
  cpu::parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
}

// A product large enough to be cut into blocks of rows (tall) or columns (wide) over the
// threads, with both operands in both layouts, against a float64 reference.
TEST(CpuGemmBlocks, TallAndWideProductsInEveryLayout) {
  for (auto [M, K, N] : std::vector<std::array<int64_t, 3>>{{301, 157, 93}, {37, 211, 419}, {130, 97, 81}}) {
    Tensor a = random({M, K}, DType::Float64, 1), b = random({K, N}, DType::Float64, 2);
    std::vector<double> va = values(a), vb = values(b), want(static_cast<size_t>(M * N), 0.0);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) want[m * N + n] += va[m * K + k] * vb[k * N + n];
    Tensor at = a.t().contiguous().t(), bt = b.t().contiguous().t();  // column-major copies
    for (const Tensor& x : {a, at})
      for (const Tensor& y : {b, bt}) {
        EXPECT_TRUE(matches(mm(x, y), {M, N}, DType::Float64, want, 1e-10, 1e-10)) << M << "x" << K << "x" << N;
        EXPECT_TRUE(matches(mm(x.to(DType::Float32), y.to(DType::Float32)), {M, N}, DType::Float32, want, 1e-4, 1e-3));
      }
    // alpha and beta reach every block: 0.5 * input + 2 * a @ b
    Tensor input = random({M, N}, DType::Float64, 3);
    std::vector<double> vi = values(input), scaled(want.size());
    for (size_t i = 0; i < want.size(); ++i) scaled[i] = 0.5 * vi[i] + 2 * want[i];
    EXPECT_TRUE(matches(addmm(input, a, bt, 0.5, 2.0), {M, N}, DType::Float64, scaled, 1e-10, 1e-10));
  }
}

// Results do not depend on the number of threads: matrix products (cut into blocks of rows
// or columns over the threads) and convolution gradients (the batch cut into slices) give
// the same bits with 1 to 4 threads, on the MNIST MLP's shapes and odd ones, in every
// operand layout.
TEST(CpuThreadCount, MatrixProductsAndConvolutionsGiveTheSameBitsWithAnyThreadCount) {
  const int before = get_num_threads();
  const auto bits_with = [](int threads, const std::function<Tensor()>& f) {
    set_num_threads(threads);
    return values(f());
  };
  const std::vector<std::array<int64_t, 3>> shapes = {
      {128, 784, 256}, {128, 256, 128}, {128, 128, 10}, {256, 128, 784}, {784, 128, 256}, {1, 784, 256},
      {5, 1000, 300},  {301, 157, 93},  {37, 211, 419}, {130, 97, 81},   {3, 50, 1000}};
  uint64_t seed = 40;
  for (DType t : {DType::Float32, DType::Float64})
    for (auto [M, K, N] : shapes) {
      const Tensor a = random({M, K}, t, seed++), b = random({K, N}, t, seed++);
      const Tensor at = a.t().contiguous().t(), bt = b.t().contiguous().t();
      for (const Tensor& x : {a, at})
        for (const Tensor& y : {b, bt}) {
          const auto f = [&] { return mm(x, y); };
          const std::vector<double> one = bits_with(1, f);
          for (int threads : {2, 3, 4})
            EXPECT_EQ(bits_with(threads, f), one) << M << "x" << K << "x" << N << " " << dtype_name(t) << " with "
                                                 << threads << " threads";
        }
    }
  // conv2d forward, input and weight gradients (the weight gradient sums over the batch).
  const Tensor x = random({7, 3, 9, 9}, DType::Float32, 50), w = random({5, 3, 3, 3}, DType::Float32, 51);
  const Tensor gy = random({7, 5, 7, 7}, DType::Float32, 52);
  const KernelTable& k = kernels(Device::cpu());
  ConvParams p;
  const auto grad_weight = [&] {
    Tensor gw = empty({5, 3, 3, 3}, DType::Float32);
    k.conv2d_backward_weight(gw, gy, x, p);
    return gw;
  };
  const auto grad_input = [&] {
    Tensor gx = empty({7, 3, 9, 9}, DType::Float32);
    k.conv2d_backward_input(gx, gy, w, p);
    return gx;
  };
  for (const auto& [name, f] : std::vector<std::pair<std::string, std::function<Tensor()>>>{
           {"conv2d", [&] { return conv2d(x, w); }}, {"weight gradient", grad_weight}, {"input gradient", grad_input}}) {
    const std::vector<double> one = bits_with(1, f);
    for (int threads : {2, 3, 4}) EXPECT_EQ(bits_with(threads, f), one) << name << " with " << threads << " threads";
  }
  set_num_threads(before);
}

// Group norm's weight and bias gradients (sums over the samples, in blocks of rows and
// chunks of channels) and the tiled attention kernels give the same bits with 1 to 4
// threads; the gradients also equal a float64 sum taken here. Shapes that take every path:
// a LayerNorm with more rows than 256 blocks of 32 (bigger blocks), a GroupNorm whose groups
// straddle the 64-channel chunks, attention with GQA, a causal mask and odd lengths.
TEST(CpuThreadCount, NormGradientsAndAttentionGiveTheSameBitsWithAnyThreadCount) {
  const int before = get_num_threads();
  const KernelTable& k = kernels(Device::cpu());
  struct NormCase {
    int64_t n, c, s, groups;
  };
  for (const NormCase& nc : {NormCase{9000, 40, 1, 1}, NormCase{5, 130, 7, 2}, NormCase{33, 3, 2, 3}}) {
    const Tensor x = random({nc.n, nc.c, nc.s}, DType::Float32, 60), w = random({nc.c}, DType::Float32, 61);
    const Tensor b = random({nc.c}, DType::Float32, 62), dy = random({nc.n, nc.c, nc.s}, DType::Float32, 63);
    Tensor out = empty({nc.n, nc.c, nc.s}), mean = empty({nc.n * nc.groups}), invstd = empty({nc.n * nc.groups});
    k.group_norm(out, mean, invstd, x, w, b, nc.groups, 1e-5);
    const auto grads = [&] {
      Tensor dx = empty({nc.n, nc.c, nc.s}), dw = empty({nc.c}), db = empty({nc.c});
      k.group_norm_backward(dx, dw, db, dy, x, w, mean, invstd, nc.groups);
      return values(cat({dx.reshape({-1}), dw, db}));
    };
    set_num_threads(1);
    const std::vector<double> one = grads();
    for (int threads : {2, 3, 4}) {
      set_num_threads(threads);
      EXPECT_EQ(grads(), one) << "group norm [" << nc.n << ", " << nc.c << ", " << nc.s << "] with " << threads
                              << " threads";
    }
    const std::vector<double> vx = values(x), vdy = values(dy), vm = values(mean), vi = values(invstd);
    const int64_t cg = nc.c / nc.groups, numel = nc.n * nc.c * nc.s;
    for (int64_t c = 0; c < nc.c; ++c) {
      double sdy = 0, sdyx = 0;
      for (int64_t n = 0; n < nc.n; ++n)
        for (int64_t i = 0; i < nc.s; ++i) {
          const size_t at = static_cast<size_t>((n * nc.c + c) * nc.s + i), r = static_cast<size_t>(n * nc.groups + c / cg);
          sdy += vdy[at];
          sdyx += vdy[at] * (vx[at] - vm[r]) * vi[r];
        }
      EXPECT_NEAR(one[static_cast<size_t>(numel + nc.c + c)], sdy, 1e-4 * (1 + std::abs(sdy))) << "dbias " << c;
      EXPECT_NEAR(one[static_cast<size_t>(numel + c)], sdyx, 1e-4 * (1 + std::abs(sdyx))) << "dweight " << c;
    }
  }
  // Attention forward and backward: q [2, 4, 70, 16], k and v [2, 2, 131, 16] (GQA), causal.
  const Tensor q = random({2, 4, 70, 16}, DType::Float32, 70), kk = random({2, 2, 131, 16}, DType::Float32, 71);
  const Tensor v = random({2, 2, 131, 16}, DType::Float32, 72), dout = random({2, 4, 70, 16}, DType::Float32, 73);
  const auto attention = [&] {
    Tensor out = empty({2, 4, 70, 16}), lse = empty({2, 4, 70});
    AttentionParams p{.scale = 0.25, .causal = true};
    k.attention_forward(out, lse, q, kk, v, Tensor(), p);
    const Tensor delta = sum(mul(dout, out), {-1}).contiguous();
    Tensor dq = empty(q.shape()), dk = empty(kk.shape()), dv = empty(v.shape());
    k.attention_backward(dq, dk, dv, dout, q, kk, v, lse, delta, Tensor(), p);
    return values(cat({out.reshape({-1}), lse.reshape({-1}), dq.reshape({-1}), dk.reshape({-1}), dv.reshape({-1})}));
  };
  set_num_threads(1);
  const std::vector<double> one = attention();
  for (int threads : {2, 3, 4}) {
    set_num_threads(threads);
    EXPECT_EQ(attention(), one) << "attention with " << threads << " threads";
  }
  set_num_threads(before);
}

}  // namespace
}  // namespace wick::test
