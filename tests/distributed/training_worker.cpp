// One rank of the distributed training tests, started by wickrun (or by the test with the
// environment set by hand): trains training_mlp on its shard of training_blobs with SGD
// and, on rank 0, writes the final parameters to --out as safetensors.
//   --examples N --batch B (per rank) --epochs E --accumulate A --lr LR
//   --checkpoint PATH [--resume]  --timeout-ms T
//   --die-after K   rank 1 kills itself (SIGKILL) after K training batches
//   --hang-after K  rank 1 stops itself (SIGSTOP) after K training batches
//   --device D      cpu (default; Gloo) or cuda (rank r on GPU r modulo the count; NCCL)
//   --file-size-limit B  rank 0 limits the files it writes to B bytes (RLIMIT_FSIZE) before
//                   training, so the kernel kills it (SIGXFSZ) inside its first larger write
//   --daso          Heat's DASO (1 warm-up and 1 cool-down epoch) instead of plain data
//                   parallelism; needs wickrun --nnodes with equal nodes
//   --shard S       optimizer (ZeRO-1) or gradients (ZeRO-2) sharding
//   --library-timeouts  the library's default timeouts instead of --timeout-ms:
//                   ProcessGroup::from_environment(device) and DataParallelOptions{}, which
//                   read WICK_RENDEZVOUS_TIMEOUT and the others (environment_timeouts.h)
#include <omp.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <stdexcept>
#include <string>

#include <wick/distributed/process_group.h>
#include <wick/optim/sgd.h>
#include <wick/tensor/cuda.h>

#include "tests/support/training_fixture.h"

using namespace wick;
using namespace wick::distributed;

int main(int argc, char** argv) {
  std::string out, checkpoint;
  int64_t examples = 96, batch = 8, epochs = 2, accumulate = 1, timeout_ms = 20000, die_after = -1, hang_after = -1,
          file_size_limit = -1;
  double lr = 0.1;
  bool resume = false, daso = false, library_timeouts = false;
  std::string shard = "none";
  std::string device_name = "cpu";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--out") out = next();
    else if (a == "--checkpoint") checkpoint = next();
    else if (a == "--resume") resume = true;
    else if (a == "--examples") examples = std::stoll(next());
    else if (a == "--batch") batch = std::stoll(next());
    else if (a == "--epochs") epochs = std::stoll(next());
    else if (a == "--accumulate") accumulate = std::stoll(next());
    else if (a == "--lr") lr = std::stod(next());
    else if (a == "--timeout-ms") timeout_ms = std::stoll(next());
    else if (a == "--die-after") die_after = std::stoll(next());
    else if (a == "--hang-after") hang_after = std::stoll(next());
    else if (a == "--device") device_name = next();
    else if (a == "--file-size-limit") file_size_limit = std::stoll(next());
    else if (a == "--daso") daso = true;
    else if (a == "--shard") shard = next();
    else if (a == "--library-timeouts") library_timeouts = true;
    else {
      std::fprintf(stderr, "training_worker: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  try {
    ControlOptions control;
    control.rendezvous_timeout = std::chrono::milliseconds(timeout_ms);
    Device device = Device::cpu();
    if (device_name == "cuda") {
      const char* local = std::getenv("LOCAL_RANK");
      device = Device::cuda((local ? std::atoi(local) : 0) % std::max(1, cuda::device_count()));
    }
    ProcessGroup group = library_timeouts
                             ? ProcessGroup::from_environment(device)
                             : ProcessGroup::from_environment(device, control, std::chrono::milliseconds(timeout_ms));
    const int rank = group.config.rank, world = group.config.world_size;
    auto data = wick::test::training_blobs(examples);
    BatchStream train(data, {.batch_size = batch, .seed = 3, .rank = rank, .world_size = world, .device = device});
    BatchStream valid(data, {.batch_size = 32, .shuffle = false, .rank = rank, .world_size = world, .device = device});
    auto net = wick::test::training_mlp();
    net->to(device);
    SupervisedModel model = classifier(net);
    int64_t batches = 0;
    LossFunction loss = model.loss;
    model.loss = [&](const Variable& output, const Tensor& target) {
      if (rank == 1 && net->is_training() && ++batches > 0) {
        if (die_after >= 0 && batches > die_after) ::raise(SIGKILL);
        if (hang_after >= 0 && batches > hang_after) ::raise(SIGSTOP);
      }
      return loss(output, target);
    };
    SGD optimizer(net->named_parameters(), SGDOptions{.lr = lr, .momentum = 0.9});
    LoopOptions options;
    options.max_epochs = epochs;
    options.log_epochs = false;
    options.trainer.progress = Progress::Style::Off;
    options.trainer.accumulate = accumulate;
    options.checkpoint_path = checkpoint;
    options.resume = resume;
    DataParallelOptions parallel;
    if (!library_timeouts) parallel.timeout = std::chrono::milliseconds(timeout_ms);
    if (rank == 0 && file_size_limit >= 0) {
      // Set here rather than by `ulimit -f` before exec: LLVM's OpenMP runtime (clang
      // builds) writes a 1 KiB file in /dev/shm when it starts, which a limit set at exec
      // turned into SIGXFSZ before training. Started first, the runtime has written it;
      // from here on the only file rank 0 writes until training ends is the checkpoint.
      (void)omp_get_max_threads();
      const struct rlimit limit { static_cast<rlim_t>(file_size_limit), static_cast<rlim_t>(file_size_limit) };
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) throw std::runtime_error("setrlimit(RLIMIT_FSIZE) failed");
    }
    if (daso) parallel.daso = DasoOptions{.total_epochs = epochs, .warmup_epochs = 1, .cooldown_epochs = 1};
    if (shard == "optimizer") parallel.shard = ShardStrategy::Optimizer;
    else if (shard == "gradients") parallel.shard = ShardStrategy::Gradients;
    else if (shard != "none") throw std::runtime_error("--shard must be none, optimizer or gradients");
    train_in_group(group, model, optimizer, train, &valid, options, parallel);
    if (rank == 0 && !out.empty()) save_safetensors(out, net->state_dict().to_map());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "training_worker rank %s: %s\n", std::getenv("RANK") ? std::getenv("RANK") : "0", e.what());
    return 1;
  }
}
