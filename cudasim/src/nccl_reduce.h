#pragma once
// Element types and reductions of the simulated NCCL: what a collective computes, element by
// element, once every rank's data is at hand. No communication here.
#include <nccl.h>

#include <cstddef>
#include <cstdint>

namespace cudasim::nccl {

// Bytes per element; 0 for a value outside ncclDataType_t.
size_t type_size(ncclDataType_t type);
// Whether reductions are defined for `type` (the fp8 types only move, the simulator does not
// do fp8 arithmetic).
bool type_reduces(ncclDataType_t type);
const char* type_name(ncclDataType_t type);
// "sum", "prod", "max", "min", "avg"; nullptr for a value that is not a built-in operation.
const char* op_name(ncclRedOp_t op);

// out[i] = in[0][i] op in[1][i] op ... op in[n-1][i] for i < count, folded in rank order (so
// every rank computing it gets the same bits). `out` may not overlap the inputs.
//  - Integers wrap on overflow (sum and prod are modulo 2^bits, as on the GPU).
//  - 16-bit floats (half, bfloat16) widen to float for each step and round back to 16 bits
//    after it, as NCCL's kernels do when a partial result is passed between ranks: the result
//    is the rounded sum of rounded partial sums, not one rounding of the exact total.
//  - ncclAvg follows NCCL: floating types multiply every input by 1/n (that scalar rounded to
//    the type) and sum; integer types sum (wrapping) and divide the total by n, truncating
//    toward zero.
//  - max/min compare with <; NaN handling is not modelled.
void reduce(void* out, const void* const* in, int n, size_t count, ncclDataType_t type, ncclRedOp_t op);

}  // namespace cudasim::nccl
