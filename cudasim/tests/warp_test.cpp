// Warp exchanges as PTX defines them for the `.sync` instructions: an exchange completes when
// every lane of its mask that has not exited has arrived at one with the same operation and
// mask. So exchanges are told apart by mask (two in a row with disjoint or overlapping masks
// are two exchanges), lanes that exited or that a partial warp does not have are not waited
// for, and only reading such a lane is an error. Also: the lane and offset operands taken
// modulo 32, votes, matches and reductions.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernel_test_support.h"

namespace {

using namespace cudasim_tests;

constexpr unsigned kFull = 0xffffffffu;

// Lanes 0 and 2 exchange under mask 0x5, then lanes 0 and 1 under mask 0x3: lane 1 reaches
// its exchange while lane 0 is still in the first.
__global__ void disjoint_then_overlapping(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  int v = lane * 10;
  if (lane == 0 || lane == 2) v = __shfl_sync(0x5u, v, 2);
  if (lane < 2) v = __shfl_xor_sync(0x3u, v, 1);
  out[lane] = v;
}

TEST(Warp, ExchangesAreMatchedByMaskNotByWarp) {
  DeviceBuffer<int> out(32);
  ASSERT_EQ(launch(disjoint_then_overlapping, 1, 32, 0, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  EXPECT_EQ(h[0], 10) << "lane 0 took lane 2's 20, then swapped with lane 1";
  EXPECT_EQ(h[1], 20);
  EXPECT_EQ(h[2], 20);
  for (int l = 3; l < 32; ++l) EXPECT_EQ(h[l], l * 10);
}

// The same in the other order, and two branches that reach the same exchange from different
// call sites (allowed since Volta).
__global__ void overlapping_then_divergent(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  const int v = lane + 1;
  int a = 0, b = 0;
  if (lane < 2) a = __shfl_sync(0x3u, v, 1);
  if (lane == 0 || lane == 2) b = __shfl_sync(0x5u, v, 0);
  int c = 0;
  if (lane % 2) {
    c = __shfl_sync(kFull, v, 5);
  } else {
    c = __shfl_sync(kFull, v, 5) + 1000;
  }
  out[lane] = a * 100 + b + c * 10000;
}

TEST(Warp, OverlappingMasksInTurnAndOneExchangeFromTwoCallSites) {
  DeviceBuffer<int> out(32);
  ASSERT_EQ(launch(overlapping_then_divergent, 1, 32, 0, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  for (int l = 0; l < 32; ++l) {
    const int a = l < 2 ? 2 : 0, b = (l == 0 || l == 2) ? 1 : 0, c = 6 + (l % 2 ? 0 : 1000);
    EXPECT_EQ(h[l], a * 100 + b + c * 10000) << "lane " << l;
  }
}

// Lanes 20-31 have returned; the full-mask exchanges go on among the others.
__global__ void exchanges_after_exit(unsigned* out) {
  const unsigned lane = threadIdx.x;
  if (lane >= 20) return;
  out[lane * 4 + 0] = __ballot_sync(kFull, lane & 1u);
  out[lane * 4 + 1] = static_cast<unsigned>(__shfl_xor_sync(kFull, static_cast<int>(lane), 1));
  out[lane * 4 + 2] = static_cast<unsigned>(__all_sync(kFull, lane < 20));
  __syncwarp();
  out[lane * 4 + 3] = __reduce_add_sync(kFull, lane);
}

TEST(Warp, FullMasksAfterSomeLanesExited) {
  DeviceBuffer<unsigned> out(32 * 4);
  ASSERT_EQ(launch(exchanges_after_exit, 1, 32, 0, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  for (unsigned l = 0; l < 20; ++l) {
    EXPECT_EQ(h[l * 4 + 0], 0xaaaaau) << "the odd lanes below 20";
    EXPECT_EQ(h[l * 4 + 1], l ^ 1u);
    EXPECT_EQ(h[l * 4 + 2], 1u);
    EXPECT_EQ(h[l * 4 + 3], 190u) << "0 + 1 + ... + 19";
  }
}

// A block of 48 threads: its second warp has lanes 0-15 only, and full masks are the usual
// way to write the exchanges there.
__global__ void partial_warp(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  const unsigned ballot = __ballot_sync(kFull, 1);
  const int partner = __shfl_xor_sync(kFull, t, 1);
  __syncwarp();
  int sum = partner;
  for (int d = 8; d > 0; d /= 2) sum += __shfl_xor_sync(kFull, sum, d);
  out[t * 3 + 0] = static_cast<int>(ballot);
  out[t * 3 + 1] = partner;
  out[t * 3 + 2] = sum;
}

TEST(Warp, FullMasksInAPartialWarp) {
  DeviceBuffer<int> out(48 * 3);
  ASSERT_EQ(launch(partial_warp, 1, 48, 0, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  for (int t = 0; t < 48; ++t) {
    const int group = t / 16 * 16;
    EXPECT_EQ(static_cast<unsigned>(h[t * 3]), t < 32 ? kFull : 0xffffu) << t;
    EXPECT_EQ(h[t * 3 + 1], t ^ 1) << t;
    EXPECT_EQ(h[t * 3 + 2], 16 * group + 120) << t;
  }
}

// PTX takes a shuffle's lane or offset operand modulo 32.
__global__ void operands_modulo_32(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  const int v = 100 + lane;
  int* o = out + lane * 6;
  o[0] = __shfl_down_sync(kFull, v, 33u);
  o[1] = __shfl_up_sync(kFull, v, 32u);
  o[2] = __shfl_down_sync(kFull, v, 0xffffffffu);
  o[3] = __shfl_up_sync(kFull, v, 0xffffffffu);
  o[4] = __shfl_xor_sync(kFull, v, 33);
  o[5] = __shfl_sync(kFull, v, -1);
}

TEST(Warp, LaneAndOffsetOperandsCountModulo32) {
  DeviceBuffer<int> out(32 * 6);
  ASSERT_EQ(launch(operands_modulo_32, 1, 32, 0, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  for (int l = 0; l < 32; ++l) {
    const int* o = &h[static_cast<size_t>(l) * 6];
    EXPECT_EQ(o[0], 100 + (l + 1 < 32 ? l + 1 : l)) << "delta 33 is 1, lane " << l;
    EXPECT_EQ(o[1], 100 + l) << "delta 32 is 0, lane " << l;
    EXPECT_EQ(o[2], 100 + (l == 0 ? 31 : l)) << "delta 2^32-1 is 31, lane " << l;
    EXPECT_EQ(o[3], 100 + (l == 31 ? 0 : l)) << "delta 2^32-1 is 31, lane " << l;
    EXPECT_EQ(o[4], 100 + (l ^ 1)) << "lane mask 33 is 1, lane " << l;
    EXPECT_EQ(o[5], 131) << "source lane -1 is 31, lane " << l;
  }
}

__global__ void matches(unsigned* out) {
  const unsigned lane = threadIdx.x;
  unsigned* o = out + lane * 6;
  o[0] = __match_any_sync(kFull, static_cast<int>(lane % 3));
  o[1] = __match_any_sync(kFull, static_cast<long long>(lane / 8) << 40);
  o[2] = __match_any_sync(kFull, lane < 16 ? 0.0f : -0.0f);  // compared bit for bit
  int pred = -1;
  o[3] = __match_all_sync(kFull, 7u, &pred);
  o[4] = static_cast<unsigned>(pred);
  o[5] = __match_all_sync(kFull, lane == 3 ? 1.0 : 2.0, &pred) | (static_cast<unsigned>(pred) << 31);
}

TEST(Warp, MatchAnyAndMatchAll) {
  DeviceBuffer<unsigned> out(32 * 6);
  ASSERT_EQ(launch(matches, 1, 32, 0, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  for (unsigned l = 0; l < 32; ++l) {
    unsigned same_residue = 0;
    for (unsigned m = 0; m < 32; ++m) same_residue |= (m % 3 == l % 3 ? 1u : 0u) << m;
    const unsigned* o = &h[l * 6];
    EXPECT_EQ(o[0], same_residue) << l;
    EXPECT_EQ(o[1], 0xffu << (l / 8 * 8)) << l;
    EXPECT_EQ(o[2], l < 16 ? 0xffffu : 0xffff0000u) << l;
    EXPECT_EQ(o[3], kFull);
    EXPECT_EQ(o[4], 1u);
    EXPECT_EQ(o[5], 0u) << "not all equal: 0 and *pred = 0";
  }
}

__global__ void reductions(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  const unsigned u = 1u << (lane % 8);
  int* o = out + lane * 8;
  o[0] = __reduce_add_sync(kFull, lane - 10);
  o[1] = __reduce_min_sync(kFull, lane - 10);
  o[2] = __reduce_max_sync(kFull, 5 - lane);
  o[3] = static_cast<int>(__reduce_min_sync(kFull, static_cast<unsigned>(lane - 10)));  // -10 is huge unsigned
  o[4] = static_cast<int>(__reduce_max_sync(kFull, static_cast<unsigned>(lane - 10)));
  o[5] = static_cast<int>(__reduce_and_sync(kFull, u | 0x100u));
  o[6] = static_cast<int>(__reduce_or_sync(kFull, u));
  o[7] = static_cast<int>(__reduce_xor_sync(0x0000000fu << (lane / 4 * 4), static_cast<unsigned>(lane)));
}

TEST(Warp, Reductions) {
  DeviceBuffer<int> out(32 * 8);
  ASSERT_EQ(launch(reductions, 1, 32, 0, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  for (int l = 0; l < 32; ++l) {
    const int* o = &h[static_cast<size_t>(l) * 8];
    EXPECT_EQ(o[0], 496 - 320);
    EXPECT_EQ(o[1], -10);
    EXPECT_EQ(o[2], 5);
    EXPECT_EQ(o[3], 0) << "lane 10's 0 is the least unsigned value";
    EXPECT_EQ(o[4], -1) << "lane 9's -1 is the greatest unsigned value";
    EXPECT_EQ(o[5], 0x100);
    EXPECT_EQ(o[6], 0xff);
    const int base = l / 4 * 4;
    EXPECT_EQ(o[7], base ^ (base + 1) ^ (base + 2) ^ (base + 3)) << "four exchanges of four lanes each, lane " << l;
  }
}

// The calling lane only: between synchronising calls the simulator runs one lane at a time,
// and CUDA promises no more. Counting with it (the usual aggregation) stays right.
__global__ void aggregate_with_activemask(unsigned* count, unsigned* masks) {
  const unsigned lane = threadIdx.x % 32;
  masks[threadIdx.x] = __activemask();
  if (lane % 3 == 0) {
    const unsigned active = __activemask();
    const int leader = __ffs(static_cast<int>(active)) - 1;
    if (static_cast<int>(lane) == leader) atomicAdd(count, static_cast<unsigned>(__popc(active)));
  }
}

TEST(Warp, ActiveMaskIsTheCallingLaneAndAggregationWithItCountsRight) {
  DeviceBuffer<unsigned> count(1), masks(64);
  ASSERT_EQ(cudaMemset(count.ptr, 0, sizeof(unsigned)), cudaSuccess);
  ASSERT_EQ(launch(aggregate_with_activemask, 1, 64, 0, count.ptr, masks.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  EXPECT_EQ(count.read()[0], 22u) << "lanes 0, 3, ..., 30 of two warps";
  const auto m = masks.read();
  for (unsigned t = 0; t < 64; ++t) EXPECT_EQ(m[t], 1u << (t % 32));
}

// --- misuse ---------------------------------------------------------------------------------

using WarpMisuse = OnDeviceOne;

__global__ void waiting_for_each_other(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  int v = lane;
  if (lane == 0) v = __shfl_sync(0x3u, v, 1);
  if (lane == 1) v = __shfl_xor_sync(0x3u, v, 1);
  out[lane] = v;
}

TEST_F(WarpMisuse, TwoLanesWaitingForEachOtherInDifferentExchanges) {
  DeviceBuffer<int> out(32);
  const std::string d = misuse(waiting_for_each_other, 1, 32, out.ptr);
  EXPECT_NE(d.find("wait for each other"), std::string::npos) << d;
  EXPECT_NE(d.find("__shfl_xor_sync(mask 0x3)"), std::string::npos) << d;
}

__global__ void read_after_exit(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  if (lane >= 16) return;
  out[lane] = __shfl_xor_sync(kFull, lane, 16);
}

TEST_F(WarpMisuse, ReadingALaneThatExited) {
  DeviceBuffer<int> out(32);
  const std::string d = misuse(read_after_exit, 1, 32, out.ptr);
  EXPECT_NE(d.find("reads lane 16"), std::string::npos) << d;
  EXPECT_NE(d.find("has exited"), std::string::npos) << d;
}

// The pattern CUDA's programming guide calls incorrect: __activemask() as the mask of a
// shuffle in divergent code, assuming the lanes that took the branch run together.
__global__ void activemask_as_shuffle_mask(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  int v = lane;
  if (lane < 16) v = __shfl_down_sync(__activemask(), v, 1);
  out[lane] = v;
}

TEST_F(WarpMisuse, ActiveMaskAsTheMaskOfAShuffle) {
  DeviceBuffer<int> out(32);
  const std::string d = misuse(activemask_as_shuffle_mask, 1, 32, out.ptr);
  EXPECT_NE(d.find("which is not in the mask"), std::string::npos) << d;
}

}  // namespace
