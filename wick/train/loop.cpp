#include <wick/train/loop.h>

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <set>

#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>

#include <wick/train/tensor_map_prefix.h>

namespace wick {
namespace {

using detail::add_with_prefix;
using detail::u64_of;
using detail::u64_tensor;
using detail::with_prefix_removed;

constexpr const char* kFormat = "wick-checkpoint";
constexpr const char* kVersion = "1";

std::string optional_text(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", *v);
  return buf;
}

// The checkpoint's model into `module`. The parameters named in `apart` may be absent (the
// step policy keeps them in files of its own and restores them after): they keep their
// values until then. Anything else missing or unknown is refused before anything is written.
void load_model(Module& module, const StateDict& state, const std::vector<std::string>& apart,
                const std::string& path) {
  if (apart.empty()) {
    module.load_state_dict(state);
    return;
  }
  const std::set<std::string> restored_by_policy(apart.begin(), apart.end());
  const StateDict expected = module.state_dict();
  for (const auto& [name, t] : expected)
    WICK_CHECK(state.contains(name) || restored_by_policy.count(name), "load_checkpoint: ", path, " has no 'model.",
               name, "'");
  for (const auto& [name, t] : state)
    WICK_CHECK(expected.contains(name), "load_checkpoint: ", path, "'s 'model.", name, "' is not in the model (",
               module.type_name(), ")");
  module.load_state_dict(state, /*strict=*/false);
}

}  // namespace

// The trainer's batch callback: the user's every options.trainer.on_batch_every batches,
// the loop's batch log every log_every_n_steps (the trainer calls at the gcd of the two).
LoopOptions TrainingLoop::with_batch_log(LoopOptions o) {
  WICK_CHECK(o.log_every_n_steps >= 0, "fit: log_every_n_steps must be >= 0, got ", o.log_every_n_steps);
  WICK_CHECK(o.trainer.on_batch_every >= 1, "fit: trainer.on_batch_every must be >= 1, got ", o.trainer.on_batch_every);
  const int64_t log_every = o.log_every_n_steps;
  if (log_every == 0) return o;
  const int64_t user_every = o.trainer.on_batch_every;
  o.trainer.on_batch_every = o.trainer.on_batch ? std::gcd(user_every, log_every) : log_every;
  o.trainer.on_batch = [this, user = std::move(o.trainer.on_batch), user_every, log_every](const BatchReport& r) {
    if (user && (r.batch + 1) % user_every == 0) user(r);
    if ((r.batch + 1) % log_every == 0) log_batch(r);
  };
  return o;
}

void TrainingLoop::log_batch(const BatchReport& r) {
  const int64_t per_epoch = train_.num_batches();
  const int64_t step = r.epoch * per_epoch + r.batch + 1;
  if (batch_events_) batch_events_->add_scalar("train/batch_loss", r.loss, step);
  if (options_.log_epochs)
    std::fprintf(stderr, "epoch %lld batch %lld/%lld  loss %.4f\n", static_cast<long long>(r.epoch + 1),
                 static_cast<long long>(r.batch + 1), static_cast<long long>(per_epoch), r.loss);
}

StateDict snapshot(const Module& module) {
  StateDict out;
  for (const auto& [name, t] : module.state_dict()) out.insert(name, t.clone());
  return out;
}

TrainingLoop::TrainingLoop(SupervisedModel& model, Optimizer& optimizer, BatchSource& train, BatchSource* validation,
                           LoopOptions options, Replicas replicas)
    : model_(model),
      optimizer_(optimizer),
      train_(train),
      validation_(validation),
      options_(with_batch_log(std::move(options))),
      trainer_(model, &optimizer, replicas, options_.trainer) {
  WICK_CHECK(options_.max_epochs >= 0, "fit: max_epochs must be >= 0, got ", options_.max_epochs);
  WICK_CHECK(options_.validation_frequency >= 1, "fit: validation_frequency must be >= 1, got ",
             options_.validation_frequency);
  WICK_CHECK(options_.validation_smoothing > 0 && options_.validation_smoothing <= 1,
             "fit: validation_smoothing must be in (0, 1], got ", options_.validation_smoothing);
  WICK_CHECK(!(options_.lr_factor && options_.scheduler), "fit: give lr_factor or scheduler, not both");
  WICK_CHECK(!options_.resume || !options_.checkpoint_path.empty(), "fit: resume needs a checkpoint_path");
  if (options_.lr_factor) factor_ = std::make_unique<FactorLR>(optimizer_, options_.lr_factor);
  schedule_ = factor_ ? factor_.get() : options_.scheduler;
}

void TrainingLoop::save_checkpoint(const LoopState& state) const {
  TensorMap all = loop_state_to_tensors(state);
  const StepPolicy& steps = trainer_.replicas().steps;
  const TensorMap sync = steps.state_dict();
  TensorMap model = model_.module->state_dict().to_map();
  for (const std::string& name : steps.checkpointed_parameters(sync)) model.erase(name);  // in the policy's files
  add_with_prefix(all, "model.", model);
  if (!best_.empty()) add_with_prefix(all, "best.", best_.to_map());
  add_with_prefix(all, "optimizer.", optimizer_.state_dict());
  if (schedule_) add_with_prefix(all, "scheduler.", schedule_->state_dict());
  add_with_prefix(all, "sync.", sync);
  add_with_prefix(all, "scaler.", trainer_.state_dict());
  add_with_prefix(all, "replicas.", replica_state());
  const Generator& rng = default_generator();
  all["rng.seed"] = u64_tensor(rng.seed());
  all["rng.offset"] = u64_tensor(rng.offset());
  save_safetensors(options_.checkpoint_path, all, {{"format", kFormat}, {"version", kVersion}});
}

bool TrainingLoop::load_checkpoint(LoopState& state) {
  const std::string& path = options_.checkpoint_path;
  if (::access(path.c_str(), F_OK) != 0) return false;
  StringMap meta;
  TensorMap all = load_safetensors(path, &meta);
  WICK_CHECK(meta["format"] == kFormat, "load_checkpoint: ", path, " is not a wick checkpoint (format '",
             meta["format"], "')");
  WICK_CHECK(meta["version"] == kVersion, "load_checkpoint: ", path, " has version '", meta["version"], "', expected ",
             kVersion);
  // Decode and check everything first, then apply; if applying still fails halfway, put
  // the model back, so a refused checkpoint changes nothing.
  LoopState loaded = loop_state_from_tensors(all);
  TensorMap schedule = with_prefix_removed(all, "scheduler.");
  auto base = all.find("loop.base_lr");
  if (factor_ && schedule.empty() && base != all.end()) {
    // A checkpoint from before the factor was a scheduler: its base rates, at its epoch.
    const std::vector<double> rates = base->second.to_vector<double>();
    schedule["last_epoch"] = scalar_tensor(static_cast<double>(loaded.epoch), DType::Float64);
    for (size_t g = 0; g < rates.size(); ++g)
      schedule["base_lr." + std::to_string(g)] = scalar_tensor(rates[g], DType::Float64);
  }
  uint64_t seed = u64_of(all, "rng.seed", "load_checkpoint", path),
           offset = u64_of(all, "rng.offset", "load_checkpoint", path);
  StateDict model_state(with_prefix_removed(all, "model."));
  TensorMap best = with_prefix_removed(all, "best.");
  const TensorMap sync = with_prefix_removed(all, "sync.");
  StateDict before = snapshot(*model_.module);
  TensorMap optimizer_before = optimizer_.state_dict();
  try {
    StepPolicy& steps = trainer_.replicas().steps;
    const std::vector<std::string> apart = steps.checkpointed_parameters(sync);
    load_model(*model_.module, model_state, apart, path);
    optimizer_.load_state_dict(with_prefix_removed(all, "optimizer."));
    if (factor_) factor_->observe(loaded.smoothed_validation_loss);  // the factor of the next epoch sees it
    if (schedule_) schedule_->load_state_dict(schedule);
    steps.load_state_dict(sync);
    trainer_.load_state_dict(with_prefix_removed(all, "scaler."));
    if (!best.empty()) {
      StateDict best_state(best);
      // Same names and shapes as the model: checked by loading into it (then undone below).
      model_.module->load_state_dict(best_state);
      load_model(*model_.module, model_state, apart, path);
      best_ = std::move(best_state);
    }
  } catch (const Error& e) {
    model_.module->load_state_dict(before);
    optimizer_.load_state_dict(optimizer_before);
    throw Error(std::string("load_checkpoint: ") + path + " does not fit this model and optimizer: " + e.what());
  }
  default_generator().set_state(seed, offset);
  load_replica_state(with_prefix_removed(all, "replicas."));
  state = std::move(loaded);
  return true;
}

LoopState TrainingLoop::run() {
  LoopState state;
  if (options_.resume && load_checkpoint(state) && options_.log_epochs)
    std::fprintf(stderr, "resumed from %s after epoch %lld\n", options_.checkpoint_path.c_str(),
                 static_cast<long long>(state.epoch));
  if (!options_.tensorboard_dir.empty()) {
    // What a run wrote after the epoch it resumes from (or all, when it starts afresh) goes.
    curve_events_ = std::make_unique<TensorBoardWriter>(options_.tensorboard_dir,
                                                        TensorBoardWriterOptions{.purge_step = state.epoch + 1});
    if (options_.log_every_n_steps > 0)
      batch_events_ = std::make_unique<TensorBoardWriter>(
          options_.tensorboard_dir, TensorBoardWriterOptions{.purge_step = state.epoch * train_.num_batches() + 1,
                                                             .file_name = "events.out.tfevents.wick.batches"});
  }
  before_first_epoch();
  const double f = options_.validation_smoothing;
  for (int64_t epoch = state.epoch; epoch < options_.max_epochs; ++epoch) {
    if (factor_ && factor_->stops()) {
      if (options_.log_epochs)
        std::fprintf(stderr, "the schedule stopped training before epoch %lld\n", static_cast<long long>(epoch + 1));
      break;
    }
    std::vector<double> lrs;
    for (size_t g = 0; g < optimizer_.num_groups(); ++g) lrs.push_back(optimizer_.lr(g));
    before_train(epoch, lrs);
    EpochStats trained = trainer_.train_epoch(train_, epoch);
    after_train(epoch);
    CurvePoint point{epoch,
                     trained.loss(),
                     trained.accuracy(),
                     {},
                     {},
                     {},
                     trained.examples_per_second(),
                     lrs.empty() ? 0.0 : lrs[0],
                     0.0,
                     trained.metrics(),
                     {}};

    bool validate = validation_ != nullptr &&
                    ((epoch + 1) % options_.validation_frequency == 0 || epoch + 1 == options_.max_epochs);
    if (validate) {
      before_validate(epoch);
      EpochStats v = trainer_.evaluate(*validation_, epoch);
      double smoothed =
          state.smoothed_validation_loss ? f * v.loss() + (1 - f) * *state.smoothed_validation_loss : v.loss();
      point.validation_loss = v.loss();
      point.smoothed_validation_loss = smoothed;
      if (model_.count_correct) point.validation_accuracy = v.accuracy();  // none for a model that counts none
      point.validation_metrics = v.metrics();
      state.smoothed_validation_loss = smoothed;
      const auto& eligible = options_.min_validation_epochs;
      bool may_keep = eligible.empty() || std::find(eligible.begin(), eligible.end(), epoch) != eligible.end();
      if (may_keep && (!state.min_validation_loss || smoothed < *state.min_validation_loss)) {
        state.min_validation_loss = smoothed;
        state.min_validation_epoch = epoch;
        best_ = snapshot(*model_.module);
      }
    }
    if (factor_) factor_->observe(state.smoothed_validation_loss);
    if (schedule_) schedule_->step();
    state.epoch = epoch + 1;
    point.wall_time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    state.learning_curve.push_back(point);

    if (options_.log_epochs)
      std::fprintf(stderr,
                   "epoch %lld/%lld  train loss %.4f  acc %.4f  valid loss %s (smoothed %s)  acc %s  %.0f ex/s\n",
                   static_cast<long long>(epoch + 1), static_cast<long long>(options_.max_epochs), point.train_loss,
                   point.train_accuracy, optional_text(point.validation_loss).c_str(),
                   optional_text(point.smoothed_validation_loss).c_str(),
                   optional_text(point.validation_accuracy).c_str(), point.examples_per_second);
    if (!options_.learning_curve_csv.empty())
      write_learning_curve_csv(options_.learning_curve_csv, state.learning_curve);
    if (!options_.learning_curve_png.empty())
      write_learning_curve_png(options_.learning_curve_png, state.learning_curve);
    if (!options_.learning_curve_jsonl.empty())
      write_learning_curve_jsonl(options_.learning_curve_jsonl, state.learning_curve);
    if (curve_events_) {
      for (const ScalarEvent& e : curve_point_scalars(point))
        curve_events_->add_scalar(e.tag, e.value, e.step, e.wall_time);
      curve_events_->flush();
    }
    if (batch_events_) batch_events_->flush();
    if (!options_.checkpoint_path.empty()) save_checkpoint(state);
    if (options_.on_epoch) options_.on_epoch(point);
  }
  if (options_.restore_min_validation_model && !best_.empty()) model_.module->load_state_dict(best_);
  after_last_epoch();
  return state;
}

LoopState fit(SupervisedModel& model, Optimizer& optimizer, BatchSource& train, BatchSource* validation,
              LoopOptions options) {
  WICK_CHECK(model.module != nullptr, "fit: the SupervisedModel needs a module");
  SingleReplica single(*model.module);
  TrainingLoop loop(model, optimizer, train, validation, std::move(options), single);
  return loop.run();
}

}  // namespace wick
