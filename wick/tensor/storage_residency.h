#pragma once
// Internal: a Storage's bytes released and allocated again in place, the Storage object and
// every view of it (parameters, autograd's saved tensors) kept. Fully sharded data
// parallelism (ShardedSync, ShardStrategy::Full) releases a unit's gathered parameters
// after its forward and gathers them into the same Storage before its backward, as PyTorch
// FSDP resizes its flat parameter's storage to zero and back. Reading a released tensor
// is an error the caller must prevent; this is not for anything else.
#include <wick/tensor/error.h>
#include <wick/tensor/storage.h>

namespace wick {

class StorageResidency {
 public:
  static bool resident(const Storage& s) { return s.data_ != nullptr || s.nbytes_ == 0; }
  // Frees the bytes (their contents are lost); the Storage keeps its size.
  static void release(Storage& s) {
    WICK_CHECK(s.allocator_ != nullptr, "StorageResidency::release: the storage wraps memory its caller owns");
    s.data_.reset();
  }
  // Allocates the bytes again (uninitialised) if they were released.
  static void materialize(Storage& s) {
    if (resident(s)) return;
    s.data_ = s.allocator_->allocate(s.nbytes_, s.device_);
  }
};

}  // namespace wick
