// The Transformer layers and stacks against torch.nn (transformer_reference.safetensors,
// written by transformer_reference.py): torch's state dicts load by name, and the outputs
// and every parameter's and input's gradient equal torch's in float64 (post- and pre-norm,
// relu / gelu / gelu-tanh, without bias, causal target masks, memory padding masks).
#include "tests/support/torch_reference.h"

#include <cmath>
#include <limits>

#include <wick/autograd/ops.h>
#include <wick/nn/transformer.h>

namespace wick::test {
namespace {

const TorchReference& transformer_reference() { return torch_reference("nn/transformer_reference.safetensors"); }

TEST(Transformer, EveryCaseMatchesTorch) {
  const TensorMap& ref = transformer_reference().tensors;
  ASSERT_GE(transformer_reference().cases.size(), 5u);
  for (const auto& entry : transformer_reference().cases) {
    const std::string name = entry.first;  // a lambda below captures it (clang 14 cannot capture bindings)
    SCOPED_TRACE(name);
    auto c = case_options(entry.second);
    auto get = [&](const std::string& key) { return ref.at(name + "." + key); };
    auto has = [&](const std::string& key) { return ref.count(name + "." + key) != 0; };
    TransformerLayerOptions t;
    t.dim_feedforward = std::stoll(c.at("ff"));
    t.dropout = 0.0;
    t.norm_first = c.at("norm_first") == "1";
    t.bias = c.at("bias") == "1";
    t.activation = c.at("activation") == "relu"   ? TransformerActivation::ReLU
                   : c.at("activation") == "gelu" ? TransformerActivation::GELU
                                                  : TransformerActivation::GELUTanh;
    const int64_t d = std::stoll(c.at("d_model")), h = std::stoll(c.at("nhead"));
    const int64_t layers = c.count("layers") ? std::stoll(c.at("layers")) : 1;
    const Options f64(DType::Float64);
    std::map<std::string, Variable> inputs;
    for (const char* key : {"src", "tgt", "memory"})
      if (has(key)) inputs[key] = Variable(get(key), true);
    const Tensor tgt_mask = has("tgt_mask") ? get("tgt_mask") : Tensor();
    const Tensor memory_pad = has("memory_key_padding_mask") ? get("memory_key_padding_mask") : Tensor();
    std::shared_ptr<Module> m;
    Variable out;
    const std::string kind = c.at("kind");
    if (kind == "decoder_layer") {
      m = std::make_shared<TransformerDecoderLayer>(d, h, t, f64);
    } else if (kind == "decoder") {
      m = std::make_shared<TransformerDecoder>(d, h, layers, t, true, f64);
    } else if (kind == "encoder") {
      m = std::make_shared<TransformerEncoder>(d, h, layers, t, true, f64);
    } else {
      m = std::make_shared<Transformer>(d, h, TransformerOptions{layers, layers, t}, f64);
    }
    m->load_state_dict(with_prefix(ref, name + ".param."));
    if (kind == "decoder_layer")
      out = static_cast<TransformerDecoderLayer&>(*m).forward(inputs["tgt"], inputs["memory"], tgt_mask, Tensor(),
                                                             Tensor(), memory_pad);
    else if (kind == "decoder")
      out = static_cast<TransformerDecoder&>(*m).forward(inputs["tgt"], inputs["memory"], tgt_mask, Tensor(), Tensor(),
                                                        memory_pad);
    else if (kind == "encoder")
      out = static_cast<TransformerEncoder&>(*m).forward(inputs["src"], Tensor(), get("src_key_padding_mask"));
    else
      out = static_cast<Transformer&>(*m).forward(inputs["src"], inputs["tgt"], Tensor(), tgt_mask, Tensor(), Tensor(),
                                                 Tensor(), memory_pad);
    EXPECT_TRUE(tensors_close(out.data(), get("out"), 1e-10, 1e-10)) << "output";
    sum(mul(out, Variable(get("w")))).backward();
    for (const auto& [pname, p] : m->named_parameters())
      EXPECT_TRUE(tensors_close(p.grad().data(), get("grad." + pname), 1e-10, 1e-10)) << "gradient of " << pname;
    for (const auto& [key, v] : inputs) EXPECT_TRUE(tensors_close(v.grad().data(), get("grad." + key), 1e-10, 1e-10)) << key;
  }
}

TEST(Transformer, SquareSubsequentMaskAndErrors) {
  Tensor m = Transformer::generate_square_subsequent_mask(3);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(values(m), (std::vector<double>{0, -inf, -inf, 0, 0, -inf, 0, 0, 0}));
  expect_error([] { TransformerDecoderLayer(6, 4); }, {"TransformerDecoderLayer", "d_model divisible by nhead"});
  Transformer t(8, 2, TransformerOptions{1, 1, TransformerLayerOptions{.dim_feedforward = 8}});
  expect_error([&] { t.forward(Variable(zeros({2, 5, 8})), Variable(zeros({3, 4, 8}))); }, {"Transformer", "share N"});
  // torch.nn.Transformer draws every matrix again from xavier_uniform: bound sqrt(6 / (fan_in + fan_out)).
  const double bound = std::sqrt(6.0 / (8 + 8));
  for (double v : values(t.encoder->layer(0)->linear1->weight.data())) EXPECT_LE(std::abs(v), bound);
}

}  // namespace
}  // namespace wick::test
