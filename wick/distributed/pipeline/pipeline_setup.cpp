// PipelineModel's set-up and plumbing: the links between the stages (made once, from the
// layout every rank knows), tensors on them with a checked header, rank 0's commands on the
// control channel and the stages' replies, stop and abort.
#include <wick/distributed/pipeline/pipeline.h>

#include <set>
#include <tuple>

#include <wick/distributed/comm/subgroup.h>
#include <wick/distributed/pipeline/stage_command.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>

namespace wick::distributed {

namespace {

// A tensor travels as a header of kHeader int64 values (sender, dtype, ndim, sizes...)
// followed by its data.
constexpr int64_t kMaxDims = 8;
constexpr int64_t kHeader = 3 + kMaxDims;
// No activation, gradient or state tensor of a pipeline is near this; a header announcing
// more is garbage or hostile.
constexpr int64_t kMaxElements = int64_t{1} << 36;

// On a link (a group of two ranks that carries messages one way), the peer is index 1 for
// the sender and index 0 for the receiver.
void send_tensor(Communicator& link, int sender, const Tensor& t, std::vector<std::shared_ptr<Work>>& works,
                 std::vector<Tensor>& keep) {
  WICK_CHECK(t.dim() <= kMaxDims, "PipelineModel: cannot send a tensor of ", t.dim(), " dimensions (at most ",
             kMaxDims, ")");
  std::vector<int64_t> h(kHeader, 0);
  h[0] = sender;
  h[1] = static_cast<int64_t>(t.dtype());
  h[2] = t.dim();
  for (int64_t d = 0; d < t.dim(); ++d) h[3 + d] = t.shape()[d];
  Tensor header = tensor<int64_t>(h).to(link.device());
  Tensor data = t.to(link.device()).contiguous();
  works.push_back(link.send(header, 1));
  works.push_back(link.send(data, 1));
  keep.push_back(header);
  keep.push_back(data);
}

// Waits for `work`; a failure (a dead or hung peer, a timeout) is reported with the rank of
// the job it concerns: the link's own numbering (0 and 1) would mislead.
void wait_for(const std::shared_ptr<Work>& work, const char* what, int peer) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    throw Error(std::string("PipelineModel: ") + what + " rank " + std::to_string(peer) + " (stage " +
                std::to_string(peer) + ") failed: " + e.what());
  }
}

Tensor recv_tensor(Communicator& link, int peer) {
  Tensor header = zeros({kHeader}, Options(DType::Int64, link.device()));
  wait_for(link.recv(header, 0), "receiving from", peer);
  const std::vector<int64_t> h = header.to_vector<int64_t>();
  WICK_CHECK(h[0] == peer, "PipelineModel: expected a tensor from rank ", peer, ", the header says rank ", h[0]);
  WICK_CHECK(h[1] >= 0 && h[1] < static_cast<int64_t>(kNumDTypes), "PipelineModel: rank ", peer,
             " sent a tensor header with an unknown dtype code ", h[1]);
  WICK_CHECK(h[2] >= 0 && h[2] <= kMaxDims, "PipelineModel: rank ", peer, " sent a tensor header with ", h[2],
             " dimensions");
  Shape shape;
  int64_t numel = 1;
  for (int64_t d = 0; d < h[2]; ++d) {
    const int64_t size = h[3 + d];
    WICK_CHECK(size >= 0 && (size == 0 || numel <= kMaxElements / size), "PipelineModel: rank ", peer,
               " announced a tensor of size ", size, " in dimension ", d, ", beyond the limit of ", kMaxElements,
               " elements");
    numel *= size;
    shape.push_back(size);
  }
  Tensor t = empty(shape, Options(static_cast<DType>(h[1]), link.device()));
  wait_for(link.recv(t, 0), "receiving from", peer);
  return t;
}

// The store of this rank's end of the control channel, once that end is checked against
// the communicator: the pipeline's links rendezvous there.
Store* checked_control_store(const Communicator& comm, const ControlEndpoint& control) {
  if (comm.size() == 1) return nullptr;  // one stage: no commands, no links
  if (comm.rank() == 0) {
    WICK_CHECK(control.driver != nullptr, "PipelineModel: rank 0 of ", comm.size(),
               " needs the driver's end of the control channel to command the other stages");
    WICK_CHECK(control.driver->world_size() == comm.size(), "PipelineModel: the control channel has ",
               control.driver->world_size(), " ranks and the communicator ", comm.size());
    return &control.driver->store();
  }
  WICK_CHECK(control.follower != nullptr, "PipelineModel: rank ", comm.rank(),
             " needs a follower's end of the control channel to take rank 0's commands");
  WICK_CHECK(control.follower->rank() == comm.rank() && control.follower->world_size() == comm.size(),
             "PipelineModel: the control channel's end is rank ", control.follower->rank(), " of ",
             control.follower->world_size(), ", the communicator's rank ", comm.rank(), " of ", comm.size());
  return &control.follower->store();
}

}  // namespace

PipelineModel::PipelineModel(Communicator& comm, ControlEndpoint control, std::vector<StagedLayer> layers,
                             std::vector<size_t> stage_starts, Device device, Milliseconds timeout)
    : comm_(comm), control_(control), timeout_(timeout), device_(device), layers_(std::move(layers)),
      starts_(std::move(stage_starts)) {
  WICK_CHECK(starts_.size() == static_cast<size_t>(comm.size()), "PipelineModel: ", starts_.size(),
             " stages for ", comm.size(), " ranks; every rank holds one stage");
  Store* store = checked_control_store(comm, control);
  for (size_t s : check_stages(layers_, starts_, starts_.size())) stage_of_.push_back(static_cast<int>(s));
  for (size_t l = 0; l < layers_.size(); ++l)
    for (const std::string& name : layers_[l].outputs) producer_stage_[name] = stage_of_[l];
  const int me = comm.rank(), stages = comm.size();
  // Received: the previous stage's output, then named outputs of earlier stages by
  // (producer, name). Sent: the main output (the last stage's to rank 0), then named
  // outputs by (consumer, name). Between two ranks the order is the same on both sides.
  std::set<std::pair<int, std::string>> in, out;
  for (size_t l = 0; l < layers_.size(); ++l)
    for (const std::string& name : layers_[l].dependencies) {
      const int producer = producer_stage_.at(name), consumer = stage_of_[l];
      if (producer == consumer) continue;
      if (consumer == me) in.insert({producer, name});
      if (producer == me) out.insert({consumer, name});
    }
  if (me > 0) receives_.push_back({me - 1, ""});
  for (const auto& [peer, name] : in) receives_.push_back({peer, name});
  if (stages > 1) sends_.push_back({me + 1 < stages ? me + 1 : 0, ""});
  for (const auto& [peer, name] : out) sends_.push_back({peer, name});
  // Links of two ranks carrying messages one way, one for activations (and state) and one
  // for gradients: on each, both ends handle the messages in the same order
  // (by micro-batch) whatever the schedule interleaves, and a message never queues behind
  // one going the other way (a send completes only when its receive is posted). Every rank
  // knows the whole plan, so all make the same links in the same order.
  std::set<std::tuple<int, int, int>> links;  // (kind, from, to)
  auto link_both_ways = [&](int producer, int consumer) {
    links.insert({kActivations, producer, consumer});
    links.insert({kGradients, consumer, producer});
  };
  for (int s = 0; s < stages && stages > 1; ++s) link_both_ways(s, s + 1 < stages ? s + 1 : 0);
  for (size_t l = 0; l < layers_.size(); ++l)
    for (const std::string& name : layers_[l].dependencies)
      if (producer_stage_.at(name) != stage_of_[l]) link_both_ways(producer_stage_.at(name), stage_of_[l]);
  for (int w = 1; w < stages; ++w) {  // state
    links.insert({kActivations, 0, w});
    links.insert({kActivations, w, 0});
  }
  for (const auto& [kind, a, b] : links) {
    auto link = new_group(*store, me, stages, {a, b}, comm.device(), timeout);
    if (a == me) out_[kind][b] = std::move(link);
    if (b == me) in_[kind][a] = std::move(link);
  }
  for (size_t l = 0; l < layers_.size(); ++l)
    if (stage_of_[l] == me) {
      layers_[l].module->to(device_);
      register_module(std::to_string(l), layers_[l].module);
    }
}

PipelineModel::~PipelineModel() {
  if (comm_.rank() != 0 || stopped_ || comm_.size() == 1) return;
  try {
    stop();
  } catch (...) {  // the others fail on their own timeout
  }
}

void PipelineModel::Outbox::wait() {
  for (size_t i = 0; i < works.size(); ++i) wait_for(works[i], "sending to", peers[i]);
  works.clear();
  peers.clear();
  keep.clear();
}

void PipelineModel::send(const Tensor& t, int peer, int kind, Outbox& outbox) {
  send_tensor(to(peer, kind), comm_.rank(), t, outbox.works, outbox.keep);
  outbox.peers.resize(outbox.works.size(), peer);
}

Tensor PipelineModel::receive(int peer, int kind) { return recv_tensor(from(peer, kind), peer); }

void PipelineModel::command(const distributed::Command& encoded) {
  try {
    control_.driver->broadcast(encoded);
  } catch (const Error& e) {
    throw Error(std::string("PipelineModel: sending rank 0's command to the stages failed: ") + e.what());
  }
}

std::vector<Bytes> PipelineModel::gather_replies(const char* what) {
  try {
    return control_.driver->gather(timeout_);
  } catch (const Error& e) {
    throw Error(std::string("PipelineModel: waiting for the stages' ") + what + ": " + e.what());
  }
}

void PipelineModel::set_replicas(Communicator* replicas) {
  replicas_ = replicas;
  // The data-parallel reducer over this stage's parameters: buckets, and the gradients
  // left as views of them (the hooks it registers only act while it is armed, here never
  // during a backward: every stage reduces on rank 0's command, after the backward).
  replica_gradients_ = replicas ? std::make_unique<DataParallelSync>(*replicas, *this) : nullptr;
}

void PipelineModel::stop() {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::stop runs on rank 0");
  if (stopped_) return;
  stopped_ = true;
  if (comm_.size() > 1) command(encode_stage_command(stage::Stop{}));
}

void PipelineModel::abort() {
  if (comm_.rank() == 0 && comm_.size() > 1 && !stopped_) {
    stopped_ = true;
    try {
      command(encode_stage_command(stage::Abort{}));
    } catch (const Error&) {  // a stage that is gone already knows
    }
  }
  comm_.abort();
  for (auto* links : {out_, in_})
    for (int kind : {kActivations, kGradients})
      for (auto& [peer, link] : links[kind]) link->abort();
}

}  // namespace wick::distributed
