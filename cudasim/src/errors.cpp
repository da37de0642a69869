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

// The codes the simulator returns, with the runtime's names and texts for them.
struct ErrorInfo {
  cudaError_t code;
  const char* name;
  const char* text;
};

constexpr ErrorInfo kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorPeerAccessAlreadyEnabled, "cudaErrorPeerAccessAlreadyEnabled", "peer access is already enabled"},
    {cudaErrorPeerAccessNotEnabled, "cudaErrorPeerAccessNotEnabled", "peer access has not been enabled"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidKernelImage, "cudaErrorInvalidKernelImage", "device kernel image is invalid"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    // Stream capture and graphs (graphs.cpp, streams.cpp): shortened from driver_types.h's descriptions.
    {cudaErrorIllegalState, "cudaErrorIllegalState", "the resource is not in a valid state for the operation"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "the capture sequence was invalidated by a previous error"},
    {cudaErrorStreamCaptureMerge, "cudaErrorStreamCaptureMerge", "would merge two independent capture sequences"},
    {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched",
     "the capture was not initiated in this stream"},
    {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined",
     "the capture sequence contains a fork that was not joined to the primary stream"},
    {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation",
     "a dependency would cross the capture sequence boundary"},
    {cudaErrorCapturedEvent, "cudaErrorCapturedEvent",
     "operation not permitted on an event last recorded in a capturing stream"},
    {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread",
     "the capture sequence was ended on another thread"},
    {cudaErrorGraphExecUpdateFailure, "cudaErrorGraphExecUpdateFailure",
     "the graph update was not performed: it changed what an instantiated graph's update may not change"},
};

ErrorInfo info_of(cudaError_t e) {
  for (const ErrorInfo& i : kErrors)
    if (i.code == e) return i;
  return {e, "cudaErrorUnknown", "unknown error"};
}

const char* error_name(cudaError_t e) { return info_of(e).name; }
const char* error_text(cudaError_t e) { return info_of(e).text; }

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
