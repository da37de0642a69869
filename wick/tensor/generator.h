#pragma once
// Seedable random-number state. A Generator is a (seed, offset) pair: each random op
// takes the current offset and advances it by the number of values it draws, and the values
// come from Philox keyed by the seed (wick/tensor/philox.h). The same seed and the same sequence
// of ops give the same numbers, on CPU and on CUDA alike.
//
// Ops take an optional Generator*; without one they use default_generator(), one per
// thread (so threads never contend, and a thread's stream of numbers is reproducible after
// manual_seed).
#include <cstdint>
#include <mutex>

namespace wick {

// The state one random draw uses: Philox4x32-10 keyed by `seed`, element i of the output
// uses counter `offset + i`, so results depend on neither thread count nor launch shape,
// and the CPU and CUDA kernels produce the same numbers.
struct PhiloxState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull) : seed_(seed) {}
  Generator(const Generator& o) : seed_(o.seed()), offset_(o.offset()) {}
  Generator& operator=(const Generator& o) {
    if (this != &o) set_state(o.seed(), o.offset());
    return *this;
  }

  void manual_seed(uint64_t seed) { set_state(seed, 0); }
  uint64_t seed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seed_;
  }
  uint64_t offset() const {
    std::lock_guard<std::mutex> lock(mu_);
    return offset_;
  }
  // For checkpoints: restore exactly where a saved generator was.
  void set_state(uint64_t seed, uint64_t offset) {
    std::lock_guard<std::mutex> lock(mu_);
    seed_ = seed;
    offset_ = offset;
  }
  // Reserves `n` counters and returns the state to draw them with.
  PhiloxState advance(uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    PhiloxState s{seed_, offset_};
    offset_ += n;
    return s;
  }

 private:
  mutable std::mutex mu_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// This thread's default generator.
Generator& default_generator();
// Seeds this thread's default generator (torch.manual_seed).
inline void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace wick
