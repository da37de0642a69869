#pragma once
// What the simulator offers beyond NVIDIA's API, for tests that check the simulator itself
// or that need a small device. wick's library code does not call these.
#include <cuda_runtime_api.h>

#include <cstddef>

extern "C" {

// The detail of the error most recently recorded on this thread, or of the current device's
// sticky error: which call or kernel failed and why ("" when none).
const char* cudasimLastErrorDetail(void);

// Sets the capacity of a simulated device (default: CUDASIM_DEVICE_MEMORY bytes, else
// 16 GiB), so that out-of-memory paths can be tested. Fails with cudaErrorInvalidValue when
// more is allocated there already.
cudaError_t cudasimSetDeviceMemoryLimit(int device, size_t bytes);

// Bytes allocated on a simulated device.
size_t cudasimDeviceMemoryUsed(int device);

// Kernel launches accepted so far by this process, on every device and stream: tests count
// the launches an op makes with it.
unsigned long long cudasimKernelLaunches(void);

// The name of the kernel this host thread launched last, as its launch named it ("" when
// none): tests check which kernel an op dispatched to.
const char* cudasimLastLaunchName(void);

// Host synchronisations so far by this process, on every device: calls that wait for device
// work (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, and the copies
// and fills that wait: cudaMemcpy other than device to device (from pageable memory to the
// device, the stream sync before staging), cudaMemcpyAsync
// to pageable host memory, cudaMemset of pinned memory). Tests count the waits an op makes.
unsigned long long cudasimHostSynchronizations(void);

// Copies so far by this process between pageable host memory and device or pinned memory
// (every cudaMemcpy* kind, synchronous or not, refused or not): the driver stages them through
// a buffer of its own, and a stream capture cannot record them. Tests count an op's.
unsigned long long cudasimPageableCopies(void);
// With run == 0, accepted launches are checked and counted but their kernels do not run (the
// memory they would write keeps its contents): for measuring the host cost of an op. 1
// (the default) runs them again.
void cudasimSetKernelExecution(int run);

// For the simulator's own tests: at most `stacks` fiber stacks with a guard region in use at
// once (default: what the process's memory-mapping limit allows), so that the unguarded
// stacks beyond, and their canaries, can be tested. SIZE_MAX restores the default.
void cudasimSetGuardedStackLimit(size_t stacks);

// 1 when a memory fault in kernel code (a wild address, a dereferenced pointer argument the
// device cannot reach, a thread's stack overflow) becomes a sticky cudaErrorIllegalAddress;
// 0 under AddressSanitizer, which reports such accesses itself (pointer arguments the device
// cannot reach are then refused when the kernel starts, dereferenced or not).
int cudasimCatchesKernelFaults(void);
}
