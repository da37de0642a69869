// Kernel-slot coverage (issue 13, section 1): every filled slot of the CUDA kernel table
// (WICK_KERNEL_SLOTS, tensor/dispatch.h) must be called by this binary's CUDA-vs-CPU cases.
// Before the first test, each filled slot is swapped for a trampoline that counts its calls
// and forwards them; after the last test, a slot never called fails the run. The check
// needs the whole suite (no --gtest_filter) and a CUDA device (a GPU or the simulator);
// release builds pay nothing, the trampolines exist only in this test binary.
#include <atomic>
#include <type_traits>
#include <utility>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

template <auto Slot, class Fn>
struct Counted;

template <auto Slot, class R, class... A>
struct Counted<Slot, R (*)(A...)> {
  static inline R (*original)(A...) = nullptr;
  static inline std::atomic<int64_t> calls{0};
  static R call(A... args) {
    calls.fetch_add(1, std::memory_order_relaxed);
    return original(std::forward<A>(args)...);
  }
};

struct SlotCalls {
  const char* name;
  const std::atomic<int64_t>* calls;  // null: the backend leaves the slot empty
};

template <auto Slot>
SlotCalls count_calls(KernelTable& table, const char* name) {
  using C = Counted<Slot, std::remove_reference_t<decltype(table.*Slot)>>;
  if (!(table.*Slot)) return {name, nullptr};
  C::original = table.*Slot;
  table.*Slot = &C::call;
  return {name, &C::calls};
}

class CudaSlotCoverage : public ::testing::Environment {
 public:
  void SetUp() override {
    if (std::string(GTEST_FLAG_GET(filter)) != "*" || cuda::device_count() == 0) return;
    KernelTable& table = kernel_table_for_testing(Device::cuda());
#define WICK_COUNT_SLOT(slot) slots_.push_back(count_calls<&KernelTable::slot>(table, #slot));
    WICK_KERNEL_SLOTS(WICK_COUNT_SLOT)
#undef WICK_COUNT_SLOT
  }

  void TearDown() override {
    for (const SlotCalls& s : slots_)
      EXPECT_TRUE(!s.calls || s.calls->load() > 0)
          << "the CUDA kernel slot " << s.name
          << " was called by no test of wick_kernels_tests: add a CUDA-vs-CPU case for it (tests/kernels)";
  }

 private:
  std::vector<SlotCalls> slots_;
};

[[maybe_unused]] ::testing::Environment* const kCudaSlotCoverage =
    ::testing::AddGlobalTestEnvironment(new CudaSlotCoverage);

}  // namespace
}  // namespace wick::test
