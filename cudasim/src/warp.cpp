// Warp exchanges: shuffles, votes, matches, reductions and __syncwarp, one per call of a
// `_sync` built-in by each lane (cudasim/warp.h), and the gathers behind the tensor-core
// instructions mma and ldmatrix (tensor_core.cpp), in which every lane deposits its operands
// and reads all 32 lanes' (one exchange per instruction, not one shuffle per register).
//
// The rule is PTX's for shfl.sync, vote.sync, match.sync, redux.sync and bar.warp.sync: an
// exchange completes when every lane of its mask that has not exited has arrived at an
// exchange with the same operation and the same mask. Exchanges are told apart by operation
// and mask, not by warp: lanes 0 and 2 may exchange under mask 0x5 while lane 1 waits for
// lane 0 under mask 0x3, and lanes of one warp may be at different call sites of the same
// operation (Volta's independent thread scheduling). Lanes that do not exist (the last warp
// of a block whose size is not a multiple of 32) count as exited.
//
// Errors, because CUDA leaves the result undefined or the warp never continues:
// - the calling lane is not in the mask; `width` is not a power of two up to 32;
// - a lane reads (by a shuffle) a lane outside the mask, one that has exited or one that
//   does not exist;
// - two lanes wait in different exchanges for each other (neither can ever complete);
// - a gather (mma, ldmatrix: `.sync.aligned`, so all 32 lanes must execute it) in a warp
//   that has fewer than 32 threads, or that lanes exit instead of reaching.
// A lane that never arrives is found when the block can make no progress (executor.cpp).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>

#include "block.h"

namespace cudasim {

namespace {

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::Index: return "__shfl_sync";
    case WarpOp::Up: return "__shfl_up_sync";
    case WarpOp::Down: return "__shfl_down_sync";
    case WarpOp::Xor: return "__shfl_xor_sync";
    case WarpOp::Ballot: return "__ballot_sync";
    case WarpOp::All: return "__all_sync";
    case WarpOp::Any: return "__any_sync";
    case WarpOp::Sync: return "__syncwarp";
    case WarpOp::MatchAny32: return "__match_any_sync (32-bit)";
    case WarpOp::MatchAny64: return "__match_any_sync (64-bit)";
    case WarpOp::MatchAll32: return "__match_all_sync (32-bit)";
    case WarpOp::MatchAll64: return "__match_all_sync (64-bit)";
    case WarpOp::ReduceAdd: return "__reduce_add_sync";
    case WarpOp::ReduceMinU: return "__reduce_min_sync (unsigned)";
    case WarpOp::ReduceMinS: return "__reduce_min_sync (int)";
    case WarpOp::ReduceMaxU: return "__reduce_max_sync (unsigned)";
    case WarpOp::ReduceMaxS: return "__reduce_max_sync (int)";
    case WarpOp::ReduceAnd: return "__reduce_and_sync";
    case WarpOp::ReduceOr: return "__reduce_or_sync";
    case WarpOp::ReduceXor: return "__reduce_xor_sync";
    case WarpOp::MmaBF16: return "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
    case WarpOp::MmaF16: return "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
    case WarpOp::Ldmatrix1: return "ldmatrix.sync.aligned.m8n8.x1.shared.b16";
    case WarpOp::Ldmatrix2: return "ldmatrix.sync.aligned.m8n8.x2.shared.b16";
    case WarpOp::Ldmatrix4: return "ldmatrix.sync.aligned.m8n8.x4.shared.b16";
    case WarpOp::Ldmatrix1Trans: return "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16";
    case WarpOp::Ldmatrix2Trans: return "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16";
    case WarpOp::Ldmatrix4Trans: return "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16";
  }
  return "?";
}

std::string hex(uint32_t m) {
  std::ostringstream os;
  os << "0x" << std::hex << m;
  return os.str();
}

std::string call(WarpOp op, uint32_t mask) { return std::string(op_name(op)) + "(mask " + hex(mask) + ")"; }

// The lane a shuffle reads, by PTX's shfl.sync rule with the `c` operand CUDA's intrinsics
// pass: a segment mask of 32 - width and a clamp of 31 (0 for up). `b` counts modulo 32. A
// source outside the lane's segment means the lane keeps its own value.
int source_lane(WarpOp op, int lane, int b, int width) {
  b &= 31;
  const int segment_mask = (kWarp - width) & 31;
  const int clamp = op == WarpOp::Up ? 0 : 31;
  const int max_lane = (lane & segment_mask) | (clamp & ~segment_mask);
  const int min_lane = lane & segment_mask;
  int j = lane;
  bool in_range = false;
  switch (op) {
    case WarpOp::Up: j = lane - b; in_range = j >= max_lane; break;
    case WarpOp::Down: j = lane + b; in_range = j <= max_lane; break;
    case WarpOp::Xor: j = lane ^ b; in_range = j <= max_lane; break;
    default: j = min_lane | (b & ~segment_mask); in_range = j <= max_lane; break;
  }
  return in_range ? j : lane;
}

bool is_shuffle(WarpOp op) { return op == WarpOp::Index || op == WarpOp::Up || op == WarpOp::Down || op == WarpOp::Xor; }
bool is_gather(WarpOp op) { return op >= WarpOp::MmaBF16; }

// Completes exchange `k` of warp w: computes every participant's result and releases them.
// Returns false (the block failed) when a lane reads what it may not.
bool complete(BlockRun& b, int w, size_t k) {
  WarpState& ws = b.warps[static_cast<size_t>(w)];
  const OpenExchange x = ws.open[k];
  ws.open.erase(ws.open.begin() + static_cast<std::ptrdiff_t>(k));
  SimThread* lanes = &b.threads[static_cast<size_t>(w) * kWarp];
  const uint32_t p = x.arrived;
  auto each = [p](auto f) {
    for (uint32_t rest = p; rest; rest &= rest - 1) f(std::countr_zero(rest));
  };
  if (is_gather(x.op)) {
    // Only lanes that exited can be missing here (warp_gather refuses partial warps).
    if (p != ~0u) {
      b.fail("lanes " + hex(~p) + " of warp " + std::to_string(w) + " exited without reaching " + call(x.op, x.mask) +
             ", which all 32 lanes of a warp must execute (.sync.aligned)");
      return false;
    }
    std::swap(ws.gather_in, ws.gather_out);
  } else if (is_shuffle(x.op)) {
    bool ok = true;
    each([&](int l) {
      if (!ok) return;
      SimThread& t = lanes[l];
      const int src = source_lane(x.op, l, t.arg, t.width);
      if (src != l) {
        const char* why = !(x.mask >> src & 1u)       ? "which is not in the mask"
                          : !(ws.exists >> src & 1u)  ? "which the block does not have"
                          : (ws.exited >> src & 1u)   ? "which has exited"
                                                      : nullptr;
        if (why) {
          b.fail("lane " + std::to_string(l) + " of warp " + std::to_string(w) + " reads lane " + std::to_string(src) +
                 " in " + call(x.op, x.mask) + ", " + why);
          ok = false;
          return;
        }
      }
      t.result = lanes[src].value;
    });
    if (!ok) return false;
  } else {
    uint64_t r = 0;
    switch (x.op) {
      case WarpOp::Ballot:
        each([&](int l) { r |= uint64_t{lanes[l].value != 0} << l; });
        break;
      case WarpOp::All:
        r = 1;
        each([&](int l) { r &= lanes[l].value != 0; });
        break;
      case WarpOp::Any:
        each([&](int l) { r |= lanes[l].value != 0; });
        break;
      case WarpOp::ReduceAdd:
        each([&](int l) { r = static_cast<uint32_t>(r + lanes[l].value); });
        break;
      case WarpOp::ReduceMinU:
      case WarpOp::ReduceMaxU: {
        const bool is_min = x.op == WarpOp::ReduceMinU;
        uint32_t v = is_min ? UINT32_MAX : 0;
        each([&](int l) {
          const auto u = static_cast<uint32_t>(lanes[l].value);
          v = is_min ? std::min(v, u) : std::max(v, u);
        });
        r = v;
        break;
      }
      case WarpOp::ReduceMinS:
      case WarpOp::ReduceMaxS: {
        const bool is_min = x.op == WarpOp::ReduceMinS;
        int32_t v = is_min ? INT32_MAX : INT32_MIN;
        each([&](int l) {
          const auto s = static_cast<int32_t>(static_cast<uint32_t>(lanes[l].value));
          v = is_min ? std::min(v, s) : std::max(v, s);
        });
        r = static_cast<uint32_t>(v);
        break;
      }
      case WarpOp::ReduceAnd:
        r = UINT32_MAX;
        each([&](int l) { r &= lanes[l].value; });
        break;
      case WarpOp::ReduceOr:
        each([&](int l) { r |= lanes[l].value; });
        break;
      case WarpOp::ReduceXor:
        each([&](int l) { r ^= lanes[l].value; });
        break;
      case WarpOp::MatchAll32:
      case WarpOp::MatchAll64: {
        const uint64_t first = lanes[std::countr_zero(p)].value;
        bool same = true;
        each([&](int l) { same = same && lanes[l].value == first; });
        r = same ? p : 0;
        break;
      }
      default: break;  // Sync; MatchAny is per lane, below
    }
    if (x.op == WarpOp::MatchAny32 || x.op == WarpOp::MatchAny64) {
      each([&](int l) {
        uint32_t same = 0;
        each([&](int m) { same |= uint32_t{lanes[m].value == lanes[l].value} << m; });
        lanes[l].result = same;
      });
    } else {
      each([&](int l) { lanes[l].result = r; });
    }
  }
  each([&](int l) { release(b, w * kWarp + l); });
  return true;
}

bool ready_to_complete(const WarpState& ws, const OpenExchange& x) { return (x.mask & ws.live() & ~x.arrived) == 0; }

// Thread i (the running one, in `mask`, its operands stored) joins an exchange of `op` and
// `mask`; returns once the exchange has completed.
void arrive(BlockRun& b, int i, WarpOp op, unsigned mask) {
  const int w = i / kWarp, lane = i % kWarp;
  SimThread& me = b.threads[static_cast<size_t>(i)];
  me.op = op;
  me.mask = mask;
  WarpState& ws = b.warps[static_cast<size_t>(w)];
  size_t k = 0;
  while (k < ws.open.size() && (ws.open[k].op != op || ws.open[k].mask != mask)) ++k;
  if (k == ws.open.size()) ws.open.push_back({op, mask, 0});
  ws.open[k].arrived |= 1u << lane;
  if (ready_to_complete(ws, ws.open[k])) {
    me.state = State::Running;
    if (!complete(b, w, k)) throw BlockFailed{};
    return;
  }
  for (const OpenExchange& y : ws.open) {
    if (&y == &ws.open[k] || !(y.mask >> lane & 1u) || !(y.arrived & mask)) continue;
    const int other = std::countr_zero(y.arrived & mask);
    b.fail_now("lanes " + std::to_string(lane) + " and " + std::to_string(other) + " of warp " + std::to_string(w) +
               " wait for each other in different warp exchanges: " + call(op, mask) + " and " + call(y.op, y.mask));
  }
  me.state = State::AtWarp;
  suspend(b, i);
}

}  // namespace

uint64_t warp_exchange(WarpOp op, unsigned mask, uint64_t value, int arg, int width) {
  const SimulatorCode simulator_code;
  BlockRun& b = current_block(op_name(op));
  const int i = b.current, lane = i % kWarp;
  if (width < 1 || width > kWarp || (width & (width - 1)) != 0)
    b.fail_now(b.thread_name(i) + ": " + call(op, mask) + " with width " + std::to_string(width) +
               ", not a power of two up to 32");
  if (!(mask >> lane & 1u))
    b.fail_now(b.thread_name(i) + " (lane " + std::to_string(lane) + ") calls " + call(op, mask) + " without being in its mask");
  SimThread& me = b.threads[static_cast<size_t>(i)];
  me.value = value;
  me.arg = arg;
  me.width = width;
  arrive(b, i, op, mask);
  return me.result;
}

const GatherRecord* warp_gather(WarpOp op, const void* record, size_t bytes) {
  const SimulatorCode simulator_code;
  BlockRun& b = current_block(op_name(op));
  const int i = b.current, w = i / kWarp, lane = i % kWarp;
  WarpState& ws = b.warps[static_cast<size_t>(w)];
  // A partial warp fails at once, not when its missing lanes are found absent: they never
  // exist, and the instruction's result would be undefined on a GPU.
  if (ws.exists != ~0u)
    b.fail_now(b.thread_name(i) + " executes " + op_name(op) + " in warp " + std::to_string(w) + ", which has only " +
               std::to_string(std::popcount(ws.exists)) +
               " threads: the instruction needs all 32 lanes of a warp (a block size that is a multiple of 32)");
  if (ws.gather_in.empty()) {
    ws.gather_in.resize(kWarp);
    ws.gather_out.resize(kWarp);
  }
  std::memcpy(ws.gather_in[static_cast<size_t>(lane)].bytes, record, std::min(bytes, sizeof(GatherRecord)));
  arrive(b, i, op, ~0u);
  return ws.gather_out.data();
}

unsigned active_lanes() {
  const SimulatorCode simulator_code;
  // CUDA promises no more than the calling lane: which others run with it at that moment is
  // up to the GPU's scheduling. The simulator runs one lane at a time between synchronising
  // calls, so the caller is alone, and code that counts on more (using the result as the
  // mask of a later exchange that lanes elsewhere must join) fails here as it may on a GPU.
  BlockRun& b = current_block("__activemask");
  return 1u << (b.current % kWarp);
}

void lane_exited(BlockRun& b, int i) {
  const int w = i / kWarp;
  WarpState& ws = b.warps[static_cast<size_t>(w)];
  ws.exited |= 1u << (i % kWarp);
  for (size_t k = 0; k < ws.open.size();) {
    if (!ready_to_complete(ws, ws.open[k])) {
      ++k;
    } else if (!complete(b, w, k)) {
      return;
    }
  }
}

std::string describe_open_exchanges(const BlockRun& b) {
  std::string s;
  for (size_t w = 0; w < b.warps.size(); ++w)
    for (const OpenExchange& x : b.warps[w].open) {
      s += s.empty() ? "" : "; ";
      s += "warp " + std::to_string(w) + " " + call(x.op, x.mask) + " has lanes " + hex(x.arrived) + " and waits for " +
           hex(x.mask & b.warps[w].live() & ~x.arrived);
    }
  return s;
}

}  // namespace cudasim
