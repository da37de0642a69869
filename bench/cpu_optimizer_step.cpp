// CPU optimizer steps (Optimizer::step) over the parameters of a small MLP, float32, about
// 1.1M elements in 6 tensors: what a training step spends after the backward. Only the
// optimizers' public classes are used, so the same file times any version of the library.
// Bytes: every parameter, gradient and state element read and written once.
#include <omp.h>

#include <functional>
#include <memory>

#include <wick/wick.h>

#include "bench/bench_support.h"

namespace wick::bench {
namespace {

struct Case {
  const char* name;
  int states;  // state buffers per parameter the step reads and writes
  std::function<std::unique_ptr<Optimizer>(NamedParameters)> make;
};

void optimizer_step(benchmark::State& s, const Case& c) {
  guarded(s, [&] {
    manual_seed(0);
    const std::vector<Shape> shapes = {{1024, 784}, {1024}, {256, 1024}, {256}, {10, 256}, {10}};
    NamedParameters params;
    int64_t numel = 0;
    for (const Shape& shape : shapes) {
      const Shape sized_shape = smoke_run() ? Shape(shape.size(), 2) : shape;
      Variable p(randn(sized_shape), /*requires_grad=*/true);
      p.set_grad(Variable(randn(sized_shape)));
      numel += p.data().numel();
      params.emplace_back("p" + std::to_string(params.size()), p);
    }
    std::unique_ptr<Optimizer> opt = c.make(params);
    opt->step();  // buffers created outside the timing
    for (auto _ : s) opt->step();
    report_bytes(s, static_cast<double>(numel) * sizeof(float) * (3 + 2 * c.states));
    s.counters["omp_threads"] = omp_get_max_threads();
    s.SetLabel(std::string("optimizer=") + c.name + " dtype=float32 numel=" + std::to_string(numel));
  });
}

bool register_all() {
  static const Case cases[] = {
      {"sgd_momentum", 1,
       [](NamedParameters p) { return std::make_unique<SGD>(p, SGDOptions{.lr = 1e-3, .momentum = 0.9}); }},
      {"adam", 2, [](NamedParameters p) { return std::make_unique<Adam>(p, AdamOptions{.lr = 1e-3}); }},
      {"rmsprop", 1, [](NamedParameters p) { return std::make_unique<RMSprop>(p, RMSpropOptions{.lr = 1e-3}); }},
      {"rmsprop_centered_momentum", 3,
       [](NamedParameters p) {
         return std::make_unique<RMSprop>(p, RMSpropOptions{.lr = 1e-3, .momentum = 0.9, .centered = true});
       }},
  };
  for (const Case& c : cases)
    benchmark::RegisterBenchmark((std::string("cpu/optimizer_step/") + c.name + "/float32").c_str(),
                                 [&c](benchmark::State& s) { optimizer_step(s, c); })
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace wick::bench
