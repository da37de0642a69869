#include <wick/distributed/data_parallel/distributed_data_parallel.h>

#include <wick/distributed/data_parallel/data_parallel_sync.h>
#include <wick/tensor/error.h>

namespace wick::distributed {

DistributedDataParallel::DistributedDataParallel(Module& module, Communicator* comm, DdpOptions options)
    : module_(module), comm_(comm) {
  WICK_CHECK(options.bucket_bytes > 0, "DistributedDataParallel: bucket_bytes must be > 0, got ", options.bucket_bytes);
  if (comm_ == nullptr || comm_->size() == 1) return;
  DataParallelOptions parallel;
  parallel.bucket_bytes = options.bucket_bytes;
  sync_ = std::make_unique<DataParallelSync>(*comm_, module_, parallel);
  sync_->broadcast_parameters(0);
  sync_->broadcast_buffers(0);
}

DistributedDataParallel::~DistributedDataParallel() = default;

int DistributedDataParallel::rank() const { return comm_ ? comm_->rank() : 0; }
int DistributedDataParallel::world_size() const { return comm_ ? comm_->size() : 1; }

void DistributedDataParallel::backward(const Variable& loss, const Tensor& gradient) {
  if (!sync_ || !syncing_) {
    loss.backward(gradient);
    if (sync_) ++unsynced_backwards_;
    return;
  }
  // One "example" per rank: the sums over ranks become means over ranks, as PyTorch's DDP
  // gives: the seed takes the mean's share, or, after backwards under no_sync, the sums are
  // divided once over each bucket.
  sync_->arm(1, unsynced_backwards_);
  sync_->backward(loss, 1, 1.0, gradient);  // buckets start their all-reduces from gradient hooks
  sync_->finish();
  unsynced_backwards_ = 0;
}

void DistributedDataParallel::sync_buffers() {
  if (sync_) sync_->broadcast_buffers(0);
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp) : ddp_(ddp), was_syncing_(ddp.syncing_) {
  ddp_.syncing_ = false;
}

DistributedDataParallel::NoSync::~NoSync() { ddp_.syncing_ = was_syncing_; }

}  // namespace wick::distributed
