// Kernel variants side by side, so that one GPU run proves or refutes each change of issue
// 20 (tools/gpu-bench.sh): every case here has a twin in cuda_elementwise.cpp /
// cuda_reduce.cpp / cuda_matmul.cpp that runs the default variant; the label's variant=
// field names the one measured here.
// - elementwise (add, mul, gelu): "legacy_loads" is the kernel before the change, packs read
//   through a reference into global memory (nvcc then loads element by element) and one
//   pack per step; "unroll1" reads packs by value, one per step; "soft_round" is the
//   default kernel with bfloat16/half rounding done in integer arithmetic instead of cvt.
// - reductions: "generic" turns the unit-stride paths off (KernelTuning).
// - softmax: "two_pass" turns the rows in registers off.
// - matmul: every cuBLAS entry point with reduced-precision reductions allowed or not.
// The legacy and unroll1 kernels are measurement fixtures, written here and nowhere else.
#include <cuda_runtime.h>

#include <string>

#include <wick/wick.h>

#include "bench/bench_support.h"
#include "bench/cuda_timing.h"
#include "kernels/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/elementwise_math.h"

namespace wick::bench {
namespace {

using cuda_kernels::Pack;
using cuda_kernels::launch_kernel;

const int64_t kNumel = sized(int64_t{1} << 26, 4099);
const int kBatch = static_cast<int>(sized(20, 1));

// --- elementwise fixtures ---------------------------------------------------------------

// The kernel before the change: packs bound to const references into global memory.
template <int V, class F, class T, class... P>
__device__ __forceinline__ void legacy_apply(const F& f, T* out, int64_t v, const P&... packs) {
  Pack<T, V> r;
#pragma unroll
  for (int k = 0; k < V; ++k) r.v[k] = f(packs.v[k]...);
  reinterpret_cast<Pack<T, V>*>(out)[v] = r;
}

template <int V, bool kLegacy, class F, class T, class... In>
__global__ void one_pack_kernel(int64_t n, F f, T* out, const In*... in) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t packs = n / V;
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < packs; v += step) {
    if constexpr (kLegacy) {
      legacy_apply<V>(f, out, v, reinterpret_cast<const Pack<In, V>*>(in)[v]...);
    } else {
      Pack<T, V> r;
      const auto compute = [&](auto... loaded) {
#pragma unroll
        for (int k = 0; k < V; ++k) r.v[k] = f(loaded.v[k]...);
      };
      compute(reinterpret_cast<const Pack<In, V>*>(in)[v]...);
      reinterpret_cast<Pack<T, V>*>(out)[v] = r;
    }
  }
  for (int64_t i = packs * V + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    out[i] = f(in[i]...);
}

// Rounds to T through the integer path of wick/tensor/half.h (the default kernels use cvt).
template <class T>
__device__ __forceinline__ T soft_round(float x) {
  if constexpr (std::is_same_v<T, BFloat16>) return BFloat16::from_bits(detail::bfloat16_bits_soft(x));
  else if constexpr (std::is_same_v<T, Half>) return Half::from_bits(detail::half_bits_soft(x));
  else return static_cast<T>(x);
}

template <BinaryOp Op, class T, bool kSoft>
struct BinaryF {
  __device__ T operator()(T a, T b) const {
    using C = compute_t<T>;
    const C r = binary_fn<Op, C>(static_cast<C>(a), static_cast<C>(b));
    if constexpr (kSoft) return soft_round<T>(r);
    else return convert<T>(r);
  }
};

template <class T, bool kSoft>
struct GeluF {
  UnaryParams p{};
  __device__ T operator()(T x) const {
    using C = compute_t<T>;
    const C r = unary_fn<UnaryOp::GeluErf, C>(static_cast<C>(x), p);
    if constexpr (kSoft) return soft_round<T>(r);
    else return convert<T>(r);
  }
};

enum class Variant { Legacy, Unroll1, SoftRound };
const char* variant_name(Variant v) {
  return v == Variant::Legacy ? "legacy_loads" : v == Variant::Unroll1 ? "unroll1" : "soft_round";
}

template <class T, class F, class... In>
void launch_variant(Variant v, int64_t n, const F& f, T* out, const In*... in) {
  constexpr int V = static_cast<int>(16 / sizeof(T));
  const cudaStream_t stream = static_cast<cudaStream_t>(cuda::current_stream().handle());
  if (v == Variant::SoftRound) {
    cuda_kernels::launch_kernel("contiguous_kernel", &cuda_kernels::detail::contiguous_kernel<V, F, T, In...>,
                                cuda_kernels::blocks_for(n, cuda_kernels::kThreads, V * cuda_kernels::detail::kUnroll),
                                cuda_kernels::kThreads, 0, stream, n, f, out, in...);
  } else if (v == Variant::Legacy) {
    launch_kernel("one_pack_kernel", &one_pack_kernel<V, true, F, T, In...>,
                  cuda_kernels::blocks_for(n, cuda_kernels::kThreads, V), cuda_kernels::kThreads, 0, stream, n, f, out,
                  in...);
  } else {
    launch_kernel("one_pack_kernel", &one_pack_kernel<V, false, F, T, In...>,
                  cuda_kernels::blocks_for(n, cuda_kernels::kThreads, V), cuda_kernels::kThreads, 0, stream, n, f, out,
                  in...);
  }
  WICK_CUDA_CHECK_LAUNCH("variant");
}

template <class T>
void elementwise_variant(benchmark::State& s, const std::string& op, Variant v) {
  guarded(s, [&] {
    const DType dtype = dtype_v<T>;
    manual_seed(0);
    Tensor a = randn({kNumel}, Device::cuda()).to(dtype), b = randn({kNumel}, Device::cuda()).to(dtype);
    Tensor out = empty({kNumel}, Options(dtype, Device::cuda()));
    const T* pa = static_cast<const T*>(a.data_ptr());
    const T* pb = static_cast<const T*>(b.data_ptr());
    T* po = static_cast<T*>(out.data_ptr());
    const bool soft = v == Variant::SoftRound;
    time_on_gpu(s, kBatch, [&] {
      if (op == "gelu") {
        if (soft) launch_variant(v, kNumel, GeluF<T, true>{}, po, pa);
        else launch_variant(v, kNumel, GeluF<T, false>{}, po, pa);
      } else if (op == "add") {
        if (soft) launch_variant(v, kNumel, BinaryF<BinaryOp::Add, T, true>{}, po, pa, pb);
        else launch_variant(v, kNumel, BinaryF<BinaryOp::Add, T, false>{}, po, pa, pb);
      } else {
        if (soft) launch_variant(v, kNumel, BinaryF<BinaryOp::Mul, T, true>{}, po, pa, pb);
        else launch_variant(v, kNumel, BinaryF<BinaryOp::Mul, T, false>{}, po, pa, pb);
      }
    });
    const double inputs = op == "gelu" ? 1 : 2;
    report_bytes(s, (inputs + 1) * static_cast<double>(kNumel) * sizeof(T));
    s.SetLabel("op=" + op + " dtype=" + dtype_name(dtype) + " shape=" + dims_str({kNumel}) +
               " variant=" + variant_name(v));
  });
}

// --- reductions and softmax with a KernelTuning switch off -------------------------------

class Tuning {
 public:
  explicit Tuning(const cuda::KernelTuning& t) : before_(cuda::kernel_tuning()) { cuda::set_kernel_tuning(t); }
  ~Tuning() { cuda::set_kernel_tuning(before_); }
  Tuning(const Tuning&) = delete;
  Tuning& operator=(const Tuning&) = delete;

 private:
  cuda::KernelTuning before_;
};

void reduction_variant(benchmark::State& s, const std::string& op, const Shape& shape, DType dtype) {
  guarded(s, [&] {
    manual_seed(0);
    Tensor x = randn(shape, Device::cuda()).to(dtype);
    cuda::KernelTuning t;
    std::string variant;
    int64_t out_numel = 1;
    if (op == "softmax") {
      t.softmax_in_registers = false;
      variant = "two_pass";
      out_numel = x.numel();
    } else {
      t.reduce_unit_stride = false;
      variant = "generic";
      if (op == "sum_rows") out_numel = shape[0];
      if (op == "sum_cols") out_numel = shape[1];
    }
    Tuning tuning(t);
    time_on_gpu(s, kBatch, [&] {
      if (op == "sum_rows") benchmark::DoNotOptimize(sum(x, {-1}).data_ptr());
      else if (op == "sum_cols") benchmark::DoNotOptimize(sum(x, {0}).data_ptr());
      else if (op == "sum_all") benchmark::DoNotOptimize(sum(x).data_ptr());
      else benchmark::DoNotOptimize(softmax(x, -1).data_ptr());
    });
    report_bytes(s, static_cast<double>(x.numel() + out_numel) * static_cast<double>(element_size(dtype)));
    s.SetLabel("op=" + op + " dtype=" + dtype_name(dtype) + " shape=" + dims_str(shape) + " variant=" + variant);
  });
}

// --- matrix products through each cuBLAS entry point --------------------------------------

const char* api_name(cuda::GemmApi api) {
  switch (api) {
    case cuda::GemmApi::Auto: return "gemmex";
    case cuda::GemmApi::StridedBatched: return "strided";
    case cuda::GemmApi::StridedBatched64: return "strided64";
  }
  return "?";
}

void matmul_variant(benchmark::State& s, DType dtype, bool tf32, cuda::GemmApi api, bool reduced) {
  guarded(s, [&] {
    const int64_t n = sized(4096, 64);
    manual_seed(0);
    Tensor a = randn({n, n}, Device::cuda()).to(dtype), b = randn({n, n}, Device::cuda()).to(dtype);
    const bool tf32_before = cuda::allow_tf32(), reduced_before = cuda::allow_reduced_precision_reduction();
    cuda::set_allow_tf32(tf32);
    cuda::set_allow_reduced_precision_reduction(reduced);
    cuda::KernelTuning t;
    t.gemm_api = api;
    Tuning tuning(t);
    time_on_gpu(s, static_cast<int>(sized(10, 1)), [&] { benchmark::DoNotOptimize(matmul(a, b).data_ptr()); });
    cuda::set_allow_tf32(tf32_before);
    cuda::set_allow_reduced_precision_reduction(reduced_before);
    report_flops(s, 2.0 * n * n * n);
    s.SetLabel(std::string("op=matmul dtype=") + dtype_name(dtype) + " shape=" + dims_str({n, n, n}) +
               " tf32=" + (tf32 ? "1" : "0") + " variant=" + api_name(api) + (reduced ? "+rpr" : "-rpr"));
  });
}

template <class Fn>
void add_case(const std::string& id, Fn fn) {
  register_gpu_case("cuda/variant/" + id, fn);
}

bool register_all() {
  for (const char* op : {"add", "mul", "gelu"})
    for (Variant v : {Variant::Legacy, Variant::Unroll1, Variant::SoftRound}) {
      const std::string base = std::string(op) + "/" + variant_name(v) + "/";
      if (v != Variant::SoftRound)
        add_case(base + "float32", [op, v](benchmark::State& s) { elementwise_variant<float>(s, op, v); });
      add_case(base + "bfloat16", [op, v](benchmark::State& s) { elementwise_variant<BFloat16>(s, op, v); });
      add_case(base + "float16", [op, v](benchmark::State& s) { elementwise_variant<Half>(s, op, v); });
    }
  const int64_t r = sized(1, 64);
  struct Shaped {
    const char* op;
    Shape shape;
  };
  for (const Shaped& c : {Shaped{"sum_rows", {8192 / r, 8192 / r}}, Shaped{"sum_cols", {8192 / r, 8192 / r}},
                          Shaped{"sum_all", {8192 / r, 8192 / r}},
                          Shaped{"softmax", {8192 / r, 4096 / r}}, Shaped{"softmax", {4096 / r, 32768 / r}}})
    for (DType dtype : {DType::Float32, DType::BFloat16})
      add_case(std::string(c.op) + "/" + dtype_name(dtype) + "/" + dims_str(c.shape),
               [c, dtype](benchmark::State& s) { reduction_variant(s, c.op, c.shape, dtype); });
  struct Precision {
    DType dtype;
    bool tf32;
  };
  for (const Precision& p : {Precision{DType::Float32, true}, Precision{DType::BFloat16, false},
                             Precision{DType::Float16, false}})
    for (cuda::GemmApi api : {cuda::GemmApi::Auto, cuda::GemmApi::StridedBatched, cuda::GemmApi::StridedBatched64})
      for (bool reduced : {true, false}) {
        if (p.dtype == DType::Float32 && !reduced) continue;  // reduced precision is for 16-bit inputs only
        add_case(std::string("matmul/") + dtype_name(p.dtype) + (p.tf32 ? "_tf32/" : "/") + api_name(api) +
                     (reduced ? "+rpr" : "-rpr"),
                 [p, api, reduced](benchmark::State& s) { matmul_variant(s, p.dtype, p.tf32, api, reduced); });
      }
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace wick::bench
