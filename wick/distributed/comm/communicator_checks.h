#pragma once
// Argument checks shared by the communicators, so Gloo and NCCL reject the same mistakes
// with the same messages: "GlooCommunicator::all_reduce: tensor 1 ([3] float64) has dtype
// float64, tensor 0 ([2, 3] float32) has float32; a group holds one dtype".
#include <string>
#include <vector>

#include <wick/distributed/comm/communicator.h>

namespace wick::distributed::detail {

// "[2, 3] float32 on cpu"
std::string describe(const Tensor& t);
// "[2, 3] float32, [4] float32"
std::string describe(const std::vector<Tensor>& tensors);

// Every tensor defined, contiguous, on `device` (the communicator's), of one dtype.
// `backend_hint` is appended when a tensor is on the wrong kind of device.
void check_group(const std::string& op, const std::vector<Tensor>& tensors, Device device,
                 const std::string& backend_hint);
// One tensor, as above.
void check_tensor(const std::string& op, const std::string& role, const Tensor& t, Device device,
                  const std::string& backend_hint);
// A reduction the dtype supports: sum, mean, max or min; no bool; mean only for floating dtypes.
void check_reduction(const std::string& op, DType dtype, ReduceOp reduce_op);
void check_peer(const std::string& op, const char* what, int peer, int size);

// Total elements of a group.
int64_t total_numel(const std::vector<Tensor>& tensors);

}  // namespace wick::distributed::detail
