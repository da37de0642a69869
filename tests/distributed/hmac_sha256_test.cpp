// SHA-256 against FIPS 180-4's examples (and lengths around the padding boundary), HMAC
// against RFC 4231; expected values also checked with Python's hashlib/hmac.
#include <string>

#include <gtest/gtest.h>

#include <wick/distributed/control/hmac_sha256.h>

namespace wick::distributed {
namespace {

std::string hex(const Digest& d) {
  std::string out;
  const char* digits = "0123456789abcdef";
  for (uint8_t b : d) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

TEST(Sha256, FipsExamples) {
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(sha256(std::string(1000000, 'a'))), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, LengthsAroundThePaddingBoundary) {
  // 55 bytes: the length fits the last block; 56: it needs another; 64: a whole block.
  EXPECT_EQ(hex(sha256(std::string(55, 'a'))), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(hex(sha256(std::string(56, 'a'))), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(hex(sha256(std::string(64, 'a'))), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(HmacSha256, Rfc4231) {
  EXPECT_EQ(hex(hmac_sha256(std::string(20, '\x0b'), bytes("Hi There"))),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hex(hmac_sha256("Jefe", bytes("what do ya want for nothing?"))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // A key longer than the block is hashed first (test case 6); one of exactly 64 bytes is not.
  EXPECT_EQ(hex(hmac_sha256(std::string(131, '\xaa'), bytes("Test Using Larger Than Block-Size Key - Hash Key First"))),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hex(hmac_sha256(std::string(64, '\xaa'), bytes("x"))),
            "ce3c639dcb9d8baae5d44c3b8b5e233faab4d1860e07489af5c84f213998bd79");
}

TEST(HmacSha256, ConstantTimeEqualityAndRandomBytes) {
  const uint8_t a[3] = {1, 2, 3}, b[3] = {1, 2, 4};
  EXPECT_TRUE(equal_in_constant_time(a, a, 3));
  EXPECT_FALSE(equal_in_constant_time(a, b, 3));
  EXPECT_TRUE(equal_in_constant_time(a, b, 2));
  auto r1 = random_bytes(32), r2 = random_bytes(32);
  EXPECT_EQ(r1.size(), 32u);
  EXPECT_NE(r1, r2);
}

}  // namespace
}  // namespace wick::distributed
