// NcclCommunicator (built with -DWICK_CUDA=ON). See nccl_communicator.h for the contract.
#include <wick/distributed/comm/nccl_communicator.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <sstream>
#include <thread>

#include <cuda_runtime.h>
#include <nccl.h>

#include <wick/distributed/comm/communicator_checks.h>
#include <wick/tensor/cuda.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>

namespace wick::distributed {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kCudaOnly =
    "; NCCL moves CUDA tensors of the communicator's device only, use GlooCommunicator "
    "for CPU tensors";

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8: return ncclUint8;
    case DType::Int32: return ncclInt32;
    case DType::Int64: return ncclInt64;
    case DType::Float16: return ncclFloat16;
    case DType::BFloat16: return ncclBfloat16;
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Mean: return ncclAvg;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
    default: break;
  }
  wick::detail::throw_error("NcclCommunicator: ", reduce_op_name(op),
                            " is not a collective reduction (sum, mean, max or min)");
}

cudaStream_t raw(const cuda::Stream& s) { return static_cast<cudaStream_t>(s.handle()); }

}  // namespace

// The NCCL communicator, its stream, and whether it is still usable. One mutex orders the
// callers' launches (NCCL requires one thread at a time per communicator).
class NcclCommunicator::Impl {
 public:
  int rank = 0;
  int size = 1;
  int device = 0;
  NcclOptions options;
  ncclComm_t comm = nullptr;
  cuda::Stream stream;
  std::mutex mutex;
  std::string broken;  // empty while usable

  // The watchdog: Work::wait() never blocks the host, so a collective that hangs on the GPU
  // (a peer died or stopped) is noticed here instead. Every launched operation's completion
  // event is checked against its deadline; a late one aborts the communicator, which ends
  // the hung kernels, and every later wait() throws with the cause.
  struct Outstanding {
    cuda::Event done;
    Clock::time_point deadline;
    std::string what;
  };
  std::deque<Outstanding> outstanding;
  std::condition_variable watchdog_wake;
  bool watchdog_stop = false;
  std::thread watchdog;

  void watch() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!watchdog_stop) {
      watchdog_wake.wait_for(lock, std::chrono::milliseconds(50));
      try {
        while (!outstanding.empty() && outstanding.front().done.query()) outstanding.pop_front();
        if (!outstanding.empty() && Clock::now() > outstanding.front().deadline && comm) {
          abort_locked(outstanding.front().what + ": did not finish within " + std::to_string(options.timeout.count()) +
                       " ms (a peer died or hangs); the communicator was aborted");
        }
      } catch (const std::exception& e) {  // a failing event query: the device is unusable
        if (comm) abort_locked(std::string("NcclCommunicator watchdog: ") + e.what());
      }
      if (comm == nullptr) outstanding.clear();
    }
  }

  void stop_watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      watchdog_stop = true;
    }
    watchdog_wake.notify_all();
    if (watchdog.joinable()) watchdog.join();
  }

  std::string name(const char* op, const std::string& args) const {
    std::ostringstream os;
    os << "NcclCommunicator::" << op << " (rank " << rank << " of " << size << " on cuda:" << device;
    if (!args.empty()) os << "; " << args;
    os << ")";
    return os.str();
  }

  // Aborts the NCCL communicator (safe to call twice) and remembers why.
  void abort_locked(const std::string& cause) {
    if (broken.empty()) broken = cause;
    if (comm) {
      ncclCommAbort(comm);
      comm = nullptr;
    }
  }

  [[noreturn]] void fail_locked(const std::string& what, const std::string& cause) {
    abort_locked(what + ": " + cause);
    wick::detail::throw_error(what, ": ", cause);
  }

  void check_usable_locked(const std::string& what) {
    if (!broken.empty())
      wick::detail::throw_error(what, ": communicator is unusable after an earlier failure: ", broken);
  }

  // A non-blocking communicator answers ncclInProgress while a call is still being set up;
  // polls until it settles, aborting on an error or after the timeout.
  void settle_locked(const std::string& what, ncclResult_t result) {
    if (result != ncclSuccess && result != ncclInProgress)
      fail_locked(what, std::string(ncclGetErrorString(result)) + " (" + ncclGetLastError(comm) + ")");
    const auto deadline = Clock::now() + options.timeout;
    for (;;) {
      ncclResult_t state = ncclSuccess;
      ncclResult_t got = ncclCommGetAsyncError(comm, &state);
      if (got != ncclSuccess) fail_locked(what, std::string("ncclCommGetAsyncError: ") + ncclGetErrorString(got));
      if (state == ncclSuccess) return;
      if (state != ncclInProgress)
        fail_locked(what, std::string(ncclGetErrorString(state)) + " (" + ncclGetLastError(comm) + ")");
      if (Clock::now() > deadline)
        fail_locked(what, "timed out after " + std::to_string(options.timeout.count()) + " ms");
      // Most calls settle within microseconds; sleep only once it takes longer.
      if (Clock::now() + options.timeout - deadline > std::chrono::milliseconds(1))
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      else std::this_thread::yield();
    }
  }

  // A host-side look at errors NCCL found while the GPU ran earlier operations.
  void check_async_locked(const std::string& what) {
    check_usable_locked(what);
    ncclResult_t state = ncclSuccess;
    ncclResult_t got = ncclCommGetAsyncError(comm, &state);
    if (got != ncclSuccess) fail_locked(what, std::string("ncclCommGetAsyncError: ") + ncclGetErrorString(got));
    if (state != ncclSuccess && state != ncclInProgress)
      fail_locked(what, std::string(ncclGetErrorString(state)) + " (" + ncclGetLastError(comm) + ")");
  }
};

namespace {

class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<NcclCommunicator::Impl> impl, std::string what, cuda::Event done, std::vector<Tensor> keep)
      : impl_(impl), what_(std::move(what)), done_(std::move(done)), keep_(std::move(keep)) {}

  void wait() override {
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      impl_->check_async_locked(what_);
    }
    cuda::DeviceGuard guard(impl_->device);
    done_.wait(cuda::current_stream(impl_->device));
  }

 private:
  std::shared_ptr<NcclCommunicator::Impl> impl_;
  std::string what_;
  cuda::Event done_;
  std::vector<Tensor> keep_;  // the tensors NCCL reads and writes stay allocated until then
};

}  // namespace

bool nccl_is_built() { return true; }

std::string nccl_version() {
  int code = 0;
  const ncclResult_t r = ncclGetVersion(&code);
  WICK_CHECK(r == ncclSuccess, "nccl_version: ncclGetVersion failed: ", ncclGetErrorString(r));
  // NCCL's code is major * 10000 + minor * 100 + patch since 2.9, major * 1000 + minor * 100 +
  // patch before.
  const int major = code >= 20900 ? code / 10000 : code / 1000;
  const int rest = code >= 20900 ? code % 10000 : code % 1000;
  return std::to_string(major) + "." + std::to_string(rest / 100) + "." + std::to_string(rest % 100);
}

NcclCommunicator::NcclCommunicator(Store& store, int rank, int size, int device, NcclOptions options)
    : impl_(std::make_shared<Impl>()) {
  Impl& m = *impl_;
  m.rank = rank;
  m.size = size;
  m.device = device;
  m.options = std::move(options);
  const std::string what = m.name("NcclCommunicator", "");
  WICK_CHECK(size >= 1, what, ": size must be at least 1, got ", size);
  WICK_CHECK(rank >= 0 && rank < size, what, ": rank ", rank, " is out of range for ", size, " ranks");
  WICK_CHECK(m.options.timeout.count() > 0, what, ": timeout must be positive");
  WICK_CHECK(device >= 0 && device < cuda::device_count(), what, ": no CUDA device ", device, " (",
             cuda::device_count(), " visible)");
  cuda::DeviceGuard guard(device);
  m.stream = cuda::Stream::create(device);

  // Each communicator made with this prefix on this store has its own key (its generation),
  // so a second one never reads the id of the first.
  ncclUniqueId id;
  const std::string key =
      m.options.prefix + "unique_id/" + std::to_string(store.next_generation(m.options.prefix, rank));
  if (rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    WICK_CHECK(r == ncclSuccess, what, ": ncclGetUniqueId failed: ", ncclGetErrorString(r));
    store.set(key, Bytes(reinterpret_cast<const char*>(&id), reinterpret_cast<const char*>(&id) + sizeof(id)));
  } else {
    Bytes bytes;
    try {
      bytes = store.get(key, m.options.timeout);
    } catch (const std::exception& e) {
      wick::detail::throw_error(what, ": rank 0 did not publish the NCCL unique id (key '", key, "') within ",
                                m.options.timeout.count(), " ms; is rank 0 running? (", e.what(), ")");
    }
    WICK_CHECK(bytes.size() == sizeof(id), what, ": the NCCL unique id in the store has ", bytes.size(),
               " bytes, expected ", sizeof(id));
    std::memcpy(&id, bytes.data(), sizeof(id));
  }

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  std::lock_guard<std::mutex> lock(m.mutex);
  ncclResult_t r = ncclCommInitRankConfig(&m.comm, size, id, rank, &config);
  if (m.comm == nullptr)
    wick::detail::throw_error(what, ": ncclCommInitRankConfig failed: ", ncclGetErrorString(r), " (",
                              ncclGetLastError(nullptr), ")");
  m.settle_locked(what + ": initialisation (waiting for all ranks)", r);  // aborts and throws on failure
  m.watchdog = std::thread([impl = impl_.get()] { impl->watch(); });
}

NcclCommunicator::~NcclCommunicator() {
  if (!impl_) return;
  Impl& m = *impl_;
  m.stop_watchdog();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (!m.comm) return;
  if (!m.broken.empty()) {
    m.abort_locked(m.broken);
    return;
  }
  const std::string cause = "NcclCommunicator: the communicator was destroyed";
  // Finish the queued operations, then free; a communicator that does not settle in time
  // is aborted instead (never throws from here).
  try {
    cuda::DeviceGuard guard(m.device);
    m.settle_locked("NcclCommunicator::~NcclCommunicator", ncclCommFinalize(m.comm));
    ncclCommDestroy(m.comm);
    m.comm = nullptr;
    m.broken = cause;
  } catch (...) {
    m.abort_locked(cause);
  }
}

int NcclCommunicator::rank() const { return impl_->rank; }
int NcclCommunicator::size() const { return impl_->size; }
Device NcclCommunicator::device() const { return Device::cuda(impl_->device); }

namespace {

// Runs `enqueue(stream)` between ncclGroupStart/End on the communicator's stream, after the
// caller's current stream, and returns the work that orders the caller after it.
template <class F>
std::shared_ptr<Work> launch(const std::shared_ptr<NcclCommunicator::Impl>& impl, const std::string& what,
                             std::vector<Tensor> keep, F&& enqueue) {
  NcclCommunicator::Impl& m = *impl;
  std::lock_guard<std::mutex> lock(m.mutex);
  m.check_usable_locked(what);
  cuda::DeviceGuard guard(m.device);
  cuda::Event ready;
  ready.record(cuda::current_stream(m.device));
  ready.wait(m.stream);
  // The tensors are used on the communicator's stream: when they are freed (a work dropped
  // without wait(), say), the caching allocator reuses their memory only after this work.
  for (const Tensor& t : keep) cuda::record_stream(t, m.stream);
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) m.fail_locked(what, std::string("ncclGroupStart: ") + ncclGetErrorString(r));
  r = enqueue(raw(m.stream));
  if (r != ncclSuccess && r != ncclInProgress) {
    (void)ncclGroupEnd();
    m.fail_locked(what, std::string(ncclGetErrorString(r)) + " (" + ncclGetLastError(m.comm) + ")");
  }
  m.settle_locked(what, ncclGroupEnd());
  cuda::Event done;
  done.record(m.stream);
  m.outstanding.push_back({done, Clock::now() + m.options.timeout, what});
  return std::make_shared<NcclWork>(impl, what, std::move(done), std::move(keep));
}

}  // namespace

std::shared_ptr<Work> NcclCommunicator::all_reduce(std::vector<Tensor> tensors, ReduceOp op) {
  Impl& m = *impl_;
  const std::string what = m.name("all_reduce", std::string(reduce_op_name(op)) + " of " + detail::describe(tensors));
  detail::check_group(what, tensors, device(), kCudaOnly);
  if (!tensors.empty()) detail::check_reduction(what, tensors[0].dtype(), op);
  return launch(impl_, what, tensors, [&](cudaStream_t s) {
    for (const Tensor& t : tensors) {
      if (t.numel() == 0) continue;
      ncclResult_t r = ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()), nccl_type(t.dtype()),
                                     nccl_op(op), m.comm, s);
      if (r != ncclSuccess && r != ncclInProgress) return r;
    }
    return ncclSuccess;
  });
}

std::shared_ptr<Work> NcclCommunicator::broadcast(std::vector<Tensor> tensors, int root) {
  Impl& m = *impl_;
  const std::string what = m.name("broadcast", "root " + std::to_string(root) + ", " + detail::describe(tensors));
  detail::check_peer(what, "root", root, m.size);
  detail::check_group(what, tensors, device(), kCudaOnly);
  return launch(impl_, what, tensors, [&](cudaStream_t s) {
    for (const Tensor& t : tensors) {
      if (t.numel() == 0) continue;
      ncclResult_t r = ncclBroadcast(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()), nccl_type(t.dtype()),
                                     root, m.comm, s);
      if (r != ncclSuccess && r != ncclInProgress) return r;
    }
    return ncclSuccess;
  });
}

std::shared_ptr<Work> NcclCommunicator::reduce(std::vector<Tensor> tensors, int root, ReduceOp op) {
  Impl& m = *impl_;
  const std::string what = m.name("reduce", std::string(reduce_op_name(op)) + " to root " + std::to_string(root) +
                                                ", " + detail::describe(tensors));
  detail::check_peer(what, "root", root, m.size);
  detail::check_group(what, tensors, device(), kCudaOnly);
  if (!tensors.empty()) detail::check_reduction(what, tensors[0].dtype(), op);
  return launch(impl_, what, tensors, [&](cudaStream_t s) {
    for (const Tensor& t : tensors) {
      if (t.numel() == 0) continue;
      // Non-root ranks only send: NCCL leaves their buffers untouched.
      ncclResult_t r = ncclReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()), nccl_type(t.dtype()),
                                  nccl_op(op), root, m.comm, s);
      if (r != ncclSuccess && r != ncclInProgress) return r;
    }
    return ncclSuccess;
  });
}

std::shared_ptr<Work> NcclCommunicator::all_gather(const Tensor& input, Tensor output) {
  Impl& m = *impl_;
  const std::string what =
      m.name("all_gather", "input " + detail::describe(input) + ", output " + detail::describe(output));
  detail::check_tensor(what, "input", input, device(), kCudaOnly);
  detail::check_tensor(what, "output", output, device(), kCudaOnly);
  WICK_CHECK(input.dtype() == output.dtype(), what, ": input and output dtypes differ");
  WICK_CHECK(output.numel() == input.numel() * m.size, what, ": output must hold ", m.size, " x ", input.numel(),
             " elements, it holds ", output.numel());
  return launch(impl_, what, {input, output}, [&](cudaStream_t s) {
    if (input.numel() == 0) return ncclSuccess;
    return ncclAllGather(input.data_ptr(), output.data_ptr(), static_cast<size_t>(input.numel()),
                         nccl_type(input.dtype()), m.comm, s);
  });
}

std::shared_ptr<Work> NcclCommunicator::reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) {
  Impl& m = *impl_;
  const std::string what =
      m.name("reduce_scatter", std::string(reduce_op_name(op)) + ", input " + detail::describe(input) + ", output " +
                                   detail::describe(output));
  detail::check_tensor(what, "input", input, device(), kCudaOnly);
  detail::check_tensor(what, "output", output, device(), kCudaOnly);
  WICK_CHECK(input.dtype() == output.dtype(), what, ": input and output dtypes differ");
  WICK_CHECK(input.numel() == output.numel() * m.size, what, ": input must hold ", m.size, " x ", output.numel(),
             " elements, it holds ", input.numel());
  detail::check_reduction(what, input.dtype(), op);
  return launch(impl_, what, {input, output}, [&](cudaStream_t s) {
    if (output.numel() == 0) return ncclSuccess;
    return ncclReduceScatter(input.data_ptr(), output.data_ptr(), static_cast<size_t>(output.numel()),
                             nccl_type(input.dtype()), nccl_op(op), m.comm, s);
  });
}

std::shared_ptr<Work> NcclCommunicator::send(const Tensor& tensor, int peer) {
  Impl& m = *impl_;
  const std::string what = m.name("send", "to " + std::to_string(peer) + ", " + detail::describe(tensor));
  detail::check_peer(what, "peer", peer, m.size);
  WICK_CHECK(peer != m.rank, what, ": cannot send to itself");
  detail::check_tensor(what, "tensor", tensor, device(), kCudaOnly);
  return launch(impl_, what, {tensor}, [&](cudaStream_t s) {
    if (tensor.numel() == 0) return ncclSuccess;
    return ncclSend(tensor.data_ptr(), static_cast<size_t>(tensor.numel()), nccl_type(tensor.dtype()), peer, m.comm, s);
  });
}

std::shared_ptr<Work> NcclCommunicator::recv(Tensor tensor, int peer) {
  Impl& m = *impl_;
  const std::string what = m.name("recv", "from " + std::to_string(peer) + ", " + detail::describe(tensor));
  detail::check_peer(what, "peer", peer, m.size);
  WICK_CHECK(peer != m.rank, what, ": cannot receive from itself");
  detail::check_tensor(what, "tensor", tensor, device(), kCudaOnly);
  return launch(impl_, what, {tensor}, [&](cudaStream_t s) {
    if (tensor.numel() == 0) return ncclSuccess;
    return ncclRecv(tensor.data_ptr(), static_cast<size_t>(tensor.numel()), nccl_type(tensor.dtype()), peer, m.comm, s);
  });
}

std::shared_ptr<Work> NcclCommunicator::send_recv(const Tensor& send_tensor, int send_peer, Tensor recv_tensor,
                                                  int recv_peer) {
  Impl& m = *impl_;
  const std::string what =
      m.name("send_recv", "send to " + std::to_string(send_peer) + ", " + detail::describe(send_tensor) +
                              "; recv from " + std::to_string(recv_peer) + ", " + detail::describe(recv_tensor));
  detail::check_peer(what, "send peer", send_peer, m.size);
  detail::check_peer(what, "recv peer", recv_peer, m.size);
  WICK_CHECK(send_peer != m.rank, what, ": cannot send to itself");
  WICK_CHECK(recv_peer != m.rank, what, ": cannot receive from itself");
  detail::check_tensor(what, "send tensor", send_tensor, device(), kCudaOnly);
  detail::check_tensor(what, "recv tensor", recv_tensor, device(), kCudaOnly);
  // One group: NCCL progresses the send and the recv together.
  return launch(impl_, what, {send_tensor, recv_tensor}, [&](cudaStream_t s) {
    if (send_tensor.numel() != 0) {
      ncclResult_t r = ncclSend(send_tensor.data_ptr(), static_cast<size_t>(send_tensor.numel()),
                                nccl_type(send_tensor.dtype()), send_peer, m.comm, s);
      if (r != ncclSuccess && r != ncclInProgress) return r;
    }
    if (recv_tensor.numel() == 0) return ncclSuccess;
    return ncclRecv(recv_tensor.data_ptr(), static_cast<size_t>(recv_tensor.numel()), nccl_type(recv_tensor.dtype()),
                    recv_peer, m.comm, s);
  });
}

void NcclCommunicator::barrier() {
  Impl& m = *impl_;
  const std::string what = m.name("barrier", "");
  Tensor token = zeros({1}, Options(DType::Float32, device()));
  auto work = all_reduce({token}, ReduceOp::Sum);
  // A barrier is a host-side promise: wait for the all-reduce on the host, bounded by the
  // timeout, watching NCCL's error state meanwhile.
  cuda::DeviceGuard guard(m.device);
  cuda::Event done;
  done.record(m.stream);
  const auto deadline = Clock::now() + m.options.timeout;
  while (!done.query()) {
    {
      std::lock_guard<std::mutex> lock(m.mutex);
      m.check_async_locked(what);
      if (Clock::now() > deadline)
        m.fail_locked(what, "timed out after " + std::to_string(m.options.timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  work->wait();
}

void NcclCommunicator::abort() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  m.abort_locked(m.name("abort", "") + ": the communicator was aborted");
}

}  // namespace wick::distributed
