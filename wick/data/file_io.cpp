#include <wick/data/file_io.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>

#include <wick/tensor/atomic_file.h>
#include <wick/tensor/error.h>
#include <wick/tensor/out_of_memory.h>

namespace wick {

namespace {

bool is_gzip(const std::vector<uint8_t>& bytes) { return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b; }

// Makes room in `bytes` for `need` bytes: capacity doubles, but not past `most` when that
// is above `need`. A failed allocation is a wick::Error naming the file, the size and `what`
// the bytes are (issue 48, item 6).
void grow(std::vector<uint8_t>& bytes, size_t need, uint64_t most, const std::string& path, const char* op,
          const std::function<std::string()>& what) {
  if (need <= bytes.capacity()) return;
  uint64_t want = uint64_t{2} * bytes.capacity();
  if (most >= need) want = std::min<uint64_t>(want, most);
  want = std::max<uint64_t>(want, need);
  reader_allocate(op, path, want, what(), [&] { bytes.reserve(static_cast<size_t>(want)); });
}

[[noreturn]] void too_large(const std::string& path, const char* op, const char* what, uint64_t max_bytes) {
  detail::throw_error(op, ": ", path, ": ", what, " more than the limit of ", max_bytes,
                      " bytes (corrupt, a gzip bomb, or pass a larger max_bytes)");
}

std::vector<uint8_t> read_raw(const std::string& path, const char* op, uint64_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  WICK_CHECK(fd >= 0, op, ": cannot open ", path, ": ", errno_text());
  std::vector<uint8_t> bytes;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    if (static_cast<uint64_t>(st.st_size) > max_bytes) {
      ::close(fd);
      too_large(path, op, "the file holds", max_bytes);
    }
    try {
      grow(bytes, static_cast<size_t>(st.st_size), static_cast<uint64_t>(st.st_size), path, op,
           [] { return std::string("the file's contents"); });
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  uint8_t buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      std::string why = errno_text();
      ::close(fd);
      detail::throw_error(op, ": reading ", path, ": ", why);
    }
    if (r == 0) break;
    // A file that grows while read (or a pipe, whose size fstat does not know).
    if (bytes.size() + static_cast<size_t>(r) > max_bytes) {
      ::close(fd);
      too_large(path, op, "the file holds", max_bytes);
    }
    try {
      grow(bytes, bytes.size() + static_cast<size_t>(r), max_bytes, path, op,
           [] { return std::string("the file's contents"); });
    } catch (...) {
      ::close(fd);
      throw;
    }
    bytes.insert(bytes.end(), buf, buf + r);
  }
  ::close(fd);
  return bytes;
}

// Inflates every gzip member in `in` (inflate with windowBits 15 + 16 reads the gzip
// header and trailer and checks the CRC). The trailer's size field is not used to size the
// output: it is unverified until the end, so an 18-byte file could claim 4 GiB. The buffer
// grows (geometrically) with what really comes out, up to `max_bytes`, and up to what
// `bound` says once it can tell.
std::vector<uint8_t> gunzip(const std::vector<uint8_t>& in, const std::string& path, const char* op,
                            uint64_t max_bytes, const ContentBoundFn& bound) {
  std::vector<uint8_t> out;
  std::optional<ContentBound> declared;
  const auto check = [&](size_t size) {
    if (size > max_bytes) too_large(path, op, "the gzip data inflates to", max_bytes);
    if (declared && size > declared->bytes)
      detail::throw_error(op, ": ", path, ": the gzip data inflates to more than the ", declared->bytes, " bytes ",
                          declared->what, " (corrupt, or a gzip bomb)");
  };
  z_stream zs{};
  WICK_CHECK(inflateInit2(&zs, 15 + 16) == Z_OK, op, ": ", path, ": cannot initialise zlib");
  zs.next_in = const_cast<Bytef*>(in.data());
  size_t consumed = 0;
  uint8_t buf[1 << 16];
  try {
    for (;;) {
      // avail_in is 32 bits wide: feed large inputs in pieces.
      if (zs.avail_in == 0 && consumed < in.size()) {
        size_t piece = std::min<size_t>(in.size() - consumed, 1u << 30);
        zs.next_in = const_cast<Bytef*>(in.data() + consumed);
        zs.avail_in = static_cast<uInt>(piece);
        consumed += piece;
      }
      zs.next_out = buf;
      zs.avail_out = sizeof buf;
      int rc = inflate(&zs, Z_NO_FLUSH);
      const size_t produced = sizeof buf - zs.avail_out;
      check(out.size() + produced);
      // Room grows with what comes out (doubling, up to what the header declares once known):
      // never from a size the file states but has not yet delivered.
      grow(out, out.size() + produced, declared ? declared->bytes : max_bytes, path, op, [&] {
        return "the inflated contents (" + std::to_string(out.size()) + " bytes so far" +
               (declared ? " of the " + std::to_string(declared->bytes) + " bytes " + declared->what : std::string()) +
               ")";
      });
      out.insert(out.end(), buf, buf + produced);
      if (bound && !declared && produced > 0) {
        declared = bound(out.data(), out.size());
        check(out.size());
      }
      if (rc == Z_STREAM_END) {
        size_t at = consumed - zs.avail_in;
        // Another member follows (gzip allows concatenation); trailing zero padding is ignored.
        if (at + 2 <= in.size() && in[at] == 0x1f && in[at + 1] == 0x8b) {
          WICK_CHECK(inflateReset(&zs) == Z_OK, op, ": ", path, ": cannot reset zlib");
          continue;
        }
        break;
      }
      if (rc == Z_BUF_ERROR && zs.avail_in == 0 && consumed == in.size())
        detail::throw_error(op, ": ", path, ": truncated gzip stream (", in.size(), " compressed bytes end before the data does)");
      WICK_CHECK(rc == Z_OK || rc == Z_BUF_ERROR, op, ": ", path, ": corrupt gzip stream: ",
                 zs.msg ? zs.msg : "zlib error " + std::to_string(rc));
    }
  } catch (...) {
    inflateEnd(&zs);
    throw;
  }
  inflateEnd(&zs);
  return out;
}

std::vector<uint8_t> gzip_bytes(const std::vector<uint8_t>& in, const std::string& path, const char* op) {
  z_stream zs{};
  WICK_CHECK(deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK, op, ": ",
             path, ": cannot initialise zlib");
  std::vector<uint8_t> out(deflateBound(&zs, static_cast<uLong>(in.size())));
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  size_t n = out.size() - zs.avail_out;
  deflateEnd(&zs);
  WICK_CHECK(rc == Z_STREAM_END, op, ": ", path, ": gzip compression failed (zlib error ", rc, ")");
  out.resize(n);
  return out;
}

}  // namespace

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<uint8_t> read_file_bytes(const std::string& path, const char* op, uint64_t max_bytes) {
  return read_file_bytes(path, op, ContentBoundFn(), max_bytes);
}

std::vector<uint8_t> read_file_bytes(const std::string& path, const char* op, const ContentBoundFn& bound,
                                     uint64_t max_bytes) {
  std::vector<uint8_t> bytes = read_raw(path, op, max_bytes);
  return is_gzip(bytes) ? gunzip(bytes, path, op, max_bytes, bound) : bytes;
}

void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes, bool gzip, const char* op) {
  WICK_CHECK(!gzip || bytes.size() < (size_t{1} << 32), op, ": ", path, ": ", bytes.size(),
             " bytes are too many to gzip in one piece");
  std::vector<uint8_t> compressed;
  if (gzip) compressed = gzip_bytes(bytes, path, op);
  const std::vector<uint8_t>& out = gzip ? compressed : bytes;

  write_file_atomically(path, std::string_view(reinterpret_cast<const char*>(out.data()), out.size()), op);
}

}  // namespace wick
