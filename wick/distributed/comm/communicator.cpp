#include <wick/distributed/comm/communicator.h>

#include <cstdlib>
#include <exception>
#include <string>

#include <wick/distributed/comm/gloo_communicator.h>
#include <wick/distributed/comm/host_staged_communicator.h>
#include <wick/distributed/comm/nccl_communicator.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>

namespace wick::distributed {

Work::~Work() = default;
Communicator::~Communicator() = default;

void wait_all(const std::vector<std::shared_ptr<Work>>& works) {
  std::exception_ptr first;
  for (const auto& work : works) {
    try {
      work->wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

std::unique_ptr<Communicator> make_communicator(Store& store, int rank, int size, Device device, Milliseconds timeout) {
  const char* transport = std::getenv("WICK_CUDA_COMMUNICATOR");
  const std::string cuda_transport = transport ? transport : "";
  WICK_CHECK(cuda_transport.empty() || cuda_transport == "nccl" || cuda_transport == "gloo",
             "make_communicator: WICK_CUDA_COMMUNICATOR='", cuda_transport, "' is neither 'nccl' nor 'gloo'");
  if (device.is_cuda() && cuda_transport == "gloo") {
    GlooOptions options;
    options.timeout = timeout;
    return std::make_unique<HostStagedCommunicator>(std::make_unique<GlooCommunicator>(store, rank, size, options),
                                                    device);
  }
  if (device.is_cuda()) {
    NcclOptions options;
    options.timeout = timeout;
    return std::make_unique<NcclCommunicator>(store, rank, size, device.index, options);
  }
  GlooOptions options;
  options.timeout = timeout;
  return std::make_unique<GlooCommunicator>(store, rank, size, options);
}

std::vector<double> sum_over_ranks(Communicator& comm, std::vector<double> values) {
  if (values.empty()) return values;
  Tensor t = tensor<double>(values).to(comm.device());
  comm.all_reduce({t}, ReduceOp::Sum)->wait();
  return t.cpu().to_vector<double>();
}

int64_t max_over_ranks(Communicator& comm, int64_t value) {
  Tensor t = tensor<int64_t>({value}).to(comm.device());
  comm.all_reduce({t}, ReduceOp::Max)->wait();
  return t.cpu().item<int64_t>();
}

}  // namespace wick::distributed
