#pragma once
// The simulator's kernel launch: what `kernel<<<grid, block, shared_bytes, stream>>>(args)`
// does under nvcc. The arguments are converted to the kernel's parameter types and copied,
// as CUDA copies them into the launch; every simulated thread then calls the kernel with its
// own copy of them.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace cudasim {

// A raw pointer argument of a launch. Passing any pointer is legal in CUDA; dereferencing
// one the device cannot reach is what faults. So the executor may replace the launch's copy
// of it (through `slot`) by an address that faults when used, and names the argument then.
struct PointerArg {
  int position = 0;
  const void* value = nullptr;
  void* slot = nullptr;  // the launch's copy of the argument (a T*)
};

struct KernelLaunch {
  const char* name = "";
  const void* function = nullptr;  // the kernel, for its attributes and static shared memory
  dim3 grid;
  dim3 block;
  size_t shared_bytes = 0;
  cudaStream_t stream = nullptr;
  std::vector<PointerArg> pointer_args;
  std::function<void()> run_thread;  // runs the kernel body for the current simulated thread
};

// Checks the configuration and enqueues the kernel on its stream; returns (and records for
// cudaGetLastError) the launch error, as a <<<>>> launch does.
cudaError_t launch_kernel(KernelLaunch launch);

template <class... P, class... A>
cudaError_t launch(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, size_t shared_bytes,
                   cudaStream_t stream, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "a kernel launch passes one argument per parameter");
  auto params = std::make_shared<std::tuple<std::decay_t<P>...>>(std::forward<A>(args)...);
  KernelLaunch l;
  l.name = name;
  l.function = reinterpret_cast<const void*>(kernel);
  l.grid = grid;
  l.block = block;
  l.shared_bytes = shared_bytes;
  l.stream = stream;
  std::apply(
      [&l](auto&... p) {
        int position = 0;
        auto note = [&l, &position](auto& v) {
          using V = std::remove_reference_t<decltype(v)>;
          if constexpr (std::is_pointer_v<V> && std::is_object_v<std::remove_pointer_t<V>>)
            if (v) l.pointer_args.push_back({position, const_cast<const void*>(static_cast<const volatile void*>(v)), &v});
          ++position;
        };
        (note(p), ...);
      },
      *params);
  l.run_thread = [kernel, params] { std::apply(kernel, *params); };
  return launch_kernel(std::move(l));
}

}  // namespace cudasim
