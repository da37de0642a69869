// InProcessControl: the same contract as the TCP channel for ranks that are threads.
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>
#include <vector>

#include <wick/distributed/control/in_process_control.h>
#include <wick/distributed/comm/in_process_store.h>

#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using Clock = std::chrono::steady_clock;
using wick::test::expect_error;

TEST(ControlInProcess, DriverAndFollowersExchangeCommandsAndMessages) {
  for (int world = 1; world <= 4; ++world) {
    InProcessControl control(world);
    auto driver = control.driver();
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(world));
    std::vector<std::thread> threads;
    for (int r = 1; r < world; ++r) {
      threads.emplace_back([&, r, follower = control.follower(r)]() {
        try {
          for (;;) {
            Command c = follower->receive(Milliseconds(5000));
            if (c.type == CommandType::Stop) return;
            follower->send_to_driver(encode_int64(r * 1000 + decode_int64(c.payload)));
          }
        } catch (...) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
        }
      });
    }
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      driver->broadcast({CommandType::Train, encode_int64(epoch)});
      auto replies = driver->gather(Milliseconds(5000));
      ASSERT_EQ(static_cast<int>(replies.size()), world);
      for (int r = 1; r < world; ++r) EXPECT_EQ(decode_int64(replies[static_cast<std::size_t>(r)]), r * 1000 + epoch);
    }
    driver->broadcast({CommandType::Stop, {}});
    for (auto& t : threads) t.join();
    for (auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
  }
}

TEST(ControlInProcess, EndpointsAreHandedOutOnce) {
  InProcessControl control(3);
  auto driver = control.driver();
  expect_error([&] { control.driver(); }, {"already taken"});
  auto one = control.follower(1);
  expect_error([&] { control.follower(1); }, {"rank 1", "duplicate"});
  expect_error([&] { control.follower(3); }, {"rank 3", "out of range 1..2"});
  expect_error([&] { control.follower(0); }, {"rank 0", "out of range"});
}

// endpoint(r): whichever end rank r has, from the same pool as driver() and follower(r).
TEST(ControlInProcess, EndpointIsTheDriversForRankZeroAndAFollowersElsewhere) {
  InProcessControl control(3);
  InProcessControl::Endpoint zero = control.endpoint(0), two = control.endpoint(2);
  ASSERT_NE(zero.driver, nullptr);
  EXPECT_EQ(zero.follower, nullptr);
  EXPECT_EQ(zero.get().driver, zero.driver.get());
  ASSERT_NE(two.follower, nullptr);
  EXPECT_EQ(two.driver, nullptr);
  EXPECT_EQ(two.get().follower->rank(), 2);
  expect_error([&] { control.endpoint(0); }, {"already taken"});
  expect_error([&] { control.follower(2); }, {"rank 2", "duplicate"});
  expect_error([&] { control.endpoint(3); }, {"rank 3", "out of range"});
  zero.driver->broadcast({CommandType::Stop, {}});
  EXPECT_EQ(two.follower->receive(std::chrono::seconds(1)).type, CommandType::Stop);
}

TEST(ControlInProcess, DestroyedFollowerIsNamedByBroadcastAndGather) {
  InProcessControl control(3);
  auto driver = control.driver();
  auto one = control.follower(1);
  auto two = control.follower(2);
  one->send_to_driver(encode_int64(1));
  two.reset();  // rank 2's thread ended
  auto start = Clock::now();
  expect_error([&] { driver->gather(Milliseconds(5000)); }, {"gather", "rank 2 disconnected"});
  expect_error([&] { driver->broadcast({CommandType::Train, {}}); }, {"broadcast(Train)", "rank 2 disconnected"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  // Rank 1 is alive and still got the command.
  EXPECT_EQ(one->receive(Milliseconds(100)).type, CommandType::Train);
}

TEST(ControlInProcess, TimeoutsNameTheSilentSide) {
  InProcessControl control(3);
  auto driver = control.driver();
  auto one = control.follower(1);
  auto two = control.follower(2);
  two->send_to_driver({});
  expect_error([&] { driver->gather(Milliseconds(50)); }, {"rank 1 sent nothing within 50 ms"});
  expect_error([&] { one->receive(Milliseconds(50)); }, {"rank 1", "no command", "50 ms"});
}

TEST(ControlInProcess, FollowersNoticeADriverThatGoes) {
  InProcessControl control(2);
  auto driver = control.driver();
  auto one = control.follower(1);
  driver->broadcast({CommandType::Validate, encode_int64(3)});
  driver.reset();
  Command c = one->receive(Milliseconds(100));  // delivered before the driver went
  EXPECT_EQ(c.type, CommandType::Validate);
  EXPECT_EQ(decode_int64(c.payload), 3);
  auto start = Clock::now();
  expect_error([&] { one->receive(Milliseconds(5000)); }, {"rank 1", "driver has gone"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
  expect_error([&] { one->send_to_driver({}); }, {"driver has gone"});
}

TEST(ControlInProcess, ReceiveWakesUpWhenTheDriverGoesWhileWaiting) {
  InProcessControl control(2);
  auto driver = control.driver();
  auto one = control.follower(1);
  std::thread killer([&] {
    std::this_thread::sleep_for(Milliseconds(50));
    driver.reset();
  });
  auto start = Clock::now();
  expect_error([&] { one->receive(Milliseconds(5000)); }, {"driver has gone"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  killer.join();
}

TEST(ControlInProcess, StoreIsSharedAndGetWaits) {
  InProcessControl control(3);
  auto driver = control.driver();
  auto one = control.follower(1);
  auto two = control.follower(2);
  std::thread setter([&] {
    std::this_thread::sleep_for(Milliseconds(30));
    one->store().set("nccl-id", Bytes{'4', '2'});
  });
  EXPECT_EQ(two->store().get("nccl-id", Milliseconds(5000)), (Bytes{'4', '2'}));
  EXPECT_EQ(driver->store().get("nccl-id", Milliseconds(10)), (Bytes{'4', '2'}));
  setter.join();
  auto start = Clock::now();
  expect_error([&] { driver->store().get("missing", Milliseconds(50)); }, {"'missing'", "50 ms"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(&control.store(), &one->store());
}

TEST(ControlInProcess, StandaloneStore) {
  InProcessStore store;
  store.set("a", Bytes{1});
  store.set("a", Bytes{2});  // last write wins
  EXPECT_EQ(store.get("a", Milliseconds(0)), Bytes{2});
  expect_error([&] { store.get("b", Milliseconds(0)); }, {"'b'"});
}

}  // namespace
}  // namespace wick::distributed
