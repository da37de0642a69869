// A program outside the wick tree: it must build against the installed package alone.
#include <wick/wick.h>

#include <cstring>
#include <iostream>

int main() {
  wick::Tensor a = wick::arange(6).reshape({2, 3}).to(wick::DType::Float32);
  wick::Tensor b = wick::ones({3});
  wick::Tensor c = a + b;
  double total = c.sum().item<float>();
  std::cout << c << "\nsum = " << total << "\nwick " << WICK_VERSION_STRING << "\n";
  if (std::strcmp(WICK_VERSION_STRING, EXPECTED_WICK_VERSION) != 0) {
    std::cout << "<wick/version.h> says " << WICK_VERSION_STRING << ", the package " << EXPECTED_WICK_VERSION << "\n";
    return 1;
  }
  return total == 21.0 ? 0 : 1;  // (0+1+...+5) + 6 ones
}
