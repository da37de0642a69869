// Copies and fills, with the host synchronisation CUDA documents for each kind ("API
// synchronization behavior" in the runtime API reference). Asynchronous calls (*Async):
// - device <-> device and device <-> pinned host: asynchronous on the stream;
// - pageable host -> device: the source is staged at the call, the copy runs on the stream
//   (CUDA "might" synchronise here; not doing so is the stricter model);
// - device -> pageable host: returns once the copy is done;
// - host -> host: synchronous.
// cudaMemcpy: device -> device does not wait at all; pageable host -> device waits for the
// stream ("a stream sync is performed before the copy is initiated"), stages the source and
// returns: a copy still held back by other work (the blocking streams' earlier work, which
// a legacy-stream copy waits for but the legacy stream's own sync does not) lands later in
// stream order, one that can start at once is done by then, as an idle GPU's transfer is
// within microseconds (so that code which reads the result from another stream right after
// does not race on a thread's wake-up here); every other kind returns once the copy is done. cudaMemcpyPeer returns at
// once, its copy serialised with all work of the current, source and destination devices, earlier and later. cudaMemset
// is asynchronous unless it fills pinned host memory. During stream capture, a copy with pageable host memory is
// refused on a capturing stream, and a call that waits for the device is refused as streams.cpp's synchronisations are.
// Pointers are checked against the direction asked for: a host pointer where device memory
// is needed, freed memory, or a range past an allocation's end is cudaErrorInvalidValue.
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "internal.h"

namespace cudasim {
namespace {
std::atomic<unsigned long long> g_pageable_copies{0};
}  // namespace

void count_pageable_copy() { g_pageable_copies.fetch_add(1, std::memory_order_relaxed); }
}  // namespace cudasim

extern "C" unsigned long long cudasimPageableCopies(void) {
  return cudasim::g_pageable_copies.load(std::memory_order_relaxed);
}

using namespace cudasim;

namespace {

bool is_device(const PointerInfo& p) { return p.region == Region::Device; }
bool is_host(const PointerInfo& p) { return p.region == Region::Pinned || p.region == Region::Unknown; }

std::string what_is(const PointerInfo& p) { return describe_pointer(p, true); }

// Checks that [p, p + n) lies in its allocation when p is device or pinned memory.
bool in_bounds(const PointerInfo& info, const void* p, size_t n) {
  if (info.region != Region::Device && info.region != Region::Pinned) return true;
  return static_cast<size_t>(static_cast<const char*>(p) - info.base) + n <= info.size;
}

const char* kind_name(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost: return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice: return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost: return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice: return "cudaMemcpyDeviceToDevice";
    case cudaMemcpyDefault: return "cudaMemcpyDefault";
  }
  return "?";
}

// Waits for everything enqueued on `s`, as a synchronous copy does; returns the device's
// sticky error (recorded) or cudaSuccess.
cudaError_t synchronise_with_stream(const char* call, Stream* s) {
  count_host_synchronization();
  wait_stream(s);
  check_device_guards(stream_device(s), call);
  const cudaError_t e = sticky_error(stream_device(s));
  return e == cudaSuccess ? e : record_error(e);
}

// `peer`: cudaMemcpyPeer's copy, serialised with all work of the devices concerned.
cudaError_t copy(const char* call, void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t handle,
                 bool synchronous, bool peer = false) {
  if (cudaError_t e = sticky_error(current_device())) return record_error(e);
  Stream* s = find_stream(handle);
  if (!s) return record_error(cudaErrorInvalidResourceHandle, std::string(call) + ": not a live stream");
  if (n == 0) return cudaSuccess;
  if (!dst || !src) return record_error(cudaErrorInvalidValue, std::string(call) + ": null pointer");
  const PointerInfo d = find_pointer(dst), sr = find_pointer(src);
  auto fail = [&](const std::string& why) {
    return record_error(cudaErrorInvalidValue,
                        std::string(call) + " (" + kind_name(kind) + ", " + std::to_string(n) + " bytes): " + why);
  };
  if (d.region == Region::Freed) return fail("the destination is " + what_is(d));
  if (sr.region == Region::Freed) return fail("the source is " + what_is(sr));
  const bool dst_device = is_device(d), src_device = is_device(sr);
  switch (kind) {
    case cudaMemcpyHostToDevice:
      if (!dst_device || !is_host(sr)) return fail("expects host -> device, got " + what_is(sr) + " -> " + what_is(d));
      break;
    case cudaMemcpyDeviceToHost:
      if (!src_device || !is_host(d)) return fail("expects device -> host, got " + what_is(sr) + " -> " + what_is(d));
      break;
    case cudaMemcpyDeviceToDevice:
      if (!dst_device || !src_device) return fail("expects device -> device, got " + what_is(sr) + " -> " + what_is(d));
      break;
    case cudaMemcpyHostToHost:
      if (dst_device || src_device) return fail("expects host -> host, got " + what_is(sr) + " -> " + what_is(d));
      break;
    case cudaMemcpyDefault: break;
    default: return record_error(cudaErrorInvalidMemcpyDirection, std::string(call) + ": unknown copy kind");
  }
  if (!in_bounds(d, dst, n)) return fail("the destination range passes the end of its allocation");
  if (!in_bounds(sr, src, n)) return fail("the source range passes the end of its allocation");

  const bool pageable_dst = d.region == Region::Unknown, pageable_src = sr.region == Region::Unknown;
  if (pageable_dst != pageable_src) count_pageable_copy();
  // Stream capture records only what it can replay: not pageable memory (the driver stages
  // it at the call), and no call that waits for the device.
  if (pageable_dst || pageable_src) {
    if (cudaError_t e = refuse_on_capturing_stream(
            call, s, std::string("a copy with pageable host memory (") + what_is(sr) + " -> " + what_is(d) + ")"))
      return e;
  }
  if (synchronous || pageable_dst) {
    if (cudaError_t e = refuse_wait_during_capture(call, s)) return e;
  }
  if (cudaError_t e = capture_invalidated(call, s)) return e;
  if (pageable_dst && pageable_src) {  // host to host: synchronous, like the driver's
    count_host_synchronization();
    wait_stream(s);
    std::memmove(dst, src, n);
    return cudaSuccess;
  }
  if (pageable_src) {  // staged now, so the caller may reuse its buffer at once
    const bool staged_return = synchronous && dst_device;
    if (staged_return) {
      if (cudaError_t e = synchronise_with_stream(call, s)) return e;
    }
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + n);
    auto work = [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); };
    if (staged_return) {
      enqueue_waiting_unless_held(s, call, std::move(work));
      return cudaSuccess;
    }
    enqueue(s, call, std::move(work));
  } else if (peer) {
    enqueue_serialised(s, call, [dst, src, n] { std::memmove(dst, src, n); }, {current_device(), d.device, sr.device});
  } else {
    enqueue(s, call, [dst, src, n] { std::memmove(dst, src, n); });
    if (synchronous && dst_device && src_device) return cudaSuccess;
  }
  if (pageable_dst && !synchronous) {
    count_host_synchronization();
    wait_stream(s);
    check_device_guards(stream_device(s), call);
  }
  if (synchronous) return synchronise_with_stream(call, s);
  return cudaSuccess;
}

cudaError_t check_peer_pointers(const char* call, const void* dst, int dst_device, const void* src, int src_device,
                                size_t n) {
  const PointerInfo d = find_pointer(dst), s = find_pointer(src);
  if (n &&
      (d.region != Region::Device || d.device != dst_device || s.region != Region::Device || s.device != src_device))
    return record_error(cudaErrorInvalidValue, std::string(call) + ": the pointers are not device memory of cuda:" +
                                                   std::to_string(dst_device) +
                                                   " and cuda:" + std::to_string(src_device));
  return cudaSuccess;
}

cudaError_t fill(const char* call, void* dst, int value, size_t n, cudaStream_t handle, bool synchronous) {
  if (cudaError_t e = sticky_error(current_device())) return record_error(e);
  Stream* s = find_stream(handle);
  if (!s) return record_error(cudaErrorInvalidResourceHandle, std::string(call) + ": not a live stream");
  if (n == 0) return cudaSuccess;
  const PointerInfo d = find_pointer(dst);
  if (!is_device(d) && d.region != Region::Pinned)
    return record_error(cudaErrorInvalidValue, std::string(call) + ": the destination is " + what_is(d));
  if (!in_bounds(d, dst, n))
    return record_error(cudaErrorInvalidValue, std::string(call) + ": the range passes the end of its allocation");
  if (synchronous && d.region == Region::Pinned) {
    if (cudaError_t e = refuse_wait_during_capture(call, s)) return e;
  }
  if (cudaError_t e = capture_invalidated(call, s)) return e;
  enqueue(s, call, [dst, value, n] { std::memset(dst, value, n); });
  if (synchronous && d.region == Region::Pinned) {
    count_host_synchronization();
    wait_stream(s);
  }
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return copy("cudaMemcpyAsync", dst, src, count, kind, stream, false);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return copy("cudaMemcpy", dst, src, count, kind, nullptr, true);
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t count,
                                cudaStream_t stream) {
  if (cudaError_t e = check_peer_pointers("cudaMemcpyPeerAsync", dst, dst_device, src, src_device, count)) return e;
  return copy("cudaMemcpyPeerAsync", dst, src, count, cudaMemcpyDeviceToDevice, stream, false);
}

// Asynchronous with respect to the host, and serialised with all work, pending and future,
// of the current device and both devices of the copy (the runtime API's description).
cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device, size_t count) {
  if (cudaError_t e = check_peer_pointers("cudaMemcpyPeer", dst, dst_device, src, src_device, count)) return e;
  return copy("cudaMemcpyPeer", dst, src, count, cudaMemcpyDeviceToDevice, nullptr, false, true);
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t count, cudaStream_t stream) {
  return fill("cudaMemsetAsync", dst, value, count, stream, false);
}

cudaError_t cudaMemset(void* dst, int value, size_t count) {
  return fill("cudaMemset", dst, value, count, nullptr, true);
}

}  // extern "C"
