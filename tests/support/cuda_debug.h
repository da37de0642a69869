#pragma once
// Test access to the CUDA caching allocator's debug checks (kernels/cuda/caching_allocator.h):
// while on, new CUDA allocations are filled with 0xFF bytes and followed by a guard zone that
// is verified when they are freed. Without CUDA the functions do nothing.
#include <cstddef>

namespace wick::cuda::detail {
void set_allocation_checks(bool on);
size_t allocation_check_failures();
}  // namespace wick::cuda::detail

namespace wick::test {

// Turns the checks on for its lifetime; violations() counts the guard zones found
// overwritten since it was made (tensors must be freed before they are counted).
class AllocationChecks {
 public:
  AllocationChecks() : start_(cuda::detail::allocation_check_failures()) { cuda::detail::set_allocation_checks(true); }
  ~AllocationChecks() { cuda::detail::set_allocation_checks(false); }
  AllocationChecks(const AllocationChecks&) = delete;
  AllocationChecks& operator=(const AllocationChecks&) = delete;
  size_t violations() const { return cuda::detail::allocation_check_failures() - start_; }

 private:
  size_t start_;
};

}  // namespace wick::test
