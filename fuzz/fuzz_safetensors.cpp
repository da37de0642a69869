// load_safetensors on arbitrary bytes: it either returns tensors that agree with the file's
// size or throws wick::Error; anything else (a crash, a sanitizer report, a leak, an
// allocation far beyond the input) is a finding.
#include <wick/tensor/error.h>
#include <wick/tensor/safetensors.h>

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    wick::StringMap metadata;
    wick::TensorMap tensors = wick::load_safetensors(wick_fuzz::input_path(data, size), &metadata);
    size_t bytes = 0;
    for (const auto& [name, t] : tensors) bytes += t.nbytes();
    if (bytes > size) std::abort();  // tensor data must come from the file
  } catch (const wick::Error&) {
  }
  return 0;
}
