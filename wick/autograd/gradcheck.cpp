#include <wick/autograd/gradcheck.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/reduce.h>

#include <cmath>
#include <sstream>

namespace wick {

GradcheckResult gradcheck(const std::function<Variable(const std::vector<Variable>&)>& f,
                          const std::vector<Tensor>& inputs, double eps, double atol, double rtol, uint64_t seed) {
  std::vector<Variable> vars;
  for (const Tensor& t : inputs) {
    WICK_CHECK(t.dtype() == DType::Float64 && t.device().is_cpu(), "gradcheck: inputs must be float64 CPU tensors, got ",
               dtype_name(t.dtype()), " on ", t.device());
    vars.emplace_back(t.clone(), true);
  }
  Variable out = f(vars);
  Generator g(seed);
  Tensor v = randn(out.shape(), DType::Float64, &g);  // a random output gradient
  std::vector<Variable> analytic = grad({out}, vars, {Variable(v)});

  NoGradGuard no_grad;
  auto project = [&](const std::vector<Variable>& xs) {
    return sum(mul(f(xs).data(), v)).item<double>();
  };
  for (size_t k = 0; k < vars.size(); ++k) {
    std::vector<double> a = analytic[k].data().to_vector<double>();
    Tensor x = vars[k].data();
    Tensor flat = x.view({-1});
    for (int64_t i = 0; i < x.numel(); ++i) {
      double orig = flat[i].item<double>();
      flat[i].fill_(orig + eps);
      double plus = project(vars);
      flat[i].fill_(orig - eps);
      double minus = project(vars);
      flat[i].fill_(orig);
      double numeric = (plus - minus) / (2 * eps);
      if (!(std::fabs(a[i] - numeric) <= atol + rtol * std::fabs(numeric))) {
        std::ostringstream os;
        os << "input " << k << " (shape " << shape_str(x.shape()) << ") element " << i << ": backward gives " << a[i]
           << ", finite differences give " << numeric;
        if (out.grad_fn()) os << " (output made by " << out.grad_fn()->name() << ")";
        return {false, os.str()};
      }
    }
  }
  return {};
}

}  // namespace wick
