// DasoSchedule: the decisions of Heat's DASO, traced batch by batch and epoch by epoch
// without any communication. The expected tables were worked out by hand from Heat's
// heat/optim/dp_optimizer.py (DASO.step, _global_sync, epoch_loss_logic) and
// heat/optim/utils.py (DetectMetricPlateau).
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include <wick/distributed/data_parallel/daso_schedule.h>

#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using wick::test::expect_error;

std::vector<std::string> trace_epoch(DasoSchedule& schedule, int64_t batches) {
  schedule.set_batches_per_epoch(batches);
  std::vector<std::string> out;
  for (int64_t b = 0; b < batches; ++b) out.push_back(schedule.step().str());
  return out;
}

DasoSchedule cycling(int64_t global_skip, int64_t local_skip, int64_t batches_to_wait, int64_t local_size) {
  DasoSchedule s({.total_epochs = 100}, local_size);
  DasoSchedule::State state;
  state.epoch = 10;
  state.global_skip = global_skip;
  state.local_skip = local_skip;
  state.batches_to_wait = batches_to_wait;
  s.set_state(state);
  return s;
}

TEST(DasoSchedule, WarmupAveragesEveryBatchInTheDowncastTypeRotatingTheSendingGroup) {
  DasoSchedule s({.total_epochs = 10}, 2);
  EXPECT_EQ(trace_epoch(s, 3), (std::vector<std::string>{
                                   "send g0 wait 0 cast, replace g0, local on",
                                   "send g1 wait 0 cast, replace g1, local on",
                                   "send g0 wait 0 cast, replace g0, local on, end",
                               }));
  EXPECT_EQ(s.state().epoch, 1);
  EXPECT_EQ(s.state().batch, 0);
}

TEST(DasoSchedule, CyclingAtFourOneOneMergesOneBatchLater) {
  DasoSchedule s = cycling(4, 1, 1, 2);
  EXPECT_EQ(trace_epoch(s, 10), (std::vector<std::string>{
                                    "send g0 wait 1, local on",
                                    "merge g0 wait 1, bcast 0, local on",
                                    "local on",
                                    "local on",
                                    "send g1 wait 1, bcast 0, local on",
                                    "merge g1 wait 1, bcast 1, local on",
                                    "local on",
                                    "local on",
                                    "send g0 wait 1, bcast 1, local on",
                                    // The last batch's wait is clipped to 0, the pending send
                                    // is merged and the new one replaces at once.
                                    "send g1 wait 0, merge g0 wait 1, bcast 0, replace g1, local on, end",
                                }));
}

TEST(DasoSchedule, CyclingAtEightTwoTwoSkipsEveryOtherLocalSync) {
  DasoSchedule s = cycling(8, 2, 2, 2);
  EXPECT_EQ(trace_epoch(s, 8), (std::vector<std::string>{
                                   "send g0 wait 2, local on",
                                   "local on",
                                   "merge g0 wait 2, bcast 0, local off",
                                   "local on",
                                   "local off",
                                   "local on",
                                   "local on",  // the last batch always synchronises locally
                                   "send g1 wait 0, bcast 0, replace g1, local on, end",
                               }));
}

TEST(DasoSchedule, EveryBatchSendsAtGlobalSkipOneAndMergesTheNextBatch) {
  DasoSchedule s = cycling(1, 1, 1, 3);
  EXPECT_EQ(trace_epoch(s, 4), (std::vector<std::string>{
                                   "send g0 wait 1, local on",
                                   "send g1 wait 1, merge g0 wait 1, bcast 0, local on",
                                   "send g2 wait 1, merge g1 wait 1, bcast 1, local on",
                                   "send g0 wait 0, merge g2 wait 1, bcast 2, replace g0, local on, end",
                               }));
}

// (global_skip, local_skip, batches_to_wait) after each epoch.
using Skips = std::tuple<int64_t, int64_t, int64_t>;

std::vector<Skips> trace_epochs(DasoSchedule& s, const std::vector<double>& losses) {
  std::vector<Skips> out;
  for (double loss : losses) {
    trace_epoch(s, 2);
    s.end_epoch(loss);
    out.emplace_back(s.state().global_skip, s.state().local_skip, s.state().batches_to_wait);
  }
  return out;
}

TEST(DasoSchedule, PlateausHalveTheSkipsUntilOneThenResetToTheMaximum) {
  DasoSchedule s({.total_epochs = 30, .warmup_epochs = 2, .cooldown_epochs = 2}, 2);
  const double flat = 1.0;
  std::vector<double> losses(16, flat);
  losses[5] = 0.5;  // an improvement of more than 5% resets the count of bad epochs
  EXPECT_EQ(trace_epochs(s, losses), (std::vector<Skips>{
                                         {0, 0, 0},  // epoch 1: warm-up
                                         {4, 1, 1},  // 2: cycling starts; first loss is the best
                                         {4, 1, 1},  // 3: 1 bad epoch
                                         {4, 1, 1},  // 4: 2
                                         {2, 1, 1},  // 5: 3 > patience: stable, halve
                                         {2, 1, 1},  // 6: 0.5 is the new best
                                         {2, 1, 1},  // 7: 1.0 is worse: 1
                                         {2, 1, 1},  // 8: 2
                                         {1, 1, 1},  // 9: stable
                                         {1, 1, 1},
                                         {1, 1, 1},
                                         {8, 2, 2},  // 12: stable at 1: reset to max, max/4, max/4
                                         {8, 2, 2},
                                         {8, 2, 2},
                                         {4, 1, 1},  // 15: stable: halve, batches_to_wait - 1
                                         {4, 1, 1},
                                     }));
}

TEST(DasoSchedule, CooldownAveragesEveryBatchAgain) {
  DasoSchedule s({.total_epochs = 6, .warmup_epochs = 1, .cooldown_epochs = 2}, 2);
  EXPECT_EQ(trace_epochs(s, {1, 0.9, 0.8, 0.7, 0.6, 0.5}),
            (std::vector<Skips>{{4, 1, 1}, {4, 1, 1}, {4, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}}));
  trace_epoch(s, 1);
  EXPECT_EQ(s.state().epoch, 7);
}

TEST(DasoSchedule, ANaNLossCountsAsNotImproving) {
  DasoSchedule s({.total_epochs = 30, .warmup_epochs = 1, .cooldown_epochs = 0}, 2);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(trace_epochs(s, {1, nan, nan, nan}),
            (std::vector<Skips>{{4, 1, 1}, {4, 1, 1}, {4, 1, 1}, {2, 1, 1}}));
}

// As in Heat, the cycling phase starts when the epoch counter equals warmup_epochs after an
// epoch; with warmup_epochs 0 that never happens, and every batch stays blocking.
TEST(DasoSchedule, NoWarmupMeansNoCyclingAsInHeat) {
  DasoSchedule s({.total_epochs = 30, .warmup_epochs = 0, .cooldown_epochs = 0}, 2);
  EXPECT_EQ(trace_epochs(s, {1, 1, 1, 1}), (std::vector<Skips>(4, Skips{0, 0, 0})));
}

TEST(DasoSchedule, RefusesBadOptionsAndMisuse) {
  expect_error([] { DasoSchedule({}, 2); }, {"DASO", "total_epochs must be > 0"});
  expect_error([] { DasoSchedule({.total_epochs = 1, .sending_chunk_size = 0}, 2); }, {"sending_chunk_size"});
  expect_error([] { DasoSchedule({.total_epochs = 1, .downcast_type = DType::Float64}, 2); },
               {"downcast_type", "float64"});
  expect_error([] { DasoSchedule({.total_epochs = 1, .stability_level = -1}, 2); }, {"stability_level"});
  DasoSchedule s({.total_epochs = 1}, 2);
  expect_error([&] { s.step(); }, {"set_batches_per_epoch"});
  s.set_batches_per_epoch(1);
  s.step();
  s.set_batches_per_epoch(1);
  s.step();
  EXPECT_EQ(s.state().epoch, 2);
}

}  // namespace
}  // namespace wick::distributed
