// examples/gpt's model against torch.nn's (tests/examples/gpt_reference.py, built from
// tests/support/torch_gpt.py): torch's state dict loads by name, and logits, loss and every
// parameter's gradient equal torch's in float64 (1e-10) and float32 (1e-5), on every device;
// ten AdamW steps give torch's losses. Also the pieces it brings to nn: weight tying and the
// positional modules; and sampling.
#include <gtest/gtest.h>

#include <cmath>

#include <wick/wick.h>

#include "examples/gpt/model.h"
#include "tests/support/torch_reference.h"

namespace wick {
namespace {

using examples::GPT;
using examples::GPTConfig;
using test::tensors_close;

const TensorMap& reference() { return test::torch_reference("examples/gpt_reference.safetensors").tensors; }

const GPTConfig kTiny{.vocab_size = 13, .block_size = 8, .n_layer = 2, .n_head = 2, .n_embd = 8};

// The reference model's weights (torch's state dict, lm_head.weight included) in `dtype`.
std::shared_ptr<GPT> torch_weights(DType dtype, Device device = Device::cpu()) {
  auto m = std::make_shared<GPT>(kTiny, Options(DType::Float64));
  m->load_state_dict(test::with_prefix(reference(), "param."));  // strict: torch's names are exactly wick's
  m->to(dtype).to(device);
  return m;
}

TEST(GPT, LogitsLossAndGradientsEqualTorchs) {
  const TensorMap& ref = reference();
  for (Device device : test::cpu_and_cuda())
    for (auto [dtype, rtol, atol] : {std::tuple{DType::Float64, 1e-10, 1e-12}, {DType::Float32, 1e-5, 1e-6}}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " on " + device.str());
      auto m = torch_weights(dtype, device);
      Variable logits = m->forward(ref.at("idx").to(device));
      EXPECT_TRUE(tensors_close(logits.data(), ref.at("logits"), rtol, atol)) << "logits";
      Variable loss = m->loss(ref.at("idx").to(device), ref.at("targets").to(device));
      EXPECT_TRUE(tensors_close(loss.data(), ref.at("loss"), rtol, atol)) << "loss";
      loss.backward();
      size_t compared = 0;
      for (const auto& [name, p] : m->named_parameters()) {
        EXPECT_TRUE(tensors_close(p.grad().data(), ref.at("grad." + name), rtol, atol)) << "gradient of " << name;
        ++compared;
      }
      EXPECT_EQ(compared, 2u + 12u * 2u + 2u);  // wte, wpe, 12 per block, ln_f: lm_head is wte
    }
}

TEST(GPT, TenAdamWStepsGiveTorchsLosses) {
  auto m = torch_weights(DType::Float64);
  AdamW opt(m->named_parameters(), AdamOptions{.lr = 0.01, .beta1 = 0.9, .beta2 = 0.95, .weight_decay = 0.1});
  const std::vector<double> torch_losses = test::values(reference().at("adamw_losses"));
  ASSERT_EQ(torch_losses.size(), 10u);
  for (size_t i = 0; i < torch_losses.size(); ++i) {
    opt.zero_grad();
    Variable loss = m->loss(reference().at("idx"), reference().at("targets"));
    loss.backward();
    opt.step();
    EXPECT_NEAR(loss.data().item<double>(), torch_losses[i], 1e-10) << "step " << i;
  }
  // Still one tensor after the steps: the optimizer updated it once, under its first name.
  EXPECT_EQ(m->lm_head->weight.impl(), m->wte->weight.impl());
}

// --checkpoint-activations: every block recomputed in backward gives the gradients of the
// plain model bit for bit, dropout included (its masks come from the generator the blocks
// were built with, which the model hands to the checkpoint), and draws no extra numbers.
TEST(GPT, CheckpointedActivationsGiveTheSameGradientsWithDropout) {
  auto gradients = [](bool checkpointed) {
    GPTConfig c = kTiny;
    c.dropout = 0.3;
    c.checkpoint_activations = checkpointed;
    Generator g(4);
    GPT m(c, Options(DType::Float64), &g);
    manual_seed(6);
    Tensor idx = randint(0, c.vocab_size, {3, 8}, Options(DType::Int64));
    Tensor targets = randint(0, c.vocab_size, {3, 8}, Options(DType::Int64));
    m.loss(idx, targets).backward();
    std::vector<Tensor> out;
    for (const Variable& p : m.parameters()) out.push_back(p.grad().data());
    out.push_back(scalar_tensor(static_cast<double>(g.offset()), DType::Float64));
    out.push_back(scalar_tensor(static_cast<double>(default_generator().offset()), DType::Float64));
    return out;
  };
  const std::vector<Tensor> plain = gradients(false), checkpointed = gradients(true);
  ASSERT_EQ(plain.size(), checkpointed.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(test::tensors_equal(plain[i], checkpointed[i])) << i;
}

TEST(GPT, OutputLayerIsTiedToTheTokenEmbedding) {
  GPT m(kTiny);
  EXPECT_EQ(m.lm_head->weight.impl(), m.wte->weight.impl());
  bool listed = false;
  for (const auto& [name, p] : m.named_parameters()) listed = listed || name == "lm_head.weight";
  EXPECT_FALSE(listed) << "a tied weight is one parameter (listed under its first name, wte.weight)";
  const StateDict dict = m.state_dict();  // both names, as torch's state_dict
  ASSERT_TRUE(dict.contains("lm_head.weight") && dict.contains("wte.weight"));
  EXPECT_TRUE(dict.at("lm_head.weight").shares_storage(dict.at("wte.weight")));
  m.to(DType::Float64);  // conversions keep the tie
  EXPECT_EQ(m.lm_head->weight.impl(), m.wte->weight.impl());
  EXPECT_EQ(m.lm_head->weight.dtype(), DType::Float64);
}

TEST(WeightTying, RefusesAnotherShapeDtypeOrDevice) {
  Linear head(4, 6);
  Embedding same(6, 4), wide(6, 5);
  Embedding f64(6, 4, std::nullopt, Options(DType::Float64));
  head.tie_weight(same.weight);
  EXPECT_EQ(head.weight.impl(), same.weight.impl());
  for (Embedding* other : {&wide, &f64}) {
    try {
      head.tie_weight(other->weight);
      ADD_FAILURE() << "tying to " << shape_str(other->weight.shape()) << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("Linear: cannot tie 'weight' ([6, 4] float32"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(head.weight.impl(), same.weight.impl()) << "a refused tie changes nothing";
  // The gradient of a tied weight sums both uses.
  Linear a(3, 3, false), b(3, 3, false);
  b.tie_weight(a.weight);
  Variable x(randn({2, 3}));
  sum(b.forward(a.forward(x))).backward();
  Variable a_alone(a.weight.data().clone(), true), b_alone(a.weight.data().clone(), true);
  sum(linear(linear(x, a_alone, Variable()), b_alone, Variable())).backward();
  EXPECT_TRUE(tensors_close(a.weight.grad().data(), add(a_alone.grad().data(), b_alone.grad().data()), 1e-6, 1e-6));
}

TEST(Positions, SinusoidalTableIsTorchTutorials) {
  SinusoidalPositionalEncoding pe(8, 12, Options(DType::Float64));
  EXPECT_TRUE(tensors_close(pe.buffer("pe"), reference().at("sinusoidal.pe"), 1e-14, 1e-15));
  Tensor x = randn({2, 5, 8}, DType::Float64);
  EXPECT_TRUE(tensors_close(pe.forward(Variable(x)).data(), add(x, reference().at("sinusoidal.pe").narrow(0, 0, 5)),
                            1e-14, 1e-15));
  // Odd widths: the last column is a sine (no cosine partner).
  SinusoidalPositionalEncoding odd(5, 3, Options(DType::Float64));
  EXPECT_NEAR(odd.buffer("pe").select(0, 2).select(0, 4).item<double>(), std::sin(2 * std::pow(10000.0, -4.0 / 5)),
              1e-15);
  EXPECT_THROW(pe.forward(Variable(randn({1, 13, 8}))), Error);  // longer than max_len
  EXPECT_THROW(pe.forward(Variable(randn({1, 4, 7}))), Error);   // another width
}

TEST(Positions, LearnedPositionsHaveFiniteDifferenceGradients) {
  LearnedPositionalEmbedding wpe(6, 3, Options(DType::Float64));
  const GradcheckResult r = gradcheck(
      [&](const std::vector<Variable>& in) {
        wpe.weight = in[1];  // what forward reads
        return mul(wpe.forward(in[0]), in[0]);
      },
      {randn({2, 4, 3}, DType::Float64), randn({6, 3}, DType::Float64)});
  EXPECT_TRUE(r.ok) << r.message;
  try {
    wpe.forward(Variable(randn({2, 7, 3})));
    ADD_FAILURE() << "7 positions of 6 were accepted";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("LearnedPositionalEmbedding: a sequence of 7 positions is longer than max_len=6"),
        std::string::npos)
        << e.what();
  }
}

TEST(GPT, GenerateSamplesFromTheModelsDistribution) {
  auto m = torch_weights(DType::Float64);
  m->eval();
  Tensor prompt = reference().at("idx").narrow(0, 0, 2);  // [2, 6]
  Generator g1(7), g2(7);
  Tensor a = m->generate(prompt, 5, 1.0, 0, g1), b = m->generate(prompt, 5, 1.0, 0, g2);
  ASSERT_EQ(a.shape(), Shape({2, 11}));  // the context is cut to block_size = 8 on the way
  EXPECT_TRUE(all(eq(a, b)).item<bool>()) << "the same generator gives the same sample";
  EXPECT_TRUE(all(eq(a.narrow(1, 0, 6), prompt)).item<bool>());
  EXPECT_TRUE(all(ge(a, Scalar(0))).item<bool>() && all(lt(a, Scalar(kTiny.vocab_size))).item<bool>());
  // top_k = 1 is greedy decoding: each new token is the argmax of the logits so far.
  Generator g3(1);
  Tensor greedy = m->generate(prompt, 3, 1.0, 1, g3);
  for (int64_t t = 6; t < 9; ++t) {
    NoGradGuard no_grad;
    Tensor ctx = greedy.narrow(1, std::max<int64_t>(0, t - 8), std::min<int64_t>(t, 8));
    Tensor expect = argmax(m->forward(ctx).data().select(1, ctx.size(1) - 1), 1);
    EXPECT_TRUE(all(eq(greedy.select(1, t), expect)).item<bool>()) << "position " << t;
  }
  // A low temperature concentrates on the argmax too.
  Generator g4(3);
  EXPECT_TRUE(all(eq(m->generate(prompt, 3, 1e-4, 0, g4), greedy)).item<bool>());
  EXPECT_THROW(m->generate(prompt, 1, 0.0, 0, g4), Error);
}

// A model with random weights whose context (block 24) holds a 3-byte prompt and 21 more.
std::shared_ptr<GPT> random_gpt(DType dtype, bool sinusoidal) {
  Generator init(11);
  auto m = std::make_shared<GPT>(
      GPTConfig{.vocab_size = 13, .block_size = 24, .n_layer = 2, .n_head = 2, .n_embd = 16, .sinusoidal = sinusoidal},
      Options(dtype), &init);
  m->eval();
  return m;
}

TEST(GPT, CachedSamplingGivesTheUncachedTokens) {
  for (DType dtype : {DType::Float32, DType::Float64})
    for (bool sinusoidal : {false, true}) {
      auto m = random_gpt(dtype, sinusoidal);
      Tensor prompt = randint(0, 13, {3, 3}, DType::Int64);
      Generator g1(5), g2(5);
      Tensor cached = m->generate(prompt, 21, 1.0, 0, g1, true), uncached = m->generate(prompt, 21, 1.0, 0, g2, false);
      ASSERT_EQ(cached.shape(), Shape({3, 24}));
      EXPECT_TRUE(all(eq(cached, uncached)).item<bool>())
          << dtype_name(dtype) << (sinusoidal ? " sinusoidal" : " learned") << "\n"
          << cached << "\n"
          << uncached;
    }
}

TEST(GPT, CachedPromptGivesForwardsBitsAndEachStepItsLastPosition) {
  auto m = random_gpt(DType::Float32, false);
  Tensor idx = randint(0, 13, {2, 9}, DType::Int64);
  NoGradGuard no_grad;
  examples::KVCache cache;
  Tensor prompt = m->forward_cached(idx.narrow(1, 0, 5), cache);
  EXPECT_EQ(cache.length, 5);
  EXPECT_TRUE(all(eq(prompt, m->forward(idx.narrow(1, 0, 5)).data().select(1, 4))).item<bool>());
  for (int64_t t = 5; t < 9; ++t) {
    Tensor step = m->forward_cached(idx.narrow(1, t, 1), cache);
    EXPECT_TRUE(tensors_close(step, m->forward(idx.narrow(1, 0, t + 1)).data().select(1, t), 1e-5, 1e-6))
        << "position " << t;
  }
  EXPECT_EQ(cache.keys.at(1).shape(), Shape({2, 2, 9, 8}));
  EXPECT_THROW(m->forward_cached(idx.narrow(1, 0, 2), cache), Error);           // two new positions after cached ones
  EXPECT_THROW(m->forward_cached(zeros({2, 16}, DType::Int64), cache), Error);  // past block_size
}

TEST(GPT, FullCacheRestartsFromHalfABlock) {
  // Past block_size (24), each token is drawn from the logits after the context since the
  // cache's last (re)start, which keeps the last 12 tokens when full: redrawn here with the
  // same uniform numbers from uncached forwards over those contexts.
  auto m = random_gpt(DType::Float64, false);
  Tensor prompt = randint(0, 13, {2, 3}, DType::Int64);
  Generator g(9), replay(9);
  Tensor out = m->generate(prompt, 40, 1.0, 0, g);
  int64_t start = 0;
  for (int64_t t = 3; t < 43; ++t) {
    if (t - start > 24) start = t - 12;
    NoGradGuard no_grad;
    Tensor probs = softmax(m->forward(out.narrow(1, start, t - start)).data().select(1, t - start - 1), 1);
    Tensor u = rand({2}, DType::Float64, &replay);
    for (int64_t b = 0; b < 2; ++b) {
      double left = u.data<double>()[b];
      int64_t token = 0;
      while ((left -= probs[b][token].item<double>()) >= 0) ++token;
      EXPECT_EQ(out[b][t].item<int64_t>(), token) << "row " << b << ", position " << t << ", context from " << start;
    }
  }
}

TEST(GPT, RefusesBadInput) {
  GPT m(kTiny);
  EXPECT_THROW(m.forward(zeros({2, 9}, DType::Int64)), Error);  // longer than block_size
  EXPECT_THROW(m.forward(zeros({2, 4})), Error);                // float ids
  EXPECT_THROW(GPT(GPTConfig{.n_head = 3, .n_embd = 8}), Error);
}

}  // namespace
}  // namespace wick
