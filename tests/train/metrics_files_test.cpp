// The learning curve's other files: TensorBoard's event file (framing, CRCs, the fields the
// scalars dashboard reads, and a reader that refuses damaged files without trusting their
// lengths), TensorBoardWriter (appending, purging on resume, a torn tail), JSON lines, the
// 9-column curve in checkpoints (8-column ones still load), and the loop writing both after
// every epoch and batch losses every n steps.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include <wick/nn/linear.h>
#include <wick/optim/sgd.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>
#include <wick/train/loop.h>
#include <wick/train/tensorboard.h>

#include "tests/support/training_fixture.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

TEST(TensorBoard, Crc32cIsCastagnolis) {
  EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);  // the standard check value of CRC-32C
  EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(TensorBoard, TheFirstRecordIsTheVersionAndItsFramingIsTensorFlows) {
  const std::string bytes = tensorboard_events({}, 1234.5);
  // length (8) + masked crc (4) + Event{wall_time, step, file_version} + masked crc (4)
  uint64_t length = 0;
  std::memcpy(&length, bytes.data(), 8);
  ASSERT_EQ(bytes.size(), 8 + 4 + length + 4);
  const std::string event = bytes.substr(12, static_cast<size_t>(length));
  EXPECT_EQ(static_cast<uint8_t>(event[0]), 0x09);  // field 1, 64-bit
  double wall = 0;
  std::memcpy(&wall, event.data() + 1, 8);
  EXPECT_EQ(wall, 1234.5);
  EXPECT_NE(event.find("brain.Event:2"), std::string::npos);
  uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + 8, 4);
  const uint32_t crc = crc32c(bytes.data(), 8);
  EXPECT_EQ(stored, ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST(TensorBoard, ScalarsRoundTrip) {
  const std::vector<ScalarEvent> events = {
      {"train/loss", 1, 0.75, 1700000000.25}, {"validation/accuracy", 1, 0.5, 1700000000.25},
      {"train/loss", 2, 1e-30, 1700000001.0}, {"a tag with spaces and ü", 123456789012, -3.25, 0},
      {"nan", 3, NAN, 1}};
  const auto back = parse_tensorboard_events(tensorboard_events(events, 1700000000), "events");
  ASSERT_EQ(back.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(back[i].tag, events[i].tag);
    EXPECT_EQ(back[i].step, events[i].step);
    EXPECT_EQ(back[i].wall_time, events[i].wall_time);
    if (std::isnan(events[i].value)) EXPECT_TRUE(std::isnan(back[i].value));
    else EXPECT_EQ(back[i].value, static_cast<double>(static_cast<float>(events[i].value)));  // simple_value is a float
  }
}

TEST(TensorBoard, DamagedFilesAreRefusedNamingTheOffset) {
  const std::string good = tensorboard_events({{"train/loss", 1, 0.5, 10}, {"train/loss", 2, 0.25, 11}}, 9);
  // Every single flipped bit is caught by a CRC (or, in a length, by the length's CRC).
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    EXPECT_THROW(parse_tensorboard_events(bad, "flipped"), Error) << "byte " << i;
  }
  // Every truncation that is not at a record boundary.
  for (size_t n = 1; n < good.size(); ++n) {
    const std::string cut = good.substr(0, n);
    try {
      parse_tensorboard_events(cut, "cut");
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cut at byte"), std::string::npos) << e.what();
      continue;
    }
    // Only whole records parse.
    EXPECT_TRUE(n == tensorboard_events({}, 9).size() ||
                n == tensorboard_events({{"train/loss", 1, 0.5, 10}}, 9).size())
        << n;
  }
  // A length announcing 2^60 bytes, with a valid CRC of that length, is refused before
  // anything of that size is allocated.
  std::string huge = good.substr(0, 0);
  const uint64_t length = uint64_t{1} << 60;
  huge.append(reinterpret_cast<const char*>(&length), 8);
  const uint32_t crc = crc32c(huge.data(), 8), masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
  huge.append(reinterpret_cast<const char*>(&masked), 4);
  huge += "xyz";
  try {
    parse_tensorboard_events(huge, "huge");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1152921504606846976 bytes where 3 are left"), std::string::npos) << e.what();
  }
}

TEST(LearningCurveFiles, JsonLinesHoldEveryColumnAndWriteMissingAsNull) {
  std::vector<CurvePoint> curve(2);
  curve[0] = {0, 0.5, 0.75, 0.25, 0.25, 0.875, 100, 0.1, 1700000000.5};
  curve[1] = {1, NAN, 0.8, {}, {}, {}, INFINITY, 0.05, 1700000001};
  EXPECT_EQ(learning_curve_jsonl(curve),
            "{\"epoch\": 1, \"train_loss\": 0.5, \"train_accuracy\": 0.75, \"validation_loss\": 0.25, "
            "\"smoothed_validation_loss\": 0.25, \"validation_accuracy\": 0.875, \"examples_per_second\": 100, "
            "\"learning_rate\": 0.10000000000000001, \"wall_time\": 1700000000.5}\n"
            "{\"epoch\": 2, \"train_loss\": NaN, \"train_accuracy\": 0.80000000000000004, \"validation_loss\": null, "
            "\"smoothed_validation_loss\": null, \"validation_accuracy\": null, \"examples_per_second\": Infinity, "
            "\"learning_rate\": 0.050000000000000003, \"wall_time\": 1700000001}\n");
}

TEST(LearningCurveFiles, CheckpointsKeepWallTimeAndOldEightColumnCurvesLoad) {
  LoopState s;
  s.epoch = 1;
  s.learning_curve.push_back({0, 0.5, 0.75, 0.25, 0.25, 0.875, 100, 0.1, 1700000000.5});
  LoopState back = loop_state_from_tensors(loop_state_to_tensors(s));
  ASSERT_EQ(back.learning_curve.size(), 1u);
  EXPECT_EQ(back.learning_curve[0].wall_time, 1700000000.5);
  TensorMap old = loop_state_to_tensors(s);
  old["loop.learning_curve"] = old["loop.learning_curve"].narrow(1, 0, 8).contiguous();
  back = loop_state_from_tensors(old);
  EXPECT_EQ(back.learning_curve[0].wall_time, 0.0);
  EXPECT_EQ(back.learning_curve[0].learning_rate, 0.1);
  old["loop.learning_curve"] = old["loop.learning_curve"].narrow(1, 0, 7).contiguous();
  EXPECT_THROW(loop_state_from_tensors(old), Error);
}

TEST(LearningCurveFiles, TheLoopWritesTensorBoardAndJsonLinesEveryEpoch) {
  const std::string dir = ::testing::TempDir() + "/wick_metrics_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);  // the JSON lines' folder; the loop makes the TensorBoard one
  auto data = training_blobs(64, 1);
  Generator g(2);
  auto net = std::make_shared<Linear>(8, 4, true, Options{}, &g);
  SupervisedModel model = classifier(net);
  SGD opt(net->named_parameters(), SGDOptions{.lr = 0.1});
  BatchStream train(data, {.batch_size = 16, .seed = 3});
  BatchStream valid(data, {.batch_size = 64, .shuffle = false});
  LoopOptions o = quiet_loop(3);
  o.validation_frequency = 2;
  o.tensorboard_dir = dir + "/tb";
  o.learning_curve_jsonl = dir + "/curve.jsonl";
  std::vector<size_t> events_after_epoch;
  o.on_epoch = [&](const CurvePoint&) { events_after_epoch.push_back(read_tensorboard_events(dir + "/tb/events.out.tfevents.wick").size()); };
  LoopState s = fit(model, opt, train, &valid, o);
  // 4 train scalars every epoch, 3 validation ones after epochs 2 and 3.
  EXPECT_EQ(events_after_epoch, (std::vector<size_t>{4, 11, 18}));
  const auto events = read_tensorboard_events(dir + "/tb/events.out.tfevents.wick");
  std::vector<double> train_losses;
  for (const ScalarEvent& e : events) {
    EXPECT_GT(e.wall_time, 1.6e9);
    if (e.tag == "train/loss") train_losses.push_back(e.value);
  }
  ASSERT_EQ(train_losses.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(train_losses[i], s.learning_curve[i].train_loss);
  const std::string jsonl = read_file(o.learning_curve_jsonl);
  EXPECT_EQ(std::count(jsonl.begin(), jsonl.end(), '\n'), 3);
  EXPECT_NE(jsonl.find("{\"epoch\": 3, "), std::string::npos);
  std::filesystem::remove_all(dir);
}

// A fresh folder under the test temp dir, removed when the test ends.
struct MetricsDir {
  std::string path;
  explicit MetricsDir(const std::string& name)
      : path(::testing::TempDir() + "/wick_" + name + "_" + std::to_string(::getpid())) {
    std::filesystem::remove_all(path);
  }
  ~MetricsDir() { std::filesystem::remove_all(path); }
};

std::vector<int64_t> steps_of(const std::vector<ScalarEvent>& events, const std::string& tag) {
  std::vector<int64_t> steps;
  for (const ScalarEvent& e : events)
    if (e.tag == tag) steps.push_back(e.step);
  return steps;
}

TEST(TensorBoardWriter, AppendsWhatIsPendingAndKeepsAnEarlierRunsRecords) {
  MetricsDir dir("tb_append");
  const std::string file = dir.path + "/events.out.tfevents.wick";
  {
    TensorBoardWriter tb(dir.path, {.max_pending = 2, .flush_seconds = 1e9});
    EXPECT_EQ(tb.path(), file);
    EXPECT_TRUE(read_tensorboard_events(file).empty());  // the version record only
    tb.add_scalar("loss", 0.5, 1, 10);
    EXPECT_EQ(read_tensorboard_events(file).size(), 0u);  // pending
    tb.add_scalar("loss", 0.25, 2, 11);
    EXPECT_EQ(read_tensorboard_events(file).size(), 2u);  // max_pending reached
    tb.add_scalar("loss", 0.125, 3, 12);
  }  // the destructor appends the third
  {
    TensorBoardWriter tb(dir.path);
    tb.add_scalar("acc", 0.75, 4, 13);
    tb.flush();
  }
  const auto events = read_tensorboard_events(file);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(steps_of(events, "loss"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(events[3].tag, "acc");
  EXPECT_FLOAT_EQ(events[3].value, 0.75);
  EXPECT_EQ(events[3].wall_time, 13);
  // One version record, as the same events written whole have (the second writer added none).
  const std::vector<ScalarEvent> same = {{"loss", 1, 0.5, 10}, {"loss", 2, 0.25, 11}, {"loss", 3, 0.125, 12}, {"acc", 4, 0.75, 13}};
  EXPECT_EQ(read_file(file).size(), tensorboard_events(same, 0).size());
}

TEST(TensorBoardWriter, PurgeStepDropsTheLaterEventsOfEveryTag) {
  MetricsDir dir("tb_purge");
  {
    TensorBoardWriter tb(dir.path);
    for (int64_t step = 1; step <= 5; ++step) {
      tb.add_scalar("a", static_cast<double>(step), step, 100);
      tb.add_scalar("b", static_cast<double>(-step), step, 100);
    }
  }
  TensorBoardWriter tb(dir.path, {.purge_step = 3});
  auto events = read_tensorboard_events(tb.path());
  EXPECT_EQ(steps_of(events, "a"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(steps_of(events, "b"), (std::vector<int64_t>{1, 2}));
  tb.add_scalar("a", 30, 3, 101);
  tb.flush();
  events = read_tensorboard_events(tb.path());
  EXPECT_EQ(steps_of(events, "a"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FLOAT_EQ(events.back().value, 30);
  // The version record (step 0) stays even when every event goes.
  TensorBoardWriter all(dir.path, {.purge_step = 0});
  EXPECT_TRUE(read_tensorboard_events(all.path()).empty());
  EXPECT_EQ(read_file(all.path()).size(), tensorboard_events({}, 0).size());
}

TEST(TensorBoardWriter, ATornLastRecordIsDroppedAndDamageElsewhereIsAnError) {
  MetricsDir dir("tb_torn");
  std::filesystem::create_directories(dir.path);
  const std::string file = dir.path + "/events.out.tfevents.wick";
  const std::string two = tensorboard_events({{"loss", 1, 0.5, 10}, {"loss", 2, 0.25, 11}}, 9);
  const size_t one = tensorboard_events({{"loss", 1, 0.5, 10}}, 9).size();
  // Cut anywhere inside the second event's record: the writer keeps the first and appends.
  for (size_t cut = one + 1; cut < two.size(); ++cut) {
    {
      std::ofstream(file, std::ios::binary | std::ios::trunc) << two.substr(0, cut);
    }
    TensorBoardWriter tb(dir.path);
    tb.add_scalar("loss", 0.125, 2, 12);
    tb.flush();
    const auto events = read_tensorboard_events(file);
    ASSERT_EQ(events.size(), 2u) << "cut at " << cut;
    EXPECT_FLOAT_EQ(events[1].value, 0.125) << "cut at " << cut;
  }
  // A flipped byte in the first event's payload is damage, not a torn tail.
  std::string bad = two;
  bad[one - 6] ^= 0x10;
  {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bad;
  }
  try {
    TensorBoardWriter tb(dir.path);
    ADD_FAILURE() << "a damaged record was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CRC"), std::string::npos) << e.what();
  }
  EXPECT_THROW(TensorBoardWriter(dir.path, {.max_pending = 0}), Error);
}

TEST(LearningCurveFiles, AResumedLoopDropsTheEventsWrittenAfterItsCheckpoint) {
  MetricsDir dir("tb_resume");
  std::filesystem::create_directories(dir.path);
  auto data = training_blobs(64, 1);
  const std::string checkpoint = dir.path + "/run.ckpt", after_two = dir.path + "/after_two.ckpt";
  auto run = [&](int64_t epochs, bool resume) {
    Generator g(2);
    auto net = std::make_shared<Linear>(8, 4, true, Options{}, &g);
    SupervisedModel model = classifier(net);
    SGD opt(net->named_parameters(), SGDOptions{.lr = 0.1});
    BatchStream train(data, {.batch_size = 16, .seed = 3});
    LoopOptions o = quiet_loop(epochs);
    o.tensorboard_dir = dir.path + "/tb";
    o.log_every_n_steps = 2;
    o.checkpoint_path = checkpoint;
    o.resume = resume;
    o.on_epoch = [&](const CurvePoint& p) {
      if (p.epoch == 1) std::filesystem::copy_file(checkpoint, after_two, std::filesystem::copy_options::overwrite_existing);
    };
    return fit(model, opt, train, nullptr, o);
  };
  run(3, false);
  // The run "crashed" after epoch 3's events were written but lost that checkpoint.
  std::filesystem::copy_file(after_two, checkpoint, std::filesystem::copy_options::overwrite_existing);
  const LoopState s = run(4, true);
  const auto curve = read_tensorboard_events(dir.path + "/tb/events.out.tfevents.wick");
  EXPECT_EQ(steps_of(curve, "train/loss"), (std::vector<int64_t>{1, 2, 3, 4}));
  std::vector<double> losses;
  for (const ScalarEvent& e : curve)
    if (e.tag == "train/loss") losses.push_back(e.value);
  ASSERT_EQ(losses.size(), 4u);
  EXPECT_FLOAT_EQ(losses[2], s.learning_curve[2].train_loss);  // the resumed run's epoch 3
  // 4 batches per epoch, every second one logged: steps 2, 4 of each epoch, once each.
  const auto batches = read_tensorboard_events(dir.path + "/tb/events.out.tfevents.wick.batches");
  EXPECT_EQ(steps_of(batches, "train/batch_loss"), (std::vector<int64_t>{2, 4, 6, 8, 10, 12, 14, 16}));
}

TEST(LearningCurveFiles, BatchLogsAndTheUsersBatchCallbackEachKeepTheirOwnPeriod) {
  MetricsDir dir("tb_batches");
  auto data = training_blobs(96, 1);
  Generator g(2);
  auto net = std::make_shared<Linear>(8, 4, true, Options{}, &g);
  SupervisedModel model = classifier(net);
  SGD opt(net->named_parameters(), SGDOptions{.lr = 0.1});
  BatchStream train(data, {.batch_size = 16, .seed = 3});  // 6 batches per epoch
  LoopOptions o = quiet_loop(2);
  o.tensorboard_dir = dir.path;
  o.log_every_n_steps = 2;
  std::vector<int64_t> seen;
  std::vector<double> user_losses;
  o.trainer.on_batch = [&](const BatchReport& r) {
    seen.push_back(r.epoch * 6 + r.batch + 1);
    user_losses.push_back(r.loss);
  };
  o.trainer.on_batch_every = 3;
  fit(model, opt, train, nullptr, o);
  EXPECT_EQ(seen, (std::vector<int64_t>{3, 6, 9, 12}));
  const auto batches = read_tensorboard_events(dir.path + "/events.out.tfevents.wick.batches");
  EXPECT_EQ(steps_of(batches, "train/batch_loss"), (std::vector<int64_t>{2, 4, 6, 8, 10, 12}));
  // Batch 6 is logged by both: the same loss.
  EXPECT_FLOAT_EQ(batches[2].value, user_losses[1]);
  o.log_every_n_steps = -1;
  EXPECT_THROW(fit(model, opt, train, nullptr, o), Error);
}

}  // namespace
}  // namespace wick::test
