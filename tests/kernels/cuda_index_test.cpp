// CUDA index_select, gather, scatter, scatter_add, index_add and nonzero against the CPU
// kernels: every dim and dtype, non-contiguous inputs and indices, repeated indices, bad
// indices, empty and 0-d tensors.
#include <functional>
#include <set>
#include <utility>

#include "tests/support/cuda_compare.h"
#include "tests/support/cuda_debug.h"

#include <wick/tensor/dispatch.h>

namespace wick::test {
namespace {

const std::vector<DType> kAllTypes = {DType::Bool,    DType::UInt8,    DType::Int32,   DType::Int64,
                                      DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};

// Random int64 indices in [0, size) (repeats likely) of `shape`.
Tensor random_index(const Shape& shape, int64_t size, uint64_t seed) {
  return random(shape, DType::Int64, seed, 0, static_cast<double>(size - 1));
}

// An index of `shape` whose entries along `dim` are distinct within each line, so `=`
// scatters have one writer per element: (i_dim * 7 + line) % size, 7 being prime to size.
Tensor distinct_index(const Shape& shape, int64_t dim, int64_t size) {
  std::vector<int64_t> v(static_cast<size_t>(numel_of(shape)));
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t n = 0; n < v.size(); ++n) {
    int64_t line = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (static_cast<int64_t>(d) != dim) line = line * 3 + idx[d];
    v[n] = (idx[dim] * 7 + line) % size;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return tensor<int64_t>(v, shape);
}

// += with repeated indices adds in a different order on each device: 16-bit floats round
// after every add (on both devices), so they differ by a few units in the last place.
double add_rtol(DType t) { return t == DType::Float16 ? 1e-2 : t == DType::BFloat16 ? 5e-2 : default_rtol(t); }
double add_atol(DType t) { return t == DType::Float16 ? 2e-2 : t == DType::BFloat16 ? 0.15 : 1e-5; }

TEST(CudaIndex, IndexSelectEveryDimDTypeAndLayout) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 1;
  const Shape shape = {5, 17, 33};
  for (DType t : kAllTypes) {
    for (Layout l : kAllLayouts) {
      const Tensor x = with_layout(random(shape, t, seed++), l);
      for (int64_t dim = 0; dim < 3; ++dim) {
        for (int64_t len : {int64_t{7}, int64_t{1}, int64_t{0}}) {
          const Tensor index = random_index({len}, shape[dim], seed++);
          expect_cuda_matches_cpu(std::string("index_select ") + dtype_name(t) + " " + layout_name(l) + " dim " +
                                      std::to_string(dim) + " len " + std::to_string(len),
                                  {x, index},
                                  [&](const std::vector<Tensor>& in) { return index_select(in[0], dim, in[1]); });
        }
      }
    }
  }
  const Tensor big = random({100003}, DType::Float32, 2);
  expect_cuda_matches_cpu("index_select long", {big, random_index({5000}, 100003, 3).to(DType::Int32)},
                          [](const std::vector<Tensor>& in) { return index_select(in[0], 0, in[1]); });
  expect_cuda_matches_cpu("index_select 0-d", {scalar_tensor(2.5), tensor<int64_t>({0})},
                          [](const std::vector<Tensor>& in) { return index_select(in[0], 0, in[1]); });
  EXPECT_EQ(checks.violations(), 0u);
}

TEST(CudaIndex, GatherEveryDimDTypeAndLayout) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 100;
  const Shape shape = {5, 17, 33};
  for (DType t : kAllTypes) {
    for (Layout l : kAllLayouts) {
      const Tensor x = with_layout(random(shape, t, seed++), l);
      for (int64_t dim = 0; dim < 3; ++dim) {
        // The index may be smaller than x in every dim, and longer along dim.
        Shape is = {4, 9, 30};
        is[dim] = 41;
        const Tensor index = with_layout(random_index(is, shape[dim], seed++), l);
        expect_cuda_matches_cpu(std::string("gather ") + dtype_name(t) + " " + layout_name(l) + " dim " +
                                    std::to_string(dim),
                                {x, index}, [&](const std::vector<Tensor>& in) { return gather(in[0], dim, in[1]); });
      }
    }
  }
  expect_cuda_matches_cpu("gather empty", {random(shape, DType::Float32, 1), zeros({5, 0, 33}, DType::Int64)},
                          [](const std::vector<Tensor>& in) { return gather(in[0], 1, in[1]); });
  expect_cuda_matches_cpu("gather 0-d", {scalar_tensor(2.5), scalar_tensor(0, DType::Int64)},
                          [](const std::vector<Tensor>& in) { return gather(in[0], 0, in[1]); });
  EXPECT_EQ(checks.violations(), 0u);
}

// One writer per element: CUDA must match the CPU exactly, for every dtype and dim.
TEST(CudaIndex, ScatterDistinctIndices) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 200;
  const Shape shape = {5, 17, 33};
  for (DType t : kAllTypes) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      Shape is = {4, 9, 30};
      is[dim] = std::min<int64_t>(shape[dim], 4);
      for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Sliced}) {
        const Tensor self = random(shape, t, seed++);
        const Tensor index = with_layout(distinct_index(is, dim, shape[dim]), l);
        const Tensor src = with_layout(random({5, 17, 33}, t, seed++), l);  // larger than index
        expect_cuda_matches_cpu(std::string("scatter ") + dtype_name(t) + " dim " + std::to_string(dim) + " " +
                                    layout_name(l),
                                {self, index, src},
                                [&](const std::vector<Tensor>& in) { return scatter(in[0], dim, in[1], in[2]); });
        expect_cuda_matches_cpu(std::string("scatter value ") + dtype_name(t) + " dim " + std::to_string(dim),
                                {self, index}, [&](const std::vector<Tensor>& in) {
                                  return scatter(in[0], dim, in[1], Scalar(1));
                                });
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// With repeated indices one of the writes wins: every element holds its old value (no
// writer) or the value of one of its writers.
TEST(CudaIndex, ScatterRepeatedIndicesKeepsOneWriter) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  const Tensor self = random({6, 9}, DType::Float32, 1);
  const Tensor index = random_index({6, 40}, 9, 2);
  const Tensor src = random({6, 40}, DType::Float32, 3);
  Tensor out = scatter(self.cuda(), 1, index.cuda(), src.cuda());
  const auto got = values(out), old = values(self), iv = values(index), sv = values(src);
  for (int64_t r = 0; r < 6; ++r) {
    for (int64_t c = 0; c < 9; ++c) {
      std::set<double> writers;
      for (int64_t j = 0; j < 40; ++j)
        if (iv[r * 40 + j] == c) writers.insert(sv[r * 40 + j]);
      const double g = got[r * 9 + c];
      if (writers.empty()) EXPECT_EQ(g, old[r * 9 + c]) << r << "," << c;
      else EXPECT_TRUE(writers.count(g)) << r << "," << c << ": " << g << " was written by no one";
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

TEST(CudaIndex, ScatterAddAndIndexAddRepeatedIndices) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 300;
  const Shape shape = {5, 17, 33};
  for (DType t : kAllTypes) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      Shape is = {4, 9, 30};
      is[dim] = 2 * shape[dim] + 1;  // about two adds per element along dim
      const Tensor self = random(shape, t, seed++);
      const Tensor index = random_index(is, shape[dim], seed++);
      Shape ss = is;
      ss[0] += 1;  // src larger than the index
      const Tensor src = with_layout(random(ss, t, seed++), Layout::Transposed);
      expect_cuda_matches_cpu(std::string("scatter_add ") + dtype_name(t) + " dim " + std::to_string(dim),
                              {self, index, src},
                              [&](const std::vector<Tensor>& in) { return scatter_add(in[0], dim, in[1], in[2]); },
                              add_rtol(t), add_atol(t));
      Shape as = shape;
      as[dim] = 11;
      const Tensor src2 = with_layout(random(as, t, seed++), Layout::Sliced);
      const Tensor index2 = random_index({11}, shape[dim], seed++);
      expect_cuda_matches_cpu(std::string("index_add ") + dtype_name(t) + " dim " + std::to_string(dim),
                              {self, index2, src2},
                              [&](const std::vector<Tensor>& in) { return index_add(in[0], dim, in[1], in[2]); },
                              add_rtol(t), add_atol(t));
    }
  }
  // Heavy contention: a million adds into 17 elements. Small integers add exactly in
  // float32, so the order of the atomics cannot matter.
  const int64_t n = int64_t{1} << 20;
  for (DType t : {DType::Float32, DType::Int64, DType::Int32, DType::Float64}) {
    const Tensor src = random({n}, DType::Int32, 4, -8, 8).to(t);
    expect_cuda_matches_cpu(std::string("contended scatter_add ") + dtype_name(t),
                            {zeros({17}, t), random_index({n}, 17, 5), src},
                            [](const std::vector<Tensor>& in) { return scatter_add(in[0], 0, in[1], in[2]); }, 0, 0);
  }
  // uint8 wraps around, bool adds as or.
  expect_cuda_matches_cpu("uint8 wraps", {full({3}, 250, DType::UInt8), tensor<int64_t>({0, 0, 1, 2, 2, 2}),
                                          full({6}, 3, DType::UInt8)},
                          [](const std::vector<Tensor>& in) { return scatter_add(in[0], 0, in[1], in[2]); });
  EXPECT_EQ(checks.violations(), 0u);
}

// Bad indices: the CPU kernel's message naming the op and the value, raised at the host's
// next wait (no op synchronises: a training step's embedding must not), and no memory
// touched out of bounds (the allocation guard zones stay intact).
TEST(CudaIndex, OutOfRangeIndicesAreRaisedAtTheNextWait) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  const Options f32(DType::Float32, Device::cuda());
  const Tensor x = zeros({3, 5}, f32);
  for (int64_t bad : {int64_t{5}, int64_t{-1}, int64_t{1} << 40}) {
    const std::string v = std::to_string(bad);
    const Tensor index = tensor<int64_t>({0, bad, 1, 2, 0, 1}, {3, 2}).cuda();
    const Tensor line = tensor<int64_t>({0, bad}).cuda();
    const std::vector<std::pair<std::string, std::function<void()>>> ops = {
        {"gather", [&] { (void)gather(x, 1, index); }},
        {"scatter", [&] { (void)scatter(x, 1, index, ones({3, 2}, f32)); }},
        {"scatter_add", [&] { (void)scatter_add(x, 1, index, ones({3, 2}, f32)); }},
        {"index_select", [&] { (void)index_select(x, 1, line); }},
        {"index_add", [&] { (void)index_add(x, 1, line, ones({3, 2}, f32)); }},
        // embedding is index_select's kernel on the weight's rows; the message names that.
        {"index_select", [&] { (void)embedding(x, line.reshape({1, 2})); }},
    };
    for (const auto& [name, op] : ops) {
      SCOPED_TRACE(name + " with index " + v);
      EXPECT_NO_THROW(op());  // no wait, no error yet
      expect_error([] { cuda::synchronize(); }, {name, v, "out of bounds", "with size"});
      EXPECT_NO_THROW(cuda::synchronize());  // reported once, then cleared
    }
  }
  // The device is still healthy, and nothing was written past an allocation.
  EXPECT_EQ(sum(ones({10}, f32)).item<float>(), 10.0f);
  EXPECT_EQ(checks.violations(), 0u);
}

TEST(CudaIndex, NonzeroEveryDTypeAndSize) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 400;
  for (DType t : kAllTypes) {
    for (const Shape& s : {Shape{}, Shape{0}, Shape{1}, Shape{17}, Shape{5, 17, 33}, Shape{3, 1, 4, 1, 5},
                           Shape{(int64_t{1} << 20) + 3}}) {
      for (double density : {0.5, 0.01}) {
        // Zeros where a uniform draw exceeds the density.
        const Tensor u = random(s, DType::Float64, seed++, 0, 1);
        const Tensor v = random(s, t, seed++, 1, 3);
        std::vector<double> vals = values(v), us = values(u);
        for (size_t i = 0; i < vals.size(); ++i)
          if (us[i] > density) vals[i] = 0;
        const Tensor x = tensor<double>(vals, s).to(t);
        for (Layout l : {Layout::Contiguous, Layout::Transposed}) {
          if (l != Layout::Contiguous && numel_of(s) > 100000) continue;
          expect_cuda_matches_cpu(std::string("nonzero ") + dtype_name(t) + " " + shape_str(s) + " density " +
                                      std::to_string(density) + " " + layout_name(l),
                                  {with_layout(x, l)}, [](const std::vector<Tensor>& in) { return nonzero(in[0]); });
        }
      }
    }
  }
  // -0 is zero, NaN is not.
  const Tensor special = tensor<float>({0.0f, -0.0f, NAN, 1.0f, -0.0f, INFINITY});
  expect_cuda_matches_cpu("nonzero -0 and NaN", {special}, [](const std::vector<Tensor>& in) { return nonzero(in[0]); });
  expect_cuda_matches_cpu("nonzero 0-d zero", {scalar_tensor(0.0)},
                          [](const std::vector<Tensor>& in) { return nonzero(in[0]); });
  EXPECT_EQ(checks.violations(), 0u);
}

}  // namespace
}  // namespace wick::test
