#include <wick/tensor/out_of_memory.h>

#include <atomic>
#include <limits>

namespace wick {

namespace {
std::atomic<uint64_t> g_reader_allocation_limit{std::numeric_limits<uint64_t>::max()};
}  // namespace

void set_reader_allocation_limit(uint64_t bytes) { g_reader_allocation_limit.store(bytes, std::memory_order_relaxed); }

uint64_t reader_allocation_limit() { return g_reader_allocation_limit.load(std::memory_order_relaxed); }

}  // namespace wick
