// wick_bench_gpt_step: the time of one training step (forward, backward, AdamW) of
// examples/gpt's model on the CPU, one configuration per process. bench/gpt_compare.py runs
// it interleaved with the same torch.nn model (tests/support/torch_gpt.py).
//
//   wick_bench_gpt_step [--batch 32] [--block 128] [--layers 4] [--heads 4] [--embd 128]
//                       [--steps 10] [--warmup 2] [--vocab 256]
// prints one JSON line: the sizes, "seconds" (the median step) and "tokens_per_second".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <wick/wick.h>

#include "examples/gpt/model.h"

int main(int argc, char** argv) {
  int64_t batch = 32, block = 128, layers = 4, heads = 4, embd = 128, steps = 10, warmup = 2, vocab = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int64_t value = std::stoll(argv[i + 1]);
    if (flag == "--batch") batch = value;
    else if (flag == "--block") block = value;
    else if (flag == "--layers") layers = value;
    else if (flag == "--heads") heads = value;
    else if (flag == "--embd") embd = value;
    else if (flag == "--steps") steps = value;
    else if (flag == "--warmup") warmup = value;
    else if (flag == "--vocab") vocab = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  using namespace wick;
  Generator g(1);
  examples::GPT model({.vocab_size = vocab, .block_size = block, .n_layer = layers, .n_head = heads, .n_embd = embd},
                      Options{}, &g);
  AdamW opt(model.named_parameters(), AdamOptions{.lr = 1e-3, .weight_decay = 0.01});
  const Tensor idx = randint(0, vocab, {batch, block}, DType::Int64, &g);
  const Tensor targets = randint(0, vocab, {batch, block}, DType::Int64, &g);
  std::vector<double> times;
  for (int64_t s = 0; s < warmup + steps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    opt.zero_grad();
    model.loss(idx, targets).backward();
    opt.step();
    if (s >= warmup) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  const double median = times.empty() ? 0.0 : times[times.size() / 2];
  std::printf("{\"batch\": %lld, \"block\": %lld, \"layers\": %lld, \"heads\": %lld, \"embd\": %lld, \"seconds\": %.6f, "
              "\"tokens_per_second\": %.1f}\n",
              static_cast<long long>(batch), static_cast<long long>(block), static_cast<long long>(layers),
              static_cast<long long>(heads), static_cast<long long>(embd), median,
              median > 0 ? static_cast<double>(batch * block) / median : 0.0);
  return 0;
}
