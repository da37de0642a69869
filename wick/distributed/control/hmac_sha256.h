#pragma once
// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the control channel's challenge
// handshake: a follower proves it knows the job token without sending it. Written here
// because the build takes no crypto library; checked against the FIPS and RFC 4231 vectors.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace wick::distributed {

using Digest = std::array<uint8_t, 32>;

Digest sha256(const void* data, std::size_t size);
Digest sha256(std::string_view text);
Digest hmac_sha256(std::string_view key, const std::vector<uint8_t>& message);

// Compares without stopping at the first difference, so the time taken does not tell a
// guesser how many leading bytes of a MAC were right.
bool equal_in_constant_time(const uint8_t* a, const uint8_t* b, std::size_t size);

// `size` bytes from the kernel's random source (getrandom); throws wick::Error if it fails.
std::vector<uint8_t> random_bytes(std::size_t size);

}  // namespace wick::distributed
