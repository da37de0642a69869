#include <wick/distributed/pipeline/pipeline.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <set>
#include <sstream>
#include <tuple>

#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/distributed/comm/subgroup.h>
#include <wick/distributed/control/control_message.h>
#include <wick/nn/norm.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>
#include <wick/tensor/join.h>

namespace wick::distributed {

namespace {

// A tensor travels as a header of kHeader int64 values (sender, dtype, ndim, sizes...)
// followed by its data.
constexpr int64_t kMaxDims = 8;
constexpr int64_t kHeader = 3 + kMaxDims;
// No activation, gradient or state tensor of a pipeline is near this; a header announcing
// more is garbage or hostile.
constexpr int64_t kMaxElements = int64_t{1} << 36;
// Commands travel on the control channel as Custom commands whose payload is the u64s
// {command, argument, flags}, then a Step's learning rates (a double's bits each).
constexpr int64_t kPerMicroBatchStatistics = 1;
constexpr int64_t kGradientsAreMeans = 2;  // AverageGradients: sum over replicas only

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

// This thread's default generator (what Dropout draws from) as int64 (seed, offset).
Tensor generator_row() {
  const Generator& g = default_generator();
  return tensor<int64_t>({std::bit_cast<int64_t>(g.seed()), std::bit_cast<int64_t>(g.offset())});
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

}  // namespace

// The remote stages in rank 0's graph: their inputs are what stage 0 sent on, their output
// the last stage's; backward sends the gradient around the ring of stages.
class PipelineBackward final : public Node {
 public:
  explicit PipelineBackward(PipelineModel* model) : model_(model) {}
  const char* name() const override { return "PipelineBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& grads) override { return model_->driver_backward(grads[0]); }

 private:
  PipelineModel* model_;
};

namespace {
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

void PipelineModel::command(Command c, int64_t argument, int64_t flags, const std::vector<double>& values) {
  PayloadWriter w;
  w.u64(static_cast<uint64_t>(c)).u64(static_cast<uint64_t>(argument)).u64(static_cast<uint64_t>(flags));
  for (double v : values) w.u64(std::bit_cast<uint64_t>(v));
  try {
    control_.driver->broadcast({CommandType::Custom, w.take()});
  } catch (const Error& e) {
    throw Error(std::string("PipelineModel: sending rank 0's command to the stages failed: ") + e.what());
  }
}

std::vector<int64_t> PipelineModel::micro_batch_sizes(int64_t n, int64_t m) {
  WICK_CHECK(m >= 1, "PipelineModel: the number of micro-batches must be >= 1, got ", m);
  WICK_CHECK(n >= m, "PipelineModel: a batch of ", n, " examples cannot be split into ", m,
             " micro-batches without an empty one; use batches of at least ", m, " examples or fewer micro-batches");
  // The first n % m micro-batches take one example more.
  std::vector<int64_t> sizes(static_cast<size_t>(m), n / m);
  for (int64_t i = 0; i < n % m; ++i) ++sizes[static_cast<size_t>(i)];
  return sizes;
}

namespace {
// This stage's BatchNorm layers, however deep in its modules.
void collect_batch_norms(const std::shared_ptr<Module>& module, std::vector<BatchNorm*>& out) {
  if (auto* bn = dynamic_cast<BatchNorm*>(module.get())) out.push_back(bn);
  for (const auto& child : module->children()) collect_batch_norms(child, out);
}
}  // namespace

void PipelineModel::begin_micro_batches(int64_t count, BatchNormStatistics statistics) {
  deferring_statistics_ = count > 1 && statistics == BatchNormStatistics::PerStep;
  std::vector<BatchNorm*> norms;
  for (const auto& child : children()) collect_batch_norms(child, norms);
  for (BatchNorm* bn : norms) bn->defer_running_stats(deferring_statistics_);
}

void PipelineModel::end_micro_batches() {
  if (!deferring_statistics_) return;
  deferring_statistics_ = false;
  std::vector<BatchNorm*> norms;
  for (const auto& child : children()) collect_batch_norms(child, norms);
  NoGradGuard no_grad;
  for (BatchNorm* bn : norms) {
    bn->commit_running_stats();
    bn->defer_running_stats(false);
  }
}

void PipelineModel::note_passes() { peak_passes_ = std::max(peak_passes_, passes_.size()); }

PipelineModel::Pass PipelineModel::run_stage(Variable input, std::map<std::string, Variable> available) {
  Pass pass;
  Variable h = input.device() == device_ ? input : wick::to(input, device_);
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (stage_of_[l] != comm_.rank()) continue;
    const size_t stage = static_cast<size_t>(comm_.rank());
    h = forward_layer(h, l, layers_[l], stage);
    for (const std::string& name : layers_[l].dependencies)
      h = add_dependency(h, available.at(name), l, layers_[l], name, stage);
    for (const std::string& name : layers_[l].outputs) available[name] = pass.kept[name] = h;
  }
  pass.output = h;
  return pass;
}

void PipelineModel::send_outputs(const Pass& pass, Outbox& outbox) {
  for (const Message& m : sends_)
    send((m.name.empty() ? pass.output : pass.kept.at(m.name)).data(), m.peer, kActivations, outbox);
}

Variable PipelineModel::forward(const Variable& x) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::forward runs on rank 0; rank ", comm_.rank(), " calls serve()");
  WICK_CHECK(!stopped_, "PipelineModel::forward: the pipeline was stopped");
  if (comm_.size() == 1) return run_stage(x, {}).output;
  const bool grad = grad_enabled();
  // GPipe over the micro-batches: every stage runs its forwards back to back, so stage s
  // works on micro-batch i while stage s + 1 works on micro-batch i - 1.
  // A batch of fewer examples than micro-batches goes one example per micro-batch: the
  // last batch of an epoch may be that small.
  std::vector<Variable> pieces = {x};
  if (x.dim() >= 1 && x.shape()[0] > 1 && micro_batches_ > 1)
    pieces = split(x, micro_batch_sizes(x.shape()[0], std::min(micro_batches_, x.shape()[0])), 0);
  const int64_t count = static_cast<int64_t>(pieces.size());
  const BatchNormStatistics statistics = batch_norm_statistics_;
  command(Command::Forward, count * 2 + (grad ? 1 : 0),
          statistics == BatchNormStatistics::PerMicroBatch ? kPerMicroBatchStatistics : 0);
  passes_.clear();
  Outbox outbox;
  begin_micro_batches(count, statistics);
  for (int64_t i = 0; i < count; ++i) {
    Pass pass = run_stage(pieces[i], {});
    send_outputs(pass, outbox);
    if (grad) passes_[i] = std::move(pass);
  }
  end_micro_batches();
  std::vector<Tensor> results;
  for (int64_t i = 0; i < count; ++i) results.push_back(receive(comm_.size() - 1, kActivations).to(device_));
  outbox.wait();
  note_passes();
  Variable out(count == 1 ? results[0] : wick::cat(results, 0));
  if (grad) {
    std::vector<const Variable*> inputs;
    for (auto& [id, pass] : passes_)
      for (const Message& m : sends_) inputs.push_back(m.name.empty() ? &pass.output : &pass.kept.at(m.name));
    micro_batch_sizes_.clear();
    for (const Tensor& r : results) micro_batch_sizes_.push_back(r.dim() >= 1 ? r.shape()[0] : 1);
    // The remote stages have parameters even when nothing here requires grad.
    auto node = std::make_shared<PipelineBackward>(this);
    connect(node, inputs, {&out});
  }
  return out;
}

std::vector<Variable> PipelineModel::driver_backward(const Variable& grad_output) {
  WICK_CHECK(!passes_.empty(), "PipelineModel: backward through a forward whose graph is gone");
  const int64_t count = static_cast<int64_t>(passes_.size());
  command(Command::Backward, count);
  Outbox outbox;
  std::vector<Tensor> pieces =
      count == 1 ? std::vector<Tensor>{grad_output.data()} : grad_output.data().split(micro_batch_sizes_, 0);
  for (const Tensor& g : pieces) send(g, comm_.size() - 1, kGradients, outbox);
  std::vector<Variable> grads;
  for (int64_t i = 0; i < count; ++i)
    for (const Message& m : sends_) grads.emplace_back(receive(m.peer, kGradients).to(device_));
  outbox.wait();
  passes_.clear();
  return grads;
}

void PipelineModel::worker_forward(bool grad, int64_t id, Outbox& outbox) {
  GradModeGuard mode(grad);
  Variable main;
  std::map<std::string, Variable> received;
  std::vector<Variable> inputs;
  for (const Message& m : receives_) {
    Tensor t = receive(m.peer, kActivations).to(device_);
    Variable v(t, grad && t.is_floating_point());
    (m.name.empty() ? main : received[m.name]) = v;
    inputs.push_back(v);
  }
  Pass pass = run_stage(main, std::move(received));
  pass.inputs = std::move(inputs);
  send_outputs(pass, outbox);
  if (grad) {
    passes_[id] = std::move(pass);
    note_passes();
  }
}

void PipelineModel::backward_from_sent(Pass& pass, std::vector<Tensor> grads) {
  // A named output sent to several stages gets the sum of their gradients.
  std::map<std::string, Tensor> grad_of;
  for (size_t i = 0; i < sends_.size(); ++i) {
    const Message& m = sends_[i];
    const Variable& out = m.name.empty() ? pass.output : pass.kept.at(m.name);
    WICK_CHECK(grads[i].shape() == out.shape(), "PipelineModel: rank ", m.peer, " sent a gradient of shape ",
               shape_str(grads[i].shape()), " for an output of shape ", shape_str(out.shape()));
    Tensor g = grads[i].to(out.device()).to(out.dtype());
    auto [it, fresh] = grad_of.emplace(m.name, g);
    if (!fresh) it->second = add(it->second, g);
  }
  std::vector<Variable> roots, root_grads;
  for (auto& [name, g] : grad_of) {
    const Variable& out = name.empty() ? pass.output : pass.kept.at(name);
    if (!out.requires_grad()) continue;
    roots.push_back(out);
    root_grads.emplace_back(g);
  }
  if (!roots.empty()) run_backward(roots, root_grads, /*retain_graph=*/false, /*create_graph=*/false);
}

void PipelineModel::worker_backward(int64_t id, Outbox& outbox) {
  auto it = passes_.find(id);
  WICK_CHECK(it != passes_.end(), "PipelineModel: rank ", comm_.rank(), " was asked for the backward of micro-batch ",
             id, " without its forward");
  Pass pass = std::move(it->second);
  passes_.erase(it);
  std::vector<Tensor> grads;
  for (const Message& m : sends_) grads.push_back(receive(m.peer, kGradients));
  backward_from_sent(pass, std::move(grads));
  for (size_t i = 0; i < receives_.size(); ++i) {
    const Variable& in = pass.inputs[i];
    send(in.grad().defined() ? in.grad().data() : zeros_like(in.data()), receives_[i].peer, kGradients, outbox);
  }
}

namespace {
// The order of one stage's work in a train step: (forward?, micro-batch) pairs.
std::vector<std::pair<bool, int64_t>> stage_order(PipelineModel::Schedule schedule, int stage, int stages, int64_t m) {
  std::vector<std::pair<bool, int64_t>> order;
  if (schedule == PipelineModel::Schedule::GPipe) {
    for (int64_t i = 0; i < m; ++i) order.emplace_back(true, i);
    for (int64_t i = 0; i < m; ++i) order.emplace_back(false, i);
    return order;
  }
  // 1F1B (PipeDream-Flush): as many forwards as stages after this one, then one forward
  // and one backward in turn, then the remaining backwards.
  const int64_t warmup = std::min<int64_t>(stages - 1 - stage, m);
  for (int64_t i = 0; i < warmup; ++i) order.emplace_back(true, i);
  for (int64_t i = 0; i < m - warmup; ++i) {
    order.emplace_back(true, warmup + i);
    order.emplace_back(false, i);
  }
  for (int64_t i = m - warmup; i < m; ++i) order.emplace_back(false, i);
  return order;
}
}  // namespace

void PipelineModel::worker_train_step(int64_t micro_batches, Schedule schedule, BatchNormStatistics statistics) {
  Outbox outbox;
  passes_.clear();
  peak_passes_ = 0;
  begin_micro_batches(micro_batches, statistics);
  int64_t forwards = 0;
  for (auto [forward, id] : stage_order(schedule, comm_.rank(), comm_.size(), micro_batches)) {
    if (forward) {
      worker_forward(true, id, outbox);
      // The running statistics are not read in training, so they may wait for the
      // step's last forward even while backwards run in between (1F1B).
      if (++forwards == micro_batches) end_micro_batches();
    } else {
      worker_backward(id, outbox);
    }
  }
  outbox.wait();
}

double PipelineModel::train_step(const Tensor& input, const Tensor& target, const LossFn& loss, int64_t micro_batches,
                                 Schedule schedule) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::train_step runs on rank 0");
  WICK_CHECK(!stopped_, "PipelineModel::train_step: the pipeline was stopped");
  WICK_CHECK(input.dim() >= 1 && target.dim() >= 1 && input.shape()[0] == target.shape()[0] && input.shape()[0] > 0,
             "PipelineModel::train_step: input ", shape_str(input.shape()), " and target ", shape_str(target.shape()),
             " must have the same, non-zero, first dimension");
  std::vector<int64_t> sizes;
  try {
    sizes = micro_batch_sizes(input.shape()[0], micro_batches);
  } catch (const Error& e) {
    throw Error(std::string("PipelineModel::train_step: input ") + shape_str(input.shape()) + ": " + e.what());
  }
  std::vector<Tensor> xs = input.split(sizes, 0), ts = target.split(sizes, 0);
  const int64_t m = micro_batches;
  const double total = static_cast<double>(input.shape()[0]);
  const int last = comm_.size() - 1;
  const BatchNormStatistics statistics = batch_norm_statistics_;
  if (comm_.size() > 1)
    command(Command::TrainStep, m * 2 + (schedule == Schedule::GPipe ? 0 : 1),
            statistics == BatchNormStatistics::PerMicroBatch ? kPerMicroBatchStatistics : 0);
  passes_.clear();
  peak_passes_ = 0;
  begin_micro_batches(m, statistics);
  int64_t forwards = 0;
  Outbox outbox;
  double loss_sum = 0;
  int64_t losses_done = 0;
  // The loss of micro-batch i on the last stage's output, its gradient sent back there. The
  // mean over the batch is the micro-batches' means weighted by their sizes.
  auto loss_of = [&](int64_t i, const Variable& output) {
    const double weight = static_cast<double>(xs[i].shape()[0]) / total;
    Variable l = mul(loss(output, Variable(ts[i].to(output.device()))), weight);
    loss_sum += l.item<double>();
    return l;
  };
  auto remote_loss = [&](int64_t i) {
    Variable output(receive(last, kActivations).to(device_), true);
    loss_of(i, output).backward();
    send(output.grad().data(), last, kGradients, outbox);
    ++losses_done;
  };
  for (auto [forward, id] : stage_order(schedule, 0, comm_.size(), m)) {
    if (forward) {
      Pass pass = run_stage(Variable(xs[id]), {});
      if (++forwards == m) end_micro_batches();
      if (comm_.size() == 1) {
        loss_of(id, pass.output).backward();  // a single stage: no pipeline
        continue;
      }
      send_outputs(pass, outbox);
      passes_[id] = std::move(pass);
      note_passes();
    } else if (comm_.size() > 1) {
      // The last stage needs this micro-batch's loss gradient (and those before it) first;
      // GPipe computes every loss before the first backward.
      const int64_t needed = schedule == Schedule::GPipe ? m : id + 1;
      while (losses_done < needed) remote_loss(losses_done);
      std::vector<Tensor> grads;
      for (const Message& m : sends_) grads.push_back(receive(m.peer, kGradients));
      backward_from_sent(passes_.at(id), std::move(grads));
      passes_.erase(id);
    }
  }
  outbox.wait();
  return loss_sum;
}

void PipelineModel::step(Optimizer& optimizer) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::step runs on rank 0");
  optimizer.step();
  optimizer.zero_grad();
  step_other_stages(optimizer);
}

void PipelineModel::abort() {
  if (comm_.rank() == 0 && comm_.size() > 1 && !stopped_) {
    stopped_ = true;
    try {
      command(Command::Abort);
    } catch (const Error&) {  // a stage that is gone already knows
    }
  }
  comm_.abort();
  for (auto* links : {out_, in_})
    for (int kind : {kActivations, kGradients})
      for (auto& [peer, link] : links[kind]) link->abort();
}

void PipelineModel::step_other_stages(const Optimizer& optimizer) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::step_other_stages runs on rank 0");
  if (comm_.size() == 1) return;
  std::vector<double> lrs;
  for (size_t g = 0; g < optimizer.num_groups(); ++g) lrs.push_back(optimizer.lr(g));
  // The same message as a data-parallel follower's Train: absolute values, one per group.
  command(Command::Step, static_cast<int64_t>(lrs.size()), 0, lrs);
}

void PipelineModel::set_learning_rates(Optimizer& optimizer, const std::vector<double>& lrs) {
  if (lrs.empty()) return;  // rank 0's stage has no parameters: each stage keeps its own
  WICK_CHECK(lrs.size() == optimizer.num_groups(), "PipelineModel: stage ", comm_.rank(), "'s optimizer has ",
             optimizer.num_groups(), " parameter groups and rank 0's has ", lrs.size(),
             ": every stage takes rank 0's learning rates, one per group");
  for (size_t g = 0; g < lrs.size(); ++g) optimizer.set_lr(g, lrs[g]);
}

StateDict PipelineModel::state_dict() const {
  if (comm_.rank() != 0 || comm_.size() == 1 || stopped_) return Module::state_dict();
  // Gathering talks to the other ranks but changes nothing of this module's state.
  return const_cast<PipelineModel*>(this)->state_dict_of_all_stages();
}

Module::LoadResult PipelineModel::load_state_dict(const StateDict& dict, bool strict) {
  if (comm_.rank() != 0 || comm_.size() == 1 || stopped_) return Module::load_state_dict(dict, strict);
  WICK_CHECK(strict, "PipelineModel::load_state_dict: only strict loading is supported across stages");
  load_state_dict_into_all_stages(dict);
  return {};
}

LoopState fit_pipeline(const std::shared_ptr<PipelineModel>& model, const LossFunction& loss, Optimizer& optimizer,
                       BatchStream* train, BatchStream* validation, LoopOptions options, bool count_correct) {
  WICK_CHECK(model != nullptr, "fit_pipeline: no model");
  if (model->stage() != 0) {
    model->serve(optimizer);
    return {};
  }
  WICK_CHECK(train != nullptr && loss, "fit_pipeline: rank 0 needs a train stream and a loss");
  SupervisedModel supervised{model, loss, count_correct, {}, {}, {}};
  PipelineSync sync(*model, optimizer);
  TrainingLoop loop(supervised, optimizer, *train, validation, std::move(options), sync);
  try {
    return loop.run();
  } catch (...) {
    model->abort();
    throw;
  }
}

void PipelineModel::set_replicas(Communicator* replicas) {
  replicas_ = replicas;
  // The data-parallel reducer over this stage's parameters: buckets, and the gradients
  // left as views of them (the hooks it registers only act while it is armed, here never
  // during a backward: every stage reduces on rank 0's command, after the backward).
  replica_gradients_ = replicas ? std::make_unique<DataParallelSync>(*replicas, *this) : nullptr;
}

void PipelineModel::average_own_gradients(double examples, bool means) {
  if (replicas_ == nullptr) {
    if (!means) divide_gradients(parameters(), examples);
    return;
  }
  // Every stage of a replica arms with its rank 0's examples, so each stage's count is the
  // sum over the replicas (a replica out of batches adds 0, and zero gradients).
  replica_gradients_->arm_gradient_sync(examples);
  replica_gradients_->finish_gradient_sync({}, means);
}

void PipelineModel::average_gradients(double examples, bool means) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::average_gradients runs on rank 0");
  WICK_CHECK(std::isfinite(examples) && examples >= 0, "PipelineModel::average_gradients: examples must be a finite "
             "number >= 0, got ", examples);
  if (means && replicas_ == nullptr) return;  // nothing to sum, nothing to divide
  int64_t bits = 0;
  std::memcpy(&bits, &examples, sizeof bits);
  if (comm_.size() > 1) command(Command::AverageGradients, bits, means ? kGradientsAreMeans : 0);
  average_own_gradients(examples, means);
}

void PipelineSync::finish_gradient_sync(const std::vector<Variable>& /*params*/, bool means) {
  model_.average_gradients(examples_, means);
}

std::vector<double> PipelineSync::sum(std::vector<double> values) {
  Communicator* replicas = model_.replicas();
  return replicas ? sum_over_ranks(*replicas, std::move(values)) : values;
}

int64_t PipelineSync::max(int64_t value) {
  Communicator* replicas = model_.replicas();
  return replicas ? max_over_ranks(*replicas, value) : value;
}

double PipelineModel::local_square_norm() const {
  double sum = 0;
  for (const Variable& p : parameters())
    if (p.grad().defined()) {
      Tensor g = p.grad().data().to(DType::Float64);
      sum += mul(g, g).sum().item<double>();
    }
  return sum;
}

double PipelineModel::clip_grad_norm(double max_norm) {
  if (comm_.rank() == 0) {
    WICK_CHECK(std::isfinite(max_norm) && max_norm > 0, "PipelineModel::clip_grad_norm: max_norm must be > 0, got ",
               max_norm);
    int64_t bits = 0;
    std::memcpy(&bits, &max_norm, sizeof bits);
    if (comm_.size() > 1) command(Command::Clip, bits);
  }
  Tensor total = tensor<double>({local_square_norm()}).to(comm_.device());
  comm_.all_reduce({total}, ReduceOp::Sum)->wait();
  const double norm = std::sqrt(total.item<double>());
  // As clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is below 1.
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1) {
    NoGradGuard no_grad;
    for (const Variable& p : parameters())
      if (p.grad().defined()) p.grad().data().mul_(coef);
  }
  return norm;
}

void PipelineModel::train(bool on) {
  Module::train(on);
  if (comm_.rank() == 0 && comm_.size() > 1 && !stopped_) command(Command::Train, on ? 1 : 0);
}

std::vector<std::pair<std::string, Tensor>> PipelineModel::stage_state(int stage) const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t l = 0; l < layers_.size(); ++l)
    if (stage_of_[l] == stage)
      for (const auto& [name, t] : layers_[l].module->state_dict().to_map()) out.emplace_back(std::to_string(l) + "." + name, t);
  return out;
}

StateDict PipelineModel::state_dict_of_all_stages() {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::state_dict_of_all_stages runs on rank 0");
  WICK_CHECK(!stopped_, "PipelineModel::state_dict_of_all_stages: the pipeline was stopped");
  if (comm_.size() > 1) command(Command::SendState);
  std::map<std::string, Tensor> all;
  for (int s = 0; s < comm_.size(); ++s)
    for (auto& [name, t] : stage_state(s)) {
      if (s > 0) {
        Tensor got = receive(s, kActivations);
        WICK_CHECK(got.shape() == t.shape() && got.dtype() == t.dtype(), "PipelineModel: rank ", s, " sent ",
                   name, " as ", dtype_name(got.dtype()), " ", shape_str(got.shape()), ", expected ",
                   dtype_name(t.dtype()), " ", shape_str(t.shape()));
        t.copy_(got);
      }
      all[name] = t;
    }
  return StateDict(all);
}

void PipelineModel::load_state_dict_into_all_stages(const StateDict& dict) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::load_state_dict_into_all_stages runs on rank 0");
  WICK_CHECK(!stopped_, "PipelineModel::load_state_dict_into_all_stages: the pipeline was stopped");
  // Everything is checked before anything is written or sent.
  std::map<std::string, Tensor> given = dict.to_map();
  size_t expected = 0;
  for (int s = 0; s < comm_.size(); ++s)
    for (const auto& [name, t] : stage_state(s)) {
      ++expected;
      auto it = given.find(name);
      WICK_CHECK(it != given.end(), "PipelineModel::load_state_dict_into_all_stages: missing '", name, "'");
      WICK_CHECK(it->second.shape() == t.shape() && it->second.dtype() == t.dtype(),
                 "PipelineModel::load_state_dict_into_all_stages: '", name, "' is ", dtype_name(it->second.dtype()),
                 " ", shape_str(it->second.shape()), ", the model has ", dtype_name(t.dtype()), " ",
                 shape_str(t.shape()));
    }
  WICK_CHECK(given.size() == expected, "PipelineModel::load_state_dict_into_all_stages: ", given.size() - expected,
             " unexpected entries");
  if (comm_.size() > 1) command(Command::LoadState);
  Outbox outbox;
  NoGradGuard no_grad;
  for (int s = 0; s < comm_.size(); ++s)
    for (auto& [name, t] : stage_state(s)) {
      t.copy_(given.at(name));
      if (s > 0) send(t, s, kActivations, outbox);
    }
  outbox.wait();
}

namespace {
Tensor name_tensor(const std::string& name) {
  return tensor<uint8_t>(std::vector<uint8_t>(name.begin(), name.end()));
}
std::string name_of(const Tensor& t) {
  WICK_CHECK(t.dtype() == DType::UInt8 && t.dim() == 1 && t.numel() <= 4096,
             "PipelineModel: expected a state entry's name, got ", dtype_name(t.dtype()), " ", shape_str(t.shape()));
  std::vector<uint8_t> bytes = t.cpu().to_vector<uint8_t>();
  return std::string(bytes.begin(), bytes.end());
}
}  // namespace

// A state travels as its entry count, then (name, tensor) pairs.
TensorMap PipelineModel::optimizer_state_of_other_stages() {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::optimizer_state_of_other_stages runs on rank 0");
  WICK_CHECK(!stopped_, "PipelineModel::optimizer_state_of_other_stages: the pipeline was stopped");
  TensorMap all;
  if (comm_.size() == 1) return all;
  command(Command::SendOptimizer);
  for (int s = 1; s < comm_.size(); ++s) {
    Tensor count = receive(s, kActivations);
    WICK_CHECK(count.dtype() == DType::Int64 && count.numel() == 1, "PipelineModel: rank ", s,
               " sent a malformed optimizer state");
    const int64_t n = count.item<int64_t>();
    WICK_CHECK(n >= 0 && n <= (int64_t{1} << 24), "PipelineModel: rank ", s, " announced ", n, " state entries");
    for (int64_t i = 0; i < n; ++i) {
      std::string name = name_of(receive(s, kActivations));
      all["stage" + std::to_string(s) + "." + name] = receive(s, kActivations).cpu();
    }
  }
  return all;
}

void PipelineModel::load_optimizer_state_of_other_stages(const TensorMap& state) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::load_optimizer_state_of_other_stages runs on rank 0");
  WICK_CHECK(!stopped_, "PipelineModel::load_optimizer_state_of_other_stages: the pipeline was stopped");
  std::vector<TensorMap> by_stage(comm_.size());
  for (const auto& [key, t] : state) {
    const size_t dot = key.find('.');
    int s = -1;
    if (key.rfind("stage", 0) == 0 && dot != std::string::npos) {
      const std::string digits = key.substr(5, dot - 5);
      if (!digits.empty() && digits.size() < 6 && digits.find_first_not_of("0123456789") == std::string::npos)
        s = std::stoi(digits);
    }
    WICK_CHECK(s >= 1 && s < comm_.size(), "PipelineModel: optimizer state entry '", key, "' names no stage of 1..",
               comm_.size() - 1);
    by_stage[s][key.substr(dot + 1)] = t;
  }
  if (comm_.size() == 1) return;
  command(Command::LoadOptimizer);
  Outbox outbox;
  for (int s = 1; s < comm_.size(); ++s) {
    send(tensor<int64_t>({static_cast<int64_t>(by_stage[s].size())}), s, kActivations, outbox);
    for (const auto& [name, t] : by_stage[s]) {
      send(name_tensor(name), s, kActivations, outbox);
      send(t, s, kActivations, outbox);
    }
  }
  outbox.wait();
}

Tensor PipelineModel::generators_of_all_stages() {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::generators_of_all_stages runs on rank 0");
  WICK_CHECK(!stopped_, "PipelineModel::generators_of_all_stages: the pipeline was stopped");
  std::vector<Tensor> rows = {generator_row()};
  if (comm_.size() > 1) command(Command::SendGenerator);
  for (int s = 1; s < comm_.size(); ++s) {
    Tensor row = receive(s, kActivations).cpu();
    WICK_CHECK(row.dtype() == DType::Int64 && row.shape() == Shape{2}, "PipelineModel: rank ", s,
               " sent a generator state of ", dtype_name(row.dtype()), " ", shape_str(row.shape()),
               ", expected int64 [2]");
    rows.push_back(row);
  }
  return stack(rows, 0);
}

void PipelineModel::load_generators_into_other_stages(const Tensor& generators) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::load_generators_into_other_stages runs on rank 0");
  WICK_CHECK(!stopped_, "PipelineModel::load_generators_into_other_stages: the pipeline was stopped");
  WICK_CHECK(generators.dtype() == DType::Int64 && generators.shape() == Shape({comm_.size(), 2}),
             "PipelineModel::load_generators_into_other_stages: expected int64 [", comm_.size(),
             ", 2] (one (seed, offset) row per stage), got ", dtype_name(generators.dtype()), " ",
             shape_str(generators.shape()));
  if (comm_.size() == 1) return;
  command(Command::LoadGenerator);
  Outbox outbox;
  Tensor rows = generators.cpu().contiguous();
  for (int s = 1; s < comm_.size(); ++s) send(rows.select(0, s).contiguous(), s, kActivations, outbox);
  outbox.wait();
}

TensorMap PipelineSync::state_dict() const {
  TensorMap state = model_.optimizer_state_of_other_stages();
  state["generators"] = model_.generators_of_all_stages();
  return state;
}

void PipelineSync::load_state_dict(const TensorMap& state) {
  TensorMap optimizers = state;
  auto it = optimizers.find("generators");
  std::optional<Tensor> generators;
  if (it != optimizers.end()) {
    generators = it->second;
    optimizers.erase(it);
  }
  // The generators first: their check refuses a checkpoint of another stage count before
  // anything is loaded.
  if (generators) model_.load_generators_into_other_stages(*generators);
  model_.load_optimizer_state_of_other_stages(optimizers);
}

void PipelineModel::stop() {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::stop runs on rank 0");
  if (stopped_) return;
  stopped_ = true;
  if (comm_.size() > 1) command(Command::Stop);
}

void PipelineModel::serve(Optimizer& optimizer) {
  WICK_CHECK(comm_.rank() > 0, "PipelineModel::serve runs on ranks other than 0");
  try {
    while (true) {
      distributed::Command received;
      try {
        received = control_.follower->receive(timeout_);
      } catch (const Error& e) {
        throw Error("PipelineModel: stage " + std::to_string(comm_.rank()) +
                    " waiting for rank 0's next command: " + e.what());
      }
      WICK_CHECK(received.type == CommandType::Custom, "PipelineModel: stage ", comm_.rank(),
                 " got a control command '", command_type_name(received.type), "' instead of a pipeline command");
      PayloadReader reader(received.payload, "pipeline command");
      std::vector<int64_t> v;
      for (int i = 0; i < 3; ++i) v.push_back(static_cast<int64_t>(reader.u64()));
      std::vector<double> values;  // a Step's learning rates, as many as its argument says
      for (int64_t i = 0; static_cast<Command>(v[0]) == Command::Step && i < v[1]; ++i)
        values.push_back(std::bit_cast<double>(reader.u64()));
      reader.expect_end();
      const BatchNormStatistics statistics = (v[2] & kPerMicroBatchStatistics) != 0
                                                 ? BatchNormStatistics::PerMicroBatch
                                                 : BatchNormStatistics::PerStep;
      switch (static_cast<Command>(v[0])) {
        case Command::Forward: {  // argument: micro-batches * 2 + whether to record a graph
          Outbox outbox;
          passes_.clear();
          const int64_t count = std::max<int64_t>(v[1] / 2, 1);
          begin_micro_batches(count, statistics);
          for (int64_t i = 0; i < count; ++i) worker_forward(v[1] % 2 != 0, i, outbox);
          end_micro_batches();
          outbox.wait();
          break;
        }
        case Command::Backward: {  // argument: micro-batches
          Outbox outbox;
          for (int64_t i = 0; i < v[1]; ++i) worker_backward(i, outbox);
          outbox.wait();
          break;
        }
        case Command::TrainStep:
          WICK_CHECK(v[1] >= 2, "PipelineModel: rank 0 asked for a train step of ", v[1] / 2, " micro-batches");
          worker_train_step(v[1] / 2, v[1] % 2 == 0 ? Schedule::GPipe : Schedule::OneFOneB, statistics);
          break;
        case Command::Step: {  // argument: how many of rank 0's learning rates follow
          set_learning_rates(optimizer, values);
          optimizer.step();
          optimizer.zero_grad();
          break;
        }
        case Command::Clip: {
          double max_norm = 0;
          std::memcpy(&max_norm, &v[1], sizeof max_norm);
          clip_grad_norm(max_norm);
          break;
        }
        case Command::AverageGradients: {  // argument: rank 0's examples (a double's bits)
          double examples = 0;
          std::memcpy(&examples, &v[1], sizeof examples);
          average_own_gradients(examples, (v[2] & kGradientsAreMeans) != 0);
          break;
        }
        case Command::Train:
          Module::train(v[1] != 0);
          break;
        case Command::SendState: {
          Outbox outbox;
          for (const auto& [name, t] : stage_state(comm_.rank())) send(t, 0, kActivations, outbox);
          outbox.wait();
          break;
        }
        case Command::LoadState: {
          NoGradGuard no_grad;
          for (auto& [name, t] : stage_state(comm_.rank())) {
            Tensor got = receive(0, kActivations);
            WICK_CHECK(got.shape() == t.shape() && got.dtype() == t.dtype(), "PipelineModel: rank 0 sent ", name,
                       " as ", shape_str(got.shape()), ", expected ", shape_str(t.shape()));
            t.copy_(got);
          }
          break;
        }
        case Command::SendOptimizer: {
          TensorMap state = optimizer.state_dict();
          Outbox outbox;
          send(tensor<int64_t>({static_cast<int64_t>(state.size())}), 0, kActivations, outbox);
          for (const auto& [name, t] : state) {
            send(name_tensor(name), 0, kActivations, outbox);
            send(t, 0, kActivations, outbox);
          }
          outbox.wait();
          break;
        }
        case Command::LoadOptimizer: {
          Tensor count = receive(0, kActivations);
          WICK_CHECK(count.dtype() == DType::Int64 && count.numel() == 1, "PipelineModel: malformed optimizer state");
          const int64_t n = count.item<int64_t>();
          WICK_CHECK(n >= 0 && n <= (int64_t{1} << 24), "PipelineModel: rank 0 announced ", n, " state entries");
          TensorMap state;
          for (int64_t i = 0; i < n; ++i) {
            std::string name = name_of(receive(0, kActivations));
            state[name] = receive(0, kActivations).to(device_);
          }
          if (!state.empty()) optimizer.load_state_dict(state);
          break;
        }
        case Command::SendGenerator: {
          Outbox outbox;
          send(generator_row(), 0, kActivations, outbox);
          outbox.wait();
          break;
        }
        case Command::LoadGenerator: {
          Tensor row = receive(0, kActivations);
          WICK_CHECK(row.dtype() == DType::Int64 && row.shape() == Shape{2},
                     "PipelineModel: rank 0 sent a generator state of ", dtype_name(row.dtype()), " ",
                     shape_str(row.shape()), ", expected int64 [2]");
          const std::vector<int64_t> state = row.to_vector<int64_t>();
          default_generator().set_state(std::bit_cast<uint64_t>(state[0]), std::bit_cast<uint64_t>(state[1]));
          break;
        }
        case Command::Stop:
          return;
        case Command::Abort:
          throw Error("PipelineModel: rank 0 gave up (its own error says why); stage " + std::to_string(comm_.rank()) +
                      " stops serving");
        default:
          throw Error("PipelineModel: rank " + std::to_string(comm_.rank()) + " got an unknown command " +
                      std::to_string(v[0]) + " from rank 0");
      }
    }
  } catch (...) {
    // The other ranks must not wait for their timeout as well.
    abort();
    throw;
  }
}

namespace {

constexpr int64_t kMaxDescriptionBytes = int64_t{16} << 20;

std::string encode_description(const PipelineDescription& d) {
  std::ostringstream s;
  s << "seed " << d.seed << "\nstarts";
  for (size_t start : d.stage_starts) s << ' ' << start;
  s << "\ninput " << static_cast<int>(d.input_dtype);
  for (int64_t size : d.input_shape) s << ' ' << size;
  s << "\noptimizer " << encode_optimizer_spec(d.optimizer) << "\nlayers\n" << encode_layer_specs(d.layers);
  return s.str();
}

PipelineDescription decode_description(const std::string& text) {
  PipelineDescription d;
  std::istringstream s(text);
  auto line = [&](const char* key) {
    std::string l;
    WICK_CHECK(std::getline(s, l) && l.rfind(key, 0) == 0, "join_pipeline: malformed description (expected '", key,
               "')");
    return std::istringstream(l.substr(std::strlen(key)));
  };
  auto numbers = [](std::istringstream in, const char* what) {
    std::vector<int64_t> out;
    for (std::string w; in >> w;) {
      char* end = nullptr;
      const long long v = std::strtoll(w.c_str(), &end, 10);
      WICK_CHECK(*end == '\0' && v >= 0 && v < (1LL << 40), "join_pipeline: malformed ", what, " '", w, "'");
      out.push_back(v);
    }
    return out;
  };
  std::vector<int64_t> seed = numbers(line("seed"), "seed");
  WICK_CHECK(seed.size() == 1, "join_pipeline: malformed seed");
  d.seed = static_cast<uint64_t>(seed[0]);
  for (int64_t v : numbers(line("starts"), "stage start")) d.stage_starts.push_back(static_cast<size_t>(v));
  std::vector<int64_t> input = numbers(line("input"), "input shape");
  WICK_CHECK(!input.empty() && input[0] < kNumDTypes && input.size() <= 9, "join_pipeline: malformed input");
  d.input_dtype = static_cast<DType>(input[0]);
  d.input_shape.assign(input.begin() + 1, input.end());
  d.optimizer = decode_optimizer_spec(line("optimizer ").str());
  line("layers");
  std::string rest((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
  d.layers = decode_layer_specs(rest);
  return d;
}

// Everything a rank needs from a description, built the same way everywhere.
DistributedPipeline build_pipeline(Communicator& comm, ControlEndpoint control, PipelineDescription d, Device device,
                                   Milliseconds timeout) {
  Generator g(d.seed);
  std::vector<StagedLayer> layers = make_layers(d.layers, &g);
  if (d.stage_starts.empty()) {
    std::vector<int64_t> sizes;
    for (const StagedLayer& l : layers) {
      int64_t n = 0;
      for (const Variable& p : l.module->parameters()) n += p.numel();
      sizes.push_back(n);
    }
    d.stage_starts = balanced_stage_starts(sizes, static_cast<size_t>(comm.size()));
  }
  DistributedPipeline out;
  out.model = std::make_shared<PipelineModel>(comm, control, std::move(layers), d.stage_starts, device, timeout);
  out.optimizer = make_optimizer(d.optimizer, out.model->named_parameters());
  out.description = std::move(d);
  return out;
}

// Rank 0's part of the hand-over, on the control channel: a Custom command of {status (0
// ok, 1 refused), the text}.
void broadcast_text(const ControlEndpoint& control, uint8_t status, const std::string& text) {
  WICK_CHECK(control.driver != nullptr, "distribute_pipeline: rank 0 needs the driver's end of the control channel");
  control.driver->broadcast({CommandType::Custom, PayloadWriter().u8(status).string(text).take()});
}

}  // namespace

DistributedPipeline distribute_pipeline(Communicator& comm, ControlEndpoint control,
                                        const PipelineDescription& description, Device device, Milliseconds timeout) {
  WICK_CHECK(comm.rank() == 0, "distribute_pipeline runs on rank 0; the others call join_pipeline");
  std::string text;
  try {
    text = encode_description(description);
    WICK_CHECK(static_cast<int64_t>(text.size()) <= kMaxDescriptionBytes, "the description takes ", text.size(),
               " bytes, more than ", kMaxDescriptionBytes);
    // Everything the other ranks will do with it, checked here first.
    PipelineDescription d = decode_description(text);
    Generator g(d.seed);
    std::vector<StagedLayer> layers = make_layers(d.layers, &g);
    std::vector<size_t> starts = d.stage_starts;
    if (starts.empty()) {
      std::vector<int64_t> sizes;
      for (const StagedLayer& l : layers) {
        int64_t n = 0;
        for (const Variable& p : l.module->parameters()) n += p.numel();
        sizes.push_back(n);
      }
      starts = balanced_stage_starts(sizes, static_cast<size_t>(comm.size()));
    }
    WICK_CHECK(starts.size() == static_cast<size_t>(comm.size()), starts.size(), " stages for ", comm.size(),
               " ranks");
    check_stages(layers, starts, starts.size());
    if (!d.input_shape.empty()) {
      // The whole model on the CPU, its stages as they will be (so errors name them).
      StagedModel whole(layers, starts, std::vector<Device>(starts.size(), Device::cpu()));
      whole.eval();
      NoGradGuard no_grad;
      Shape batch = {2};
      batch.insert(batch.end(), d.input_shape.begin(), d.input_shape.end());
      whole.forward(Variable(zeros(batch, d.input_dtype)));
    }
  } catch (const Error& e) {
    const std::string why = std::string("the pipeline description was refused: ") + e.what();
    if (comm.size() > 1) broadcast_text(control, 1, why);
    throw Error("distribute_pipeline: " + why);
  }
  if (comm.size() > 1) broadcast_text(control, 0, text);
  return build_pipeline(comm, control, decode_description(text), device, timeout);
}

DistributedPipeline join_pipeline(Communicator& comm, ControlEndpoint control, Device device, Milliseconds timeout) {
  WICK_CHECK(comm.rank() != 0, "join_pipeline runs on ranks other than 0; rank 0 calls distribute_pipeline");
  WICK_CHECK(control.follower != nullptr, "join_pipeline: rank ", comm.rank(),
             " needs a follower's end of the control channel");
  const Command c = control.follower->receive(timeout);
  WICK_CHECK(c.type == CommandType::Custom, "join_pipeline: expected rank 0's description, got a '",
             command_type_name(c.type), "' command");
  PayloadReader reader(c.payload, "pipeline description");
  const uint8_t status = reader.u8();
  const std::string text = reader.string();
  reader.expect_end();
  WICK_CHECK(status <= 1 && static_cast<int64_t>(text.size()) <= kMaxDescriptionBytes,
             "join_pipeline: rank 0 sent a description of ", text.size(), " bytes (status ", int{status}, ")");
  if (status == 1) throw Error("join_pipeline: rank 0 says " + text);
  return build_pipeline(comm, control, decode_description(text), device, timeout);
}

}  // namespace wick::distributed
