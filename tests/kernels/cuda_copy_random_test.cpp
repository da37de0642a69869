// CUDA copy, fill, sequence and random kernels against the CPU ones, with the allocator's
// checks on (unwritten outputs read as NaN / -1, overruns are counted).
#include "tests/support/cuda_compare.h"
#include "tests/support/cuda_debug.h"
#include "tests/support/dtype_sets.h"

#include <wick/tensor/dispatch.h>

namespace wick::test {
namespace {

std::string copy_dtype_name(DType t) { return dtype_name(t); }

// An input shape and the shape it is expanded to (equal unless broadcasting).
struct CopyShapeCase {
  Shape in, out;
};
const std::vector<CopyShapeCase> kCopyShapes = {
    {{}, {}}, {{0}, {0}}, {{1}, {1}}, {{3, 17}, {3, 17}}, {{2, 3, 5}, {2, 3, 5}},
    {{1, 17}, {3, 17}},      // broadcast along dim 0 (stride 0)
    {{4, 1}, {4, 6}},        // broadcast along the inner dim
    {{}, {2, 3}},            // a 0-d value everywhere
    {{5, 0, 2}, {5, 0, 2}},  // empty in the middle
};

TEST(CudaCopy, EveryDTypePairLayoutAndShape) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  {
    for (DType from : kAllDTypes) {
      for (DType to : kAllDTypes) {
        for (const CopyShapeCase& sc : kCopyShapes) {
          for (Layout in_layout : kAllLayouts) {
            for (Layout out_layout : {Layout::Contiguous, Layout::Transposed, Layout::Sliced}) {
              // Every input layout into a contiguous out, a contiguous input into the others.
              if (in_layout != Layout::Contiguous && out_layout != Layout::Contiguous) continue;
              Tensor src = with_layout(random(sc.in, from, 11, -100, 100), in_layout);
              expect_cuda_matches_cpu(copy_dtype_name(from) + " -> " + copy_dtype_name(to) + " " + shape_str(sc.in) + " -> " +
                                          shape_str(sc.out) + " in " + layout_name(in_layout) + ", out " +
                                          layout_name(out_layout),
                                      {src}, [&](const std::vector<Tensor>& in) {
                                        Tensor out = empty_with_layout(sc.out, Options(to, in[0].device()), out_layout);
                                        out.copy_(in[0]);
                                        return out;
                                      });
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

TEST(CudaCopy, LargeOddSizesTakeEveryPath) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  {
    // Same dtype (memcpy), conversions (vectorised), offset starts (unaligned), transposes
    // and broadcasts (strided), at a size that is no multiple of any vector width.
    const std::vector<std::pair<DType, DType>> pairs = {{DType::Float32, DType::Float32}, {DType::Float32, DType::Float16},
                                                        {DType::BFloat16, DType::Float64}, {DType::Int64, DType::Int32},
                                                        {DType::Bool, DType::Float32},    {DType::UInt8, DType::UInt8}};
    for (auto [from, to] : pairs) {
      for (Layout l : kAllLayouts) {
        Tensor src = with_layout(random({1000003}, from, 5, -1000, 1000), l);
        expect_cuda_matches_cpu(copy_dtype_name(from) + " -> " + copy_dtype_name(to) + " 1000003 " + layout_name(l), {src},
                                [&](const std::vector<Tensor>& in) { return in[0].to(to); });
        Tensor m = with_layout(random({1001, 999}, from, 6, -1000, 1000), l);
        expect_cuda_matches_cpu(copy_dtype_name(from) + " -> " + copy_dtype_name(to) + " [1001, 999] " + layout_name(l), {m},
                                [&](const std::vector<Tensor>& in) {
                                  Tensor out = empty({999, 1001}, Options(to, in[0].device()));
                                  out.copy_(in[0].t());
                                  return out;
                                });
      }
      Tensor row = random({1, 4099}, from, 7, -1000, 1000);
      expect_cuda_matches_cpu(copy_dtype_name(from) + " -> " + copy_dtype_name(to) + " broadcast rows", {row},
                              [&](const std::vector<Tensor>& in) {
                                Tensor out = empty({257, 4099}, Options(to, in[0].device()));
                                out.copy_(in[0]);
                                return out;
                              });
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

TEST(CudaCopy, EveryDTypePairAcrossHostAndDevice) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  {
    for (DType from : kAllDTypes) {
      for (DType to : kAllDTypes) {
        SCOPED_TRACE(copy_dtype_name(from) + " -> " + copy_dtype_name(to));
        Tensor src = random({3, 17}, from, 2, -100, 100);
        const std::vector<double> expected = values(src.to(to));
        Tensor up = src.to(Options(to, Device::cuda()));
        EXPECT_TRUE(matches(up, {3, 17}, to, expected));
        EXPECT_TRUE(matches(up.to(Device::cpu()), {3, 17}, to, expected));
        Tensor up_t = with_layout(src, Layout::Transposed).to(Options(to, Device::cuda()));
        EXPECT_TRUE(matches(up_t.to(Options(from, Device::cpu())), {3, 17}, from, values(src.to(to).to(from))));
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

TEST(CudaFill, EveryDTypeLayoutAndValue) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  {
    // -1 and 0 fill all bytes alike (the memset path); 7 is written first so that a fill
    // that does nothing cannot pass on the allocator's 0xFF bytes.
    const std::vector<Scalar> fills = {Scalar(0), Scalar(-1), Scalar(2.5), Scalar(true), Scalar(255), Scalar(-1e5)};
    for (DType t : kAllDTypes) {
      for (const Scalar& v : fills) {
        // A value that overflows the dtype is refused on every device (fill_'s check).
        bool fits = true;
        try {
          check_fits("fill_", v, t);
        } catch (const Error&) {
          fits = false;
        }
        if (!fits) {
          expect_error([&] { zeros({2}, Options(t, Device::cuda(0))).fill_(v); }, {"fill_", "overflow"});
          continue;
        }
        for (const Shape& shape : std::vector<Shape>{{}, {0}, {3, 17}, {1000003}}) {
          for (Layout l : kAllLayouts) {
            if (numel_of(shape) > 1000 && l != Layout::Contiguous && l != Layout::Offset) continue;
            expect_cuda_matches_cpu(copy_dtype_name(t) + " fill " + std::to_string(v.to_double()) + " " + shape_str(shape) +
                                        " " + layout_name(l),
                                    {zeros({1}, t)}, [&](const std::vector<Tensor>& in) {
                                      Tensor out = empty_with_layout(shape, Options(t, in[0].device()), l);
                                      out.fill_(7);
                                      out.fill_(v);
                                      return out;
                                    });
          }
        }
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

TEST(CudaSequence, EveryDType) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  {
    for (DType t : kAllDTypes) {
      for (int64_t n : {0, 1, 17, 1000003}) {
        for (auto [start, step] : std::vector<std::pair<double, double>>{{0, 1}, {-3.5, 0.25}, {10, -1}}) {
          if (n > 17 && t != DType::Float32 && t != DType::Int64) continue;
          expect_cuda_matches_cpu(copy_dtype_name(t) + " sequence " + std::to_string(n) + " from " + std::to_string(start) +
                                      " by " + std::to_string(step),
                                  {zeros({1}, t)}, [&](const std::vector<Tensor>& in) {
                                    Tensor out = empty({n}, Options(t, in[0].device()));
                                    kernels(out.device()).sequence(out, start, step);
                                    return out;
                                  });
        }
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// The same Philox counters give the same numbers on both devices: bit for bit for uniform,
// randint and bernoulli (the arithmetic is exact or an explicit fma), and within a few ulps
// for normal (log and cos differ between the host and device math libraries).
TEST(CudaRandom, PhiloxMatchesTheCpu) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  {
    struct Draw {
      RandomKind kind;
      double a, b;
      const char* name;
    };
    const std::vector<Draw> draws = {{RandomKind::Uniform, -2.0, 3.0, "uniform"},
                                     {RandomKind::Normal, 0.5, 2.0, "normal"},
                                     {RandomKind::RandInt, -5, 1000, "randint"},
                                     {RandomKind::Bernoulli, 0.3, 0.0, "bernoulli"}};
    for (const Draw& d : draws) {
      for (DType t : kAllDTypes) {
        if (d.kind == RandomKind::Normal && !is_floating(t)) continue;  // truncation would amplify ulps
        for (int64_t n : {0, 1, 100003}) {
          for (PhiloxState st : {PhiloxState{42, 0}, PhiloxState{0xDEADBEEFCAFEull, 1234567}}) {
            SCOPED_TRACE(std::string(d.name) + " " + copy_dtype_name(t) + " n=" + std::to_string(n) +
                         " offset=" + std::to_string(st.offset));
            Tensor cpu = empty({n}, t);
            kernels(Device::cpu()).random(cpu, d.kind, d.a, d.b, st);
            Tensor gpu = empty({n}, Options(t, Device::cuda()));
            kernels(gpu.device()).random(gpu, d.kind, d.a, d.b, st);
            if (d.kind == RandomKind::Normal) {
              const double tol = t == DType::Float64 ? 1e-13 : default_rtol(t);
              EXPECT_TRUE(all_close(values(gpu), values(cpu), tol, tol));
            } else {
              EXPECT_EQ(values(gpu), values(cpu));
            }
          }
        }
      }
    }
    // Through the factories and a generator: same seed, same numbers.
    Generator g1(123), g2(123);
    EXPECT_EQ(values(rand({1001}, Options(DType::Float32, Device::cuda()), &g1)), values(rand({1001}, {}, &g2)));
    EXPECT_EQ(values(randint(0, 10, {77}, Options(DType::Int64, Device::cuda()), &g1)),
              values(randint(0, 10, {77}, DType::Int64, &g2)));
  }
  EXPECT_EQ(checks.violations(), 0u);
}

}  // namespace
}  // namespace wick::test
