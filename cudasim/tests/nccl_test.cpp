// Conformance of the simulated NCCL: every collective, datatype and reduction against known
// answers on 2 and 3 ranks (threads; rank r on simulated device r % 2, which the simulator
// allows and real NCCL does not), in place and out of place, across chunk boundaries;
// blocking and non-blocking init; send/recv in groups and outside them; one thread driving
// several communicators; communicators split in subgroups; two real processes (this binary
// run again as a peer, see NcclPeer) moving a large buffer through the shared segment; and
// failures: a rank that never arrives, a peer process killed mid-collective, ranks that
// disagree, bad arguments. Every test checks that it leaves no shared-memory segment behind.
// nccl.h first: it includes the simulator's cuda_runtime.h before the toolkit's fp16 headers.
#include <nccl.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <cudasim/cudasim.h>
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// ---- values and the reference ----------------------------------------------------------------

const ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,   ncclInt32,   ncclUint32,  ncclInt64,
                                 ncclUint64,  ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
const ncclRedOp_t kOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};

size_t size_of(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    default: return 8;
  }
}

bool is_float(ncclDataType_t t) { return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16; }
bool is_signed(ncclDataType_t t) { return is_float(t) || t == ncclInt8 || t == ncclInt32 || t == ncclInt64; }

std::string name(ncclDataType_t t) {
  const char* names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64", "bfloat16"};
  return names[int(t)];
}
std::string name(ncclRedOp_t op) {
  const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return names[int(op)];
}

// Element i of rank r's input: small integers (1..6, negative now and then where the type
// allows), so sums and products are exact in every floating type, and products of three
// wrap around int8 and uint8 as on the GPU.
double value(ncclDataType_t t, int rank, size_t i) {
  double v = double((i * 7 + size_t(rank) * 5) % 6 + 1);
  if (is_signed(t) && (i + size_t(rank)) % 4 == 0) v = -v;
  return v;
}

// The type's value of an integer that may overflow it (two's complement wrap-around).
double wrap(ncclDataType_t t, int64_t v) {
  switch (t) {
    case ncclInt8: return int8_t(v);
    case ncclUint8: return uint8_t(v);
    case ncclInt32: return int32_t(v);
    case ncclUint32: return uint32_t(v);
    case ncclInt64: return double(v);
    default: return double(uint64_t(v));
  }
}

void put(ncclDataType_t t, void* base, size_t i, double v) {
  char* p = static_cast<char*>(base) + i * size_of(t);
  auto store = [p](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (t) {
    case ncclInt8: return store(int8_t(v));
    case ncclUint8: return store(uint8_t(v));
    case ncclInt32: return store(int32_t(v));
    case ncclUint32: return store(uint32_t(v));
    case ncclInt64: return store(int64_t(v));
    case ncclUint64: return store(uint64_t(v));
    case ncclFloat16: return store(__float2half_rn(float(v)));
    case ncclBfloat16: return store(__float2bfloat16_rn(float(v)));
    case ncclFloat32: return store(float(v));
    default: return store(v);
  }
}

double get(ncclDataType_t t, const void* base, size_t i) {
  const char* p = static_cast<const char*>(base) + i * size_of(t);
  auto load = [p](auto x) {
    std::memcpy(&x, p, sizeof x);
    return x;
  };
  switch (t) {
    case ncclInt8: return load(int8_t());
    case ncclUint8: return load(uint8_t());
    case ncclInt32: return load(int32_t());
    case ncclUint32: return load(uint32_t());
    case ncclInt64: return double(load(int64_t()));
    case ncclUint64: return double(load(uint64_t()));
    case ncclFloat16: return __half2float(load(__half()));
    case ncclBfloat16: return __bfloat162float(load(__nv_bfloat16()));
    case ncclFloat32: return load(float());
    default: return load(double());
  }
}

// Host bytes of `count` elements of type t: element i is f(i).
std::vector<char> encode(ncclDataType_t t, size_t count, const std::function<double(size_t)>& f) {
  std::vector<char> bytes(count * size_of(t));
  for (size_t i = 0; i < count; ++i) put(t, bytes.data(), i, f(i));
  return bytes;
}

// The documented answer of reducing value(t, r, i) over ranks r < n (see nccl_reduce.h):
// integers wrap, integer avg divides the wrapped sum truncating toward zero, floating avg is
// the mean (inexact: compared with a tolerance).
double reference(ncclDataType_t t, ncclRedOp_t op, int n, size_t i) {
  if (is_float(t)) {
    double acc = value(t, 0, i);
    for (int r = 1; r < n; ++r) {
      const double v = value(t, r, i);
      acc = op == ncclSum || op == ncclAvg ? acc + v : op == ncclProd ? acc * v : op == ncclMax ? std::max(acc, v) : std::min(acc, v);
    }
    return op == ncclAvg ? acc / n : acc;
  }
  int64_t acc = int64_t(value(t, 0, i));
  for (int r = 1; r < n; ++r) {
    const int64_t v = int64_t(value(t, r, i));
    acc = op == ncclSum || op == ncclAvg ? acc + v : op == ncclProd ? acc * v : op == ncclMax ? std::max(acc, v) : std::min(acc, v);
  }
  if (op != ncclAvg) return wrap(t, acc);
  return std::trunc(wrap(t, acc) / n);  // exact: the wrapped sums are small
}

double tolerance(ncclDataType_t t, ncclRedOp_t op) {
  if (op != ncclAvg || !is_float(t)) return 0;
  return t == ncclFloat16 ? 4e-3 : t == ncclBfloat16 ? 3e-2 : t == ncclFloat32 ? 1e-6 : 1e-14;
}

// "" when got[i] == want(i) (within tol, relative) for every i, else the first difference.
std::string compare(ncclDataType_t t, const std::vector<char>& got, size_t count, const std::function<double(size_t)>& want,
                    double tol = 0) {
  for (size_t i = 0; i < count; ++i) {
    const double g = get(t, got.data(), i);
    const double w = want(i);
    if (tol == 0 ? g != w : !(std::fabs(g - w) <= tol * std::max(1.0, std::fabs(w))))
      return "element " + std::to_string(i) + " is " + std::to_string(g) + ", expected " + std::to_string(w);
  }
  return "";
}

// ---- device helpers --------------------------------------------------------------------------

// Device memory to carve buffers from without cudaFree: cudaFree waits for every stream of
// its device, so a rank freeing memory while another rank on the same device is blocked in
// a collective that needs the first one would deadlock (as it would on a GPU).
class Pool {
 public:
  explicit Pool(size_t bytes) : size_(bytes) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&base_), bytes), cudaSuccess) << cudasimLastErrorDetail();
  }
  ~Pool() { cudaFree(base_); }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  char* take(size_t bytes) {
    char* p = base_ + used_;
    used_ += (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
    EXPECT_LE(used_, size_) << "the test's pool is too small";
    return p;
  }
  void reset() { used_ = 0; }

 private:
  size_t size_;
  size_t used_ = 0;
  char* base_ = nullptr;
};

// Device memory of the current device (or from a pool), with host copies in and out.
class Buf {
 public:
  explicit Buf(size_t bytes) : bytes_(std::max<size_t>(bytes, 1)), owned_(true) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p_), bytes_), cudaSuccess) << cudasimLastErrorDetail();
  }
  Buf(Pool& pool, size_t bytes) : bytes_(std::max<size_t>(bytes, 1)), owned_(false), p_(pool.take(bytes_)) {}
  ~Buf() {
    if (owned_) cudaFree(p_);
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  char* get() const { return p_; }
  void set(const std::vector<char>& host, size_t offset = 0) const {
    EXPECT_EQ(cudaMemcpy(p_ + offset, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    // From pageable memory cudaMemcpy may return once the bytes are staged, the copy landing
    // later as legacy-stream work (NVIDIA's "API synchronization behavior"; the simulator
    // does so while the legacy stream is busy): the collectives run on non-blocking
    // streams, which do not wait for it. Without this, 1 run in 30 of
    // ManyRoundsThroughSmallChunks read a previous case's bytes.
    EXPECT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
  }
  void fill(int byte) const { set(std::vector<char>(bytes_, char(byte))); }
  std::vector<char> read(size_t offset, size_t bytes) const {
    std::vector<char> host(bytes);
    EXPECT_EQ(cudaMemcpy(host.data(), p_ + offset, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

 private:
  size_t bytes_;
  bool owned_;
  char* p_ = nullptr;
};

// Waits for the stream at most `limit`: its status, or cudaErrorNotReady when still busy.
cudaError_t sync_within(cudaStream_t s, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    const cudaError_t e = cudaStreamQuery(s);
    if (e != cudaErrorNotReady || Clock::now() > deadline) return e;
    std::this_thread::sleep_for(1ms);
  }
}

// Polls a communicator's asynchronous state until it is not `from` (or `limit` passes).
ncclResult_t async_state_after(ncclComm_t comm, ncclResult_t from, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  ncclResult_t state = from;
  while (state == from && Clock::now() < deadline) {
    EXPECT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
    if (state == from) std::this_thread::sleep_for(1ms);
  }
  return state;
}

// Polls a communicator's asynchronous state until it reports an error (neither ncclSuccess
// nor ncclInProgress) or `limit` passes; the last state.
ncclResult_t async_error_within(ncclComm_t comm, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  ncclResult_t state = ncclSuccess;
  for (;;) {
    EXPECT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
    if ((state != ncclSuccess && state != ncclInProgress) || Clock::now() > deadline) return state;
    std::this_thread::sleep_for(1ms);
  }
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

ncclConfig_t nonblocking() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// One rank of a communicator run by a thread: its simulated device and its own stream (ranks
// sharing a device must not share a stream: a rank blocked in a collective blocks it).
struct Rank {
  int rank = 0;
  int n = 0;
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  Pool* pool = nullptr;  // for buffers of ranks that share a device (1 MiB)
  void sync() const { EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << cudasimLastErrorDetail(); }
};

// Runs body on n threads, one per rank of a new blocking communicator. The ranks free their
// pools only once all are done (see Pool).
void run_ranks(int n, const std::function<void(Rank&)>& body) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::barrier done(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      Rank k;
      k.rank = r;
      k.n = n;
      k.device = r % 2;
      EXPECT_EQ(cudaSetDevice(k.device), cudaSuccess);
      EXPECT_EQ(cudaStreamCreateWithFlags(&k.stream, cudaStreamNonBlocking), cudaSuccess);
      {
        Pool pool(1 << 20);
        k.pool = &pool;
        ncclResult_t init = ncclCommInitRank(&k.comm, n, id, r);
        EXPECT_EQ(init, ncclSuccess) << ncclGetLastError(nullptr);
        if (init == ncclSuccess) {
          body(k);
          EXPECT_EQ(ncclCommDestroy(k.comm), ncclSuccess);
        }
        done.arrive_and_wait();
      }
      cudaStreamDestroy(k.stream);
    });
  }
  for (auto& t : threads) t.join();
}

// Two communicators of one clique made by ncclCommInitAll (rank i on device i), each with a
// non-blocking stream of its device, driven by one thread.
struct Clique {
  ncclComm_t comm[2] = {nullptr, nullptr};
  cudaStream_t stream[2] = {nullptr, nullptr};
  Clique() {
    EXPECT_EQ(ncclCommInitAll(comm, 2, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
    for (int d = 0; d < 2; ++d) {
      cudaSetDevice(d);
      EXPECT_EQ(cudaStreamCreateWithFlags(&stream[d], cudaStreamNonBlocking), cudaSuccess);
    }
    cudaSetDevice(0);
  }
  ~Clique() {
    for (int d = 0; d < 2; ++d) {
      if (comm[d]) ncclCommAbort(comm[d]);
      cudaSetDevice(d);
      cudaStreamDestroy(stream[d]);
    }
    cudaSetDevice(0);
  }
};

// ---- segments left behind --------------------------------------------------------------------

std::set<std::string> our_segments() {
  std::set<std::string> names;
  const std::string prefix = "cudasim-nccl-" + std::to_string(::getpid()) + "-";
  if (DIR* d = ::opendir("/dev/shm")) {
    while (dirent* e = ::readdir(d))
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) names.insert(e->d_name);
    ::closedir(d);
  }
  return names;
}

class NcclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2) GTEST_SKIP() << "needs 2 simulated devices";
    before_ = our_segments();
    cudaSetDevice(0);
  }
  void TearDown() override {
    std::set<std::string> after = our_segments();
    EXPECT_EQ(after, before_) << "a shared-memory segment of a communicator was left in /dev/shm";
    for (const auto& name : after)
      if (!before_.count(name)) ::shm_unlink(("/" + name).c_str());
  }

 private:
  std::set<std::string> before_;
};

using NcclCollectives = NcclTest;
using NcclInit = NcclTest;
using NcclSendRecv = NcclTest;
using NcclGroups = NcclTest;
using NcclProcesses = NcclTest;
using NcclFailures = NcclTest;
using NcclArguments = NcclTest;

// ---- collectives -----------------------------------------------------------------------------

// Every rank's AllReduce output, to check that all ranks got the same bits.
struct Outputs {
  std::mutex mu;
  std::map<std::string, std::map<int, std::vector<char>>> by_case;
  void add(const std::string& key, int rank, std::vector<char> bytes) {
    std::lock_guard<std::mutex> lock(mu);
    by_case[key][rank] = std::move(bytes);
  }
};

// Every collective x datatype x reduction, in place and out of place, `count` elements.
void collective_matrix(const Rank& k, size_t count, Outputs& outputs) {
  const int n = k.n;
  const int me = k.rank;
  const int root = n - 1;
  for (ncclDataType_t t : kTypes) {
    const size_t es = size_of(t);
    const size_t bytes = count * es;
    auto mine = [&](size_t i) { return value(t, me, i); };
    for (bool in_place : {false, true}) {
      const std::string where = name(t) + (in_place ? " in place" : " out of place") + " on rank " + std::to_string(me) +
                                " of " + std::to_string(n) + ", count " + std::to_string(count);
      {  // Broadcast from rank 1 (0 on one rank): everyone ends with the root's input.
        const int from = n > 1 ? 1 : 0;
        k.pool->reset();
        Buf s(*k.pool, bytes), r(*k.pool, bytes);
        s.set(encode(t, count, mine));
        r.fill(0x5a);
        char* recv = in_place ? s.get() : r.get();
        EXPECT_EQ(ncclBroadcast(s.get(), recv, count, t, from, k.comm, k.stream), ncclSuccess) << ncclGetLastError(k.comm);
        k.sync();
        EXPECT_EQ(compare(t, in_place ? s.read(0, bytes) : r.read(0, bytes), count, [&](size_t i) { return value(t, from, i); }), "")
            << "broadcast, " << where;
      }
      {  // AllGather: block q of the output is rank q's input.
        k.pool->reset();
        Buf out(*k.pool, bytes * size_t(n));
        Buf s(*k.pool, bytes);
        const char* send = s.get();
        if (in_place) {
          out.fill(0x5a);
          out.set(encode(t, count, mine), size_t(me) * bytes);
          send = out.get() + size_t(me) * bytes;
        } else {
          s.set(encode(t, count, mine));
          out.fill(0x5a);
        }
        EXPECT_EQ(ncclAllGather(send, out.get(), count, t, k.comm, k.stream), ncclSuccess) << ncclGetLastError(k.comm);
        k.sync();
        EXPECT_EQ(compare(t, out.read(0, bytes * size_t(n)), count * size_t(n),
                          [&](size_t j) { return value(t, int(j / count), j % count); }),
                  "")
            << "all-gather, " << where;
      }
      for (ncclRedOp_t op : kOps) {
        const double tol = tolerance(t, op);
        const std::string what = name(op) + ", " + where;
        {  // AllReduce
          k.pool->reset();
          Buf s(*k.pool, bytes), r(*k.pool, bytes);
          s.set(encode(t, count, mine));
          r.fill(0x5a);
          char* recv = in_place ? s.get() : r.get();
          EXPECT_EQ(ncclAllReduce(s.get(), recv, count, t, op, k.comm, k.stream), ncclSuccess) << ncclGetLastError(k.comm);
          k.sync();
          std::vector<char> got = in_place ? s.read(0, bytes) : r.read(0, bytes);
          EXPECT_EQ(compare(t, got, count, [&](size_t i) { return reference(t, op, n, i); }, tol), "") << "all-reduce " << what;
          outputs.add(name(t) + name(op) + std::to_string(in_place), me, std::move(got));
        }
        {  // Reduce to the last rank; the others' buffers stay as they were.
          k.pool->reset();
          Buf s(*k.pool, bytes), r(*k.pool, bytes);
          s.set(encode(t, count, mine));
          r.fill(0x5a);
          char* recv = in_place ? s.get() : r.get();
          EXPECT_EQ(ncclReduce(s.get(), recv, count, t, op, root, k.comm, k.stream), ncclSuccess) << ncclGetLastError(k.comm);
          k.sync();
          if (me == root) {
            EXPECT_EQ(compare(t, in_place ? s.read(0, bytes) : r.read(0, bytes), count,
                              [&](size_t i) { return reference(t, op, n, i); }, tol),
                      "")
                << "reduce " << what;
          } else {
            EXPECT_EQ(s.read(0, bytes), encode(t, count, mine)) << "reduce changed a non-root's input, " << what;
            if (!in_place) EXPECT_EQ(r.read(0, bytes), std::vector<char>(bytes, 0x5a)) << "reduce wrote a non-root's recvbuff, " << what;
          }
        }
        {  // ReduceScatter: rank me gets block me of the reduction of n blocks.
          k.pool->reset();
          Buf s(*k.pool, bytes * size_t(n)), r(*k.pool, bytes);
          s.set(encode(t, count * size_t(n), mine));
          r.fill(0x5a);
          char* recv = in_place ? s.get() + size_t(me) * bytes : r.get();
          EXPECT_EQ(ncclReduceScatter(s.get(), recv, count, t, op, k.comm, k.stream), ncclSuccess) << ncclGetLastError(k.comm);
          k.sync();
          std::vector<char> got = in_place ? s.read(size_t(me) * bytes, bytes) : r.read(0, bytes);
          EXPECT_EQ(compare(t, got, count, [&](size_t i) { return reference(t, op, n, size_t(me) * count + i); }, tol), "")
              << "reduce-scatter " << what;
        }
      }
    }
  }
}

void expect_same_bits_everywhere(Outputs& outputs, int n) {
  for (auto& [key, ranks] : outputs.by_case) {
    ASSERT_EQ(int(ranks.size()), n) << key;
    for (auto& [rank, bytes] : ranks) EXPECT_EQ(bytes, ranks.begin()->second) << key << ": rank " << rank << " differs";
  }
}

TEST_F(NcclCollectives, EveryCollectiveTypeAndReductionOnTwoAndThreeRanks) {
  for (int n : {2, 3}) {
    Outputs outputs;
    run_ranks(n, [&](Rank& k) { collective_matrix(k, 13, outputs); });
    expect_same_bits_everywhere(outputs, n);
  }
}

TEST_F(NcclCollectives, ManyRoundsThroughSmallChunks) {
  // 4 KiB per rank per round: 1000-odd elements take several rounds (reduce-scatter on three
  // ranks carries a third of that per round), with a partial last one.
  ::setenv("CUDASIM_NCCL_CHUNK_BYTES", "4096", 1);
  for (int n : {2, 3}) {
    Outputs outputs;
    run_ranks(n, [&](Rank& k) { collective_matrix(k, 1237, outputs); });
    expect_same_bits_everywhere(outputs, n);
  }
  ::unsetenv("CUDASIM_NCCL_CHUNK_BYTES");
}

TEST_F(NcclCollectives, OneRank) {
  Outputs outputs;
  run_ranks(1, [&](Rank& k) { collective_matrix(k, 5, outputs); });
}

TEST_F(NcclCollectives, LargeBufferCrossesManyChunks) {
  // 3 M + 5 floats (12 MB, a dozen 1 MiB rounds) on two ranks, in place as wick does.
  const size_t count = (3u << 20) + 5;
  run_ranks(2, [&](Rank& k) {
    std::vector<float> host(count);
    for (size_t i = 0; i < count; ++i) host[i] = float(i % 1000) * float(k.rank + 1);
    Buf b(count * 4);
    EXPECT_EQ(cudaMemcpy(b.get(), host.data(), count * 4, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(ncclAllReduce(b.get(), b.get(), count, ncclFloat32, ncclSum, k.comm, k.stream), ncclSuccess);
    k.sync();
    EXPECT_EQ(cudaMemcpy(host.data(), b.get(), count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) bad += host[i] != float(i % 1000) * 3.0f;
    EXPECT_EQ(bad, 0u);
  });
}

TEST_F(NcclCollectives, SixteenBitFloatsRoundAfterEveryStep) {
  // 2048 + 1 + 1 in half: 2049 rounds (to even) to 2048, and so does 2048 + 1 again; one
  // rounding of the exact sum would give 2050. Likewise 256 + 1 + 1 in bfloat16.
  run_ranks(3, [&](Rank& k) {
    for (auto [t, big] : {std::pair{ncclFloat16, 2048.0}, std::pair{ncclBfloat16, 256.0}}) {
      Buf b(*k.pool, 2);
      b.set(encode(t, 1, [&](size_t) { return k.rank == 0 ? big : 1.0; }));
      EXPECT_EQ(ncclAllReduce(b.get(), b.get(), 1, t, ncclSum, k.comm, k.stream), ncclSuccess);
      k.sync();
      EXPECT_EQ(get(t, b.read(0, 2).data(), 0), big) << name(t);
    }
  });
}

TEST_F(NcclCollectives, EmptyOperationsAreDropped) {
  run_ranks(2, [&](Rank& k) {
    // count 0: nothing to check, nothing enqueued, nothing to match (even null pointers).
    EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(ncclSend(nullptr, 0, ncclFloat32, 1 - k.rank, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(sync_within(k.stream, 1000ms), cudaSuccess);
  });
}

// ---- init ------------------------------------------------------------------------------------

TEST_F(NcclInit, NonBlockingInitFromOneThreadThenFinalize) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = nonblocking();
  ncclComm_t comm[2] = {nullptr, nullptr};
  cudaStream_t stream[2];
  for (int d = 0; d < 2; ++d) {
    cudaSetDevice(d);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream[d], cudaStreamNonBlocking), cudaSuccess);
  }

  cudaSetDevice(0);
  ASSERT_EQ(ncclCommInitRankConfig(&comm[0], 2, id, 0, &config), ncclInProgress) << ncclGetLastError(nullptr);
  ASSERT_NE(comm[0], nullptr);
  // Rank 1 has not joined: still in progress, and a collective is refused meanwhile.
  EXPECT_EQ(async_state_after(comm[0], ncclInProgress, 100ms), ncclInProgress);
  Buf a(16);
  EXPECT_EQ(ncclAllReduce(a.get(), a.get(), 4, ncclFloat32, ncclSum, comm[0], stream[0]), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(comm[0])).find("initialis"), std::string::npos) << ncclGetLastError(comm[0]);

  cudaSetDevice(1);
  ASSERT_EQ(ncclCommInitRankConfig(&comm[1], 2, id, 1, &config), ncclInProgress);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(async_state_after(comm[r], ncclInProgress, 5000ms), ncclSuccess);
  int count = 0, device = -1, rank = -1;
  EXPECT_EQ(ncclCommCount(comm[1], &count), ncclSuccess);
  EXPECT_EQ(ncclCommCuDevice(comm[1], &device), ncclSuccess);
  EXPECT_EQ(ncclCommUserRank(comm[1], &rank), ncclSuccess);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(device, 1);
  EXPECT_EQ(rank, 1);

  // Launches on a non-blocking communicator answer ncclInProgress; polling settles them.
  cudaSetDevice(1);
  Buf b(16);
  a.set(encode(ncclFloat32, 4, [](size_t i) { return double(i); }));
  b.set(encode(ncclFloat32, 4, [](size_t i) { return double(10 * i); }));
  EXPECT_EQ(ncclAllReduce(a.get(), a.get(), 4, ncclFloat32, ncclSum, comm[0], stream[0]), ncclInProgress);
  EXPECT_EQ(async_state_after(comm[0], ncclInProgress, 5000ms), ncclSuccess);
  // Finalize waits for the outstanding collective, which waits for rank 1.
  EXPECT_EQ(ncclCommFinalize(comm[0]), ncclInProgress);
  EXPECT_EQ(async_state_after(comm[0], ncclInProgress, 150ms), ncclInProgress);
  EXPECT_EQ(ncclAllReduce(a.get(), a.get(), 4, ncclFloat32, ncclSum, comm[0], stream[0]), ncclInvalidUsage)
      << "a finalized communicator takes no more work";
  EXPECT_EQ(ncclAllReduce(b.get(), b.get(), 4, ncclFloat32, ncclSum, comm[1], stream[1]), ncclInProgress);
  EXPECT_EQ(async_state_after(comm[0], ncclInProgress, 5000ms), ncclSuccess);
  EXPECT_EQ(ncclCommFinalize(comm[1]), ncclInProgress);
  EXPECT_EQ(async_state_after(comm[1], ncclInProgress, 5000ms), ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(cudaStreamSynchronize(stream[r]), cudaSuccess);
    EXPECT_EQ(ncclCommDestroy(comm[r]), ncclSuccess);
  }
  EXPECT_EQ(compare(ncclFloat32, b.read(0, 16), 4, [](size_t i) { return 11.0 * double(i); }), "");
  for (int d = 0; d < 2; ++d) {
    cudaSetDevice(d);
    cudaStreamDestroy(stream[d]);
  }
}

TEST_F(NcclInit, BadJoinsAreRefused) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = nonblocking();
  ncclComm_t first = nullptr, other = nullptr;
  ASSERT_EQ(ncclCommInitRankConfig(&first, 2, id, 0, &config), ncclInProgress);
  // The same rank again.
  EXPECT_EQ(ncclCommInitRankConfig(&other, 2, id, 0, &config), ncclInvalidUsage);
  EXPECT_EQ(other, nullptr);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("rank 0 is already taken"), std::string::npos) << ncclGetLastError(nullptr);
  // Another number of ranks.
  EXPECT_EQ(ncclCommInitRankConfig(&other, 3, id, 1, &config), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("nranks"), std::string::npos) << ncclGetLastError(nullptr);
  // A rank out of range, an id that ncclGetUniqueId did not make, an uninitialised config.
  EXPECT_EQ(ncclCommInitRankConfig(&other, 2, id, 2, &config), ncclInvalidArgument);
  ncclUniqueId zero{};
  EXPECT_EQ(ncclCommInitRankConfig(&other, 2, zero, 1, &config), ncclInvalidArgument);
  ncclConfig_t raw{};
  EXPECT_EQ(ncclCommInitRankConfig(&other, 2, id, 1, &raw), ncclInvalidArgument);
  // The right rank 1 still completes the communicator.
  cudaSetDevice(1);
  ASSERT_EQ(ncclCommInitRankConfig(&other, 2, id, 1, &config), ncclInProgress);
  EXPECT_EQ(async_state_after(first, ncclInProgress, 5000ms), ncclSuccess);
  EXPECT_EQ(async_state_after(other, ncclInProgress, 5000ms), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(first), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(other), ncclSuccess);
  int version = 0;
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
}

TEST_F(NcclInit, BlockingInitInsideAGroupFromOneThread) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm[2];
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    EXPECT_EQ(ncclCommInitRank(&comm[r], 2, id, r), ncclSuccess);
  }
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    ncclResult_t state = ncclInProgress;
    EXPECT_EQ(ncclCommGetAsyncError(comm[r], &state), ncclSuccess);
    EXPECT_EQ(state, ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comm[r]), ncclSuccess);
  }
}

// ---- send / recv -----------------------------------------------------------------------------

TEST_F(NcclSendRecv, GroupedExchangeInBothDirections) {
  // Both ranks send first and receive second, in one group each: fused, no deadlock, with
  // messages several channel chunks long.
  const size_t count = (1u << 20) + 3;
  run_ranks(2, [&](Rank& k) {
    const int peer = 1 - k.rank;
    auto mine = [&](size_t i) { return double(int(i % 1000) + 1000 * k.rank); };
    Buf s(count * 4), r(count * 4);
    s.set(encode(ncclInt32, count, mine));
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclSend(s.get(), count, ncclInt32, peer, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(ncclRecv(r.get(), count, ncclInt32, peer, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
    EXPECT_EQ(sync_within(k.stream, 10000ms), cudaSuccess);
    EXPECT_EQ(compare(ncclInt32, r.read(0, count * 4), count, [&](size_t i) { return double(int(i % 1000) + 1000 * peer); }), "");
  });
}

TEST_F(NcclSendRecv, RingAndOrderedMessagesOnThreeRanks) {
  run_ranks(3, [&](Rank& k) {
    const int next = (k.rank + 1) % 3, prev = (k.rank + 2) % 3;
    Pool& p = *k.pool;
    Buf to_next(p, 400), to_prev(p, 400), second(p, 400), from_prev(p, 400), from_next(p, 400), second_in(p, 400);
    to_next.set(encode(ncclFloat32, 100, [&](size_t i) { return 100.0 * k.rank + double(i); }));
    to_prev.set(encode(ncclFloat32, 100, [&](size_t i) { return -100.0 * k.rank - double(i); }));
    second.set(encode(ncclFloat32, 100, [&](size_t) { return 7.0 + k.rank; }));
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    // Two messages to the same peer arrive in the order they were sent.
    EXPECT_EQ(ncclSend(to_next.get(), 100, ncclFloat32, next, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(ncclSend(second.get(), 100, ncclFloat32, next, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(ncclSend(to_prev.get(), 100, ncclFloat32, prev, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(ncclRecv(from_next.get(), 100, ncclFloat32, next, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(ncclRecv(from_prev.get(), 100, ncclFloat32, prev, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(ncclRecv(second_in.get(), 100, ncclFloat32, prev, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
    EXPECT_EQ(sync_within(k.stream, 10000ms), cudaSuccess);
    EXPECT_EQ(compare(ncclFloat32, from_prev.read(0, 400), 100, [&](size_t i) { return 100.0 * prev + double(i); }), "");
    EXPECT_EQ(compare(ncclFloat32, second_in.read(0, 400), 100, [&](size_t) { return 7.0 + prev; }), "");
    EXPECT_EQ(compare(ncclFloat32, from_next.read(0, 400), 100, [&](size_t i) { return -100.0 * next - double(i); }), "");
  });
}

TEST_F(NcclSendRecv, SendToSelfInAGroup) {
  run_ranks(1, [&](Rank& k) {
    Buf s(40), r(40);
    s.set(encode(ncclInt32, 10, [](size_t i) { return double(i * i); }));
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclSend(s.get(), 10, ncclInt32, 0, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(ncclRecv(r.get(), 10, ncclInt32, 0, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
    EXPECT_EQ(sync_within(k.stream, 5000ms), cudaSuccess);
    EXPECT_EQ(compare(ncclInt32, r.read(0, 40), 10, [](size_t i) { return double(i * i); }), "");
  });
}

TEST_F(NcclSendRecv, UngroupedSendWaitsForItsRecv) {
  Clique c;
  Buf s(4000);
  cudaSetDevice(1);
  Buf r(4000);
  s.set(encode(ncclInt32, 1000, [](size_t i) { return double(i) - 500; }));
  EXPECT_EQ(ncclSend(s.get(), 1000, ncclInt32, 1, c.comm[0], c.stream[0]), ncclSuccess);
  EXPECT_EQ(sync_within(c.stream[0], 150ms), cudaErrorNotReady) << "a send completes only once its recv runs";
  EXPECT_EQ(ncclRecv(r.get(), 1000, ncclInt32, 0, c.comm[1], c.stream[1]), ncclSuccess);
  EXPECT_EQ(sync_within(c.stream[0], 5000ms), cudaSuccess);
  EXPECT_EQ(sync_within(c.stream[1], 5000ms), cudaSuccess);
  EXPECT_EQ(compare(ncclInt32, r.read(0, 4000), 1000, [](size_t i) { return double(i) - 500; }), "");
}

TEST_F(NcclSendRecv, BothSendingFirstOutsideAGroupDeadlocksUntilAborted) {
  // As NCCL beyond its buffering: each send waits for a recv queued behind the other's send.
  Clique c;
  Buf a0(40), b0(40);
  cudaSetDevice(1);
  Buf a1(40), b1(40);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(ncclSend(r ? a1.get() : a0.get(), 10, ncclInt32, 1 - r, c.comm[r], c.stream[r]), ncclSuccess);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(ncclRecv(r ? b1.get() : b0.get(), 10, ncclInt32, 1 - r, c.comm[r], c.stream[r]), ncclSuccess);
  EXPECT_EQ(sync_within(c.stream[0], 200ms), cudaErrorNotReady);
  EXPECT_EQ(sync_within(c.stream[1], 10ms), cudaErrorNotReady);
  const auto start = Clock::now();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ncclCommAbort(c.comm[r]), ncclSuccess);
    c.comm[r] = nullptr;
  }
  for (int r = 0; r < 2; ++r) EXPECT_EQ(sync_within(c.stream[r], 2000ms), cudaSuccess);
  EXPECT_LT(Clock::now() - start, 1000ms);
}

// ---- groups ----------------------------------------------------------------------------------

TEST_F(NcclGroups, InitAllAndOneThreadDrivingBothDevices) {
  Clique c;
  for (int r = 0; r < 2; ++r) {
    int rank = -1, device = -1, count = 0;
    EXPECT_EQ(ncclCommUserRank(c.comm[r], &rank), ncclSuccess);
    EXPECT_EQ(ncclCommCuDevice(c.comm[r], &device), ncclSuccess);
    EXPECT_EQ(ncclCommCount(c.comm[r], &count), ncclSuccess);
    EXPECT_EQ(rank, r);
    EXPECT_EQ(device, r);
    EXPECT_EQ(count, 2);
  }
  std::vector<std::unique_ptr<Buf>> bufs;
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    bufs.push_back(std::make_unique<Buf>(4 * 64));
    bufs.back()->set(encode(ncclFloat32, 64, [&](size_t i) { return double(i) * (r + 1); }));
  }
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(ncclAllReduce(bufs[size_t(r)]->get(), bufs[size_t(r)]->get(), 64, ncclFloat32, ncclSum, c.comm[r], c.stream[r]),
              ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(sync_within(c.stream[r], 5000ms), cudaSuccess);
    EXPECT_EQ(compare(ncclFloat32, bufs[size_t(r)]->read(0, 256), 64, [](size_t i) { return 3.0 * double(i); }), "");
  }
  // A nested group and a broadcast from rank 1, same thread.
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(ncclBroadcast(bufs[size_t(r)]->get(), bufs[size_t(r)]->get(), 64, ncclFloat32, 1, c.comm[r], c.stream[r]),
              ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(sync_within(c.stream[0], 100ms), cudaSuccess) << "nothing is launched before the outermost ncclGroupEnd";
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(sync_within(c.stream[r], 5000ms), cudaSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage) << "ncclGroupEnd without ncclGroupStart";
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ncclCommDestroy(c.comm[r]), ncclSuccess);
    c.comm[r] = nullptr;
  }
}

TEST_F(NcclGroups, OneCommunicatorOnTwoStreams) {
  run_ranks(2, [&](Rank& k) {
    cudaStream_t other;
    EXPECT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
    Buf a(40), b(40);
    a.set(encode(ncclInt64, 5, [&](size_t i) { return double(i + 1) * (k.rank + 1); }));
    b.set(encode(ncclInt64, 5, [&](size_t i) { return double(i + 1) * (k.rank + 1); }));
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(a.get(), a.get(), 5, ncclInt64, ncclSum, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(b.get(), b.get(), 5, ncclInt64, ncclMax, k.comm, other), ncclSuccess);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
    EXPECT_EQ(sync_within(other, 5000ms), cudaSuccess);
    EXPECT_EQ(sync_within(k.stream, 5000ms), cudaSuccess);
    EXPECT_EQ(compare(ncclInt64, a.read(0, 40), 5, [](size_t i) { return 3.0 * double(i + 1); }), "");
    EXPECT_EQ(compare(ncclInt64, b.read(0, 40), 5, [](size_t i) { return 2.0 * double(i + 1); }), "");
    cudaStreamDestroy(other);
  });
}

TEST_F(NcclGroups, SplitIntoSubgroups) {
  run_ranks(4, [&](Rank& k) {
    // Even and odd ranks, ordered by descending old rank (key = -rank).
    ncclComm_t sub = nullptr;
    ASSERT_EQ(ncclCommSplit(k.comm, k.rank % 2, -k.rank, &sub, nullptr), ncclSuccess) << ncclGetLastError(k.comm);
    ASSERT_NE(sub, nullptr);
    int count = 0, rank = -1;
    EXPECT_EQ(ncclCommCount(sub, &count), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(sub, &rank), ncclSuccess);
    EXPECT_EQ(count, 2);
    EXPECT_EQ(rank, k.rank < 2 ? 1 : 0);
    Buf b(*k.pool, 4);
    b.set(encode(ncclInt32, 1, [&](size_t) { return double(k.rank + 1); }));
    EXPECT_EQ(ncclAllReduce(b.get(), b.get(), 1, ncclInt32, ncclSum, sub, k.stream), ncclSuccess);
    k.sync();
    EXPECT_EQ(get(ncclInt32, b.read(0, 4).data(), 0), k.rank % 2 == 0 ? 1 + 3 : 2 + 4);
    EXPECT_EQ(ncclCommDestroy(sub), ncclSuccess);

    // Again, with rank 3 left out: it gets no communicator.
    ncclComm_t three = nullptr;
    ASSERT_EQ(ncclCommSplit(k.comm, k.rank == 3 ? NCCL_SPLIT_NOCOLOR : 5, k.rank, &three, nullptr), ncclSuccess);
    if (k.rank == 3) {
      EXPECT_EQ(three, nullptr);
    } else {
      ASSERT_NE(three, nullptr);
      EXPECT_EQ(ncclCommCount(three, &count), ncclSuccess);
      EXPECT_EQ(count, 3);
      b.set(encode(ncclInt32, 1, [&](size_t) { return double(k.rank + 1); }));
      EXPECT_EQ(ncclAllReduce(b.get(), b.get(), 1, ncclInt32, ncclSum, three, k.stream), ncclSuccess);
      k.sync();
      EXPECT_EQ(get(ncclInt32, b.read(0, 4).data(), 0), 1 + 2 + 3);
      EXPECT_EQ(ncclCommDestroy(three), ncclSuccess);
    }
    // The parent still works.
    EXPECT_EQ(ncclAllReduce(b.get(), b.get(), 1, ncclInt32, ncclMax, k.comm, k.stream), ncclSuccess);
    k.sync();
  });
}

// ---- other processes -------------------------------------------------------------------------

std::string hex(const ncclUniqueId& id) {
  std::string s;
  char buf[3];
  for (char c : id.internal) {
    std::snprintf(buf, sizeof buf, "%02x", unsigned(uint8_t(c)));
    s += buf;
  }
  return s;
}

ncclUniqueId unhex(const std::string& s) {
  ncclUniqueId id{};
  for (size_t i = 0; i < sizeof id.internal && 2 * i + 1 < s.size(); ++i)
    id.internal[i] = char(std::stoi(s.substr(2 * i, 2), nullptr, 16));
  return id;
}

struct Peer {
  pid_t pid = -1;
  int ready_fd = -1;  // the peer writes a byte here when it reached its point
};

// Runs this test binary again as rank 1 of `id`, playing `role` (see NcclPeer.DISABLED_Run).
Peer spawn_peer(const std::string& role, const ncclUniqueId& id) {
  Peer peer;
  int fds[2];
  if (::pipe(fds) != 0) return peer;
  char exe[4096];
  const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return peer;
  exe[len] = 0;
  // Everything the child needs is made before fork: between fork and exec a threaded process
  // may only make async-signal-safe calls.
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "CUDASIM_NCCL_PEER=", 18) != 0) env.emplace_back(*e);
  env.push_back("CUDASIM_NCCL_PEER=" + role + ":" + hex(id) + ":" + std::to_string(fds[1]));
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string a1 = "--gtest_filter=NcclPeer.DISABLED_Run", a2 = "--gtest_also_run_disabled_tests", a3 = "--gtest_brief=1";
  char* argv[] = {exe, a1.data(), a2.data(), a3.data(), nullptr};
  peer.pid = ::fork();
  if (peer.pid == 0) {
    ::dup2(2, 1);  // the child's gtest report goes to our stderr
    ::close(fds[0]);
    ::execve(exe, argv, envp.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  peer.ready_fd = fds[0];
  return peer;
}

bool wait_ready(const Peer& peer, std::chrono::milliseconds limit) {
  pollfd p{peer.ready_fd, POLLIN, 0};
  char byte;
  return ::poll(&p, 1, int(limit.count())) == 1 && ::read(peer.ready_fd, &byte, 1) == 1;
}

// The peer's exit status (-1 when it had to be killed after `limit`).
int reap(Peer& peer, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  int status = 0;
  while (::waitpid(peer.pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(peer.pid, SIGKILL);
      ::waitpid(peer.pid, &status, 0);
      status = -1;
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  ::close(peer.ready_fd);
  return status;
}

constexpr size_t kBigCount = 10u << 20;  // 10 M floats: 40 MB, 40 rounds of 1 MiB

float big_value(int rank, size_t i) { return float(i % 1000) * float(rank + 1) + 0.5f * float(rank); }

// Rank `rank` of a 2-rank all-reduce of kBigCount floats; true when the result is right.
bool big_all_reduce(ncclComm_t comm, cudaStream_t stream, int rank) {
  std::vector<float> host(kBigCount);
  for (size_t i = 0; i < kBigCount; ++i) host[i] = big_value(rank, i);
  Buf b(kBigCount * 4);
  EXPECT_EQ(cudaMemcpy(b.get(), host.data(), kBigCount * 4, cudaMemcpyHostToDevice), cudaSuccess);
  const ncclResult_t r = ncclAllReduce(b.get(), b.get(), kBigCount, ncclFloat32, ncclSum, comm, stream);
  EXPECT_TRUE(r == ncclSuccess || r == ncclInProgress) << ncclGetErrorString(r);  // non-blocking: ncclInProgress
  EXPECT_EQ(sync_within(stream, 60000ms), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), b.get(), kBigCount * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t bad = 0;
  for (size_t i = 0; i < kBigCount; ++i) bad += host[i] != big_value(0, i) + big_value(1, i);
  EXPECT_EQ(bad, 0u);
  return bad == 0;
}

// This process's rank 0 of a communicator whose rank 1 is a peer process playing `role`.
struct WithPeer {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  Peer peer;
  explicit WithPeer(const std::string& role) {
    ncclUniqueId id;
    EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ncclConfig_t config = nonblocking();
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    // Non-blocking, so that a peer that fails to start cannot hang the test.
    EXPECT_EQ(ncclCommInitRankConfig(&comm, 2, id, 0, &config), ncclInProgress);
    peer = spawn_peer(role, id);
    EXPECT_GT(peer.pid, 0);
    EXPECT_EQ(async_state_after(comm, ncclInProgress, 30000ms), ncclSuccess) << ncclGetLastError(comm);
  }
  ~WithPeer() {
    if (comm) ncclCommAbort(comm);
    cudaStreamDestroy(stream);
  }
};

TEST_F(NcclProcesses, TwoProcessesAllReduceALargeBuffer) {
  WithPeer w("big");
  EXPECT_TRUE(big_all_reduce(w.comm, w.stream, 0));
  EXPECT_EQ(ncclCommDestroy(w.comm), ncclSuccess);
  w.comm = nullptr;
  const int status = reap(w.peer, 60000ms);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the peer process failed: status " << status;
}

TEST_F(NcclFailures, KilledPeerProcessIsReportedAndAbortReleasesTheSurvivor) {
  // Small chunks make the big all-reduce take many rounds, so the kill most likely lands in
  // the middle of it; if not, the survivor waits in the next all-reduce, which the peer
  // never joins. Either way the survivor is blocked on a dead peer.
  ::setenv("CUDASIM_NCCL_CHUNK_BYTES", "4096", 1);
  WithPeer w("stall");
  ::unsetenv("CUDASIM_NCCL_CHUNK_BYTES");
  Buf b(kBigCount * 4), small(4);
  b.fill(0);
  small.fill(0x5a);
  // A non-blocking communicator: launches answer ncclInProgress.
  EXPECT_EQ(ncclAllReduce(b.get(), b.get(), kBigCount, ncclFloat32, ncclSum, w.comm, w.stream), ncclInProgress);
  EXPECT_EQ(ncclAllReduce(small.get(), small.get(), 1, ncclFloat32, ncclSum, w.comm, w.stream), ncclInProgress);
  ASSERT_TRUE(wait_ready(w.peer, 30000ms)) << "the peer did not start its all-reduce";
  std::this_thread::sleep_for(20ms);
  ::kill(w.peer.pid, SIGKILL);  // not reaped yet: a zombie must count as dead too

  EXPECT_EQ(async_error_within(w.comm, 5000ms), ncclRemoteError);
  const std::string last = ncclGetLastError(w.comm);
  EXPECT_NE(last.find("rank 1"), std::string::npos) << last;
  EXPECT_NE(last.find("killed"), std::string::npos) << last;
  EXPECT_EQ(cudaStreamQuery(w.stream), cudaErrorNotReady) << "the survivor stays blocked until it aborts";
  EXPECT_EQ(get(ncclFloat32, small.read(0, 4).data(), 0), get(ncclFloat32, std::vector<char>(4, 0x5a).data(), 0));

  const auto start = Clock::now();
  EXPECT_EQ(ncclCommAbort(w.comm), ncclSuccess);
  w.comm = nullptr;
  EXPECT_EQ(sync_within(w.stream, 2000ms), cudaSuccess);
  EXPECT_LT(Clock::now() - start, 1000ms);
  reap(w.peer, 5000ms);
}

TEST_F(NcclFailures, RankThatNeverArrives) {
  {  // At init: rank 1 never joins; abort ends the wait.
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ncclConfig_t config = nonblocking();
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRankConfig(&comm, 2, id, 0, &config), ncclInProgress);
    EXPECT_EQ(async_state_after(comm, ncclInProgress, 200ms), ncclInProgress);
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  }
  // In a collective: rank 1 of the clique never calls it.
  Clique c;
  Buf b(64);
  b.set(encode(ncclFloat32, 16, [](size_t i) { return double(i); }));
  Buf out(64);
  out.fill(0x5a);
  EXPECT_EQ(ncclAllReduce(b.get(), out.get(), 16, ncclFloat32, ncclSum, c.comm[0], c.stream[0]), ncclSuccess);
  const double cpu_before = cpu_seconds();
  EXPECT_EQ(sync_within(c.stream[0], 300ms), cudaErrorNotReady);
  EXPECT_LT(cpu_seconds() - cpu_before, 0.15) << "a blocked rank must sleep, not spin";
  ncclResult_t state = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(c.comm[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclSuccess) << "nothing is known to be wrong: the peer is alive, just late";

  const auto start = Clock::now();
  EXPECT_EQ(ncclCommAbort(c.comm[0]), ncclSuccess);
  c.comm[0] = nullptr;
  EXPECT_EQ(sync_within(c.stream[0], 2000ms), cudaSuccess);
  EXPECT_LT(Clock::now() - start, 1000ms);
  EXPECT_EQ(out.read(0, 64), std::vector<char>(64, 0x5a)) << "an aborted collective moves no data";
  // The stream goes on with later work.
  EXPECT_EQ(cudaMemcpyAsync(out.get(), b.get(), 64, cudaMemcpyDeviceToDevice, c.stream[0]), cudaSuccess);
  EXPECT_EQ(sync_within(c.stream[0], 2000ms), cudaSuccess);
  EXPECT_EQ(out.read(0, 64), b.read(0, 64));

  // Rank 1 arrives late and finds rank 0 gone: a remote error naming it, then its own abort.
  cudaSetDevice(1);
  Buf b1(64);
  EXPECT_EQ(ncclAllReduce(b1.get(), b1.get(), 16, ncclFloat32, ncclSum, c.comm[1], c.stream[1]), ncclSuccess);
  EXPECT_EQ(async_error_within(c.comm[1], 5000ms), ncclRemoteError);
  const std::string last = ncclGetLastError(c.comm[1]);
  EXPECT_NE(last.find("rank 0 aborted"), std::string::npos) << last;
  EXPECT_EQ(cudaStreamQuery(c.stream[1]), cudaErrorNotReady);
  EXPECT_EQ(ncclAllReduce(b1.get(), b1.get(), 16, ncclFloat32, ncclSum, c.comm[1], c.stream[1]), ncclRemoteError)
      << "calls on a communicator with an asynchronous error return it";
  // A blocking finalize reports the error instead of waiting for work that cannot finish, and
  // destroy then releases the communicator like an abort.
  EXPECT_EQ(ncclCommFinalize(c.comm[1]), ncclRemoteError);
  EXPECT_EQ(ncclCommDestroy(c.comm[1]), ncclSuccess);
  c.comm[1] = nullptr;
  EXPECT_EQ(sync_within(c.stream[1], 2000ms), cudaSuccess);
}

TEST_F(NcclFailures, RanksThatDisagreeAreInvalidUsage) {
  // The failed work leaves a sticky error on both devices, as a faulting kernel does; each case
  // ends with cudaDeviceReset, which also frees its buffers (so they are not freed one by one).
  auto reset_devices = [] {
    for (int d = 0; d < 2; ++d) {
      cudaSetDevice(d);
      EXPECT_EQ(cudaDeviceReset(), cudaSuccess);
    }
    cudaSetDevice(0);
  };
  auto buffers = [](void** a, void** b) {
    cudaSetDevice(0);
    EXPECT_EQ(cudaMalloc(a, 64), cudaSuccess);
    cudaSetDevice(1);
    EXPECT_EQ(cudaMalloc(b, 64), cudaSuccess);
    cudaSetDevice(0);
  };
  {  // Counts differ in a collective.
    Clique c;
    void *a = nullptr, *b = nullptr;
    buffers(&a, &b);
    EXPECT_EQ(ncclAllReduce(a, a, 10, ncclFloat32, ncclSum, c.comm[0], c.stream[0]), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(b, b, 12, ncclFloat32, ncclSum, c.comm[1], c.stream[1]), ncclSuccess);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(sync_within(c.stream[r], 5000ms), cudaErrorLaunchFailure) << "the collective fails like a faulting kernel";
      EXPECT_EQ(async_error_within(c.comm[r], 5000ms), ncclInvalidUsage);
      const std::string last = ncclGetLastError(c.comm[r]);
      EXPECT_NE(last.find("ncclAllReduce of 10"), std::string::npos) << last;
      EXPECT_NE(last.find("ncclAllReduce of 12"), std::string::npos) << last;
    }
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(ncclCommAbort(c.comm[r]), ncclSuccess);
      c.comm[r] = nullptr;
    }
    reset_devices();
  }
  {  // A send and its recv differ.
    Clique c;
    void *a = nullptr, *b = nullptr;
    buffers(&a, &b);
    EXPECT_EQ(ncclSend(a, 10, ncclInt32, 1, c.comm[0], c.stream[0]), ncclSuccess);
    EXPECT_EQ(ncclRecv(b, 12, ncclInt32, 0, c.comm[1], c.stream[1]), ncclSuccess);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(sync_within(c.stream[r], 5000ms), cudaErrorLaunchFailure);
      EXPECT_EQ(async_error_within(c.comm[r], 5000ms), ncclInvalidUsage);
      const std::string last = ncclGetLastError(c.comm[r]);
      EXPECT_NE(last.find("same count"), std::string::npos) << last;
    }
    // ncclCommDestroy of a failed communicator releases it without waiting.
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(ncclCommDestroy(c.comm[r]), ncclSuccess);
      c.comm[r] = nullptr;
    }
    reset_devices();
  }
}

// ---- arguments -------------------------------------------------------------------------------

TEST_F(NcclArguments, BadBuffersAndArgumentsAreRefusedWhenCalled) {
  run_ranks(1, [&](Rank& k) {
    Buf good(64);
    cudaSetDevice(1);
    Buf elsewhere(64);
    cudaSetDevice(0);
    std::vector<float> host(16);
    auto last = [&] { return std::string(ncclGetLastError(k.comm)); };

    EXPECT_EQ(ncclAllReduce(host.data(), good.get(), 16, ncclFloat32, ncclSum, k.comm, k.stream), ncclInvalidArgument);
    EXPECT_NE(last().find("sendbuff"), std::string::npos) << last();
    EXPECT_NE(last().find("host memory"), std::string::npos) << last();
    EXPECT_EQ(ncclAllReduce(good.get(), elsewhere.get(), 16, ncclFloat32, ncclSum, k.comm, k.stream), ncclInvalidArgument);
    EXPECT_NE(last().find("recvbuff"), std::string::npos) << last();
    EXPECT_NE(last().find("cuda:1"), std::string::npos) << last();
    // Even with peer access, as NCCL checks the pointer's device.
    EXPECT_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaSuccess);
    EXPECT_EQ(ncclAllReduce(good.get(), elsewhere.get(), 16, ncclFloat32, ncclSum, k.comm, k.stream), ncclInvalidArgument);
    EXPECT_EQ(cudaDeviceDisablePeerAccess(1), cudaSuccess);
    EXPECT_EQ(ncclAllReduce(good.get(), good.get(), 17, ncclFloat32, ncclSum, k.comm, k.stream), ncclInvalidArgument)
        << "68 bytes of a 64-byte allocation";
    EXPECT_EQ(ncclAllGather(good.get(), good.get(), 16, ncclFloat32, k.comm, k.stream), ncclSuccess) << "one rank: 16 x 1";
    EXPECT_EQ(ncclAllReduce(nullptr, good.get(), 16, ncclFloat32, ncclSum, k.comm, k.stream), ncclInvalidArgument);
    EXPECT_EQ(ncclRecv(host.data(), 16, ncclFloat32, 0, k.comm, k.stream), ncclInvalidArgument);
    EXPECT_NE(last().find("ncclRecv"), std::string::npos) << last();
    {
      char* freed = nullptr;
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&freed), 64), cudaSuccess);
      cudaFree(freed);
      EXPECT_EQ(ncclBroadcast(good.get(), freed, 16, ncclFloat32, 0, k.comm, k.stream), ncclInvalidArgument);
    }
    EXPECT_EQ(ncclAllReduce(good.get(), good.get(), 16, ncclNumTypes, ncclSum, k.comm, k.stream), ncclInvalidArgument);
    EXPECT_EQ(ncclAllReduce(good.get(), good.get(), 16, ncclFloat32, ncclNumOps, k.comm, k.stream), ncclInvalidArgument);
    EXPECT_EQ(ncclAllReduce(good.get(), good.get(), 16, ncclFloat8e4m3, ncclSum, k.comm, k.stream), ncclInvalidArgument);
    EXPECT_EQ(ncclBroadcast(good.get(), good.get(), 16, ncclFloat32, 1, k.comm, k.stream), ncclInvalidArgument);
    EXPECT_NE(last().find("root 1"), std::string::npos) << last();
    EXPECT_EQ(ncclSend(good.get(), 16, ncclFloat32, -1, k.comm, k.stream), ncclInvalidArgument);
    EXPECT_EQ(ncclAllReduce(good.get(), good.get(), 16, ncclFloat32, ncclSum, nullptr, k.stream), ncclInvalidArgument);
    cudaStream_t other_device;
    cudaSetDevice(1);
    EXPECT_EQ(cudaStreamCreateWithFlags(&other_device, cudaStreamNonBlocking), cudaSuccess);
    cudaSetDevice(0);
    EXPECT_EQ(ncclAllReduce(good.get(), good.get(), 16, ncclFloat32, ncclSum, k.comm, other_device), ncclUnhandledCudaError);
    cudaStreamDestroy(other_device);

    // In a group the bad call fails, and so does ncclGroupEnd, which launches nothing.
    Buf out(64);
    out.fill(0x5a);
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(good.get(), out.get(), 16, ncclFloat32, ncclSum, k.comm, k.stream), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(host.data(), out.get(), 16, ncclFloat32, ncclSum, k.comm, k.stream), ncclInvalidArgument);
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
    k.sync();
    EXPECT_EQ(out.read(0, 64), std::vector<char>(64, 0x5a));

    // None of that hurt the communicator.
    good.set(encode(ncclFloat32, 16, [](size_t i) { return double(i); }));
    EXPECT_EQ(ncclAllReduce(good.get(), out.get(), 16, ncclFloat32, ncclAvg, k.comm, k.stream), ncclSuccess);
    k.sync();
    EXPECT_EQ(compare(ncclFloat32, out.read(0, 64), 16, [](size_t i) { return double(i); }), "");
    ncclResult_t state = ncclInternalError;
    EXPECT_EQ(ncclCommGetAsyncError(k.comm, &state), ncclSuccess);
    EXPECT_EQ(state, ncclSuccess);
  });
  EXPECT_STRNE(ncclGetErrorString(ncclInvalidArgument), ncclGetErrorString(ncclInvalidUsage));
}

// ---- the peer process ------------------------------------------------------------------------

// Not a test of its own: the body of the peer process that spawn_peer starts (this binary,
// with CUDASIM_NCCL_PEER=role:id:fd). Joins as rank 1 on cuda:1, then plays its role.
TEST(NcclPeer, DISABLED_Run) {
  const char* spec = std::getenv("CUDASIM_NCCL_PEER");
  if (!spec) GTEST_SKIP() << "run by the process tests only";
  ::alarm(120);  // never outlive a parent that died
  const std::string s = spec;
  const size_t a = s.find(':'), b = s.rfind(':');
  const std::string role = s.substr(0, a);
  const ncclUniqueId id = unhex(s.substr(a + 1, b - a - 1));
  const int fd = std::atoi(s.c_str() + b + 1);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 2, id, 1), ncclSuccess) << ncclGetLastError(nullptr);
  if (role == "big") {
    EXPECT_TRUE(big_all_reduce(comm, stream, 1));
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  } else if (role == "stall") {
    // Starts the parent's big all-reduce, says so, and is killed while it runs (or after).
    Buf buf(kBigCount * 4);
    buf.fill(0);
    EXPECT_EQ(ncclAllReduce(buf.get(), buf.get(), kBigCount, ncclFloat32, ncclSum, comm, stream), ncclSuccess);
    EXPECT_EQ(::write(fd, "r", 1), 1);
    cudaStreamSynchronize(stream);
    ::pause();
  } else {
    ADD_FAILURE() << "unknown role " << role;
  }
  cudaStreamDestroy(stream);
}

}  // namespace
