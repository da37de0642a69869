// NcclCommunicator in a build without CUDA (-DWICK_CUDA=OFF): it cannot be constructed.
#include <wick/distributed/comm/nccl_communicator.h>

#include <wick/tensor/error.h>

namespace wick::distributed {

namespace {
[[noreturn]] void no_nccl(const char* what) {
  wick::detail::throw_error("NcclCommunicator::", what,
                      ": wick was built without CUDA (configure with -DWICK_CUDA=ON for NCCL); use "
                      "GlooCommunicator for CPU tensors");
}
}  // namespace

class NcclCommunicator::Impl {};

bool nccl_is_built() { return false; }
std::string nccl_version() { return {}; }

NcclCommunicator::NcclCommunicator(Store&, int, int, int, NcclOptions) { no_nccl("NcclCommunicator"); }
NcclCommunicator::~NcclCommunicator() = default;
int NcclCommunicator::rank() const { no_nccl("rank"); }
int NcclCommunicator::size() const { no_nccl("size"); }
Device NcclCommunicator::device() const { no_nccl("device"); }
std::shared_ptr<Work> NcclCommunicator::all_reduce(std::vector<Tensor>, ReduceOp) { no_nccl("all_reduce"); }
std::shared_ptr<Work> NcclCommunicator::broadcast(std::vector<Tensor>, int) { no_nccl("broadcast"); }
std::shared_ptr<Work> NcclCommunicator::reduce(std::vector<Tensor>, int, ReduceOp) { no_nccl("reduce"); }
std::shared_ptr<Work> NcclCommunicator::all_gather(const Tensor&, Tensor) { no_nccl("all_gather"); }
std::shared_ptr<Work> NcclCommunicator::reduce_scatter(const Tensor&, Tensor, ReduceOp) { no_nccl("reduce_scatter"); }
std::shared_ptr<Work> NcclCommunicator::send(const Tensor&, int) { no_nccl("send"); }
std::shared_ptr<Work> NcclCommunicator::recv(Tensor, int) { no_nccl("recv"); }
std::shared_ptr<Work> NcclCommunicator::send_recv(const Tensor&, int, Tensor, int) { no_nccl("send_recv"); }
void NcclCommunicator::barrier() { no_nccl("barrier"); }
void NcclCommunicator::abort() { no_nccl("abort"); }

}  // namespace wick::distributed
