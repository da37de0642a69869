// Runs the gradcheck cases registered in this binary (the losses and norms of nn/, built
// from differentiable ops) by finite differences in float64, like tests/autograd's runner:
// each case a gtest instance (Rows/GradcheckCase.FirstAndSecondOrder/huber_loss).
#include "tests/autograd/cases.h"

namespace wick::test {
namespace {

WICK_GRADCHECK_ROWS();

TEST(Gradcheck, NnCasesAreRegistered) { EXPECT_GE(gradcheck_table().size(), 10u) << "no nn cases registered"; }

TEST(Gradcheck, ReadmeNamesEveryNnOp) { expect_readme_names_every_case(); }

TEST(Gradcheck, NnCasesCanFail) {
  // A loss with a gradient dropped on purpose is reported: the check can fail in this binary.
  GradcheckResult bad = gradcheck([](auto& v) { return add(huber_loss(v[0], v[1]), mul(v[0].detach(), v[0])); },
                                  {random({3}, DType::Float64, 1), random({3}, DType::Float64, 2)});
  EXPECT_FALSE(bad.ok);
}

}  // namespace
}  // namespace wick::test
