// A program outside the wick tree: it must build against the installed package alone (found
// by CMake's find_package or by pkg-config). `consumer CAPABILITY` also checks which
// instruction set the CPU matrix products chose (run under qemu on CPUs without AVX-512).
#include <wick/wick.h>

#include <cmath>
#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
  wick::Tensor a = wick::arange(6).reshape({2, 3}).to(wick::DType::Float32);
  wick::Tensor b = wick::ones({3});
  wick::Tensor c = a + b;
  double total = c.sum().item<float>();
  std::cout << c << "\nsum = " << total << "\nwick " << WICK_VERSION_STRING << "\n";
  if (std::strcmp(WICK_VERSION_STRING, EXPECTED_WICK_VERSION) != 0) {
    std::cout << "<wick/version.h> says " << WICK_VERSION_STRING << ", the package " << EXPECTED_WICK_VERSION << "\n";
    return 1;
  }
  // A product large enough for the vectorised kernel and its edges: (i + j) summed over k
  // of x[i, k] = i + k and y[k, j] = 1 is 64 i + 2016 exactly in float32.
  const int64_t n = 64;
  wick::Tensor x = (wick::arange(n).reshape({n, 1}) + wick::arange(n).reshape({1, n})).to(wick::DType::Float32);
  wick::Tensor y = wick::ones({n, n + 3});
  wick::Tensor p = wick::matmul(x, y);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n + 3; ++j)
      if (p[i][j].item<float>() != static_cast<float>(64 * i + 2016)) {
        std::cout << "matmul: element [" << i << ", " << j << "] is " << p[i][j].item<float>() << "\n";
        return 1;
      }
  // exp and friends have AVX-512, AVX2 and baseline copies that the loader chooses between
  // (WICK_ISA_CLONES): the one this CPU gets must run (an illegal instruction ends the
  // program here) and be right.
  wick::Tensor t = wick::arange(200).to(wick::DType::Float32);
  t.mul_(0.05).sub_(5.0);
  wick::Tensor e = wick::exp(t);
  for (int64_t i = 0; i < 200; ++i) {
    const double want = std::exp(0.05 * static_cast<double>(i) - 5.0), got = e[i].item<float>();
    if (std::abs(got - want) > 1e-6 * want) {
      std::cout << "exp: element " << i << " is " << got << ", not " << want << "\n";
      return 1;
    }
  }
  std::cout << "cpu matrix products: " << wick::cpu_capability() << "\n";
  if (argc > 1 && wick::cpu_capability() != argv[1]) {
    std::cout << "expected " << argv[1] << "\n";
    return 1;
  }
  return total == 21.0 ? 0 : 1;  // (0+1+...+5) + 6 ones
}
