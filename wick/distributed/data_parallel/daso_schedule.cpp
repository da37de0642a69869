#include <wick/distributed/data_parallel/daso_schedule.h>

#include <cmath>

#include <wick/tensor/error.h>

namespace wick::distributed {

void check_daso_options(const DasoOptions& o) {
  auto positive = [](int64_t v, const char* name) {
    WICK_CHECK(v > 0, "DASO: ", name, " must be > 0, got ", v);
  };
  auto non_negative = [](int64_t v, const char* name) {
    WICK_CHECK(v >= 0, "DASO: ", name, " must be >= 0, got ", v);
  };
  positive(o.total_epochs, "total_epochs");
  non_negative(o.warmup_epochs, "warmup_epochs");
  non_negative(o.cooldown_epochs, "cooldown_epochs");
  non_negative(o.max_global_skips, "max_global_skips");
  positive(o.sending_chunk_size, "sending_chunk_size");
  positive(o.skip_reduction_factor, "skip_reduction_factor");
  positive(o.local_skip_factor, "local_skip_factor");
  WICK_CHECK(std::isfinite(o.stability_level) && o.stability_level >= 0,
             "DASO: stability_level must be a finite number >= 0, got ", o.stability_level);
  WICK_CHECK(o.downcast_type == DType::BFloat16 || o.downcast_type == DType::Float16 ||
                 o.downcast_type == DType::Float32,
             "DASO: downcast_type must be bfloat16, float16 or float32, got ", dtype_name(o.downcast_type));
}

std::string DasoSchedule::Decision::str() const {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (send) add("send g" + std::to_string(send_group) + " wait " + std::to_string(batches_to_wait) + (cast ? " cast" : ""));
  if (merge) add("merge g" + std::to_string(merge_group) + " wait " + std::to_string(merge_wait));
  if (broadcast_root >= 0) add("bcast " + std::to_string(broadcast_root));
  if (replace) add("replace g" + std::to_string(send_group));
  add(local_sync_next ? "local on" : "local off");
  if (epoch_ended) add("end");
  return s;
}

DasoSchedule::DasoSchedule(DasoOptions options, int64_t local_size) : options_(options), local_size_(local_size) {
  check_daso_options(options_);
  WICK_CHECK(local_size_ >= 1, "DASO: the number of ranks per node must be >= 1, got ", local_size_);
}

void DasoSchedule::set_batches_per_epoch(int64_t batches) {
  WICK_CHECK(batches >= 0, "DASO: the number of batches per epoch must be >= 0, got ", batches);
  last_batch_ = batches - 1;
}

// A send that is still outstanding is merged by its group; whether or not there was one,
// every node then takes the parameters of the local rank that sent last (Heat's
// _gs_rcv_update_params followed by _local_update(send_mod_m1)).
void DasoSchedule::merge_previous(Decision& d) {
  State& s = state_;
  if (s.previous_send_group < 0) return;
  if (s.pending_group == s.previous_send_group) {
    d.merge = true;
    d.merge_group = s.pending_group;
    d.merge_wait = s.pending_wait;
    s.pending_group = -1;
  }
  d.broadcast_root = s.previous_send_group;
}

DasoSchedule::Decision DasoSchedule::global_sync(int64_t batches_to_wait) {
  State& s = state_;
  Decision d;
  d.send = true;
  d.send_group = s.send_group;
  d.batches_to_wait = batches_to_wait;
  d.cast = s.global_skip < 1;  // Heat downcasts only the blocking synchronisations
  if (s.batches_to_wait != 0) merge_previous(d);
  WICK_CHECK(s.pending_group < 0, "DASO: internal error: a send of group ", s.pending_group,
             " is still outstanding at the next send");
  if (s.batch == last_batch_ || s.batches_to_wait == 0) {
    d.replace = true;
    s.previous_send_group = -1;
    if (s.batch == last_batch_) {
      s.send_group = 0;
      s.epoch += 1;
      s.batch = 0;
      d.epoch_ended = true;
    } else {
      s.batch += 1;
      s.send_group = next_group(s.send_group);
    }
  } else {
    s.pending_group = s.send_group;
    s.pending_wait = batches_to_wait;
    s.batch += 1;
    s.previous_send_group = s.send_group;
    s.send_group = next_group(s.send_group);
  }
  d.local_sync_next = s.local_sync;
  return d;
}

// Heat's DASO.step after the local optimizer's step, decision for decision.
DasoSchedule::Decision DasoSchedule::step() {
  WICK_CHECK(last_batch_ >= 0, "DASO: set_batches_per_epoch must be called before the epoch's first step");
  State& s = state_;
  WICK_CHECK(s.batch <= last_batch_, "DASO: step ", s.batch + 1, " of an epoch of ", last_batch_ + 1, " batches");
  const int64_t batch = s.batch, next = batch + 1;
  const int64_t gs = s.global_skip, ls = s.local_skip;
  const int64_t gmod = gs > 0 ? batch % gs : 0;
  const int64_t lmod = ls > 0 ? batch % ls : 0;
  // The merge must happen before the epoch ends.
  const int64_t wait = s.batches_to_wait + batch <= last_batch_ ? s.batches_to_wait : last_batch_ - batch;
  if (batch == last_batch_ || gmod == 0) return global_sync(wait);

  Decision d;
  auto finish = [&] {
    s.batch += 1;
    d.local_sync_next = s.local_sync;
    return d;
  };
  if (next % gs == 0) {  // the next batch sends: its gradients must be the node's average
    s.local_sync = true;
    return finish();
  }
  if (gmod < wait) {  // the send is in flight; keep the local synchronisation as it is
    if (next == last_batch_) s.local_sync = true;
    return finish();
  }
  if (gmod == wait) {
    merge_previous(d);
    if (ls > 1) s.local_sync = false;
  }
  if (ls == 1 && next != last_batch_) {
    s.local_sync = true;
    return finish();
  }
  if (lmod == 0)
    s.local_sync = false;
  else if (next % ls == 0)
    s.local_sync = true;
  if (next == last_batch_) s.local_sync = true;
  return finish();
}

// Heat's DetectMetricPlateau (mode min, relative threshold, patience 2, no cool-down).
bool DasoSchedule::plateau(double loss) {
  State& s = state_;
  const double threshold = options_.stability_level;
  const double bar = s.best_loss >= 0 ? s.best_loss * (1.0 - threshold) : s.best_loss * (1.0 + threshold);
  if (loss < bar) {
    s.best_loss = loss;
    s.bad_epochs = 0;
  } else {
    s.bad_epochs += 1;
  }
  constexpr int64_t kPatience = 2;
  if (s.bad_epochs > kPatience) {
    s.bad_epochs = 0;
    return true;
  }
  return false;
}

// Heat's DASO.epoch_loss_logic, with the epoch counter already advanced by the last step.
bool DasoSchedule::end_epoch(double mean_loss) {
  State& s = state_;
  auto blocking = [&] {
    s.global_skip = 0;
    s.local_skip = 0;
    s.batches_to_wait = 0;
  };
  if (s.epoch < options_.warmup_epochs) {
    blocking();
    return false;
  }
  if (s.epoch == options_.warmup_epochs) {  // Heat starts the cycling phase at 4, 1, 1
    s.global_skip = 4;
    s.local_skip = 1;
    s.batches_to_wait = 1;
  }
  if (s.epoch >= options_.total_epochs - options_.cooldown_epochs) {
    blocking();
    return false;
  }
  const bool stable = plateau(mean_loss);
  if (stable && s.global_skip > 1) {
    s.global_skip /= options_.skip_reduction_factor;
    s.local_skip /= options_.skip_reduction_factor;
    s.batches_to_wait -= 1;
    if (s.global_skip > 0) {
      if (s.batches_to_wait == 0) s.batches_to_wait = 1;
      if (s.local_skip == 0) s.local_skip = 1;
    }
  } else if (stable && s.global_skip == 1) {
    s.global_skip = options_.max_global_skips;
    s.local_skip = options_.max_global_skips / options_.local_skip_factor;
    s.batches_to_wait = options_.max_global_skips / options_.local_skip_factor;
  }
  return stable;
}

}  // namespace wick::distributed
