// Simulated devices and their memory. Device memory is host memory registered per device,
// with a capacity per device, so that running out of memory is as real as on a GPU; freed
// allocations are remembered (until their addresses are reused) so that a later use of one
// is reported as such; pinned host memory is registered too, since devices may touch it.
// Device allocations lie between guard bytes (compute-sanitizer's memcheck in spirit): a
// kernel that writes just past the end of one, or just before its start, changes them,
// which the checks after each kernel, at synchronisation and at cudaFree report as a
// sticky cudaErrorIllegalAddress naming the kernel.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "internal.h"

#include <cudasim/launch.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define CUDASIM_ASAN 1
#else
#define CUDASIM_ASAN 0
#endif

#include <cudasim/cudasim.h>

namespace cudasim {

namespace {

constexpr size_t kAlignment = 256;  // what cudaMalloc guarantees
// Freed device memory is kept out of the host's heap for a while (a quarantine, as
// AddressSanitizer keeps one), so that its addresses still say "freed device memory" and
// are not reused by host allocations that a later check would mistake for it. Under
// AddressSanitizer the quarantined bytes are poisoned: a kernel that touches them is caught.
constexpr size_t kQuarantineBytes = size_t{256} << 20;

// Guard bytes on each side of a device allocation: a whole alignment unit, so the
// allocation stays 256-byte aligned. None under AddressSanitizer, which sees an access past
// an exactly sized allocation itself, at the access.
constexpr size_t kGuardBytes = CUDASIM_ASAN ? 0 : kAlignment;

// What guard bytes hold: not a run of one value (0xff is what fresh device memory holds,
// 0 what kernels often write), so that a write of a common value changes some of them.
const unsigned char* guard_pattern() {
  static const auto pattern = [] {
    std::array<unsigned char, kAlignment> p{};
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<unsigned char>(0xa5u ^ (i * 0x3bu));
    return p;
  }();
  return pattern.data();
}

struct Allocation {
  char* base = nullptr;
  size_t size = 0;
  int device = -1;  // -1: pinned host memory
  bool freed = false;
  char* host = nullptr;  // the host allocation: base less the guard in front, if any

  bool guarded() const { return device >= 0 && kGuardBytes > 0; }
};

char* allocate_host(size_t bytes) {
  // Exactly `bytes` so that AddressSanitizer sees an access past the end of a device buffer.
  void* p = ::operator new(std::max<size_t>(bytes, 1), std::align_val_t(kAlignment), std::nothrow);
  return static_cast<char*>(p);
}

void free_host(char* p) { ::operator delete(p, std::align_val_t(kAlignment)); }

void poison(const char* p, size_t n) {
#if CUDASIM_ASAN
  ASAN_POISON_MEMORY_REGION(p, n);
#else
  (void)p, (void)n;
#endif
}

void unpoison(const char* p, size_t n) {
#if CUDASIM_ASAN
  ASAN_UNPOISON_MEMORY_REGION(p, n);
#else
  (void)p, (void)n;
#endif
}

size_t parse_bytes(const char* text, size_t fallback) {
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || v < 0) return fallback;
  double scale = 1;
  switch (*end) {
    case 'k':
    case 'K': scale = 1024.0; break;
    case 'm':
    case 'M': scale = 1024.0 * 1024; break;
    case 'g':
    case 'G': scale = 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return static_cast<size_t>(v * scale);
}

struct Memory {
  std::mutex mutex;
  int count = 2;
  std::vector<size_t> capacity;
  std::vector<size_t> used;
  std::vector<std::vector<bool>> peer;      // peer[d][p]: d enabled access to p
  std::map<uintptr_t, Allocation> regions;  // live and remembered freed ones, by base address
  std::vector<const char*> last_kernel;     // per device: the kernel that ran last (guard reports)

  Memory() {
    if (const char* n = std::getenv("CUDASIM_DEVICE_COUNT")) count = std::clamp(std::atoi(n), 0, 64);
    capacity.assign(static_cast<size_t>(count), parse_bytes(std::getenv("CUDASIM_DEVICE_MEMORY"), size_t{16} << 30));
    used.assign(static_cast<size_t>(count), 0);
    peer.assign(static_cast<size_t>(count), std::vector<bool>(static_cast<size_t>(count), false));
    last_kernel.assign(static_cast<size_t>(count), nullptr);
  }

  // The region containing p. Not one past its end: host memory from the same heap may
  // start there.
  const Allocation* find(const void* p) const {
    const auto a = reinterpret_cast<uintptr_t>(p);
    auto it = regions.upper_bound(a);
    if (it == regions.begin()) return nullptr;
    --it;
    return a < it->first + std::max<size_t>(it->second.size, 1) ? &it->second : nullptr;
  }

  std::deque<uintptr_t> quarantine;  // freed regions, oldest first
  size_t quarantined = 0;

  void remember_freed(std::map<uintptr_t, Allocation>::iterator it) {
    it->second.freed = true;
    poison(it->second.base, it->second.size);
    quarantine.push_back(it->first);
    quarantined += it->second.size;
    while (quarantined > kQuarantineBytes && quarantine.size() > 1) {
      auto oldest = regions.find(quarantine.front());
      quarantine.pop_front();
      quarantined -= oldest->second.size;
      unpoison(oldest->second.base, oldest->second.size);
      free_host(oldest->second.host);
      regions.erase(oldest);
    }
  }
};

// Where the guard bytes of `a` differ from the pattern, in words relative to the allocation
// ("bytes 400 to 403, past its end"); "" when they are intact. Repairs them, so that one
// overrun is reported once.
std::string damaged_guards(const Allocation& a) {
  if (!a.guarded() || a.freed) return {};
  const unsigned char* pattern = guard_pattern();
  std::string what;
  // [from, from + kGuardBytes) holds the guard; `origin` is its first byte's offset from base.
  auto check = [&](char* from, long long origin, const char* side) {
    long long first = -1, last = -1;
    for (size_t i = 0; i < kGuardBytes; ++i) {
      if (static_cast<unsigned char>(from[i]) == pattern[i]) continue;
      if (first < 0) first = static_cast<long long>(i);
      last = static_cast<long long>(i);
    }
    if (first < 0) return;
    if (!what.empty()) what += " and ";
    what += (first == last ? "byte " + std::to_string(origin + first)
                           : "bytes " + std::to_string(origin + first) + " to " + std::to_string(origin + last)) +
            ", " + side;
    std::memcpy(from, pattern, kGuardBytes);
  };
  check(a.host, -static_cast<long long>(kGuardBytes), "before its start");
  check(a.base + a.size, static_cast<long long>(a.size), "past its end");
  return what;
}

std::string describe_allocation(const Allocation& a) {
  return "the " + std::to_string(a.size) + "-byte allocation at " + pointer_text(a.base) +
         " (device memory of cuda:" + std::to_string(a.device) + ")";
}

Memory& memory() {
  static Memory* m = new Memory;  // outlives static destructors: stream workers may still run
  return *m;
}

thread_local int t_device = 0;

// For damage found away from a kernel's end: who may have done it.
std::string last_kernel_text(const Memory& m, int device) {
  const char* k = device >= 0 ? m.last_kernel[static_cast<size_t>(device)] : nullptr;
  return std::string("written by host code or by a kernel that reached it other than through a pointer argument") +
         (k ? "; the last kernel to run on cuda:" + std::to_string(device) + " was '" + k + "'" : std::string());
}

cudaError_t free_device_allocation(void* p, bool pinned, const char* call) {
  Memory& m = memory();
  int device = -1;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    auto it = m.regions.find(reinterpret_cast<uintptr_t>(p));
    if (it == m.regions.end() || it->second.freed || (it->second.device < 0) != pinned) {
      PointerInfo info;
      if (const Allocation* a = m.find(p)) {
        info.region = a->freed ? Region::Freed : a->device < 0 ? Region::Pinned : Region::Device;
        info.device = a->device;
      }
      return record_error(cudaErrorInvalidValue,
                          std::string(call) + ": " + std::to_string(reinterpret_cast<uintptr_t>(p)) +
                              " is not the start of a live allocation (" + describe_pointer(info, false) + ")");
    }
    device = it->second.device;
  }
  // Both calls wait for the device's work first (documented for cudaFree; cudaFreeHost
  // waits for everything, since any device may be reading the page-locked memory).
  if (cudaError_t e = refuse_wait_during_capture(call, nullptr)) return e;
  if (pinned) {
    for (int d = 0; d < m.count; ++d) wait_device(d);
  } else {
    wait_device(device);
  }
  std::string overwritten;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    auto it = m.regions.find(reinterpret_cast<uintptr_t>(p));
    if (const std::string damage = damaged_guards(it->second); !damage.empty())
      overwritten = describe_allocation(it->second) + " was written outside its bounds: " + damage +
                    " (its guard bytes, found at " + call + "); " + last_kernel_text(m, device);
    if (device >= 0) m.used[static_cast<size_t>(device)] -= it->second.size;
    m.remember_freed(it);
  }
  if (!overwritten.empty()) {
    set_sticky_error(device, cudaErrorIllegalAddress, overwritten);
    return record_error(cudaErrorIllegalAddress);
  }
  return cudaSuccess;
}

cudaError_t allocate(void** out, size_t bytes, int device, const char* call) {
  if (!out) return record_error(cudaErrorInvalidValue, std::string(call) + ": null result pointer");
  *out = nullptr;
  Memory& m = memory();
  if (device >= 0) {
    std::lock_guard<std::mutex> lock(m.mutex);
    const size_t d = static_cast<size_t>(device);
    if (bytes > m.capacity[d] - m.used[d])
      return record_error(cudaErrorMemoryAllocation, std::string(call) + ": " + std::to_string(bytes) +
                                                         " bytes on cuda:" + std::to_string(device) + " with " +
                                                         std::to_string(m.capacity[d] - m.used[d]) + " of " +
                                                         std::to_string(m.capacity[d]) + " free");
    m.used[d] += bytes;
  }
  const size_t guard = device >= 0 ? kGuardBytes : 0;
  char* host = bytes > SIZE_MAX - 2 * guard ? nullptr : allocate_host(bytes + 2 * guard);
  char* p = host ? host + guard : nullptr;
  std::lock_guard<std::mutex> lock(m.mutex);
  if (!p) {
    if (device >= 0) m.used[static_cast<size_t>(device)] -= bytes;
    return record_error(cudaErrorMemoryAllocation,
                        std::string(call) + ": the host has no memory for " + std::to_string(bytes) + " bytes");
  }
  // Device memory starts as garbage, as on a GPU: all ones is NaN for floats and -1 for
  // integers, so reading what was never written shows.
  if (device >= 0) std::memset(p, 0xff, bytes);
  if (guard) {
    std::memcpy(host, guard_pattern(), guard);
    std::memcpy(p + bytes, guard_pattern(), guard);
  }
  m.regions[reinterpret_cast<uintptr_t>(p)] = Allocation{p, bytes, device, false, host};
  *out = p;
  return cudaSuccess;
}

}  // namespace

std::string describe_pointer(const PointerInfo& info, bool pageable) {
  switch (info.region) {
    case Region::Device: return "device memory of cuda:" + std::to_string(info.device);
    case Region::Pinned: return "pinned host memory";
    case Region::Freed: return "freed device memory of cuda:" + std::to_string(info.device);
    case Region::Unknown:
      return pageable ? "pageable host memory" : "host memory (not allocated by cudaMalloc or cudaHostAlloc)";
  }
  return "?";
}

int device_count() { return memory().count; }
int current_device() { return t_device; }

bool peer_access_enabled(int device, int peer) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  return m.peer[static_cast<size_t>(device)][static_cast<size_t>(peer)];
}

PointerInfo find_pointer(const void* p) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  const Allocation* a = m.find(p);
  PointerInfo info;
  if (!a) return info;
  info.region = a->freed ? Region::Freed : a->device < 0 ? Region::Pinned : Region::Device;
  info.device = a->device;
  info.base = a->base;
  info.size = a->size;
  return info;
}

bool device_can_access(int device, const void* p, size_t bytes, std::string* why) {
  const PointerInfo info = find_pointer(p);
  auto fail = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (info.region == Region::Unknown || info.region == Region::Freed) return fail(describe_pointer(info, false));
  const auto offset = static_cast<size_t>(static_cast<const char*>(p) - info.base);
  if (offset + bytes > info.size)
    return fail(std::to_string(bytes) + " bytes at offset " + std::to_string(offset) + " of a " +
                std::to_string(info.size) + "-byte allocation (" + describe_pointer(info, false) + ")");
  if (info.region == Region::Device && info.device != device && !peer_access_enabled(device, info.device))
    return fail(describe_pointer(info, false) + ", used on cuda:" + std::to_string(device) + " without peer access");
  return true;
}

cudaError_t check_device(int device) {
  if (device_count() == 0) return record_error(cudaErrorNoDevice);
  if (device < 0 || device >= device_count())
    return record_error(cudaErrorInvalidDevice, "no cuda:" + std::to_string(device) + " (the simulator has " +
                                                    std::to_string(device_count()) + " devices: CUDASIM_DEVICE_COUNT)");
  return cudaSuccess;
}

std::string check_kernel_guards(int device, const char* kernel, const PointerArg* args, size_t n) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (device >= 0 && device < m.count) m.last_kernel[static_cast<size_t>(device)] = kernel;
  for (size_t i = 0; i < n; ++i) {
    const char* p = static_cast<const char*>(args[i].value);
    const Allocation* a = m.find(p);
    if (!a && p) {  // the end of an allocation is a legal argument too
      a = m.find(p - 1);
      if (a && a->base + a->size != p) a = nullptr;
    }
    if (!a) continue;
    if (const std::string damage = damaged_guards(*a); !damage.empty())
      return std::string("kernel '") + kernel + "' wrote outside " + describe_allocation(*a) + ", which its argument " +
             std::to_string(args[i].position) + " (" + pointer_text(p) + ") points into: " + damage +
             " (guard bytes, checked after the kernel)";
  }
  return {};
}

void check_device_guards(int device, const char* call) {
  Memory& m = memory();
  std::string overwritten;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    for (const auto& [base, a] : m.regions) {
      if (a.device != device) continue;
      if (const std::string damage = damaged_guards(a); !damage.empty()) {
        overwritten = describe_allocation(a) + " was written outside its bounds: " + damage +
                      " (its guard bytes, found at " + call + "); " + last_kernel_text(m, device);
        break;
      }
    }
  }
  if (!overwritten.empty()) set_sticky_error(device, cudaErrorIllegalAddress, overwritten);
}

size_t device_capacity(int device) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  return m.capacity[static_cast<size_t>(device)];
}

}  // namespace cudasim

using namespace cudasim;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return record_error(cudaErrorInvalidValue);
  *count = device_count();
  return device_count() == 0 ? record_error(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (cudaError_t e = check_device(device)) return e;
  t_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (!device) return record_error(cudaErrorInvalidValue);
  if (device_count() == 0) return record_error(cudaErrorNoDevice);
  *device = t_device;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t size) {
  const int device = current_device();
  if (cudaError_t e = sticky_error(device)) return record_error(e);
  if (size == 0) {
    if (ptr) *ptr = nullptr;
    return ptr ? cudaSuccess : record_error(cudaErrorInvalidValue);
  }
  return allocate(ptr, size, device, "cudaMalloc");
}

cudaError_t cudaFree(void* ptr) {
  if (!ptr) return cudaSuccess;
  return free_device_allocation(ptr, false, "cudaFree");
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  (void)flags;  // portable / mapped / write-combined change nothing for the host's own memory
  return allocate(ptr, size, -1, "cudaHostAlloc");
}

cudaError_t cudaMallocHost(void** ptr, size_t size) { return allocate(ptr, size, -1, "cudaMallocHost"); }

cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr) return cudaSuccess;
  return free_device_allocation(ptr, true, "cudaFreeHost");
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (!free || !total) return record_error(cudaErrorInvalidValue);
  Memory& m = memory();
  const int device = current_device();
  if (cudaError_t e = check_device(device)) return e;
  std::lock_guard<std::mutex> lock(m.mutex);
  *total = m.capacity[static_cast<size_t>(device)];
  *free = *total - m.used[static_cast<size_t>(device)];
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  if (cudaError_t e = check_device(device)) return e;
  if (cudaError_t e = check_device(peer)) return e;
  if (!can) return record_error(cudaErrorInvalidValue);
  *can = device != peer;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  if (cudaError_t e = check_device(peer)) return e;
  if (flags != 0) return record_error(cudaErrorInvalidValue, "cudaDeviceEnablePeerAccess: flags must be 0");
  const int device = current_device();
  if (peer == device)
    return record_error(cudaErrorInvalidDevice, "cudaDeviceEnablePeerAccess: a device is not its own peer");
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto&& enabled = m.peer[static_cast<size_t>(device)][static_cast<size_t>(peer)];
  if (enabled) return record_error(cudaErrorPeerAccessAlreadyEnabled);
  enabled = true;
  return cudaSuccess;
}

cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  if (cudaError_t e = check_device(peer)) return e;
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto&& enabled = m.peer[static_cast<size_t>(current_device())][static_cast<size_t>(peer)];
  if (!enabled) return record_error(cudaErrorPeerAccessNotEnabled);
  enabled = false;
  return cudaSuccess;
}

// Waits for the device's work, forgets its sticky error and frees its memory: the context
// is new afterwards.
cudaError_t cudaDeviceReset(void) {
  const int device = current_device();
  wait_device(device);
  clear_sticky_error(device);
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  std::vector<uintptr_t> live;
  for (const auto& [base, r] : m.regions)
    if (r.device == device && !r.freed) live.push_back(base);
  for (uintptr_t base : live) m.remember_freed(m.regions.find(base));
  m.used[static_cast<size_t>(device)] = 0;
  for (auto&& p : m.peer[static_cast<size_t>(device)]) p = false;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (!version) return record_error(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  if (!version) return record_error(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudasimSetDeviceMemoryLimit(int device, size_t bytes) {
  if (cudaError_t e = check_device(device)) return e;
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (m.used[static_cast<size_t>(device)] > bytes)
    return record_error(cudaErrorInvalidValue, "cudasimSetDeviceMemoryLimit: more is allocated");
  m.capacity[static_cast<size_t>(device)] = bytes;
  return cudaSuccess;
}

size_t cudasimDeviceMemoryUsed(int device) {
  if (device < 0 || device >= device_count()) return 0;
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  return m.used[static_cast<size_t>(device)];
}

}  // extern "C"
