// CUDA unary, binary and where kernels against the CPU ones, called through the kernel
// table (so that non-contiguous and in-place outputs are exercised too) and, for the binary
// table's rows, through the entry points, with the allocator's checks on: unwritten outputs
// read as NaN / -1 and overruns are counted.
#include <array>

#include "tests/autograd/binary_table.h"
#include "tests/support/cuda_compare.h"
#include "tests/support/cuda_debug.h"
#include "tests/support/row_params.h"

#include <wick/tensor/dispatch.h>

namespace wick::test {
namespace {

// Every unary kernel op (wick/tensor/op_kinds.h): a new op is compared without being listed. (The
// binary ops come from the binary table, whose coverage test asks for a row per op.)
std::vector<UnaryOp> every_unary_op() {
  std::vector<UnaryOp> ops;
  for (int i = 0; i < kNumUnaryOps; ++i) ops.push_back(static_cast<UnaryOp>(i));
  return ops;
}
const std::vector<UnaryOp> kUnaryOps = every_unary_op();

// An output shape with the shapes its inputs broadcast from.
struct ShapeCase {
  Shape out, a, b;
};
const std::vector<ShapeCase> kShapes = {
    {{}, {}, {}},                    // 0-d
    {{0}, {0}, {0}},                 // empty
    {{1}, {1}, {1}},
    {{3, 17}, {3, 17}, {3, 17}},
    {{2, 3, 5}, {2, 3, 5}, {2, 3, 5}},
    {{3, 4, 5}, {3, 1, 5}, {1, 4, 5}},  // broadcast on both sides
    {{2, 3}, {2, 3}, {}},            // a 0-d operand
    {{4, 0, 2}, {4, 1, 2}, {4, 0, 2}},  // empty after broadcasting
    // Broadcasts over rows a multiple of every pack wide (the packed rows kernel when the
    // layouts allow): a bias add, a value per row, a 0-d operand, an outer broadcast.
    {{3, 16}, {3, 16}, {16}},
    {{4, 8}, {4, 1}, {4, 8}},
    {{5, 8}, {5, 8}, {}},
    {{2, 3, 8}, {3, 8}, {2, 1, 1}},
};

std::string name_of(DType t) { return dtype_name(t); }

// The kernel slots, called directly; a slot nobody filled yet throws instead of crashing.
void run_unary(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryParams& p) {
  kernel_for(&KernelTable::unary, unary_op_name(op), out.device())(op, out, in, p);
}
void run_binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  kernel_for(&KernelTable::binary, binary_op_name(op), out.device())(op, out, a, b);
}
void run_where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  kernel_for(&KernelTable::where, "where", out.device())(out, cond, a, b);
}

// Runs `op` on CPU and on CUDA and compares. When the CPU kernel rejects the dtype, the CUDA
// kernel must reject it too; returns false then, so callers can skip the dtype's other cases.
bool check(const std::string& what, DType t, const std::vector<Tensor>& inputs, const OpFn& op, double rtol = -1,
           double atol = -1) {
  try {
    op(inputs);
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.find("no cpu kernel for dtype") == std::string::npos) {
      ADD_FAILURE() << what << ": the CPU kernel threw: " << msg;
      return false;
    }
    SCOPED_TRACE(what);
    std::vector<Tensor> on_gpu;
    for (const Tensor& x : inputs) on_gpu.push_back(same_layout_on(x, Device::cuda()));
    expect_error([&] { op(on_gpu); }, {"no cuda kernel for dtype", dtype_name(t)});
    return false;
  }
  expect_cuda_matches_cpu(what, inputs, op, rtol, atol);
  return true;
}

// Values for an op's inputs: within its domain, and for floats with the awkward ones
// (NaN, infinities, signed zeros, halves for round) appended to a separate case.
double lo_for(UnaryOp op) {
  switch (op) {
    case UnaryOp::Log: case UnaryOp::Sqrt: case UnaryOp::Rsqrt: case UnaryOp::Log2: case UnaryOp::Log10: return 0.05;
    case UnaryOp::Acosh: return 1.0;
    case UnaryOp::Asin: case UnaryOp::Acos: case UnaryOp::Atanh: return -0.99;  // above 1: NaN on both devices
    case UnaryOp::Log1p: return -0.9;
    default: return -4;
  }
}

UnaryParams params_for(UnaryOp op) {
  switch (op) {
    case UnaryOp::Clamp: return {-1.0, 1.5};
    case UnaryOp::LeakyRelu: return {0.1, 0.0};
    case UnaryOp::Softplus: return {2.0, 5.0};
    default: return {};
  }
}

Tensor specials(DType t) {
  return tensor<double>({NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5, 1e-30, 30.0, -30.0, 88.0},
                        {14})
      .to(t);
}

// One gtest instance per unary kernel op (Rows/CudaUnary.EveryDTypeShapeAndLayout/expm1).
std::vector<RowParam> unary_op_params() {
  std::vector<RowParam> params;
  for (UnaryOp op : kUnaryOps) params.push_back({static_cast<size_t>(op), DType::Float32, 0, name_part(unary_op_name(op))});
  return params;
}

class CudaUnary : public testing::TestWithParam<RowParam> {};

TEST_P(CudaUnary, EveryDTypeShapeAndLayout) {
  WICK_REQUIRE_CUDA();
  const UnaryOp op = static_cast<UnaryOp>(GetParam().row);
  AllocationChecks checks;
  {
    const UnaryParams p = params_for(op);
    for (DType t : kAllDTypes) {
      const DType out_t = op == UnaryOp::LogicalNot ? DType::Bool : t;
      auto run = [&, op, p](const Shape& shape, Layout out_layout) {
        return [=](const std::vector<Tensor>& in) {
          Tensor out = empty_with_layout(shape, Options(out_t, in[0].device()), out_layout);
          run_unary(op, out, in[0], p);
          return out;
        };
      };
      const std::string base = std::string(unary_op_name(op)) + " " + name_of(t) + " ";
      if (!check(base + "probe", t, {random({3}, t, 1, lo_for(op), 4.0)}, run({3}, Layout::Contiguous))) continue;
      for (const ShapeCase& sc : kShapes) {
        Tensor x = random(sc.a, t, 17, lo_for(op), 4.0).expand(sc.out);
        for (Layout l : kAllLayouts)
          check(base + shape_str(sc.out) + " in " + layout_name(l), t, {with_layout(x, l)}, run(sc.out, Layout::Contiguous));
        check(base + shape_str(sc.out) + " expanded", t, {x}, run(sc.out, Layout::Contiguous));
        for (Layout l : {Layout::Transposed, Layout::Sliced, Layout::Offset})
          check(base + shape_str(sc.out) + " out " + layout_name(l), t, {x}, run(sc.out, l));
      }
      // In place: out is the input.
      check(base + "in place, transposed", t, {random({5, 7}, t, 3, lo_for(op), 4.0)},
            [=](const std::vector<Tensor>& in) {
              Tensor x = empty_with_layout({5, 7}, Options(t, in[0].device()), Layout::Transposed);
              x.copy_(in[0]);
              if (out_t == t) {
                run_unary(op, x, x, p);
                return x;
              }
              Tensor out = empty({5, 7}, Options(out_t, x.device()));
              run_unary(op, out, x, p);
              return out;
            });
      if (is_floating(t)) check(base + "special values", t, {specials(t)}, run({14}, Layout::Contiguous));
    }
    // A large odd size takes the vectorised path with a tail, and the unaligned one.
    for (DType t : {DType::Float32, DType::Float16}) {
      const DType out_t = op == UnaryOp::LogicalNot ? DType::Bool : t;
      for (Layout l : {Layout::Contiguous, Layout::Offset}) {
        check(std::string(unary_op_name(op)) + " " + name_of(t) + " 1000003 " + layout_name(l), t,
              {with_layout(random({1000003}, t, 8, lo_for(op), 4.0), l)}, [=](const std::vector<Tensor>& in) {
                Tensor out = empty({1000003}, Options(out_t, in[0].device()));
                run_unary(op, out, in[0], p);
                return out;
              });
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Rows, CudaUnary, testing::ValuesIn(unary_op_params()), row_param_name);

// The BinaryOp a row of the binary table names.
BinaryOp binary_op_named(const std::string& name) {
  for (int i = 0; i < kNumBinaryOps; ++i)
    if (name == binary_op_name(static_cast<BinaryOp>(i))) return static_cast<BinaryOp>(i);
  ADD_FAILURE() << "no binary kernel op named " << name;
  return BinaryOp::Add;
}

// The binary table's rows (tests/autograd/binary_table.h), their dtypes and input domains:
// through the entry point with every input layout and the broadcast, 0-d and empty shapes;
// through the kernel slot into outputs of every layout and in place; NaN/inf/±0; and a
// large odd size (vectorised with a tail, and unaligned). One gtest instance per row and
// dtype (Rows/CudaBinaryRow.DTypeShapeAndLayout/atan2_float16).
class CudaBinaryRow : public testing::TestWithParam<RowParam> {};

TEST_P(CudaBinaryRow, DTypeShapeAndLayout) {
  WICK_REQUIRE_CUDA();
  const BinaryRow& r = binary_table()[GetParam().row];
  const DType t = GetParam().dtype;
  AllocationChecks checks;
  check_as_marked(r.on.cuda, [&] {
    uint64_t seed = GetParam().seed;
    const BinaryOp op = binary_op_named(r.name);
    const OpFn entry = [&r](const std::vector<Tensor>& in) { return r.op(in[0], in[1]); };
    const DType compute = compute_dtype_of(r, t), out_t = out_dtype_of(r, t);
    auto kernel = [=](const Shape& shape, Layout out_layout) {
      return [=](const std::vector<Tensor>& in) {
        Tensor out = empty_with_layout(shape, Options(out_t, in[0].device()), out_layout);
        run_binary(op, out, in[0].to(compute).expand(shape), in[1].to(compute).expand(shape));
        return out;
      };
    };
    const std::string base = std::string(r.name) + " " + name_of(t) + " ";
    for (const ShapeCase& sc : kShapes) {
      const Tensor a = row_input(r, false, sc.a, t, seed++), b = row_input(r, true, sc.b, t, seed++);
      const std::string sh = shape_str(sc.a) + " with " + shape_str(sc.b) + " ";
      for (Layout la : kAllLayouts) check(base + sh + layout_name(la) + " a", t, {with_layout(a, la), b}, entry);
      for (Layout lb : {Layout::Transposed, Layout::Sliced, Layout::Offset})
        check(base + sh + layout_name(lb) + " b", t, {a, with_layout(b, lb)}, entry);
      for (Layout lo : {Layout::Transposed, Layout::Sliced, Layout::Offset})
        check(base + sh + "out " + layout_name(lo), t, {a, b}, kernel(sc.out, lo));
    }
    // In place on a transposed a, with b broadcast.
    check(base + "in place", t, {row_input(r, false, {4, 6}, t, seed), row_input(r, true, {6}, t, seed + 1)},
          [=](const std::vector<Tensor>& in) {
            Tensor x = empty_with_layout({4, 6}, Options(compute, in[0].device()), Layout::Transposed);
            x.copy_(in[0]);
            Tensor out = out_t == compute ? x : empty({4, 6}, Options(out_t, x.device()));
            run_binary(op, out, x, in[1].to(compute).expand({4, 6}));
            return out;
          });
    if (is_floating(t)) {
      const Tensor s = special_values(t);
      check(base + "special values", t, {s.view({14, 1}), s.view({1, 14})}, entry);
    }
    if (t == DType::Float32 || t == DType::Int32) {
      const Tensor a = row_input(r, false, {1000003}, t, 60), b = row_input(r, true, {1000003}, t, 61);
      for (Layout l : {Layout::Contiguous, Layout::Offset})
        check(base + "1000003 " + layout_name(l), t, {with_layout(a, l), b}, entry);
    }
  });
  EXPECT_EQ(checks.violations(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Rows, CudaBinaryRow, testing::ValuesIn(row_params(binary_table())), row_param_name);

// The binary kernel slot with every op and dtype: where the CPU kernel has no kernel for
// the dtype (the entry points never ask), the CUDA kernel refuses it too, rather than
// computing something.
TEST(CudaBinary, KernelsRefuseTheDtypesTheCpuRefuses) {
  WICK_REQUIRE_CUDA();
  for (int i = 0; i < kNumBinaryOps; ++i) {
    const BinaryOp op = static_cast<BinaryOp>(i);
    for (DType t : kAllDTypes) {
      const DType out_t = binary_op_is_comparison(op) ? DType::Bool : t;
      check(std::string(binary_op_name(op)) + " " + name_of(t) + " probe", t,
            {random({3}, t, 1, 1, 3), random({3}, t, 2, 1, 3)}, [=](const std::vector<Tensor>& in) {
              Tensor out = empty({3}, Options(out_t, in[0].device()));
              run_binary(op, out, in[0], in[1]);
              return out;
            });
    }
  }
}

// The CPU throws for an integer division by zero; CUDA kernels cannot, so they give 0 and
// must leave the device usable.
TEST(CudaBinary, IntegerDivisionByZeroGivesZero) {
  WICK_REQUIRE_CUDA();
  for (DType t : {DType::UInt8, DType::Int32, DType::Int64}) {
    for (BinaryOp op : {BinaryOp::Remainder, BinaryOp::FloorDivide, BinaryOp::Fmod}) {
      SCOPED_TRACE(std::string(binary_op_name(op)) + " " + name_of(t));
      Tensor a = tensor<double>({7, 0, 100, 5}).to(Options(t, Device::cuda()));
      Tensor b = tensor<double>({0, 0, 3, 0}).to(Options(t, Device::cuda()));
      Tensor out = empty({4}, Options(t, Device::cuda()));
      run_binary(op, out, a, b);
      cuda::synchronize();
      const double third = op == BinaryOp::FloorDivide ? 33 : 1;
      EXPECT_TRUE(matches(out, {4}, t, {0, 0, third, 0}));
    }
  }
}

TEST(CudaWhere, EveryDTypeShapeAndLayout) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  {
    const std::vector<std::array<Shape, 4>> shapes = {
        {Shape{}, Shape{}, Shape{}, Shape{}},
        {Shape{0, 3}, Shape{0, 3}, Shape{1, 3}, Shape{}},
        {Shape{3, 17}, Shape{3, 17}, Shape{3, 17}, Shape{3, 17}},
        {Shape{3, 4}, Shape{3, 1}, Shape{1, 4}, Shape{}},  // out, cond, a, b
        {Shape{2, 3, 5}, Shape{5}, Shape{2, 3, 5}, Shape{3, 1}},
        {Shape{1000003}, Shape{1000003}, Shape{1000003}, Shape{1000003}},
    };
    for (DType t : kAllDTypes) {
      for (const auto& s : shapes) {
        Tensor cond = random(s[1], DType::Bool, 70), a = random(s[2], t, 71), b = random(s[3], t, 72);
        const Shape out_shape = s[0];
        auto run = [=](Layout out_layout) {
          return [=](const std::vector<Tensor>& in) {
            Tensor out = empty_with_layout(out_shape, Options(t, in[0].device()), out_layout);
            run_where(out, in[0].expand(out_shape), in[1].expand(out_shape), in[2].expand(out_shape));
            return out;
          };
        };
        const std::string base = "where " + name_of(t) + " " + shape_str(out_shape) + " ";
        const bool big = numel_of(out_shape) > 1000;
        for (Layout l : kAllLayouts) {
          if (big && l == Layout::Transposed) continue;
          check(base + "cond " + layout_name(l), t, {with_layout(cond, l), a, b}, run(Layout::Contiguous));
          check(base + "a " + layout_name(l), t, {cond, with_layout(a, l), b}, run(Layout::Contiguous));
          check(base + "out " + layout_name(l), t, {cond, a, with_layout(b, l)}, run(l));
        }
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

}  // namespace
}  // namespace wick::test
