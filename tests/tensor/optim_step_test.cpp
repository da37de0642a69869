// The multi-tensor SGD and Adam/AdamW steps against the update rules written out per
// element in double, over several steps and lists mixing dtypes and shapes.
#include <cmath>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

// Params of two dtypes and shapes (one list, as an optimizer group would pass them).
struct Lists {
  std::vector<Tensor> p, g, a, b;
};

Lists make_lists(uint64_t seed) {
  Lists l;
  const std::vector<std::pair<Shape, DType>> specs = {
      {{3, 4}, DType::Float32}, {{5}, DType::Float64}, {{0}, DType::Float32}};
  for (const auto& [shape, dt] : specs) {
    l.p.push_back(random(shape, dt, seed++));
    l.g.push_back(random(shape, dt, seed++));
    l.a.push_back(zeros(shape, dt));
    l.b.push_back(zeros(shape, dt));
  }
  return l;
}

double tolerance(const Tensor& t) { return t.dtype() == DType::Float64 ? 1e-12 : 2e-6; }

TEST(SgdStep, EveryOptionOverSeveralSteps) {
  struct Opt {
    double momentum, dampening, wd;
    bool nesterov;
  };
  for (const Opt& o : {Opt{0, 0, 0, false}, Opt{0, 0, 0.1, false}, Opt{0.9, 0, 0, false}, Opt{0.9, 0.3, 0.01, false},
                       Opt{0.8, 0, 0.05, true}}) {
    SCOPED_TRACE("momentum " + std::to_string(o.momentum) + " nesterov " + std::to_string(o.nesterov));
    Lists l = make_lists(1);
    std::vector<std::vector<double>> p, buf;
    for (const Tensor& t : l.p) p.push_back(values(t)), buf.push_back(std::vector<double>(t.numel()));
    for (int step = 1; step <= 3; ++step) {
      SgdHyper h{0.1, o.momentum, o.dampening, o.wd, o.nesterov, step == 1};
      // grads change between steps; the second is given transposed (read, not written).
      std::vector<Tensor> grads = l.g;
      for (Tensor& g : grads) g = mul(g, static_cast<double>(step));
      grads[0] = with_layout(grads[0], Layout::Transposed);
      sgd_step(l.p, grads, l.a, h);
      for (size_t t = 0; t < p.size(); ++t) {
        const std::vector<double> g = values(grads[t]);
        for (size_t i = 0; i < p[t].size(); ++i) {
          double d = g[i] + o.wd * p[t][i];
          if (o.momentum != 0) {
            buf[t][i] = step == 1 ? d : o.momentum * buf[t][i] + (1 - o.dampening) * d;
            d = o.nesterov ? d + o.momentum * buf[t][i] : buf[t][i];
          }
          p[t][i] -= 0.1 * d;
        }
        EXPECT_TRUE(matches(l.p[t], l.p[t].shape(), l.p[t].dtype(), p[t], tolerance(l.p[t]), tolerance(l.p[t])));
        if (o.momentum != 0) EXPECT_TRUE(matches(l.a[t], l.a[t].shape(), l.a[t].dtype(), buf[t], 1e-5, 1e-6));
      }
    }
  }
}

TEST(AdamStep, AdamAndAdamWOverSeveralSteps) {
  for (bool decoupled : {true, false}) {
    SCOPED_TRACE(decoupled ? "AdamW" : "Adam");
    Lists l = make_lists(20);
    std::vector<std::vector<double>> p, m, v;
    for (const Tensor& t : l.p) {
      p.push_back(values(t));
      m.push_back(std::vector<double>(t.numel()));
      v.push_back(std::vector<double>(t.numel()));
    }
    const double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.1;
    for (int step = 1; step <= 4; ++step) {
      std::vector<Tensor> grads;
      for (const Tensor& g : l.g) grads.push_back(add(g, static_cast<double>(step) * 0.5));
      adam_step(l.p, grads, l.a, l.b, {lr, b1, b2, eps, wd, step, decoupled});
      for (size_t t = 0; t < p.size(); ++t) {
        const std::vector<double> g0 = values(grads[t]);
        for (size_t i = 0; i < p[t].size(); ++i) {
          double g = g0[i];
          if (decoupled)
            p[t][i] *= 1 - lr * wd;
          else
            g += wd * p[t][i];
          m[t][i] = b1 * m[t][i] + (1 - b1) * g;
          v[t][i] = b2 * v[t][i] + (1 - b2) * g * g;
          const double mhat = m[t][i] / (1 - std::pow(b1, step)), vhat = v[t][i] / (1 - std::pow(b2, step));
          p[t][i] -= lr * mhat / (std::sqrt(vhat) + eps);
        }
        EXPECT_TRUE(matches(l.p[t], l.p[t].shape(), l.p[t].dtype(), p[t], tolerance(l.p[t]), tolerance(l.p[t])));
        EXPECT_TRUE(matches(l.a[t], l.a[t].shape(), l.a[t].dtype(), m[t], 1e-5, 1e-7));
        EXPECT_TRUE(matches(l.b[t], l.b[t].shape(), l.b[t].dtype(), v[t], 1e-5, 1e-7));
      }
    }
  }
}

TEST(OptimStep, EmptyListsAndNoMomentumBuffers) {
  sgd_step({}, {}, {}, {0.1});
  adam_step({}, {}, {}, {}, {});
  Tensor p = tensor<float>({1, 2}), g = tensor<float>({1, -1});
  sgd_step({p}, {g}, {}, {0.5});
  EXPECT_TRUE(matches(p, {2}, DType::Float32, {0.5, 2.5}));
}

TEST(OptimStep, RejectsMisuse) {
  Tensor p = zeros({2, 3}), g = zeros({2, 3});
  expect_error([&] { sgd_step({p}, {g, g}, {}, {0.1}); }, {"sgd_step", "grads has 2 tensors", "params has 1"});
  expect_error([&] { sgd_step({p}, {zeros({3, 2})}, {}, {0.1}); }, {"sgd_step", "grads[0] is [3, 2]", "[2, 3]"});
  expect_error([&] { sgd_step({p}, {g}, {}, {0.1, 0.9}); }, {"sgd_step", "momentum_buffers has 0 tensors"});
  expect_error([&] { sgd_step({p.t()}, {g.t()}, {}, {0.1}); }, {"sgd_step", "params[0]", "must be contiguous"});
  expect_error([&] { sgd_step({zeros({2}, DType::Int64)}, {zeros({2}, DType::Int64)}, {}, {0.1}); },
               {"sgd_step", "int64", "floating point"});
  expect_error([&] { sgd_step({p}, {g}, {}, {0.1, 0, 0, 0, true}); }, {"sgd_step", "nesterov"});
  expect_error(
      [&] {
        adam_step({p}, {g}, {zeros({2, 3})}, {zeros({2, 3}).t().contiguous().t()}, {});
      },
      {"adam_step", "exp_avg_sq[0]", "contiguous"});
  AdamHyper h;
  h.step = 0;
  expect_error([&] { adam_step({p}, {g}, {zeros({2, 3})}, {zeros({2, 3})}, h); }, {"adam_step", "step counts from 1"});
  expect_error(
      [&] {
        adam_step({p}, {g}, {zeros({2, 3}, DType::Float64)}, {zeros({2, 3})}, {});
      },
      {"adam_step", "exp_avg[0]", "float64"});
}

}  // namespace
}  // namespace wick::test
