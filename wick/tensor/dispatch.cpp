#include <wick/tensor/allocator.h>
#include <wick/tensor/dispatch.h>
#include <wick/tensor/error.h>

#include <array>
#include <mutex>

namespace wick {

namespace {

// Filled once, on first use, by the backends' registration calls; read-only afterwards
// (but for kernel_table_for_testing).
std::array<Backend, kNumDeviceTypes>& all_backends() {
  static std::array<Backend, kNumDeviceTypes> table = [] {
    std::array<Backend, kNumDeviceTypes> t{};
    register_cpu_kernels(t[static_cast<int>(DeviceType::CPU)]);
    register_cuda_kernels(t[static_cast<int>(DeviceType::CUDA)]);
    return t;
  }();
  return table;
}

const char* device_type_name(DeviceType t) { return t == DeviceType::CPU ? "cpu" : "cuda"; }

}  // namespace

const Backend& backend(Device d) {
  const Backend& b = all_backends()[static_cast<int>(d.type)];
  WICK_CHECK(b.allocator != nullptr, "device ", d, ": this build of wick has no ", device_type_name(d.type),
             " backend (configure with -DWICK_CUDA=ON and a CUDA toolkit)");
  if (d.is_cuda()) {
    int n = b.device_count();
    WICK_CHECK(d.index >= 0 && d.index < n, "device ", d, ": no such CUDA device (", n, " available)");
  }
  return b;
}

const KernelTable& kernels(Device d) { return backend(d).kernels; }

KernelTable& kernel_table_for_testing(Device d) {
  backend(d);  // the same checks: the backend is built in and the device exists
  return all_backends()[static_cast<int>(d.type)].kernels;
}

void throw_unsupported_dtype(const char* op, Device d, DType t) {
  detail::throw_error(op, ": no ", device_type_name(d.type), " kernel for dtype ", dtype_name(t));
}

void throw_missing_kernel(const char* op, Device d) {
  detail::throw_error(op, ": no ", device_type_name(d.type), " kernel is registered");
}

namespace {
#include "wick/tensor/generated/op_names.inc"
}  // namespace

const char* unary_op_name(UnaryOp op) { return kUnaryOpNames[static_cast<int>(op)]; }
const char* scan_op_name(ScanOp op) { return kScanOpNames[static_cast<int>(op)]; }
const char* binary_op_name(BinaryOp op) { return kBinaryOpNames[static_cast<int>(op)]; }
const char* reduce_op_name(ReduceOp op) { return kReduceOpNames[static_cast<int>(op)]; }

}  // namespace wick
