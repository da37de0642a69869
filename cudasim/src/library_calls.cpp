// What the library API files (cuBLAS, cuDNN) share about their handles: the checks made
// before a launch on a handle's stream, and the device synchronisation of destroying one.
#include <string>

#include "internal.h"

namespace cudasim {

Stream* handle_launch_stream(const std::string& call, const char* library, const char* set_stream, int device,
                             cudaStream_t handle) {
  const int current = current_device();
  if (const cudaError_t sticky = sticky_error(current); sticky != cudaSuccess) {
    record_error(sticky);
    return nullptr;
  }
  if (current != device) {
    record_error(cudaErrorInvalidResourceHandle, call + ": the " + library + " handle of cuda:" +
                                                     std::to_string(device) + " used while cuda:" +
                                                     std::to_string(current) + " is current");
    return nullptr;
  }
  Stream* stream = find_stream(handle);
  if (!stream || stream_device(stream) != device) {
    record_error(cudaErrorInvalidResourceHandle,
                 call + ": the handle's stream (" + set_stream + ") is " +
                     (stream ? "a stream of cuda:" + std::to_string(stream_device(stream))
                             : std::string("not a live stream")) +
                     ", the handle belongs to cuda:" + std::to_string(device));
    return nullptr;
  }
  return stream;
}

void synchronize_handle_device(int device) {
  int current = 0;
  if (cudaGetDevice(&current) == cudaSuccess) {
    if (current != device) cudaSetDevice(device);
    cudaDeviceSynchronize();
    if (current != device) cudaSetDevice(current);
  }
}

}  // namespace cudasim
