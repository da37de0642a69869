// Optimizer::set_buffer_placement: every optimizer's state buffers made where the placement
// says (slices of one flat tensor per buffer, as ShardedSync keeps them) step exactly as
// fresh ones, and load_state_dict writes into them only once the whole map is checked.
#include <map>
#include <memory>
#include <string>

#include <wick/optim/adadelta.h>
#include <wick/optim/adagrad.h>
#include <wick/optim/adam.h>
#include <wick/optim/adam_variants.h>
#include <wick/optim/lamb.h>
#include <wick/optim/rmsprop.h>
#include <wick/optim/sgd.h>
#include <wick/tensor/factories.h>

#include "tests/optim/fixture.h"

namespace wick::test {
namespace {

// Two parameters, "a" (6 elements) and "b" (4), whose buffers the placement puts at
// elements 0 and 6 of one 10-element tensor per buffer name.
struct Flat {
  std::map<std::string, Tensor> buffers;
  BufferPlacement placement() {
    return [this](const std::string& param, const std::string& buffer, const Options& options) {
      Tensor& flat = buffers[buffer];
      if (!flat.defined()) flat = full({10}, 7.0, options);  // garbage the optimizer must overwrite
      return param == "a" ? flat.narrow(0, 0, 6).view(kShape) : flat.narrow(0, 6, 4);
    };
  }
};

NamedParameters two_parameters(DType dtype) {
  return {{"a", Variable(tensor<double>(kP0, kShape).to(dtype), true)},
          {"b", Variable(tensor<double>({0.25, -0.5, 1.0, 3.0}, {4}).to(dtype), true)}};
}

void step_three_times(Optimizer& opt, NamedParameters params) {
  Variable& a = params[0].second;
  Variable& b = params[1].second;
  for (size_t t = 0; t < kGrads.size(); ++t) {
    a.set_grad(Variable(tensor<double>(kGrads[t], kShape).to(a.dtype())));
    const Vec gb = {kGrads[t][0], -kGrads[t][1], kGrads[t][2] * 2, kGrads[t][3]};
    b.set_grad(Variable(tensor<double>(gb, {4}).to(b.dtype())));
    opt.step();
  }
}

bool equal(const Tensor& x, const Tensor& y) { return all(eq(x, y)).item<bool>(); }

template <class Opt, class Hyper>
void expect_placed_state_steps_as_fresh(const Hyper& o, DType dtype = DType::Float64,
                                        MasterWeights master = MasterWeights::Off) {
  SCOPED_TRACE(std::string(Opt({{"x", param()}}, o).name()) + " " + dtype_name(dtype));
  NamedParameters fresh_params = two_parameters(dtype), placed_params = two_parameters(dtype);
  Opt fresh(fresh_params, o), placed(placed_params, o);
  fresh.set_master_weights(master);
  placed.set_master_weights(master);
  Flat flat;
  placed.set_buffer_placement(flat.placement());
  step_three_times(fresh, fresh_params);
  step_three_times(placed, placed_params);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_TRUE(equal(fresh_params[i].second.data(), placed_params[i].second.data())) << fresh_params[i].first;
  // Every buffer but the 0-d step counts lives in the flat tensors, and holds fresh's values.
  ASSERT_FALSE(flat.buffers.empty());
  for (const auto& [key, t] : fresh.state_dict()) {
    if (key.rfind("state.", 0) != 0) continue;
    const size_t dot = key.rfind('.');
    const std::string pname = key.substr(6, dot - 6), bname = key.substr(dot + 1);
    const Tensor live = placed.state_buffer(pname, bname);
    ASSERT_TRUE(live.defined()) << key;
    EXPECT_TRUE(equal(live, t)) << key;
    if (t.dim() > 0) EXPECT_TRUE(flat.buffers.contains(bname) && live.shares_storage(flat.buffers[bname])) << key;
  }
  // A checkpoint loads into the placed buffers; a refused one leaves them as they were.
  TensorMap saved = fresh.state_dict();
  const std::string moment = flat.buffers.begin()->first;
  flat.buffers[moment].fill_(0.0);
  placed.load_state_dict(saved);
  EXPECT_TRUE(equal(placed.state_buffer("a", moment), saved.at("state.a." + moment)));
  EXPECT_TRUE(placed.state_buffer("a", moment).shares_storage(flat.buffers[moment]));
  const Tensor before = flat.buffers[moment].clone();
  TensorMap bad = saved;
  bad["state.a." + moment] = zeros({6}, Options(saved.at("state.a." + moment).dtype()));
  bad["state.b." + moment] = zeros({4}, Options(saved.at("state.b." + moment).dtype()));
  expect_error([&] { placed.load_state_dict(bad); }, {"'state.a." + moment + "' has shape"});
  EXPECT_TRUE(equal(flat.buffers[moment], before)) << "a refused load wrote the placed buffers";
}

TEST(BufferPlacement, EveryOptimizersStatePlacedStepsAsFresh) {
  // SGD's first step copies the gradient into a missing buffer: the placement must not make
  // the buffer look present; Adagrad's starts at initial_accumulator_value.
  expect_placed_state_steps_as_fresh<SGD>(SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.3});
  expect_placed_state_steps_as_fresh<SGD>(SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
  expect_placed_state_steps_as_fresh<Adam>(AdamOptions{.lr = 0.1, .weight_decay = 0.01, .amsgrad = true});
  expect_placed_state_steps_as_fresh<AdamW>(AdamOptions{.lr = 0.1});
  expect_placed_state_steps_as_fresh<RMSprop>(RMSpropOptions{.lr = 0.01, .momentum = 0.5, .centered = true});
  expect_placed_state_steps_as_fresh<Adagrad>(AdagradOptions{.lr = 0.1, .initial_accumulator_value = 0.4});
  expect_placed_state_steps_as_fresh<Adadelta>(AdadeltaOptions{.lr = 1.0});
  expect_placed_state_steps_as_fresh<Adamax>(AdamaxOptions{.lr = 0.1});
  expect_placed_state_steps_as_fresh<NAdam>(NAdamOptions{.lr = 0.1});
  expect_placed_state_steps_as_fresh<RAdam>(RAdamOptions{.lr = 0.1});
  expect_placed_state_steps_as_fresh<Lamb>(LambOptions{.lr = 0.1});
  // bfloat16 parameters with float32 master copies: "master" and the moments placed in float32.
  expect_placed_state_steps_as_fresh<AdamW>(AdamOptions{.lr = 0.1}, DType::BFloat16, MasterWeights::Nearest);
}

TEST(BufferPlacement, APlacementOfTheWrongShapeIsRefused) {
  NamedParameters params = two_parameters(DType::Float64);
  AdamW opt(params, AdamOptions{.lr = 0.1});
  opt.load_state_dict(opt.state_dict());
  AdamW source(two_parameters(DType::Float64), AdamOptions{.lr = 0.1});
  NamedParameters sp = source.params(0);
  for (auto& [name, p] : sp) p.set_grad(Variable(zeros_like(p.data())));
  source.step();
  opt.set_buffer_placement(
      [](const std::string&, const std::string&, const Options& options) { return zeros({3}, options); });
  expect_error([&] { opt.load_state_dict(source.state_dict()); }, {"placement", "[3]", "expected a contiguous [2, 3]"});
  // At a step too (the fused kernels would write past a smaller buffer), and a strided one.
  NamedParameters fresh = two_parameters(DType::Float64);
  AdamW stepping(fresh, AdamOptions{.lr = 0.1});
  stepping.set_buffer_placement(
      [](const std::string&, const std::string&, const Options& options) { return zeros({3}, options); });
  expect_error([&] { step_three_times(stepping, fresh); },
               {"placement", "'exp_avg' [3]", "expected a contiguous [2, 3]"});
  AdamW strided(fresh, AdamOptions{.lr = 0.1});
  strided.set_buffer_placement([](const std::string& param, const std::string&, const Options& options) {
    return param == "a" ? zeros({3, 2}, options).t() : zeros({4}, options);
  });
  expect_error([&] { step_three_times(strided, fresh); }, {"placement", "(strided)", "expected a contiguous [2, 3]"});
}

}  // namespace
}  // namespace wick::test
