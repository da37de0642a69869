// A byte-level GPT trained on English text: by default the fortune cookies of Debian's
// `fortunes` package (/usr/share/games/fortunes: every file but the .dat indexes), every
// 20th fortune held out for validation. Random windows of block_size + 1 bytes each epoch
// (TokenWindows), AdamW with a cosine decay over the epochs, validation loss and perplexity
// after each epoch, checkpoints and resume, a sample of generated text at the end; alone
// or data-parallel under wickrun, in float32 or under bf16 autocast:
//
//   gpt                                    (the tiny default: 4 layers, 4 heads, 128 wide)
//   wickrun --nproc 2 gpt --checkpoint-dir ckpt
//   wickrun --nproc 4 gpt --shard full --sharded-checkpoints --checkpoint-dir ckpt   (every rank writes its slices)
//   gpt --precision bf16 --n-layer 12 --n-head 12 --n-embd 768 --block-size 1024   (GPT-2 124M)
//   gpt --sample-only gpt-out/model.safetensors --prompt "The "
//   gpt --device cuda --cuda-graphs         (each training step one CUDA graph launch)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <wick/wick.h>

#include "examples/common/args.h"
#include "examples/common/devices.h"
#include "examples/common/training.h"
#include "examples/gpt/model.h"

using namespace wick;
using namespace wick::distributed;

namespace {

struct Corpus {
  std::string train, validation;
  int64_t files = 0, fortunes = 0;
};

// The fortunes of every data file in `dir` (sorted by name; a fortune ends at a line "%"),
// or of the one file `dir` names; fortune i goes to validation when i % every == every - 1.
Corpus read_corpus(const std::string& path, int64_t every) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  if (fs::is_directory(path)) {
    for (const auto& e : fs::directory_iterator(path))
      if (e.is_regular_file() && !e.is_symlink() && e.path().extension() != ".dat") files.push_back(e.path());
    std::sort(files.begin(), files.end());
  } else if (fs::exists(path)) {
    files.push_back(path);
  }
  // The default corpus comes from a package: say how to get it, or how to pass another.
  if (files.empty())
    throw std::runtime_error("no text in " + path + " (" +
                             (fs::exists(path) ? "no text files there" : "no such file or folder") +
                             "): install Debian's fortunes (apt-get install fortunes) or pass --data FILE_OR_FOLDER");
  Corpus c;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + f.string());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ++c.files;
    for (size_t begin = 0; begin < text.size();) {
      size_t end = text.find("\n%\n", begin);
      end = end == std::string::npos ? text.size() : end + 3;
      (c.fortunes++ % every == every - 1 ? c.validation : c.train).append(text, begin, end - begin);
      begin = end;
    }
  }
  return c;
}

Tensor bytes_tensor(const std::string& s) {
  Tensor t = empty({static_cast<int64_t>(s.size())}, DType::UInt8);
  std::copy(s.begin(), s.end(), reinterpret_cast<char*>(t.data<uint8_t>()));
  return t;
}

std::string printable(const Tensor& tokens) {
  std::string s;
  for (int64_t i = 0; i < tokens.numel(); ++i) {
    const auto c = static_cast<unsigned char>(tokens.data<int64_t>()[i]);
    s += (c == '\n' || c == '\t' || (c >= 32 && c < 127)) ? static_cast<char>(c) : '?';
  }
  return s;
}

void print_sample(examples::GPT& model, const examples::Args& args, Device device) {
  model.eval();
  Generator g(static_cast<uint64_t>(args.integer("seed")));
  const std::string prompt = args.str("prompt");
  if (prompt.empty()) throw std::runtime_error("--prompt must not be empty");
  Tensor idx = bytes_tensor(prompt).to(DType::Int64).unsqueeze(0).to(device);
  const int64_t count = args.integer("sample-tokens");
  const bool cache = !args.is_set("no-kv-cache");
  const auto start = std::chrono::steady_clock::now();
  Tensor out = model.generate(idx, count, args.number("temperature"), args.integer("top-k"), g, cache);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("sample (temperature %g, top-k %lld; %lld bytes in %.3f s, %.0f tokens/s %s the KV cache):\n%s\n",
              args.number("temperature"), static_cast<long long>(args.integer("top-k")), static_cast<long long>(count),
              seconds, static_cast<double>(count) / seconds, cache ? "with" : "without",
              printable(out.select(0, 0).to(Device::cpu())).c_str());
}

examples::GPTConfig config_of(const examples::Args& args) {
  const std::string positions = args.str("positions");
  if (positions != "learned" && positions != "sinusoidal")
    throw std::runtime_error("--positions must be learned or sinusoidal");
  return {.block_size = args.integer("block-size"),
          .n_layer = args.integer("n-layer"),
          .n_head = args.integer("n-head"),
          .n_embd = args.integer("n-embd"),
          .dropout = args.number("dropout"),
          .sinusoidal = positions == "sinusoidal",
          .checkpoint_activations = args.is_set("checkpoint-activations")};
}

int run(int argc, char** argv) {
  examples::Args args("gpt",
                      "trains a byte-level GPT on English text (Debian's fortunes by default) and samples from it");
  args.option("data", "/usr/share/games/fortunes", "a folder of fortune files (every file but *.dat), or one text file")
      .option("validation-every", "20", "every N-th fortune is held out for validation")
      .option("block-size", "128", "context length in bytes")
      .option("n-layer", "4", "Transformer blocks")
      .option("n-head", "4", "attention heads")
      .option("n-embd", "128", "embedding width")
      .option("dropout", "0", "dropout in the blocks")
      .option("positions", "learned", "learned (GPT-2's wpe) or sinusoidal")
      .flag("checkpoint-activations", "recompute each block's forward in backward instead of keeping its activations")
      .option("shard", "none",
              "none, optimizer (ZeRO-1: AdamW's state split over the ranks), gradients (ZeRO-2: "
              "the reduced gradients too) or full (ZeRO-3: each block's parameters too, gathered around its use)")
      .option("shard-units", "block",
              "with --shard: the units, block (each transformer block) or sublayer (each block's attention and its "
              "two MLP layers); full sharding gathers them one at a time (sublayers: less memory at the peak, more "
              "collectives), ZeRO-1/2 waits for each one's gather after the step as its forward starts")
      .flag("sharded-checkpoints",
            "with --shard: every rank writes its slices of the optimizer state (with --shard full, of the blocks' "
            "parameters too) to a checkpoint file of its own (FSDP's SHARDED_STATE_DICT) instead of rank 0 gathering "
            "them; resumes on any number of ranks")
      .option("param-dtype", "fp32",
              "with --shard full: bf16 or fp16 gathers and computes the blocks in that dtype (FSDP's param_dtype; "
              "needs --precision bf16 or fp16), the optimizer stepping float32 shards")
      .option("epochs", "24", "epochs")
      .option("windows-per-epoch", "4096", "random training windows per epoch (0: as many as tile the text)")
      .option("validation-windows", "256", "validation windows (tiling the held-out text from its start; 0: all)")
      .option("batch-size", "16", "global batch size in windows (split over the ranks)")
      .option("lr", "0.0015", "AdamW learning rate (cosine decay over the epochs; 0.002 stalls at the unigram loss)")
      .option("weight-decay", "0.01", "AdamW weight decay")
      .option("workers", "1", "DataLoader worker threads per rank")
      .option("sample-tokens", "300", "bytes generated at the end (0: none)")
      .option("prompt", "The ", "what generation starts from")
      .option("temperature", "0.8", "sampling temperature")
      .option("top-k", "0", "sample from the k most likely bytes only (0: all)")
      .option("sample-only", "", "load this model (safetensors) and only sample")
      .flag("no-kv-cache", "sample without the KV cache: each byte runs the model over the whole context")
      .flag("cuda-graphs", "capture the training step in a CUDA graph and replay it (one GPU, dropout 0)");
  examples::add_training_options(args, "gpt-out");
  if (!args.parse(argc, argv)) return 0;

  const uint64_t seed = static_cast<uint64_t>(args.integer("seed"));
  Device device = examples::pick_device(args.str("device"));
  const examples::GPTConfig config = config_of(args);
  manual_seed(seed);
  Generator init(seed);
  auto model = std::make_shared<examples::GPT>(config, Options{}, &init);
  model->to(device);
  if (!args.str("sample-only").empty()) {
    model->load_state_dict(StateDict(load_safetensors(args.str("sample-only"))));
    print_sample(*model, args, device);
    return 0;
  }

  const examples::Timeouts waits = examples::timeouts(args);
  ProcessGroup group = ProcessGroup::from_environment(device, waits.control, waits.collective);
  const int world = group.config.world_size, rank = group.config.rank;
  const int64_t batch = args.integer("batch-size");
  if (batch < world || batch % world != 0)
    throw std::runtime_error("--batch-size must be a positive multiple of the number of ranks");

  const Corpus corpus = read_corpus(args.str("data"), std::max<int64_t>(args.integer("validation-every"), 2));
  auto train_windows = std::make_shared<TokenWindows>(bytes_tensor(corpus.train), config.block_size, true);
  auto valid_windows = std::make_shared<TokenWindows>(bytes_tensor(corpus.validation), config.block_size, false);
  auto limit = [](std::shared_ptr<const MapDataset> d, int64_t n) {
    return n > 0 && n < d->size() ? subset(d, 0, n) : d;
  };
  auto train_set = limit(train_windows, args.integer("windows-per-epoch"));
  auto valid_set = limit(valid_windows, args.integer("validation-windows"));
  DataLoader train_loader(train_set,
                          {.batch_size = batch / world,
                           .seed = seed,
                           .sampler = std::make_shared<DistributedSampler>(train_set->size(), rank, world, true, seed),
                           .num_workers = args.integer("workers"),
                           .device = device});
  DataLoader valid_loader(valid_set,
                          {.batch_size = std::max<int64_t>(batch / world, 1),
                           .sampler = std::make_shared<DistributedSampler>(valid_set->size(), rank, world, false),
                           .num_workers = args.integer("workers"),
                           .device = device});
  DataLoaderBatches train(train_loader), validation(valid_loader);

  SupervisedModel lm = custom_model(model, [](Module& m, const Batch& b) -> StepOutput {
    return {static_cast<examples::GPT&>(m).loss(b.inputs, b.targets), {}};
  });
  const bool graphs = args.is_set("cuda-graphs");
  // A graph replays the random numbers drawn at its capture: dropout would drop the same units every step.
  if (graphs && config.dropout != 0) throw std::runtime_error("--cuda-graphs needs --dropout 0");
  AdamW optimizer(
      model->named_parameters(),
      AdamOptions{.lr = args.number("lr"), .weight_decay = args.number("weight-decay"), .capturable = graphs});
  const int64_t epochs = args.integer("epochs");
  LoopOptions options = examples::loop_options(args, group, epochs, examples::cosine_decay(epochs), "gpt.ckpt");
  options.trainer.cuda_graphs = graphs;
  const int64_t block = config.block_size;
  if (group.is_driver()) {
    int64_t params = 0;
    for (const Variable& p : model->parameters()) params += p.numel();
    std::printf(
        "gpt: %lld layers, %lld heads, width %lld, context %lld (%.2fM parameters) on %s in %s, %d rank(s); "
        "%lld fortunes from %lld files of %s: %lld training bytes, %lld validation bytes\n",
        static_cast<long long>(config.n_layer), static_cast<long long>(config.n_head),
        static_cast<long long>(config.n_embd), static_cast<long long>(block), static_cast<double>(params) / 1e6,
        device.str().c_str(), precision_name(options.trainer.precision), world, static_cast<long long>(corpus.fortunes),
        static_cast<long long>(corpus.files), args.str("data").c_str(), static_cast<long long>(corpus.train.size()),
        static_cast<long long>(corpus.validation.size()));
    options.log_epochs = false;  // the line below says it for a language model
    options.on_epoch = [block](const CurvePoint& p) {
      std::printf(
          "epoch %lld: train loss %.4f, validation loss %.4f (perplexity %.2f, %.3f bits/byte), %.0f tokens/s\n",
          static_cast<long long>(p.epoch + 1), p.train_loss, p.validation_loss.value_or(NAN),
          std::exp(p.validation_loss.value_or(NAN)), p.validation_loss.value_or(NAN) / std::log(2.0),
          p.examples_per_second * static_cast<double>(block));
    };
  }
  DataParallelOptions parallel = examples::data_parallel_options(args, waits);
  const std::string shard = args.str("shard");
  if (shard == "optimizer") parallel.shard = ShardStrategy::Optimizer;
  else if (shard == "gradients") parallel.shard = ShardStrategy::Gradients;
  else if (shard == "full") parallel.shard = ShardStrategy::Full;
  else if (shard != "none")
    throw std::runtime_error("--shard must be none, optimizer, gradients or full, got " + shard);
  const std::string units = args.str("shard-units");
  if (units != "block" && units != "sublayer")
    throw std::runtime_error("--shard-units must be block or sublayer, got " + units);
  if (units != "block" && parallel.shard == ShardStrategy::None)
    throw std::runtime_error("--shard-units chooses the sharded schemes' units; it needs --shard");
  // Full sharding gathers each unit around its use; with ZeRO-1/2 the gathers after the step
  // overlap the forward, each waited for as its unit's forward starts.
  if (parallel.shard != ShardStrategy::None)
    parallel.shard_units =
        model->shard_units(units == "block" ? examples::GPT::ShardUnit::Block : examples::GPT::ShardUnit::Sublayer);
  if (args.is_set("sharded-checkpoints")) parallel.state_dict_type = StateDictType::Sharded;
  const Precision param_dtype = parse_precision(args.str("param-dtype"));
  if (param_dtype != Precision::Float32)
    parallel.param_dtype = param_dtype == Precision::BFloat16 ? DType::BFloat16 : DType::Float16;
  LoopState state = train_in_group(group, lm, optimizer, train, &validation, options, parallel);
  if (!group.is_driver()) return 0;
  examples::report(args, state, *model, "gpt");
  if (args.integer("sample-tokens") > 0) print_sample(*model, args, device);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::run_main("gpt", run, argc, argv); }
