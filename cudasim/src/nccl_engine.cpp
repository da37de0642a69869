// The engine of the simulated NCCL: runs a communicator's operations on the streams, moving
// data through the communicator's shared segment (nccl_segment.h) and waiting for the peers
// there, as a GPU kernel would. nccl.cpp describes the model.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <sstream>
#include <thread>

#include "nccl_comm.h"
#include "nccl_reduce.h"

namespace cudasim::nccl {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::AllReduce: return "ncclAllReduce";
    case Kind::Broadcast: return "ncclBroadcast";
    case Kind::Reduce: return "ncclReduce";
    case Kind::AllGather: return "ncclAllGather";
    case Kind::ReduceScatter: return "ncclReduceScatter";
    case Kind::Send: return "ncclSend";
    case Kind::Recv: return "ncclRecv";
  }
  return "?";
}

std::string gone_peers(const Comm& c, const std::vector<int>& peers) {
  std::string out;
  const pid_t self = ::getpid();
  for (int p : peers) {
    if (p == c.rank) continue;
    const RankSlot& s = c.seg->slot(p);
    const uint32_t state = s.state.load(std::memory_order_acquire);
    std::string why;
    if (state == kAborted)
      why = "rank " + std::to_string(p) + " aborted its communicator";
    else if (state == kLeft)
      why = "rank " + std::to_string(p) + " destroyed its communicator";
    else if (state == kJoined && s.pid != self && !process_alive(s.pid, s.start_time))
      why = "rank " + std::to_string(p) + " (pid " + std::to_string(s.pid) + ") exited or was killed";
    if (!why.empty()) out += (out.empty() ? "" : "; ") + why;
  }
  return out;
}

std::vector<int> all_ranks(const Comm& c) {
  std::vector<int> v(size_t(c.nranks));
  for (int r = 0; r < c.nranks; ++r) v[size_t(r)] = r;
  return v;
}

namespace {

// Thrown inside stream work when this rank's communicator was aborted while the work waited:
// the work ends without its data, and the stream goes on.
struct Released {};

std::string describe(const CollDesc& d) {
  std::ostringstream os;
  os << kind_name(Kind(d.kind)) << " of " << d.count << " " << type_name(ncclDataType_t(d.type));
  if (d.op >= 0) os << " (" << op_name(ncclRedOp_t(d.op)) << ")";
  if (d.root >= 0) os << " with root " << d.root;
  return os.str();
}

CollDesc desc_of(const Op& op) {
  CollDesc d;
  d.kind = int32_t(op.kind);
  d.type = int32_t(op.type);
  d.op = reduces(op.kind) ? int32_t(op.redop) : -1;
  d.root = rooted(op.kind) ? op.root : -1;
  d.count = op.count;
  return d;
}

// One step of a blocked wait in stream work: throws Released once aborted; otherwise yields a
// few times, then sleeps on the doorbell (unless it rang since `bell` was read), checking
// now and then whether the awaited peers are still there.
void idle_step(Comm& c, uint32_t bell, const std::vector<int>& peers, const std::string& what, int& spins) {
  if (c.aborted.load(std::memory_order_acquire)) throw Released{};
  if (spins < 8) {
    ++spins;
    std::this_thread::yield();
    return;
  }
  const auto now = Clock::now();
  if (now >= c.next_worker_check) {
    c.next_worker_check = now + kLivenessPeriod;
    const std::string gone = gone_peers(c, peers);
    if (!gone.empty())
      c.fail_async(ncclRemoteError, what + " (" + c.label() + "): " + gone +
                                        "; the operation cannot complete and waits until this communicator is aborted");
  }
  c.seg->wait(bell, kSleep);
}

// Blocks stream work until ready() holds (see idle_step).
template <class Ready>
void await(Comm& c, Ready ready, const std::vector<int>& peers, const std::string& what) {
  int spins = 0;
  for (;;) {
    const uint32_t bell = c.seg->doorbell();
    if (ready()) return;
    idle_step(c, bell, peers, what, spins);
  }
}

// Ranks disagree: the communicator is unusable and the work fails like a faulting kernel.
[[noreturn]] void mismatch(Comm& c, const std::string& text) {
  c.broken = true;
  c.fail_async(ncclInvalidUsage, text);
  throw AsyncError(cudaErrorLaunchFailure, text);
}

// ---- collectives ---------------------------------------------------------------------------

void run_collective(Comm& c, const Op& op) {
  Segment& seg = *c.seg;
  const int n = c.nranks;
  const int me = c.rank;
  RankSlot& mine = seg.slot(me);
  const std::vector<int> everyone = all_ranks(c);
  const CollDesc desc = desc_of(op);
  const uint64_t seq = mine.arrived.load(std::memory_order_relaxed) + 1;
  const std::string what = describe(desc) + " (collective #" + std::to_string(seq) + ")";

  // Arrive, and wait for everyone to arrive at the same collective.
  mine.desc = desc;
  mine.arrived.store(seq, std::memory_order_release);
  seg.ring();
  await(c, [&] {
    for (int r = 0; r < n; ++r)
      if (seg.slot(r).arrived.load(std::memory_order_acquire) < seq) return false;
    return true;
  }, everyone, what);
  for (int r = 0; r < n; ++r) {
    const RankSlot& s = seg.slot(r);
    if (s.arrived.load(std::memory_order_acquire) != seq || !(s.desc == desc))
      mismatch(c, what + " on " + c.label() + ": rank " + std::to_string(r) + " called " + describe(s.desc) +
                      " as its collective #" + std::to_string(s.arrived.load()) +
                      "; every rank must call the same collectives with the same count, datatype, operation and root");
  }

  const size_t es = type_size(op.type);
  std::vector<const void*> in(static_cast<size_t>(n));
  // One round: every rank writes its part into its buffer for the round, waits until all have,
  // then reads. Buffers alternate between rounds, so the next round's writes cannot clobber
  // what a slower rank still reads: it passed this round's barrier only after reading the
  // previous round.
  auto round = [&](auto&& write, auto&& read) {
    const uint64_t r = mine.rounds.load(std::memory_order_relaxed);
    write(seg.coll_buffer(r, me));
    mine.rounds.store(r + 1, std::memory_order_release);
    seg.ring();
    await(c, [&] {
      for (int q = 0; q < n; ++q)
        if (seg.slot(q).rounds.load(std::memory_order_acquire) < r + 1) return false;
      return true;
    }, everyone, what);
    read([&](int q) { return static_cast<const char*>(seg.coll_buffer(r, q)); });
  };

  const size_t count = op.count;
  const size_t per_round = op.kind == Kind::ReduceScatter ? seg.coll_chunk() / es / size_t(n) : seg.coll_chunk() / es;
  for (size_t off = 0; off < count; off += per_round) {
    const size_t m = std::min(per_round, count - off);
    const size_t bytes = m * es;
    switch (op.kind) {
      case Kind::AllReduce:
        round([&](char* buf) { std::memcpy(buf, op.send + off * es, bytes); },
              [&](auto buf) {
                for (int q = 0; q < n; ++q) in[size_t(q)] = buf(q);
                reduce(op.recv + off * es, in.data(), n, m, op.type, op.redop);
              });
        break;
      case Kind::Reduce:
        round([&](char* buf) { std::memcpy(buf, op.send + off * es, bytes); },
              [&](auto buf) {
                if (me != op.root) return;  // only the root receives
                for (int q = 0; q < n; ++q) in[size_t(q)] = buf(q);
                reduce(op.recv + off * es, in.data(), n, m, op.type, op.redop);
              });
        break;
      case Kind::Broadcast:
        round([&](char* buf) { if (me == op.root) std::memcpy(buf, op.send + off * es, bytes); },
              [&](auto buf) {
                if (me == op.root && op.send == op.recv) return;  // in place at the root
                std::memcpy(op.recv + off * es, buf(op.root), bytes);
              });
        break;
      case Kind::AllGather:
        // In place (sendbuff == recvbuff + rank * count) copies a block onto itself via the
        // segment; other ranks' blocks never overlap the part of ours still to be sent.
        round([&](char* buf) { std::memcpy(buf, op.send + off * es, bytes); },
              [&](auto buf) {
                for (int q = 0; q < n; ++q) std::memcpy(op.recv + (size_t(q) * count + off) * es, buf(q), bytes);
              });
        break;
      case Kind::ReduceScatter:
        // Each round carries the same slice of every rank's block; in place (recvbuff ==
        // sendbuff + rank * count) the slice written was copied into the segment first.
        round([&](char* buf) {
                for (int q = 0; q < n; ++q)
                  std::memcpy(buf + size_t(q) * bytes, op.send + (size_t(q) * count + off) * es, bytes);
              },
              [&](auto buf) {
                for (int q = 0; q < n; ++q) in[size_t(q)] = buf(q) + size_t(me) * bytes;
                reduce(op.recv + off * es, in.data(), n, m, op.type, op.redop);
              });
        break;
      default: break;
    }
  }
}

// ---- send / recv ---------------------------------------------------------------------------

struct Transfer {
  const Op* op;
  int stage = 0;     // send: 0 wait for the recv, 1 move chunks; recv: 0 post, 1 wait for the send, 2 move
  size_t done = 0;   // bytes moved
  uint64_t msg = 0;  // the message's number on its channel
  bool finished = false;
};

std::string describe_p2p(const Comm& c, const Op& op) {
  return std::string(kind_name(op.kind)) + " of " + std::to_string(op.count) + " " + type_name(op.type) +
         (op.kind == Kind::Send ? " to rank " : " from rank ") + std::to_string(op.root) + " (" + c.label() + ")";
}

void check_pair(Comm& c, const Op& op, const MsgDesc& other) {
  if (other.count == op.count && other.type == int32_t(op.type)) return;
  mismatch(c, describe_p2p(c, op) + ": the matching " + (op.kind == Kind::Send ? "ncclRecv" : "ncclSend") + " is of " +
                  std::to_string(other.count) + " " + type_name(ncclDataType_t(other.type)) +
                  "; a send and its recv must have the same count and datatype");
}

// Advances one transfer as far as it can go without waiting; true when anything changed.
bool step(Comm& c, Transfer& t) {
  Segment& seg = *c.seg;
  const Op& op = *t.op;
  const size_t bytes = op.count * type_size(op.type);
  const size_t chunk = seg.p2p_chunk();
  bool moved = false;
  if (op.kind == Kind::Send) {
    Channel& ch = seg.channel(c.rank, op.root);
    if (t.stage == 0) {
      // Rendezvous: no data moves before the receiver has started the matching recv.
      t.msg = ch.sends_posted.load(std::memory_order_relaxed);
      if (ch.recvs_posted.load(std::memory_order_acquire) <= t.msg) return false;
      ch.send = MsgDesc{op.count, int32_t(op.type)};
      ch.sends_posted.store(t.msg + 1, std::memory_order_release);  // before checking: the receiver checks too
      seg.ring();
      check_pair(c, op, ch.recv);
      t.stage = 1;
      moved = true;
    }
    uint64_t next = ch.chunks_sent.load(std::memory_order_relaxed);
    bool wrote = false;
    while (t.done < bytes && next - ch.chunks_taken.load(std::memory_order_acquire) < 2) {
      const size_t m = std::min(chunk, bytes - t.done);
      std::memcpy(seg.p2p_buffer(c.rank, op.root, next), op.send + t.done, m);
      ch.chunks_sent.store(++next, std::memory_order_release);
      t.done += m;
      wrote = true;
    }
    if (wrote) seg.ring();
    t.finished = t.done == bytes;
    return moved || wrote;
  }
  Channel& ch = seg.channel(op.root, c.rank);
  if (t.stage == 0) {
    t.msg = ch.recvs_posted.load(std::memory_order_relaxed);
    ch.recv = MsgDesc{op.count, int32_t(op.type)};
    ch.recvs_posted.store(t.msg + 1, std::memory_order_release);
    seg.ring();
    t.stage = 1;
    moved = true;
  }
  if (t.stage == 1) {
    if (ch.sends_posted.load(std::memory_order_acquire) <= t.msg) return moved;
    check_pair(c, op, ch.send);
    t.stage = 2;
    moved = true;
  }
  uint64_t next = ch.chunks_taken.load(std::memory_order_relaxed);
  bool read = false;
  while (t.done < bytes && next < ch.chunks_sent.load(std::memory_order_acquire)) {
    const size_t m = std::min(chunk, bytes - t.done);
    std::memcpy(op.recv + t.done, seg.p2p_buffer(op.root, c.rank, next), m);
    ch.chunks_taken.store(++next, std::memory_order_release);
    t.done += m;
    read = true;
  }
  if (read) seg.ring();
  t.finished = t.done == bytes;
  return moved || read;
}

// Runs sends and recvs together: each (direction, peer) channel takes its messages in call
// order, and all channels progress at once, so a group that sends to and receives from a peer
// (or many peers) completes whatever order the ranks called them in.
void run_transfers(Comm& c, const std::vector<const Op*>& ops) {
  if (ops.empty()) return;
  std::map<std::pair<int, int>, std::deque<Transfer>> channels;  // (is_send, peer)
  for (const Op* op : ops) channels[{op->kind == Kind::Send ? 1 : 0, op->root}].push_back(Transfer{op});
  int spins = 0;
  for (;;) {
    const uint32_t bell = c.seg->doorbell();
    bool progressed = false;
    std::vector<int> waiting_on;
    const Op* blocked = nullptr;
    for (auto& [key, queue] : channels) {
      while (!queue.empty()) {
        progressed |= step(c, queue.front());
        if (!queue.front().finished) {
          waiting_on.push_back(key.second);
          if (!blocked) blocked = queue.front().op;
          break;
        }
        queue.pop_front();
      }
    }
    if (!blocked) return;
    if (progressed) {
      spins = 0;
      continue;
    }
    idle_step(c, bell, waiting_on, describe_p2p(c, *blocked), spins);
  }
}

// ---- launching -----------------------------------------------------------------------------

// Makes the other streams of a group and the stream that runs it wait for each other.
struct Join {
  std::mutex mu;
  std::condition_variable cv;
  size_t expected = 0;
  size_t arrived = 0;
  bool done = false;

  void arrive() {
    std::lock_guard<std::mutex> lock(mu);
    ++arrived;
    cv.notify_all();
  }
  void finish() {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  }
  template <class Pred>
  void wait(const Comm& c, Pred pred) {
    std::unique_lock<std::mutex> lock(mu);
    while (!pred() && !c.aborted.load()) cv.wait_for(lock, kSleep);
  }
};

// A stream's share of a join; work that never runs (skipped after a device error) counts as
// arrived when it is dropped.
struct JoinPart {
  std::shared_ptr<Join> join;
  bool arrived = false;
  ~JoinPart() {
    if (!arrived) join->arrive();
  }
};

// A launched work item's place in its communicator's order. Finishing it (after running, or
// when the stream drops it without running) lets the next one go and tells Finalize.
struct Ticket {
  std::shared_ptr<Comm> comm;
  uint64_t id = 0;
  std::shared_ptr<Join> join;
  bool finished = false;

  void finish() {
    if (finished) return;
    finished = true;
    if (join) join->finish();
    {
      std::lock_guard<std::mutex> lock(comm->mu);
      comm->unfinished.erase(id);
    }
    comm->cv.notify_all();
  }
  ~Ticket() { finish(); }
};

void run_item(Comm& c, Ticket& ticket, const std::vector<Op>& ops, const std::string& what) {
  struct Finish {
    Ticket& t;
    ~Finish() { t.finish(); }
  } finish{ticket};
  if (ticket.join) ticket.join->wait(c, [&] { return ticket.join->arrived >= ticket.join->expected; });
  {
    std::unique_lock<std::mutex> lock(c.mu);
    c.cv.wait(lock, [&] { return c.aborted.load() || *c.unfinished.begin() == ticket.id; });
  }
  if (c.aborted.load()) return;
  if (c.broken.load()) {
    std::string cause;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      cause = c.error;
    }
    throw AsyncError(cudaErrorLaunchFailure, what + ": the communicator failed earlier: " + cause);
  }
  try {
    std::vector<const Op*> transfers;
    for (const Op& op : ops) {
      if (is_p2p(op.kind))
        transfers.push_back(&op);
      else
        run_collective(c, op);
    }
    run_transfers(c, transfers);
  } catch (const Released&) {
    // Aborted while waiting: no data, no error on the stream.
  }
}

}  // namespace

void launch(const std::shared_ptr<Comm>& c, const std::vector<Stream*>& streams, std::vector<Op> ops) {
  auto ticket = std::make_shared<Ticket>();
  ticket->comm = c;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    ticket->id = c->next_ticket++;
    c->unfinished.insert(ticket->id);
  }
  std::string what = ops.size() == 1 ? std::string(kind_name(ops[0].kind))
                                     : "NCCL group of " + std::to_string(ops.size()) + " operations";
  what += " (" + c->label() + ")";
  if (streams.size() > 1) {
    ticket->join = std::make_shared<Join>();
    ticket->join->expected = streams.size() - 1;
    for (size_t i = 1; i < streams.size(); ++i) {
      auto part = std::make_shared<JoinPart>();
      part->join = ticket->join;
      enqueue(streams[i], what + ", joining its other streams", [part, c] {
        part->arrived = true;
        part->join->arrive();
        part->join->wait(*c, [&] { return part->join->done; });
      });
    }
  }
  if (!c->blocking) c->launch_pending = true;
  enqueue(streams[0], what, [c, ticket, ops = std::move(ops), what] { run_item(*c, *ticket, ops, what); });
}

}  // namespace cudasim::nccl
