// RNN, LSTM, GRU and their cells against torch.nn (recurrent_reference.safetensors, written
// by recurrent_reference.py): torch's state dicts load by name, and the outputs, final states
// and every gradient equal torch's in float64 (1e-10) and float32 (1e-5); ten AdamW steps of
// an LSTM classifier give torch's losses. Then finite differences, the CUDA device against
// the CPU, dropout between layers, empty batches and the errors.
#include "tests/support/torch_reference.h"

#include <map>

#include <wick/autograd/gradcheck.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/ops.h>
#include <wick/nn/linear.h>
#include <wick/nn/recurrent.h>
#include <wick/optim/adam.h>
#include <wick/tensor/factories.h>

namespace wick::test {
namespace {

const TorchReference& recurrent_reference() { return torch_reference("nn/recurrent_reference.safetensors"); }

using Config = std::map<std::string, std::string>;

int64_t number(const Config& c, const std::string& key, int64_t otherwise = 0) {
  auto it = c.find(key);
  return it == c.end() ? otherwise : std::stoll(it->second);
}

// The results a layer or cell gives for a case (cells: output = h', c_n = c').
struct Results {
  Variable output, h_n, c_n;
};

// One recurrent layer or cell built from a case's configuration, in `o`.
struct Subject {
  std::shared_ptr<Module> module;
  std::function<Results(const Variable& x, const Variable& h0, const Variable& c0, const Tensor& lengths)> run;
};

Subject build(const Config& c, const Options& o) {
  const std::string kind = c.at("kind");
  const int64_t in = number(c, "input"), hidden = number(c, "hidden");
  const bool bias = number(c, "bias", 1) != 0;
  const RNNActivation act = number(c, "relu") ? RNNActivation::ReLU : RNNActivation::Tanh;
  if (kind == "rnn_cell") {
    auto m = std::make_shared<RNNCell>(in, hidden, bias, act, o);
    return {m, [m](const Variable& x, const Variable& h, const Variable&, const Tensor&) {
              return Results{m->forward(x, h), Variable(), Variable()};
            }};
  }
  if (kind == "lstm_cell") {
    auto m = std::make_shared<LSTMCell>(in, hidden, bias, o);
    return {m, [m](const Variable& x, const Variable& h, const Variable& cc, const Tensor&) {
              auto [h1, c1] = m->forward(x, h, cc);
              return Results{h1, Variable(), c1};
            }};
  }
  if (kind == "gru_cell") {
    auto m = std::make_shared<GRUCell>(in, hidden, bias, o);
    return {m, [m](const Variable& x, const Variable& h, const Variable&, const Tensor&) {
              return Results{m->forward(x, h), Variable(), Variable()};
            }};
  }
  RNNOptions opt;
  opt.num_layers = number(c, "layers", 1);
  opt.bias = bias;
  opt.batch_first = number(c, "batch_first") != 0;
  opt.bidirectional = number(c, "bidirectional") != 0;
  opt.proj_size = number(c, "proj");
  opt.nonlinearity = act;
  std::shared_ptr<RNNBase> m;
  if (kind == "rnn") m = std::make_shared<RNN>(in, hidden, opt, o);
  if (kind == "lstm") m = std::make_shared<LSTM>(in, hidden, opt, o);
  if (kind == "gru") m = std::make_shared<GRU>(in, hidden, opt, o);
  if (!m) throw Error("recurrent_test: unknown kind " + kind);
  return {m, [m](const Variable& x, const Variable& h, const Variable& cc, const Tensor& lengths) {
            RNNOutput r = m->forward(x, h, cc, lengths);
            return Results{r.output, r.h_n, r.c_n};
          }};
}

// Runs case `name` in `dtype` from torch's weights and inputs, and compares every result and
// gradient with torch's float64 ones.
void expect_case_matches_torch(const std::string& name, DType dtype, double rtol, double atol) {
  SCOPED_TRACE(name + " in " + dtype_name(dtype));
  const TensorMap& ref = recurrent_reference().tensors;
  auto has = [&](const std::string& key) { return ref.count(name + "." + key) != 0; };
  auto get = [&](const std::string& key) { return ref.at(name + "." + key); };
  Subject s = build(case_options(recurrent_reference().cases.at(name)), Options(DType::Float64));
  s.module->load_state_dict(with_prefix(ref, name + ".param."));  // strict: torch's names are exactly wick's
  s.module->to(dtype);
  auto input = [&](const std::string& key) {
    return has(key) ? Variable(get(key).to(dtype), /*requires_grad=*/true) : Variable();
  };
  Variable x = input("input"), h0 = input("h0"), c0 = input("c0");
  Results r = s.run(x, h0, c0, has("lengths") ? get("lengths") : Tensor());
  Variable loss = sum(mul(r.output, Variable(get("w_output").to(dtype))));
  EXPECT_TRUE(tensors_close(r.output.data(), get("output"), rtol, atol)) << "output";
  if (has("h_n")) {
    EXPECT_TRUE(tensors_close(r.h_n.data(), get("h_n"), rtol, atol)) << "h_n";
    loss = add(loss, sum(mul(r.h_n, Variable(get("w_h").to(dtype)))));
  }
  EXPECT_EQ(has("c_n"), r.c_n.defined());
  if (has("c_n")) {
    EXPECT_TRUE(tensors_close(r.c_n.data(), get("c_n"), rtol, atol)) << "c_n";
    loss = add(loss, sum(mul(r.c_n, Variable(get("w_c").to(dtype)))));
  }
  loss.backward();
  for (const auto& [pname, p] : s.module->named_parameters())
    EXPECT_TRUE(tensors_close(p.grad().data(), get("grad." + pname), rtol, atol)) << "gradient of " << pname;
  for (const auto& [key, v] : {std::pair{"input", x}, {"h0", h0}, {"c0", c0}})
    if (v.defined()) EXPECT_TRUE(tensors_close(v.grad().data(), get(std::string("grad.") + key), rtol, atol)) << "gradient of " << key;
}

TEST(Recurrent, EveryCaseMatchesTorchInFloat64AndFloat32) {
  ASSERT_GE(recurrent_reference().cases.size(), 15u);
  for (const auto& [name, words] : recurrent_reference().cases) {
    expect_case_matches_torch(name, DType::Float64, 1e-10, 1e-12);
    expect_case_matches_torch(name, DType::Float32, 1e-5, 1e-6);
  }
}

// An LSTM classifier (torch.nn.LSTM + Linear on the last step) trained ten AdamW steps on
// one batch from torch's initial weights: the same ten losses.
TEST(Recurrent, TenAdamWStepsOfAnLstmClassifierGiveTorchsLosses) {
  const TensorMap& ref = recurrent_reference().tensors;
  auto lstm = std::make_shared<LSTM>(4, 6, RNNOptions{.num_layers = 2}, Options(DType::Float64));
  auto head = std::make_shared<Linear>(6, 3, true, Options(DType::Float64));
  lstm->load_state_dict(with_prefix(ref, "train.param.lstm."));
  head->load_state_dict(with_prefix(ref, "train.param.head."));
  NamedParameters params = lstm->named_parameters();
  for (const auto& [n, p] : head->named_parameters()) params.emplace_back("head." + n, p);
  AdamW opt(params, AdamOptions{.lr = 0.01, .weight_decay = 0.01});
  const Variable x(ref.at("train.input"));
  const std::vector<double> torch_losses = values(ref.at("train.losses"));
  for (size_t i = 0; i < torch_losses.size(); ++i) {
    opt.zero_grad();
    Variable y = lstm->forward(x).output;
    Variable loss = cross_entropy(head->forward(select(y, 0, y.size(0) - 1)), ref.at("train.target"));
    loss.backward();
    opt.step();
    EXPECT_NEAR(loss.data().item<double>(), torch_losses[i], 1e-10) << "step " << i;
  }
}

// Finite differences through every kind, with the features that take their own paths:
// bidirectional, projection, lengths, batch_first, several layers.
TEST(Recurrent, GradientsMatchFiniteDifferences) {
  const Options f64(DType::Float64);
  RNNOptions deep{.num_layers = 2, .batch_first = true, .bidirectional = true};
  RNNOptions proj{.num_layers = 2, .bidirectional = true, .proj_size = 2};
  RNNOptions relu{.nonlinearity = RNNActivation::ReLU};
  std::vector<std::shared_ptr<RNNBase>> layers = {
      std::make_shared<RNN>(2, 3, relu, f64), std::make_shared<RNN>(2, 3, deep, f64),
      std::make_shared<LSTM>(2, 3, proj, f64), std::make_shared<LSTM>(2, 3, deep, f64),
      std::make_shared<GRU>(2, 3, deep, f64)};
  const Tensor lengths = tensor<int64_t>({3, 1});
  for (const auto& m : layers) {
    SCOPED_TRACE(std::string(m->type_name()) + (m->options().batch_first ? " batch_first" : ""));
    const bool lstm = m->kind() == RNNBase::Kind::LSTM;
    const int64_t count = m->options().num_layers * m->num_directions();
    const Shape xs = m->options().batch_first ? Shape{2, 3, 2} : Shape{3, 2, 2};
    std::vector<Tensor> inputs = {random(xs, DType::Float64, 1), random({count, 2, m->output_size()}, DType::Float64, 2),
                                  random({count, 2, 3}, DType::Float64, 3)};
    for (const Tensor& len : {Tensor(), lengths}) {
      GradcheckResult g = gradcheck(
          [&](const std::vector<Variable>& v) {
            RNNOutput r = m->forward(v[0], v[1], lstm ? v[2] : Variable(), len);
            Variable all = cat({flatten(r.output), flatten(r.h_n)});
            return lstm ? cat({all, flatten(r.c_n)}) : add(all, mul(sum(v[2]), 0.0));
          },
          inputs);
      EXPECT_TRUE(g.ok) << g.message << (len.defined() ? " (with lengths)" : "");
    }
  }
}

TEST(Recurrent, CellGradientsMatchFiniteDifferences) {
  const Options f64(DType::Float64);
  RNNCell rnn(2, 3, true, RNNActivation::Tanh, f64);
  LSTMCell lstm(2, 3, true, f64);
  GRUCell gru(2, 3, false, f64);
  std::vector<Tensor> inputs = {random({2, 2}, DType::Float64, 4), random({2, 3}, DType::Float64, 5),
                                random({2, 3}, DType::Float64, 6)};
  auto check = [&](const std::function<Variable(const std::vector<Variable>&)>& f, const char* what) {
    GradcheckResult g = gradcheck(f, inputs);
    EXPECT_TRUE(g.ok) << what << ": " << g.message;
  };
  check([&](const auto& v) { return add(rnn.forward(v[0], v[1]), mul(sum(v[2]), 0.0)); }, "RNNCell");
  check([&](const auto& v) {
    auto [h, c] = lstm.forward(v[0], v[1], v[2]);
    return cat({h, c}, 1);
  }, "LSTMCell");
  check([&](const auto& v) { return add(gru.forward(v[0], v[1]), mul(sum(v[2]), 0.0)); }, "GRUCell");
}

// The same layer, weights and (non-contiguous) input on the CUDA device and the CPU.
TEST(Recurrent, CudaMatchesCpu) {
  WICK_REQUIRE_CUDA();
  RNNOptions opt{.num_layers = 2, .bidirectional = true};
  RNNOptions proj{.bidirectional = true, .proj_size = 3};
  std::vector<std::shared_ptr<RNNBase>> layers = {std::make_shared<RNN>(5, 7, opt), std::make_shared<LSTM>(5, 7, proj),
                                                  std::make_shared<GRU>(5, 7, opt)};
  const Tensor x = random({3, 6, 5}, DType::Float32, 7).transpose(0, 1);  // [L = 6, N = 3, 5], strided
  const Tensor lengths = tensor<int64_t>({6, 2, 5});
  for (const auto& m : layers) {
    SCOPED_TRACE(m->type_name());
    auto run = [&](Device d) {
      m->to(d);
      m->zero_grad();
      Variable xv(x.to(d), true);
      RNNOutput r = m->forward(xv, Variable(), Variable(), lengths);
      Variable loss = add(sum(mul(r.output, r.output)), sum(r.h_n));
      loss.backward();
      std::vector<Tensor> got = {r.output.data().to(Device::cpu()), r.h_n.data().to(Device::cpu()),
                                 xv.grad().data().to(Device::cpu())};
      for (const Variable& p : m->parameters()) got.push_back(p.grad().data().to(Device::cpu()));
      return got;
    };
    std::vector<Tensor> cpu = run(Device::cpu()), gpu = run(Device::cuda());
    m->to(Device::cpu());
    ASSERT_EQ(cpu.size(), gpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) EXPECT_TRUE(tensors_close(gpu[i], cpu[i], 1e-4, 1e-5)) << "result " << i;
  }
}

// PyTorch's dropout between layers: on each layer's output but the last, in training only.
// With p = 1 the second layer sees zeros, so in training the output no longer depends on
// the input; in evaluation it does.
TEST(Recurrent, DropoutActsBetweenLayersInTrainingOnly) {
  GRU gru(3, 4, RNNOptions{.num_layers = 2, .dropout = 1.0});
  Variable a(random({4, 2, 3}, DType::Float32, 8)), b(random({4, 2, 3}, DType::Float32, 9));
  EXPECT_TRUE(tensors_close(gru.forward(a).output.data(), gru.forward(b).output.data(), 0, 0));
  gru.eval();
  EXPECT_FALSE(tensors_close(gru.forward(a).output.data(), gru.forward(b).output.data(), 0, 0));
  // One layer: nothing to drop.
  LSTM one(3, 4, RNNOptions{.dropout = 1.0});
  Tensor train_out = one.forward(a).output.data();
  one.eval();
  EXPECT_TRUE(tensors_close(train_out, one.forward(a).output.data(), 0, 0));
}

TEST(Recurrent, EmptyBatchGivesEmptyResults) {
  LSTM lstm(3, 4, RNNOptions{.bidirectional = true});
  Variable x(zeros({5, 0, 3}), true);
  RNNOutput r = lstm.forward(x);
  EXPECT_EQ(r.output.shape(), (Shape{5, 0, 8}));
  EXPECT_EQ(r.h_n.shape(), (Shape{2, 0, 4}));
  EXPECT_EQ(r.c_n.shape(), (Shape{2, 0, 4}));
  sum(r.output).backward();
  EXPECT_EQ(x.grad().shape(), (Shape{5, 0, 3}));
  EXPECT_EQ(GRUCell(3, 4).forward(Variable(zeros({0, 3}))).shape(), (Shape{0, 4}));
}

TEST(Recurrent, ParameterNamesAndShapesAreTorchs) {
  LSTM lstm(3, 5, RNNOptions{.num_layers = 2, .bidirectional = true, .proj_size = 2});
  std::vector<std::string> names;
  for (const auto& [n, p] : lstm.named_parameters()) names.push_back(n + shape_str(p.shape()));
  EXPECT_EQ(names, (std::vector<std::string>{
                       "weight_ih_l0[20, 3]", "weight_hh_l0[20, 2]", "bias_ih_l0[20]", "bias_hh_l0[20]",
                       "weight_hr_l0[2, 5]", "weight_ih_l0_reverse[20, 3]", "weight_hh_l0_reverse[20, 2]",
                       "bias_ih_l0_reverse[20]", "bias_hh_l0_reverse[20]", "weight_hr_l0_reverse[2, 5]",
                       "weight_ih_l1[20, 4]", "weight_hh_l1[20, 2]", "bias_ih_l1[20]", "bias_hh_l1[20]",
                       "weight_hr_l1[2, 5]", "weight_ih_l1_reverse[20, 4]", "weight_hh_l1_reverse[20, 2]",
                       "bias_ih_l1_reverse[20]", "bias_hh_l1_reverse[20]", "weight_hr_l1_reverse[2, 5]"}));
  // PyTorch's initialisation: every parameter in U(-1/sqrt(hidden), 1/sqrt(hidden)).
  for (const Variable& p : lstm.parameters())
    for (double v : values(p.data())) EXPECT_LE(std::abs(v), 1 / std::sqrt(5.0));
  EXPECT_EQ(lstm.weights(1, 1).weight_hr.data().storage(), lstm.parameter("weight_hr_l1_reverse").data().storage());
}

TEST(Recurrent, BadInputIsRefusedNamingTheLayer) {
  LSTM lstm(3, 4, RNNOptions{.num_layers = 2});
  Variable x(zeros({5, 2, 3}));
  expect_error([&] { lstm.forward(Variable(zeros({5, 2, 4}))); }, {"LSTM", "input must be [L, N, 3]", "[5, 2, 4]"});
  expect_error([&] { lstm.forward(Variable(zeros({0, 2, 3}))); }, {"LSTM", "sequence length must be positive"});
  expect_error([&] { lstm.forward(x, Variable(zeros({2, 2, 4}))); }, {"LSTM", "both h0 and c0"});
  expect_error([&] { lstm.forward(x, Variable(zeros({1, 2, 4})), Variable(zeros({2, 2, 4}))); },
               {"LSTM", "h0 must be [2, 2, 4]", "[1, 2, 4]"});
  expect_error([&] { lstm.forward(x, Variable(), Variable(), tensor<int64_t>({5, 6})); },
               {"LSTM", "lengths[1] = 6", "[1, 5]"});
  expect_error([&] { lstm.forward(x, Variable(), Variable(), tensor<int64_t>({0, 1})); },
               {"LSTM", "lengths[0] = 0"});
  expect_error([&] { lstm.forward(x, Variable(), Variable(), zeros({2})); }, {"LSTM", "lengths must be an integer"});
  GRU gru(3, 4);
  expect_error([&] { gru.forward(x, Variable(zeros({1, 2, 4})), Variable(zeros({1, 2, 4}))); }, {"GRU", "c0"});
  expect_error([&] { GRU(3, 4, RNNOptions{.proj_size = 2}); }, {"GRU", "proj_size is only for LSTM"});
  expect_error([&] { LSTM(3, 4, RNNOptions{.proj_size = 4}); }, {"LSTM", "proj_size must be in [0, hidden_size = 4)"});
  expect_error([&] { RNN(3, 4, RNNOptions{.num_layers = 0}); }, {"RNN", "num_layers"});
  expect_error([&] { RNN(3, 4, RNNOptions{.dropout = 1.5}); }, {"RNN", "dropout"});
  expect_error([&] { LSTM(3, 4, RNNOptions{.nonlinearity = RNNActivation::ReLU}); }, {"LSTM", "nonlinearity"});
  expect_error([&] { RNN(0, 4); }, {"RNN", "input_size and hidden_size must be positive"});
  expect_error([&] { LSTMCell(3, 4).forward(Variable(zeros({2, 3})), Variable(zeros({3, 4}))); },
               {"LSTMCell", "h must be [2, 4]"});
  expect_error([&] { GRUCell(3, 4).forward(Variable(zeros({2, 2}))); }, {"GRUCell", "input must be [N, 3]"});
}

}  // namespace
}  // namespace wick::test
