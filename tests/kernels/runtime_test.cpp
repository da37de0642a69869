// The CUDA runtime as seen from a machine with or without a GPU: devices, guards, streams,
// events, the caching allocator and its statistics, pinned memory and host <-> device copies.
#include <thread>

#include "tests/support/cuda_debug.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(CudaRuntime, DeviceCountNeverThrows) {
  int n = -1;
  EXPECT_NO_THROW(n = cuda::device_count());
  EXPECT_GE(n, 0);
  EXPECT_EQ(cuda::is_available(), n > 0);
}

TEST(CudaRuntime, NoDeviceGivesAClearError) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  expect_error([] { zeros({2}, Device::cuda()); }, {"cuda:0"});
  expect_error([] { cuda::current_device(); }, {"cuda::current_device"});
  expect_error([] { cuda::Stream::create(); }, {"cuda::Stream::create"});
  expect_error([] { cuda::memory_stats(); }, {"cuda::memory_stats"});
  expect_error([] { cuda::Event e; }, {"cuda::Event"});
  EXPECT_NO_THROW(cuda::empty_cache());
}

TEST(CudaRuntime, PinnedMemoryWorksWithoutADevice) {
  // A CPU-only program may ask for pinned buffers (a data loader does); it gets host memory.
  Tensor h = empty({5}, Options(DType::Float32, Device::cpu(), true));
  h.fill_(2.5);
  EXPECT_TRUE(matches(h, {5}, DType::Float32, {2.5, 2.5, 2.5, 2.5, 2.5}));
}

TEST(CudaRuntime, Tf32IsOffByDefault) {
  EXPECT_FALSE(cuda::allow_tf32());
  if (!cuda::is_built()) return;  // the no-CUDA build ignores the setting
  cuda::set_allow_tf32(true);
  EXPECT_TRUE(cuda::allow_tf32());
  cuda::set_allow_tf32(false);
  EXPECT_FALSE(cuda::allow_tf32());
}

TEST(CudaRuntime, DeviceGuardRestoresTheDevice) {
  WICK_REQUIRE_CUDA();
  cuda::set_device(0);
  {
    cuda::DeviceGuard g(0);
    EXPECT_EQ(cuda::current_device(), 0);
  }
  EXPECT_EQ(cuda::current_device(), 0);
  if (cuda::device_count() > 1) {
    {
      cuda::DeviceGuard g(1);
      EXPECT_EQ(cuda::current_device(), 1);
    }
    EXPECT_EQ(cuda::current_device(), 0);
  }
  const int bad = cuda::device_count();
  expect_error([&] { cuda::DeviceGuard g(bad); }, {"DeviceGuard", std::to_string(bad), "available"});
  expect_error([&] { cuda::set_device(bad); }, {"set_device", std::to_string(bad)});
  expect_error([&] { cuda::synchronize(bad); }, {"synchronize", std::to_string(bad)});
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_NO_THROW(cuda::synchronize());
}

TEST(CudaRuntime, StreamGuardSetsThisThreadsCurrentStream) {
  WICK_REQUIRE_CUDA();
  const cuda::Stream def = cuda::Stream::default_stream(0);
  EXPECT_EQ(def.handle(), nullptr);
  EXPECT_EQ(cuda::current_stream(0), def);
  cuda::Stream s = cuda::Stream::create(0);
  EXPECT_NE(s.handle(), nullptr);
  EXPECT_EQ(s.device(), 0);
  {
    cuda::StreamGuard g(s);
    EXPECT_EQ(cuda::current_stream(0), s);
    // Another thread keeps its own current stream.
    cuda::Stream seen;
    std::thread([&] { seen = cuda::current_stream(0); }).join();
    EXPECT_EQ(seen, def);
    // Work issued under the guard runs on s, and the values come back right.
    Tensor t = full({1000003}, 3.0, Options(DType::Float32, Device::cuda()));
    t.slice(0, 0, 1000003, 2).fill_(4.0);
    s.synchronize();
    EXPECT_TRUE(s.query());
    std::vector<double> v = values(t);
    EXPECT_EQ(v[0], 4.0);
    EXPECT_EQ(v[1], 3.0);
    EXPECT_EQ(v.back(), 4.0);
  }
  EXPECT_EQ(cuda::current_stream(0), def);
  EXPECT_TRUE(def.query());
  def.synchronize();
}

TEST(CudaRuntime, EventsTimeAndOrderWork) {
  WICK_REQUIRE_CUDA();
  const Options f32(DType::Float32, Device::cuda());
  const int64_t n = 1 << 22;
  Tensor x = empty({n}, f32), y = empty({n}, Options(DType::Float64, Device::cuda()));
  cuda::Event start(true), end(true);
  start.record();
  for (int i = 0; i < 4; ++i) y.copy_(x.fill_(i));
  end.record();
  EXPECT_GT(start.elapsed_ms(end), 0.0f);
  EXPECT_TRUE(end.query());
  end.synchronize();

  // s2 waits for an event recorded on s1 after a long stretch of work: its copy sees the
  // last fill.
  cuda::Stream s1 = cuda::Stream::create(), s2 = cuda::Stream::create();
  Tensor src = zeros({n}, f32);
  Tensor dst = zeros({n}, f32);
  cuda::synchronize();
  cuda::Event filled;
  {
    cuda::StreamGuard g(s1);
    for (int i = 0; i < 8; ++i) y.copy_(src.fill_(i));
    src.fill_(8.0);
    filled.record();
  }
  filled.wait(s2);
  {
    cuda::StreamGuard g(s2);
    dst.copy_(src);
    s2.synchronize();
  }
  EXPECT_TRUE(matches(dst, {n}, DType::Float32, std::vector<double>(n, 8.0)));
  cuda::synchronize();

  cuda::Event untimed;
  untimed.record();
  cuda::Event other(true);
  other.record();
  expect_error([&] { untimed.elapsed_ms(other); }, {"CUDA error"});
}

TEST(CudaRuntime, ElapsedTimeWaitsForBothEvents) {
  WICK_REQUIRE_CUDA();
  // The start event is recorded behind a long stretch of work on one stream, the end event on
  // an idle stream: the end has happened long before the start has.
  cuda::Stream busy = cuda::Stream::create(), idle = cuda::Stream::create();
  Tensor x = empty({int64_t{1} << 22}, Options(DType::Float32, Device::cuda()));
  cuda::synchronize();
  cuda::Event start(true), end(true);
  {
    cuda::StreamGuard g(busy);
    for (int i = 0; i < 8; ++i) x.fill_(i);
    start.record();
  }
  end.record(idle);
  EXPECT_NO_THROW(start.elapsed_ms(end));
  EXPECT_TRUE(start.query());
  EXPECT_TRUE(end.query());
}

TEST(CudaRuntime, MemoryStatsRiseAndFall) {
  WICK_REQUIRE_CUDA();
  cuda::synchronize();
  cuda::empty_cache();
  const cuda::MemoryStats before = cuda::memory_stats();
  EXPECT_LE(before.allocated, before.reserved);
  size_t reserved_during = 0;
  {
    Tensor t = empty({static_cast<int64_t>(4 * kMiB / 4)}, Options(DType::Float32, Device::cuda()));
    const cuda::MemoryStats during = cuda::memory_stats(0);
    EXPECT_GE(during.allocated, before.allocated + 4 * kMiB);
    EXPECT_GE(during.reserved, before.reserved + 4 * kMiB);
    EXPECT_GE(during.peak_allocated, during.allocated);
    EXPECT_GE(during.peak_reserved, during.reserved);
    EXPECT_EQ(during.num_allocs, before.num_allocs + 1);
    EXPECT_EQ(during.num_device_allocs, before.num_device_allocs + 1);
    reserved_during = during.reserved;
  }
  const cuda::MemoryStats after = cuda::memory_stats();
  EXPECT_EQ(after.allocated, before.allocated);
  EXPECT_EQ(after.reserved, reserved_during);  // kept in the cache
  EXPECT_GE(after.peak_allocated, before.allocated + 4 * kMiB);
  cuda::reset_peak_memory_stats();
  EXPECT_EQ(cuda::memory_stats().peak_allocated, after.allocated);
  EXPECT_EQ(cuda::memory_stats().peak_reserved, after.reserved);
  cuda::empty_cache();
  EXPECT_LT(cuda::memory_stats().reserved, reserved_during);
  expect_error([] { cuda::memory_stats(cuda::device_count()); }, {"memory_stats", "no CUDA device"});
}

TEST(CudaRuntime, CachingAllocatorReusesSplitsAndMerges) {
  WICK_REQUIRE_CUDA();
  const Options f32(DType::Float32, Device::cuda());
  cuda::synchronize();
  cuda::empty_cache();
  const size_t base = cuda::memory_stats().num_device_allocs;
  void* first = nullptr;
  {
    Tensor t = empty({static_cast<int64_t>(10 * kMiB / 4)}, f32);
    first = t.data_ptr();
  }
  EXPECT_EQ(cuda::memory_stats().num_device_allocs, base + 1);
  {
    // A freed block is handed out again, and split for two smaller large requests.
    Tensor a = empty({static_cast<int64_t>(3 * kMiB / 4)}, f32);
    Tensor b = empty({static_cast<int64_t>(3 * kMiB / 4)}, f32);
    EXPECT_EQ(cuda::memory_stats().num_device_allocs, base + 1);
    EXPECT_EQ(a.data_ptr(), first);
    EXPECT_NE(b.data_ptr(), first);
  }
  {
    // ...and merged again once both are free.
    Tensor t = empty({static_cast<int64_t>(10 * kMiB / 4)}, f32);
    EXPECT_EQ(t.data_ptr(), first);
    EXPECT_EQ(cuda::memory_stats().num_device_allocs, base + 1);
  }
  size_t with_small = 0;
  {
    // Small tensors share one 2 MiB segment: at most one more allocation (none when a live
    // small block holds a segment already: the reductions' tickets, kept per host thread
    // and stream once a split reduction ran on it).
    Tensor a = empty({100}, f32), b = empty({300}, DType::Int64), c = empty({1}, DType::Bool);
    Tensor d = empty({3}, Options(DType::Float16, Device::cuda()));
    with_small = cuda::memory_stats().num_device_allocs;
    EXPECT_LE(with_small, base + 2);
    EXPECT_GE(with_small, base + 1);
    // Blocks are multiples of 512 bytes within a segment, whose start cudaMalloc aligns to
    // (at least) 256 bytes.
    EXPECT_EQ((reinterpret_cast<uintptr_t>(d.data_ptr()) - reinterpret_cast<uintptr_t>(a.data_ptr())) % 512, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(d.data_ptr()) % 256, 0u);
  }
  {
    // A block freed on one stream is not handed to another.
    cuda::Stream s = cuda::Stream::create();
    cuda::StreamGuard g(s);
    Tensor t = empty({static_cast<int64_t>(10 * kMiB / 4)}, f32);
    EXPECT_NE(t.data_ptr(), first);
    EXPECT_EQ(cuda::memory_stats().num_device_allocs, with_small + 1);
    s.synchronize();
  }
  // Zero bytes need no memory at all.
  EXPECT_NO_THROW(empty({0, 5}, f32));
  cuda::synchronize();
  cuda::empty_cache();
}

TEST(CudaRuntime, RecordStreamDelaysReuseUntilTheOtherStreamIsDone) {
  WICK_REQUIRE_CUDA();
  const Options f32(DType::Float32, Device::cuda());
  const int64_t n = 1 << 20;
  cuda::Stream side = cuda::Stream::create();
  Tensor busy = empty({int64_t{1} << 22}, f32);
  Tensor t = empty({n}, f32);  // allocated on the default stream
  cuda::synchronize();
  void* const p = t.data_ptr();
  {
    // The side stream writes t after a long stretch of other work.
    cuda::StreamGuard g(side);
    for (int i = 0; i < 8; ++i) busy.fill_(i);
    t.fill_(5.0);
  }
  cuda::record_stream(t, side);
  t = Tensor();
  // A tensor of the same size on the default stream must not get t's memory while the side
  // stream may still write it.
  Tensor u = empty({n}, f32);
  const bool side_still_busy = !side.query();
  if (side_still_busy) EXPECT_NE(u.data_ptr(), p);
  u.fill_(1.0);
  cuda::synchronize();
  EXPECT_EQ(values(u), std::vector<double>(static_cast<size_t>(n), 1.0));
  // Recording the allocating stream, a CPU tensor or an undefined one does nothing.
  EXPECT_NO_THROW(cuda::record_stream(u, cuda::current_stream()));
  EXPECT_NO_THROW(cuda::record_stream(zeros({3}), side));
  EXPECT_NO_THROW(cuda::record_stream(Tensor(), side));
}

TEST(CudaRuntime, AStreamReusingADestroyedStreamsHandleInheritsNoBlocks) {
  WICK_REQUIRE_CUDA();
  const Options f32(DType::Float32, Device::cuda());
  const int64_t n = 1 << 20;
  void* old_handle = nullptr;
  void* p = nullptr;
  uint64_t old_id = 0;
  {
    cuda::Stream a = cuda::Stream::create();
    old_handle = a.handle();
    old_id = a.id();
    cuda::StreamGuard g(a);
    Tensor t = empty({n}, f32);
    p = t.data_ptr();
    t.fill_(5.0);
  }  // t goes back to a's free list, then a is destroyed with its work perhaps still queued
  cuda::Stream b = cuda::Stream::create();
  EXPECT_NE(b.id(), old_id);
  if (b.handle() != old_handle) GTEST_SKIP() << "the driver gave the new stream a fresh handle";
  cuda::StreamGuard g(b);
  Tensor u = empty({n}, f32);
  EXPECT_NE(u.data_ptr(), p);
  b.synchronize();
}

TEST(CudaRuntime, CublasWorkspacesOfDestroyedStreamsAreFreed) {
  WICK_REQUIRE_CUDA();
  const Tensor a = random({8, 8}, DType::Float32, 21).cuda(), b = random({8, 8}, DType::Float32, 22).cuda();
  matmul(a, b);  // the default stream's workspace
  cuda::synchronize();
  const size_t before = cuda::memory_stats().allocated;
  {
    std::vector<cuda::Stream> streams;
    for (int i = 0; i < 4; ++i) streams.push_back(cuda::Stream::create());
    for (const cuda::Stream& s : streams) {
      cuda::StreamGuard g(s);
      matmul(a, b);
      s.synchronize();
    }
  }
  matmul(a, b);
  cuda::synchronize();
  EXPECT_EQ(cuda::memory_stats().allocated, before);
}

TEST(CudaRuntime, AbsurdAllocationThrowsAndLeavesTheDeviceUsable) {
  WICK_REQUIRE_CUDA();
  // 2^48 float32 elements: one pebibyte.
  expect_error([] { empty({int64_t{1} << 48}, Options(DType::Float32, Device::cuda())); },
               {"out of memory", "1125899906842624 bytes", "cuda:0", "reserved"});
  Tensor t = full({17}, 2.0, Options(DType::Float64, Device::cuda()));
  EXPECT_TRUE(matches(t, {17}, DType::Float64, std::vector<double>(17, 2.0)));
}

TEST(CudaRuntime, PinnedAndNonBlockingCopiesRoundTrip) {
  WICK_REQUIRE_CUDA();
  for (bool pinned : {true, false}) {
    for (bool non_blocking : {true, false}) {
      SCOPED_TRACE(std::string(pinned ? "pinned" : "pageable") + (non_blocking ? ", non_blocking" : ""));
      Tensor src = random({1000003}, DType::Float32, 7);
      Tensor host = empty(src.shape(), Options(DType::Float32, Device::cpu(), pinned));
      EXPECT_EQ(host.storage()->pinned(), pinned);
      host.copy_(src);
      Tensor dev = host.to(Device::cuda(), non_blocking);
      Tensor back = dev.to(Options(DType::Float32, Device::cpu(), pinned), non_blocking);
      if (non_blocking) cuda::synchronize();
      EXPECT_EQ(back.storage()->pinned(), pinned);
      EXPECT_EQ(values(back), values(src));
    }
  }
  // Empty and 0-d tensors cross too.
  EXPECT_TRUE(matches(empty({0, 3}).cuda().cpu(), {0, 3}, DType::Float32, {}));
  EXPECT_TRUE(matches(scalar_tensor(5, DType::Int64).cuda().cpu(), {}, DType::Int64, {5}));
}

TEST(CudaRuntime, NonBlockingCopyToPinnedHostWithAConversion) {
  WICK_REQUIRE_CUDA();
  Tensor src = random({1000003}, DType::Float32, 11);
  Tensor dev = src.cuda();
  Tensor busy = empty({int64_t{1} << 22}, Options(DType::Float32, Device::cuda()));
  cuda::synchronize();
  for (DType t : {DType::Float64, DType::Float16, DType::Int64}) {
    SCOPED_TRACE(dtype_name(t));
    // Work queued ahead of the copy keeps it in flight when to() returns.
    for (int i = 0; i < 4; ++i) busy.fill_(i);
    Tensor back = dev.to(Options(t, Device::cpu(), true), true);
    EXPECT_TRUE(back.storage()->pinned());
    EXPECT_EQ(back.dtype(), t);
    cuda::synchronize();
    EXPECT_EQ(values(back), values(dev.to(t).cpu()));
  }
  // Asking a host tensor for pinned memory gives pinned memory, converted or not.
  for (DType t : {DType::Float32, DType::Float64}) {
    Tensor pinned = src.to(Options(t, Device::cpu(), true));
    EXPECT_TRUE(pinned.storage()->pinned());
    EXPECT_EQ(values(pinned), values(src.to(t)));
  }
}

TEST(CudaRuntime, CopiesBetweenDevices) {
  WICK_REQUIRE_CUDA();
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two CUDA devices";
  Tensor src = random({3, 1000}, DType::Float32, 3);
  Tensor on0 = src.cuda(0);
  for (bool non_blocking : {false, true}) {
    Tensor on1 = on0.to(Device::cuda(1), non_blocking);
    EXPECT_EQ(on1.device(), Device::cuda(1));
    Tensor back = on1.to(Device::cuda(0), non_blocking);
    cuda::synchronize(0);
    cuda::synchronize(1);
    EXPECT_EQ(values(back), values(src));
  }
  // A strided view with conversion, across devices.
  Tensor t = on0.t().to(Options(DType::Float64, Device::cuda(1)));
  EXPECT_TRUE(matches(t, {1000, 3}, DType::Float64, values(src.t())));
}

TEST(CudaRuntime, AllocationChecksFillAndGuard) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  // New memory reads as all-ones bytes: NaN for floats, -1 for signed integers.
  Tensor f = empty({33}, Options(DType::Float32, Device::cuda()));
  for (double v : values(f)) EXPECT_TRUE(std::isnan(v));
  Tensor i = empty({5}, Options(DType::Int32, Device::cuda()));
  EXPECT_TRUE(matches(i, {5}, DType::Int32, std::vector<double>(5, -1.0)));
  {
    // Writing 8 elements past the end of a 10-element tensor is caught when it is freed.
    Tensor t = empty({10}, Options(DType::Float32, Device::cuda()));
    auto wider = std::make_shared<Storage>(t.data_ptr(), 18 * sizeof(float), t.device(), [](void*) {});
    Tensor overrun(wider, {18}, {1}, 0, DType::Float32);
    overrun.fill_(1.0f);
    cuda::synchronize();
    EXPECT_EQ(checks.violations(), 0u);
  }
  EXPECT_EQ(checks.violations(), 1u);
}

}  // namespace
}  // namespace wick::test
