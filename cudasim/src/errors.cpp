// Error state as the CUDA runtime keeps it: a per-thread last error that cudaGetLastError
// returns and clears, and per-device sticky errors (a kernel fault corrupts the context:
// every later call returns it until cudaDeviceReset). Details (which kernel, which argument)
// are kept beside the codes so that cudaGetErrorString can say more than the code's name.
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "internal.h"

namespace cudasim {

namespace {

struct Sticky {
  cudaError_t code = cudaSuccess;
  std::string detail;
};

struct ErrorState {
  std::mutex mutex;
  std::vector<Sticky> sticky;  // by device
};

ErrorState& errors() {
  static ErrorState* state = new ErrorState;  // outlives static destructors: workers may still run
  return *state;
}

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local cudaError_t t_detail_code = cudaSuccess;
thread_local std::string t_detail;
thread_local std::string t_text;  // what cudaGetErrorString returned last on this thread

const char* error_name(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorPeerAccessAlreadyEnabled: return "cudaErrorPeerAccessAlreadyEnabled";
    case cudaErrorPeerAccessNotEnabled: return "cudaErrorPeerAccessNotEnabled";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    case cudaErrorLaunchTimeout: return "cudaErrorLaunchTimeout";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    default: return "cudaErrorUnknown";
  }
}

const char* error_text(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
    case cudaErrorPeerAccessNotEnabled: return "peer access has not been enabled";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorLaunchTimeout: return "the launch timed out and was terminated";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    default: return "unknown error";
  }
}

}  // namespace

cudaError_t record_error(cudaError_t code, const std::string& detail) {
  if (code == cudaSuccess) return code;
  t_last_error = code;
  if (!detail.empty()) {
    t_detail_code = code;
    t_detail = detail;
  }
  return code;
}

cudaError_t sticky_error(int device) {
  ErrorState& s = errors();
  std::lock_guard<std::mutex> lock(s.mutex);
  return device >= 0 && static_cast<size_t>(device) < s.sticky.size() ? s.sticky[static_cast<size_t>(device)].code
                                                                       : cudaSuccess;
}

std::string sticky_detail(int device) {
  ErrorState& s = errors();
  std::lock_guard<std::mutex> lock(s.mutex);
  return device >= 0 && static_cast<size_t>(device) < s.sticky.size() ? s.sticky[static_cast<size_t>(device)].detail
                                                                       : std::string();
}

void set_sticky_error(int device, cudaError_t code, const std::string& detail) {
  ErrorState& s = errors();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.sticky.size() <= static_cast<size_t>(device)) s.sticky.resize(static_cast<size_t>(device) + 1);
  Sticky& st = s.sticky[static_cast<size_t>(device)];
  if (st.code != cudaSuccess) return;  // the first fault is the one worth reporting
  st.code = code;
  st.detail = detail;
  std::fprintf(stderr, "cudasim: cuda:%d: %s: %s\n", device, error_name(code), detail.c_str());
}

void clear_sticky_error(int device) {
  ErrorState& s = errors();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (static_cast<size_t>(device) < s.sticky.size()) s.sticky[static_cast<size_t>(device)] = Sticky{};
}

}  // namespace cudasim

using namespace cudasim;

extern "C" {

cudaError_t cudaGetLastError(void) {
  const cudaError_t sticky = sticky_error(current_device());
  if (sticky != cudaSuccess) return sticky;  // sticky errors are not cleared by reading them
  const cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  const cudaError_t sticky = sticky_error(current_device());
  return sticky != cudaSuccess ? sticky : t_last_error;
}

const char* cudaGetErrorName(cudaError_t error) { return error_name(error); }

const char* cudaGetErrorString(cudaError_t error) {
  std::string detail;
  if (error != cudaSuccess && error == t_detail_code) detail = t_detail;
  const int device = current_device();
  if (detail.empty() && error != cudaSuccess && error == sticky_error(device)) detail = sticky_detail(device);
  if (detail.empty()) return error_text(error);
  t_text = std::string(error_text(error)) + " [cudasim: " + detail + "]";
  return t_text.c_str();
}

const char* cudasimLastErrorDetail(void) {
  const int device = current_device();
  if (sticky_error(device) != cudaSuccess) {
    t_text = sticky_detail(device);
  } else {
    t_text = t_detail_code != cudaSuccess ? t_detail : std::string();
  }
  return t_text.c_str();
}

}  // extern "C"
