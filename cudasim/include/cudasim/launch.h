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

struct KernelLaunch {
  const char* name = "";
  dim3 grid;
  dim3 block;
  size_t shared_bytes = 0;
  cudaStream_t stream = nullptr;
  // The raw pointer arguments (position, value): checked to be memory the device may touch
  // before the kernel runs, so a host or freed pointer is an error naming the kernel.
  std::vector<std::pair<int, const void*>> pointer_args;
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
  l.grid = grid;
  l.block = block;
  l.shared_bytes = shared_bytes;
  l.stream = stream;
  std::apply(
      [&l](const auto&... p) {
        int position = 0;
        auto note = [&l, &position](const auto& v) {
          if constexpr (std::is_pointer_v<std::decay_t<decltype(v)>>)
            if (v) l.pointer_args.emplace_back(position, static_cast<const void*>(v));
          ++position;
        };
        (note(p), ...);
      },
      *params);
  l.run_thread = [kernel, params] { std::apply(kernel, *params); };
  return launch_kernel(std::move(l));
}

}  // namespace cudasim
