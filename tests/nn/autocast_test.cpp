// Autocast (wick/autograd/autocast.h): every row of the policy against torch.autocast's decision
// (autocast_reference.txt, written by autocast_reference.py from torch's CUDA autocast), on
// the CPU and on CUDA; gradients in the forward's dtypes; the parameter-cast cache; nesting,
// threads, float64 and bad arguments.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <wick/autograd/autocast.h>
#include <wick/autograd/composites.h>
#include <wick/autograd/distances.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/ops.h>
#include <wick/autograd/activations.h>
#include <wick/nn/loss.h>
#include <wick/nn/norm.h>
#include <wick/tensor/cuda.h>
#include <wick/tensor/factories.h>

#include "../support/reference.h"

namespace wick {
namespace {

using Inputs = std::vector<Variable>;

struct Case {
  std::vector<Shape> shapes;  // the floating inputs, in order
  std::function<Variable(const Inputs&)> run;
};

// The same ops, shapes and argument order as autocast_reference.py's table.
const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> table = [] {
    auto idx = [](const Shape& s, const Variable& like) { return zeros(s, Options(DType::Int64, like.device())); };
    std::map<std::string, Case> t;
    t["matmul"] = {{{3, 4}, {4, 5}}, [](const Inputs& v) { return matmul(v[0], v[1]); }};
    t["mm"] = {{{3, 4}, {4, 5}}, [](const Inputs& v) { return mm(v[0], v[1]); }};
    t["bmm"] = {{{2, 3, 4}, {2, 4, 5}}, [](const Inputs& v) { return bmm(v[0], v[1]); }};
    t["addmm"] = {{{3, 5}, {3, 4}, {4, 5}}, [](const Inputs& v) { return addmm(v[0], v[1], v[2]); }};
    t["baddbmm"] = {{{2, 3, 5}, {2, 3, 4}, {2, 4, 5}}, [](const Inputs& v) { return baddbmm(v[0], v[1], v[2]); }};
    t["mv"] = {{{3, 4}, {4}}, [](const Inputs& v) { return mv(v[0], v[1]); }};
    t["addmv"] = {{{3}, {3, 4}, {4}}, [](const Inputs& v) { return addmv(v[0], v[1], v[2]); }};
    t["linear"] = {{{2, 4}, {3, 4}, {3}}, [](const Inputs& v) { return linear(v[0], v[1], v[2]); }};
    t["scaled_dot_product_attention"] = {{{1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 4}}, [](const Inputs& v) {
      return scaled_dot_product_attention(v[0], v[1], v[2]);
    }};
    t["conv1d"] = {{{1, 2, 6}, {3, 2, 3}, {3}}, [](const Inputs& v) { return conv1d(v[0], v[1], v[2]); }};
    t["conv2d"] = {{{1, 2, 5, 5}, {3, 2, 3, 3}, {3}}, [](const Inputs& v) { return conv2d(v[0], v[1], v[2]); }};
    t["conv3d"] = {{{1, 2, 4, 4, 4}, {3, 2, 2, 2, 2}, {3}},
                   [](const Inputs& v) { return conv3d(v[0], v[1], v[2]); }};
    t["conv_transpose1d"] = {{{1, 2, 5}, {2, 3, 3}, {3}},
                             [](const Inputs& v) { return conv_transpose1d(v[0], v[1], v[2]); }};
    t["conv_transpose2d"] = {{{1, 2, 4, 4}, {2, 3, 3, 3}, {3}},
                             [](const Inputs& v) { return conv_transpose2d(v[0], v[1], v[2]); }};
    t["conv_transpose3d"] = {{{1, 2, 3, 3, 3}, {2, 3, 2, 2, 2}, {3}},
                             [](const Inputs& v) { return conv_transpose3d(v[0], v[1], v[2]); }};
    t["prelu"] = {{{2, 3}, {3}}, [](const Inputs& v) { return prelu(v[0], v[1]); }};
    t["pow"] = {{{4}, {4}}, [](const Inputs& v) { return pow(v[0], v[1]); }};
    using Unary = Variable (*)(const Variable&);
    const std::pair<const char*, Unary> unary[] = {
        {"exp", exp},     {"expm1", expm1}, {"log", log},   {"log2", log2},         {"log10", log10},
        {"log1p", log1p}, {"tan", tan},     {"asin", asin}, {"acos", acos},         {"sinh", sinh},
        {"cosh", cosh},   {"rsqrt", rsqrt}, {"relu", relu}, {"reciprocal", reciprocal}, {"tanh", tanh},
        {"sigmoid", sigmoid}};
    for (const auto& [name, f] : unary) t[name] = {{{4}}, [f = f](const Inputs& v) { return f(v[0]); }};
    t["softplus"] = {{{4}}, [](const Inputs& v) { return softplus(v[0]); }};
    t["gelu"] = {{{4}}, [](const Inputs& v) { return gelu(v[0]); }};
    t["softmax"] = {{{2, 4}}, [](const Inputs& v) { return softmax(v[0], 1); }};
    t["log_softmax"] = {{{2, 4}}, [](const Inputs& v) { return log_softmax(v[0], 1); }};
    t["sum"] = {{{2, 4}}, [](const Inputs& v) { return sum(v[0]); }};
    t["prod"] = {{{2, 4}}, [](const Inputs& v) { return prod(v[0]); }};
    t["mean"] = {{{2, 4}}, [](const Inputs& v) { return mean(v[0]); }};
    t["var"] = {{{2, 4}}, [](const Inputs& v) { return var(v[0]); }};
    t["cumsum"] = {{{2, 4}}, [](const Inputs& v) { return cumsum(v[0], 1); }};
    t["cumprod"] = {{{2, 4}}, [](const Inputs& v) { return cumprod(v[0], 1); }};
    t["norm"] = {{{2, 4}}, [](const Inputs& v) { return norm(v[0]); }};
    t["normalize"] = {{{2, 4}}, [](const Inputs& v) { return normalize(v[0]); }};
    t["cosine_similarity"] = {{{2, 4}, {2, 4}}, [](const Inputs& v) { return cosine_similarity(v[0], v[1]); }};
    t["cdist"] = {{{3, 4}, {2, 4}}, [](const Inputs& v) { return cdist(v[0], v[1]); }};
    t["batch_norm"] = {{{2, 3, 4}, {3}, {3}}, [](const Inputs& v) {
                         Options o(DType::Float32, v[0].device());
                         return batch_norm(v[0], v[1], v[2], zeros({3}, o), ones({3}, o), true);
                       }};
    t["layer_norm"] = {{{2, 4}, {4}, {4}}, [](const Inputs& v) { return layer_norm(v[0], {4}, v[1], v[2]); }};
    t["group_norm"] = {{{2, 4, 3}, {4}, {4}}, [](const Inputs& v) { return group_norm(v[0], 2, v[1], v[2]); }};
    t["rms_norm"] = {{{2, 4}, {4}}, [](const Inputs& v) { return rms_norm(v[0], {4}, v[1]); }};
    t["cross_entropy"] = {{{2, 4}}, [idx](const Inputs& v) { return cross_entropy(v[0], idx({2}, v[0])); }};
    t["nll_loss"] = {{{2, 4}}, [idx](const Inputs& v) { return nll_loss(v[0], idx({2}, v[0])); }};
    t["mse_loss"] = {{{2, 4}, {2, 4}}, [](const Inputs& v) { return mse_loss(v[0], v[1]); }};
    t["l1_loss"] = {{{2, 4}, {2, 4}}, [](const Inputs& v) { return l1_loss(v[0], v[1]); }};
    t["smooth_l1_loss"] = {{{2, 4}, {2, 4}}, [](const Inputs& v) { return smooth_l1_loss(v[0], v[1]); }};
    t["huber_loss"] = {{{2, 4}, {2, 4}}, [](const Inputs& v) { return huber_loss(v[0], v[1]); }};
    t["kl_div"] = {{{2, 4}, {2, 4}},
                   [](const Inputs& v) { return kl_div(v[0], v[1], KLDivReduction::BatchMean); }};
    t["bce_with_logits"] = {{{2, 4}, {2, 4}}, [](const Inputs& v) { return bce_with_logits(v[0], v[1]); }};
    t["margin_ranking_loss"] = {{{4}, {4}, {4}},
                                [](const Inputs& v) { return margin_ranking_loss(v[0], v[1], v[2]); }};
    t["cosine_embedding_loss"] = {{{2, 4}, {2, 4}}, [](const Inputs& v) {
                                    return cosine_embedding_loss(v[0], v[1], ones({2}, Options(DType::Int64, v[0].device())));
                                  }};
    t["triplet_margin_loss"] = {{{2, 4}, {2, 4}, {2, 4}},
                                [](const Inputs& v) { return triplet_margin_loss(v[0], v[1], v[2]); }};
    t["poisson_nll_loss"] = {{{2, 4}, {2, 4}}, [](const Inputs& v) { return poisson_nll_loss(v[0], v[1]); }};
    t["addcmul"] = {{{4}, {4}, {4}}, [](const Inputs& v) { return addcmul(v[0], v[1], v[2]); }};
    t["addcdiv"] = {{{4}, {4}, {4}}, [](const Inputs& v) { return addcdiv(v[0], v[1], v[2]); }};
    t["atan2"] = {{{4}, {4}}, [](const Inputs& v) { return atan2(v[0], v[1]); }};
    t["dot"] = {{{4}, {4}}, [](const Inputs& v) { return dot(v[0], v[1]); }};
    t["tensordot"] = {{{2, 3}, {3, 4}}, [](const Inputs& v) { return tensordot(v[0], v[1], 1); }};
    t["scatter_add"] = {{{2, 4}, {2, 4}}, [idx](const Inputs& v) { return scatter_add(v[0], 1, idx({2, 4}, v[0]), v[1]); }};
    t["index_put"] = {{{4}, {2}}, [idx](const Inputs& v) { return index_put(v[0], {idx({2}, v[0])}, v[1]); }};
    t["logsumexp"] = {{{2, 4}}, [](const Inputs& v) { return logsumexp(v[0], {1}); }};
    t["interpolate"] = {{{1, 2, 4}}, [](const Inputs& v) { return interpolate(v[0], Shape{6}); }};
    t["interpolate_linear"] = {{{1, 2, 4}},
                               [](const Inputs& v) { return interpolate(v[0], Shape{6}, InterpolateMode::Linear); }};
    t["binary_cross_entropy"] = {{{2, 4}, {2, 4}}, [](const Inputs& v) { return binary_cross_entropy(v[0], v[1]); }};
    t["add"] = {{{4}, {4}}, [](const Inputs& v) { return add(v[0], v[1]); }};
    t["mul"] = {{{4}, {4}}, [](const Inputs& v) { return mul(v[0], v[1]); }};
    t["max_pool2d"] = {{{1, 2, 4, 4}}, [](const Inputs& v) { return max_pool2d(v[0], 2); }};
    return t;
  }();
  return table;
}

// Rows where wick computes in another dtype than torch.autocast, and why.
const std::map<std::string, std::string>& deviations() {
  static const std::map<std::string, std::string> d = {
      {"batch_norm",
       "float32 in wick (torch keeps a 16-bit input 16-bit and relies on cuDNN's internal float32): wick's "
       "normalisation kernels take one dtype for input and parameters, and the float32 parameters and running "
       "statistics stay float32"},
  };
  return d;
}

struct ReferenceRow {
  std::string op, low, inputs, output;
};

std::vector<ReferenceRow> reference_rows() {
  std::ifstream in(std::string(WICK_SOURCE_DIR) + "/tests/nn/autocast_reference.txt");
  EXPECT_TRUE(in.good()) << "autocast_reference.txt is missing";
  std::vector<ReferenceRow> rows;
  ReferenceRow r;
  while (in >> r.op >> r.low >> r.inputs >> r.output) rows.push_back(r);
  return rows;
}

DType parse_dtype(const std::string& s) {
  for (DType t : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64})
    if (s == dtype_name(t)) return t;
  ADD_FAILURE() << "unknown dtype " << s;
  return DType::Float32;
}

Inputs make_inputs(const Case& c, const std::string& config, DType low, Device device, uint64_t seed) {
  Inputs v;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    DType t = config == "float32" || (config == "mixed" && i > 0) ? DType::Float32 : low;
    // (0.2, 0.8): inside every op's domain (log, acos, rsqrt, ...).
    v.emplace_back(test::random(c.shapes[i], t, seed + i, 0.2, 0.8).to(device), true);
  }
  return v;
}

TEST(Autocast, EveryPolicyRowHasACaseAndReferenceRows) {
  std::set<std::string> referenced;
  for (const ReferenceRow& r : reference_rows()) referenced.insert(r.op);
  for (int i = 0; i < kNumAutocastOps; ++i) {
    std::string name = autocast_op_name(static_cast<AutocastOp>(i));
    EXPECT_TRUE(cases().count(name)) << name << " has no case";
    EXPECT_TRUE(referenced.count(name)) << name << " has no torch reference row";
  }
  for (const std::string& op : referenced) EXPECT_TRUE(cases().count(op)) << op << " is referenced but has no case";
  EXPECT_GE(referenced.size(), static_cast<size_t>(kNumAutocastOps) + 5);  // and ops the policy leaves alone
}

TEST(Autocast, OutputDtypesEqualTorchAutocast) {
  std::vector<ReferenceRow> rows = reference_rows();
  ASSERT_GT(rows.size(), 300u);
  for (Device device : test::cpu_and_cuda()) {
    uint64_t seed = 1;
    for (const ReferenceRow& r : rows) {
      SCOPED_TRACE(r.op + " " + r.low + " " + r.inputs + " on " + device.str());
      auto it = cases().find(r.op);
      ASSERT_NE(it, cases().end());
      DType low = parse_dtype(r.low);
      Inputs in = make_inputs(it->second, r.inputs, low, device, seed += 10);
      AutocastGuard guard(device, low);
      if (r.output == "refused") {
        test::expect_error([&] { it->second.run(in); }, {r.op, "refused under autocast"});
        continue;
      }
      Variable out = it->second.run(in);
      DType expected = parse_dtype(r.output);
      if (deviations().count(r.op)) expected = DType::Float32;
      EXPECT_EQ(out.dtype(), expected);
    }
  }
}

// With autocast off (no guard, or a guard on the other device type) nothing changes.
TEST(Autocast, OffOrOtherDeviceChangesNothing) {
  for (const auto& [name, c] : cases()) {
    // Its float32 running statistics need a float32 input (wick's batch_norm takes the
    // statistics in the input's dtype), which only autocast gives it.
    if (name == "batch_norm") continue;
    SCOPED_TRACE(name);
    Inputs in = make_inputs(c, "low", DType::BFloat16, Device::cpu(), 7);
    EXPECT_EQ(c.run(in).dtype(), DType::BFloat16);
    AutocastGuard other(Device::cuda(), DType::Float16);
    EXPECT_EQ(c.run(in).dtype(), DType::BFloat16);
    AutocastGuard disabled(Device::cpu(), DType::Float16, /*enabled=*/false);
    EXPECT_EQ(c.run(in).dtype(), DType::BFloat16);
  }
}

// binary_cross_entropy is refused under autocast, as torch.autocast refuses it: for any dtype
// on the guard's device type (float64 too), with a message that names the op, the input and
// the safe form; outside the guard, or with the guard on the other device type, it runs.
TEST(Autocast, BinaryCrossEntropyIsRefusedWithTheSafeFormNamed) {
  for (Device device : test::cpu_and_cuda()) {
    SCOPED_TRACE(device.str());
    for (DType t : {DType::BFloat16, DType::Float32, DType::Float64}) {
      Variable p(test::random({3, 5}, t, 51, 0.1, 0.9).to(device), true);
      Variable y(test::random({3, 5}, t, 52, 0.0, 1.0).to(device));
      {
        AutocastGuard guard(device, DType::Float16);
        test::expect_error([&] { binary_cross_entropy(p, y); },
                           {"binary_cross_entropy", "refused under autocast", "[3, 5]", dtype_name(t),
                            "bce_with_logits"});
        EXPECT_EQ(bce_with_logits(p, y).dtype(), t == DType::Float64 ? DType::Float64 : DType::Float32);
        AutocastGuard other(device.type == DeviceType::CPU ? Device::cuda() : Device::cpu(), DType::Float16);
        test::expect_error([&] { binary_cross_entropy(p, y); }, {"binary_cross_entropy", "refused under autocast"});
      }
      EXPECT_FALSE(autocast_any());
      AutocastGuard elsewhere(device.type == DeviceType::CPU ? Device::cuda() : Device::cpu(), DType::BFloat16);
      Variable loss = binary_cross_entropy(p, y);
      EXPECT_EQ(loss.dtype(), t);
      loss.backward();
      EXPECT_EQ(p.grad().dtype(), t);
    }
  }
}

TEST(Autocast, Float64IsNeverCast) {
  Variable a(test::random({3, 4}, DType::Float64, 1), true), b(test::random({4, 2}, DType::Float64, 2), true);
  AutocastGuard guard(Device::cpu(), DType::BFloat16);
  EXPECT_EQ(matmul(a, b).dtype(), DType::Float64);
  EXPECT_EQ(softmax(matmul(a, b), 1).dtype(), DType::Float64);
  // Promote takes the widest floating input, float64 included.
  Variable c(test::random({4}, DType::BFloat16, 3), true), d(test::random({4}, DType::Float64, 4), true);
  EXPECT_EQ(atan2(c, d).dtype(), DType::Float64);
}

// The values: a product under bf16 autocast equals the float64 product of the bf16-rounded
// inputs to bf16's resolution; a float32 op on bf16 inputs is exact to float32's.
TEST(Autocast, ValuesMatchTheChosenPrecision) {
  for (Device device : test::cpu_and_cuda()) {
    SCOPED_TRACE(device.str());
    Tensor a = test::random({5, 7}, DType::Float32, 11), b = test::random({7, 3}, DType::Float32, 12);
    Tensor expected = matmul(a.to(DType::BFloat16).to(DType::Float64), b.to(DType::BFloat16).to(DType::Float64));
    AutocastGuard guard(device, DType::BFloat16);
    Variable out = matmul(Variable(a.to(device)), Variable(b.to(device)));
    ASSERT_EQ(out.dtype(), DType::BFloat16);
    EXPECT_TRUE(test::matches(out.data().to(Device::cpu()), expected.shape(), DType::BFloat16, test::values(expected)));
    Tensor x = test::random({4, 6}, DType::BFloat16, 13);
    Variable s = softmax(Variable(x.to(device)), 1);
    ASSERT_EQ(s.dtype(), DType::Float32);
    Tensor ref = softmax(x.to(DType::Float64), 1);
    EXPECT_TRUE(test::matches(s.data().to(Device::cpu()), ref.shape(), DType::Float32, test::values(ref)));
  }
}

// Gradients flow back through the casts: the product's gradient is computed in bf16 (as its
// forward), the float32 weight receives a float32 gradient equal, to bf16's resolution, to
// the float64 one.
TEST(Autocast, GradientsRunInTheForwardDtypeAndReachFloat32Weights) {
  for (Device device : test::cpu_and_cuda()) {
    SCOPED_TRACE(device.str());
    Variable x(test::random({4, 6}, DType::Float32, 21).to(device));
    Variable w(test::random({3, 6}, DType::Float32, 22).to(device), true);
    Variable b(test::random({3}, DType::Float32, 23).to(device), true);
    DType seen = DType::Bool;
    Variable loss;
    {
      AutocastGuard guard(device, DType::BFloat16);
      Variable y = linear(x, w, b);
      EXPECT_EQ(y.dtype(), DType::BFloat16);
      y.register_hook([&](const Variable& g) {
        seen = g.dtype();
        return Variable();
      });
      loss = sum(mul(y, y));
      EXPECT_EQ(loss.dtype(), DType::Float32);
    }
    loss.backward();
    EXPECT_EQ(seen, DType::BFloat16);
    ASSERT_EQ(w.grad().dtype(), DType::Float32);
    ASSERT_EQ(b.grad().dtype(), DType::Float32);
    // d/dW sum(y^2) = 2 y^T x with y = x W^T + b, all in float64 from the bf16-rounded inputs.
    auto r = [](const Variable& v) { return v.data().to(Device::cpu()).to(DType::BFloat16).to(DType::Float64); };
    Tensor y64 = add(matmul(r(x), r(w).transpose(0, 1)), r(b));
    Tensor gw = mul(matmul(y64.transpose(0, 1), r(x)), 2.0);
    EXPECT_TRUE(test::matches(w.grad().data().to(Device::cpu()), gw.shape(), DType::Float32, test::values(gw), 3e-2,
                              3e-2));
  }
}

// A backward started inside the guard does not re-cast: the gradients are bit for bit those
// of a backward run after the guard (asinh's backward calls rsqrt, a float32 op, which would
// otherwise compute in float32 what the forward's dtype says is bfloat16), and all-bf16
// leaves get bf16 gradients.
TEST(Autocast, BackwardInsideTheGuardIsTheSameAsAfterIt) {
  std::vector<Tensor> grads[2];
  for (bool inside : {false, true}) {
    Variable x(test::random({4, 6}, DType::BFloat16, 31), true);
    Variable w(test::random({3, 6}, DType::BFloat16, 32), true);
    Variable b(test::random({3}, DType::BFloat16, 33), true);
    Variable loss;
    {
      AutocastGuard guard(Device::cpu(), DType::BFloat16);
      Variable y = asinh(mul(linear(x, w, b), 3.0));
      EXPECT_EQ(y.dtype(), DType::BFloat16);
      loss = sum(pow(y, 2.0));  // float32 from pow on
      EXPECT_EQ(loss.dtype(), DType::Float32);
      if (inside) loss.backward();
    }
    if (!inside) loss.backward();
    for (const Variable& v : {x, w, b}) {
      EXPECT_EQ(v.grad().dtype(), DType::BFloat16);
      grads[inside].push_back(v.grad().data());
    }
  }
  for (size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(all(eq(grads[0][i], grads[1][i])).item<bool>()) << "gradient " << i;
}

// A parameter used twice in one forward is cast once; the cache ends with the outermost
// guard, and both uses' gradients reach the parameter.
TEST(Autocast, ParameterCastsAreCachedForTheOutermostGuard) {
  Variable x(test::random({2, 4}, DType::Float32, 41));
  Variable w(test::random({4, 4}, DType::Float32, 42), true);
  Variable loss;
  {
    AutocastGuard guard(Device::cpu(), DType::BFloat16);
    Variable h = linear(x, w);
    EXPECT_EQ(autocast_cache_size(), 1u);
    {
      AutocastGuard inner(Device::cpu(), DType::BFloat16);
      h = linear(h, w);
    }
    EXPECT_EQ(autocast_cache_size(), 1u);  // the inner guard neither added nor cleared
    loss = sum(h);
    Variable not_a_parameter(test::random({4, 4}, DType::Float32, 43));
    linear(x, not_a_parameter);
    EXPECT_EQ(autocast_cache_size(), 1u);
  }
  EXPECT_EQ(autocast_cache_size(), 0u);
  loss.backward();
  // sum(x W^T W^T): dW = (x W^T)^T 1 W... compared with the same graph without autocast.
  Variable w2(w.data().to(DType::BFloat16).to(DType::Float32), true);
  Variable x2(x.data().to(DType::BFloat16).to(DType::Float32));
  sum(linear(linear(x2, w2), w2)).backward();
  EXPECT_TRUE(test::matches(w.grad().data(), w2.grad().shape(), DType::Float32, test::values(w2.grad().data()), 5e-2,
                            5e-2));
}

TEST(Autocast, StateIsPerThreadAndRestoredByGuards) {
  EXPECT_FALSE(autocast_enabled(DeviceType::CPU));
  {
    AutocastGuard guard(Device::cpu(), DType::Float16);
    EXPECT_TRUE(autocast_enabled(DeviceType::CPU));
    EXPECT_FALSE(autocast_enabled(DeviceType::CUDA));
    EXPECT_EQ(autocast_dtype(DeviceType::CPU), DType::Float16);
    DType other_thread = DType::Bool;
    std::thread t([&] {
      Variable a(test::random({2, 2}, DType::Float32, 1));
      other_thread = matmul(a, a).dtype();
    });
    t.join();
    EXPECT_EQ(other_thread, DType::Float32);
    {
      AutocastGuard inner(Device::cpu(), DType::BFloat16);
      EXPECT_EQ(autocast_dtype(DeviceType::CPU), DType::BFloat16);
    }
    EXPECT_EQ(autocast_dtype(DeviceType::CPU), DType::Float16);
  }
  EXPECT_FALSE(autocast_enabled(DeviceType::CPU));
}

TEST(Autocast, RejectsAWideLowPrecision) {
  test::expect_error([] { AutocastGuard g(Device::cpu(), DType::Float32); }, {"AutocastGuard", "float32"});
  test::expect_error([] { AutocastGuard g(Device::cpu(), DType::Int64); }, {"AutocastGuard", "int64"});
  EXPECT_FALSE(autocast_any());  // a guard that threw left nothing behind
}

}  // namespace
}  // namespace wick
