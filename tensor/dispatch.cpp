#include <wick/tensor/allocator.h>
#include <wick/tensor/dispatch.h>
#include <wick/tensor/error.h>

#include <array>
#include <mutex>

namespace wick {

namespace {

// Filled once, on first use, by the backends' registration calls; read-only afterwards.
const std::array<Backend, kNumDeviceTypes>& all_backends() {
  static const std::array<Backend, kNumDeviceTypes> table = [] {
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

void throw_unsupported_dtype(const char* op, Device d, DType t) {
  detail::throw_error(op, ": no ", device_type_name(d.type), " kernel for dtype ", dtype_name(t));
}

void throw_missing_kernel(const char* op, Device d) {
  detail::throw_error(op, ": no ", device_type_name(d.type), " kernel is registered");
}

const char* unary_op_name(UnaryOp op) {
  static const char* names[] = {"neg", "abs", "sign", "floor", "ceil", "round", "trunc", "relu", "square", "clamp",
                                "leaky_relu", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal",
                                "sin", "cos", "tanh", "sigmoid", "erf", "tan", "asin", "acos", "atan", "sinh",
                                "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2", "gelu_tanh", "gelu", "silu",
                                "softplus", "logical_not", "sigmoid_grad", "tanh_grad", "gelu_tanh_grad",
                                "gelu_grad", "silu_grad"};
  return names[static_cast<int>(op)];
}

const char* binary_op_name(BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "pow", "minimum", "maximum", "remainder",
                                "floor_divide", "atan2", "eq", "ne", "lt", "le", "gt", "ge",
                                "logical_and", "logical_or"};
  return names[static_cast<int>(op)];
}

const char* reduce_op_name(ReduceOp op) {
  static const char* names[] = {"sum", "prod", "max", "min", "all", "any", "mean", "var", "norm", "logsumexp"};
  return names[static_cast<int>(op)];
}

}  // namespace wick
