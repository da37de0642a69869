// Kernel-slot coverage (issue 13, section 1): every filled slot of the CUDA kernel table
// (WICK_KERNEL_SLOTS, wick/tensor/dispatch.h) must be called by this binary's CUDA-vs-CPU cases.
// Before the first test, each filled slot is swapped for a trampoline that counts its calls
// and forwards them; after the last test, the process either checks the counts itself (the
// whole suite run directly: no --gtest_filter, no sharding) or, under ctest
// (WICK_SLOT_CALLS_DIR set: the suite runs in shards, tests/kernels/CMakeLists.txt), writes
// the names of the slots it called to that folder, and a last ctest test
// (CudaSlotCoverage.EveryFilledSlotWasCalledBySomeTest with WICK_SLOT_CALLS_CHECK) checks
// their union. It needs a CUDA device (a GPU or the simulator); release builds pay
// nothing, the trampolines exist only in this test binary.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <type_traits>
#include <utility>

#include "tests/support/reference.h"

#include <wick/tensor/dispatch.h>

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

std::string never_called(const std::string& slot) {
  return "the CUDA kernel slot " + slot +
         " was called by no test of wick_kernels_tests: add a CUDA-vs-CPU case for it (tests/kernels)";
}

// The names of the filled slots of the CUDA table.
std::vector<std::string> filled_slots() {
  std::vector<std::string> names;
  KernelTable& table = kernel_table_for_testing(Device::cuda());
#define WICK_FILLED_SLOT(slot) \
  if (table.slot) names.push_back(#slot);
  WICK_KERNEL_SLOTS(WICK_FILLED_SLOT)
#undef WICK_FILLED_SLOT
  return names;
}

class CudaSlotCoverageCount : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* total_shards = std::getenv("GTEST_TOTAL_SHARDS");
    whole_suite_ = std::string(GTEST_FLAG_GET(filter)) == "*" && (!total_shards || std::string(total_shards) == "1");
    if (const char* dir = std::getenv("WICK_SLOT_CALLS_DIR")) calls_dir_ = dir;
    if ((calls_dir_.empty() && !whole_suite_) || cuda::device_count() == 0) return;
    KernelTable& table = kernel_table_for_testing(Device::cuda());
#define WICK_COUNT_SLOT(slot) slots_.push_back(count_calls<&KernelTable::slot>(table, #slot));
    WICK_KERNEL_SLOTS(WICK_COUNT_SLOT)
#undef WICK_COUNT_SLOT
  }

  void TearDown() override {
    if (!calls_dir_.empty()) {
      std::filesystem::create_directories(calls_dir_);
      std::ofstream out(calls_dir_ + "/" + std::to_string(getpid()) + ".txt");
      for (const SlotCalls& s : slots_)
        if (s.calls && s.calls->load() > 0) out << s.name << "\n";
      return;
    }
    for (const SlotCalls& s : slots_) EXPECT_TRUE(!s.calls || s.calls->load() > 0) << never_called(s.name);
  }

 private:
  bool whole_suite_ = false;
  std::string calls_dir_;
  std::vector<SlotCalls> slots_;
};

TEST(CudaSlotCoverage, EveryFilledSlotWasCalledBySomeTest) {
  const char* dir = std::getenv("WICK_SLOT_CALLS_CHECK");
  if (!dir) GTEST_SKIP() << "ctest runs this after the suite's shards (WICK_SLOT_CALLS_CHECK names their folder)";
  WICK_REQUIRE_CUDA();
  std::set<std::string> called;
  int files = 0;
  if (std::filesystem::is_directory(dir))
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      ++files;
      std::ifstream in(entry.path());
      for (std::string name; std::getline(in, name);) called.insert(name);
    }
  ASSERT_GT(files, 0) << "no process of the suite wrote its slot calls to " << dir;
  for (const std::string& name : filled_slots())
    EXPECT_TRUE(called.count(name)) << never_called(name);
}

[[maybe_unused]] ::testing::Environment* const kCudaSlotCoverage =
    ::testing::AddGlobalTestEnvironment(new CudaSlotCoverageCount);

}  // namespace
}  // namespace wick::test
