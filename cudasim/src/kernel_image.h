#pragma once
// What the compiler would know about a kernel: how much static __shared__ memory it declares.
// ptxas sums the __shared__ variables a kernel uses, its own and those of the device
// functions it calls, and refuses more than 48 KiB; the driver then holds static and dynamic
// shared memory together to the per-block limit. Under the simulator a __shared__ variable is
// a function-local `static thread_local` whose mangled name carries an ABI tag
// (cuda_runtime.h), and is named after its function (_ZZ<function>E<name>B14cudasim_shared),
// so the symbol table of the binary that holds the kernel lists every __shared__ variable,
// its size, its offset in the binary's TLS segment and the function that declares it.
//
// The kernel's own variables are counted at its first launch. Which device functions a
// kernel calls the symbol table does not say, so the first block of each kernel to run is a
// probe: every other __shared__ variable of the binary is filled on its host thread with a
// pattern first, and the variables the block changed are counted from then on (the kernel
// fails if they take it over the limits). Not counted: variables the first block does not
// write, and everything when the binary is stripped (the result is then 0).
#include <cstddef>
#include <utility>
#include <vector>

namespace cudasim {

// The kernel's own __shared__ bytes, plus those of other functions once a probe found it
// writes them.
size_t static_shared_bytes(const void* kernel);

// Where the calling host thread's instances of the __shared__ variables of the binary that
// holds `kernel` lie: [lo, hi), which also spans whatever other thread-local variables lie
// between them. False when the binary lists none (stripped).
bool shared_variables_span(const void* kernel, const unsigned char** lo, const unsigned char** hi);

// One probe, on the host thread about to run a block of the kernel.
class SharedUseProbe {
 public:
  // When `kernel` was never probed and its binary declares __shared__ variables outside its
  // body: fills them with the pattern on this host thread and returns true (once per kernel).
  bool begin(const void* kernel);
  // After the block: the bytes of the variables it changed, now part of the kernel's static
  // shared memory.
  size_t end();

 private:
  const void* kernel_ = nullptr;
  std::vector<std::pair<unsigned char*, size_t>> variables_;
};

}  // namespace cudasim
