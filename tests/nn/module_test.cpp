// Module tree: names, modes, placement, state dicts and their errors; containers.
#include "tests/support/reference.h"

#include <wick/nn/containers.h>
#include <wick/nn/linear.h>
#include <wick/nn/module.h>

namespace wick::test {
namespace {

// A leaf with one parameter and two buffers (a float one and an integer counter).
class Stats : public UnaryModule {
 public:
  explicit Stats(int64_t n) {
    scale = register_parameter("scale", ones({n}));
    register_buffer("running", zeros({n}));
    register_buffer("count", zeros({}, DType::Int64));
  }
  const char* type_name() const override { return "Stats"; }
  Variable forward(const Variable& x) override { return x * scale; }
  Variable scale;
};

class Block : public UnaryModule {
 public:
  explicit Block(int64_t in) {
    fc = register_module("fc", std::make_shared<Linear>(in, 2));
    stats = register_module("stats", std::make_shared<Stats>(2));
  }
  const char* type_name() const override { return "Block"; }
  Variable forward(const Variable& x) override { return stats->forward(fc->forward(x)); }
  std::shared_ptr<Linear> fc;
  std::shared_ptr<Stats> stats;
};

class Net : public UnaryModule {
 public:
  Net() {
    gain = register_parameter("gain", full({1}, 2.0));
    block1 = register_module("block1", std::make_shared<Block>(3));
    block2 = register_module("block2", std::make_shared<Block>(2));
  }
  const char* type_name() const override { return "Net"; }
  Variable forward(const Variable& x) override { return block2->forward(block1->forward(x)) * gain; }
  Variable gain;
  std::shared_ptr<Block> block1, block2;
};

std::vector<std::string> names_of(const auto& named) {
  std::vector<std::string> out;
  for (const auto& [n, v] : named) out.push_back(n);
  return out;
}

TEST(Module, NamedParametersAreDottedInRegistrationOrder) {
  Net net;
  EXPECT_EQ(names_of(net.named_parameters()),
            (std::vector<std::string>{"gain", "block1.fc.weight", "block1.fc.bias", "block1.stats.scale",
                                      "block2.fc.weight", "block2.fc.bias", "block2.stats.scale"}));
  EXPECT_EQ(names_of(net.named_parameters(/*recurse=*/false)), (std::vector<std::string>{"gain"}));
  EXPECT_EQ(names_of(net.named_buffers()), (std::vector<std::string>{"block1.stats.running", "block1.stats.count",
                                                                     "block2.stats.running", "block2.stats.count"}));
  EXPECT_EQ(names_of(net.named_children()), (std::vector<std::string>{"block1", "block2"}));
  EXPECT_EQ(net.children()[1].get(), net.block2.get());
  // parameters() hands out the very Variables the layers hold.
  std::vector<Variable> ps = net.parameters();
  ASSERT_EQ(ps.size(), 7u);
  EXPECT_TRUE(ps[1].is_same(net.block1->fc->weight));
  EXPECT_TRUE(ps[0].requires_grad());
  EXPECT_EQ(net.buffers().size(), 4u);
  EXPECT_TRUE(net.parameter("gain").is_same(net.gain));
  EXPECT_EQ(net.block1->stats->buffer("count").dtype(), DType::Int64);
}

TEST(Module, SharedModuleParametersAreListedOnce) {
  auto shared = std::make_shared<Linear>(2, 2);
  ModuleList list;
  list.push_back(shared);
  list.push_back(shared);
  EXPECT_EQ(names_of(list.named_parameters()), (std::vector<std::string>{"0.weight", "0.bias"}));
  // The state dict names every path, as PyTorch's does.
  EXPECT_EQ(list.state_dict().keys(), (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"}));
}

TEST(Module, RegistrationErrors) {
  Stats s(2);
  expect_error([&] { s.register_parameter("scale", ones({1})); }, {"Stats", "'scale'", "already registered"});
  expect_error([&] { s.register_buffer("count", ones({1})); }, {"'count'", "already registered"});
  expect_error([&] { s.register_module("running", std::make_shared<Stats>(1)); }, {"'running'", "already"});
  expect_error([&] { s.register_parameter("a.b", ones({1})); }, {"'a.b'", "must not contain '.'"});
  expect_error([&] { s.register_parameter("", ones({1})); }, {"must not be empty"});
  expect_error([&] { s.register_parameter("idx", zeros({2}, DType::Int64)); }, {"floating"});
  expect_error([&] { s.register_module("child", std::shared_ptr<Stats>()); }, {"null module"});
  expect_error([&] { s.parameter("nope"); }, {"Stats", "no parameter 'nope'"});
  expect_error([&] { s.buffer("nope"); }, {"Stats", "no buffer 'nope'"});
  // A module cannot contain itself.
  auto outer = std::make_shared<Sequential>();
  auto inner = std::make_shared<Sequential>();
  outer->push_back(inner);
  expect_error([&] { inner->push_back(outer); }, {"its own descendant"});
  // An integer tensor may be a parameter that does not require grad.
  EXPECT_FALSE(s.register_parameter("table", zeros({2}, DType::Int64), false).requires_grad());
}

TEST(Module, TrainEvalPropagates) {
  Net net;
  EXPECT_TRUE(net.is_training());
  net.eval();
  EXPECT_FALSE(net.is_training());
  EXPECT_FALSE(net.block1->is_training());
  EXPECT_FALSE(net.block2->stats->is_training());
  net.block1->train();
  EXPECT_TRUE(net.block1->fc->is_training());
  EXPECT_FALSE(net.block2->fc->is_training());
  net.train();
  EXPECT_TRUE(net.block2->stats->is_training());
}

TEST(Module, ToDTypeKeepsParameterIdentity) {
  Net net;
  std::vector<Variable> before = net.parameters();
  std::vector<double> w = values(net.block1->fc->weight.data());
  // A gradient moves along with its parameter.
  net.forward(Variable(ones({4, 3}))).backward(ones({4, 2}));
  ASSERT_TRUE(net.gain.grad().defined());
  net.to(DType::Float64);
  std::vector<Variable> after = net.parameters();
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_TRUE(before[i].is_same(after[i]));
    EXPECT_EQ(after[i].dtype(), DType::Float64);
    EXPECT_TRUE(after[i].requires_grad());
  }
  EXPECT_EQ(net.gain.grad().dtype(), DType::Float64);
  EXPECT_TRUE(all_close(values(net.block1->fc->weight.data()), w, 0, 0));
  // Float buffers follow, integer ones keep their dtype.
  EXPECT_EQ(net.block1->stats->buffer("running").dtype(), DType::Float64);
  EXPECT_EQ(net.block1->stats->buffer("count").dtype(), DType::Int64);
  // The module still runs, now in float64.
  EXPECT_EQ(net.forward(Variable(ones({1, 3}, DType::Float64))).dtype(), DType::Float64);
  net.to(Device::cpu());
  EXPECT_TRUE(before[0].is_same(net.parameters()[0]));
  expect_error([&] { net.to(DType::Int32); }, {"Net", "floating", "int32"});
}

TEST(Module, ZeroGrad) {
  Linear lin(3, 2);
  lin.forward(Variable(ones({1, 3}))).backward(ones({1, 2}));
  ASSERT_TRUE(lin.weight.grad().defined());
  lin.zero_grad(/*set_to_none=*/false);
  EXPECT_TRUE(matches(lin.weight.grad().data(), {2, 3}, DType::Float32, std::vector<double>(6, 0.0)));
  lin.zero_grad();
  EXPECT_FALSE(lin.weight.grad().defined());
  EXPECT_FALSE(lin.bias.grad().defined());
}

TEST(Module, StateDictRoundTrip) {
  Net a, b;
  a.block1->stats->buffer("running").fill_(3.5);
  a.block2->stats->buffer("count").fill_(7);
  StateDict sd = a.state_dict();
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"gain", "block1.fc.weight", "block1.fc.bias", "block1.stats.scale",
                                                 "block1.stats.running", "block1.stats.count", "block2.fc.weight",
                                                 "block2.fc.bias", "block2.stats.scale", "block2.stats.running",
                                                 "block2.stats.count"}));
  // The dict aliases the module's tensors.
  EXPECT_TRUE(sd.at("block1.fc.weight").shares_storage(a.block1->fc->weight.data()));

  Variable b_weight = b.block1->fc->weight;
  Module::LoadResult r = b.load_state_dict(sd);
  EXPECT_TRUE(r.missing_keys.empty());
  EXPECT_TRUE(r.unexpected_keys.empty());
  // Loaded in place: the same Variables, new values, separate memory.
  EXPECT_TRUE(b.block1->fc->weight.is_same(b_weight));
  EXPECT_FALSE(b.block1->fc->weight.data().shares_storage(a.block1->fc->weight.data()));
  for (const auto& [name, t] : b.state_dict()) EXPECT_TRUE(all_close(values(t), values(sd.at(name)), 0, 0)) << name;
  Tensor x = random({5, 3}, DType::Float32, 1);
  EXPECT_TRUE(all_close(values(b.forward(Variable(x)).data()), values(a.forward(Variable(x)).data()), 0, 0));
}

TEST(Module, LoadStateDictErrors) {
  Net net;
  StateDict good = net.state_dict();
  auto without = [&](const std::string& key) {
    StateDict d;
    for (const auto& [n, t] : good)
      if (n != key) d.insert(n, t.clone());
    return d;
  };
  auto replaced = [&](const std::string& key, Tensor v) {
    StateDict d;
    for (const auto& [n, t] : good) d.insert(n, n == key ? v : t.clone());
    return d;
  };
  Tensor w_before = net.block2->fc->weight.data().clone();

  StateDict missing = without("block1.stats.running");
  expect_error([&] { net.load_state_dict(missing); }, {"Net.load_state_dict", "missing keys: 'block1.stats.running'"});

  StateDict extra = without("");
  extra.insert("block3.weight", zeros({1}));
  extra.insert("gain2", zeros({1}));
  expect_error([&] { net.load_state_dict(extra); }, {"unexpected keys: 'block3.weight', 'gain2'"});

  StateDict both = without("gain");
  both.insert("gian", zeros({1}));
  expect_error([&] { net.load_state_dict(both); }, {"missing keys: 'gain'", "unexpected keys: 'gian'"});

  expect_error(
      [&] {
        net.load_state_dict(replaced("block1.fc.weight", zeros({3, 2})));
      },
      {"shape mismatch", "'block1.fc.weight'", "[2, 3]", "[3, 2]"});
  // Another dtype is cast, as PyTorch's load_state_dict does (issue 13, item 13).
  net.load_state_dict(replaced("block2.fc.bias", full({2}, 0.25, DType::Float64)));
  EXPECT_EQ(net.block2->fc->bias.data().dtype(), DType::Float32);
  EXPECT_EQ(net.block2->fc->bias.data().to_vector<float>(), (std::vector<float>{0.25f, 0.25f}));
  // Nothing was written by the failed loads, even entries checked before the bad one.
  StateDict late_error = replaced("block2.stats.count", zeros({2}, DType::Int64));
  late_error.at("block2.fc.weight").fill_(9.0);
  expect_error([&] { net.load_state_dict(late_error); }, {"shape mismatch", "'block2.stats.count'", "[]", "[2]"});
  EXPECT_TRUE(all_close(values(net.block2->fc->weight.data()), values(w_before), 0, 0));

  // Non-strict loads what matches and reports the rest.
  StateDict partial = without("gain");
  partial.at("block1.fc.bias").fill_(4.0);
  partial.insert("other", zeros({1}));
  Module::LoadResult r = net.load_state_dict(partial, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"gain"}));
  EXPECT_EQ(r.unexpected_keys, (std::vector<std::string>{"other"}));
  EXPECT_TRUE(all_close(values(net.block1->fc->bias.data()), {4.0, 4.0}, 0, 0));
  // Shapes are checked even when not strict.
  expect_error([&] { net.load_state_dict(replaced("gain", zeros({2})), false); }, {"shape mismatch", "'gain'"});
}

TEST(StateDict, KeepsInsertionOrderAndRejectsDuplicates) {
  StateDict d{{"b", zeros({1})}, {"a", ones({2})}};
  d.insert("c", zeros({3}));
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_EQ(d.at("a").shape(), (Shape{2}));
  expect_error([&] { d.insert("a", zeros({1})); }, {"'a'", "already present"});
  expect_error([&] { d.at("z"); }, {"no key 'z'"});
  EXPECT_TRUE(d.erase("b"));
  EXPECT_FALSE(d.erase("b"));
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(d.at("c").shape(), (Shape{3}));
  EXPECT_EQ(d.size(), 2u);
  // Through a sorted map and back (the safetensors functions' type).
  std::map<std::string, Tensor> m = d.to_map();
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(StateDict(m).keys(), (std::vector<std::string>{"a", "c"}));
  EXPECT_TRUE(StateDict(m).at("c").shares_storage(d.at("c")));
}

TEST(Sequential, ChainsIndexesAndNamesByPosition) {
  auto l1 = std::make_shared<Linear>(4, 3);
  auto l2 = std::make_shared<Linear>(3, 2, /*bias=*/false);
  Sequential seq{l1, std::make_shared<Stats>(3)};
  seq.push_back(l2);
  EXPECT_EQ(seq.size(), 3u);
  EXPECT_EQ(names_of(seq.named_parameters()), (std::vector<std::string>{"0.weight", "0.bias", "1.scale", "2.weight"}));
  EXPECT_EQ(seq[0].get(), l1.get());
  EXPECT_EQ(seq[-1].get(), l2.get());
  EXPECT_EQ(seq.at<Linear>(2).get(), l2.get());
  expect_error([&] { seq.at<Linear>(1); }, {"Sequential::at", "Stats"});
  expect_error([&] { seq[3]; }, {"Sequential", "index 3", "3 modules"});
  expect_error([&] { seq[-4]; }, {"index -4"});

  Tensor x = random({5, 4}, DType::Float32, 2);
  Variable expected = l2->forward(mul(l1->forward(Variable(x)), seq.at<Stats>(1)->scale));
  Variable y = seq(Variable(x));
  EXPECT_EQ(y.shape(), (Shape{5, 2}));
  EXPECT_TRUE(all_close(values(y.data()), values(expected.data()), 0, 0));
  // An empty Sequential is the identity.
  Sequential empty_seq;
  EXPECT_TRUE(all_close(values(empty_seq(Variable(x)).data()), values(x), 0, 0));
  int n = 0;
  for (const auto& m : seq) n += m != nullptr;
  EXPECT_EQ(n, 3);
}

TEST(ModuleList, HoldsAnyModule) {
  ModuleList list{std::make_shared<Linear>(2, 2), std::make_shared<Stats>(3)};
  list.push_back(std::make_shared<Sequential>());
  EXPECT_EQ(list.size(), 3u);
  EXPECT_EQ(std::string(list[1]->type_name()), "Stats");
  EXPECT_EQ(list.at<Stats>(1)->scale.shape(), (Shape{3}));
  expect_error([&] { list[5]; }, {"ModuleList", "index 5"});
  EXPECT_EQ(names_of(list.named_buffers()), (std::vector<std::string>{"1.running", "1.count"}));
}

// call() runs the pre-hooks, the forward and the hooks with its outputs, in that order;
// operator() of a UnaryModule goes through call(); a removed pair runs no more; a direct
// forward runs none.
TEST(Module, ForwardHooksRunAroundCall) {
  Linear fc(2, 3);
  std::vector<std::string> events;
  const Module::ForwardHookId first = fc.register_forward_hooks(
      [&](Module& m) { events.push_back(std::string("pre ") + m.type_name()); },
      [&](Module&, const std::vector<Variable>& outputs) {
        events.push_back("post " + std::to_string(outputs.size()) + " " + shape_str(outputs[0].shape()));
      });
  fc.register_forward_hooks([&](Module&) { events.push_back("pre2"); }, nullptr);
  const Variable x(ones({4, 2}));
  fc.call([&] {
    events.push_back("forward");
    return fc.forward(x);
  });
  EXPECT_EQ(events, (std::vector<std::string>{"pre Linear", "pre2", "forward", "post 1 [4, 3]"}));
  events.clear();
  const std::vector<Variable> two = fc.call([&] { return std::vector<Variable>{fc.forward(x), x}; });
  EXPECT_EQ(two.size(), 2u);
  EXPECT_EQ(events.back(), "post 2 [4, 3]");
  events.clear();
  fc.remove_forward_hooks(first);
  fc(x);
  EXPECT_EQ(events, (std::vector<std::string>{"pre2"}));
  events.clear();
  fc.forward(x);
  EXPECT_TRUE(events.empty());
}

}  // namespace
}  // namespace wick::test
