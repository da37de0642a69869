#pragma once
// CudaDelivery: how a loader moves CPU batches to a CUDA device without blocking the host,
// shared by BatchStream and DataLoader (PyTorch's pin_memory + .to(non_blocking=True)).
//
//   producer thread (loader / worker)          consumer thread (next())
//   send(tensors):                              receive(delivery):
//     memcpy each into a page-locked buffer       the current stream waits for `ready`
//     device memory from the consumer stream      (no host block); a batch used on another
//     async copy on the copy stream after the     stream than the consumer stream is marked
//     consumer stream's queued work               as used there (cuda::record_stream)
//     -> device tensors + event `ready`
//
// The copy waits for the work queued on the consumer stream when it was issued: device
// memory comes from the consumer stream's pool, where a block may have been freed by work
// that has not run yet. Page-locked buffers are pooled: one goes back to the pool after the
// copy that reads it, and is reused only once that copy's event has completed. send() may be
// called from several threads at once.
#include <memory>
#include <mutex>
#include <vector>

#include <wick/tensor/cuda.h>
#include <wick/tensor/device.h>
#include <wick/tensor/tensor.h>

namespace wick {

struct CudaDelivery {
  std::vector<Tensor> tensors;        // on the device, contiguous
  std::shared_ptr<cuda::Event> ready;  // recorded after their copy
};

class CudaDeliverer {
 public:
  explicit CudaDeliverer(Device device);  // a CUDA device; creates the copy stream
  ~CudaDeliverer();                       // waits for copies still reading pooled buffers
  CudaDeliverer(const CudaDeliverer&) = delete;
  CudaDeliverer& operator=(const CudaDeliverer&) = delete;

  // The calling thread's current stream on the device becomes the consumer stream (call it
  // while no send() runs: at the start of an epoch).
  void set_consumer_stream();
  // Stages `host` (CPU tensors, any layout) and starts their copy. Thread-safe.
  CudaDelivery send(const std::vector<Tensor>& host);
  // Makes the calling thread's current stream wait for the copy.
  void receive(const CudaDelivery& delivery) const;
  // Page-locked buffers allocated so far (tests: the pool must stay bounded).
  int64_t buffers_allocated() const;

 private:
  struct Pinned {
    Tensor buffer;                        // UInt8, page-locked
    std::shared_ptr<cuda::Event> last_read;  // the copy that last read it
  };
  Tensor take_buffer(size_t nbytes);
  void give_back(std::vector<Tensor> buffers, const std::shared_ptr<cuda::Event>& read_by);

  Device device_;
  cuda::Stream copy_stream_;
  cuda::Stream consumer_stream_;
  mutable std::mutex mu_;
  std::vector<Pinned> pool_;
  int64_t allocated_ = 0;
};

}  // namespace wick
