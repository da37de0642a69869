// CUDA normalisation, cross-entropy and optimizer-step kernels against the CPU kernels, on
// the same inputs and layouts. Tolerances: the CPU accumulates float32 statistics in double,
// CUDA in float (two-pass, or shifted sums for rows too long for registers), so float32
// results may differ by a few ulps of the row sums; 1e-4 still catches a dropped or doubled
// element.
#include "tests/support/cuda_compare.h"
#include "tests/tensor/fused_optim_table.h"

namespace wick::test {
namespace {

struct NormTol {
  double rtol, atol;
};
NormTol norm_tol(DType t) {
  switch (t) {
    case DType::Float64: return {1e-10, 1e-10};
    case DType::Float32: return {1e-4, 1e-4};
    default: return {1e-2, 1e-2};
  }
}

const std::vector<DType> kTypes = {DType::Float32, DType::Float64, DType::Float16};

// Runs `make` for each output index k and compares output k.
void expect_outputs_match(const std::string& what, const std::vector<Tensor>& inputs, int outputs,
                          const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& make, NormTol tol) {
  for (int k = 0; k < outputs; ++k)
    expect_cuda_matches_cpu(
        what + " output " + std::to_string(k), inputs, [&](const std::vector<Tensor>& v) { return make(v)[k]; },
        tol.rtol, tol.atol);
}

TEST(CudaNorm, BatchNormForwardAndBackward) {
  WICK_REQUIRE_CUDA();
  for (DType dt : kTypes) {
    for (const Shape& shape : {Shape{8, 3}, Shape{4, 5, 7, 3}, Shape{16, 2, 600}}) {
      for (Layout l : kAllLayouts) {
        for (bool training : {true, false}) {
          const std::string what = std::string(dtype_name(dt)) + " " + shape_str(shape) + " " + layout_name(l) +
                                   (training ? " training" : " eval");
          const int64_t C = shape[1];
          std::vector<Tensor> in = {
              with_layout(random(shape, dt, 1), l), random({C}, dt, 2),  random({C}, dt, 3), random({C}, dt, 4),
              random({C}, dt, 5, 0.5, 2),           random(shape, dt, 6)};
          expect_outputs_match(
              what, in, 8,
              [&](const std::vector<Tensor>& v) {
                Tensor rm = v[3].clone(), rv = v[4].clone();
                NormResult r = batch_norm(v[0], v[1], v[2], rm, rv, training, 0.1, 1e-5);
                NormGrads g = batch_norm_backward(v[5], v[0], v[1], r.mean, r.invstd, training);
                return std::vector<Tensor>{r.out, r.mean, r.invstd, rm, rv, g.input, g.weight, g.bias};
              },
              norm_tol(dt));
        }
      }
    }
  }
}

TEST(CudaNorm, LayerAndGroupNormShortAndLongRows) {
  WICK_REQUIRE_CUDA();
  for (DType dt : kTypes) {
    for (int64_t k : {int64_t{7}, int64_t{3000}}) {
      for (Layout l : kAllLayouts) {
        const std::string what = std::string(dtype_name(dt)) + " k " + std::to_string(k) + " " + layout_name(l);
        std::vector<Tensor> in = {with_layout(random({5, 2, k}, dt, 11), l), random({k}, dt, 12), random({k}, dt, 13),
                                  random({5, 2, k}, dt, 14)};
        expect_outputs_match(
            "layer_norm " + what, in, 6,
            [&](const std::vector<Tensor>& v) {
              NormResult r = layer_norm(v[0], {k}, v[1], v[2]);
              NormGrads g = layer_norm_backward(v[3], v[0], {k}, v[1], r.mean, r.invstd);
              return std::vector<Tensor>{r.out, r.mean, r.invstd, g.input, g.weight, g.bias};
            },
            norm_tol(dt));
        std::vector<Tensor> gin = {with_layout(random({3, 6, k}, dt, 15), l), random({6}, dt, 16), random({6}, dt, 17),
                                   random({3, 6, k}, dt, 18)};
        expect_outputs_match(
            "group_norm " + what, gin, 6,
            [&](const std::vector<Tensor>& v) {
              NormResult r = group_norm(v[0], 3, v[1], v[2]);
              NormGrads g = group_norm_backward(v[3], v[0], 3, v[1], r.mean, r.invstd);
              return std::vector<Tensor>{r.out, r.mean, r.invstd, g.input, g.weight, g.bias};
            },
            norm_tol(dt));
      }
    }
  }
}

const std::vector<DType> kNormDtypes = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

// Layer norm and RMS norm forward and backward (kernels/cuda/layer_norm.cu) against
// the CPU: the statistics, the output and every gradient, with weight and bias, weight only
// and neither. Widths: short (a warp per row), 768 and 1000 (a warp, 16-byte packs), 5000
// (a block per row); every layout, so also rows that start off a 16-byte boundary (Offset)
// or are gathered first (Transposed, Sliced); 7 is not a whole pack in any dtype.
struct AffineCase {
  bool weight, bias;
  const char* name;
};
const std::vector<AffineCase> kAffine = {{true, true, "weight+bias"}, {true, false, "weight"}, {false, false, "plain"}};

// The outputs of layer_norm (rms: rms_norm) and its backward for inputs {x, w, b, dy}, each
// flattened to float64 and joined (one run per device compares them all): out, mean
// (layer norm), invstd, dx, dbias (layer norm), dweight (with a weight).
Tensor norm_outputs(const std::vector<Tensor>& v, const Shape& normalized, const AffineCase& a, bool rms) {
  const Tensor w = a.weight ? v[1] : Tensor(), b = a.bias ? v[2] : Tensor();
  std::vector<Tensor> out;
  if (rms) {
    NormResult r = rms_norm(v[0], normalized, w, 1e-5);
    NormGrads g = rms_norm_backward(v[3], v[0], normalized, w, r.invstd);
    EXPECT_FALSE(r.mean.defined() || g.bias.defined());
    out = {r.out, r.invstd, g.input, g.weight};
  } else {
    NormResult r = layer_norm(v[0], normalized, w, b);
    NormGrads g = layer_norm_backward(v[3], v[0], normalized, w, r.mean, r.invstd);
    out = {r.out, r.mean, r.invstd, g.input, g.bias, g.weight};
  }
  std::vector<Tensor> flat;
  for (const Tensor& t : out)
    if (t.defined()) flat.push_back(t.to(DType::Float64).flatten());
  return cat(flat);
}

void expect_norm_matches(const std::string& what, const Shape& shape, const Shape& normalized, DType dt, Layout l,
                         uint64_t seed) {
  std::vector<Tensor> in = {with_layout(random(shape, dt, seed), l), random(normalized, dt, seed + 1, 0.5, 1.5),
                            random(normalized, dt, seed + 2), random(shape, dt, seed + 3)};
  for (bool rms : {false, true}) {
    for (const AffineCase& a : kAffine) {
      if (rms && a.bias) continue;
      const std::string name = std::string(rms ? "rms_norm " : "layer_norm ") + what + " " + a.name;
      const NormTol tol = norm_tol(dt);
      expect_cuda_matches_cpu(
          name, in, [&](const std::vector<Tensor>& v) { return norm_outputs(v, normalized, a, rms); }, tol.rtol,
          tol.atol);
    }
  }
}

TEST(CudaNorm, LayerAndRmsNormEveryDtypeWidthAndLayout) {
  WICK_REQUIRE_CUDA();
  for (DType dt : kNormDtypes)
    for (int64_t k : {int64_t{7}, int64_t{768}, int64_t{1000}, int64_t{5000}})
      for (Layout l : kAllLayouts)
        expect_norm_matches(std::string(dtype_name(dt)) + " k " + std::to_string(k) + " " + layout_name(l), {5, 2, k},
                            {k}, dt, l, 100);
}

// Rows too long for registers (the loop kernels; the backward's column sums in shared memory
// at 20000 elements, in global memory at 40000), two normalised dims, a whole pack and not
// (40001), and many rows per block (9000 rows: each warp of the backward walks several).
TEST(CudaNorm, LayerAndRmsNormLongRowsAndManyRows) {
  WICK_REQUIRE_CUDA();
  for (DType dt : kNormDtypes) {
    const std::string d = dtype_name(dt);
    for (int64_t k : {int64_t{20000}, int64_t{40000}, int64_t{40001}})
      expect_norm_matches(d + " k " + std::to_string(k), {3, k}, {k}, dt, Layout::Contiguous, 200);
    expect_norm_matches(d + " two dims", {4, 6, 50}, {6, 50}, dt, Layout::Transposed, 300);
    if (dt == DType::Float32 || dt == DType::BFloat16)
      expect_norm_matches(d + " 9000 rows", {9000, 16}, {16}, dt, Layout::Contiguous, 400);
  }
}

TEST(CudaNorm, LayerAndRmsNormEmptyAndGradientMasks) {
  WICK_REQUIRE_CUDA();
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    expect_norm_matches(std::string(dtype_name(dt)) + " no rows", {0, 768}, {768}, dt, Layout::Contiguous, 500);
    // Only the parameter gradients, only dx, or only dbias.
    std::vector<Tensor> in = {random({6, 96}, dt, 510), random({96}, dt, 511), random({96}, dt, 512),
                              random({6, 96}, dt, 513)};
    for (const std::array<bool, 3> mask :
         {std::array<bool, 3>{false, true, true}, {true, false, false}, {false, false, true}}) {
      expect_outputs_match(
          std::string("layer_norm mask ") + dtype_name(dt), in, 1,
          [&](const std::vector<Tensor>& v) {
            NormResult r = layer_norm(v[0], {96}, v[1], v[2]);
            NormGrads g = layer_norm_backward(v[3], v[0], {96}, v[1], r.mean, r.invstd, mask);
            std::vector<Tensor> flat;
            for (const Tensor* t : {&g.input, &g.weight, &g.bias})
              if (t->defined()) flat.push_back(t->to(DType::Float64).flatten());
            return std::vector<Tensor>{cat(flat)};
          },
          norm_tol(dt));
    }
  }
}

// The backward's parameter gradients are sums over the rows in a fixed order: two runs give
// the same bits.
TEST(CudaNorm, LayerNormParameterGradientsAreDeterministic) {
  WICK_REQUIRE_CUDA();
  Tensor x = random({4000, 96}, DType::Float32, 600).cuda(), dy = random({4000, 96}, DType::Float32, 601).cuda();
  Tensor w = random({96}, DType::Float32, 602).cuda();
  NormResult r = layer_norm(x, {96}, w, Tensor());
  NormGrads a = layer_norm_backward(dy, x, {96}, w, r.mean, r.invstd);
  NormGrads b = layer_norm_backward(dy, x, {96}, w, r.mean, r.invstd);
  EXPECT_TRUE(all(eq(a.weight, b.weight)).item<bool>());
  EXPECT_TRUE(all(eq(a.bias, b.bias)).item<bool>());
}

// The differentiable forms over these kernels: LayerNorm and RMSNorm modules' functions
// (layer_norm, rms_norm) with autograd, and rms_norm under create_graph (its backward then
// composed of differentiable ops), on CUDA as on the CPU.
TEST(CudaNorm, LayerAndRmsNormAutogradMatchesCpu) {
  WICK_REQUIRE_CUDA();
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    std::vector<Tensor> in = {random({3, 4, 64}, dt, 700), random({64}, dt, 701, 0.5, 1.5), random({64}, dt, 702),
                              random({3, 4, 64}, dt, 703)};
    for (bool rms : {false, true}) {
      expect_cuda_matches_cpu(
          std::string(rms ? "rms_norm" : "layer_norm") + " autograd " + dtype_name(dt), in,
          [&](const std::vector<Tensor>& v) {
            Variable x(v[0].clone(), true), w(v[1].clone(), true), b(v[2].clone(), true);
            Variable y = rms ? rms_norm(x, {64}, w) : layer_norm(x, {64}, w, b);
            sum(mul(y, Variable(v[3]))).backward();
            std::vector<Tensor> flat = {y.data(), x.grad().data(), w.grad().data()};
            if (!rms) flat.push_back(b.grad().data());
            for (Tensor& t : flat) t = t.to(DType::Float64).flatten();
            return cat(flat);
          },
          norm_tol(dt).rtol, norm_tol(dt).atol);
    }
  }
  std::vector<Tensor> in = {random({2, 16}, DType::Float64, 710), random({16}, DType::Float64, 711)};
  expect_cuda_matches_cpu(
      "rms_norm second derivative", in,
      [&](const std::vector<Tensor>& v) {
        Variable x(v[0].clone(), true), w(v[1].clone(), true);
        Variable y = rms_norm(x, {16}, w);
        std::vector<Variable> g = grad({sum(mul(y, y))}, {x}, {}, true, true);
        sum(mul(g[0], g[0])).backward();
        return cat({x.grad().data().flatten(), w.grad().data().flatten()});
      },
      1e-10, 1e-10);
}

TEST(CudaLoss, CrossEntropyEveryOptionForwardAndBackward) {
  WICK_REQUIRE_CUDA();
  for (DType dt : kTypes) {
    for (const Shape& shape : {Shape{6, 5}, Shape{3, 4, 2, 3}, Shape{4, 2000}}) {
      for (Reduction red : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
        for (Layout l : kAllLayouts) {
          const std::string what = std::string(dtype_name(dt)) + " " + shape_str(shape) + " " + layout_name(l) +
                                   " reduction " + std::to_string(static_cast<int>(red));
          const int64_t C = shape[1];
          Shape pos = shape;
          pos.erase(pos.begin() + 1);
          Tensor target = random(pos, DType::Int64, 21, 0, static_cast<double>(C - 1));
          std::vector<Tensor> in = {with_layout(random(shape, dt, 22, -4, 4), l), target, random({C}, dt, 23, 0.5, 2),
                                    softmax(random(shape, dt, 24), 1)};
          for (bool probs : {false, true}) {
            expect_outputs_match(
                what + (probs ? " probabilities" : " indices"), in, 2,
                [&](const std::vector<Tensor>& v) {
                  CrossEntropyOptions o;
                  o.weight = v[2];
                  o.ignore_index = 1;
                  o.label_smoothing = 0.1;
                  o.reduction = red;
                  const Tensor& t = probs ? v[3] : v[1];
                  CrossEntropyResult r = cross_entropy_forward(v[0], t, o);
                  return std::vector<Tensor>{r.loss, cross_entropy_backward(ones_like(r.loss), v[0], t, r, o)};
                },
                norm_tol(dt));
          }
        }
      }
    }
  }
}

TEST(CudaLoss, OutOfRangeTargetThrows) {
  WICK_REQUIRE_CUDA();
  Tensor x = random({2, 3}, DType::Float32, 31).cuda();
  // Raised at the next wait (cuda_loss_test.cpp has the rest).
  expect_error(
      [&] {
        cross_entropy(x, tensor<int64_t>({0, 7}).cuda()).item<float>();
      },
      {"cross_entropy", "target 7", "out of range for 3 classes"});
}

// Every case of fused_optim_table.h, two steps over one call's lists: the params and every
// state list equal the CPU's.
TEST(CudaOptim, EveryFusedOptimizerOverMixedListsInOneCall) {
  WICK_REQUIRE_CUDA();
  // One tensor spans several chunks of the multi-tensor launch; dtypes are mixed.
  const std::vector<std::pair<Shape, DType>> specs = {
      {{3, 4}, DType::Float32}, {{40000}, DType::Float32}, {{5}, DType::Float64}, {{0}, DType::Float32}};
  std::vector<Tensor> in;  // params and grads, per spec
  for (size_t i = 0; i < specs.size(); ++i)
    for (size_t k = 0; k < 2; ++k) in.push_back(random(specs[i].first, specs[i].second, 40 + 2 * i + k, 0.1, 1));
  for (const FusedCase& c : fused_cases()) {
    expect_cuda_matches_cpu(
        c.name, in,
        [&](const std::vector<Tensor>& v) {
          std::vector<Tensor> p, g;
          FusedLists state;
          for (size_t i = 0; i < specs.size(); ++i) {
            p.push_back(v[2 * i].clone());
            g.push_back(v[2 * i + 1]);
            for (auto& list : state) list.push_back(zeros_like(p.back()));
          }
          for (int step = 1; step <= 2; ++step) fused_step_of(c.hyper(step), p, g, state);
          std::vector<Tensor> flat;
          for (const Tensor& t : p) flat.push_back(t.to(DType::Float64).flatten());
          for (const auto& list : state)
            for (const Tensor& t : list) flat.push_back(t.to(DType::Float64).flatten());
          return cat(flat);
        },
        1e-5, 1e-6);
  }
}

// GradScaler's unscale: values and the flag (as a last element) equal the CPU's, for lists
// mixing dtypes with a tensor spanning chunks, clean and with an inf in the big tensor.
TEST(CudaOptim, UnscaleGradsMatchesCpu) {
  WICK_REQUIRE_CUDA();
  for (bool with_inf : {false, true}) {
    std::vector<Tensor> in = {random({3, 4}, DType::Float32, 80), random({40000}, DType::Float32, 81),
                              random({5}, DType::Float64, 82),    random({7}, DType::BFloat16, 83),
                              random({6}, DType::Float16, 84),    zeros({0})};
    if (with_inf) in[1].narrow(0, 33333, 1).fill_(Scalar(INFINITY));
    expect_cuda_matches_cpu(
        with_inf ? "unscale with inf" : "unscale", in,
        [&](const std::vector<Tensor>& v) {
          std::vector<Tensor> g;
          for (const Tensor& t : v) g.push_back(t.clone());
          Tensor flag = zeros({1}, Options(DType::Float32, g[0].device()));
          unscale_grads_(g, flag, 1.0 / 4096);
          std::vector<Tensor> flat;
          for (const Tensor& t : g) flat.push_back(nan_to_num(t.to(DType::Float64).flatten(), 0.0, 7.0, -7.0));
          flat.push_back(flag.to(DType::Float64));
          return cat(flat);
        },
        1e-6, 1e-9);
  }
}

// Stochastic rounding: the same Philox counters on both devices, so the same bits, for
// random values, ties, signs, an odd length and inf/NaN.
TEST(CudaOptim, StochasticRoundMatchesCpuBitForBit) {
  WICK_REQUIRE_CUDA();
  Tensor x = random({1001}, DType::Float32, 90, -100, 100);
  x.narrow(0, 0, 3).copy_(tensor<float>({INFINITY, -INFINITY, NAN}));
  Generator gc(4), gg(4);
  Tensor cpu_out = empty({1001}, Options(DType::BFloat16));
  stochastic_round_(cpu_out, x, &gc);
  Tensor gpu_out = empty({1001}, Options(DType::BFloat16, Device::cuda()));
  stochastic_round_(gpu_out, x.to(Device::cuda()), &gg);
  Tensor back = gpu_out.to(Device::cpu());
  EXPECT_TRUE(all(eq(back.narrow(0, 3, 998), cpu_out.narrow(0, 3, 998))).item<bool>());
  EXPECT_TRUE(all(eq(back.narrow(0, 0, 2), cpu_out.narrow(0, 0, 2))).item<bool>());
  EXPECT_TRUE(std::isnan(back.narrow(0, 2, 1).to(DType::Float32).item<float>()));
}

}  // namespace
}  // namespace wick::test
