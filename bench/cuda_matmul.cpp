// CUDA matrix products C = A @ B at 4096 x 4096 x 4096 (2 * 4096^3 FLOP): float32 with TF32
// off (the default) and on, bfloat16 and float16, through wick::matmul (cuBLAS underneath).
// Target (bench/README.md): within 5% of torch.matmul on the same GPU.
#include <wick/wick.h>

#include "bench/bench_support.h"
#include "bench/cuda_timing.h"

namespace wick::bench {
namespace {

const int64_t kN = sized(4096, 64);
const int kBatch = static_cast<int>(sized(10, 1));

// Sets the TF32 switch for one case and puts back what the process had.
class AllowTf32 {
 public:
  explicit AllowTf32(bool allow) : before_(cuda::allow_tf32()) { cuda::set_allow_tf32(allow); }
  ~AllowTf32() { cuda::set_allow_tf32(before_); }
  AllowTf32(const AllowTf32&) = delete;
  AllowTf32& operator=(const AllowTf32&) = delete;

 private:
  bool before_;
};

void matmul_case(benchmark::State& s, DType dtype, bool tf32) {
  guarded(s, [&] {
    manual_seed(0);
    Tensor a = randn({kN, kN}, Device::cuda()).to(dtype), b = randn({kN, kN}, Device::cuda()).to(dtype);
    AllowTf32 allow(tf32);
    time_on_gpu(s, kBatch, [&] { benchmark::DoNotOptimize(matmul(a, b).data_ptr()); });
    report_flops(s, 2.0 * kN * kN * kN);
    s.SetLabel(std::string("op=matmul dtype=") + dtype_name(dtype) + " shape=" + dims_str({kN, kN, kN}) +
               " tf32=" + (tf32 ? "1" : "0"));
  });
}

bool register_all() {
  struct Case {
    DType dtype;
    bool tf32;
  };
  for (const Case& c : {Case{DType::Float32, false}, Case{DType::Float32, true}, Case{DType::BFloat16, false},
                        Case{DType::Float16, false}}) {
    const std::string id = std::string("cuda/matmul") + (c.tf32 ? "_tf32" : "") + "/" + dtype_name(c.dtype) + "/" +
                           dims_str({kN, kN, kN});
    register_gpu_case(id, [c](benchmark::State& s) { matmul_case(s, c.dtype, c.tf32); });
  }
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace wick::bench
