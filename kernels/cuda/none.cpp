// The CUDA backend of a build without CUDA (-DWICK_CUDA=OFF): no kernels are registered,
// device_count() is 0, and the rest of the CUDA runtime API throws saying so.
#include <wick/tensor/allocator.h>
#include <wick/tensor/cuda.h>
#include <wick/tensor/dispatch.h>
#include <wick/tensor/error.h>

#include "kernels/cuda/caching_allocator.h"

namespace wick {

void register_cuda_kernels(Backend&) {}

Allocator& pinned_allocator() { return cpu_allocator(); }

namespace cuda {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  ::wick::detail::throw_error("cuda::", what,
                              ": this build of wick has no CUDA support (configure with -DWICK_CUDA=ON)");
}
}  // namespace

int device_count() { return 0; }
bool is_available() { return false; }
bool is_built() { return false; }
int current_device() { no_cuda("current_device"); }
void set_device(int) { no_cuda("set_device"); }
void synchronize(int) { no_cuda("synchronize"); }
DeviceGuard::DeviceGuard(int) : previous_(0) { no_cuda("DeviceGuard"); }
DeviceGuard::~DeviceGuard() = default;
Stream Stream::create(int, int) { no_cuda("Stream::create"); }
Stream Stream::default_stream(int) { no_cuda("Stream::default_stream"); }
void Stream::synchronize() const { no_cuda("Stream::synchronize"); }
bool Stream::query() const { no_cuda("Stream::query"); }
Stream current_stream(int) { no_cuda("current_stream"); }
void set_current_stream(const Stream&) { no_cuda("set_current_stream"); }
StreamGuard::StreamGuard(const Stream&) { no_cuda("StreamGuard"); }
StreamGuard::~StreamGuard() = default;
Event::Event(bool) { no_cuda("Event"); }
void Event::record(const Stream&) { no_cuda("Event::record"); }
void Event::record() { no_cuda("Event::record"); }
void Event::wait(const Stream&) const { no_cuda("Event::wait"); }
void Event::synchronize() const { no_cuda("Event::synchronize"); }
bool Event::query() const { no_cuda("Event::query"); }
float Event::elapsed_ms(const Event&) const { no_cuda("Event::elapsed_ms"); }
bool is_capturing(int) { return false; }
struct Graph::State {};
Graph::Graph(int) { no_cuda("Graph"); }
Graph::~Graph() = default;
void Graph::capture(const std::function<void()>&) { no_cuda("Graph::capture"); }
void Graph::replay() { no_cuda("Graph::replay"); }
bool Graph::captured() const { return false; }
const Stream& Graph::stream() const { no_cuda("Graph::stream"); }
size_t Graph::num_nodes() const { return 0; }
MemoryStats memory_stats(int) { no_cuda("memory_stats"); }
void reset_peak_memory_stats(int) { no_cuda("reset_peak_memory_stats"); }
void empty_cache() {}
void record_stream(const Tensor&, const Stream&) {}
void set_allow_tf32(bool) {}
bool allow_tf32() { return false; }
void set_allow_reduced_precision_reduction(bool) {}
bool allow_reduced_precision_reduction() { return true; }
KernelTuning kernel_tuning() { return {}; }
void set_kernel_tuning(const KernelTuning&) {}

namespace detail {
void set_allocation_checks(bool) {}
size_t allocation_check_failures() { return 0; }
}  // namespace detail

}  // namespace cuda
}  // namespace wick
