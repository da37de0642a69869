#pragma once
// Finite-difference gradient checking (for tests): compares the gradients backward computes
// with central differences of the function, in float64.
#include <functional>
#include <string>
#include <vector>

#include <wick/autograd/variable.h>

namespace wick {

struct GradcheckResult {
  bool ok = true;
  std::string message;  // the first mismatch: input, element, analytic vs numeric
};

// `f` maps the inputs (float64 Variables that require grad) to one output of any shape.
// Checks the vector-Jacobian product for a random output gradient against
// (f(x + eps e_i) - f(x - eps e_i)) / 2 eps for every element i of every input.
GradcheckResult gradcheck(const std::function<Variable(const std::vector<Variable>&)>& f,
                          const std::vector<Tensor>& inputs, double eps = 1e-6, double atol = 1e-5,
                          double rtol = 1e-3, uint64_t seed = 0);

}  // namespace wick
