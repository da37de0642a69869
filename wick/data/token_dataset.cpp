#include <wick/data/token_dataset.h>

namespace wick {

namespace {

void check_tokens(const char* op, const Tensor& tokens, int64_t window) {
  WICK_CHECK(window >= 1, op, ": window must be >= 1, got ", window);
  WICK_CHECK(tokens.defined() && tokens.dim() == 1 && is_integral(tokens.dtype()), op,
             ": tokens must be a 1-d integer tensor, got ",
             tokens.defined() ? shape_str(tokens.shape()) + " " + dtype_name(tokens.dtype()) : std::string("none"));
  WICK_CHECK(tokens.device().is_cpu(), op, ": tokens must be on the CPU, they are on ", tokens.device());
  WICK_CHECK(tokens.size(0) >= window + 1, op, ": ", tokens.size(0), " tokens are too few for a window of ", window,
             " + 1");
}

// A start in [0, T - L - 1] from a seed: the high half of seed * count, whose bias
// (count / 2^64) is far below anything a training run can see.
int64_t draw_start(uint64_t seed, int64_t tokens, int64_t window) {
  const uint64_t count = static_cast<uint64_t>(tokens - window);
  return static_cast<int64_t>((static_cast<unsigned __int128>(derive_seed(seed, 7)) * count) >> 64);
}

// Tokens [start, start + window) as int64 in memory of its own: the tokens may be a
// read-only mapping (an npy view), and a transform that writes to "input" in place must
// neither fault, nor edit the corpus, nor change "target" (which would overlap it).
Tensor owned_int64(const Tensor& tokens, int64_t start, int64_t window) {
  Tensor t = tokens.narrow(0, start, window).to(DType::Int64);
  return t.shares_storage(tokens) ? t.clone() : t;
}

Example window_at(const Tensor& tokens, int64_t start, int64_t window) {
  Example e;
  e.set("input", owned_int64(tokens, start, window));
  e.set("target", owned_int64(tokens, start + 1, window));
  return e;
}

class TokenShardStream : public ExampleStream {
 public:
  TokenShardStream(Tensor tokens, int64_t window, int64_t total, Shard shard)
      : tokens_(std::move(tokens)), window_(window), total_(total), shard_(shard), j_(shard.index()) {}
  std::optional<Example> next() override {
    if (j_ >= total_) return std::nullopt;
    const int64_t start = draw_start(example_seed(shard_.seed, shard_.epoch, j_), tokens_.size(0), window_);
    j_ += shard_.count();
    return window_at(tokens_, start, window_);
  }

 private:
  Tensor tokens_;
  int64_t window_, total_;
  Shard shard_;
  int64_t j_;
};

}  // namespace

TokenWindows::TokenWindows(Tensor tokens, int64_t window, bool random_offsets)
    : tokens_(std::move(tokens)), window_(window), random_offsets_(random_offsets) {
  check_tokens("TokenWindows", tokens_, window_);
  size_ = (tokens_.size(0) - 1) / window_;
}

Example TokenWindows::get(int64_t i, uint64_t seed) const {
  check_index("TokenWindows::get", i, size_);
  const int64_t start = random_offsets_ ? draw_start(seed, tokens_.size(0), window_) : i * window_;
  return window_at(tokens_, start, window_);
}

TokenStream::TokenStream(Tensor tokens, int64_t window, int64_t windows_per_epoch)
    : tokens_(std::move(tokens)), window_(window), windows_per_epoch_(windows_per_epoch) {
  check_tokens("TokenStream", tokens_, window_);
  WICK_CHECK(windows_per_epoch >= 0, "TokenStream: windows_per_epoch must be >= 0, got ", windows_per_epoch);
}

std::unique_ptr<ExampleStream> TokenStream::open(const Shard& shard) const {
  WICK_CHECK(shard.world_size >= 1 && shard.num_workers >= 1 && shard.rank >= 0 && shard.rank < shard.world_size &&
                 shard.worker >= 0 && shard.worker < shard.num_workers,
             "TokenStream::open: bad shard (rank ", shard.rank, " of ", shard.world_size, ", worker ", shard.worker,
             " of ", shard.num_workers, ")");
  return std::make_unique<TokenShardStream>(tokens_, window_, windows_per_epoch_, shard);
}

}  // namespace wick
