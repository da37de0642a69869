#pragma once
// CUDA's integer and bit intrinsics, min/max and the bit casts, with the results the CUDA
// Math API documents (the libdevice guide for __byte_perm and __funnelshift_*).
#include <bit>
#include <cstdint>
#include <type_traits>

// CUDA's min and max of any two arithmetic values, in their common type.
template <class A, class B>
  requires std::is_arithmetic_v<A> && std::is_arithmetic_v<B>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
}
template <class A, class B>
  requires std::is_arithmetic_v<A> && std::is_arithmetic_v<B>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}

inline int __popc(unsigned x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return std::countl_zero(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1; }
inline int __ffsll(long long x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned long long>(x)) + 1; }

inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned long long __brevll(unsigned long long x) {
  return static_cast<unsigned long long>(__brev(static_cast<unsigned>(x))) << 32 | __brev(static_cast<unsigned>(x >> 32));
}

// Byte n of the result is byte s[4n+2:4n] of the eight bytes {y, x} (x holds bytes 0-3);
// the selector's fourth bit and upper 16 bits are ignored.
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t bytes = uint64_t{y} << 32 | x;
  unsigned r = 0;
  for (int n = 0; n < 4; ++n) r |= static_cast<unsigned>((bytes >> (8 * ((s >> (4 * n)) & 7u))) & 0xffu) << (8 * n);
  return r;
}

// hi:lo shifted by `shift` (modulo 32, or clamped to 32 for the _c forms); _l keeps the upper
// 32 bits, _r the lower.
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  return static_cast<unsigned>(((uint64_t{hi} << 32 | lo) << (shift & 31u)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned n = shift < 32u ? shift : 32u;
  return static_cast<unsigned>(((uint64_t{hi} << 32 | lo) << n) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  return static_cast<unsigned>((uint64_t{hi} << 32 | lo) >> (shift & 31u));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned n = shift < 32u ? shift : 32u;
  return static_cast<unsigned>((uint64_t{hi} << 32 | lo) >> n);
}

// The upper halves of full-width products.
inline unsigned __umulhi(unsigned a, unsigned b) { return static_cast<unsigned>((uint64_t{a} * b) >> 32); }
inline int __mulhi(int a, int b) { return static_cast<int>((int64_t{a} * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline long long __mul64hi(long long a, long long b) {
  return static_cast<long long>((static_cast<__int128>(a) * b) >> 64);
}

inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline int __float_as_int(float f) { return std::bit_cast<int>(f); }
inline float __int_as_float(int i) { return std::bit_cast<float>(i); }
inline long long __double_as_longlong(double d) { return std::bit_cast<long long>(d); }
inline double __longlong_as_double(long long l) { return std::bit_cast<double>(l); }
