// read_idx on arbitrary bytes, raw IDX or gzip (the reader inflates files that start with
// the gzip magic), so the seeds hold both kinds.
#include <wick/data/idx.h>
#include <wick/tensor/error.h>

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    wick::Tensor t = wick::read_idx(wick_fuzz::input_path(data, size));
    (void)t.numel();
  } catch (const wick::Error&) {
  }
  return 0;
}
