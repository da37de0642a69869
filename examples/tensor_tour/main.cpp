// A short tour of the tensor API: factories, views, broadcasting, reductions, matmul,
// and the same work on a GPU when one is present.
#include <wick/wick.h>

#include <iostream>

using namespace wick;

int main() {
  manual_seed(0);
  Tensor x = arange(12).reshape({3, 4}).to(DType::Float32);
  std::cout << "x =\n" << x << "\n\n";
  std::cout << "x.t() (a view, no copy) =\n" << x.t() << "\n\n";
  std::cout << "x[1] = " << x[1] << "\n";
  std::cout << "x.slice(1, 0, 4, 2) = " << x.slice(1, 0, 4, 2) << "\n\n";

  Tensor bias = tensor<float>({10, 20, 30, 40});
  std::cout << "x + bias (broadcast) =\n" << x + bias << "\n\n";
  std::cout << "softmax(x, 1) =\n" << softmax(x, 1) << "\n\n";
  std::cout << "x.sum({1}) = " << x.sum({1}) << "\n";
  std::cout << "max over dim 0: " << max(x, 0).first << " at " << max(x, 0).second << "\n\n";

  Tensor w = randn({4, 2});
  std::cout << "x @ w =\n" << matmul(x, w) << "\n\n";
  std::cout << "gelu(linspace(-2, 2, 5)) = " << gelu(linspace(-2, 2, 5)) << "\n";

  if (cuda::device_count() > 0) {
    Tensor xg = x.cuda();
    Tensor yg = matmul(xg, w.cuda()) + 1.0;
    std::cout << "\non " << xg.device() << ": x @ w + 1 =\n" << yg << "\n";
  } else {
    std::cout << "\nno CUDA device: the tour ran on the CPU only\n";
  }
  try {
    x + zeros({5});
  } catch (const Error& e) {
    std::cout << "\nerrors name the op, the shapes and the reason:\n  " << e.what() << "\n";
  }
  return 0;
}
