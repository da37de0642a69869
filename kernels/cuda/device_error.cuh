#pragma once
// Errors that kernels find in their data (a class index out of range), reported without a
// host synchronisation: a kernel records the first one in page-locked host memory, and the
// host raises it as wick::Error at its next wait (cuda::synchronize, Stream/Event
// synchronize, a copy to the host such as Tensor::item), naming the op and the value.
// PyTorch's device-side asserts are asynchronous in the same way; here the error is reported
// once and then cleared, so later, good calls run on (a CUDA assert poisons the context).
//
// Per device: a claim word in device memory and a record in mapped page-locked memory. The
// record carries a generation that the host increments after raising; a reporting thread
// exchanges the generation into the claim word and writes the record only when the word held
// another one, so one report per generation is written (and the claim word needs no
// initialisation: fresh memory does not hold the current generation). The record's fields
// are written before `raised`, with a system-scope fence between.
#include <cstdint>

#include "kernels/cuda/cuda_check.h"

namespace wick::cuda_kernels {

enum class DeviceErrorKind : int64_t {
  None = 0,
  // values: target, position, classes, ignore_index
  CrossEntropyTarget = 1,
  // values: index, dim, size, the op (an IndexOp)
  IndexOutOfBounds = 2,
};

// The ops whose kernels report IndexOutOfBounds, named in the message.
enum class IndexOp : int64_t { IndexSelect, Gather, Scatter, ScatterAdd, IndexAdd };
inline const char* index_op_name(int64_t op) {
  constexpr const char* kNames[] = {"index_select", "gather", "scatter", "scatter_add", "index_add"};
  return op >= 0 && op < 5 ? kNames[op] : "an indexing op";
}

// In page-locked host memory, read by the host after a wait.
struct DeviceErrorRecord {
  unsigned long long generation;  // the host's; starts at 1
  int64_t kind;                   // a DeviceErrorKind
  int64_t values[4];
  unsigned int raised;            // 1 once kind and values are written
};

// What a kernel needs to report: passed by value.
struct DeviceErrorSlot {
  unsigned long long* claim;  // device memory
  DeviceErrorRecord* record;  // mapped host memory, as the device addresses it

  __device__ __forceinline__ void report(DeviceErrorKind kind, int64_t a, int64_t b, int64_t c, int64_t d) const {
    volatile DeviceErrorRecord* r = record;
    const unsigned long long generation = r->generation;
    if (atomicExch(claim, generation) == generation) return;  // reported already
    r->kind = static_cast<int64_t>(kind);
    r->values[0] = a;
    r->values[1] = b;
    r->values[2] = c;
    r->values[3] = d;
#if defined(__CUDACC__)
    __threadfence_system();
#else
    __threadfence();
#endif
    r->raised = 1;
  }
};

// The slot of `device`, made on its first use (runtime.cu; no synchronisation).
DeviceErrorSlot device_error_slot(int device);

// After the host has waited for work of `device`: throws wick::Error for an error a kernel
// recorded there since the last one raised, and clears it. `where` names the wait.
void raise_device_errors(int device, const char* where);

}  // namespace wick::cuda_kernels
