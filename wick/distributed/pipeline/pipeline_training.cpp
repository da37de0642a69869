// Training a pipeline from rank 0: every stage's optimizer step with rank 0's learning
// rates, gradients averaged over the replicas and clipped over all stages, and the epochs
// loop over it (PipelineSync, fit_pipeline).
#include <wick/distributed/pipeline/pipeline.h>

#include <cmath>

#include <wick/autograd/grad_mode.h>
#include <wick/distributed/pipeline/stage_command.h>
#include <wick/tensor/error.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>

namespace wick::distributed {

void PipelineModel::step(Optimizer& optimizer) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::step runs on rank 0");
  optimizer.step();
  optimizer.zero_grad();
  step_other_stages(optimizer);
}

void PipelineModel::step_other_stages(const Optimizer& optimizer) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::step_other_stages runs on rank 0");
  if (comm_.size() == 1) return;
  std::vector<double> lrs;
  for (size_t g = 0; g < optimizer.num_groups(); ++g) lrs.push_back(optimizer.lr(g));
  // The same message as a data-parallel follower's Train: absolute values, one per group.
  command(encode_stage_command(stage::Step{lrs}));
}

void PipelineModel::average_own_gradients(double examples) {
  if (replicas_ == nullptr) {
    divide_gradients(parameters(), examples);
    return;
  }
  // Every stage of a replica arms with its rank 0's examples, so each stage's count is the
  // sum over the replicas (a replica out of batches adds 0, and zero gradients). The
  // backward ran before the reducer was armed: its gradients are sums, divided there.
  replica_gradients_->arm(examples, /*earlier_backwards=*/1);
  replica_gradients_->finish();
}

void PipelineModel::average_gradients(double examples) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::average_gradients runs on rank 0");
  WICK_CHECK(std::isfinite(examples) && examples >= 0, "PipelineModel::average_gradients: examples must be a finite "
             "number >= 0, got ", examples);
  if (comm_.size() > 1) command(encode_stage_command(stage::AverageGradients{examples}));
  average_own_gradients(examples);
}

Tensor PipelineSync::count_before_backward() {
  return model_.replicas() ? Tensor() : scalar_tensor(examples_, DType::Float64);
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
    if (comm_.size() > 1) command(encode_stage_command(stage::Clip{max_norm}));
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
  if (comm_.rank() == 0 && comm_.size() > 1 && !stopped_) command(encode_stage_command(stage::SetMode{on}));
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

}  // namespace wick::distributed
