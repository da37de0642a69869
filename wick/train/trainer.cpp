#include <wick/train/trainer.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include <wick/autograd/autocast.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/cuda.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/reduce.h>

namespace wick {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// One batch through the model: the supervised form (output and loss), or your step (loss
// and metrics, checked against their declaration).
struct BatchResult {
  Variable loss, output;
  std::map<std::string, Tensor> metrics;
};

// Autocast's device: the parameters' (looked up once per pass, not per batch); unset for a
// model without parameters, which autocasts on its batch's device.
std::optional<Device> parameter_device(const SupervisedModel& model) {
  for (const Variable& p : model.module->parameters()) return p.device();
  return std::nullopt;
}

BatchResult run_batch(const SupervisedModel& model, const StepFunction& step, const Batch& batch, Precision precision,
                      std::optional<Device> device) {
  std::optional<AutocastGuard> autocast;
  if (precision != Precision::Float32)
    autocast.emplace(device.value_or(batch.inputs.defined() ? batch.inputs.device() : Device::cpu()),
                     precision == Precision::BFloat16 ? DType::BFloat16 : DType::Float16);
  if (!step) {
    Variable output = dynamic_cast<UnaryModule&>(*model.module).forward(Variable(batch.inputs));
    return {model.loss(output, batch.targets), output, {}};
  }
  StepOutput out = step(*model.module, batch);
  WICK_CHECK(out.loss.defined(), "Trainer: your step returned no loss");
  for (const auto& [name, value] : out.metrics) {
    WICK_CHECK(std::find(model.metrics.begin(), model.metrics.end(), name) != model.metrics.end(),
               "Trainer: your step returned the metric '", name,
               "', which is not declared in SupervisedModel::metrics");
    WICK_CHECK(value.defined() && value.numel() == 1, "Trainer: your step's metric '", name, "' has ",
               value.defined() ? value.numel() : 0, " values, expected one value (a 0-d tensor)");
  }
  for (const std::string& name : model.metrics)
    WICK_CHECK(out.metrics.count(name), "Trainer: your step did not return the metric '", name,
               "' declared in SupervisedModel::metrics");
  return {out.loss, Variable(), std::move(out.metrics)};
}

// Running sums kept on the batch's device, so that a GPU is not synced for every batch.
struct RunningSums {
  Tensor loss_sum, correct;
  std::vector<Tensor> metric_sums;  // in the order of SupervisedModel::metrics

  void add(const SupervisedModel& model, const BatchResult& r, const Tensor& target, int64_t n) {
    if (!loss_sum.defined()) {
      loss_sum = zeros({}, Options(DType::Float64, r.loss.device()));
      correct = zeros({}, Options(DType::Int64, r.loss.device()));
      for (size_t i = 0; i < model.metrics.size(); ++i)
        metric_sums.push_back(zeros({}, Options(DType::Float64, r.loss.device())));
    }
    loss_sum.add_(mul(r.loss.data().to(DType::Float64), static_cast<double>(n)));
    if (model.count_correct && r.output.defined()) correct.add_(sum(eq(argmax(r.output.data(), 1), target)));
    for (size_t i = 0; i < model.metrics.size(); ++i)
      metric_sums[i].add_(mul(r.metrics.at(model.metrics[i]).reshape({}).to(loss_sum.device()).to(DType::Float64),
                              static_cast<double>(n)));
  }
  double loss() const { return loss_sum.defined() ? loss_sum.item<double>() : 0.0; }
};

}  // namespace

Precision parse_precision(const std::string& name) {
  if (name == "fp32" || name == "float32") return Precision::Float32;
  if (name == "bf16" || name == "bfloat16") return Precision::BFloat16;
  if (name == "fp16" || name == "float16") return Precision::Float16;
  throw Error("parse_precision: '" + name + "' is not a precision; use fp32, bf16 or fp16");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Float32: return "fp32";
    case Precision::BFloat16: return "bf16";
    case Precision::Float16: return "fp16";
  }
  return "?";
}

Trainer::Trainer(SupervisedModel& model, Optimizer* optimizer, Replicas replicas, TrainerOptions options)
    : model_(model), optimizer_(optimizer), replicas_(replicas), options_(std::move(options)), scaler_([this] {
        GradScalerOptions o = options_.grad_scaler;
        o.enabled = options_.precision == Precision::Float16;
        return o;
      }()) {
  if (!model_.module) throw Error("Trainer: the SupervisedModel needs a module");
  WICK_CHECK(options_.on_batch_every >= 1, "Trainer: on_batch_every must be >= 1, got ", options_.on_batch_every);
  if (!model_.step) {
    if (!model_.loss) throw Error("Trainer: the SupervisedModel needs a loss (the supervised form) or a step (yours)");
    if (!dynamic_cast<UnaryModule*>(model_.module.get()))
      throw Error(
          "Trainer: the supervised form needs a module with one input (a UnaryModule); give the "
          "SupervisedModel a step for any other");
  }
  if (options_.accumulate < 1)
    throw Error("Trainer: accumulate must be >= 1, got " + std::to_string(options_.accumulate));
  if (replicas_.steps.steps_optimizer() && optimizer_ == nullptr)
    throw Error("Trainer: this replica steps the optimizer but none was given");
  // Replicas whose gradients differ before the step (pipeline stages, DASO's groups) skip
  // a step together: the flag is summed over replicas (one small collective per step).
  if (options_.cuda_graphs) {
    WICK_CHECK(replicas_.metrics.ranks() == 1 && options_.accumulate == 1 && options_.blocking &&
                   options_.clip_grad_norm == 0 && options_.precision != Precision::Float16,
               "Trainer: cuda_graphs captures one replica's whole step: it needs one replica (got ",
               replicas_.metrics.ranks(), "), accumulate 1 (got ", options_.accumulate, "), blocking steps, no ",
               "clip_grad_norm (it returns the norm to the host; got ", options_.clip_grad_norm,
               ") and float32 or bfloat16 (float16's loss scaler decides on the host)");
  }
  if (scaler_.is_enabled() && replicas_.metrics.ranks() > 1)
    scaler_.set_found_inf_combiner([this](Tensor& found_inf) {
      const double found = replicas_.metrics.sum({static_cast<double>(found_inf.to(Device::cpu()).item<float>())})[0];
      found_inf.fill_(Scalar(found > 0 ? 1.0 : 0.0));
    });
}

void Trainer::load_state_dict(const TensorMap& state) {
  // A checkpoint of a float32 or bfloat16 run has no scaler: a float16 resume starts one.
  if (!state.empty()) scaler_.load_state_dict(state);
}

EpochStats Trainer::combine(EpochStats local, const Tensor& loss_sum, const Tensor& correct,
                            const std::vector<Tensor>& metric_sums) {
  std::vector<double> mine = {loss_sum.defined() ? loss_sum.item<double>() : 0.0, static_cast<double>(local.examples),
                              correct.defined() ? static_cast<double>(correct.item<int64_t>()) : 0.0};
  // A replica without batches has no sums yet: it adds zeros, in the declared order.
  for (size_t i = 0; i < model_.metrics.size(); ++i)
    mine.push_back(i < metric_sums.size() ? metric_sums[i].item<double>() : 0.0);
  std::vector<double> all = replicas_.metrics.sum(mine);
  local.loss_sum = all[0];
  local.examples = static_cast<int64_t>(all[1]);
  local.correct = static_cast<int64_t>(all[2]);
  for (size_t i = 0; i < model_.metrics.size(); ++i) local.metric_sums[model_.metrics[i]] = all[3 + i];
  return local;
}

// The captured step of cuda_graphs: the batch tensors it reads (same shapes as the batch it
// was captured for), the graph, and the result tensors each replay rewrites.
struct Trainer::CapturedStep {
  Batch batch;
  std::unique_ptr<cuda::Graph> graph;
  BatchResult result;
};

namespace {

bool same_shapes(const Batch& a, const Batch& b) {
  const auto same = [](const Tensor& x, const Tensor& y) {
    return x.defined() == y.defined() &&
           (!x.defined() || (x.shape() == y.shape() && x.dtype() == y.dtype() && x.device() == y.device()));
  };
  if (!same(a.inputs, b.inputs) || !same(a.targets, b.targets) || a.fields.size() != b.fields.size()) return false;
  for (const auto& [name, t] : a.fields.fields())
    if (!b.fields.has(name) || !same(t, b.fields.at(name))) return false;
  return true;
}

// A copy of `b` in tensors of its own: what the graph reads, refilled before each replay.
Batch static_copy(const Batch& b) {
  Batch out = b;
  if (b.inputs.defined()) out.inputs = b.inputs.clone();
  if (b.targets.defined()) out.targets = b.targets.clone();
  for (const auto& [name, t] : b.fields.fields())
    if (t.defined()) out.fields.set(name, t.clone());
  return out;
}

void copy_into(const Batch& dst, const Batch& src) {
  if (dst.inputs.defined()) Tensor(dst.inputs).copy_(src.inputs);
  if (dst.targets.defined()) Tensor(dst.targets).copy_(src.targets);
  for (const auto& [name, t] : dst.fields.fields())
    if (t.defined()) Tensor(t).copy_(src.fields.at(name));
}

bool on_cuda(const Batch& b) {
  const Tensor& t = b.inputs.defined() ? b.inputs : b.targets;
  return t.defined() && t.is_cuda();
}

}  // namespace

bool Trainer::graphed_step(const Batch& batch, std::optional<Device> device) {
  if (!on_cuda(batch)) return false;
  if (!captured_) {
    captured_ = std::make_shared<CapturedStep>();
    captured_->batch = static_copy(batch);
  }
  CapturedStep& c = *captured_;
  if (!same_shapes(c.batch, batch)) return false;
  if (!c.graph && eager_full_batches_++ == 0) return false;  // the warm-up: eager (the optimizer's state)
  copy_into(c.batch, batch);
  if (!c.graph) {
    auto graph = std::make_unique<cuda::Graph>(c.batch.inputs.defined() ? c.batch.inputs.device().index
                                                                        : c.batch.targets.device().index);
    const int64_t n = batch.size();
    graph->capture([&] {
      c.result = run_batch(model_, model_.step, c.batch, options_.precision, device);
      replicas_.gradients.backward(c.result.loss, n, scaler_.get_scale());
      step();
    });
    c.graph = std::move(graph);
  }
  if (optimizer_) optimizer_->before_graph_replay();
  c.graph->replay();
  return true;
}

void Trainer::step() {
  replicas_.gradients.finish();
  std::vector<Variable> params = model_.module->parameters();
  replicas_.steps.step(optimizer_, scaler_, params, options_.clip_grad_norm);
  for (auto& p : params) p.zero_grad(true);
}

EpochStats Trainer::train_epoch(BatchSource& batches, int64_t epoch) {
  auto start = Clock::now();
  model_.module->train();
  batches.start_epoch(epoch);
  Progress progress("train " + std::to_string(epoch + 1), batches.num_batches(), options_.progress);

  EpochStats local;
  RunningSums sums;
  double group_examples = 0;  // this replica's, in the current accumulation group
  // Every replica runs the same rounds: as many as the one with the most batches.
  const int64_t rounds = replicas_.metrics.max(batches.num_batches());
  replicas_.steps.start_epoch((rounds + options_.accumulate - 1) / options_.accumulate);
  bool step_pending = false;  // non-blocking: the last group's step waits for this batch
  const std::optional<Device> device = parameter_device(model_);
  for (int64_t round = 0; round < rounds; ++round) {
    std::optional<Batch> batch = batches.next();
    if (step_pending) {
      step();
      step_pending = false;
    }
    // Decided by the round, so every replica decides the same, with a batch or without.
    const bool ends_group = (round + 1) % options_.accumulate == 0 || round + 1 == rounds;
    if (ends_group)
      replicas_.gradients.arm(group_examples + (batch ? static_cast<double>(batch->size()) : 0.0),
                              round % options_.accumulate);
    bool stepped = false;  // by a CUDA graph (cuda_graphs), which holds the step too
    if (batch) {
      const int64_t n = batch->size();
      BatchResult result;
      replicas_.steps.before_forward();
      stepped = options_.cuda_graphs && graphed_step(*batch, device);
      if (stepped) {
        result = captured_->result;
      } else {
        result = run_batch(model_, model_.step, *batch, options_.precision, device);
        replicas_.gradients.backward(result.loss, n, scaler_.get_scale());
      }
      sums.add(model_, result, stepped ? captured_->batch.targets : batch->targets, n);
      group_examples += static_cast<double>(n);
      local.examples += n;
      local.batches += 1;
      if (options_.on_batch && local.batches % options_.on_batch_every == 0)
        options_.on_batch({epoch, local.batches - 1, n, result.loss.item<double>()});
      if (progress.due())
        progress.update(local.batches, local.examples, sums.loss() / static_cast<double>(local.examples));
    }
    if (ends_group) {
      if (stepped) {
        // The graph held the step (cuda_graphs: accumulate 1, blocking).
      } else if (options_.blocking) {
        step();
      } else {
        replicas_.gradients.launch();
        step_pending = true;
      }
      group_examples = 0;
    }
  }
  if (step_pending) step();
  WICK_CHECK(!batches.next(), "Trainer::train_epoch: the batch stream gave more batches than its num_batches() (",
             batches.num_batches(), ")");
  local.seconds = seconds_since(start);
  EpochStats total = combine(local, sums.loss_sum, sums.correct, sums.metric_sums);
  total.seconds = local.seconds;
  replicas_.steps.end_epoch(total.loss());
  char summary[96];
  std::snprintf(summary, sizeof summary, "loss %.4f  %.0f ex/s", total.loss(), total.examples_per_second());
  progress.finish(summary);
  return total;
}

EpochStats Trainer::evaluate(BatchSource& batches, int64_t epoch) {
  auto start = Clock::now();
  model_.module->eval();
  NoGradGuard no_grad;
  batches.start_epoch(epoch);
  EpochStats local;
  RunningSums sums;
  const StepFunction& step = model_.validation_step ? model_.validation_step : model_.step;
  const std::optional<Device> device = parameter_device(model_);
  replicas_.steps.before_forward();
  while (std::optional<Batch> batch = batches.next()) {
    sums.add(model_, run_batch(model_, step, *batch, options_.precision, device), batch->targets, batch->size());
    local.examples += batch->size();
    local.batches += 1;
  }
  model_.module->train();
  local.seconds = seconds_since(start);
  EpochStats total = combine(local, sums.loss_sum, sums.correct, sums.metric_sums);
  total.seconds = local.seconds;
  return total;
}

}  // namespace wick
