#pragma once
// The bytes behind one or more tensors. Views share a Storage through a shared_ptr.
#include <cstddef>
#include <memory>

#include <wick/tensor/allocator.h>
#include <wick/tensor/device.h>

namespace wick {

class StorageResidency;

class Storage {
 public:
  Storage(size_t nbytes, Device device, Allocator& allocator, bool pinned = false)
      : data_(allocator.allocate(nbytes, device)),
        nbytes_(nbytes),
        device_(device),
        pinned_(pinned),
        allocator_(&allocator) {}
  // Wraps memory the caller owns; `deleter` (may be a no-op) runs when the last view goes.
  Storage(void* data, size_t nbytes, Device device, void (*deleter)(void*))
      : data_(data, deleter), nbytes_(nbytes), device_(device) {}

  void* data() const { return data_.get(); }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool pinned() const { return pinned_; }

 private:
  // Releasing the bytes while views (and autograd's saved tensors) keep the Storage is for
  // fully sharded data parallelism only, through StorageResidency (storage_residency.h).
  friend class StorageResidency;

  DataPtr data_;
  size_t nbytes_;
  Device device_;
  bool pinned_ = false;
  Allocator* allocator_ = nullptr;  // null for memory the caller owns
};

}  // namespace wick
