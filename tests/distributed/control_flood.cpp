// wick_control_flood: measures the control channel's rendezvous under a flood of token-less
// clients, as separate processes (docs/distributed.md lists the numbers and the commands).
//   wick_control_flood driver [TIMEOUT_MS]          listens on 127.0.0.1 (prints "port N"),
//                                                   waits for one follower, prints its stats
//   wick_control_flood attack PORT SILENT CLOSERS TALKERS SECONDS
//   wick_control_flood follower PORT                joins, prints how long it took
// The job token is fixed: this is a measuring tool, not a job.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <wick/distributed/control/control_client.h>
#include <wick/distributed/control/control_server.h>

#include "tests/distributed/flood.h"

using namespace wick::distributed;
using Clock = std::chrono::steady_clock;

namespace {

const char* kToken = "wick-control-flood";

int usage() {
  std::fprintf(stderr,
               "usage: wick_control_flood driver [TIMEOUT_MS]\n"
               "       wick_control_flood attack PORT SILENT CLOSERS TALKERS SECONDS\n"
               "       wick_control_flood follower PORT\n");
  return 2;
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  try {
    if (mode == "driver") {
      const long timeout = argc > 2 ? std::atol(argv[2]) : 60000;
      ControlServer server("127.0.0.1", 0, 2, kToken);
      std::printf("port %d\n", server.port());
      std::fflush(stdout);
      const auto start = Clock::now();
      try {
        server.wait_for_followers(Milliseconds(timeout));
        std::printf("driver: the follower registered after %.0f ms\n", ms_since(start));
      } catch (const std::exception& e) {
        std::printf("driver: %s\n", e.what());
      }
      const auto s = server.rendezvous_stats();
      std::printf("driver: accepted %llu, refused %llu, closed early %llu, expired %llu, evicted %llu, peak %zu "
                  "unregistered (cap %zu)\n",
                  static_cast<unsigned long long>(s.accepted), static_cast<unsigned long long>(s.refused),
                  static_cast<unsigned long long>(s.closed_early), static_cast<unsigned long long>(s.expired),
                  static_cast<unsigned long long>(s.evicted), s.peak_pending, server.connection_cap());
      return s.registered == 1 ? 0 : 1;
    }
    if (mode == "attack" && argc == 7) {
      test::Flood flood(std::atoi(argv[2]), {.silent = std::atoi(argv[3]), .closers = std::atoi(argv[4]),
                                             .talkers = std::atoi(argv[5])},
                        UINT64_MAX, std::chrono::seconds(std::atol(argv[6])));
      std::this_thread::sleep_for(std::chrono::seconds(std::atol(argv[6])));
      flood.stop();
      std::printf("attack: %llu connections, %llu ended by the driver\n",
                  static_cast<unsigned long long>(flood.connections()), static_cast<unsigned long long>(flood.dropped()));
      return 0;
    }
    if (mode == "follower" && argc == 3) {
      const auto start = Clock::now();
      ControlClient client("127.0.0.1", std::atoi(argv[2]), 1, 2, kToken);
      std::printf("follower: registered in %.0f ms\n", ms_since(start));
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wick_control_flood %s: %s\n", mode.c_str(), e.what());
    return 1;
  }
  return usage();
}
