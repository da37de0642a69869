#include <wick/distributed/comm/gloo_communicator.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include <signal.h>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <wick/distributed/comm/communicator_checks.h>
#include <wick/distributed/comm/gloo_reduce.h>
#include <wick/distributed/comm/gloo_worker.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>

namespace wick::distributed {

namespace {

constexpr const char* kCpuOnly =
    "; Gloo moves CPU tensors only, use NcclCommunicator (make_communicator with a CUDA device) for CUDA "
    "tensors";

// Gloo's rendezvous reads and writes through this view of our Store, under a prefix.
class StoreForGloo final : public gloo::rendezvous::Store {
 public:
  StoreForGloo(distributed::Store& store, std::string prefix, Milliseconds timeout)
      : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override { store_.set(prefix_ + key, data); }

  std::vector<char> get(const std::string& key) override {
    auto it = seen_.find(key);
    if (it != seen_.end()) return it->second;
    return store_.get(prefix_ + key, timeout_);
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    for (const std::string& key : keys) seen_[key] = store_.get(prefix_ + key, timeout);
  }

 private:
  distributed::Store& store_;
  std::string prefix_;
  Milliseconds timeout_;
  std::map<std::string, std::vector<char>> seen_;
};

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// Calls f.template operator()<U>() with an unsigned type as wide as one element: Gloo only
// needs the element size (to split messages on element boundaries); the reduction function
// knows the real type.
template <class F>
void visit_width(DType dtype, F&& f) {
  switch (element_size(dtype)) {
    case 1: f.template operator()<uint8_t>(); return;
    case 2: f.template operator()<uint16_t>(); return;
    case 4: f.template operator()<uint32_t>(); return;
    case 8: f.template operator()<uint64_t>(); return;
  }
  wick::detail::throw_error("GlooCommunicator: unsupported element size ", element_size(dtype));
}

// A group as one contiguous buffer: the tensor itself when there is one, else a packed copy.
struct Flat {
  Tensor buffer;
  std::vector<Tensor> parts;
  bool packed = false;

  Flat(const std::vector<Tensor>& tensors, bool force_copy, bool fill) : parts(tensors) {
    if (tensors.size() == 1 && !force_copy) {
      buffer = tensors[0];
      return;
    }
    packed = true;
    buffer = empty({detail::total_numel(tensors)}, Options(tensors[0].dtype()));
    if (fill) {
      char* dst = static_cast<char*>(buffer.data_ptr());
      for (const Tensor& t : tensors) {
        if (t.nbytes()) std::memcpy(dst, t.data_ptr(), t.nbytes());
        dst += t.nbytes();
      }
    }
  }
  void* data() const { return buffer.data_ptr(); }
  size_t numel() const { return static_cast<size_t>(buffer.numel()); }
  void unpack() const {
    if (!packed) return;
    const char* src = static_cast<const char*>(buffer.data_ptr());
    for (const Tensor& t : parts) {
      if (t.nbytes()) std::memcpy(t.data_ptr(), src, t.nbytes());
      src += t.nbytes();
    }
  }
};

void run_all_reduce(const std::shared_ptr<gloo::Context>& context, void* data, DType dtype, size_t n, ReduceOp op,
                    Milliseconds timeout) {
  gloo::AllreduceOptions opts(context);
  visit_width(dtype, [&]<class U>() { opts.setOutput<U>(static_cast<U*>(data), n); });
  opts.setReduceFunction(detail::gloo_reduce_function(dtype, op));
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts.setTimeout(timeout);
  gloo::allreduce(opts);
}

// Blocks SIGPIPE in the calling thread while it lives. Gloo's TCP transport writes without
// MSG_NOSIGNAL, so a write to a peer that died raised SIGPIPE and killed the rank silently
// (status 13, nothing logged) instead of failing the operation with the peer's error. The
// threads that do Gloo's I/O (its device loop, our worker) are started inside this scope and
// inherit the mask, so their writes fail with EPIPE instead.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &previous_);
  }
  ~SigpipeBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace

GlooCommunicator::GlooCommunicator(Store& store, int rank, int size, GlooOptions options)
    : rank_(rank), size_(size), options_(std::move(options)), sent_(size, 0), received_(size, 0) {
  WICK_CHECK(size >= 1, "GlooCommunicator: size must be at least 1, got ", size);
  WICK_CHECK(rank >= 0 && rank < size, "GlooCommunicator: rank ", rank, " is out of range for ", size, " ranks");
  WICK_CHECK(options_.timeout.count() > 0, "GlooCommunicator: timeout must be positive");
  gloo::transport::tcp::attr attr;
  attr.iface = options_.interface.empty() ? env_or("GLOO_SOCKET_IFNAME", "") : options_.interface;
  if (attr.iface.empty())
    attr.hostname = options_.hostname.empty() ? env_or("WICK_GLOO_HOST", "127.0.0.1") : options_.hostname;
  const std::string where = attr.iface.empty() ? "host " + attr.hostname : "interface " + attr.iface;
  const SigpipeBlocked no_sigpipe;
  try {
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(options_.timeout);
    StoreForGloo gloo_store(store, options_.prefix, options_.timeout);
    context->connectFullMesh(gloo_store, device);
    // Gloo's errors name a peer by the address that our end of the pair holds as the
    // peer's ("Read error [127.0.0.1]:6021: ..."); knowing it per rank lets name_peers say
    // which rank failed. Gloo keeps that address to itself (tcp::Pair::peer() is protected,
    // and Debian's headers for tcp::Pair are incomplete), and it is one of two: the peer's
    // end of the connected socket, which only the peer knows, so each rank publishes its
    // end of every pair; or the peer's listening address for the pair, from Gloo's own
    // rendezvous keys. The second is what our end holds when we connected to the peer (it
    // listened there), and also when we listened but our device thread accepted the peer's
    // connection before this thread's connectFullMesh reached the pair: Pair::connect then
    // replaces the accepted socket's address by the published one (which the peer closed
    // to connect from another port). Knowing only the first left such a pair unnamed, about
    // once in 35 runs of DistributedTraining.AKilledFollowerMakesTheOthersFailWithinThe-
    // Timeout (issue 48, item 4).
    std::string mine;
    for (int j = 0; j < size; ++j) {
      if (j != rank) mine += context->getPair(j)->address().str();
      mine += '\n';
    }
    store.set(options_.prefix + "wick_pair_addresses/" + std::to_string(rank),
              std::vector<char>(mine.begin(), mine.end()));
    peer_addresses_.assign(static_cast<std::size_t>(size), {});
    for (int j = 0; j < size; ++j) {
      if (j == rank) continue;
      std::vector<std::string>& known = peer_addresses_[static_cast<std::size_t>(j)];
      std::vector<char> theirs =
          store.get(options_.prefix + "wick_pair_addresses/" + std::to_string(j), options_.timeout);
      std::istringstream lines(std::string(theirs.begin(), theirs.end()));
      std::string line;
      for (int k = 0; std::getline(lines, line); ++k) {
        if (k == rank && !line.empty()) known.push_back(line);
      }
      // Gloo's key for rank j holds its listening address for each peer, in rank order
      // without j itself, all of one size (Context::extractAddress).
      const std::vector<char> listening = gloo_store.get(std::to_string(j));
      const std::size_t each = listening.size() / static_cast<std::size_t>(size - 1);
      const std::size_t at = static_cast<std::size_t>(rank > j ? rank - 1 : rank) * each;
      if (each > 0 && at + each <= listening.size()) {
        const auto first = listening.begin() + static_cast<std::ptrdiff_t>(at);
        const std::string address =
            gloo::transport::tcp::Address(std::vector<char>(first, first + static_cast<std::ptrdiff_t>(each))).str();
        if (std::find(known.begin(), known.end(), address) == known.end()) known.push_back(address);
      }
    }
    context_ = std::move(context);
  } catch (const std::exception& e) {
    wick::detail::throw_error("GlooCommunicator: rank ", rank, " of ", size, " could not connect (", where,
                              ", timeout ", options_.timeout.count(), " ms): ", e.what());
  }
  worker_ = std::make_unique<detail::GlooWorker>([this](const std::string& m) { return name_peers(m); });
}

namespace detail {

bool mentions_address(const std::string& message, const std::string& address) {
  for (std::size_t at = message.find(address); at != std::string::npos; at = message.find(address, at + 1)) {
    const std::size_t end = at + address.size();
    if (end == message.size() || !std::isdigit(static_cast<unsigned char>(message[end]))) return true;
  }
  return false;
}

}  // namespace detail

std::string GlooCommunicator::name_peers(const std::string& message) const {
  std::string named;
  for (std::size_t j = 0; j < peer_addresses_.size(); ++j) {
    for (const std::string& a : peer_addresses_[j]) {
      if (!detail::mentions_address(message, a)) continue;
      named += (named.empty() ? "" : ", ") + std::string("rank ") + std::to_string(j) + " of " + std::to_string(size_) +
               " (" + a + ")";
      break;
    }
  }
  if (!named.empty()) return message + " [the failed peer is " + named + "]";
  // Gloo's timeouts do not say whom they waited for.
  if (message.find("Timed out") != std::string::npos)
    return message +
           " [a peer did not answer in time; Gloo does not say which: a rank that is hung, stopped or gone is "
           "the likely cause, and wickrun names the rank that did not exit]";
  return message;
}

GlooCommunicator::~GlooCommunicator() {
  worker_.reset();   // fails what is queued, joins the thread
  context_.reset();  // closes the connections (peers see them close)
}

std::string GlooCommunicator::op_name(const char* op, const std::string& args) const {
  std::ostringstream os;
  os << "GlooCommunicator::" << op << " (rank " << rank_ << " of " << size_;
  if (!args.empty()) os << "; " << args;
  os << ")";
  return os.str();
}

std::shared_ptr<Work> GlooCommunicator::all_reduce(std::vector<Tensor> tensors, ReduceOp op) {
  const std::string name = op_name("all_reduce", std::string(reduce_op_name(op)) + " of " + detail::describe(tensors));
  detail::check_group(name, tensors, device(), kCpuOnly);
  if (tensors.empty()) return worker_->enqueue(name, [] {});
  const DType dtype = tensors[0].dtype();
  detail::check_reduction(name, dtype, op);
  return worker_->enqueue(name, [this, tensors = std::move(tensors), dtype, op] {
    Flat flat(tensors, /*force_copy=*/false, /*fill=*/true);
    if (flat.numel() == 0) return;
    if (size_ > 1) run_all_reduce(context_, flat.data(), dtype, flat.numel(), op, options_.timeout);
    if (op == ReduceOp::Mean) detail::divide_in_place(flat.data(), dtype, flat.numel(), size_);
    flat.unpack();
  });
}

std::shared_ptr<Work> GlooCommunicator::broadcast(std::vector<Tensor> tensors, int root) {
  const std::string name = op_name("broadcast", "root " + std::to_string(root) + ", " + detail::describe(tensors));
  detail::check_peer(name, "root", root, size_);
  detail::check_group(name, tensors, device(), kCpuOnly);
  if (tensors.empty()) return worker_->enqueue(name, [] {});
  return worker_->enqueue(name, [this, tensors = std::move(tensors), root] {
    Flat flat(tensors, /*force_copy=*/false, /*fill=*/rank_ == root);
    const size_t bytes = flat.buffer.nbytes();
    if (bytes == 0 || size_ == 1) return;
    gloo::BroadcastOptions opts(context_);
    opts.setOutput<uint8_t>(static_cast<uint8_t*>(flat.data()), bytes);
    opts.setRoot(root);
    opts.setTimeout(options_.timeout);
    gloo::broadcast(opts);
    if (rank_ != root) flat.unpack();
  });
}

std::shared_ptr<Work> GlooCommunicator::reduce(std::vector<Tensor> tensors, int root, ReduceOp op) {
  const std::string name = op_name("reduce", std::string(reduce_op_name(op)) + " to root " + std::to_string(root) +
                                                 ", " + detail::describe(tensors));
  detail::check_peer(name, "root", root, size_);
  detail::check_group(name, tensors, device(), kCpuOnly);
  if (tensors.empty()) return worker_->enqueue(name, [] {});
  const DType dtype = tensors[0].dtype();
  detail::check_reduction(name, dtype, op);
  return worker_->enqueue(name, [this, tensors = std::move(tensors), dtype, root, op] {
    // Gloo uses every rank's buffer as scratch; a copy keeps non-root tensors unchanged.
    Flat flat(tensors, /*force_copy=*/true, /*fill=*/true);
    if (flat.numel() == 0) return;
    if (size_ > 1) {
      gloo::ReduceOptions opts(context_);
      visit_width(dtype, [&]<class U>() { opts.setOutput<U>(static_cast<U*>(flat.data()), flat.numel()); });
      opts.setRoot(root);
      opts.setReduceFunction(detail::gloo_reduce_function(dtype, op));
      opts.setTimeout(options_.timeout);
      gloo::reduce(opts);
    }
    if (rank_ != root) return;
    if (op == ReduceOp::Mean) detail::divide_in_place(flat.data(), dtype, flat.numel(), size_);
    flat.unpack();
  });
}

std::shared_ptr<Work> GlooCommunicator::all_gather(const Tensor& input, Tensor output) {
  const std::string name =
      op_name("all_gather", "input " + detail::describe(input) + ", output " + detail::describe(output));
  detail::check_tensor(name, "input", input, device(), kCpuOnly);
  detail::check_tensor(name, "output", output, device(), kCpuOnly);
  WICK_CHECK(input.dtype() == output.dtype(), name, ": input and output dtypes differ");
  WICK_CHECK(output.numel() == input.numel() * size_, name, ": output must hold ", size_, " x ", input.numel(),
             " elements, it holds ", output.numel());
  return worker_->enqueue(name, [this, input, output] {
    const size_t bytes = input.nbytes();
    if (bytes == 0) return;
    if (size_ == 1) {
      std::memcpy(output.data_ptr(), input.data_ptr(), bytes);
      return;
    }
    gloo::AllgatherOptions opts(context_);
    opts.setInput<uint8_t>(static_cast<uint8_t*>(input.data_ptr()), bytes);
    opts.setOutput<uint8_t>(static_cast<uint8_t*>(output.data_ptr()), bytes * size_);
    opts.setTimeout(options_.timeout);
    gloo::allgather(opts);
  });
}

std::shared_ptr<Work> GlooCommunicator::reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) {
  return reduce_scatter_into(input, std::move(output), op, false);
}

std::shared_ptr<Work> GlooCommunicator::reduce_scatter_consuming(Tensor input, Tensor output, ReduceOp op) {
  return reduce_scatter_into(input, std::move(output), op, true);
}

std::shared_ptr<Work> GlooCommunicator::reduce_scatter_into(const Tensor& input, Tensor output, ReduceOp op,
                                                            bool input_is_scratch) {
  const std::string name = op_name(
      input_is_scratch ? "reduce_scatter_consuming" : "reduce_scatter",
      std::string(reduce_op_name(op)) + ", input " + detail::describe(input) + ", output " + detail::describe(output));
  detail::check_tensor(name, "input", input, device(), kCpuOnly);
  detail::check_tensor(name, "output", output, device(), kCpuOnly);
  WICK_CHECK(input.dtype() == output.dtype(), name, ": input and output dtypes differ");
  WICK_CHECK(input.numel() == output.numel() * size_, name, ": input must hold ", size_, " x ", output.numel(),
             " elements, it holds ", input.numel());
  detail::check_reduction(name, input.dtype(), op);
  return worker_->enqueue(name, [this, input, output, op, input_is_scratch] {
    // Gloo's new-style API has no reduce-scatter: all-reduce a copy (or the input itself, when
    // its caller is done with it) and keep our slice.
    const size_t n = static_cast<size_t>(output.numel());
    if (n == 0) return;
    Tensor scratch = input_is_scratch && input.is_contiguous() ? input : input.clone();
    if (size_ > 1) run_all_reduce(context_, scratch.data_ptr(), input.dtype(), scratch.numel(), op, options_.timeout);
    const char* slice = static_cast<const char*>(scratch.data_ptr()) + output.nbytes() * rank_;
    std::memcpy(output.data_ptr(), slice, output.nbytes());
    if (op == ReduceOp::Mean) detail::divide_in_place(output.data_ptr(), output.dtype(), n, size_);
  });
}

std::shared_ptr<Work> GlooCommunicator::send(const Tensor& tensor, int peer) {
  const std::string name = op_name("send", "to " + std::to_string(peer) + ", " + detail::describe(tensor));
  detail::check_peer(name, "peer", peer, size_);
  WICK_CHECK(peer != rank_, name, ": cannot send to itself");
  detail::check_tensor(name, "tensor", tensor, device(), kCpuOnly);
  return worker_->enqueue(name, [this, tensor, peer] {
    // Slots count the messages between two ranks, so a recv matches the send of the same
    // number however the sends to different peers interleave.
    const uint64_t slot = (uint64_t{0xfe} << 56) + sent_[peer]++;
    if (tensor.nbytes() == 0) return;
    auto buffer = context_->createUnboundBuffer(tensor.data_ptr(), tensor.nbytes());
    buffer->send(peer, slot);
    WICK_CHECK(buffer->waitSend(options_.timeout), "send was aborted");
  });
}

std::shared_ptr<Work> GlooCommunicator::recv(Tensor tensor, int peer) {
  const std::string name = op_name("recv", "from " + std::to_string(peer) + ", " + detail::describe(tensor));
  detail::check_peer(name, "peer", peer, size_);
  WICK_CHECK(peer != rank_, name, ": cannot receive from itself");
  detail::check_tensor(name, "tensor", tensor, device(), kCpuOnly);
  return worker_->enqueue(name, [this, tensor, peer] {
    const uint64_t slot = (uint64_t{0xfe} << 56) + received_[peer]++;
    if (tensor.nbytes() == 0) return;
    auto buffer = context_->createUnboundBuffer(tensor.data_ptr(), tensor.nbytes());
    buffer->recv(peer, slot);
    WICK_CHECK(buffer->waitRecv(options_.timeout), "recv was aborted");
  });
}

std::shared_ptr<Work> GlooCommunicator::send_recv(const Tensor& send_tensor, int send_peer, Tensor recv_tensor,
                                                  int recv_peer) {
  const std::string name =
      op_name("send_recv", "send to " + std::to_string(send_peer) + ", " + detail::describe(send_tensor) +
                               "; recv from " + std::to_string(recv_peer) + ", " + detail::describe(recv_tensor));
  detail::check_peer(name, "send peer", send_peer, size_);
  detail::check_peer(name, "recv peer", recv_peer, size_);
  WICK_CHECK(send_peer != rank_, name, ": cannot send to itself");
  WICK_CHECK(recv_peer != rank_, name, ": cannot receive from itself");
  detail::check_tensor(name, "send tensor", send_tensor, device(), kCpuOnly);
  detail::check_tensor(name, "recv tensor", recv_tensor, device(), kCpuOnly);
  return worker_->enqueue(name, [this, send_tensor, send_peer, recv_tensor, recv_peer] {
    // Both posted before either is waited for: the peer's matching send may wait for this
    // recv. The slots are those a separate send and recv would take.
    const uint64_t send_slot = (uint64_t{0xfe} << 56) + sent_[send_peer]++;
    const uint64_t recv_slot = (uint64_t{0xfe} << 56) + received_[recv_peer]++;
    std::unique_ptr<gloo::transport::UnboundBuffer> out, in;
    if (send_tensor.nbytes() != 0) {
      out = context_->createUnboundBuffer(send_tensor.data_ptr(), send_tensor.nbytes());
      out->send(send_peer, send_slot);
    }
    if (recv_tensor.nbytes() != 0) {
      in = context_->createUnboundBuffer(recv_tensor.data_ptr(), recv_tensor.nbytes());
      in->recv(recv_peer, recv_slot);
    }
    if (in) WICK_CHECK(in->waitRecv(options_.timeout), "recv was aborted");
    if (out) WICK_CHECK(out->waitSend(options_.timeout), "send was aborted");
  });
}

void GlooCommunicator::barrier() {
  const std::string name = op_name("barrier", "");
  worker_
      ->enqueue(name,
                [this] {
                  if (size_ == 1) return;
                  gloo::BarrierOptions opts(context_);
                  opts.setTimeout(options_.timeout);
                  gloo::barrier(opts);
                })
      ->wait();
}

void GlooCommunicator::abort() {
  worker_->break_with(op_name("abort", "") + ": the communicator was aborted");
  // Closing the connections makes the peers' pending operations fail now instead of at
  // their timeout, and ends an operation of ours that is waiting on them.
  context_->closeConnections();
}

}  // namespace wick::distributed
