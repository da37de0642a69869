#pragma once
// The simulated NCCL's communicators and operations, shared by the API (nccl.cpp, which also
// describes the model) and the engine that runs operations on the streams (nccl_engine.cpp).
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "internal.h"
#include "nccl_segment.h"

namespace cudasim::nccl {

using Clock = std::chrono::steady_clock;

// How long a blocked wait sleeps before looking at aborts and peers again (a ring wakes it
// earlier), and how often it checks whether peer processes still live.
constexpr auto kSleep = std::chrono::milliseconds(20);
constexpr auto kLivenessPeriod = std::chrono::milliseconds(100);

// Whether NCCL_DEBUG asks for warnings (then errors are also printed to stderr).
bool debug_enabled();
// Records `text` as this thread's last error (ncclGetLastError without a communicator).
void note(const std::string& text);

enum class Kind : int32_t { AllReduce = 1, Broadcast, Reduce, AllGather, ReduceScatter, Send, Recv };

const char* kind_name(Kind k);
inline bool is_p2p(Kind k) { return k == Kind::Send || k == Kind::Recv; }
inline bool reduces(Kind k) { return k == Kind::AllReduce || k == Kind::Reduce || k == Kind::ReduceScatter; }
inline bool rooted(Kind k) { return k == Kind::Broadcast || k == Kind::Reduce; }

// One call's arguments, checked.
struct Op {
  Kind kind = Kind::AllReduce;
  const char* send = nullptr;
  char* recv = nullptr;
  size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t redop = ncclSum;
  int root = -1;  // the root, or the peer of a send/recv
};

// One rank's communicator. The handle (ncclComm_t) owns it with the stream work launched on
// it, so that work still waiting when the handle is aborted keeps its segment mapped.
struct Comm {
  std::shared_ptr<Segment> seg;
  int rank = 0;
  int nranks = 0;
  int device = 0;
  bool blocking = true;

  std::atomic<bool> ready{false};      // every rank joined
  std::atomic<bool> aborted{false};    // ncclCommAbort (or a destroy that could not finish)
  std::atomic<bool> broken{false};     // ranks disagreed: later work fails at once
  std::atomic<bool> finalized{false};  // ncclCommFinalize was called
  std::atomic<bool> launch_pending{false};  // non-blocking: the next poll answers ncclInProgress
  uint64_t splits = 0;                 // ncclCommSplit calls so far (owner thread)

  std::mutex mu;
  std::condition_variable cv;         // a work item finished, or an abort
  uint64_t next_ticket = 0;           // launch order (under mu)
  std::set<uint64_t> unfinished;      // launched work items not finished yet (under mu)
  ncclResult_t async = ncclSuccess;   // the first asynchronous error (under mu)
  std::string error;                  // the last error about this communicator (under mu)
  Clock::time_point next_host_check{};    // rate limit of liveness checks by the host (under mu)
  Clock::time_point next_worker_check{};  // by the stream work (one item at a time)

  std::string label() const {
    return "rank " + std::to_string(rank) + " of " + std::to_string(nranks) + " on cuda:" + std::to_string(device);
  }

  void set_error(const std::string& text) {
    {
      std::lock_guard<std::mutex> lock(mu);
      error = text;
    }
    note(text);
  }

  // The first asynchronous error stays (it is the cause); later ones are not news.
  void fail_async(ncclResult_t r, const std::string& text) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (async != ncclSuccess) return;
      async = r;
      error = text;
    }
    cv.notify_all();  // a finalize or destroy waiting for the work stops waiting
    if (debug_enabled()) std::fprintf(stderr, "cudasim NCCL WARN %s\n", text.c_str());
  }

  ncclResult_t async_error() {
    std::lock_guard<std::mutex> lock(mu);
    return async;
  }

  bool idle() {
    std::lock_guard<std::mutex> lock(mu);
    return unfinished.empty();
  }
};

// Which ranks in `peers` are gone (aborted, destroyed, or their process died); "" if none.
std::string gone_peers(const Comm& c, const std::vector<int>& peers);
std::vector<int> all_ranks(const Comm& c);

// Enqueues `ops` (checked calls on `c`, in call order) as one work item on streams[0]; the
// other streams wait for it and it for them. Returns at once.
void launch(const std::shared_ptr<Comm>& c, const std::vector<Stream*>& streams, std::vector<Op> ops);

}  // namespace cudasim::nccl
