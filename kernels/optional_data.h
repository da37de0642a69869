#pragma once
// The data pointer of a kernel argument that may be absent (an undefined Tensor: no weight,
// no running statistics, an output nobody asked for): null then. Shared by the CPU and CUDA
// kernels' host code.
#include <wick/tensor/tensor.h>

namespace wick {

template <class T>
const T* optional_data(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.data_ptr()) : nullptr;
}
template <class T>
T* optional_mutable_data(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace wick
