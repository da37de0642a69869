#include <wick/data/data_loader.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <wick/data/cuda_delivery.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/cuda.h>

namespace wick {

namespace {

// A finished batch (on a CUDA device: in flight, until `ready`), or the exception that
// stopped it.
struct Slot {
  std::optional<Example> batch;
  std::shared_ptr<cuda::Event> ready;
  std::exception_ptr error;
};

// Waits for the copies of batches nobody will take: their device memory goes back to the
// pool when they are dropped.
void wait_in_flight(const Slot& slot) {
  if (slot.ready) slot.ready->synchronize();
}

}  // namespace

struct DataLoader::State {
  std::shared_ptr<const MapDataset> map;
  std::shared_ptr<const IterableDataset> iterable;
  DataLoaderOptions opt;
  std::shared_ptr<const Sampler> sampler;
  bool sampler_from_options = false;  // made by the loader (so load_state_dict may remake it)
  // Set by load_state_dict: the saved position, used by the next start_epoch of its epoch
  // without a skip count (or next() before any start_epoch).
  std::optional<LoaderState> loaded;

  bool started = false;
  bool ended = false;  // an error ended the epoch
  int64_t epoch = 0;
  int64_t consumed = 0;  // batches of the epoch handed out (or skipped); written under mu
  std::vector<int64_t> order;  // map-style: the sampler's indices for the epoch
  int64_t batches = 0;         // map-style: batches in the epoch

  // Workers. `order`, `epoch` and `batches` are written only while no worker runs.
  std::vector<std::thread> workers;
  std::mutex mu;
  std::condition_variable work_cv;   // room to make another batch, or stop
  std::condition_variable ready_cv;  // a batch finished
  std::atomic<bool> stop{false};

  // Map-style: the next batch a worker may claim and the reorder buffer.
  int64_t next_claim = 0;
  std::map<int64_t, Slot> ready;

  // Iterable: one queue per worker and the round-robin rotation of workers not yet ended.
  struct WorkerQueue {
    std::deque<Slot> slots;
    bool done = false;
  };
  std::vector<WorkerQueue> queues;
  std::vector<int64_t> rotation;
  size_t turn = 0;
  std::unique_ptr<ExampleStream> inline_stream;  // num_workers == 0
  int64_t inline_made = 0;

  std::optional<CudaDeliverer> cuda;  // a CUDA device: staging and copies


  int64_t num_streams() const { return std::max<int64_t>(opt.num_workers, 1); }
  int64_t per_worker_cap() const { return std::max<int64_t>(1, opt.prefetch / num_streams()); }

  std::optional<Example> make_map_batch(int64_t k);
  std::optional<Example> read_stream_batch(ExampleStream& stream, int64_t worker, int64_t j);
  Slot start_delivery(std::optional<Example> batch);
  Example finish_delivery(Slot slot) const;
  std::unique_ptr<ExampleStream> open_stream(int64_t worker);
  void map_worker();
  void stream_worker(int64_t w);
  std::optional<Slot> next_map();
  std::optional<Slot> next_iterable();
  void stop_workers();
  void make_sampler();
};

namespace {

// The sampler of a map-style dataset of n examples whose options give none: the options'
// shard of the epoch's order.
std::shared_ptr<const Sampler> sampler_of_options(int64_t n, const DataLoaderOptions& opt) {
  if (opt.world_size > 1)
    return std::make_shared<DistributedSampler>(n, opt.rank, opt.world_size, opt.shuffle, opt.seed, opt.drop_last);
  if (opt.shuffle) return std::make_shared<RandomSampler>(n, opt.seed);
  return std::make_shared<SequentialSampler>(n);
}

}  // namespace

void DataLoader::State::make_sampler() {
  sampler = opt.sampler;
  sampler_from_options = sampler == nullptr;
  if (!sampler) sampler = sampler_of_options(map->size(), opt);
}

std::optional<Example> DataLoader::State::make_map_batch(int64_t k) {
  const int64_t begin = k * opt.batch_size;
  const int64_t end = std::min<int64_t>(begin + opt.batch_size, static_cast<int64_t>(order.size()));
  std::vector<Example> examples;
  examples.reserve(static_cast<size_t>(end - begin));
  for (int64_t p = begin; p < end; ++p) {
    if (stop.load(std::memory_order_relaxed)) return std::nullopt;
    const int64_t i = order[static_cast<size_t>(p)];
    try {
      examples.push_back(map->get(i, example_seed(opt.seed, epoch, i)));
    } catch (const std::exception& e) {
      detail::throw_error("DataLoader: batch ", k, " of epoch ", epoch, ", dataset index ", i, " (sampler position ",
                          p, "): ", e.what());
    }
  }
  try {
    return opt.collate(std::move(examples));
  } catch (const std::exception& e) {
    detail::throw_error("DataLoader: batch ", k, " of epoch ", epoch, " (dataset indices from ",
                        order[static_cast<size_t>(begin)], ", sampler positions [", begin, ", ", end, ")): ", e.what());
  }
}

std::unique_ptr<ExampleStream> DataLoader::State::open_stream(int64_t worker) {
  Shard shard{opt.rank, opt.world_size, worker, num_streams(), opt.seed, epoch};
  try {
    std::unique_ptr<ExampleStream> stream = iterable->open(shard);
    WICK_CHECK(stream != nullptr, "the dataset returned no stream");
    return stream;
  } catch (const std::exception& e) {
    detail::throw_error("DataLoader: opening the stream of worker ", worker, " of ", num_streams(), " (rank ",
                        opt.rank, ") for epoch ", epoch, ": ", e.what());
  }
}

// Batch j of one worker's stream, or nullopt when the stream has no (whole, with
// drop_last) batch left.
std::optional<Example> DataLoader::State::read_stream_batch(ExampleStream& stream, int64_t worker, int64_t j) {
  std::vector<Example> examples;
  while (static_cast<int64_t>(examples.size()) < opt.batch_size) {
    if (stop.load(std::memory_order_relaxed)) return std::nullopt;
    std::optional<Example> e;
    try {
      e = stream.next();
    } catch (const std::exception& err) {
      detail::throw_error("DataLoader: worker ", worker, " (rank ", opt.rank, "), its batch ", j, " of epoch ", epoch,
                          ", example ", j * opt.batch_size + static_cast<int64_t>(examples.size()),
                          " of its stream: ", err.what());
    }
    if (!e) break;
    examples.push_back(std::move(*e));
  }
  if (examples.empty() || (opt.drop_last && static_cast<int64_t>(examples.size()) < opt.batch_size))
    return std::nullopt;
  try {
    return opt.collate(std::move(examples));
  } catch (const std::exception& err) {
    detail::throw_error("DataLoader: worker ", worker, " (rank ", opt.rank, "), collate of its batch ", j,
                        " of epoch ", epoch, ": ", err.what());
  }
}

void DataLoader::State::map_worker() {
  for (;;) {
    int64_t k;
    {
      std::unique_lock<std::mutex> lock(mu);
      work_cv.wait(lock, [&] { return stop || next_claim >= batches || next_claim < consumed + opt.prefetch; });
      if (stop || next_claim >= batches) return;
      k = next_claim++;
    }
    Slot slot;
    try {
      slot = start_delivery(make_map_batch(k));
      if (!slot.batch) return;  // stopped
    } catch (...) {
      slot.error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      ready.emplace(k, std::move(slot));
    }
    ready_cv.notify_all();
  }
}

void DataLoader::State::stream_worker(int64_t w) {
  std::unique_ptr<ExampleStream> stream;
  for (int64_t j = 0;; ++j) {
    {
      std::unique_lock<std::mutex> lock(mu);
      work_cv.wait(lock, [&] { return stop || static_cast<int64_t>(queues[w].slots.size()) < per_worker_cap(); });
      if (stop) return;
    }
    Slot slot;
    bool end = false;
    try {
      if (!stream) stream = open_stream(w);
      slot = start_delivery(read_stream_batch(*stream, w, j));
      if (!slot.batch) {
        if (stop) return;
        end = true;
      }
    } catch (...) {
      slot.error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!end) queues[w].slots.push_back(std::move(slot));
      // A failed stream ends too: its error is the last thing it delivers.
      if (end || queues[w].slots.back().error) queues[w].done = true;
    }
    ready_cv.notify_all();
    if (end || queues[w].done) return;  // done is only ever set by this thread
  }
}

std::optional<Slot> DataLoader::State::next_map() {
  if (consumed >= batches) return std::nullopt;
  if (opt.num_workers == 0) {
    Slot slot;
    try {
      slot = start_delivery(make_map_batch(consumed));
    } catch (...) {
      ended = true;
      throw;
    }
    ++consumed;
    return slot;
  }
  Slot slot;
  {
    std::unique_lock<std::mutex> lock(mu);
    ready_cv.wait(lock, [&] { return ready.count(consumed) > 0; });
    auto it = ready.find(consumed);
    slot = std::move(it->second);
    ready.erase(it);
    ++consumed;
  }
  work_cv.notify_all();
  if (slot.error) {
    ended = true;
    std::rethrow_exception(slot.error);
  }
  return slot;
}

std::optional<Slot> DataLoader::State::next_iterable() {
  while (!rotation.empty()) {
    const int64_t w = rotation[turn];
    Slot slot;
    bool have = false;
    if (opt.num_workers == 0) {
      try {
        if (!inline_stream) inline_stream = open_stream(0);
        slot = start_delivery(read_stream_batch(*inline_stream, 0, inline_made));
      } catch (...) {
        ended = true;
        throw;
      }
      have = slot.batch.has_value();
      if (have) ++inline_made;
    } else {
      std::unique_lock<std::mutex> lock(mu);
      ready_cv.wait(lock, [&] { return !queues[w].slots.empty() || queues[w].done; });
      if (!queues[w].slots.empty()) {
        slot = std::move(queues[w].slots.front());
        queues[w].slots.pop_front();
        have = true;
      }
    }
    if (!have) {  // this worker's stream has ended: it leaves the rotation
      rotation.erase(rotation.begin() + static_cast<std::ptrdiff_t>(turn));
      if (turn >= rotation.size()) turn = 0;
      continue;
    }
    work_cv.notify_all();
    turn = (turn + 1) % rotation.size();
    if (slot.error) {
      ended = true;
      std::rethrow_exception(slot.error);
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      ++consumed;
    }
    return slot;
  }
  return std::nullopt;
}

void DataLoader::State::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  work_cv.notify_all();
  ready_cv.notify_all();
  for (std::thread& t : workers) t.join();
  workers.clear();
  stop = false;
  for (const auto& [k, slot] : ready) wait_in_flight(slot);
  for (const WorkerQueue& q : queues) {
    for (const Slot& slot : q.slots) wait_in_flight(slot);
  }
  ready.clear();
  queues.clear();
  rotation.clear();
  turn = 0;
  inline_stream.reset();
  inline_made = 0;
}

// On the thread that made the batch: for a CUDA device, staging in page-locked memory and
// the start of its copy (CudaDeliverer).
Slot DataLoader::State::start_delivery(std::optional<Example> batch) {
  Slot slot;
  if (batch && cuda) {
    std::vector<Tensor> host;
    for (const auto& field : batch->fields()) host.push_back(field.second);
    CudaDelivery d = cuda->send(host);
    Example on_device;
    for (size_t i = 0; i < host.size(); ++i) on_device.set(batch->fields()[i].first, d.tensors[i]);
    batch = std::move(on_device);
    slot.ready = std::move(d.ready);
  }
  slot.batch = std::move(batch);
  return slot;
}

// On the consumer's thread: its current stream waits for the batch's copy.
Example DataLoader::State::finish_delivery(Slot slot) const {
  Example batch = std::move(slot.batch).value();
  if (slot.ready) {
    std::vector<Tensor> tensors;
    for (const auto& field : batch.fields()) tensors.push_back(field.second);
    cuda->receive(CudaDelivery{std::move(tensors), slot.ready});
  }
  return batch;
}

namespace {

void check_options(const DataLoaderOptions& o) {
  WICK_CHECK(o.batch_size >= 1, "DataLoader: batch_size must be at least 1, got ", o.batch_size);
  WICK_CHECK(o.num_workers >= 0, "DataLoader: num_workers must be >= 0, got ", o.num_workers);
  WICK_CHECK(o.num_workers == 0 || o.prefetch >= 1, "DataLoader: prefetch must be >= 1 with workers, got ",
             o.prefetch);
  WICK_CHECK(o.world_size >= 1 && o.rank >= 0 && o.rank < o.world_size, "DataLoader: rank ", o.rank,
             " is not in [0, world_size = ", o.world_size, ")");
  if (o.device.is_cuda()) {
    WICK_CHECK(o.device.index >= 0 && o.device.index < cuda::device_count(), "DataLoader: device ", o.device,
               " is not available (", cuda::device_count(), " CUDA devices)");
  }
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const MapDataset> data, DataLoaderOptions options)
    : state_(std::make_unique<State>()) {
  WICK_CHECK(data != nullptr, "DataLoader: the dataset is null");
  check_options(options);
  State& s = *state_;
  s.map = std::move(data);
  s.opt = std::move(options);
  if (!s.opt.collate) s.opt.collate = stack_collate;
  if (s.opt.device.is_cuda()) s.cuda.emplace(s.opt.device);
  s.make_sampler();
}

DataLoader::DataLoader(std::shared_ptr<const IterableDataset> data, DataLoaderOptions options)
    : state_(std::make_unique<State>()) {
  WICK_CHECK(data != nullptr, "DataLoader: the dataset is null");
  check_options(options);
  WICK_CHECK(options.sampler == nullptr && !options.shuffle,
             "DataLoader: an iterable dataset orders (and shuffles) itself; sampler and shuffle are for map-style "
             "datasets");
  State& s = *state_;
  s.iterable = std::move(data);
  s.opt = std::move(options);
  if (!s.opt.collate) s.opt.collate = stack_collate;
  if (s.opt.device.is_cuda()) s.cuda.emplace(s.opt.device);
}

DataLoader::~DataLoader() {
  try {
    state_->stop_workers();
  } catch (...) {  // a destructor must not throw (joining only fails on a broken thread)
  }
}

int64_t DataLoader::num_batches() const {
  State& s = *state_;
  if (s.iterable) return -1;
  if (!s.started) {
    const int64_t n = static_cast<int64_t>(s.sampler->indices(s.epoch).size());
    return s.opt.drop_last ? n / s.opt.batch_size : (n + s.opt.batch_size - 1) / s.opt.batch_size;
  }
  return s.batches;
}

const DataLoaderOptions& DataLoader::options() const { return state_->opt; }

void DataLoader::start_epoch(int64_t epoch, std::optional<int64_t> skip) {
  State& s = *state_;
  s.stop_workers();
  if (!skip) skip = s.loaded && s.loaded->epoch == epoch ? s.loaded->batches : 0;
  s.loaded.reset();
  const int64_t skip_batches = *skip;
  WICK_CHECK(skip_batches >= 0, "DataLoader::start_epoch: skip_batches must be >= 0, got ", skip_batches);
  s.started = true;
  if (s.cuda) s.cuda->set_consumer_stream();
  s.ended = false;
  s.epoch = epoch;
  if (s.map) {
    s.order = s.sampler->indices(epoch);
    const int64_t n = static_cast<int64_t>(s.order.size()), size = s.map->size();
    for (int64_t i : s.order)
      WICK_CHECK(i >= 0 && i < size, "DataLoader: the sampler gave index ", i, " for a dataset of ", size,
                 " examples");
    s.batches = s.opt.drop_last ? n / s.opt.batch_size : (n + s.opt.batch_size - 1) / s.opt.batch_size;
    WICK_CHECK(skip_batches <= s.batches, "DataLoader::start_epoch: cannot skip ", skip_batches,
               " batches of an epoch of ", s.batches);
    s.consumed = skip_batches;
    s.next_claim = skip_batches;
    for (int64_t w = 0; w < s.opt.num_workers; ++w) s.workers.emplace_back([&s] { s.map_worker(); });
    return;
  }
  s.consumed = 0;
  const int64_t streams = s.num_streams();
  s.queues = std::vector<State::WorkerQueue>(static_cast<size_t>(streams));
  for (int64_t w = 0; w < streams; ++w) s.rotation.push_back(w);
  for (int64_t w = 0; w < s.opt.num_workers; ++w) s.workers.emplace_back([&s, w] { s.stream_worker(w); });
  for (int64_t b = 0; b < skip_batches; ++b) {
    std::optional<Slot> skipped = s.next_iterable();
    WICK_CHECK(skipped.has_value(), "DataLoader::start_epoch: cannot skip ", skip_batches,
               " batches: the streams of epoch ", epoch, " end after ", b);
    wait_in_flight(*skipped);
  }
}

std::optional<Example> DataLoader::next() {
  State& s = *state_;
  if (!s.started) start_epoch(s.loaded ? s.loaded->epoch : 0);
  if (s.ended) return std::nullopt;
  std::optional<Slot> slot = s.map ? s.next_map() : s.next_iterable();
  if (!slot) return std::nullopt;
  return s.finish_delivery(std::move(*slot));
}

LoaderState DataLoader::state() const {
  if (state_->loaded) return *state_->loaded;
  return LoaderState{state_->epoch, state_->consumed};
}

namespace {

Tensor int64_entry(int64_t v) { return full({}, v, Options(DType::Int64)); }

}  // namespace

TensorMap DataLoader::state_dict() const {
  const State& s = *state_;
  const LoaderState at = state();
  return TensorMap{
      {"epoch", int64_entry(at.epoch)},
      {"batches", int64_entry(at.batches)},
      {"seed", int64_entry(static_cast<int64_t>(s.opt.seed))},  // the bits of the uint64
      {"batch_size", int64_entry(s.opt.batch_size)},
      {"world_size", int64_entry(s.opt.world_size)},
      {"rank", int64_entry(s.opt.rank)},
      {"dataset_size", int64_entry(s.map ? s.map->size() : -1)},
      {"shuffle", int64_entry(s.opt.shuffle ? 1 : 0)},
      {"drop_last", int64_entry(s.opt.drop_last ? 1 : 0)},
      {"num_workers", int64_entry(s.opt.num_workers)},
  };
}

void DataLoader::load_state_dict(const TensorMap& state) {
  State& s = *state_;
  auto entry = [&](const char* key) {
    auto it = state.find(key);
    WICK_CHECK(it != state.end(), "DataLoader::load_state_dict: the state has no \"", key, "\" (a loader's state_dict "
               "has epoch, batches, seed, batch_size, world_size, rank, dataset_size, shuffle, drop_last, num_workers)");
    WICK_CHECK(it->second.dtype() == DType::Int64 && it->second.numel() == 1, "DataLoader::load_state_dict: \"", key,
               "\" must be one int64, got ", dtype_name(it->second.dtype()), " of shape ", shape_str(it->second.shape()));
    return it->second.item<int64_t>();
  };
  const int64_t epoch = entry("epoch"), batches = entry("batches");
  const auto seed = static_cast<uint64_t>(entry("seed"));
  WICK_CHECK(epoch >= 0 && batches >= 0, "DataLoader::load_state_dict: epoch ", epoch, " and batches ", batches,
             " must be >= 0");
  // What decides which examples a batch position holds must be what it was.
  auto same = [&](const char* key, int64_t here, const char* why) {
    const int64_t saved = entry(key);
    WICK_CHECK(saved == here, "DataLoader::load_state_dict: the state is of a loader with ", key, " ", saved,
               ", this one has ", here, " (", why, "); resume with the same ", key,
               " or start the epoch afresh with start_epoch(epoch, 0)");
  };
  same("batch_size", s.opt.batch_size, "the position counts batches");
  same("world_size", s.opt.world_size, "the shards would be others");
  same("rank", s.opt.rank, "the shards would be others");
  same("dataset_size", s.map ? s.map->size() : -1, "the order would be another");
  same("shuffle", s.opt.shuffle ? 1 : 0, "the order would be another");
  same("drop_last", s.opt.drop_last ? 1 : 0, "the batches would be others");
  if (s.iterable) same("num_workers", s.opt.num_workers, "an iterable dataset's shards are per worker");
  std::shared_ptr<const Sampler> sampler = s.sampler;
  if (s.map) {
    if (s.sampler_from_options && seed != s.opt.seed) {  // the saved seed's, this loader untouched yet
      DataLoaderOptions with_seed = s.opt;
      with_seed.seed = seed;
      sampler = sampler_of_options(s.map->size(), with_seed);
    }
    const int64_t n = static_cast<int64_t>(sampler->indices(epoch).size());
    const int64_t in_epoch = s.opt.drop_last ? n / s.opt.batch_size : (n + s.opt.batch_size - 1) / s.opt.batch_size;
    WICK_CHECK(batches <= in_epoch, "DataLoader::load_state_dict: the state is at batch ", batches, " of epoch ", epoch,
               ", which has ", in_epoch, " batches here");
  }
  s.stop_workers();
  s.opt.seed = seed;
  s.sampler = std::move(sampler);
  s.started = false;
  s.ended = false;
  s.epoch = epoch;
  s.consumed = batches;
  s.loaded = LoaderState{epoch, batches};
}

}  // namespace wick
