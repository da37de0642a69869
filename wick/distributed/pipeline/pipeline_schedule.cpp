// PipelineModel's schedules: how a batch goes through the stages as micro-batches (rank 0's
// forward and its backward node, train_step's GPipe and 1F1B orders on every stage) and how
// BatchNorm's running statistics follow them.
#include <wick/distributed/pipeline/pipeline.h>

#include <algorithm>

#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/distributed/pipeline/stage_command.h>
#include <wick/nn/norm.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/join.h>

namespace wick::distributed {

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
std::vector<BatchNorm*> batch_norms_in(const std::vector<std::shared_ptr<Module>>& roots) {
  std::vector<BatchNorm*> out;
  std::vector<std::shared_ptr<Module>> todo = roots;
  while (!todo.empty()) {
    std::shared_ptr<Module> module = std::move(todo.back());
    todo.pop_back();
    if (auto* bn = dynamic_cast<BatchNorm*>(module.get())) out.push_back(bn);
    for (auto& child : module->children()) todo.push_back(std::move(child));
  }
  return out;
}
}  // namespace

void PipelineModel::begin_micro_batches(int64_t count, BatchNormStatistics statistics) {
  deferring_statistics_ = count > 1 && statistics == BatchNormStatistics::PerStep;
  for (BatchNorm* bn : batch_norms_in(children())) bn->defer_running_stats(deferring_statistics_);
}

void PipelineModel::end_micro_batches() {
  if (!deferring_statistics_) return;
  deferring_statistics_ = false;
  NoGradGuard no_grad;
  for (BatchNorm* bn : batch_norms_in(children())) {
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
  command(encode_stage_command(stage::Forward{count, grad, statistics}));
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
  command(encode_stage_command(stage::Backward{count}));
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
    command(encode_stage_command(stage::TrainStep{m, schedule, statistics}));
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

}  // namespace wick::distributed
