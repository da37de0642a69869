// read_idx on the gzip compression of the fuzz input: the mutations land on the IDX bytes
// inside a valid gzip stream (mutating compressed bytes mostly breaks the CRC), so this
// exercises the IDX parser behind the inflating reader. The first input byte picks how many
// gzip members the data is split into, to cover concatenated members.
#include <zlib.h>

#include <cstdlib>
#include <vector>

#include <wick/data/idx.h>
#include <wick/tensor/error.h>

#include "fuzz_input.h"

namespace {

void append_gzip(std::vector<uint8_t>& out, const uint8_t* data, size_t size) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  const size_t at = out.size();
  out.resize(at + deflateBound(&zs, static_cast<uLong>(size)));
  zs.next_in = const_cast<Bytef*>(data);
  zs.avail_in = static_cast<uInt>(size);
  zs.next_out = out.data() + at;
  zs.avail_out = static_cast<uInt>(out.size() - at);
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(out.size() - zs.avail_out);
  deflateEnd(&zs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t members = 1 + data[0] % 3;
  ++data;
  --size;
  std::vector<uint8_t> gz;
  for (size_t m = 0; m < members; ++m) {
    size_t begin = size * m / members, end = size * (m + 1) / members;
    append_gzip(gz, data + begin, end - begin);
  }
  try {
    wick::Tensor t = wick::read_idx(wick_fuzz::input_path(gz.data(), gz.size()));
    (void)t.numel();
  } catch (const wick::Error&) {
  }
  return 0;
}
