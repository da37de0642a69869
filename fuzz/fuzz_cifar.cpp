// read_cifar on arbitrary bytes (raw or gzip), as CIFAR-10 or CIFAR-100 by the first byte.
#include <wick/data/cifar.h>
#include <wick/tensor/error.h>

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const wick::CifarKind kinds[] = {wick::CifarKind::Cifar10, wick::CifarKind::Cifar100Fine,
                                   wick::CifarKind::Cifar100Coarse};
  const wick::CifarKind kind = kinds[data[0] % 3];
  try {
    wick::Dataset d = wick::read_cifar({wick_fuzz::input_path(data + 1, size - 1)}, kind);
    (void)d.size();
  } catch (const wick::Error&) {
  }
  return 0;
}
