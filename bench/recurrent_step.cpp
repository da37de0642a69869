// wick_bench_recurrent_step: the time of one forward + backward of a one-layer RNN, LSTM or
// GRU on the CPU (loss: the mean square of the output), one configuration per process.
// --composed 1 runs the same step with its element-wise part composed of autograd ops (what
// the layers did before the fused recurrent_cell), on the layer's own weights.
// bench/recurrent_compare.py runs both interleaved with torch.nn's layer.
//
//   wick_bench_recurrent_step [--cell lstm|gru|rnn] [--seq 64] [--batch 32] [--input 64]
//                             [--hidden 256] [--steps 10] [--warmup 2] [--composed 0]
// prints one JSON line: the sizes and "seconds" (the median step).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <wick/wick.h>

namespace {

using namespace wick;

// The step as autograd ops (tests/autograd/recurrent_cell_test.cpp's reference), all steps of
// one layer and direction.
Variable composed_layer(const RNNBase& m, const Variable& x) {
  const RNNBase::Weights& w = m.weights(0, 0);
  const int64_t n = x.size(1), hidden = m.hidden_size();
  const std::vector<Variable> gi = unbind(linear(x, w.weight_ih, w.bias_ih), 0);
  Variable h(zeros({n, hidden})), c(zeros({n, hidden}));
  std::vector<Variable> out;
  for (const Variable& g_in : gi) {
    const Variable gh = linear(h, w.weight_hh, w.bias_hh);
    if (m.kind() == RNNBase::Kind::LSTM) {
      std::vector<Variable> g = chunk(add(g_in, gh), 4, 1);
      c = add(mul(sigmoid(g[1]), c), mul(sigmoid(g[0]), tanh(g[2])));
      h = mul(sigmoid(g[3]), tanh(c));
    } else if (m.kind() == RNNBase::Kind::GRU) {
      std::vector<Variable> a = chunk(g_in, 3, 1), b = chunk(gh, 3, 1);
      const Variable r = sigmoid(add(a[0], b[0])), z = sigmoid(add(a[1], b[1]));
      const Variable nn = tanh(add(a[2], mul(r, b[2])));
      h = add(nn, mul(z, sub(h, nn)));
    } else {
      h = tanh(add(g_in, gh));
    }
    out.push_back(h);
  }
  return stack(out, 0);
}

}  // namespace

int main(int argc, char** argv) {
  std::string cell = "lstm";
  int64_t seq = 64, batch = 32, input = 64, hidden = 256, steps = 10, warmup = 2, composed = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--cell") cell = value;
    else if (flag == "--seq") seq = std::stoll(value);
    else if (flag == "--batch") batch = std::stoll(value);
    else if (flag == "--input") input = std::stoll(value);
    else if (flag == "--hidden") hidden = std::stoll(value);
    else if (flag == "--steps") steps = std::stoll(value);
    else if (flag == "--warmup") warmup = std::stoll(value);
    else if (flag == "--composed") composed = std::stoll(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  Generator g(1);
  std::shared_ptr<RNNBase> m;
  if (cell == "lstm") m = std::make_shared<LSTM>(input, hidden, RNNOptions{}, Options{}, &g);
  else if (cell == "gru") m = std::make_shared<GRU>(input, hidden, RNNOptions{}, Options{}, &g);
  else if (cell == "rnn") m = std::make_shared<RNN>(input, hidden, RNNOptions{}, Options{}, &g);
  else {
    std::fprintf(stderr, "--cell must be lstm, gru or rnn, not %s\n", cell.c_str());
    return 2;
  }
  const Variable x(randn({seq, batch, input}, Options{}, &g));
  std::vector<double> times;
  for (int64_t s = 0; s < warmup + steps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    m->zero_grad();
    const Variable out = composed ? composed_layer(*m, x) : m->forward(x).output;
    mean(mul(out, out)).backward();
    if (s >= warmup) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  const double median = times.empty() ? 0.0 : times[times.size() / 2];
  std::printf("{\"cell\": \"%s\", \"seq\": %lld, \"batch\": %lld, \"input\": %lld, \"hidden\": %lld, \"composed\": %lld, "
              "\"seconds\": %.6f}\n",
              cell.c_str(), static_cast<long long>(seq), static_cast<long long>(batch), static_cast<long long>(input),
              static_cast<long long>(hidden), static_cast<long long>(composed), median);
  return 0;
}
