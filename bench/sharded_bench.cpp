// wick_bench_sharded: per-rank memory, step time and bytes sent of DDP, ZeRO-1, ZeRO-2 and
// full sharding (issue 46) for the GPT example on 1, 2 and 4 CPU ranks (threads over Gloo):
//   wick_bench_sharded [--width 128] [--layers 2] [--steps 5] [--ranks 1,2,4]
//                      [--shard optimizer,gradients,full] [--in-flight 1]
//                      [--no-forward-prefetch] [--no-backward-prefetch] [--param-dtype bf16]
//                      [--units block|sublayer] [--no-zero-units]
// (DDP always runs: the shares are of its figures. --in-flight and the prefetch switches set
// the DataParallelOptions of the same names: where memory and overlap trade off.)
// --units: the sharded schemes' shard_units, the GPT's blocks or each block's attention and
// MLP layers (GPT::shard_units); --no-zero-units leaves ZeRO-1/2 without them, so that their
// gathers after the step are waited for before the forward instead of each as its unit's
// forward starts.
// --param-dtype: every scheme's forward under that dtype's autocast, and full sharding
// gathering and computing the blocks in it (DataParallelOptions::param_dtype).
// Memory two ways: the model state counted exactly from the tensors each rank keeps between
// steps (parameters, gradients as kept, AdamW's state; ShardedSync::state_bytes), and the
// CPU allocator's count (cpu_memory_stats: everything tensors hold, activations and
// buffers in flight included) between steps and at its peak during the timed steps. The
// ranks are threads of one process, which has one count: a rank's share is the count over
// the ranks (they are alike and run in step). The bytes are the payload rank 0 hands its
// communicator per step (MeteredCommunicator: an all-reduce's buffer, a reduce-scatter's
// output, an all-gather's input).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <wick/wick.h>

#include <wick/tensor/cpu_memory_stats.h>

#include "examples/gpt/model.h"

using namespace wick;
using namespace wick::distributed;

namespace {

struct Result {
  int64_t state_bytes = 0;
  int64_t held_between_steps = 0, peak = 0;  // the allocator's, per rank
  double step_seconds = 0;
  int64_t bytes_sent = 0;
};

Result run(int world, ShardStrategy shard, const examples::GPTConfig& config, int steps,
           const DataParallelOptions& knobs, std::optional<DType> param_dtype, examples::GPT::ShardUnit units,
           bool zero_units) {
  InProcessStore store;
  Result result;
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        auto metered = std::make_unique<MeteredCommunicator>(
            make_communicator(store, r, world, Device::cpu(), std::chrono::seconds(600)));
        MeteredCommunicator& comm = *metered;
        Generator init(1);
        examples::GPT model(config, {}, &init);
        AdamW opt(model.named_parameters());
        std::unique_ptr<DistributedSync> sync;
        if (shard == ShardStrategy::None) sync = std::make_unique<DataParallelSync>(comm, model);
        else {
          DataParallelOptions parallel = knobs;
          parallel.shard = shard;
          if (shard == ShardStrategy::Full || zero_units) parallel.shard_units = model.shard_units(units);
          if (shard == ShardStrategy::Full) parallel.param_dtype = param_dtype;
          sync = std::make_unique<ShardedSync>(comm, model, opt, shard, parallel);
        }
        Generator data(static_cast<uint64_t>(100 + r));
        const Tensor idx = randint(0, config.vocab_size, {4, config.block_size + 1}, Options(DType::Int64), &data);
        std::vector<double> times;
        int64_t bytes_before = 0;
        // Every rank at the same point, then the allocator's count read (or its peak reset)
        // by rank 0 while the others wait.
        auto together = [&](const std::function<void()>& on_rank_0) {
          sync->sum({0.0});
          if (r == 0) on_rank_0();
          sync->sum({0.0});
        };
        for (int step = 0; step < steps + 1; ++step) {  // the first step warms up
          if (step == 1) {
            together([] { cpu_reset_peak_memory_stats(); });
            bytes_before = comm.bytes();
          }
          const auto start = std::chrono::steady_clock::now();
          GradScaler off({.enabled = false});
          sync->before_forward();  // the gathers the last step launched, of no wrapped module
          sync->arm(4, 0);
          Variable loss;
          {
            // --param-dtype: every scheme's forward under that autocast, so that they compare.
            AutocastGuard autocast(Device::cpu(), param_dtype.value_or(DType::BFloat16), param_dtype.has_value());
            loss = model.loss(idx.narrow(1, 0, config.block_size), idx.narrow(1, 1, config.block_size));
          }
          sync->backward(loss, 4);
          sync->finish();
          sync->step(&opt, off, model.parameters(), 1.0);
          opt.zero_grad();
          times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
        together([&] {
          const CpuMemoryStats m = cpu_memory_stats();
          result.held_between_steps = static_cast<int64_t>(m.allocated) / world;
          result.peak = static_cast<int64_t>(m.peak_allocated) / world;
        });
        if (r != 0) return;
        std::sort(times.begin() + 1, times.end());
        result.step_seconds = times[1 + static_cast<size_t>(steps) / 2];
        result.bytes_sent = (comm.bytes() - bytes_before) / steps;
        if (auto* sharded = dynamic_cast<ShardedSync*>(sync.get())) {
          result.state_bytes = sharded->state_bytes().total();
        } else {
          for (const Variable& p : model.parameters())
            result.state_bytes += 2 * static_cast<int64_t>(p.data().nbytes());
          for (const auto& [key, t] : opt.state_dict())
            if (key.rfind("state.", 0) == 0) result.state_bytes += static_cast<int64_t>(t.nbytes());
        }
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  examples::GPTConfig config{.vocab_size = 256, .block_size = 32, .n_layer = 2, .n_head = 4, .n_embd = 128};
  int steps = 5;
  std::vector<int> worlds = {1, 2, 4};
  std::vector<ShardStrategy> shards = {ShardStrategy::Optimizer, ShardStrategy::Gradients, ShardStrategy::Full};
  DataParallelOptions knobs;
  std::optional<DType> param_dtype;
  examples::GPT::ShardUnit units = examples::GPT::ShardUnit::Block;
  bool zero_units = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--width") config.n_embd = std::stoll(v), ++i;
    else if (a == "--layers") config.n_layer = std::stoll(v), ++i;
    else if (a == "--steps") steps = std::max(1, std::stoi(v)), ++i;
    else if (a == "--param-dtype") {
      if (v == "bf16") param_dtype = DType::BFloat16;
      else if (v == "fp16") param_dtype = DType::Float16;
      else if (v != "fp32") {
        std::fprintf(stderr, "wick_bench_sharded: --param-dtype must be fp32, bf16 or fp16, got %s\n", v.c_str());
        return 2;
      }
      ++i;
    } else if (a == "--ranks") {
      worlds.clear();
      std::stringstream s(v);
      for (std::string w; std::getline(s, w, ',');) worlds.push_back(std::stoi(w));
      ++i;
    } else if (a == "--shard") {
      shards.clear();
      std::stringstream s(v);
      for (std::string name; std::getline(s, name, ',');) {
        if (name == "optimizer") shards.push_back(ShardStrategy::Optimizer);
        else if (name == "gradients") shards.push_back(ShardStrategy::Gradients);
        else if (name == "full") shards.push_back(ShardStrategy::Full);
        else {
          std::fprintf(stderr, "wick_bench_sharded: --shard takes optimizer, gradients, full; got %s\n", name.c_str());
          return 2;
        }
      }
      ++i;
    } else if (a == "--in-flight") knobs.reduce_scatters_in_flight = std::stoll(v), ++i;
    else if (a == "--units") {
      if (v == "block") units = examples::GPT::ShardUnit::Block;
      else if (v == "sublayer") units = examples::GPT::ShardUnit::Sublayer;
      else {
        std::fprintf(stderr, "wick_bench_sharded: --units must be block or sublayer, got %s\n", v.c_str());
        return 2;
      }
      ++i;
    } else if (a == "--no-forward-prefetch") knobs.forward_prefetch = false;
    else if (a == "--no-backward-prefetch") knobs.backward_prefetch = false;
    else if (a == "--no-zero-units") zero_units = false;
    else {
      std::fprintf(stderr, "wick_bench_sharded: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  try {
    int64_t params = 0;
    {
      examples::GPT probe(config);
      for (const Variable& p : probe.parameters()) params += p.numel();
    }
    std::printf("GPT: %lld layers, width %lld, %lld parameters (float32 AdamW), batch 4 x %lld tokens per rank\n",
                static_cast<long long>(config.n_layer), static_cast<long long>(config.n_embd),
                static_cast<long long>(params), static_cast<long long>(config.block_size));
    std::printf(
        "reduce-scatters in flight %lld, shard_units: %s, full sharding's forward prefetch %s, backward prefetch %s\n",
        static_cast<long long>(knobs.reduce_scatters_in_flight),
        units == examples::GPT::ShardUnit::Block ? "blocks" : "sublayers", knobs.forward_prefetch ? "on" : "off",
        knobs.backward_prefetch ? "on" : "off");
    std::printf("ZeRO-1/2: %s\n", zero_units ? "with those units (each one's gather waited for as its forward starts)"
                                             : "no shard_units (every gather waited for before the forward)");
    std::printf("%5s %-10s %16s %8s %16s %8s %16s %8s %10s %16s\n", "ranks", "shard", "state bytes/rank", "of DDP",
                "held/rank", "of DDP", "peak/rank", "of DDP", "step ms", "bytes sent/step");
    for (int world : worlds) {
      Result ddp;
      std::vector<ShardStrategy> runs = {ShardStrategy::None};
      runs.insert(runs.end(), shards.begin(), shards.end());
      for (ShardStrategy shard : runs) {
        DataParallelOptions these = knobs;
        if (shard != ShardStrategy::Full) these.forward_prefetch = these.backward_prefetch = true;
        const Result r = run(world, shard, config, steps, these, param_dtype, units, zero_units);
        if (shard == ShardStrategy::None) ddp = r;
        auto share = [](int64_t a, int64_t b) { return static_cast<double>(a) / static_cast<double>(b); };
        std::printf("%5d %-10s %16lld %7.3fx %16lld %7.3fx %16lld %7.3fx %10.1f %16lld\n", world,
                    shard_strategy_name(shard), static_cast<long long>(r.state_bytes),
                    share(r.state_bytes, ddp.state_bytes), static_cast<long long>(r.held_between_steps),
                    share(r.held_between_steps, ddp.held_between_steps), static_cast<long long>(r.peak),
                    share(r.peak, ddp.peak), 1e3 * r.step_seconds, static_cast<long long>(r.bytes_sent));
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wick_bench_sharded: %s\n", e.what());
    return 1;
  }
  return 0;
}
