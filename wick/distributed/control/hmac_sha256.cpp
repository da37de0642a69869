#include <wick/distributed/control/hmac_sha256.h>

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include <wick/tensor/error.h>

namespace wick::distributed {
namespace {

// The first 32 bits of the fractional parts of the cube roots of the first 64 primes.
constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress(uint32_t state[8], const uint8_t block[64]) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = uint32_t{block[4 * i]} << 24 | uint32_t{block[4 * i + 1]} << 16 | uint32_t{block[4 * i + 2]} << 8 |
           uint32_t{block[4 * i + 3]};
  }
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state[0] += a, state[1] += b, state[2] += c, state[3] += d;
  state[4] += e, state[5] += f, state[6] += g, state[7] += h;
}

}  // namespace

Digest sha256(const void* data, std::size_t size) {
  uint32_t state[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* bytes = static_cast<const uint8_t*>(data);
  std::size_t full = size / 64 * 64;
  for (std::size_t at = 0; at < full; at += 64) compress(state, bytes + at);
  // The tail, a 1 bit, zeros, and the length in bits as a big-endian 64-bit number.
  uint8_t tail[128] = {};
  std::size_t rest = size - full;
  if (rest > 0) std::memcpy(tail, bytes + full, rest);
  tail[rest] = 0x80;
  std::size_t tail_size = rest + 1 + 8 <= 64 ? 64 : 128;
  uint64_t bits = static_cast<uint64_t>(size) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_size - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
  for (std::size_t at = 0; at < tail_size; at += 64) compress(state, tail + at);
  Digest out;
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) out[static_cast<std::size_t>(4 * i + j)] = static_cast<uint8_t>(state[i] >> (24 - 8 * j));
  }
  return out;
}

Digest sha256(std::string_view text) { return sha256(text.data(), text.size()); }

Digest hmac_sha256(std::string_view key, const std::vector<uint8_t>& message) {
  // Keys longer than a block are hashed first; shorter ones are padded with zeros.
  uint8_t block[64] = {};
  if (key.size() > 64) {
    Digest k = sha256(key);
    std::memcpy(block, k.data(), k.size());
  } else if (!key.empty()) {
    std::memcpy(block, key.data(), key.size());
  }
  std::vector<uint8_t> inner(64 + message.size());
  for (int i = 0; i < 64; ++i) inner[static_cast<std::size_t>(i)] = block[i] ^ 0x36;
  std::copy(message.begin(), message.end(), inner.begin() + 64);
  Digest inner_hash = sha256(inner.data(), inner.size());
  uint8_t outer[64 + 32];
  for (int i = 0; i < 64; ++i) outer[i] = block[i] ^ 0x5c;
  std::memcpy(outer + 64, inner_hash.data(), inner_hash.size());
  return sha256(outer, sizeof outer);
}

bool equal_in_constant_time(const uint8_t* a, const uint8_t* b, std::size_t size) {
  uint8_t difference = 0;
  for (std::size_t i = 0; i < size; ++i) difference |= static_cast<uint8_t>(a[i] ^ b[i]);
  return difference == 0;
}

std::vector<uint8_t> random_bytes(std::size_t size) {
  std::vector<uint8_t> out(size);
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::getrandom(out.data() + done, size - done, 0);
    if (n < 0 && errno == EINTR) continue;
    WICK_CHECK(n > 0, "random_bytes: getrandom failed: ", std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  return out;
}

}  // namespace wick::distributed
