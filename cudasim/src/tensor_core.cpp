// Tensor-core instructions (cudasim/tensor_core.h): mma.m16n8k16 and ldmatrix as warp
// gathers (warp.cpp), each lane depositing its registers or row address once and computing
// its own result from the 32 deposits; cp.async as per-thread queues of copies.
//
// Numbers: bf16 and f16 products are exact in double (and in float, but for bf16 overflow
// and underflow), and the sum A B + C of one output is formed in double, c first and then
// k = 0..15 in order, and rounded once to float. That sum is exact, so the result is
// correctly rounded, unless the 17 terms spread over more bits than double holds. The GPU's
// tensor cores align and truncate their partial sums internally in ways NVIDIA does not
// document, so their result can differ from this in the last bits of float.
//
// Errors (misuse whose result the PTX ISA leaves undefined) fail the block naming the
// kernel: an ldmatrix row address or a cp.async operand that is not aligned (as the
// hardware's misaligned-address error), an ldmatrix row or a cp.async destination outside
// the block's shared memory (its static __shared__ variables, as far as the symbol table
// places them, and its dynamic shared memory; an illegal address, since the instruction
// reads the generic address as one in the shared window), a cp.async size PTX does not
// have, a negative wait_group; partial warps and lanes missing from mma or ldmatrix are
// warp.cpp's.
#include <cudasim/tensor_core.h>

#include <cstring>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>

#include "block.h"
#include "float_formats.h"
#include "internal.h"
#include "kernel_image.h"

namespace cudasim {

namespace {

struct MmaOperands {
  uint32_t a[4];
  uint32_t b[2];
  float c[4];
};
static_assert(sizeof(MmaOperands) <= sizeof(GatherRecord));
static_assert(sizeof(const void*) <= sizeof(GatherRecord));

MmaOperands operands_of(const GatherRecord* all, int lane) {
  MmaOperands o;
  std::memcpy(&o, all[lane].bytes, sizeof o);
  return o;
}

const unsigned char* address_of(const GatherRecord* all, int lane) {
  const unsigned char* p = nullptr;
  std::memcpy(&p, all[lane].bytes, sizeof p);
  return p;
}

// Whether [p, p + bytes) lies in the running block's shared memory: its dynamic shared memory,
// or the span of this host thread's __shared__ variables (kernel_image.h; not checked when
// the binary does not list them).
bool in_shared_memory(const BlockRun& blk, const void* p, size_t bytes) {
  struct Span {
    bool known;
    const unsigned char *lo, *hi;
  };
  thread_local std::unordered_map<const void*, Span> spans;  // by kernel
  auto it = spans.find(blk.launch->function);
  if (it == spans.end()) {
    Span s{false, nullptr, nullptr};
    s.known = shared_variables_span(blk.launch->function, &s.lo, &s.hi);
    it = spans.emplace(blk.launch->function, s).first;
  }
  const auto* a = static_cast<const unsigned char*>(p);
  const unsigned char* dynamic = t_dynamic_shared;
  if (dynamic && a >= dynamic && a + bytes <= dynamic + blk.launch->shared_bytes) return true;
  return !it->second.known || (a >= it->second.lo && a + bytes <= it->second.hi);
}

WarpOp ldmatrix_op(int count, bool trans) {
  if (count == 1) return trans ? WarpOp::Ldmatrix1Trans : WarpOp::Ldmatrix1;
  if (count == 2) return trans ? WarpOp::Ldmatrix2Trans : WarpOp::Ldmatrix2;
  return trans ? WarpOp::Ldmatrix4Trans : WarpOp::Ldmatrix4;
}

}  // namespace

void mma_m16n8k16(MmaInput type, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) {
  const SimulatorCode simulator_code;
  BlockRun& blk = current_block("mma.sync");
  const int lane = blk.current % kWarp, g = lane / 4, t = lane % 4;
  MmaOperands mine;
  std::memcpy(mine.a, a, sizeof mine.a);
  std::memcpy(mine.b, b, sizeof mine.b);
  std::memcpy(mine.c, c, sizeof mine.c);  // before d is written: d may alias c
  const GatherRecord* all =
      warp_gather(type == MmaInput::BFloat16 ? WarpOp::MmaBF16 : WarpOp::MmaF16, &mine, sizeof mine);

  const bool bf16 = type == MmaInput::BFloat16;
  auto widen = [bf16](uint32_t reg, int half) -> double {
    const auto bits = static_cast<uint16_t>(half ? reg >> 16 : reg & 0xffffu);
    return bf16 ? bf16_to_float(bits) : half_to_float(bits);
  };
  // This lane's outputs need rows g and g + 8 of A, held by lanes 4g..4g+3, and columns 2t
  // and 2t + 1 of B, held by lanes 4n..4n+3 for column n.
  double a_row[2][16], b_col[2][16];
  for (int u = 0; u < 4; ++u) {
    const MmaOperands o = operands_of(all, 4 * g + u);
    for (int h = 0; h < 2; ++h) {
      a_row[0][2 * u + h] = widen(o.a[0], h);
      a_row[1][2 * u + h] = widen(o.a[1], h);
      a_row[0][2 * u + 8 + h] = widen(o.a[2], h);
      a_row[1][2 * u + 8 + h] = widen(o.a[3], h);
    }
    for (int j = 0; j < 2; ++j) {
      const MmaOperands p = operands_of(all, 4 * (2 * t + j) + u);
      for (int h = 0; h < 2; ++h) {
        b_col[j][2 * u + h] = widen(p.b[0], h);
        b_col[j][2 * u + 8 + h] = widen(p.b[1], h);
      }
    }
  }
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 2; ++j) {
      double s = mine.c[2 * r + j];
      for (int k = 0; k < 16; ++k) s += a_row[r][k] * b_col[j][k];
      d[2 * r + j] = static_cast<float>(s);
    }
}

void ldmatrix(int count, bool trans, uint32_t* r, const void* row) {
  const SimulatorCode simulator_code;
  BlockRun& blk = current_block("ldmatrix");
  const int i = blk.current, lane = i % kWarp;
  if (count != 1 && count != 2 && count != 4)
    blk.fail_now(blk.thread_name(i) + ": ldmatrix.x" + std::to_string(count) + ", where PTX has .x1, .x2 and .x4");
  // Only the lanes whose addresses are read must give aligned ones; the others are ignored.
  if (lane < 8 * count && reinterpret_cast<uintptr_t>(row) % 16 != 0)
    blk.fail_now(blk.thread_name(i) + " (lane " + std::to_string(lane) + ") gives ldmatrix.x" + std::to_string(count) +
                     " the row address " + pointer_text(row) + ", which is not 16-byte aligned",
                 cudaErrorMisalignedAddress);
  if (lane < 8 * count && !in_shared_memory(blk, row, 16))
    blk.fail_now(blk.thread_name(i) + " (lane " + std::to_string(lane) + ") gives ldmatrix.x" + std::to_string(count) +
                     " the row address " + pointer_text(row) +
                     ", which is not in the block's shared memory (ldmatrix reads the shared window)",
                 cudaErrorIllegalAddress);
  const GatherRecord* all = warp_gather(ldmatrix_op(count, trans), &row, sizeof row);
  // Shared memory is host memory of this host thread, so the rows are read directly.
  const int g = lane / 4, t = lane % 4;
  for (int m = 0; m < count; ++m) {
    if (!trans) {
      std::memcpy(&r[m], address_of(all, 8 * m + g) + 4 * t, 4);
    } else {
      uint16_t lo = 0, hi = 0;
      std::memcpy(&lo, address_of(all, 8 * m + 2 * t) + 2 * g, 2);
      std::memcpy(&hi, address_of(all, 8 * m + 2 * t + 1) + 2 * g, 2);
      r[m] = uint32_t{lo} | uint32_t{hi} << 16;
    }
  }
}

// The pending copies live in the block's SimThread (block.h): per simulated thread, as PTX
// defines them, and gone with the block.
void cp_async(void* dst, const void* src, int copy_bytes, int src_bytes) {
  const SimulatorCode simulator_code;
  BlockRun& blk = current_block("cp.async");
  const int i = blk.current;
  if (copy_bytes != 4 && copy_bytes != 8 && copy_bytes != 16)
    blk.fail_now(blk.thread_name(i) + ": cp.async of " + std::to_string(copy_bytes) +
                 " bytes, where PTX copies 4, 8 or 16");
  if (src_bytes < 0 || src_bytes > copy_bytes)
    blk.fail_now(blk.thread_name(i) + ": cp.async with src-size " + std::to_string(src_bytes) + ", outside 0.." +
                 std::to_string(copy_bytes));
  const auto align = static_cast<uintptr_t>(copy_bytes);
  for (const void* p : {static_cast<const void*>(dst), src})
    if (reinterpret_cast<uintptr_t>(p) % align != 0)
      blk.fail_now(blk.thread_name(i) + ": cp.async of " + std::to_string(copy_bytes) + " bytes " +
                       (p == dst ? "to " : "from ") + pointer_text(p) + ", which is not " + std::to_string(copy_bytes) +
                       "-byte aligned",
                   cudaErrorMisalignedAddress);
  if (!in_shared_memory(blk, dst, static_cast<size_t>(copy_bytes)))
    blk.fail_now(blk.thread_name(i) + ": cp.async of " + std::to_string(copy_bytes) + " bytes to " + pointer_text(dst) +
                     ", which is not in the block's shared memory (cp.async writes the shared window)",
                 cudaErrorIllegalAddress);
  blk.threads[static_cast<size_t>(i)].async_copies.push_back({dst, src, copy_bytes, src_bytes});
}

void cp_async_commit() {
  const SimulatorCode simulator_code;
  BlockRun& blk = current_block("cp.async.commit_group");
  SimThread& me = blk.threads[static_cast<size_t>(blk.current)];
  const size_t committed = std::accumulate(me.async_groups.begin(), me.async_groups.end(), size_t{0});
  me.async_groups.push_back(static_cast<uint32_t>(me.async_copies.size() - committed));  // may be empty, as in PTX
}

void cp_async_wait(int n) {
  const SimulatorCode simulator_code;
  BlockRun& blk = current_block("cp.async.wait_group");
  const int i = blk.current;
  if (n < 0) blk.fail_now(blk.thread_name(i) + ": cp.async.wait_group " + std::to_string(n));
  SimThread& me = blk.threads[static_cast<size_t>(i)];
  if (me.async_groups.size() <= static_cast<size_t>(n)) return;
  const size_t groups = me.async_groups.size() - static_cast<size_t>(n);
  const size_t copies = std::accumulate(me.async_groups.begin(),
                                        me.async_groups.begin() + static_cast<std::ptrdiff_t>(groups), size_t{0});
  for (size_t k = 0; k < copies; ++k) {
    const AsyncCopy& x = me.async_copies[k];
    auto* dst = static_cast<unsigned char*>(x.dst);
    if (x.src_bytes > 0) std::memcpy(dst, x.src, static_cast<size_t>(x.src_bytes));
    std::memset(dst + x.src_bytes, 0, static_cast<size_t>(x.copy_bytes - x.src_bytes));
  }
  me.async_copies.erase(me.async_copies.begin(), me.async_copies.begin() + static_cast<std::ptrdiff_t>(copies));
  me.async_groups.erase(me.async_groups.begin(), me.async_groups.begin() + static_cast<std::ptrdiff_t>(groups));
}

}  // namespace cudasim
