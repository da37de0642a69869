#pragma once
// DasoSchedule: the decisions of DASO (Distributed Asynchronous and Selective Optimization,
// Coquelin et al. 2021, as Heat's heat.optim.DASO makes them), without any communication, so
// that they can be traced and tested on their own. DasoSync (daso.h) carries them out.
//
// The ranks form `nodes` x `local_size`; the "global group" g is the ranks with local rank g,
// one per node. After every optimizer step (a "batch" below) step() says what to do:
//   - send: the ranks of global group `send_group` start a non-blocking average of their
//     parameters over the nodes, to be merged `batches_to_wait` batches later;
//   - merge: the ranks of group `merge_group` wait for the average they started earlier and
//     merge it with their own parameters, weighting the local copy by 2 * batches_to_wait
//     (merge_weight) against one share per node, then broadcast them inside the node from
//     local rank `merge_group`;
//   - replace: the send of this batch is waited for at once and its average replaces the
//     parameters of group `send_group`, then broadcast inside the node (warm-up, cool-down,
//     an epoch's last batch);
//   - local_sync_next: whether the next batch's gradients are averaged inside the node.
// end_epoch(loss) applies Heat's plateau logic to the epoch's loss averaged over all ranks:
// warm-up and cool-down epochs synchronise every batch (global_skip 0); in between,
// global_skip, local_skip and batches_to_wait start at 4, 1, 1, drop by
// skip_reduction_factor whenever the loss has not improved by stability_level for more than
// 2 epochs, and jump to max_global_skips, max / local_skip_factor, max / local_skip_factor
// when the loss is stable at global_skip 1.
#include <cstdint>
#include <limits>
#include <string>

#include <wick/tensor/dtype.h>

namespace wick::distributed {

struct DasoOptions {
  int64_t total_epochs = 0;  // required: where the cool-down phase starts
  int64_t warmup_epochs = 4;
  int64_t cooldown_epochs = 4;
  double stability_level = 0.05;  // relative improvement that counts as "improving"
  int64_t max_global_skips = 8;
  int64_t sending_chunk_size = 10'000'000;  // elements per global collective
  // The type parameters travel in during blocking synchronisations (BFloat16, Float16 or
  // Float32); sums are accumulated in float32 whatever it is.
  DType downcast_type = DType::BFloat16;
  int64_t skip_reduction_factor = 2;
  int64_t local_skip_factor = 4;
};

// Throws wick::Error naming the option when one is out of range.
void check_daso_options(const DasoOptions& options);

class DasoSchedule {
 public:
  struct Decision {
    // The ranks of global group `send_group` start averaging their parameters over the nodes.
    bool send = false;
    int64_t send_group = 0;
    int64_t batches_to_wait = 0;  // recorded with the send: the merge weight's batches
    bool cast = false;            // the send travels in downcast_type
    // The ranks of `merge_group` wait for their earlier send and merge it (merge_weight of
    // merge_wait for the local copy).
    bool merge = false;
    int64_t merge_group = -1;
    int64_t merge_wait = 0;
    // Then every node broadcasts the parameters of this local rank to its other ranks (-1:
    // none). Heat does this whenever a send is outstanding, merged or not.
    int64_t broadcast_root = -1;
    // This batch's send is waited for at once and its average replaces the parameters of
    // send_group's ranks, which every node then broadcasts from local rank send_group.
    bool replace = false;
    bool local_sync_next = true;  // the next batch's gradients are averaged inside the node
    bool epoch_ended = false;
    std::string str() const;  // e.g. "send g0 wait 1, merge g1, bcast 1, local off"
  };
  // The state that a checkpoint must hold for an exact resume (all integers and the plateau
  // detector's best loss).
  struct State {
    int64_t epoch = 0;
    int64_t batch = 0;
    int64_t global_skip = 0;
    int64_t local_skip = 0;
    int64_t batches_to_wait = 0;
    int64_t send_group = 0;
    int64_t previous_send_group = -1;  // Heat's send_mod_m1; -1: none
    int64_t pending_group = -1;        // the group whose send is not merged yet; -1: none
    int64_t pending_wait = 0;
    bool local_sync = true;            // for the next batch
    double best_loss = std::numeric_limits<double>::infinity();
    int64_t bad_epochs = 0;
  };

  DasoSchedule(DasoOptions options, int64_t local_size);

  // The index of the epoch's last batch (batches - 1); set before each epoch's first step.
  void set_batches_per_epoch(int64_t batches);
  // After the optimizer step of the current batch.
  Decision step();
  // After the epoch, with its loss averaged over every rank. Returns whether the loss was
  // judged stable (a plateau).
  bool end_epoch(double mean_loss);

  const State& state() const { return state_; }
  void set_state(const State& state) { state_ = state; }
  const DasoOptions& options() const { return options_; }
  int64_t local_size() const { return local_size_; }
  // Whether the current batch's gradients are averaged inside the node.
  bool local_sync() const { return state_.local_sync; }
  // The weight of the local copy in a merge of a send that waited `batches_to_wait`.
  static double merge_weight(int64_t batches_to_wait) {
    return batches_to_wait > 0 ? 2.0 * static_cast<double>(batches_to_wait) : 1.0;
  }

 private:
  Decision global_sync(int64_t batches_to_wait);
  void merge_previous(Decision& d);
  bool plateau(double loss);
  int64_t next_group(int64_t g) const { return g + 1 < local_size_ ? g + 1 : 0; }

  DasoOptions options_;
  int64_t local_size_;
  int64_t last_batch_ = -1;
  State state_;
};

}  // namespace wick::distributed
