// Distributed training in real processes on loopback (Gloo, the TCP control channel):
// 1, 2 and 3 ranks end with the parameters of one process trained on the combined
// batches; uneven batch counts, gradient accumulation and resume do too; a follower that
// is killed (SIGKILL) or hangs (SIGSTOP) mid-epoch makes the driver fail with a clear
// error within the timeout.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <wick/distributed/control/tcp_socket.h>
#include <wick/optim/sgd.h>
#include <wick/tensor/cuda.h>
#include <wick/train/loop.h>

#include "tests/distributed/shell.h"
#include "tests/support/training_fixture.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

using Clock = std::chrono::steady_clock;

#if defined(WICKRUN_PATH) && defined(WICK_TRAINING_WORKER)
const char* kWickrun = WICKRUN_PATH;
const char* kWorker = WICK_TRAINING_WORKER;
#else
const char* kWickrun = nullptr;
const char* kWorker = nullptr;
#endif

#define REQUIRE_PROGRAMS() \
  if (kWickrun == nullptr) GTEST_SKIP() << "wickrun or the training worker was not built"

struct Job {
  int64_t examples = 96, batch = 8, epochs = 2, accumulate = 1;
  std::string extra;
};

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/wick_dist_" + std::to_string(::getpid()) + "_" + name;
}

std::string worker_args(const Job& job, const std::string& out) {
  return " --examples " + std::to_string(job.examples) + " --batch " + std::to_string(job.batch) + " --epochs " +
         std::to_string(job.epochs) + " --accumulate " + std::to_string(job.accumulate) + " --out '" + out + "'" +
         job.extra;
}

// Runs the job on `ranks` processes under wickrun; returns rank 0's final parameters.
std::vector<double> run_ranks(int ranks, const Job& job) {
  std::string out = temp_path("params_" + std::to_string(ranks) + ".safetensors");
  ::unlink(out.c_str());
  std::string command = std::string("'") + kWickrun + "' --nproc " + std::to_string(ranks) + " '" + kWorker + "'" +
                        worker_args(job, out) + " 2>&1";
  ShellRun run = run_shell(command);
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0) << command << "\n" << run.output;
  std::vector<double> values;
  if (::access(out.c_str(), F_OK) != 0) return values;
  for (const auto& [name, t] : load_safetensors(out)) {
    auto v = t.to(DType::Float64).to_vector<double>();
    values.insert(values.end(), v.begin(), v.end());
  }
  ::unlink(out.c_str());
  return values;
}

// One process, batches of batch * ranks: what every distributed run must equal.
std::vector<double> reference(int ranks, const Job& job) {
  auto data = training_blobs(job.examples);
  BatchStream train(data, {.batch_size = job.batch * ranks, .seed = 3});
  BatchStream valid(data, {.batch_size = 32 * ranks, .shuffle = false});
  auto net = training_mlp();
  SupervisedModel model = classifier(net);
  SGD optimizer(net->named_parameters(), SGDOptions{.lr = 0.1, .momentum = 0.9});
  LoopOptions options;
  options.max_epochs = job.epochs;
  options.log_epochs = false;
  options.trainer.progress = Progress::Style::Off;
  options.trainer.accumulate = job.accumulate;
  fit(model, optimizer, train, &valid, options);
  std::vector<double> values;
  for (const auto& [name, t] : net->state_dict().to_map()) {  // name order, as in the file
    auto v = t.to(DType::Float64).to_vector<double>();
    values.insert(values.end(), v.begin(), v.end());
  }
  return values;
}

// float32 sums in another order, over a few epochs of SGD with momentum.
constexpr double kRtol = 1e-4, kAtol = 1e-5;

TEST(DistributedTraining, OneTwoAndThreeRanksMatchOneProcessOnTheCombinedBatches) {
  REQUIRE_PROGRAMS();
  Job job;
  for (int ranks : {1, 2, 3}) {
    std::vector<double> got = run_ranks(ranks, job);
    EXPECT_TRUE(all_close(got, reference(ranks, job), kRtol, kAtol)) << ranks << " ranks";
  }
}

// Two ranks on GPUs with NCCL: one GPU each, or both on one GPU where NCCL allows it
// (2.30+ with NCCL_MULTI_RANK_GPU_ENABLE=1, which the caller sets).
TEST(DistributedTraining, TwoNcclRanksMatchOneProcess) {
  REQUIRE_PROGRAMS();
  int gpus = cuda::device_count();
  if (gpus == 0) GTEST_SKIP() << "no CUDA device";
  const char* multi = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  if (gpus < 2 && !(multi && std::string(multi) == "1"))
    GTEST_SKIP() << "one GPU: two NCCL ranks on it need NCCL 2.30+ and NCCL_MULTI_RANK_GPU_ENABLE=1";
  Job job{.extra = " --device cuda"};
  EXPECT_TRUE(all_close(run_ranks(2, job), reference(2, Job{}), kRtol, kAtol));
}

TEST(DistributedTraining, UnevenBatchCountsAndAccumulationMatchToo) {
  REQUIRE_PROGRAMS();
  // 49 examples, 3 ranks of batches of 16: rank 0 has 2 batches (16 + 1), ranks 1 and 2
  // have 1. With accumulation over 2 batches every optimizer step spans two rounds.
  Job uneven{.examples = 49, .batch = 16, .epochs = 3};
  EXPECT_TRUE(all_close(run_ranks(3, uneven), reference(3, uneven), kRtol, kAtol)) << "uneven";
  Job accumulate{.examples = 100, .batch = 8, .epochs = 2, .accumulate = 2};
  EXPECT_TRUE(all_close(run_ranks(2, accumulate), reference(2, accumulate), kRtol, kAtol)) << "accumulate";
}

TEST(DistributedTraining, ResumesThroughTheDriver) {
  REQUIRE_PROGRAMS();
  std::string checkpoint = temp_path("resume.ckpt");
  ::unlink(checkpoint.c_str());
  Job first{.epochs = 2, .extra = " --checkpoint '" + checkpoint + "'"};
  run_ranks(2, first);
  Job second{.epochs = 4, .extra = " --checkpoint '" + checkpoint + "' --resume"};
  std::vector<double> resumed = run_ranks(2, second);
  Job straight{.epochs = 4};
  EXPECT_TRUE(all_close(resumed, reference(2, straight), kRtol, kAtol));
  ::unlink(checkpoint.c_str());
}

// Starts one rank directly (no wickrun, so nobody else stops the ranks), its output into `log`.
pid_t start_rank(int rank, int world, int port, const std::string& args, const std::string& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("RANK", std::to_string(rank).c_str(), 1);
    ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
    ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
    ::setenv("MASTER_ADDR", "127.0.0.1", 1);
    ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
    ::setenv("WICK_JOB_TOKEN", "test-token", 1);
    std::string command = std::string("exec '") + kWorker + "'" + args + " > '" + log + "' 2>&1";
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// Waits up to `limit` for `pid`; returns its status, or -1 (and kills it) past the limit.
int wait_for(pid_t pid, std::chrono::seconds limit) {
  auto deadline = Clock::now() + limit;
  int status = 0;
  while (Clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Rank 1 of 3 stops itself (`how`) after a few batches; the driver and rank 2 must exit
// with an error, within the 3 s timeout plus start-up, instead of waiting forever.
void expect_others_fail(const std::string& how, const std::string& driver_names = "") {
  int port = distributed::find_free_port();
  std::string args = " --examples 4000 --batch 4 --epochs 50 --timeout-ms 3000 " + how;
  std::vector<std::string> logs;
  std::vector<pid_t> pids;
  for (int r = 0; r < 3; ++r) {
    logs.push_back(temp_path("rank" + std::to_string(r) + ".log"));
    pids.push_back(start_rank(r, 3, port, args, logs.back()));
  }
  auto start = Clock::now();
  int driver = wait_for(pids[0], std::chrono::seconds(30));
  int other = wait_for(pids[2], std::chrono::seconds(30));
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ::kill(pids[1], SIGKILL);
  ::waitpid(pids[1], nullptr, 0);
  ASSERT_NE(driver, -1) << "the driver did not exit; its log:\n" << read_file(logs[0]);
  EXPECT_TRUE(WIFEXITED(driver) && WEXITSTATUS(driver) == 1) << read_file(logs[0]);
  EXPECT_TRUE(WIFEXITED(other) && WEXITSTATUS(other) == 1) << read_file(logs[2]);
  std::string driver_log = read_file(logs[0]);
  EXPECT_NE(driver_log.find("training_worker rank 0:"), std::string::npos) << driver_log;
  EXPECT_LT(seconds, 20) << driver_log;
  if (!driver_names.empty()) EXPECT_NE(driver_log.find(driver_names), std::string::npos) << driver_log;
  for (const auto& log : logs) ::unlink(log.c_str());
}

TEST(DistributedTraining, AKilledFollowerMakesTheOthersFailWithinTheTimeout) {
  REQUIRE_PROGRAMS();
  // Gloo names the closed connection by address only (issue 14, defect 2): the driver's
  // error must say which rank that address belongs to.
  expect_others_fail("--die-after 5", "the failed peer is rank 1 of 3");
}

// Sharded (ZeRO-2): the reduce-scatters that backward waits for fail as the all-reduces do.
TEST(DistributedTraining, AKilledFollowerOfShardedTrainingIsNamed) {
  REQUIRE_PROGRAMS();
  expect_others_fail("--die-after 5 --shard gradients", "the failed peer is rank 1 of 3");
}

TEST(DistributedTraining, AHungFollowerMakesTheOthersFailWithinTheTimeout) {
  REQUIRE_PROGRAMS();
  expect_others_fail("--hang-after 5");
}

// Fault matrix under wickrun (issue 14, defect 2), with a 2 s collective timeout: the job
// must end within timeout + 5 s (plus start-up) and wickrun's summary must name rank 1.
ShellRun run_faulty_job(const std::string& how) {
  return run_shell(std::string("'") + kWickrun + "' --nproc 3 --grace 1 '" + kWorker +
                   "' --examples 4000 --batch 4 --epochs 50 --timeout-ms 2000 " + how + " 2>&1");
}

TEST(DistributedTraining, WickrunNamesAStoppedFollowerAsTheLikelyCause) {
  REQUIRE_PROGRAMS();
  ShellRun f = run_faulty_job("--hang-after 5");
  EXPECT_TRUE(WIFEXITED(f.status) && WEXITSTATUS(f.status) != 0) << f.output;
  EXPECT_LT(f.seconds, 2 + 5 + 5) << f.output;
  EXPECT_NE(f.output.find("failed: rank 1 (local rank 1, host "), std::string::npos) << f.output;
  EXPECT_NE(f.output.find("did not exit / was hung"), std::string::npos) << f.output;
}

// DASO's node and cross-node groups wait as long as the job's collectives (issue 25, item
// 9; they waited a fixed 5 minutes): rank 1 of 2 nodes x 2 stops itself, and with a 2 s
// collective timeout the job ends within timeout + 5 s (plus start-up), the first rank to
// time out naming its DASO group (one of rank 1's, its node's or its cross-node group if
// rank 1 was sending; or, on a loaded machine, the other node's group, whose rank 3 waits
// on rank 1 and makes rank 2 time out first: that depends on timing, and wickrun stops the
// job at the first failure) and wickrun naming rank 1. `timeout 60` bounds the test if the
// job does not end.
TEST(DistributedTraining, AStoppedDasoRankIsNamedWithinTheCollectiveTimeout) {
  REQUIRE_PROGRAMS();
  ShellRun f =
      run_shell(std::string("timeout 60 '") + kWickrun + "' --nnodes 2 --nproc-per-node 2 --grace 1 '" + kWorker +
                "' --examples 4000 --batch 4 --epochs 50 --timeout-ms 2000 --daso --hang-after 5" + " 2>&1");
  EXPECT_TRUE(WIFEXITED(f.status) && WEXITSTATUS(f.status) != 0 && WEXITSTATUS(f.status) != 124) << f.output;
  EXPECT_LT(f.seconds, 2 + 5 + 5) << f.output;
  EXPECT_TRUE(f.output.find("DASO: the node's group (ranks 0, 1) failed") != std::string::npos ||
              f.output.find("DASO: the cross-node group (ranks 1, 3) failed") != std::string::npos ||
              f.output.find("DASO: the node's group (ranks 2, 3) failed") != std::string::npos)
      << f.output;
  EXPECT_NE(f.output.find("Timed out waiting 2000ms"), std::string::npos) << f.output;
  EXPECT_NE(f.output.find("failed: rank 1 (local rank 1, host "), std::string::npos) << f.output;
}

TEST(DistributedTraining, WickrunNamesAKilledFollower) {
  REQUIRE_PROGRAMS();
  ShellRun f = run_faulty_job("--die-after 5");
  EXPECT_TRUE(WIFEXITED(f.status) && WEXITSTATUS(f.status) != 0) << f.output;
  EXPECT_LT(f.seconds, 2 + 5 + 5) << f.output;
  EXPECT_NE(f.output.find("failed: rank 1 (local rank 1, host "), std::string::npos) << f.output;
  EXPECT_NE(f.output.find("signal 9"), std::string::npos) << f.output;
}

// The fault matrix's "driver killed while writing a checkpoint": rank 0 limits its files to
// 512 bytes before training (the checkpoint holds about 5 KB), so the kernel kills it
// (SIGXFSZ) in the middle of writing the checkpoint of epoch 3, at the same byte whatever
// the speed. wickrun must name rank 0 and end the job within timeout + 5 s; the checkpoint of
// epoch 2 must be intact (the torn write went to a temporary name); and the next run resumes
// from it, removes the torn temporary and ends as an uninterrupted run. (The limit used to be
// `ulimit -f 1` before exec; under clang, LLVM's OpenMP runtime then died writing its own
// 1 KiB /dev/shm file at start-up, before any checkpoint: no torn temporary.)
TEST(DistributedTraining, ADriverKilledWhileWritingACheckpointLeavesTheLastOneIntact) {
  REQUIRE_PROGRAMS();
  const std::string dir = temp_path("torn");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string checkpoint = dir + "/job.ckpt";
  run_ranks(2, Job{.epochs = 2, .extra = " --checkpoint '" + checkpoint + "'"});
  const std::string before = read_file(checkpoint);
  ASSERT_FALSE(before.empty());

  std::string command = std::string("'") + kWickrun + "' --nproc 2 --grace 1 '" + kWorker +
                        "' --examples 96 --batch 8 --epochs 4 --timeout-ms 2000 --file-size-limit 512 --checkpoint '" +
                        checkpoint + "' --resume 2>&1";
  const ShellRun run = run_shell(command);
  const std::string& output = run.output;
  ASSERT_GT(before.size(), 512u) << "the checkpoint must be larger than the limit for the write to be torn";
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) != 0) << output;
  EXPECT_LT(run.seconds, 2 + 5 + 5) << output;
  EXPECT_NE(output.find("failed: rank 0 (local rank 0, host "), std::string::npos) << output;
  EXPECT_NE(output.find("signal " + std::to_string(SIGXFSZ)), std::string::npos) << output;

  EXPECT_EQ(read_file(checkpoint), before) << "the checkpoint of epoch 2 was changed by the torn write";
  int torn = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("job.ckpt.tmp.", 0) != 0) continue;
    ++torn;
    // As if the kill was a while ago: a temporary younger than kStaleTemporaryAge may
    // belong to a live writer and is left alone.
    std::filesystem::last_write_time(entry.path(),
                                     std::filesystem::file_time_type::clock::now() - std::chrono::minutes(5));
  }
  EXPECT_EQ(torn, 1) << "the torn write should be left under a temporary name";

  std::vector<double> resumed = run_ranks(2, Job{.epochs = 4, .extra = " --checkpoint '" + checkpoint + "' --resume"});
  EXPECT_TRUE(all_close(resumed, reference(2, Job{.epochs = 4}), kRtol, kAtol));
  torn = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    torn += entry.path().filename().string().rfind("job.ckpt.tmp.", 0) == 0;
  EXPECT_EQ(torn, 0) << "the next successful write should remove the stale temporary";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace wick::test
