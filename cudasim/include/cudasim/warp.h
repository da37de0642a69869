#pragma once
// Warp-level built-ins: shuffles, votes, __match_*_sync, __reduce_*_sync, __syncwarp and
// __activemask. Each is one lane's part in an exchange among the lanes of its warp
// (cudasim/src/warp.cpp), with PTX's rule for `.sync` instructions: an exchange completes
// when every lane of its mask that has not exited has arrived at an exchange of the same
// kind and mask.
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace cudasim {

enum class WarpOp : int {
  Index, Up, Down, Xor,  // shuffles: the value of a source lane
  Ballot, All, Any,      // votes
  Sync,                  // __syncwarp
  MatchAny32, MatchAny64, MatchAll32, MatchAll64,
  ReduceAdd, ReduceMinU, ReduceMinS, ReduceMaxU, ReduceMaxS, ReduceAnd, ReduceOr, ReduceXor,
  // The warp-collective matrix instructions of tensor_core.h: gathers that need all 32 lanes
  // (warp.cpp's warp_gather). Each variant is its own operation, so lanes of one warp at
  // different variants are lanes at different exchanges.
  MmaBF16, MmaF16,
  Ldmatrix1, Ldmatrix2, Ldmatrix4, Ldmatrix1Trans, Ldmatrix2Trans, Ldmatrix4Trans,
};

// One lane's part in a warp-wide exchange: blocks until every lane named in `mask` that has
// not exited arrives at a warp operation of the same kind and mask, then returns this lane's
// result (for shuffles, the bits of the source lane's value; for votes, matches and
// reductions, their result over the lanes that took part).
uint64_t warp_exchange(WarpOp op, unsigned mask, uint64_t value, int arg, int width);

// The lanes of the calling warp that are executing together with the caller.
unsigned active_lanes();

template <class T>
uint64_t to_word(T v) {
  static_assert(std::is_trivially_copyable_v<T> && (sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 2),
                "warp shuffles move 16-, 32- or 64-bit values");
  uint64_t w = 0;
  std::memcpy(&w, &v, sizeof(T));
  return w;
}

template <class T>
T from_word(uint64_t w) {
  T v;
  std::memcpy(&v, &w, sizeof(T));
  return v;
}

// The types __match_any_sync / __match_all_sync accept (CUDA's overload set).
template <class T>
concept MatchValue = std::is_same_v<T, int> || std::is_same_v<T, unsigned> || std::is_same_v<T, long> ||
                     std::is_same_v<T, unsigned long> || std::is_same_v<T, long long> ||
                     std::is_same_v<T, unsigned long long> || std::is_same_v<T, float> || std::is_same_v<T, double>;

}  // namespace cudasim

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  (void)::cudasim::warp_exchange(::cudasim::WarpOp::Sync, mask, 0, 0, 32);
}
inline unsigned __activemask() { return ::cudasim::active_lanes(); }

// PTX's shfl.sync takes the lane or offset modulo 32 (b[4:0]); the clamp for `width` is
// applied in the exchange (warp.cpp).
template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32) {
  return ::cudasim::from_word<T>(::cudasim::warp_exchange(::cudasim::WarpOp::Index, mask, ::cudasim::to_word(var), src_lane, width));
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return ::cudasim::from_word<T>(
      ::cudasim::warp_exchange(::cudasim::WarpOp::Up, mask, ::cudasim::to_word(var), static_cast<int>(delta % 32u), width));
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return ::cudasim::from_word<T>(
      ::cudasim::warp_exchange(::cudasim::WarpOp::Down, mask, ::cudasim::to_word(var), static_cast<int>(delta % 32u), width));
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
  return ::cudasim::from_word<T>(
      ::cudasim::warp_exchange(::cudasim::WarpOp::Xor, mask, ::cudasim::to_word(var), lane_mask & 31, width));
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return static_cast<unsigned>(::cudasim::warp_exchange(::cudasim::WarpOp::Ballot, mask, predicate != 0, 0, 32));
}
inline int __all_sync(unsigned mask, int predicate) {
  return static_cast<int>(::cudasim::warp_exchange(::cudasim::WarpOp::All, mask, predicate != 0, 0, 32));
}
inline int __any_sync(unsigned mask, int predicate) {
  return static_cast<int>(::cudasim::warp_exchange(::cudasim::WarpOp::Any, mask, predicate != 0, 0, 32));
}

template <::cudasim::MatchValue T>
unsigned __match_any_sync(unsigned mask, T value) {
  const auto op = sizeof(T) == 8 ? ::cudasim::WarpOp::MatchAny64 : ::cudasim::WarpOp::MatchAny32;
  return static_cast<unsigned>(::cudasim::warp_exchange(op, mask, ::cudasim::to_word(value), 0, 32));
}
// The mask of the lanes that took part when all of them hold the same value (*pred = 1),
// else 0 (*pred = 0).
template <::cudasim::MatchValue T>
unsigned __match_all_sync(unsigned mask, T value, int* pred) {
  const auto op = sizeof(T) == 8 ? ::cudasim::WarpOp::MatchAll64 : ::cudasim::WarpOp::MatchAll32;
  const auto r = static_cast<unsigned>(::cudasim::warp_exchange(op, mask, ::cudasim::to_word(value), 0, 32));
  *pred = r != 0;
  return r;
}

inline unsigned __reduce_add_sync(unsigned mask, unsigned value) {
  return static_cast<unsigned>(::cudasim::warp_exchange(::cudasim::WarpOp::ReduceAdd, mask, value, 0, 32));
}
inline int __reduce_add_sync(unsigned mask, int value) {
  return static_cast<int>(static_cast<unsigned>(
      ::cudasim::warp_exchange(::cudasim::WarpOp::ReduceAdd, mask, static_cast<unsigned>(value), 0, 32)));
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned value) {
  return static_cast<unsigned>(::cudasim::warp_exchange(::cudasim::WarpOp::ReduceMinU, mask, value, 0, 32));
}
inline int __reduce_min_sync(unsigned mask, int value) {
  return static_cast<int>(static_cast<unsigned>(
      ::cudasim::warp_exchange(::cudasim::WarpOp::ReduceMinS, mask, static_cast<unsigned>(value), 0, 32)));
}
inline unsigned __reduce_max_sync(unsigned mask, unsigned value) {
  return static_cast<unsigned>(::cudasim::warp_exchange(::cudasim::WarpOp::ReduceMaxU, mask, value, 0, 32));
}
inline int __reduce_max_sync(unsigned mask, int value) {
  return static_cast<int>(static_cast<unsigned>(
      ::cudasim::warp_exchange(::cudasim::WarpOp::ReduceMaxS, mask, static_cast<unsigned>(value), 0, 32)));
}
inline unsigned __reduce_and_sync(unsigned mask, unsigned value) {
  return static_cast<unsigned>(::cudasim::warp_exchange(::cudasim::WarpOp::ReduceAnd, mask, value, 0, 32));
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned value) {
  return static_cast<unsigned>(::cudasim::warp_exchange(::cudasim::WarpOp::ReduceOr, mask, value, 0, 32));
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned value) {
  return static_cast<unsigned>(::cudasim::warp_exchange(::cudasim::WarpOp::ReduceXor, mask, value, 0, 32));
}
