#include <wick/distributed/data_parallel/data_parallel_sync.h>

#include <map>
#include <utility>

#include <wick/autograd/grad_mode.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>

namespace wick::distributed {

const char* shard_strategy_name(ShardStrategy s) {
  switch (s) {
    case ShardStrategy::None: return "none";
    case ShardStrategy::Optimizer: return "optimizer";
    case ShardStrategy::Gradients: return "gradients";
    case ShardStrategy::Full: return "full";
  }
  return "?";
}

DataParallelSync::DataParallelSync(Communicator& comm, Module& module, DataParallelOptions options)
    : comm_(comm), options_(options), params_(module.parameters()), module_(module) {
  WICK_CHECK(options_.bucket_bytes > 0, "DataParallelSync: bucket_bytes must be > 0, got ", options_.bucket_bytes);
  WICK_CHECK(
      !options_.reduce_dtype || *options_.reduce_dtype == DType::BFloat16 || *options_.reduce_dtype == DType::Float16,
      "DataParallelSync: reduce_dtype must be bfloat16 or float16, got ",
      options_.reduce_dtype ? dtype_name(*options_.reduce_dtype) : "");
  // Buckets hold parameters of one dtype and device, filled in reverse registration order.
  bucket_of_.assign(params_.size(), 0);
  std::map<std::pair<DType, std::string>, size_t> open;  // the bucket being filled per kind
  std::vector<int64_t> bytes;
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& p = params_[k].data();
    auto kind = std::make_pair(p.dtype(), p.device().str());
    auto it = open.find(kind);
    if (it == open.end() || bytes[it->second] >= options_.bucket_bytes) {
      buckets_.emplace_back();
      bytes.push_back(0);
      it = open.insert_or_assign(kind, buckets_.size() - 1).first;
    }
    Bucket& b = buckets_[it->second];
    b.offsets.push_back(b.params.empty() ? 0 : b.offsets.back() + params_[b.params.back()].numel());
    b.params.push_back(k);
    bytes[it->second] += static_cast<int64_t>(p.nbytes());
    bucket_of_[k] = it->second;
  }
  for (Bucket& b : buckets_) {
    const Tensor& first = params_[b.params.front()].data();
    int64_t numel = b.offsets.back() + params_[b.params.back()].numel();
    // Compressed: wider floating gradients travel in reduce_dtype (converted by the copies
    // into and out of the bucket, so no extra pass).
    const bool compress = options_.reduce_dtype && is_floating(first.dtype()) &&
                          element_size(first.dtype()) > element_size(*options_.reduce_dtype);
    b.flat = zeros({numel}, Options(compress ? *options_.reduce_dtype : first.dtype(), first.device()));
  }
  final_.assign(params_.size(), false);
  for (size_t k = 0; k < params_.size(); ++k)
    hooks_.push_back(
        params_[k].register_post_accumulate_grad_hook([this, k](const Variable&) { on_gradient_final(k); }));
}

DataParallelSync::~DataParallelSync() {
  for (size_t k = 0; k < params_.size(); ++k) params_[k].remove_hook(hooks_[k]);
  // Pending collectives read and write the buckets and the count (armed, then an error
  // before the step): let them finish (or fail) first.
  std::vector<std::shared_ptr<Work>> pending;
  for (Bucket& b : buckets_) pending.push_back(b.work);
  pending.push_back(count_work_);
  for (const auto& work : pending)
    if (work) try {
        work->wait();
      } catch (const Error&) {
      }
}

std::vector<double> DataParallelSync::sum(std::vector<double> values) {
  return sum_over_ranks(comm_, std::move(values));
}

int64_t DataParallelSync::max(int64_t value) { return max_over_ranks(comm_, value); }

void DataParallelSync::start(double examples, int64_t /*earlier_backwards*/) {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = true;
  next_launch_ = 0;
  final_.assign(params_.size(), false);
  for (Bucket& b : buckets_) {
    b.pending = b.params.size();
    b.work.reset();
  }
  // Issued before the buckets on every rank; it travels while the forward runs.
  count_ = full({1}, examples, Options(DType::Float64, comm_.device()));
  count_work_ = comm_.all_reduce({count_}, ReduceOp::Sum);
  count_ready_ = false;
}

Tensor DataParallelSync::count_before_backward() {
  WICK_CHECK(count_work_, "DataParallelSync: the example count asked for before arm");
  if (!count_ready_) count_work_->wait();
  count_ready_ = true;
  return count_.view({});
}

void DataParallelSync::on_gradient_final(size_t param) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_ || final_[param]) return;
  final_[param] = true;
  Bucket& b = buckets_[bucket_of_[param]];
  if (--b.pending == 0) launch_in_order();
}

namespace {
bool same_memory(const Tensor& a, const Tensor& b) { return a.shares_storage(b) && a.offset() == b.offset(); }
}  // namespace

Tensor DataParallelSync::slot(const Bucket& b, size_t i) const {
  const Variable& p = params_[b.params[i]];
  return b.flat.narrow(0, b.offsets[i], p.numel()).view(p.shape());
}

void DataParallelSync::fill(Bucket& b) {
  NoGradGuard no_grad;
  for (size_t i = 0; i < b.params.size(); ++i) {
    const Variable& p = params_[b.params[i]];
    Tensor s = slot(b, i);
    if (!p.grad().defined()) s.zero_();         // unused here, or this rank ran no backward: it adds nothing
    else if (!same_memory(p.grad().data(), s))  // a gradient left as the last sum's view is in place
      s.copy_(p.grad().data());
  }
}

void DataParallelSync::launch_in_order() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& b = buckets_[next_launch_++];
    fill(b);
    b.work = comm_.all_reduce({b.flat}, ReduceOp::Sum);
  }
}

void DataParallelSync::launch_reduction() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_) return;  // launched already (the Trainer's non-blocking steps)
  for (Bucket& b : buckets_) b.pending = 0;
  launch_in_order();
  armed_ = false;
}

void DataParallelSync::reduce(double /*examples*/, bool divide) {
  WICK_CHECK(count_work_, "DataParallelSync: the gradient reduction was not armed");
  launch_reduction();
  std::vector<std::shared_ptr<Work>> works;
  for (Bucket& b : buckets_) works.push_back(b.work);
  if (!count_ready_) works.push_back(count_work_);
  count_work_.reset();
  wait_all(works);
  // Read back (a device-to-host copy) only when it divides: the seed's means need no count.
  const double count = divide ? count_.cpu().item<double>() : 0.0;
  divide = count > 0;  // a count of 0: every gradient is zero
  NoGradGuard no_grad;
  for (Bucket& b : buckets_) {
    // The sums stay in the bucket: each gradient becomes its slot, a view (no copy out),
    // unless the bucket travels compressed in a narrower dtype than the parameters, whose
    // gradients are divided after the copy back, at their own precision.
    const bool views = b.flat.dtype() == params_[b.params.front()].dtype();
    if (views && divide) b.flat.mul_(1.0 / count);
    std::vector<Variable> copied;
    for (size_t i = 0; i < b.params.size(); ++i) {
      Variable p = params_[b.params[i]];
      const Tensor summed = slot(b, i);
      if (views) {
        p.set_grad(Variable(summed));
        continue;
      }
      if (p.grad().defined()) p.grad().data().copy_(summed);
      else p.set_grad(Variable(summed.to(p.dtype())));
      copied.push_back(p);
    }
    if (divide) divide_gradients(copied, count);
    b.work.reset();
  }
}

void broadcast_values(Communicator& comm, std::vector<Tensor> tensors, int root) {
  // One collective per (dtype, device), issued in the same order on every rank; the
  // collectives need contiguous tensors, so others are staged and copied back.
  std::map<std::pair<DType, std::string>, std::vector<size_t>> groups;
  for (size_t i = 0; i < tensors.size(); ++i) groups[{tensors[i].dtype(), tensors[i].device().str()}].push_back(i);
  std::vector<Tensor> staged(tensors.size());
  std::vector<std::shared_ptr<Work>> works;
  for (const auto& [kind, members] : groups) {
    std::vector<Tensor> group;
    for (size_t i : members) group.push_back(staged[i] = tensors[i].contiguous());
    works.push_back(comm.broadcast(group, root));
  }
  wait_all(works);
  for (size_t i = 0; i < tensors.size(); ++i)
    if (!staged[i].shares_storage(tensors[i]) || staged[i].offset() != tensors[i].offset()) tensors[i].copy_(staged[i]);
}

void DataParallelSync::broadcast_parameters(int root) {
  std::vector<Tensor> values;
  for (const Variable& p : params_) values.push_back(p.data());
  broadcast_values(comm_, values, root);
}

void DataParallelSync::broadcast_buffers(int root) { broadcast_values(comm_, module_.buffers(), root); }

void DataParallelSync::after_step() {
  if (options_.only_driver_steps) broadcast_parameters(0);
}

}  // namespace wick::distributed
