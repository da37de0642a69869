// The shared-memory segment of a simulated NCCL communicator (see nccl_segment.h).
#include "nccl_segment.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
#include <thread>

namespace cudasim::nccl {

namespace {

constexpr uint32_t kMagic = 0x4e43534d;  // "NCSM"

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "the segment's atomics must work across processes");

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Bytes per rank per collective round. CUDASIM_NCCL_CHUNK_BYTES (read by the rank that creates
// the segment, so all ranks agree) lets tests make many rounds out of small buffers.
size_t coll_chunk_for(int nranks) {
  size_t chunk = size_t(1) << 20;
  if (const char* env = std::getenv("CUDASIM_NCCL_CHUNK_BYTES")) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(env, &end, 10);
    if (end != env && v > 0) chunk = size_t(v);
  }
  // A reduce-scatter round carries one element of every rank's block: at least 8 bytes each.
  chunk = std::max<size_t>({chunk, 4096, size_t(8) * size_t(nranks)});
  return round_up(chunk, 64);
}

// Two buffers per ordered pair of ranks: keep the total near 16 MiB for many ranks.
size_t p2p_chunk_for(int nranks, size_t coll_chunk) {
  size_t pairs = size_t(nranks) * size_t(nranks);
  size_t chunk = std::max<size_t>(16384, (size_t(8) << 20) / pairs);
  return round_up(std::min(chunk, coll_chunk), 64);
}

long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE: waiters in other processes map the same page.
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

// Fields 3 (state) and 22 (start time) of /proc/<pid>/stat; false when it cannot be read.
bool read_stat(const std::string& path, char* state, uint64_t* start_time) {
  std::ifstream in(path);
  std::string text;
  if (!in || !std::getline(in, text)) return false;
  // The command name (field 2) is in parentheses and may hold spaces: parse after the last ')'.
  size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 3) *state = field.empty() ? '?' : field[0];
    if (i == 22) {
      *start_time = std::strtoull(field.c_str(), nullptr, 10);
      return true;
    }
  }
  return false;
}

}  // namespace

uint64_t own_start_time() {
  char state = 0;
  uint64_t start = 0;
  return read_stat("/proc/self/stat", &state, &start) ? start : 0;
}

bool process_alive(int pid, uint64_t start_time) {
  if (pid <= 0) return true;  // nothing to check against
  char state = 0;
  uint64_t start = 0;
  if (read_stat("/proc/" + std::to_string(pid) + "/stat", &state, &start)) {
    if (state == 'Z' || state == 'X') return false;  // killed but not reaped yet
    return start_time == 0 || start == start_time;
  }
  // No /proc entry: gone, unless /proc is not there at all.
  if (::access("/proc/self/stat", F_OK) == 0) return false;
  return ::kill(pid, 0) == 0 || errno != ESRCH;
}

std::shared_ptr<Segment> Segment::open(const std::string& name, int nranks) {
  std::shared_ptr<Segment> seg(new Segment());
  seg->name_ = name;
  const size_t coll_chunk = coll_chunk_for(nranks);
  const size_t p2p_chunk = p2p_chunk_for(nranks, coll_chunk);
  const size_t n = size_t(nranks);
  const size_t slots_offset = round_up(sizeof(SegmentHeader), 64);
  const size_t channels_offset = round_up(slots_offset + n * sizeof(RankSlot), 64);
  const size_t coll_offset = round_up(channels_offset + n * n * sizeof(Channel), 4096);
  const size_t p2p_offset = coll_offset + 2 * n * coll_chunk;
  const size_t total = round_up(p2p_offset + 2 * n * n * p2p_chunk, 4096);

  for (int attempt = 0;; ++attempt) {
    int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      // Created it: size it (tmpfs pages are only allocated when touched), fill in the header,
      // and publish it with the magic number last.
      if (::ftruncate(fd, off_t(total)) != 0) {
        std::string err = errno_text("ftruncate of shared memory " + name);
        ::close(fd);
        ::shm_unlink(name.c_str());
        throw SegmentError(ncclSystemError, err);
      }
      void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      ::close(fd);
      if (base == MAP_FAILED) {
        ::shm_unlink(name.c_str());
        throw SegmentError(ncclSystemError, errno_text("mmap of shared memory " + name));
      }
      seg->base_ = base;
      seg->size_ = total;
      // The file is zero-filled: every atomic already reads 0 and every slot is kEmpty.
      SegmentHeader* h = new (base) SegmentHeader;
      h->nranks = nranks;
      h->total_size = total;
      h->coll_chunk = coll_chunk;
      h->p2p_chunk = p2p_chunk;
      h->slots_offset = slots_offset;
      h->channels_offset = channels_offset;
      h->coll_offset = coll_offset;
      h->p2p_offset = p2p_offset;
      h->attached.store(1, std::memory_order_relaxed);
      h->magic.store(kMagic, std::memory_order_release);
      return seg;
    }
    if (errno != EEXIST) throw SegmentError(ncclSystemError, errno_text("shm_open " + name));

    fd = ::shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) {
      // Removed between the two opens (its last rank left): make a new one.
      if (errno == ENOENT && attempt < 100) continue;
      throw SegmentError(ncclSystemError, errno_text("shm_open " + name));
    }
    // The creator sizes the file right after creating it; wait for that (bounded: a creator
    // that died in between leaves an empty file).
    struct stat st {};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (::fstat(fd, &st) == 0 && st.st_size == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (st.st_size < off_t(sizeof(SegmentHeader))) {
      ::close(fd);
      throw SegmentError(ncclSystemError, "shared memory " + name + " was created but never sized");
    }
    void* base = ::mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (base == MAP_FAILED) throw SegmentError(ncclSystemError, errno_text("mmap of shared memory " + name));
    seg->base_ = base;
    seg->size_ = size_t(st.st_size);
    SegmentHeader& h = seg->header();
    while (h.magic.load(std::memory_order_acquire) != kMagic && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (h.magic.load(std::memory_order_acquire) != kMagic || h.total_size != seg->size_) {
      seg->detached_ = true;  // never attached
      throw SegmentError(ncclSystemError, "shared memory " + name + " is not a simulated NCCL communicator");
    }
    if (h.nranks != nranks) {
      seg->detached_ = true;
      throw SegmentError(ncclInvalidArgument, "nranks " + std::to_string(nranks) + " differs from the " +
                                                  std::to_string(h.nranks) +
                                                  " of the rank that created the communicator");
    }
    h.attached.fetch_add(1);
    return seg;
  }
}

Segment::~Segment() {
  if (base_) ::munmap(base_, size_);
}

RankSlot& Segment::slot(int rank) const {
  return reinterpret_cast<RankSlot*>(static_cast<char*>(base_) + header().slots_offset)[rank];
}

Channel& Segment::channel(int src, int dst) const {
  auto* channels = reinterpret_cast<Channel*>(static_cast<char*>(base_) + header().channels_offset);
  return channels[size_t(src) * size_t(nranks()) + size_t(dst)];
}

char* Segment::coll_buffer(uint64_t round, int rank) const {
  const SegmentHeader& h = header();
  const size_t index = size_t(round % 2) * size_t(h.nranks) + size_t(rank);
  return static_cast<char*>(base_) + h.coll_offset + index * h.coll_chunk;
}

char* Segment::p2p_buffer(int src, int dst, uint64_t chunk) const {
  const SegmentHeader& h = header();
  const size_t pair = size_t(src) * size_t(h.nranks) + size_t(dst);
  return static_cast<char*>(base_) + h.p2p_offset + (pair * 2 + size_t(chunk % 2)) * h.p2p_chunk;
}

void Segment::claim(int rank, int device) {
  RankSlot& s = slot(rank);
  uint32_t expected = kEmpty;
  if (!s.state.compare_exchange_strong(expected, kClaiming)) {
    const int pid = s.pid;
    // Not ours: detach without touching the slot.
    detached_ = true;
    if (header().attached.fetch_sub(1) == 1) unlink_name();
    throw SegmentError(ncclInvalidUsage, "rank " + std::to_string(rank) + " is already taken" +
                                             (pid > 0 ? " (by pid " + std::to_string(pid) + ")" : std::string()) +
                                             ": every rank must join once");
  }
  s.pid = int32_t(::getpid());
  s.start_time = own_start_time();
  s.device = device;
  s.state.store(kJoined, std::memory_order_release);
  header().joined.fetch_add(1);
  ring();
}

void Segment::leave(int rank, SlotState how) {
  if (detached_) return;
  detached_ = true;
  slot(rank).state.store(how, std::memory_order_release);
  ring();
  if (header().attached.fetch_sub(1) == 1) unlink_name();
}

void Segment::unlink_name() {
  if (header().unlinked.exchange(1) == 0) ::shm_unlink(name_.c_str());
}

void Segment::ring() {
  SegmentHeader& h = header();
  h.doorbell.fetch_add(1);
  if (h.sleepers.load() > 0) futex(&h.doorbell, FUTEX_WAKE, INT_MAX, nullptr);
}

void Segment::wait(uint32_t seen, std::chrono::microseconds timeout) {
  SegmentHeader& h = header();
  // sleepers before the re-check and doorbell before the sleepers check in ring() (both
  // sequentially consistent): a ring either sees this sleeper or this re-check sees the ring.
  h.sleepers.fetch_add(1);
  if (h.doorbell.load() == seen) {
    timespec ts{};
    ts.tv_sec = timeout.count() / 1000000;
    ts.tv_nsec = (timeout.count() % 1000000) * 1000;
    futex(&h.doorbell, FUTEX_WAIT, seen, &ts);
  }
  h.sleepers.fetch_sub(1);
}

}  // namespace cudasim::nccl
