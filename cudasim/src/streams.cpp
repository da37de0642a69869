// Streams and events. Each stream is an in-order queue run by its own worker thread, so work
// is truly asynchronous: the host that reads a result before synchronising, or a stream
// that uses what another stream writes without an event, sees stale data as on a GPU.
//
// Ordering is by sequence numbers: an operation waits for given positions of other streams.
// The legacy default stream of a device waits for everything enqueued before on the
// device's blocking streams, and they wait for it; non-blocking streams take no part.
//
// Handles are slots that a destroyed stream gives back and the next new stream takes, as
// the driver reuses addresses: code that keys anything by a raw handle meets a reused one.
//
// Stream capture (cudaStreamBeginCapture): a capturing stream's work is appended to its
// capture, not queued; an event recorded there and waited for by another stream brings that
// stream into the same capture (a fork), and it must be waited for again before the end (a
// join). Nodes keep the order they were issued in, which is one order their dependencies
// allow, and a graph launch runs them in that order on the launch stream (graphs.cpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "internal.h"

struct CUstream_st {
  std::shared_ptr<cudasim::Stream> stream;  // null while the slot is free
};

namespace cudasim {
struct Capture;
}

struct CUevent_st {
  bool timing = true;
  bool blocking_sync = false;
  std::shared_ptr<cudasim::Stream> stream;                      // where it was last recorded (null: never)
  uint64_t seq = 0;                                             // the position it completes at
  std::shared_ptr<std::chrono::steady_clock::time_point> when;  // set by the stream's worker
  // Last recorded in a capture (not run): the capture, the stream and how many of its
  // operations the capture held then.
  std::shared_ptr<cudasim::Capture> captured;
  std::shared_ptr<cudasim::Stream> captured_stream;
  uint64_t captured_ops = 0;
};

namespace cudasim {

using Clock = std::chrono::steady_clock;

struct Dependency {
  std::shared_ptr<Stream> stream;
  uint64_t seq;
};

struct Operation {
  std::string what;
  std::function<void()> work;
  std::vector<Dependency> deps;
  uint64_t seq = 0;
};

struct Stream {
  int device = 0;
  bool legacy = false;
  bool blocking = true;
  int priority = 0;
  std::deque<Operation> queue;
  uint64_t enqueued = 0;
  uint64_t completed = 0;
  bool worker_started = false;
  std::shared_ptr<Capture> capture;  // while capturing
  uint64_t captured_ops = 0;         // operations it added to the capture
  uint64_t joined_ops = 0;           // of which another member of the capture waited for
};

struct Capture {
  unsigned long long id = 0;  // unique over the process's lifetime
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;  // that began it
  bool ended = false;
  bool invalidated = false;
  std::string why;  // the refused call that invalidated it
  std::vector<GraphNode> nodes;
  std::vector<std::shared_ptr<Stream>> members;  // the origin first, then the streams forked into it
};

namespace {

struct Streams {
  std::mutex mutex;
  std::condition_variable progress;                          // any stream completed an operation
  std::vector<std::shared_ptr<Stream>> legacy;               // by device
  std::vector<std::vector<std::weak_ptr<Stream>>> blocking;  // by device: created and per-thread
  std::vector<std::vector<std::weak_ptr<Stream>>> all;       // by device
  std::unordered_set<CUstream_st*> live_slots;
  std::vector<CUstream_st*> free_slots;
  std::vector<std::shared_ptr<Capture>> captures;  // under way
  unsigned long long next_capture_id = 0;
  // By device: operations that all later work on the device's streams waits for
  // (cudaMemcpyPeer's), until they complete.
  std::vector<std::vector<Dependency>> fences;
};

// Captures under way in the process: when none, the checks that work makes (a launch, a
// copy, a wait) return without the streams lock (tests/host_cost counts a launch's locks).
std::atomic<size_t> g_captures_under_way{0};

// This thread's capture interaction mode (cudaThreadExchangeStreamCaptureMode).
thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;

Streams& streams() {
  static Streams* s = new Streams;  // workers are detached and may outlive static destructors
  return *s;
}

void run_worker(std::shared_ptr<Stream> s) {
  Streams& all = streams();
  std::unique_lock<std::mutex> lock(all.mutex);
  for (;;) {
    all.progress.wait(lock, [&] {
      if (s->queue.empty()) return false;
      for (const Dependency& d : s->queue.front().deps)
        if (d.stream->completed < d.seq) return false;
      return true;
    });
    Operation op = std::move(s->queue.front());
    s->queue.pop_front();
    lock.unlock();
    if (sticky_error(s->device) == cudaSuccess) {
      try {
        op.work();
      } catch (const AsyncError& e) {
        set_sticky_error(s->device, e.code, e.what());
      } catch (const std::exception& e) {
        set_sticky_error(s->device, cudaErrorLaunchFailure, op.what + ": " + e.what());
      }
    }
    const uint64_t seq = op.seq;
    op = Operation{};  // release what the work captured before reporting completion
    lock.lock();
    s->completed = seq;
    all.progress.notify_all();
  }
}

std::shared_ptr<Stream> make_stream(int device, bool legacy, bool blocking, int priority) {
  auto s = std::make_shared<Stream>();
  s->device = device;
  s->legacy = legacy;
  s->blocking = blocking;
  s->priority = priority;
  Streams& all = streams();
  const size_t d = static_cast<size_t>(device);
  if (all.all.size() <= d) {
    all.all.resize(d + 1);
    all.blocking.resize(d + 1);
  }
  if (all.fences.size() <= d) all.fences.resize(d + 1);  // enqueue_serialised may have grown it
  all.all[d].push_back(s);
  if (blocking && !legacy) all.blocking[d].push_back(s);
  return s;
}

// Under the streams mutex.
std::shared_ptr<Stream> legacy_stream(int device) {
  Streams& all = streams();
  if (all.legacy.size() <= static_cast<size_t>(device)) all.legacy.resize(static_cast<size_t>(device) + 1);
  auto& l = all.legacy[static_cast<size_t>(device)];
  if (!l) l = make_stream(device, true, true, 0);
  return l;
}

thread_local std::vector<std::shared_ptr<Stream>> t_per_thread;  // by device

// Under the streams mutex.
std::shared_ptr<Stream> per_thread_stream(int device) {
  if (t_per_thread.size() <= static_cast<size_t>(device)) t_per_thread.resize(static_cast<size_t>(device) + 1);
  auto& s = t_per_thread[static_cast<size_t>(device)];
  if (!s) s = make_stream(device, false, true, 0);
  return s;
}

// Under the streams mutex.
std::shared_ptr<Stream> resolve(cudaStream_t handle) {
  const int device = current_device();
  if (handle == nullptr || handle == cudaStreamLegacy) return legacy_stream(device);
  if (handle == cudaStreamPerThread) return per_thread_stream(device);
  Streams& all = streams();
  if (!all.live_slots.count(handle)) return nullptr;
  return handle->stream;
}

// Under the streams mutex: enqueues with the implicit legacy-stream ordering.
uint64_t push(const std::shared_ptr<Stream>& s, std::string what, std::function<void()> work,
              std::vector<Dependency> deps) {
  Streams& all = streams();
  const size_t d = static_cast<size_t>(s->device);
  if (s->legacy) {
    for (auto& w : all.blocking[d]) {
      auto b = w.lock();
      if (b && b->enqueued > b->completed) deps.push_back({b, b->enqueued});
    }
  } else if (s->blocking) {
    auto l = legacy_stream(s->device);
    if (l->enqueued > l->completed) deps.push_back({l, l->enqueued});
  }
  std::vector<Dependency>& fences = all.fences[d];
  std::erase_if(fences, [](const Dependency& f) { return f.stream->completed >= f.seq; });
  for (const Dependency& f : fences)
    if (f.stream != s) deps.push_back(f);
  Operation op;
  op.what = std::move(what);
  op.work = std::move(work);
  op.deps = std::move(deps);
  op.seq = ++s->enqueued;
  s->queue.push_back(std::move(op));
  if (!s->worker_started) {
    s->worker_started = true;
    std::thread(run_worker, s).detach();
  }
  all.progress.notify_all();
  return s->enqueued;
}

void wait_until(const std::shared_ptr<Stream>& s, uint64_t seq) {
  Streams& all = streams();
  std::unique_lock<std::mutex> lock(all.mutex);
  all.progress.wait(lock, [&] { return s->completed >= seq; });
}

cudaError_t sticky_or_success() {
  const cudaError_t e = sticky_error(current_device());
  return e == cudaSuccess ? e : record_error(e);
}

}  // namespace

Stream* find_stream(cudaStream_t s) {
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  return resolve(s).get();
}

int stream_device(const Stream* s) { return s->device; }

void enqueue(Stream* s, std::string what, std::function<void()> work) {
  enqueue_node(s, std::move(what), std::move(work), nullptr);
}

namespace {

// Under the streams mutex: the shared_ptr that owns s (the legacy, per-thread or a created
// stream of its device).
std::shared_ptr<Stream> owner_of(Stream* s) {
  for (auto& w : streams().all[static_cast<size_t>(s->device)])
    if (auto owner = w.lock(); owner.get() == s) return owner;
  return nullptr;
}

}  // namespace

void enqueue_node(Stream* s, std::string what, std::function<void()> work, const void* function) {
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  if (Capture* c = s->capture.get()) {
    if (!c->invalidated) c->nodes.push_back({std::move(what), std::move(work), function});
    ++s->captured_ops;
    return;
  }
  if (auto owner = owner_of(s)) push(owner, std::move(what), std::move(work), {});
}

bool enqueue_waiting_unless_held(Stream* s, std::string what, std::function<void()> work) {
  Streams& all = streams();
  std::unique_lock<std::mutex> lock(all.mutex);
  auto owner = owner_of(s);
  if (!owner) return false;
  const bool idle = owner->completed == owner->enqueued;
  const uint64_t seq = push(owner, std::move(what), std::move(work), {});
  if (!idle || !owner->queue.back().deps.empty()) return false;  // held: push() added only pending work
  all.progress.wait(lock, [&] { return owner->completed >= seq; });
  return true;
}

void enqueue_serialised(Stream* s, std::string what, std::function<void()> work, const std::vector<int>& devices) {
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto owner = owner_of(s);
  if (!owner) return;
  std::vector<Dependency> deps;
  for (int device : devices) {
    if (all.all.size() <= static_cast<size_t>(device)) continue;
    for (auto& w : all.all[static_cast<size_t>(device)])
      if (auto b = w.lock(); b && b->enqueued > b->completed) deps.push_back({b, b->enqueued});
  }
  const uint64_t seq = push(owner, std::move(what), std::move(work), std::move(deps));
  for (int device : devices) {
    if (all.fences.size() <= static_cast<size_t>(device)) all.fences.resize(static_cast<size_t>(device) + 1);
    all.fences[static_cast<size_t>(device)].push_back({owner, seq});
  }
}

namespace {

// Under the streams mutex. A capture that CUDA would invalidate drops what it recorded: its
// end returns cudaErrorStreamCaptureInvalidated and no graph.
void invalidate(Capture& c, const std::string& why) {
  if (c.invalidated) return;
  c.invalidated = true;
  c.why = why;
  c.nodes.clear();
}

std::string capture_text(const Capture& c) { return "capture " + std::to_string(c.id); }

}  // namespace

bool is_capturing(Stream* s) {
  if (g_captures_under_way.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard<std::mutex> lock(streams().mutex);
  return s->capture != nullptr;
}

cudaError_t capture_invalidated(const char* call, Stream* s) {
  if (g_captures_under_way.load(std::memory_order_acquire) == 0) return cudaSuccess;
  std::string why;
  {
    std::lock_guard<std::mutex> lock(streams().mutex);
    if (!s->capture || !s->capture->invalidated) return cudaSuccess;
    why = capture_text(*s->capture) + " was invalidated by " + s->capture->why;
  }
  return record_error(cudaErrorStreamCaptureInvalidated, std::string(call) + ": the stream's " + why);
}

cudaError_t refuse_wait_during_capture(const char* call, Stream* target) {
  if (g_captures_under_way.load(std::memory_order_acquire) == 0) return cudaSuccess;
  std::string which;
  {
    Streams& all = streams();
    std::lock_guard<std::mutex> lock(all.mutex);
    const std::thread::id self = std::this_thread::get_id();
    for (const auto& c : all.captures) {
      const bool on_target = target && target->capture == c;
      // cudaThreadExchangeStreamCaptureMode: a thread in relaxed mode may make unsafe calls;
      // in thread-local mode its own non-relaxed captures forbid them; in global mode any
      // global capture (of any thread) does too.
      const bool prohibited =
          t_capture_mode != cudaStreamCaptureModeRelaxed &&
          ((c->thread == self && c->mode != cudaStreamCaptureModeRelaxed) ||
           (t_capture_mode == cudaStreamCaptureModeGlobal && c->mode == cudaStreamCaptureModeGlobal));
      if (!on_target && !prohibited) continue;
      invalidate(*c, call);
      which += (which.empty() ? "" : ", ") + capture_text(*c);
    }
  }
  if (which.empty()) return cudaSuccess;
  return record_error(cudaErrorStreamCaptureUnsupported,
                      std::string(call) +
                          ": waits for the device, which is not permitted while a stream captures a "
                          "graph (invalidated " +
                          which + ")");
}

cudaError_t refuse_on_capturing_stream(const char* call, Stream* s, const std::string& why) {
  if (g_captures_under_way.load(std::memory_order_acquire) == 0) return cudaSuccess;
  std::string which;
  {
    std::lock_guard<std::mutex> lock(streams().mutex);
    if (!s->capture) return cudaSuccess;
    invalidate(*s->capture, call);
    which = capture_text(*s->capture);
  }
  return record_error(cudaErrorStreamCaptureUnsupported,
                      std::string(call) + ": " + why + " cannot be captured in a graph (invalidated " + which + ")");
}

void wait_stream(Stream* s) {
  Streams& all = streams();
  std::unique_lock<std::mutex> lock(all.mutex);
  const uint64_t seq = s->enqueued;
  all.progress.wait(lock, [&] { return s->completed >= seq; });
}

void wait_device(int device) {
  Streams& all = streams();
  std::unique_lock<std::mutex> lock(all.mutex);
  if (all.all.size() <= static_cast<size_t>(device)) return;
  std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> targets;
  for (auto& w : all.all[static_cast<size_t>(device)])
    if (auto s = w.lock()) targets.emplace_back(s, s->enqueued);
  all.progress.wait(lock, [&] {
    for (auto& [s, seq] : targets)
      if (s->completed < seq) return false;
    return true;
  });
}

}  // namespace cudasim

using namespace cudasim;

extern "C" {

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* out, unsigned int flags, int priority) {
  if (!out) return record_error(cudaErrorInvalidValue);
  if (cudaError_t e = sticky_or_success()) return e;
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  CUstream_st* slot = nullptr;
  if (!all.free_slots.empty()) {
    slot = all.free_slots.back();  // the most recently destroyed handle comes back first
    all.free_slots.pop_back();
  } else {
    slot = new CUstream_st;
  }
  slot->stream =
      make_stream(current_device(), false, (flags & cudaStreamNonBlocking) == 0, std::clamp(priority, -5, 0));
  all.live_slots.insert(slot);
  *out = slot;
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* out, unsigned int flags) {
  return cudaStreamCreateWithPriority(out, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t* out) { return cudaStreamCreateWithPriority(out, cudaStreamDefault, 0); }

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
}

// Work already enqueued still runs (documented); the handle is free for reuse at once.
cudaError_t cudaStreamDestroy(cudaStream_t handle) {
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  if (handle == nullptr || handle == cudaStreamLegacy || handle == cudaStreamPerThread || !all.live_slots.count(handle))
    return record_error(cudaErrorInvalidResourceHandle, "cudaStreamDestroy: not a stream created by cudaStreamCreate");
  all.live_slots.erase(handle);
  handle->stream.reset();
  all.free_slots.push_back(handle);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  Stream* s = find_stream(handle);
  if (!s) return record_error(cudaErrorInvalidResourceHandle, "cudaStreamSynchronize: not a live stream");
  if (cudaError_t e = refuse_wait_during_capture("cudaStreamSynchronize", s)) return e;
  count_host_synchronization();
  wait_stream(s);
  check_device_guards(s->device, "cudaStreamSynchronize");
  const cudaError_t e = sticky_error(s->device);
  return e == cudaSuccess ? e : record_error(e);
}

cudaError_t cudaStreamQuery(cudaStream_t handle) {
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto s = resolve(handle);
  if (!s) return record_error(cudaErrorInvalidResourceHandle, "cudaStreamQuery: not a live stream");
  if (cudaError_t e = sticky_error(s->device)) return record_error(e);
  if (s->capture) {
    invalidate(*s->capture, "cudaStreamQuery");
    return record_error(cudaErrorStreamCaptureUnsupported, "cudaStreamQuery: the stream is capturing a graph");
  }
  return s->completed >= s->enqueued ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamGetPriority(cudaStream_t handle, int* priority) {
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto s = resolve(handle);
  if (!s || !priority) return record_error(s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
  *priority = s->priority;
  return cudaSuccess;
}

cudaError_t cudaStreamGetFlags(cudaStream_t handle, unsigned int* flags) {
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto s = resolve(handle);
  if (!s || !flags) return record_error(s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
  *flags = s->blocking ? cudaStreamDefault : cudaStreamNonBlocking;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  const int device = current_device();
  if (cudaError_t e = refuse_wait_during_capture("cudaDeviceSynchronize", nullptr)) return e;
  count_host_synchronization();
  wait_device(device);
  check_device_guards(device, "cudaDeviceSynchronize");
  return sticky_or_success();
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (!event) return record_error(cudaErrorInvalidValue);
  auto* e = new CUevent_st;
  e->timing = (flags & cudaEventDisableTiming) == 0;
  e->blocking_sync = (flags & cudaEventBlockingSync) != 0;
  *event = e;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (!event) return record_error(cudaErrorInvalidResourceHandle);
  delete event;  // a recorded event still pending completes without it (the stream holds `when`)
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t handle) {
  if (!event) return record_error(cudaErrorInvalidResourceHandle, "cudaEventRecord: null event");
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto s = resolve(handle);
  if (!s) return record_error(cudaErrorInvalidResourceHandle, "cudaEventRecord: not a live stream");
  if (s->device != current_device())
    return record_error(cudaErrorInvalidResourceHandle, "cudaEventRecord: the stream belongs to another device");
  if (s->capture) {  // a node-less point of the capture, for other streams to fork from or join at
    event->captured = s->capture;
    event->captured_stream = s;
    event->captured_ops = s->captured_ops;
    event->stream = nullptr;
    return cudaSuccess;
  }
  event->captured = nullptr;
  event->captured_stream = nullptr;
  auto when = std::make_shared<Clock::time_point>();
  event->stream = s;
  event->when = when;
  event->seq = push(s, "cudaEventRecord", [when] { *when = Clock::now(); }, {});
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!event) return record_error(cudaErrorInvalidResourceHandle);
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  if (event->captured && !event->captured->ended)
    return record_error(cudaErrorCapturedEvent, "cudaEventQuery: the event was last recorded in a capturing stream");
  if (!event->stream || event->stream->completed >= event->seq) return cudaSuccess;
  return cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!event) return record_error(cudaErrorInvalidResourceHandle);
  std::shared_ptr<Stream> s;
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(streams().mutex);
    if (event->captured && !event->captured->ended)
      return record_error(cudaErrorCapturedEvent,
                          "cudaEventSynchronize: the event was last recorded in a capturing stream");
    s = event->stream;
    seq = event->seq;
  }
  if (cudaError_t e = refuse_wait_during_capture("cudaEventSynchronize", nullptr)) return e;
  count_host_synchronization();
  if (!s) return cudaSuccess;  // never recorded: nothing to wait for
  wait_until(s, seq);
  check_device_guards(s->device, "cudaEventSynchronize");
  const cudaError_t e = sticky_error(s->device);
  return e == cudaSuccess ? e : record_error(e);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms || !start || !end) return record_error(cudaErrorInvalidResourceHandle);
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  if (!start->timing || !end->timing || !start->stream || !end->stream)
    return record_error(cudaErrorInvalidResourceHandle,
                        "cudaEventElapsedTime: both events must be recorded and timing-enabled");
  if (start->stream->completed < start->seq || end->stream->completed < end->seq)
    return record_error(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(*end->when - *start->when).count();
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t handle, cudaEvent_t event, unsigned int flags) {
  if (!event) return record_error(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: null event");
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto s = resolve(handle);
  if (!s) return record_error(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: not a live stream");
  if (event->captured && !event->captured->ended) {
    Capture& c = *event->captured;
    if (!s->capture) {  // a fork: s joins the capture
      s->capture = event->captured;
      s->captured_ops = s->joined_ops = 0;
      c.members.push_back(s);
    } else if (s->capture != event->captured) {
      invalidate(*s->capture, "cudaStreamWaitEvent");
      invalidate(c, "cudaStreamWaitEvent");
      return record_error(cudaErrorStreamCaptureMerge, "cudaStreamWaitEvent: would merge two captures");
    }
    if (event->captured_stream != s)
      event->captured_stream->joined_ops = std::max(event->captured_stream->joined_ops, event->captured_ops);
    return cudaSuccess;
  }
  if (s->capture) {
    invalidate(*s->capture, "cudaStreamWaitEvent");
    return record_error(
        cudaErrorStreamCaptureIsolation,
        "cudaStreamWaitEvent: a capturing stream cannot wait for an event recorded outside its capture");
  }
  std::vector<Dependency> deps;
  if (event->stream) deps.push_back({event->stream, event->seq});  // never recorded: no wait
  push(
      s, "cudaStreamWaitEvent", [] {}, std::move(deps));
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t handle, cudaStreamCaptureMode mode) {
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return record_error(cudaErrorInvalidValue, "cudaStreamBeginCapture: unknown capture mode");
  if (cudaError_t e = sticky_or_success()) return e;
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto s = resolve(handle);
  if (!s) return record_error(cudaErrorInvalidResourceHandle, "cudaStreamBeginCapture: not a live stream");
  if (s->legacy)
    return record_error(cudaErrorStreamCaptureUnsupported,
                        "cudaStreamBeginCapture: the legacy default stream cannot capture (use a created stream)");
  if (s->capture) return record_error(cudaErrorIllegalState, "cudaStreamBeginCapture: the stream is capturing already");
  auto c = std::make_shared<Capture>();
  c->id = ++all.next_capture_id;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->members.push_back(s);
  s->capture = c;
  s->captured_ops = s->joined_ops = 0;
  all.captures.push_back(c);
  g_captures_under_way.fetch_add(1, std::memory_order_release);
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t handle, cudaGraph_t* graph) {
  if (!graph) return record_error(cudaErrorInvalidValue, "cudaStreamEndCapture: null graph pointer");
  std::vector<GraphNode> nodes;
  std::string failure;
  cudaError_t code = cudaSuccess;
  {
    Streams& all = streams();
    std::lock_guard<std::mutex> lock(all.mutex);
    auto s = resolve(handle);
    if (!s) return record_error(cudaErrorInvalidResourceHandle, "cudaStreamEndCapture: not a live stream");
    if (!s->capture) return record_error(cudaErrorIllegalState, "cudaStreamEndCapture: the stream is not capturing");
    std::shared_ptr<Capture> c = s->capture;
    if (c->members.front() != s)
      return record_error(cudaErrorStreamCaptureUnmatched,
                          "cudaStreamEndCapture: the capture began on another stream (this one was forked into it)");
    if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id())
      return record_error(cudaErrorStreamCaptureWrongThread,
                          "cudaStreamEndCapture: a capture not begun in relaxed mode ends on the thread that began it");
    for (size_t i = 1; i < c->members.size() && !c->invalidated && code == cudaSuccess; ++i) {
      if (c->members[i]->captured_ops > c->members[i]->joined_ops) {
        code = cudaErrorStreamCaptureUnjoined;
        failure = "cudaStreamEndCapture: a stream forked into " + capture_text(*c) +
                  " has work the origin stream never waited for (record an event there and wait for it)";
      }
    }
    if (c->invalidated) {
      code = cudaErrorStreamCaptureInvalidated;
      failure = "cudaStreamEndCapture: " + capture_text(*c) + " was invalidated by " + c->why;
    }
    for (auto& m : c->members) {
      m->capture.reset();
      m->captured_ops = m->joined_ops = 0;
    }
    c->ended = true;
    all.captures.erase(std::find(all.captures.begin(), all.captures.end(), c));
    g_captures_under_way.fetch_sub(1, std::memory_order_release);
    nodes = std::move(c->nodes);
  }
  *graph = nullptr;
  if (code != cudaSuccess) return record_error(code, failure);
  *graph = new_graph(std::move(nodes));
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t handle, cudaStreamCaptureStatus* status) {
  if (!status) return record_error(cudaErrorInvalidValue, "cudaStreamIsCapturing: null status pointer");
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto s = resolve(handle);
  if (!s) return record_error(cudaErrorInvalidResourceHandle, "cudaStreamIsCapturing: not a live stream");
  *status = !s->capture               ? cudaStreamCaptureStatusNone
            : s->capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                      : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

// The capture's graph and dependency nodes are not modelled (nodes have no handles here):
// asking for them is cudaErrorNotSupported.
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t handle, cudaStreamCaptureStatus* status, unsigned long long* id,
                                     cudaGraph_t* graph, const cudaGraphNode_t** dependencies,
                                     const cudaGraphEdgeData** edges, size_t* count) {
  if (!status) return record_error(cudaErrorInvalidValue, "cudaStreamGetCaptureInfo: null status pointer");
  if (graph || dependencies || edges || count)
    return record_error(cudaErrorNotSupported, "cudaStreamGetCaptureInfo: cudasim models no graph or node handles");
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.mutex);
  auto s = resolve(handle);
  if (!s) return record_error(cudaErrorInvalidResourceHandle, "cudaStreamGetCaptureInfo: not a live stream");
  *status = !s->capture               ? cudaStreamCaptureStatusNone
            : s->capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                      : cudaStreamCaptureStatusActive;
  if (id && s->capture) *id = s->capture->id;
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (!mode || (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
                *mode != cudaStreamCaptureModeRelaxed))
    return record_error(cudaErrorInvalidValue, "cudaThreadExchangeStreamCaptureMode: unknown mode");
  std::swap(*mode, t_capture_mode);
  return cudaSuccess;
}

// The function runs on the stream's worker after everything enqueued before it, and work
// enqueued later waits for it to return. As documented, it is not called once the device
// has a sticky error (the worker skips all work then).
cudaError_t cudaLaunchHostFunc(cudaStream_t handle, cudaHostFn_t fn, void* user_data) {
  if (!fn) return record_error(cudaErrorInvalidValue, "cudaLaunchHostFunc: null function");
  if (cudaError_t e = sticky_or_success()) return e;
  Stream* s = find_stream(handle);
  if (!s) return record_error(cudaErrorInvalidResourceHandle, "cudaLaunchHostFunc: not a live stream");
  enqueue(s, "cudaLaunchHostFunc", [fn, user_data] { fn(user_data); });
  return cudaSuccess;
}

}  // extern "C"
