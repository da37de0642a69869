// The element-wise part of a recurrent time step on the CPU (kernels/recurrent_math.h has
// the math, shared with CUDA): rows split over threads, each row's features one loop that
// GCC vectorises for float (VecMath's tanh and exp, every instruction set's copy). The loops
// carry `GCC ivdep`: the outputs are fresh tensors the entry point allocated, never one of
// the inputs, and with ten or more pointers GCC otherwise gives up on its alias checks and
// leaves the LSTM and GRU loops scalar (tests/kernels/vectorised_loops.cpp holds that).
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>

#include "kernels/cpu/isa_clones.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/recurrent_math.h"
#include "kernels/visit_floating.h"

// The loop's iterations are independent whatever the pointers' values (see above).
#if defined(__clang__)
#define WICK_LOOP_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#else
#define WICK_LOOP_IVDEP _Pragma("GCC ivdep")
#endif

namespace wick::cpu {

namespace {

// Rows per task: about kElementwiseGrain gate values.
int64_t row_grain(RecurrentCell cell, int64_t hidden) {
  return std::max<int64_t>(1, kElementwiseGrain / (recurrent_gates(cell) * hidden));
}

template <RecurrentCell kCell, class T, bool kSave>
WICK_ISA_CLONES void forward_rows(const recurrent_math::ForwardArgs<T>& a, int64_t begin, int64_t end) {
  for (int64_t n = begin; n < end; ++n)
    WICK_LOOP_IVDEP
    for (int64_t j = 0; j < a.hidden; ++j)
      recurrent_math::forward_at<kCell, T, VecMath, kSave>(a, n, j);
}

template <RecurrentCell kCell, class T>
WICK_ISA_CLONES void backward_rows(const recurrent_math::BackwardArgs<T>& a, int64_t begin, int64_t end) {
  for (int64_t n = begin; n < end; ++n)
    WICK_LOOP_IVDEP
    for (int64_t j = 0; j < a.hidden; ++j)
      recurrent_math::backward_at<kCell, T, VecMath>(a, n, j);
}

void recurrent_cell_forward(RecurrentCell cell, const Tensor& h, const Tensor& c, const Tensor& saved,
                            const Tensor& gi, const Tensor& gh, const Tensor& state) {
  const int64_t rows = h.size(0), hidden = h.size(1);
  visit_floating("recurrent_cell_forward", Device::cpu(), h.dtype(), [&]<class T>() {
    const auto a = recurrent_math::forward_args<T>(h, c, saved, gi, gh, state);
    recurrent_math::visit_cell(cell, [&]<RecurrentCell kCell>() {
      parallel_for(0, rows, row_grain(cell, hidden), [&](int64_t b, int64_t e) {
        if (a.saved) forward_rows<kCell, T, true>(a, b, e);
        else forward_rows<kCell, T, false>(a, b, e);
      });
    });
  });
}

void recurrent_cell_backward(RecurrentCell cell, const Tensor& dgi, const Tensor& dgh, const Tensor& dstate,
                             const Tensor& dh, const Tensor& dc, const Tensor& h, const Tensor& c,
                             const Tensor& saved, const Tensor& state) {
  const int64_t rows = dgi.size(0), hidden = dgi.size(1) / recurrent_gates(cell);
  visit_floating("recurrent_cell_backward", Device::cpu(), dgi.dtype(), [&]<class T>() {
    const auto a = recurrent_math::backward_args<T>(cell, dgi, dgh, dstate, dh, dc, h, c, saved, state);
    recurrent_math::visit_cell(cell, [&]<RecurrentCell kCell>() {
      parallel_for(0, rows, row_grain(cell, hidden),
                   [&](int64_t b, int64_t e) { backward_rows<kCell, T>(a, b, e); });
    });
  });
}

}  // namespace

void register_recurrent(KernelTable& t) {
  t.recurrent_cell_forward = &recurrent_cell_forward;
  t.recurrent_cell_backward = &recurrent_cell_backward;
}

}  // namespace wick::cpu
