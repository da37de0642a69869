// NCCL on the simulator: the communicator calls and collectives wick makes, with NCCL's
// documented semantics, between threads of one process and between processes.
//
// Model (what a test can rely on, and where it differs from a GPU):
//  - The unique id names a shared-memory segment (nccl_segment.h) where the ranks meet. Init
//    claims the rank's slot (a rank claimed twice is ncclInvalidUsage, another nranks
//    ncclInvalidArgument). A non-blocking communicator (config.blocking = 0) answers
//    ncclInProgress from init and from ncclCommGetAsyncError until every rank has joined; a
//    blocking one waits in the call. Ranks may share a simulated device (real NCCL refuses),
//    but then each needs its own stream (a rank blocked in a collective blocks its stream),
//    and cudaFree, which waits for the whole device, must not run while another rank on that
//    device is blocked waiting for the caller (it would deadlock, as on a GPU).
//  - Operations are checked when called (datatype, operation, root or peer, and that every
//    buffer lies in memory of the communicator's device or in pinned host memory, as NCCL
//    checks with NCCL_CHECK_POINTERS=1, plus its size: ncclInvalidArgument, ncclGetLastError
//    says which argument; fp8 types move but do not reduce), then enqueued on the stream
//    with cudasim::enqueue. The stream's worker runs them when it gets there and blocks until
//    the peers reach the same operation, as a kernel would. Empty operations (count 0) are
//    dropped. On a non-blocking communicator every launch answers ncclInProgress and the
//    next ncclCommGetAsyncError ncclInProgress once more before ncclSuccess, so callers
//    exercise the polling NCCL asks for.
//  - A communicator's work items run one at a time, in the order they were launched, even
//    across streams (they share the rank's slot in the segment). Collectives are matched by
//    their sequence number on the communicator; ranks that disagree on the collective, count,
//    datatype, operation or root fail it: the communicator's asynchronous error becomes
//    ncclInvalidUsage and the work throws AsyncError (a sticky error on the device, like a
//    kernel fault; cudaDeviceReset clears it). Data moves through the segment one chunk per
//    rank at a time (1 MiB, CUDASIM_NCCL_CHUNK_BYTES); reductions fold ranks in rank order,
//    so every rank gets the same bits (nccl_reduce.h has the arithmetic).
//  - ncclSend/ncclRecv pair in order per (sender, receiver). A send moves no data until the
//    matching recv has started: outside a group, two ranks that both send first deadlock, as
//    NCCL does once messages exceed its buffering; between ncclGroupStart/End the sends and
//    recvs of a communicator progress together, in both directions at once. Collectives in
//    the same group run first, in call order, then the sends and recvs.
//  - Groups collect calls per host thread and launch them at the outermost ncclGroupEnd, one
//    work item per communicator (a communicator's calls on several streams make those streams
//    wait for each other). An argument error inside a group is returned by the call and again
//    by ncclGroupEnd, which then launches nothing.
//  - Failures: a peer that never arrives or hangs leaves the waiting work blocked with no
//    data, as on hardware. While blocked, the work watches the peers it waits for: one that
//    aborted, destroyed its communicator, or whose process died (pid and start time in the
//    segment) makes the asynchronous error ncclRemoteError, ncclGetLastError naming the rank.
//    The work stays blocked until ncclCommAbort on this rank, which releases it promptly (the
//    work ends, the stream goes on with its later work) and marks the rank aborted in the
//    segment, so that peers blocked on it get ncclRemoteError in turn. Waits sleep on a futex
//    (short timeouts, no busy loops).
//  - ncclCommFinalize waits for (blocking) or lets ncclCommGetAsyncError report (non-blocking,
//    ncclInProgress until then) the completion of this rank's launched work; ncclCommDestroy
//    finalises first if needed, except that a communicator with an asynchronous error is
//    released like ncclCommAbort instead of hanging. ncclCommSplit exchanges colors on the host
//    and blocks until every rank of the parent has called it (not inside a group).
#include <nccl.h>

#include <sys/types.h>
#include <unistd.h>

#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <unordered_set>

#include "nccl_comm.h"
#include "nccl_reduce.h"

namespace cudasim::nccl {

// ---- errors ------------------------------------------------------------------------------

namespace {
thread_local std::string t_last_error;  // errors not tied to a live communicator
thread_local std::string t_returned;    // what ncclGetLastError last returned (keeps it alive)
}  // namespace

bool debug_enabled() {
  static const bool on = [] {
    const char* level = std::getenv("NCCL_DEBUG");
    return level && (strcasecmp(level, "WARN") == 0 || strcasecmp(level, "INFO") == 0 || strcasecmp(level, "TRACE") == 0);
  }();
  return on;
}

void note(const std::string& text) {
  t_last_error = text;
  if (debug_enabled()) std::fprintf(stderr, "cudasim NCCL WARN %s\n", text.c_str());
}

namespace {

// ---- handles and groups --------------------------------------------------------------------

std::mutex g_handles_mu;
std::unordered_set<const ncclComm*> g_handles;

struct Pending {
  std::shared_ptr<Comm> comm;
  Stream* stream;
  Op op;
};

struct Group {
  int depth = 0;
  ncclResult_t error = ncclSuccess;
  std::vector<Pending> ops;
  std::vector<std::shared_ptr<Comm>> inits;  // blocking inits to wait for at the end
};
thread_local Group t_group;

}  // namespace
}  // namespace cudasim::nccl

// The handle behind ncclComm_t.
struct ncclComm {
  std::shared_ptr<cudasim::nccl::Comm> impl;
};

namespace cudasim::nccl {
namespace {

std::shared_ptr<Comm> lookup(const ncclComm* handle) {
  if (!handle) return nullptr;
  std::lock_guard<std::mutex> lock(g_handles_mu);
  return g_handles.count(handle) ? handle->impl : nullptr;
}

ncclResult_t bad_comm(const char* fn, const ncclComm* handle) {
  note(std::string(fn) + ": " + (handle ? "comm is not a live communicator (destroyed or aborted?)" : "comm is NULL"));
  return ncclInvalidArgument;
}

ncclComm* make_handle(std::shared_ptr<Comm> c) {
  auto* h = new ncclComm{std::move(c)};
  std::lock_guard<std::mutex> lock(g_handles_mu);
  g_handles.insert(h);
  return h;
}

void drop_handle(ncclComm* h) {
  {
    std::lock_guard<std::mutex> lock(g_handles_mu);
    g_handles.erase(h);
  }
  delete h;
}

// Releases this rank: blocked work ends, queued work is skipped, peers see `how`.
void release(Comm& c, SlotState how) {
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.aborted = true;
  }
  c.cv.notify_all();
  c.seg->leave(c.rank, how);  // rings: wakes this rank's blocked work as well as the peers
}

// A look at the rendezvous without waiting: ncclSuccess once every rank joined, ncclInProgress
// before, ncclRemoteError when a rank that joined went away first.
ncclResult_t poll_init(Comm& c) {
  if (c.ready.load()) return ncclSuccess;
  if (ncclResult_t e = c.async_error()) return e;
  const SegmentHeader& h = c.seg->header();
  if (h.joined.load(std::memory_order_acquire) >= c.nranks) {
    c.ready = true;
    c.seg->unlink_name();  // nobody else needs the name: nothing is left behind if a rank dies
    return ncclSuccess;
  }
  bool check = false;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    const auto now = Clock::now();
    if (now >= c.next_host_check) {
      c.next_host_check = now + kLivenessPeriod;
      check = true;
    }
  }
  if (check) {
    std::vector<int> joined;
    for (int r = 0; r < c.nranks; ++r)
      if (c.seg->slot(r).state.load() != kEmpty) joined.push_back(r);
    const std::string gone = gone_peers(c, joined);
    if (!gone.empty()) {
      c.fail_async(ncclRemoteError, "initialisation of " + c.label() + ": " + gone + " before every rank had joined");
      return ncclRemoteError;
    }
  }
  return ncclInProgress;
}

// Host-side wait for the rendezvous (blocking communicators).
ncclResult_t wait_init(Comm& c) {
  for (;;) {
    const uint32_t bell = c.seg->doorbell();
    const ncclResult_t r = poll_init(c);
    if (r != ncclInProgress) return r;
    c.seg->wait(bell, kSleep);
  }
}

// Joins segment `name` as `rank`; the communicator is not ready until every rank joined.
ncclResult_t join(const char* fn, const std::string& name, int nranks, int rank, int device, bool blocking,
                  std::shared_ptr<Comm>* out) {
  try {
    auto c = std::make_shared<Comm>();
    c->seg = Segment::open(name, nranks);
    c->seg->claim(rank, device);
    c->rank = rank;
    c->nranks = nranks;
    c->device = device;
    c->blocking = blocking;
    *out = std::move(c);
    return ncclSuccess;
  } catch (const SegmentError& e) {
    note(std::string(fn) + " (rank " + std::to_string(rank) + " of " + std::to_string(nranks) + "): " + e.what());
    return e.result;
  } catch (const std::exception& e) {
    note(std::string(fn) + ": " + e.what());
    return ncclSystemError;
  }
}

// Joins and hands out the communicator: blocking ones wait for the others here (or at the end
// of the enclosing group), non-blocking ones answer ncclInProgress.
ncclResult_t init_handle(const char* fn, ncclComm_t* out, const std::string& name, int nranks, int rank, int device,
                         bool blocking) {
  std::shared_ptr<Comm> c;
  if (ncclResult_t r = join(fn, name, nranks, rank, device, blocking, &c)) return r;
  if (!blocking) {
    *out = make_handle(c);
    poll_init(*c);
    return ncclInProgress;
  }
  if (t_group.depth > 0) {
    *out = make_handle(c);
    t_group.inits.push_back(c);
    return ncclSuccess;
  }
  if (ncclResult_t r = wait_init(*c); r != ncclSuccess) {
    std::string text;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      text = c->error;
    }
    release(*c, kAborted);
    note(std::string(fn) + ": " + text);
    return r;
  }
  *out = make_handle(c);
  return ncclSuccess;
}

ncclResult_t check_device(const char* fn, int device) {
  if (device < 0 || device >= device_count()) {
    note(std::string(fn) + ": no cuda:" + std::to_string(device) + " (the simulator has " + std::to_string(device_count()) +
         " devices: CUDASIM_DEVICE_COUNT)");
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

// ---- unique ids ----------------------------------------------------------------------------

constexpr char kIdMagic[] = "CUDASIM-NCCL";  // 13 bytes with its NUL
constexpr size_t kIdNameOffset = 16;

std::string id_name(const ncclUniqueId& id) {
  if (std::memcmp(id.internal, kIdMagic, sizeof kIdMagic) != 0) return {};
  const char* name = id.internal + kIdNameOffset;
  const size_t len = strnlen(name, NCCL_UNIQUE_ID_BYTES - kIdNameOffset);
  if (len == 0 || len == NCCL_UNIQUE_ID_BYTES - kIdNameOffset || name[0] != '/') return {};
  return std::string(name, len);
}

// ---- operation checks ----------------------------------------------------------------------

// Checks an operation before it is enqueued, as NCCL does when called (with pointer checks
// on); `stream` is set to the stream it runs on.
ncclResult_t check_op(Comm& c, const Op& op, cudaStream_t handle, Stream** stream) {
  const std::string fn = std::string(kind_name(op.kind)) + " (" + c.label() + ")";
  auto fail = [&](ncclResult_t r, const std::string& text) {
    c.set_error(fn + ": " + text);
    return r;
  };
  if (!c.ready.load() && poll_init(c) != ncclSuccess)
    return fail(ncclInvalidUsage, "the communicator is still initialising; wait until ncclCommGetAsyncError reports ncclSuccess");
  if (c.finalized.load()) return fail(ncclInvalidUsage, "the communicator was finalized");
  if (ncclResult_t e = c.async_error()) {
    std::string cause;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      cause = c.error;
    }
    return fail(e, "the communicator has an asynchronous error: " + cause);
  }
  const size_t es = type_size(op.type);
  if (es == 0) return fail(ncclInvalidArgument, "invalid datatype " + std::to_string(int(op.type)));
  if (reduces(op.kind)) {
    if (!op_name(op.redop)) return fail(ncclInvalidArgument, "invalid reduction operation " + std::to_string(int(op.redop)));
    if (!type_reduces(op.type))
      return fail(ncclInvalidArgument, std::string("the simulator does not reduce ") + type_name(op.type));
  }
  if ((rooted(op.kind) || is_p2p(op.kind)) && (op.root < 0 || op.root >= c.nranks))
    return fail(ncclInvalidArgument, std::string(is_p2p(op.kind) ? "peer " : "root ") + std::to_string(op.root) +
                                         " is not a rank of the communicator (0.." + std::to_string(c.nranks - 1) + ")");
  if (op.count == 0) return ncclSuccess;  // nothing to check: empty operations are dropped

  const size_t n = size_t(c.nranks);
  const size_t bytes = op.count * es;
  auto check_buffer = [&](const char* name, const void* p, size_t size) -> ncclResult_t {
    std::string why;
    if (!p) return fail(ncclInvalidArgument, std::string(name) + " is NULL");
    // Another device's memory is refused even with peer access enabled, as NCCL does.
    const PointerInfo info = find_pointer(p);
    if (info.region == Region::Device && info.device != c.device)
      return fail(ncclInvalidArgument, std::string(name) + " " + pointer_text(p) + " was allocated on cuda:" +
                                           std::to_string(info.device) + ", the communicator's device is cuda:" +
                                           std::to_string(c.device));
    if (!device_can_access(c.device, p, size, &why))
      return fail(ncclInvalidArgument, std::string(name) + " " + pointer_text(p) + " (" + std::to_string(size) +
                                           " bytes) is not memory the communicator's device cuda:" +
                                           std::to_string(c.device) + " can use: " + why);
    return ncclSuccess;
  };
  ncclResult_t r = ncclSuccess;
  switch (op.kind) {
    case Kind::AllReduce:
      if ((r = check_buffer("sendbuff", op.send, bytes))) return r;
      if ((r = check_buffer("recvbuff", op.recv, bytes))) return r;
      break;
    case Kind::Broadcast:
      if (c.rank == op.root && (r = check_buffer("sendbuff", op.send, bytes))) return r;
      if ((r = check_buffer("recvbuff", op.recv, bytes))) return r;
      break;
    case Kind::Reduce:
      if ((r = check_buffer("sendbuff", op.send, bytes))) return r;
      if (c.rank == op.root && (r = check_buffer("recvbuff", op.recv, bytes))) return r;
      break;
    case Kind::AllGather:
      if ((r = check_buffer("sendbuff", op.send, bytes))) return r;
      if ((r = check_buffer("recvbuff", op.recv, bytes * n))) return r;
      break;
    case Kind::ReduceScatter:
      if ((r = check_buffer("sendbuff", op.send, bytes * n))) return r;
      if ((r = check_buffer("recvbuff", op.recv, bytes))) return r;
      break;
    case Kind::Send:
      if ((r = check_buffer("sendbuff", op.send, bytes))) return r;
      break;
    case Kind::Recv:
      if ((r = check_buffer("recvbuff", op.recv, bytes))) return r;
      break;
  }

  // The stream as NCCL sees it: NCCL switches to the communicator's device, so the default
  // stream handles name that device's streams.
  const int previous = current_device();
  const bool switched = previous != c.device;
  if (switched) cudaSetDevice(c.device);
  *stream = find_stream(handle);
  if (switched) cudaSetDevice(previous);
  if (!*stream) return fail(ncclUnhandledCudaError, "stream " + pointer_text(handle) + " is not a live CUDA stream");
  if (stream_device(*stream) != c.device)
    return fail(ncclUnhandledCudaError, "the stream belongs to cuda:" + std::to_string(stream_device(*stream)) +
                                            ", the communicator to cuda:" + std::to_string(c.device));
  if (cudaError_t e = sticky_error(c.device))
    return fail(ncclUnhandledCudaError, std::string("cuda:") + std::to_string(c.device) + " has a sticky error: " +
                                            cudaGetErrorString(e));
  return ncclSuccess;
}

// Checks an operation and launches it, or keeps it for the enclosing group's end.
ncclResult_t submit(const char* fn, ncclComm_t handle, const Op& op, cudaStream_t stream) {
  std::shared_ptr<Comm> c = lookup(handle);
  ncclResult_t r = c ? ncclSuccess : bad_comm(fn, handle);
  Stream* s = nullptr;
  if (r == ncclSuccess) r = check_op(*c, op, stream, &s);
  if (r != ncclSuccess) {
    if (t_group.depth > 0 && t_group.error == ncclSuccess) t_group.error = r;  // ncclGroupEnd answers it too
    return r;
  }
  if (op.count == 0) return ncclSuccess;
  if (t_group.depth > 0) {
    t_group.ops.push_back(Pending{c, s, op});
    return ncclSuccess;
  }
  launch(c, {s}, {op});
  return c->blocking ? ncclSuccess : ncclInProgress;
}

// Host-side wait of ncclCommSplit: until ready(), failing when a rank it needs is gone.
template <class Ready>
ncclResult_t host_await(Comm& c, Ready ready, const std::string& what) {
  const std::vector<int> everyone = all_ranks(c);
  auto next_check = Clock::now() + kLivenessPeriod;
  for (;;) {
    const uint32_t bell = c.seg->doorbell();
    if (ready()) return ncclSuccess;
    if (Clock::now() >= next_check) {
      next_check = Clock::now() + kLivenessPeriod;
      const std::string gone = gone_peers(c, everyone);
      if (!gone.empty()) {
        c.set_error(what + " (" + c.label() + "): " + gone);
        return ncclRemoteError;
      }
    }
    c.seg->wait(bell, kSleep);
  }
}

}  // namespace
}  // namespace cudasim::nccl

using namespace cudasim::nccl;
using cudasim::Stream;
using cudasim::nccl::Kind;

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (!version) {
    note("ncclGetVersion: version is NULL");
    return ncclInvalidArgument;
  }
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (see ncclGetLastError for details)";
    case ncclSystemError: return "unhandled system error (see ncclGetLastError for details)";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument (see ncclGetLastError for details)";
    case ncclInvalidUsage: return "invalid usage (see ncclGetLastError for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t comm) {
  std::string text = t_last_error;
  if (std::shared_ptr<Comm> c = lookup(comm)) {
    std::lock_guard<std::mutex> lock(c->mu);
    if (!c->error.empty()) text = c->error;
  }
  t_returned = std::move(text);
  return t_returned.c_str();
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (!uniqueId) {
    note("ncclGetUniqueId: uniqueId is NULL");
    return ncclInvalidArgument;
  }
  // pid + counter make it unique on this machine while the process lives; the random part
  // keeps a reused pid from meeting a leftover segment.
  static std::atomic<unsigned> counter{0};
  static const unsigned salt = std::random_device{}();
  char name[NCCL_UNIQUE_ID_BYTES - kIdNameOffset];
  std::snprintf(name, sizeof name, "/cudasim-nccl-%d-%u-%08x", int(::getpid()), counter.fetch_add(1),
                salt ^ unsigned(Clock::now().time_since_epoch().count()));
  std::memset(uniqueId->internal, 0, sizeof uniqueId->internal);
  std::memcpy(uniqueId->internal, kIdMagic, sizeof kIdMagic);
  std::memcpy(uniqueId->internal + kIdNameOffset, name, std::strlen(name));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config) {
  const char* fn = "ncclCommInitRankConfig";
  if (!comm) {
    note(std::string(fn) + ": comm is NULL");
    return ncclInvalidArgument;
  }
  *comm = nullptr;
  if (config && (config->magic != 0xcafebeef || config->size < sizeof(size_t) + 2 * sizeof(unsigned) + sizeof(int))) {
    note(std::string(fn) + ": config was not initialised with NCCL_CONFIG_INITIALIZER");
    return ncclInvalidArgument;
  }
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    note(std::string(fn) + ": rank " + std::to_string(rank) + " is not in 0.." + std::to_string(nranks - 1) +
         " (nranks " + std::to_string(nranks) + ")");
    return ncclInvalidArgument;
  }
  const std::string name = id_name(commId);
  if (name.empty()) {
    note(std::string(fn) + ": commId was not made by ncclGetUniqueId");
    return ncclInvalidArgument;
  }
  const int device = cudasim::current_device();  // NCCL binds a rank to the caller's current device
  if (ncclResult_t r = check_device(fn, device)) return r;
  const bool blocking = !config || config->blocking == NCCL_CONFIG_UNDEF_INT || config->blocking != 0;
  return init_handle(fn, comm, name, nranks, rank, device, blocking);
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return ncclCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  const char* fn = "ncclCommInitAll";
  if (!comms || ndev < 1) {
    note(std::string(fn) + ": comms is NULL or ndev < 1");
    return ncclInvalidArgument;
  }
  for (int i = 0; i < ndev; ++i)
    if (ncclResult_t r = check_device(fn, devlist ? devlist[i] : i)) return r;
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  std::vector<std::shared_ptr<Comm>> joined;
  ncclResult_t r = ncclSuccess;
  for (int i = 0; i < ndev && r == ncclSuccess; ++i) {
    std::shared_ptr<Comm> c;
    r = join(fn, id_name(id), ndev, i, devlist ? devlist[i] : i, true, &c);
    if (c) joined.push_back(c);
  }
  for (auto& c : joined)
    if (r == ncclSuccess) r = wait_init(*c);
  if (r != ncclSuccess) {
    for (auto& c : joined) release(*c, kAborted);
    return r;
  }
  for (int i = 0; i < ndev; ++i) comms[i] = make_handle(joined[size_t(i)]);
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  const char* fn = "ncclCommSplit";
  std::shared_ptr<Comm> c = lookup(comm);
  if (!c) return bad_comm(fn, comm);
  if (!newcomm || (color < 0 && color != NCCL_SPLIT_NOCOLOR)) {
    c->set_error(std::string(fn) + ": newcomm is NULL or color is negative");
    return ncclInvalidArgument;
  }
  *newcomm = nullptr;
  if (t_group.depth > 0) {
    c->set_error(std::string(fn) + ": the simulator does not split inside a group");
    return ncclInvalidUsage;
  }
  if (!c->ready.load() && poll_init(*c) != ncclSuccess) {
    c->set_error(std::string(fn) + ": the parent communicator is not initialised");
    return ncclInvalidUsage;
  }
  if (ncclResult_t e = c->async_error()) return e;
  if (config && config->magic != 0xcafebeef) {
    c->set_error(std::string(fn) + ": config was not initialised with NCCL_CONFIG_INITIALIZER");
    return ncclInvalidArgument;
  }
  Segment& seg = *c->seg;
  const uint64_t k = ++c->splits;
  RankSlot& mine = seg.slot(c->rank);
  // Every rank read the previous split's colors before this rank's slot is overwritten.
  ncclResult_t r = host_await(*c, [&] {
    for (int q = 0; q < c->nranks; ++q)
      if (seg.slot(q).split_read.load(std::memory_order_acquire) + 1 < k) return false;
    return true;
  }, fn);
  if (r != ncclSuccess) return r;
  mine.split_color = color;
  mine.split_key = key;
  mine.split_posted.store(k, std::memory_order_release);
  seg.ring();
  r = host_await(*c, [&] {
    for (int q = 0; q < c->nranks; ++q)
      if (seg.slot(q).split_posted.load(std::memory_order_acquire) < k) return false;
    return true;
  }, fn);
  if (r != ncclSuccess) return r;
  std::vector<std::pair<std::pair<int, int>, int>> members;  // ((key, old rank), old rank) of this color
  for (int q = 0; q < c->nranks; ++q)
    if (seg.slot(q).split_color == color) members.push_back({{seg.slot(q).split_key, q}, q});
  mine.split_read.store(k, std::memory_order_release);
  seg.ring();
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  std::sort(members.begin(), members.end());
  int new_rank = 0;
  while (members[size_t(new_rank)].second != c->rank) ++new_rank;
  const bool blocking = config ? (config->blocking == NCCL_CONFIG_UNDEF_INT ? c->blocking : config->blocking != 0) : c->blocking;
  // Every member derives the same name from the parent's, this split's number and the color.
  const std::string name = seg.name() + "-" + std::to_string(k) + "c" + std::to_string(color);
  return init_handle(fn, newcomm, name, int(members.size()), new_rank, c->device, blocking);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  std::shared_ptr<Comm> c = lookup(comm);
  if (!c) return bad_comm("ncclCommGetAsyncError", comm);
  if (!asyncError) {
    c->set_error("ncclCommGetAsyncError: asyncError is NULL");
    return ncclInvalidArgument;
  }
  if (ncclResult_t e = c->async_error())
    *asyncError = e;
  else if (!c->ready.load())
    *asyncError = poll_init(*c);
  else if (c->launch_pending.exchange(false))
    *asyncError = ncclInProgress;
  else if (c->finalized.load() && !c->idle())
    *asyncError = ncclInProgress;
  else
    *asyncError = ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  std::shared_ptr<Comm> c = lookup(comm);
  if (!c) return bad_comm("ncclCommCount", comm);
  if (!count) return ncclInvalidArgument;
  *count = c->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  std::shared_ptr<Comm> c = lookup(comm);
  if (!c) return bad_comm("ncclCommCuDevice", comm);
  if (!device) return ncclInvalidArgument;
  *device = c->device;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  std::shared_ptr<Comm> c = lookup(comm);
  if (!c) return bad_comm("ncclCommUserRank", comm);
  if (!rank) return ncclInvalidArgument;
  *rank = c->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  std::shared_ptr<Comm> c = lookup(comm);
  if (!c) return bad_comm("ncclCommFinalize", comm);
  if (c->finalized.exchange(true)) {
    c->set_error("ncclCommFinalize: the communicator was already finalized");
    return ncclInvalidUsage;
  }
  if (!c->blocking) return ncclInProgress;
  std::unique_lock<std::mutex> lock(c->mu);
  c->cv.wait(lock, [&] { return c->unfinished.empty() || c->async != ncclSuccess; });
  return c->async;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  std::shared_ptr<Comm> c = lookup(comm);
  if (!c) return bad_comm("ncclCommDestroy", comm);
  // Finishes this rank's launched work first (NCCL finalises implicitly), unless it cannot
  // finish: before init completed, or with an asynchronous error (then like ncclCommAbort).
  bool clean = c->ready.load() || poll_init(*c) == ncclSuccess;
  if (clean) {
    std::unique_lock<std::mutex> lock(c->mu);
    c->cv.wait(lock, [&] { return c->unfinished.empty() || c->async != ncclSuccess; });
    clean = c->async == ncclSuccess;
  }
  drop_handle(comm);
  release(*c, clean ? kLeft : kAborted);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  std::shared_ptr<Comm> c = lookup(comm);
  if (!c) return bad_comm("ncclCommAbort", comm);
  drop_handle(comm);
  release(*c, kAborted);
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  ++t_group.depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (t_group.depth == 0) {
    note("ncclGroupEnd: no ncclGroupStart to end");
    return ncclInvalidUsage;
  }
  if (--t_group.depth > 0) return ncclSuccess;
  Group group = std::move(t_group);
  t_group = Group{};
  if (group.error != ncclSuccess) return group.error;  // launches nothing, as NCCL does
  bool in_progress = false;
  for (auto& c : group.inits) {
    if (ncclResult_t r = wait_init(*c); r != ncclSuccess) return r;
  }
  // One work item per communicator, in the order the communicators were first used.
  std::vector<std::shared_ptr<Comm>> order;
  for (const Pending& p : group.ops)
    if (std::find(order.begin(), order.end(), p.comm) == order.end()) order.push_back(p.comm);
  for (const auto& c : order) {
    std::vector<Stream*> streams;
    std::vector<Op> ops;
    for (const Pending& p : group.ops) {
      if (p.comm != c) continue;
      if (std::find(streams.begin(), streams.end(), p.stream) == streams.end()) streams.push_back(p.stream);
      ops.push_back(p.op);
    }
    launch(c, streams, std::move(ops));
    in_progress |= !c->blocking;
  }
  return in_progress ? ncclInProgress : ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  Op o{Kind::AllReduce, static_cast<const char*>(sendbuff), static_cast<char*>(recvbuff), count, datatype, op, -1};
  return submit("ncclAllReduce", comm, o, stream);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  Op o{Kind::Broadcast, static_cast<const char*>(sendbuff), static_cast<char*>(recvbuff), count, datatype, ncclSum, root};
  return submit("ncclBroadcast", comm, o, stream);
}

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  Op o{Kind::Reduce, static_cast<const char*>(sendbuff), static_cast<char*>(recvbuff), count, datatype, op, root};
  return submit("ncclReduce", comm, o, stream);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  Op o{Kind::AllGather, static_cast<const char*>(sendbuff), static_cast<char*>(recvbuff), sendcount, datatype, ncclSum, -1};
  return submit("ncclAllGather", comm, o, stream);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  Op o{Kind::ReduceScatter, static_cast<const char*>(sendbuff), static_cast<char*>(recvbuff), recvcount, datatype, op, -1};
  return submit("ncclReduceScatter", comm, o, stream);
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  Op o{Kind::Send, static_cast<const char*>(sendbuff), nullptr, count, datatype, ncclSum, peer};
  return submit("ncclSend", comm, o, stream);
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  Op o{Kind::Recv, nullptr, static_cast<char*>(recvbuff), count, datatype, ncclSum, peer};
  return submit("ncclRecv", comm, o, stream);
}

ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (!ptr) return ncclInvalidArgument;
  return cudaMalloc(ptr, size) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

ncclResult_t ncclMemFree(void* ptr) { return cudaFree(ptr) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError; }

}  // extern "C"
