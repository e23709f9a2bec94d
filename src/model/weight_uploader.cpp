// WeightUploader: staging workers, chunking, device-side conversion and progress.
#include "model/weight_uploader.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>

#include "backend/backend.h"
#include "core/logging.h"
#include "kernels/convert_stored.h"
#include "kernels/copy.h"

namespace sgl::model {
namespace {

bool stored_as(kernels::StoredFormat format, DType dtype) {
  switch (format) {
    case kernels::StoredFormat::kF32:
      return dtype == DType::kF32;
    case kernels::StoredFormat::kF16:
      return dtype == DType::kF16;
    case kernels::StoredFormat::kBF16:
      return dtype == DType::kBF16;
    default:
      return false;
  }
}

int default_threads() {
  const auto cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores, 1, WeightUploader::kMaxThreads);
}

// A flat view of `t`'s elements [element_begin, element_begin + count).
Tensor flat_elements(const Tensor& t, int64_t element_begin, int64_t count) {
  auto* base = static_cast<uint8_t*>(t.raw()) + element_begin * dtype_size(t.dtype());
  return Tensor(base, t.dtype(), {count}, t.device());
}

double gb(uint64_t bytes) { return static_cast<double>(bytes) / 1e9; }

}  // namespace

WeightUploader::WeightUploader(Allocator& device_allocator, Options options)
    : device_allocator_(device_allocator),
      staging_allocator_(backend::create_staging_allocator(device_allocator.device())),
      device_(device_allocator.device()),
      num_threads_(options.num_threads > 0 ? std::min(options.num_threads, kMaxThreads)
                                           : default_threads()),
      slot_bytes_(options.slot_bytes) {}

WeightUploader::~WeightUploader() {
  (void)finish();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& w : workers_) w->thread.join();
}

void WeightUploader::start_workers() {
  if (!workers_.empty()) return;
  for (int i = 0; i < num_threads_; ++i) {
    auto worker = std::make_unique<Worker>();
    worker->stream = backend::create_copy_stream(device_);
    for (Slot& slot : worker->slots) {
      slot.host =
          Buffer(*staging_allocator_, DType::kF32, {static_cast<int64_t>((slot_bytes_ + 3) / 4)});
    }
    workers_.push_back(std::move(worker));
  }
  for (auto& w : workers_) w->thread = std::thread([this, &w = *w] { run_worker(w); });
}

void WeightUploader::allocate_scratch() {
  if (scratch_ready_ || device_.is_cpu()) return;  // the host converts from the slot itself
  // NOTE: the workers only read a slot's scratch after popping a task pushed after this
  // (the queue's mutex orders the two).
  std::lock_guard lock(mutex_);
  for (auto& w : workers_) {
    for (Slot& slot : w->slots) {
      slot.scratch =
          Buffer(device_allocator_, DType::kF32, {static_cast<int64_t>((slot_bytes_ + 3) / 4)});
    }
  }
  scratch_ready_ = true;
}

void WeightUploader::push(Task task, uint64_t bytes) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  bytes_queued_ += bytes;
  work_ready_.notify_one();
}

void WeightUploader::enqueue(StoredTensor tensor, const Tensor& dst) {
  SGL_CHECK(can_stage(tensor) && tensor.rows > 0 && dst.numel() % tensor.rows == 0 &&
            dst.is_contiguous())
      << "WeightUploader: " << tensor.rows << " rows of " << tensor.row_bytes << " bytes into "
      << dst.shape_string();
  start_workers();
  if (!stored_as(tensor.format, dst.dtype())) allocate_scratch();
  const int64_t per_row = dst.numel() / tensor.rows;
  const auto rows_per_chunk = static_cast<int64_t>(
      std::max<size_t>(1, slot_bytes_ / std::max<size_t>(1, tensor.row_bytes)));
  auto shared = std::make_shared<const StoredTensor>(std::move(tensor));
  for (int64_t begin = 0; begin < shared->rows; begin += rows_per_chunk) {
    const int64_t end = std::min(shared->rows, begin + rows_per_chunk);
    push(
        ChunkTask{shared, begin, end, flat_elements(dst, begin * per_row, (end - begin) * per_row)},
        static_cast<uint64_t>(end - begin) * shared->row_bytes);
  }
}

void WeightUploader::enqueue_f32(std::function<Status(float*)> read, const Tensor& dst,
                                 uint64_t file_bytes) {
  SGL_CHECK(dst.is_contiguous()) << "WeightUploader: non-contiguous " << dst.shape_string();
  start_workers();
  push(F32Task{std::move(read), dst, file_bytes}, file_bytes);
}

Status WeightUploader::finish() {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto next_report = start + std::chrono::seconds(3);
  std::unique_lock lock(mutex_);
  while (!tasks_.empty() || busy_ > 0) {
    if (idle_.wait_until(lock, next_report) == std::cv_status::timeout) {
      char line[96];
      std::snprintf(line, sizeof line, "loading weights: %.1f of %.1f GB read", gb(bytes_done_),
                    gb(bytes_queued_));
      SGL_LOG_INFO << line;
      next_report += std::chrono::seconds(3);
    }
  }
  lock.unlock();
  // Every chunk is read; wait for the copies (and conversions) still on the streams.
  for (auto& w : workers_) backend::synchronize(w->stream->get());
  lock.lock();
  return error_;
}

void WeightUploader::run_worker(Worker& worker) {
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping
      task = std::move(tasks_.front());
      tasks_.pop_front();
      ++busy_;
    }
    uint64_t bytes = 0;
    Status status;
    try {
      if (const auto* chunk = std::get_if<ChunkTask>(&task)) {
        bytes = static_cast<uint64_t>(chunk->row_end - chunk->row_begin) * chunk->tensor->row_bytes;
        status = run_chunk(*chunk, worker);
      } else {
        const auto& f32 = std::get<F32Task>(task);
        bytes = f32.file_bytes;
        status = run_f32(f32, worker);
      }
    } catch (const std::bad_alloc&) {
      status = resource_exhausted("out of host memory while loading weights");
    }
    task = Task();  // drop the tensor before reporting idle
    std::lock_guard lock(mutex_);
    --busy_;
    bytes_done_ += bytes;
    if (!status.ok() && error_.ok()) error_ = std::move(status);
    if (tasks_.empty() && busy_ == 0) idle_.notify_all();
  }
}

Status WeightUploader::run_chunk(const ChunkTask& task, Worker& worker) {
  const StoredTensor& t = *task.tensor;
  Slot& slot = worker.slots[worker.next_slot];
  worker.next_slot ^= 1;
  slot.done.synchronize();  // the slot's previous copy has left it
  auto* staged = static_cast<uint8_t*>(slot.host.tensor().raw());
  const size_t row = t.row_bytes;
  const size_t bytes = static_cast<size_t>(task.row_end - task.row_begin) * row;
  if (t.row_order.empty() && t.stride() == row) {
    std::memcpy(staged, t.data + static_cast<size_t>(task.row_begin) * row, bytes);
  } else {
    for (int64_t r = task.row_begin; r < task.row_end; ++r) {
      const int64_t from = t.row_order.empty() ? r : t.row_order[r];
      std::memcpy(staged + static_cast<size_t>(r - task.row_begin) * row,
                  t.data + static_cast<size_t>(from) * t.stride(), row);
    }
  }
  const backend::Stream stream = worker.stream->get();
  const Device host = slot.host.tensor().device();
  if (stored_as(t.format, task.dst.dtype())) {
    kernels::copy_bytes_async(staged, host, task.dst.raw(), device_, bytes, stream);
  } else if (device_.is_cpu()) {
    kernels::convert_stored(staged, t.format, task.dst, stream);
  } else {
    void* scratch = slot.scratch.tensor().raw();
    kernels::copy_bytes_async(staged, host, scratch, device_, bytes, stream);
    kernels::convert_stored(scratch, t.format, task.dst, stream);
  }
  slot.done.record(stream);
  return Status::ok_status();
}

Status WeightUploader::run_f32(const F32Task& task, Worker& worker) {
  const Tensor& dst = task.dst;
  if (dst.device().is_cpu() && dst.dtype() == DType::kF32) return task.read(dst.data<float>());
  std::vector<float> values(static_cast<size_t>(dst.numel()));
  SGL_RETURN_IF_ERROR(task.read(values.data()));
  const backend::Stream stream = worker.stream->get();
  Tensor as_f32(values.data(), DType::kF32, {dst.numel()});
  Buffer converted(cpu_allocator(), dst.dtype(), {dst.numel()});
  kernels::copy(as_f32, converted, stream);  // host dtype conversion
  kernels::copy_bytes_async(converted.tensor().raw(), Device::cpu(), dst.raw(), dst.device(),
                            dst.nbytes(), stream);
  backend::synchronize(stream);  // the host copies die at return
  return Status::ok_status();
}

}  // namespace sgl::model
