#include <wick/data/batch_stream.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

#include <wick/data/cuda_delivery.h>
#include <wick/data/map_dataset.h>
#include <wick/tensor/cuda.h>

namespace wick {

namespace {

// A uniform integer in [0, bound) without modulo bias (std::uniform_int_distribution is
// not the same on every standard library, and the order must be).
uint64_t uniform_below(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound: values below it are rejected
  for (;;) {
    uint64_t x = rng();
    if (x >= threshold) return x % bound;
  }
}

// Rows `rows` of `from` (contiguous, examples along dim 0) into a new tensor.
Tensor gather_rows(const Tensor& from, const int64_t* rows, int64_t count) {
  Shape shape = from.shape();
  shape[0] = count;
  Tensor out = empty(shape, from.dtype());
  if (count == 0 || from.numel() == 0) return out;
  const size_t row_bytes = from.nbytes() / static_cast<size_t>(from.size(0));
  const char* src = static_cast<const char*>(from.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * row_bytes, src + rows[i] * row_bytes, row_bytes);
  return out;
}

// A batch ready for the consumer, and (on CUDA) the event its copy to the device records.
struct Prepared {
  Batch batch;
  std::shared_ptr<cuda::Event> ready;
};

}  // namespace

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle) {
  WICK_CHECK(n >= 0, "epoch_order: negative size ", n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  if (!shuffle) return order;
  const uint64_t e = static_cast<uint64_t>(epoch);
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(e),
                    static_cast<uint32_t>(e >> 32)};
  std::mt19937_64 rng(seq);
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(uniform_below(rng, static_cast<uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

struct BatchStream::State {
  std::shared_ptr<const Dataset> data;
  Tensor inputs, targets;  // contiguous CPU copies (or the dataset's own tensors)
  BatchStreamOptions opt;
  int64_t rank_examples = 0;  // this rank's share before drop_last
  int64_t batches = 0;

  bool started = false;
  int64_t epoch = 0;
  std::vector<int64_t> order;  // this rank's dataset indices for the epoch
  int64_t consumed = 0;        // batches handed out by next()

  // The loader thread and its queue (prefetch > 0). `order`, `epoch` and the staging
  // buffers are only touched by one thread at a time: start_epoch joins the loader first.
  std::thread loader;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Prepared> queue;
  bool stop = false;
  bool loader_done = false;
  std::exception_ptr error;

  std::optional<CudaDeliverer> cuda;  // CUDA delivery

  Prepared make(int64_t k);
  Prepared to_cuda(Batch batch);
  void run_loader();
  void stop_loader();
  ~State();
};

Prepared BatchStream::State::make(int64_t k) {
  const int64_t begin = k * opt.batch_size;
  const int64_t end = std::min(begin + opt.batch_size, rank_examples);
  const int64_t count = end - begin;
  const int64_t* rows = order.data() + begin;
  Batch batch;
  batch.indices = empty({count}, DType::Int64);
  if (count > 0) std::memcpy(batch.indices.data_ptr(), rows, static_cast<size_t>(count) * sizeof(int64_t));
  batch.inputs = gather_rows(inputs, rows, count);
  batch.targets = gather_rows(targets, rows, count);
  if (opt.transform) {
    Tensor indices = batch.indices;
    batch = opt.transform(std::move(batch), derive_seed(derive_seed(opt.seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(k)));
    WICK_CHECK(batch.inputs.defined() && batch.targets.defined() && batch.inputs.dim() >= 1 &&
                   batch.targets.dim() >= 1 && batch.inputs.size(0) == count && batch.targets.size(0) == count,
               "BatchStream: the transform must return inputs and targets of ", count, " examples, got ",
               shape_str(batch.inputs.shape()), " and ", shape_str(batch.targets.shape()));
    WICK_CHECK(batch.inputs.device().is_cpu() && batch.targets.device().is_cpu(),
               "BatchStream: the transform must return CPU tensors (the stream moves them to ", opt.device, ")");
    if (!batch.indices.defined()) batch.indices = indices;
  }
  if (opt.device.is_cuda()) return to_cuda(std::move(batch));
  return Prepared{std::move(batch), nullptr};
}

Prepared BatchStream::State::to_cuda(Batch batch) {
  CudaDelivery d = cuda->send({batch.inputs, batch.targets});
  return Prepared{Batch{d.tensors[0], d.tensors[1], batch.indices, {}}, d.ready};
}

void BatchStream::State::run_loader() {
  for (int64_t k = 0; k < batches; ++k) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stop || static_cast<int64_t>(queue.size()) < opt.prefetch; });
      if (stop) return;
    }
    Prepared p;
    std::exception_ptr failure;
    try {
      p = make(k);
    } catch (...) {
      failure = std::current_exception();
    }
    // Published after the catch block has let go of the exception, so the consumer ends
    // up holding the only reference.
    if (failure) {
      std::lock_guard<std::mutex> lock(mu);
      error = std::move(failure);
      loader_done = true;
      cv.notify_all();
      return;
    }
    // Queued even when stopping: stop_loader() waits for its copy before dropping it.
    std::lock_guard<std::mutex> lock(mu);
    queue.push_back(std::move(p));
    cv.notify_all();
  }
  std::lock_guard<std::mutex> lock(mu);
  loader_done = true;
  cv.notify_all();
}

void BatchStream::State::stop_loader() {
  if (loader.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    loader.join();
  }
  // Batches nobody took may still be in flight to the device: their memory must not go
  // back to the consumer stream's pool before the copies that write it are done.
  for (Prepared& p : queue) {
    if (p.ready) p.ready->synchronize();
  }
  queue.clear();
  stop = false;
  loader_done = false;
  error = nullptr;
}

BatchStream::State::~State() {
  try {
    stop_loader();
  } catch (...) {  // a destructor must not throw (only a broken device makes a wait fail)
  }
}

BatchStream::BatchStream(std::shared_ptr<const Dataset> data, BatchStreamOptions options)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  WICK_CHECK(data != nullptr, "BatchStream: the dataset is null");
  WICK_CHECK(data->inputs.defined() && data->targets.defined() && data->inputs.dim() >= 1 &&
                 data->targets.dim() >= 1 && data->inputs.size(0) == data->targets.size(0),
             "BatchStream: the dataset needs inputs and targets with the same number of examples, got ",
             shape_str(data->inputs.shape()), " and ", shape_str(data->targets.shape()));
  WICK_CHECK(data->inputs.device().is_cpu() && data->targets.device().is_cpu(),
             "BatchStream: the dataset must be on the CPU (batches are moved to options.device), it is on ",
             data->inputs.device());
  WICK_CHECK(options.batch_size >= 1, "BatchStream: batch_size must be at least 1, got ", options.batch_size);
  WICK_CHECK(options.world_size >= 1 && options.rank >= 0 && options.rank < options.world_size, "BatchStream: rank ",
             options.rank, " is not in [0, world_size = ", options.world_size, ")");
  WICK_CHECK(options.prefetch >= 0, "BatchStream: prefetch must be >= 0, got ", options.prefetch);
  if (options.device.is_cuda()) {
    WICK_CHECK(options.device.index >= 0 && options.device.index < cuda::device_count(), "BatchStream: device ",
               options.device, " is not available (", cuda::device_count(), " CUDA devices)");
    s.cuda.emplace(options.device);
  }
  s.data = std::move(data);
  s.inputs = s.data->inputs.contiguous();
  s.targets = s.data->targets.contiguous();
  s.opt = std::move(options);
  const int64_t n = s.inputs.size(0), w = s.opt.world_size, r = s.opt.rank;
  s.rank_examples = n > r ? (n - r + w - 1) / w : 0;
  s.batches = s.opt.drop_last ? s.rank_examples / s.opt.batch_size
                              : (s.rank_examples + s.opt.batch_size - 1) / s.opt.batch_size;
}

BatchStream::~BatchStream() = default;

int64_t BatchStream::num_batches() const { return state_->batches; }

int64_t BatchStream::num_examples() const {
  const State& s = *state_;
  return s.opt.drop_last ? s.batches * s.opt.batch_size : s.rank_examples;
}

const BatchStreamOptions& BatchStream::options() const { return state_->opt; }

void BatchStream::start_epoch(int64_t epoch) {
  State& s = *state_;
  s.stop_loader();
  s.started = true;
  s.epoch = epoch;
  s.consumed = 0;
  std::vector<int64_t> all = epoch_order(s.inputs.size(0), s.opt.seed, epoch, s.opt.shuffle);
  s.order.resize(static_cast<size_t>(s.rank_examples));
  for (int64_t j = 0; j < s.rank_examples; ++j) s.order[j] = all[s.opt.rank + j * s.opt.world_size];
  if (s.cuda) s.cuda->set_consumer_stream();
  if (s.opt.prefetch > 0 && s.batches > 0) {
    s.loader = std::thread([&s] { s.run_loader(); });
  } else {
    s.loader_done = true;  // nothing will come from a loader thread
  }
}

std::optional<Batch> BatchStream::next() {
  State& s = *state_;
  if (!s.started) start_epoch(0);
  Prepared p;
  if (s.opt.prefetch == 0) {
    if (s.consumed >= s.batches) return std::nullopt;
    try {
      p = s.make(s.consumed++);
    } catch (...) {
      s.consumed = s.batches;  // as with prefetching, the epoch ends at the failure
      throw;
    }
  } else {
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.wait(lock, [&] { return !s.queue.empty() || s.loader_done; });
    if (s.queue.empty()) {
      if (s.error) {
        std::exception_ptr e = s.error;
        s.error = nullptr;
        std::rethrow_exception(e);
      }
      return std::nullopt;
    }
    p = std::move(s.queue.front());
    s.queue.pop_front();
    lock.unlock();
    s.cv.notify_all();
    ++s.consumed;
  }
  if (p.ready) s.cuda->receive(CudaDelivery{{p.batch.inputs, p.batch.targets}, p.ready});
  return std::move(p.batch);
}

}  // namespace wick
