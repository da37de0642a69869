// The tensor-core instructions (cudasim/tensor_core.h) against the PTX ISA: mma.m16n8k16
// with every lane loading its fragments by the documented layout and the result compared
// with a double-precision product (and a wrong layout shown to fail), ldmatrix's register
// contents lane by lane and its composition into mma fragments, cp.async's groups. Then the
// misuse each must report. (wick's kernels reach these through kernels/cuda/tensor_core.cuh,
// which cudasim may not include: tests/kernels/cuda_attention_test.cpp runs the tensor-core
// attention kernels, built on that seam, against the CPU.)
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <cudasim/tensor_core.h>

#include "kernel_test_support.h"

namespace {

using namespace cudasim_tests;
using cudasim::MmaInput;

// --- host side: 16-bit values and the reference product -------------------------------------

// Bits of a value the type represents exactly (the tests only use such values).
uint16_t bits_of(MmaInput type, float v) {
  if (type == MmaInput::BFloat16) return std::bit_cast<uint16_t>(__float2bfloat16_rn(v));
  return std::bit_cast<uint16_t>(__float2half_rn(v));
}

// Random values exact in the type, spread over several binades so that the order and width of
// the accumulation matter: bf16 has 8 significant bits, f16 11.
float random_value(MmaInput type, std::mt19937& rng) {
  const int bits = type == MmaInput::BFloat16 ? 8 : 11;
  std::uniform_int_distribution<int> mantissa(-(1 << bits) + 1, (1 << bits) - 1), exponent(-bits - 6, -bits + 2);
  return std::ldexp(static_cast<float>(mantissa(rng)), exponent(rng));
}

// One 16x16 @ 16x8 + 16x8 problem per warp: A row-major M x K, B row-major K x N, C and D M x N.
struct Tiles {
  int count = 0;
  std::vector<float> a, b, c;  // the values, exact in the input type (c in float)

  Tiles(MmaInput type, int n, unsigned seed) : count(n), a(n * 256), b(n * 128), c(n * 128) {
    std::mt19937 rng(seed);
    for (float& v : a) v = random_value(type, rng);
    for (float& v : b) v = random_value(type, rng);
    std::uniform_real_distribution<float> u(-4.0f, 4.0f);
    for (float& v : c) v = u(rng);
  }
  std::vector<uint16_t> bits(MmaInput type, const std::vector<float>& v) const {
    std::vector<uint16_t> r(v.size());
    for (size_t i = 0; i < v.size(); ++i) r[i] = bits_of(type, v[i]);
    return r;
  }
};

// Compares D with the product formed in double. A float accumulation of the 17 terms is
// within 17 units of 2^-24 of the sum of their magnitudes; the simulator rounds once, a GPU
// may be anywhere in that bound. Returns how many elements are outside it (each reported
// when `report`).
int mismatches(const Tiles& p, const std::vector<float>& d, bool report) {
  int bad = 0;
  for (int w = 0; w < p.count; ++w)
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        const size_t o = static_cast<size_t>(w) * 128 + m * 8 + n;
        double ref = p.c[o], scale = std::fabs(p.c[o]);
        for (int k = 0; k < 16; ++k) {
          const double term = double(p.a[w * 256 + m * 16 + k]) * p.b[w * 128 + k * 8 + n];
          ref += term;
          scale += std::fabs(term);
        }
        bool ok = false;
        if (std::isnan(ref)) {
          ok = std::isnan(d[o]);
        } else if (std::isinf(ref)) {
          ok = d[o] == ref;
        } else {
          ok = std::fabs(d[o] - ref) <= 17.0 * std::ldexp(scale, -24);
        }
        if (!ok) {
          ++bad;
          if (report)
            ADD_FAILURE() << "tile " << w << " D[" << m << "][" << n << "] = " << d[o] << ", expected " << ref;
        }
      }
  return bad;
}

// --- mma -------------------------------------------------------------------------------------

enum Layout : int {
  kDocumented,    // the PTX ISA's fragments
  kA1A2Swapped,   // a[1] and a[2] exchanged: rows g+8 and columns 8.. confused
  kATransposed,   // A's fragment read from A^T
  kBPairsAlongN,  // B's registers pairing two columns of one k instead of two k of one column
};

__device__ uint32_t pair(uint16_t lo, uint16_t hi) { return uint32_t{lo} | uint32_t{hi} << 16; }

// Warp w of the grid multiplies tile w: every lane loads its fragments by `layout` from global
// memory, accumulates into C's registers (d aliases c, as kernels do) and stores D by C's layout.
__global__ void mma_by_layout(MmaInput type, int layout, const uint16_t* a_all, const uint16_t* b_all,
                              const float* c_all, float* d_all) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int lane = static_cast<int>(threadIdx.x % 32), g = lane / 4, t = lane % 4;
  const uint16_t* A = a_all + warp * 256;
  const uint16_t* B = b_all + warp * 128;
  const float* C = c_all + warp * 128;
  float* D = d_all + warp * 128;
  auto a_at = [&](int m, int k) { return layout == kATransposed ? A[k * 16 + m] : A[m * 16 + k]; };
  uint32_t a[4] = {pair(a_at(g, 2 * t), a_at(g, 2 * t + 1)), pair(a_at(g + 8, 2 * t), a_at(g + 8, 2 * t + 1)),
                   pair(a_at(g, 2 * t + 8), a_at(g, 2 * t + 9)), pair(a_at(g + 8, 2 * t + 8), a_at(g + 8, 2 * t + 9))};
  if (layout == kA1A2Swapped) std::swap(a[1], a[2]);
  uint32_t b[2] = {pair(B[2 * t * 8 + g], B[(2 * t + 1) * 8 + g]),
                   pair(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g])};
  if (layout == kBPairsAlongN) {
    b[0] = pair(B[g * 8 + 2 * t], B[g * 8 + 2 * t + 1]);
    b[1] = pair(B[(g + 8) * 8 + 2 * t], B[(g + 8) * 8 + 2 * t + 1]);
  }
  float c[4] = {C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t], C[(g + 8) * 8 + 2 * t + 1]};
  cudasim::mma_m16n8k16(type, c, a, b, c);
  D[g * 8 + 2 * t] = c[0];
  D[g * 8 + 2 * t + 1] = c[1];
  D[(g + 8) * 8 + 2 * t] = c[2];
  D[(g + 8) * 8 + 2 * t + 1] = c[3];
}

// Runs mma_by_layout on 2 blocks of 2 warps (4 tiles) and returns D.
std::vector<float> run_mma(MmaInput type, Layout layout, const Tiles& p) {
  DeviceBuffer<uint16_t> a(p.a.size()), b(p.b.size());
  DeviceBuffer<float> c(p.c.size()), d(p.c.size());
  a.write(p.bits(type, p.a));
  b.write(p.bits(type, p.b));
  c.write(p.c);
  EXPECT_EQ(launch(mma_by_layout, p.count / 2, 64, 0, type, static_cast<int>(layout), a.ptr, b.ptr, c.ptr, d.ptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  return d.read();
}

TEST(Mma, BFloat16FragmentsByTheDocumentedLayoutGiveTheProduct) {
  const Tiles p(MmaInput::BFloat16, 4, 1);
  EXPECT_EQ(mismatches(p, run_mma(MmaInput::BFloat16, kDocumented, p), true), 0);
}

TEST(Mma, Float16FragmentsByTheDocumentedLayoutGiveTheProduct) {
  const Tiles p(MmaInput::Float16, 4, 2);
  EXPECT_EQ(mismatches(p, run_mma(MmaInput::Float16, kDocumented, p), true), 0);
}

// A NaN in A[3][5] makes row 3 of D NaN; +inf in A[10][2] makes row 10 infinite with the sign
// of B[2][n], and NaN where B[2][n] is 0 (inf * 0); the other rows are untouched.
TEST(Mma, NaNAndInfinityPropagateThroughTheirRow) {
  for (MmaInput type : {MmaInput::BFloat16, MmaInput::Float16}) {
    Tiles p(type, 2, 3);
    p.a[3 * 16 + 5] = NAN;
    p.a[10 * 16 + 2] = INFINITY;
    p.b[2 * 8 + 0] = 0.0f;
    p.b[2 * 8 + 1] = -1.5f;
    p.b[2 * 8 + 2] = 0.25f;
    const auto d = run_mma(type, kDocumented, p);
    EXPECT_EQ(mismatches(p, d, true), 0);
    for (int n = 0; n < 8; ++n) EXPECT_TRUE(std::isnan(d[3 * 8 + n])) << n;
    EXPECT_TRUE(std::isnan(d[10 * 8 + 0])) << "inf * 0";
    EXPECT_EQ(d[10 * 8 + 1], -INFINITY);
    EXPECT_EQ(d[10 * 8 + 2], INFINITY);
    for (int m = 0; m < 16; ++m)
      if (m != 3 && m != 10) EXPECT_TRUE(std::isfinite(d[m * 8 + 4])) << m;
    for (size_t o = 128; o < 256; ++o) EXPECT_TRUE(std::isfinite(d[o])) << "the other warp's tile";
  }
}

// The layout matters: each of these wrong ways of loading the fragments computes something
// other than the product, for nearly every element.
TEST(Mma, AWrongFragmentLayoutGivesAWrongProduct) {
  const Tiles p(MmaInput::BFloat16, 4, 4);
  for (Layout wrong : {kA1A2Swapped, kATransposed, kBPairsAlongN}) {
    const int bad = mismatches(p, run_mma(MmaInput::BFloat16, wrong, p), false);
    EXPECT_GT(bad, 4 * 128 * 9 / 10) << "layout " << wrong << ": only " << bad << " of 512 elements differ";
  }
}

// --- ldmatrix --------------------------------------------------------------------------------

// Element (row j, column k) of matrix i in the tests' shared tiles.
constexpr uint16_t element(int i, int j, int k) { return static_cast<uint16_t>(0x1000 + 64 * i + 8 * j + k); }

// Row j of matrix i lives at row (8i + j) * 5 % 32 of a padded tile (48-byte rows), columns
// 8..15, so that nothing but each lane's address says where a row is. Lanes whose address
// ldmatrix does not read (8 * count and up) give a row of 0xbeef instead.
__global__ void ldmatrix_every_lane(int count, int trans, uint32_t* out) {
  __shared__ __align__(16) uint16_t tile[32][24];
  __shared__ __align__(16) uint16_t decoy[8];
  const int lane = static_cast<int>(threadIdx.x);
  for (int k = 0; k < 24; ++k) tile[lane][k] = 0xdead;
  if (lane < 8) decoy[lane] = 0xbeef;
  __syncthreads();
  const int i = lane / 8, j = lane % 8, row = (8 * i + j) * 5 % 32;
  for (int k = 0; k < 8; ++k) tile[row][8 + k] = element(i, j, k);
  __syncthreads();
  uint32_t r[4] = {0, 0, 0, 0};
  cudasim::ldmatrix(count, trans != 0, r, lane < 8 * count ? static_cast<const void*>(&tile[row][8]) : decoy);
  for (int m = 0; m < 4; ++m) out[lane * 4 + m] = r[m];
}

TEST(Ldmatrix, EveryLaneReceivesItsElementsForX1X2X4WithAndWithoutTrans) {
  for (int count : {1, 2, 4})
    for (int trans : {0, 1}) {
      DeviceBuffer<uint32_t> out(32 * 4);
      ASSERT_EQ(launch(ldmatrix_every_lane, 1, 32, 0, count, trans, out.ptr), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
      const auto h = out.read();
      for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        for (int m = 0; m < 4; ++m) {
          const uint32_t r = h[l * 4 + m];
          if (m >= count) {
            EXPECT_EQ(r, 0u) << "x" << count << ": register " << m << " is not written";
            continue;
          }
          // Register m: row g, elements 2t and 2t+1; with .trans, column g, rows 2t and 2t+1.
          const uint16_t lo = trans ? element(m, 2 * t, g) : element(m, g, 2 * t);
          const uint16_t hi = trans ? element(m, 2 * t + 1, g) : element(m, g, 2 * t + 1);
          EXPECT_EQ(r & 0xffffu, lo) << "x" << count << (trans ? ".trans" : "") << " lane " << l << " register " << m;
          EXPECT_EQ(r >> 16, hi) << "x" << count << (trans ? ".trans" : "") << " lane " << l << " register " << m;
        }
      }
    }
}

// ldmatrix.x4 of the four quarters of a row-major 16x16 tile is A's mma fragment, and
// ldmatrix.x2.trans of a row-major K x N (16 x 8) tile is B's (how flash attention loads V).
__global__ void ldmatrix_gives_mma_fragments(const uint16_t* A, const uint16_t* B, uint32_t* out) {
  __shared__ __align__(16) uint16_t sa[16][16];
  __shared__ __align__(16) uint16_t sb[16][8];
  const int lane = static_cast<int>(threadIdx.x), g = lane / 4, t = lane % 4;
  for (int e = lane; e < 256; e += 32) sa[e / 16][e % 16] = A[e];
  for (int e = lane; e < 128; e += 32) sb[e / 8][e % 8] = B[e];
  __syncthreads();
  uint32_t* o = out + lane * 12;
  uint32_t a[4], b[2];
  cudasim::ldmatrix(4, false, a, &sa[lane % 16][lane / 16 * 8]);
  cudasim::ldmatrix(2, true, b, &sb[lane % 16][0]);
  for (int m = 0; m < 4; ++m) o[m] = a[m];
  o[4] = b[0];
  o[5] = b[1];
  o[6] = pair(A[g * 16 + 2 * t], A[g * 16 + 2 * t + 1]);
  o[7] = pair(A[(g + 8) * 16 + 2 * t], A[(g + 8) * 16 + 2 * t + 1]);
  o[8] = pair(A[g * 16 + 2 * t + 8], A[g * 16 + 2 * t + 9]);
  o[9] = pair(A[(g + 8) * 16 + 2 * t + 8], A[(g + 8) * 16 + 2 * t + 9]);
  o[10] = pair(B[2 * t * 8 + g], B[(2 * t + 1) * 8 + g]);
  o[11] = pair(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g]);
}

TEST(Ldmatrix, X4OfATileIsAsFragmentAndX2TransOfAKByNTileIsBs) {
  std::vector<uint16_t> a(256), b(128);
  for (int e = 0; e < 256; ++e) a[e] = static_cast<uint16_t>(0x3000 + e);
  for (int e = 0; e < 128; ++e) b[e] = static_cast<uint16_t>(0x5000 + e);
  DeviceBuffer<uint16_t> da(256), db(128);
  DeviceBuffer<uint32_t> out(32 * 12);
  da.write(a);
  db.write(b);
  ASSERT_EQ(launch(ldmatrix_gives_mma_fragments, 1, 32, 0, da.ptr, db.ptr, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  for (int l = 0; l < 32; ++l) {
    const uint32_t* o = &h[static_cast<size_t>(l) * 12];
    for (int m = 0; m < 4; ++m) EXPECT_EQ(o[m], o[6 + m]) << "A register " << m << ", lane " << l;
    for (int m = 0; m < 2; ++m) EXPECT_EQ(o[4 + m], o[10 + m]) << "B register " << m << ", lane " << l;
  }
}

// --- cp.async --------------------------------------------------------------------------------

uint4 fill4(unsigned v) {
  uint4 u;
  u.x = u.y = u.z = u.w = v;
  return u;
}
bool same4(uint4 a, uint4 b) { return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w; }

// Each thread copies src[i] over s[i] (which holds 7s) and records s[i] after issuing, after
// committing and after waiting.
__global__ void cp_async_lands_at_the_wait(const uint4* src, uint4* out) {
  __shared__ uint4 s[32];
  const int i = static_cast<int>(threadIdx.x);
  s[i] = fill4(7);
  cudasim::cp_async(&s[i], &src[i], 16, 16);
  out[i] = s[i];
  cudasim::cp_async_commit();
  out[32 + i] = s[i];
  cudasim::cp_async_wait(0);
  out[64 + i] = s[i];
}

TEST(CpAsync, DataLandsAtTheWaitAndEarlierReadsSeeTheOldContents) {
  std::vector<uint4> src(32);
  for (unsigned i = 0; i < 32; ++i) src[i] = fill4(100 + i);
  DeviceBuffer<uint4> dsrc(32), out(96);
  dsrc.write(src);
  ASSERT_EQ(launch(cp_async_lands_at_the_wait, 1, 32, 0, dsrc.ptr, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  for (unsigned i = 0; i < 32; ++i) {
    EXPECT_TRUE(same4(h[i], fill4(7))) << "issued, not committed: old contents, thread " << i;
    EXPECT_TRUE(same4(h[32 + i], fill4(7))) << "committed, not waited for: old contents, thread " << i;
    EXPECT_TRUE(same4(h[64 + i], fill4(100 + i))) << "after the wait: the copy, thread " << i;
  }
}

// Two groups, then wait_group 1 (only the older completes) and wait_group 0; a copy issued and
// never committed is not completed by wait_group 0 until it is committed.
__global__ void cp_async_groups(const uint4* src, uint4* out) {
  __shared__ uint4 s[3];
  for (uint4& v : s) v = fill4(7);
  cudasim::cp_async(&s[0], &src[0], 16, 16);
  cudasim::cp_async_commit();
  cudasim::cp_async(&s[1], &src[1], 16, 16);
  cudasim::cp_async_commit();
  cudasim::cp_async(&s[2], &src[2], 16, 16);  // not committed yet
  cudasim::cp_async_wait(1);
  out[0] = s[0];
  out[1] = s[1];
  cudasim::cp_async_wait(0);
  out[2] = s[1];
  out[3] = s[2];
  cudasim::cp_async_commit();
  cudasim::cp_async_wait(0);
  out[4] = s[2];
}

TEST(CpAsync, WaitGroupCompletesTheOldestGroupsAndNeverUncommittedCopies) {
  DeviceBuffer<uint4> src(3), out(5);
  src.write({fill4(1), fill4(2), fill4(3)});
  ASSERT_EQ(launch(cp_async_groups, 1, 1, 0, src.ptr, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  EXPECT_TRUE(same4(h[0], fill4(1))) << "wait_group 1: the older group has landed";
  EXPECT_TRUE(same4(h[1], fill4(7))) << "wait_group 1: the newer group may still be pending";
  EXPECT_TRUE(same4(h[2], fill4(2))) << "wait_group 0: every committed group has landed";
  EXPECT_TRUE(same4(h[3], fill4(7))) << "wait_group 0 does not complete an uncommitted copy";
  EXPECT_TRUE(same4(h[4], fill4(3))) << "once committed, it does";
}

// src-size 0 writes zeros without reading src (an address that faults if read); a partial
// src-size copies that many bytes and zero-fills the rest; 4- and 8-byte copies.
__global__ void cp_async_zero_fill(const uint4* src, uint4* out) {
  __shared__ uint4 s[4];
  for (uint4& v : s) v = fill4(0xffffffffu);
  const void* unreadable = reinterpret_cast<const void*>(uintptr_t{16});
  cudasim::cp_async(&s[0], unreadable, 16, 0);
  cudasim::cp_async(&s[1], &src[0], 16, 8);
  cudasim::cp_async(&s[2], &src[0], 8, 8);
  cudasim::cp_async(&s[3].y, &src[0].y, 4, 4);
  cudasim::cp_async_commit();
  cudasim::cp_async_wait(0);
  for (int k = 0; k < 4; ++k) out[k] = s[k];
}

TEST(CpAsync, SourceSizeZeroFillsAndSmallCopies) {
  DeviceBuffer<uint4> src(1), out(4);
  uint4 v;
  v.x = 1;
  v.y = 2;
  v.z = 3;
  v.w = 4;
  src.write({v});
  ASSERT_EQ(launch(cp_async_zero_fill, 1, 1, 0, src.ptr, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  EXPECT_TRUE(same4(h[0], fill4(0))) << "src-size 0: 16 zero bytes";
  EXPECT_TRUE(h[1].x == 1 && h[1].y == 2 && h[1].z == 0 && h[1].w == 0) << "src-size 8 of 16";
  EXPECT_TRUE(h[2].x == 1 && h[2].y == 2 && h[2].z == ~0u && h[2].w == ~0u) << "an 8-byte copy";
  EXPECT_TRUE(h[3].x == ~0u && h[3].y == 2 && h[3].z == ~0u && h[3].w == ~0u) << "a 4-byte copy";
}

// Threads 0 and 1 each copy into their own slot; only thread 1 waits before the barrier, so
// thread 0's copy is still pending: one thread's wait completes its own copies only.
__global__ void cp_async_per_thread(const uint4* src, uint4* out) {
  __shared__ uint4 s[2];
  const int i = static_cast<int>(threadIdx.x);
  s[i] = fill4(7);
  __syncthreads();
  cudasim::cp_async(&s[i], &src[i], 16, 16);
  cudasim::cp_async_commit();
  if (i == 1) cudasim::cp_async_wait(0);
  __syncthreads();
  if (i == 1) {
    out[0] = s[0];
    out[1] = s[1];
  }
  __syncthreads();
  if (i == 0) cudasim::cp_async_wait(0);
  __syncthreads();
  if (i == 1) out[2] = s[0];
}

TEST(CpAsync, EachThreadsWaitCompletesItsOwnCopiesOnly) {
  DeviceBuffer<uint4> src(2), out(3);
  src.write({fill4(10), fill4(11)});
  ASSERT_EQ(launch(cp_async_per_thread, 1, 2, 0, src.ptr, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  EXPECT_TRUE(same4(h[0], fill4(7))) << "thread 1's wait left thread 0's copy pending";
  EXPECT_TRUE(same4(h[1], fill4(11))) << "thread 1's own copy landed";
  EXPECT_TRUE(same4(h[2], fill4(10))) << "thread 0's copy lands at its own wait";
}

// Odd blocks issue a copy into static shared memory and exit without waiting; even blocks,
// which may run next on the same host thread (so with the same static shared memory), wait
// for their own (no) copies and must find their memory as they left it.
__global__ void cp_async_left_pending(const uint4* src, unsigned* out) {
  __shared__ uint4 s;
  s = fill4(7);
  if (blockIdx.x % 2) {
    cudasim::cp_async(&s, src, 16, 16);
    cudasim::cp_async_commit();
    return;
  }
  cudasim::cp_async_wait(0);
  out[blockIdx.x / 2] = s.x;
}

TEST(CpAsync, PendingCopiesEndWithTheirBlock) {
  DeviceBuffer<uint4> src(1);
  DeviceBuffer<unsigned> out(64);
  src.write({fill4(1)});
  ASSERT_EQ(launch(cp_async_left_pending, 128, 1, 0, src.ptr, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  for (unsigned v : out.read()) EXPECT_EQ(v, 7u);
}

// --- misuse ----------------------------------------------------------------------------------

using TensorCoreMisuse = OnDeviceOne;

__global__ void mma_in_half_a_warp(float* out) {
  const uint32_t a[4] = {}, b[2] = {};
  float d[4] = {};
  if (threadIdx.x < 16) cudasim::mma_m16n8k16(MmaInput::BFloat16, d, a, b, d);
  out[threadIdx.x] = d[0];
}

TEST_F(TensorCoreMisuse, MmaByOnlySomeLanesOfTheWarp) {
  DeviceBuffer<float> out(32);
  const std::string d = misuse(mma_in_half_a_warp, 1, 32, out.ptr);
  EXPECT_NE(d.find("lanes 0xffff0000 of warp 0 exited without reaching mma.sync.aligned.m16n8k16"), std::string::npos)
      << d;
}

__global__ void mma_against_syncwarp(float* out) {
  const uint32_t a[4] = {}, b[2] = {};
  float d[4] = {};
  if (threadIdx.x < 16) {
    cudasim::mma_m16n8k16(MmaInput::Float16, d, a, b, d);
  } else {
    __syncwarp();
  }
  out[threadIdx.x] = d[0];
}

TEST_F(TensorCoreMisuse, MmaWhileOtherLanesWaitInADifferentExchange) {
  DeviceBuffer<float> out(32);
  const std::string d = misuse(mma_against_syncwarp, 1, 32, out.ptr);
  EXPECT_NE(d.find("wait for each other"), std::string::npos) << d;
  EXPECT_NE(d.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), std::string::npos) << d;
}

__global__ void mma_in_every_thread(float* out) {
  const uint32_t a[4] = {}, b[2] = {};
  float d[4] = {};
  cudasim::mma_m16n8k16(MmaInput::BFloat16, d, a, b, d);
  out[threadIdx.x] = d[0];
}

TEST_F(TensorCoreMisuse, MmaInAPartialWarp) {
  DeviceBuffer<float> out(48);
  const std::string d = misuse(mma_in_every_thread, 1, 48, out.ptr);
  EXPECT_NE(d.find("which has only 16 threads"), std::string::npos) << d;
}

__global__ void ldmatrix_misaligned(uint32_t* out) {
  __shared__ __align__(16) uint16_t tile[8][16];
  const int lane = static_cast<int>(threadIdx.x);
  const unsigned char* row = reinterpret_cast<const unsigned char*>(&tile[lane % 8][0]) + (lane == 3 ? 8 : 0);
  uint32_t r[1] = {0};
  cudasim::ldmatrix(1, false, r, row);
  out[lane] = r[0];
}

TEST_F(TensorCoreMisuse, LdmatrixWithAMisalignedRowAddress) {
  DeviceBuffer<uint32_t> out(32);
  const std::string d = misuse(cudaErrorMisalignedAddress, ldmatrix_misaligned, 1, 32, out.ptr);
  EXPECT_NE(d.find("(lane 3) gives ldmatrix.x1 the row address"), std::string::npos) << d;
  EXPECT_STREQ(cudaGetErrorName(cudaErrorMisalignedAddress), "cudaErrorMisalignedAddress");
  EXPECT_NE(d.find("not 16-byte aligned"), std::string::npos) << d;
}

__global__ void cp_async_misaligned(const uint4* src) {
  __shared__ uint4 s[2];
  cudasim::cp_async(reinterpret_cast<unsigned char*>(s) + 8, src, 16, 16);
}

TEST_F(TensorCoreMisuse, CpAsyncToAMisalignedAddress) {
  DeviceBuffer<uint4> src(1);
  const std::string d = misuse(cudaErrorMisalignedAddress, cp_async_misaligned, 1, 1, src.ptr);
  EXPECT_NE(d.find("not 16-byte aligned"), std::string::npos) << d;
}

// ldmatrix and cp.async take shared-window addresses: device memory given instead is an
// illegal address on a GPU, not a read of that memory.
__global__ void ldmatrix_from_global(const uint16_t* rows, uint32_t* out) {
  const int lane = static_cast<int>(threadIdx.x);
  uint32_t r[1] = {0};
  cudasim::ldmatrix(1, false, r, rows + 8 * (lane % 8));
  out[lane] = r[0];
}

TEST_F(TensorCoreMisuse, LdmatrixFromDeviceMemory) {
  DeviceBuffer<uint16_t> rows(64);
  DeviceBuffer<uint32_t> out(32);
  const std::string d = misuse(cudaErrorIllegalAddress, ldmatrix_from_global, 1, 32, rows.ptr, out.ptr);
  EXPECT_NE(d.find("(lane 0) gives ldmatrix.x1 the row address"), std::string::npos) << d;
  EXPECT_NE(d.find("not in the block's shared memory"), std::string::npos) << d;
}

__global__ void cp_async_to_global(const uint4* src, uint4* dst) {
  cudasim::cp_async(dst, src, 16, 16);
  cudasim::cp_async_commit();
  cudasim::cp_async_wait(0);
}

// A dynamic shared memory destination is in shared memory.
__global__ void cp_async_to_dynamic(const uint4* src, uint4* out) {
  uint4* s = cudasim::dynamic_shared<uint4>();
  cudasim::cp_async(s, src, 16, 16);
  cudasim::cp_async_commit();
  cudasim::cp_async_wait(0);
  *out = *s;
}

TEST_F(TensorCoreMisuse, CpAsyncToDeviceMemory) {
  DeviceBuffer<uint4> ok_src(1), ok_out(1);
  ok_src.write({fill4(5)});
  ASSERT_EQ(launch(cp_async_to_dynamic, 1, 1, sizeof(uint4), ok_src.ptr, ok_out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  EXPECT_TRUE(same4(ok_out.read()[0], fill4(5)));
  DeviceBuffer<uint4> src(1), dst(1);
  const std::string d = misuse(cudaErrorIllegalAddress, cp_async_to_global, 1, 1, src.ptr, dst.ptr);
  EXPECT_NE(d.find("not in the block's shared memory"), std::string::npos) << d;
}

}  // namespace
