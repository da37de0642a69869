#pragma once
// What the compiler would know about a kernel: how much static __shared__ memory it declares.
// ptxas sums a kernel's __shared__ variables and refuses more than 48 KiB; the driver then
// holds static and dynamic shared memory together to the per-block limit. Under the
// simulator a __shared__ variable is a function-local `static thread_local`, which the
// compiler names after its function (_ZZ<function>E<name>), so the kernel's static shared
// memory is the sum of the sizes of the TLS symbols so named in the symbol table of the
// binary that holds the kernel.
//
// Counted: __shared__ variables declared in the kernel's own body. Not counted: those in
// device functions it calls and namespace-scope __shared__ variables (they do not carry the
// kernel's name), and everything when the binary is stripped (the result is then 0).
#include <cstddef>

namespace cudasim {

size_t static_shared_bytes(const void* kernel);

}  // namespace cudasim
