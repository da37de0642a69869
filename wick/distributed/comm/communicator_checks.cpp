#include <wick/distributed/comm/communicator_checks.h>

#include <sstream>

#include <wick/tensor/error.h>

namespace wick::distributed::detail {

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream os;
  os << shape_str(t.shape()) << ' ' << dtype_name(t.dtype()) << " on " << t.device().str();
  return os.str();
}

std::string describe(const std::vector<Tensor>& tensors) {
  std::ostringstream os;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (i) os << ", ";
    if (i == 8) {
      os << "... (" << tensors.size() << " tensors)";
      break;
    }
    os << describe(tensors[i]);
  }
  return os.str();
}

void check_tensor(const std::string& op, const std::string& role, const Tensor& t, Device device,
                  const std::string& backend_hint) {
  WICK_CHECK(t.defined(), op, ": ", role, " is an undefined tensor");
  WICK_CHECK(t.device() == device, op, ": ", role, " (", describe(t), ") is on ", t.device().str(),
             " but this communicator works on ", device.str(), backend_hint);
  WICK_CHECK(t.is_contiguous(), op, ": ", role, " (", describe(t),
             ") is not contiguous; pass .contiguous() and copy the result back");
}

void check_group(const std::string& op, const std::vector<Tensor>& tensors, Device device,
                 const std::string& backend_hint) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_tensor(op, "tensor " + std::to_string(i), tensors[i], device, backend_hint);
    WICK_CHECK(tensors[i].dtype() == tensors[0].dtype(), op, ": tensor ", i, " (", describe(tensors[i]), ") has dtype ",
               dtype_name(tensors[i].dtype()), ", tensor 0 (", describe(tensors[0]), ") has ",
               dtype_name(tensors[0].dtype()), "; a group holds one dtype");
  }
}

void check_reduction(const std::string& op, DType dtype, ReduceOp reduce_op) {
  WICK_CHECK(reduce_op == ReduceOp::Sum || reduce_op == ReduceOp::Mean || reduce_op == ReduceOp::Max ||
                 reduce_op == ReduceOp::Min,
             op, ": ", reduce_op_name(reduce_op), " is not a collective reduction (sum, mean, max or min)");
  WICK_CHECK(dtype != DType::Bool, op, ": cannot reduce bool tensors (", reduce_op_name(reduce_op),
             "); convert to uint8 first");
  WICK_CHECK(reduce_op != ReduceOp::Mean || is_floating(dtype), op, ": mean needs a floating dtype, got ",
             dtype_name(dtype), "; use sum and divide");
}

void check_peer(const std::string& op, const char* what, int peer, int size) {
  WICK_CHECK(peer >= 0 && peer < size, op, ": ", what, " ", peer, " is out of range for ", size, " ranks");
}

int64_t total_numel(const std::vector<Tensor>& tensors) {
  int64_t n = 0;
  for (const Tensor& t : tensors) n += t.numel();
  return n;
}

}  // namespace wick::distributed::detail
