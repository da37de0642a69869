#include <wick/data/cuda_delivery.h>

#include <algorithm>

#include <wick/tensor/dispatch.h>

namespace wick {

namespace {

// Completed buffers beyond this many are freed when one comes back (a pool that has grown for
// a burst does not keep its page-locked memory for ever).
constexpr size_t kPooledBuffers = 32;

bool done(const std::shared_ptr<cuda::Event>& e) { return !e || e->query(); }

}  // namespace

CudaDeliverer::CudaDeliverer(Device device) : device_(device) {
  WICK_CHECK(device.is_cuda(), "CudaDeliverer: needs a CUDA device, got ", device);
  copy_stream_ = cuda::Stream::create(device.index);
  consumer_stream_ = cuda::current_stream(device.index);
}

CudaDeliverer::~CudaDeliverer() {
  // Page-locked memory must outlive the copies that read it.
  for (Pinned& p : pool_) {
    if (!p.last_read) continue;
    try {
      p.last_read->synchronize();
    } catch (...) {  // a destructor must not throw; only a broken device fails a wait
    }
  }
}

void CudaDeliverer::set_consumer_stream() { consumer_stream_ = cuda::current_stream(device_.index); }

int64_t CudaDeliverer::buffers_allocated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocated_;
}

Tensor CudaDeliverer::take_buffer(size_t nbytes) {
  nbytes = std::max<size_t>(nbytes, 1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto best = pool_.end();
    for (auto it = pool_.begin(); it != pool_.end(); ++it) {
      if (it->buffer.nbytes() >= nbytes && done(it->last_read) &&
          (best == pool_.end() || it->buffer.nbytes() < best->buffer.nbytes()))
        best = it;
    }
    if (best != pool_.end()) {
      Tensor b = std::move(best->buffer);
      pool_.erase(best);
      return b;
    }
    ++allocated_;
  }
  return empty({static_cast<int64_t>(nbytes)}, Options(DType::UInt8, Device::cpu(), /*pinned=*/true));
}

void CudaDeliverer::give_back(std::vector<Tensor> buffers, const std::shared_ptr<cuda::Event>& read_by) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Tensor& b : buffers) pool_.push_back(Pinned{std::move(b), read_by});
  if (pool_.size() <= kPooledBuffers) return;
  std::stable_sort(pool_.begin(), pool_.end(),
                   [](const Pinned& a, const Pinned& b) { return a.buffer.nbytes() > b.buffer.nbytes(); });
  for (size_t i = pool_.size(); i-- > 0 && pool_.size() > kPooledBuffers;) {
    if (done(pool_[i].last_read)) pool_.erase(pool_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

CudaDelivery CudaDeliverer::send(const std::vector<Tensor>& host) {
  cuda::DeviceGuard on_device(device_.index);
  std::vector<Tensor> buffers, staged, on_device_tensors;
  for (const Tensor& t : host) {
    WICK_CHECK(t.device().is_cpu(), "CudaDeliverer: batches are made on the CPU, got a tensor on ", t.device());
    Tensor buffer = take_buffer(t.nbytes());
    Tensor view(buffer.storage(), t.shape(), contiguous_strides(t.shape()), 0, t.dtype());
    if (t.numel() > 0) view.copy_(t);  // gathers a strided tensor in the same pass
    buffers.push_back(std::move(buffer));
    staged.push_back(std::move(view));
  }
  {
    cuda::StreamGuard on_consumer(consumer_stream_);
    for (const Tensor& s : staged) on_device_tensors.push_back(empty(s.shape(), Options(s.dtype(), device_)));
  }
  cuda::Event memory_free;
  memory_free.record(consumer_stream_);
  memory_free.wait(copy_stream_);
  auto copied = std::make_shared<cuda::Event>();
  {
    cuda::StreamGuard on_copy(copy_stream_);
    const KernelTable& k = kernels(device_);
    for (size_t i = 0; i < staged.size(); ++i) k.copy_across_devices(on_device_tensors[i], staged[i], /*non_blocking=*/true);
    copied->record(copy_stream_);
  }
  give_back(std::move(buffers), copied);
  return CudaDelivery{std::move(on_device_tensors), std::move(copied)};
}

void CudaDeliverer::receive(const CudaDelivery& delivery) const {
  const cuda::Stream current = cuda::current_stream(device_.index);
  if (delivery.ready) delivery.ready->wait(current);
  // The memory belongs to the consumer stream; used on another one, it must not be reused
  // before the work queued there on it has run.
  if (!(current == consumer_stream_)) {
    for (const Tensor& t : delivery.tensors) cuda::record_stream(t, current);
  }
}

}  // namespace wick
