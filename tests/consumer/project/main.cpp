// A program outside the wick tree: it must build against the installed package alone.
#include <wick/wick.h>

#include <iostream>

int main() {
  wick::Tensor a = wick::arange(6).reshape({2, 3}).to(wick::DType::Float32);
  wick::Tensor b = wick::ones({3});
  wick::Tensor c = a + b;
  double total = c.sum().item<float>();
  std::cout << c << "\nsum = " << total << "\n";
  return total == 21.0 ? 0 : 1;  // (0+1+...+5) + 6 ones
}
