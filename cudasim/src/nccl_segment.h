#pragma once
// The shared-memory segment that the ranks of one simulated NCCL communicator meet in, whether
// they are threads of one process or separate processes. The unique id names it (shm_open);
// the first rank to arrive creates it, every rank maps it, and the name is unlinked as soon as
// all ranks have joined (so a rank killed later leaks no /dev/shm file) or when the last rank
// leaves before that.
//
// Layout: a header, one slot per rank (its state and what it is doing), one channel per
// ordered pair of ranks for send/recv, then the data buffers: for collectives two rounds'
// worth (double buffering) of one chunk per rank, for each channel two chunks. Large buffers
// move chunk by chunk, so the segment stays small whatever the message size.
//
// Every wait on the segment is a futex wait on one doorbell word (bounded by a short timeout,
// so that aborts and dead peers are noticed); every state change rings it.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include <nccl.h>

namespace cudasim::nccl {

// A failure to set up the segment, with the NCCL result to return.
struct SegmentError : std::runtime_error {
  ncclResult_t result;
  SegmentError(ncclResult_t r, const std::string& what) : std::runtime_error(what), result(r) {}
};

enum SlotState : uint32_t {
  kEmpty = 0,    // no rank yet
  kClaiming,     // a rank is filling in its pid (a second claimant of the same rank fails)
  kJoined,       // the rank is a member
  kLeft,         // the rank destroyed its communicator
  kAborted,      // the rank aborted its communicator (or failed to join)
};

// What a collective is, as every rank must agree on it.
struct CollDesc {
  int32_t kind = 0;   // the simulator's collective kind
  int32_t type = 0;   // ncclDataType_t
  int32_t op = -1;    // ncclRedOp_t, -1 for collectives without one
  int32_t root = -1;  // -1 for collectives without one
  uint64_t count = 0;
  bool operator==(const CollDesc&) const = default;
};

struct alignas(64) RankSlot {
  std::atomic<uint32_t> state;
  int32_t pid;
  uint64_t start_time;  // the process's start time (from /proc), so that a reused pid is not mistaken for it
  int32_t device;
  // Collectives: `arrived` is the sequence number (1, 2, ...) of the last collective this rank
  // reached, `desc` that collective's arguments (written before `arrived` is published), and
  // `rounds` how many data rounds this rank has written (the barrier counter).
  std::atomic<uint64_t> arrived;
  CollDesc desc;
  std::atomic<uint64_t> rounds;
  // ncclCommSplit: the rank's color and key for split number `split_posted`; `split_read` is
  // the last split whose colors this rank has read (so a slot is not overwritten too early).
  std::atomic<uint64_t> split_posted;
  std::atomic<uint64_t> split_read;
  int32_t split_color;
  int32_t split_key;
};

// What one side of a send/recv pair says it moves.
struct MsgDesc {
  uint64_t count = 0;
  int32_t type = 0;
};

// Messages from one rank (src) to another (dst), matched in order: the k-th send from src to
// dst pairs with the k-th recv at dst from src. Each counter is written by one side only.
struct alignas(64) Channel {
  std::atomic<uint64_t> recvs_posted;  // by dst: recvs started (the sender waits for this)
  std::atomic<uint64_t> sends_posted;  // by src: sends whose `send` description is written
  std::atomic<uint64_t> chunks_sent;   // by src: chunks written into the channel's buffers
  std::atomic<uint64_t> chunks_taken;  // by dst: chunks copied out
  MsgDesc recv;                        // by dst, before recvs_posted
  MsgDesc send;                        // by src, before sends_posted
};

struct SegmentHeader {
  std::atomic<uint32_t> magic;  // set last by the creator: the header is valid
  int32_t nranks;
  uint64_t total_size;
  uint64_t coll_chunk;  // bytes per rank per round for collectives
  uint64_t p2p_chunk;   // bytes per chunk of a channel
  uint64_t slots_offset, channels_offset, coll_offset, p2p_offset;
  std::atomic<uint32_t> doorbell;  // futex word: bumped on every change
  std::atomic<uint32_t> sleepers;  // futex waiters, so that ringing without any costs no syscall
  std::atomic<int32_t> attached;   // ranks mapping it that have not left
  std::atomic<int32_t> joined;     // ranks that claimed their slot (never decreases)
  std::atomic<uint32_t> unlinked;  // the name was removed
};

class Segment {
 public:
  // Creates the segment `name` (a shm name, "/...") for `nranks` ranks or maps the one another
  // rank created. Throws SegmentError (ncclSystemError when shared memory fails,
  // ncclInvalidArgument when the existing segment has another number of ranks).
  static std::shared_ptr<Segment> open(const std::string& name, int nranks);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  const std::string& name() const { return name_; }
  int nranks() const { return header().nranks; }
  SegmentHeader& header() const { return *static_cast<SegmentHeader*>(base_); }
  RankSlot& slot(int rank) const;
  Channel& channel(int src, int dst) const;
  size_t coll_chunk() const { return header().coll_chunk; }
  size_t p2p_chunk() const { return header().p2p_chunk; }
  // The buffer `rank` writes in collective round `round` (two rounds alternate).
  char* coll_buffer(uint64_t round, int rank) const;
  // The buffer chunk number `chunk` of channel src -> dst goes through.
  char* p2p_buffer(int src, int dst, uint64_t chunk) const;

  // Claims `rank`'s slot for this process on `device`. Throws SegmentError(ncclInvalidUsage)
  // when another rank already claimed it.
  void claim(int rank, int device);
  // Marks `rank` as gone (kLeft or kAborted), wakes every waiter, and detaches: the last rank
  // to leave removes the name if it is still there.
  void leave(int rank, SlotState how);
  // Removes the name (once); called when every rank has joined.
  void unlink_name();

  uint32_t doorbell() const { return header().doorbell.load(std::memory_order_acquire); }
  // Wakes every waiter, in every process.
  void ring();
  // Sleeps while the doorbell still reads `seen`, at most `timeout`.
  void wait(uint32_t seen, std::chrono::microseconds timeout);

 private:
  Segment() = default;
  std::string name_;
  void* base_ = nullptr;
  size_t size_ = 0;
  bool detached_ = false;
};

// This process's start time as /proc/self/stat reports it (0 when unknown).
uint64_t own_start_time();
// Whether process `pid`, started at `start_time` (0: unknown), still runs; a zombie counts as
// dead, and so does a pid that now names a later process.
bool process_alive(int pid, uint64_t start_time);

}  // namespace cudasim::nccl
