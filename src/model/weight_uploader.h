// WeightUploader: copies weights from their files into (device) buffers on several threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "backend/stream.h"
#include "backend/stream_event.h"
#include "core/allocator.h"
#include "core/buffer.h"
#include "core/status.h"
#include "model/weight_source.h"

namespace sgl::model {

// Each worker thread gathers a chunk of a tensor's stored rows from the mapped file into one of
// its two staging slots (pinned for GPUs), queues the slot's copy to the destination on its own
// stream and, when the stored format is not the destination's dtype, converts on the
// destination device; it refills a slot only once that slot's copy is done. So reading the
// files (the bottleneck from a page cache) runs on every worker at once while earlier chunks
// cross the bus. Tensors only the host can convert are read as f32 on the same workers.
//
// Thread-safety: enqueue*() and finish() are called from one thread.
class WeightUploader {
 public:
  struct Options {
    int num_threads = 0;                   // 0: one per core, at most kMaxThreads
    size_t slot_bytes = size_t{16} << 20;  // per staging slot; two slots per worker
  };
  static constexpr int kMaxThreads = 16;

  // Writes into buffers on `device_allocator`'s device, which also provides the workers'
  // conversion scratch.
  WeightUploader(Allocator& device_allocator, Options options);
  // Waits for what is queued (a copy must not outlive the buffer it writes), then stops.
  ~WeightUploader();
  WeightUploader(const WeightUploader&) = delete;
  WeightUploader& operator=(const WeightUploader&) = delete;

  // Whether enqueue() can take `tensor` (a row must fit in a staging slot).
  bool can_stage(const StoredTensor& tensor) const { return tensor.row_bytes <= slot_bytes_; }
  // Queues dst = `tensor`'s values in dst's dtype (dst contiguous, tensor.rows x values per row
  // elements). tensor.data must stay valid until finish() returns.
  void enqueue(StoredTensor tensor, const Tensor& dst);
  // Queues dst = the dst.numel() f32 values `read` writes (on a worker thread), which reads
  // `file_bytes` bytes of its file.
  void enqueue_f32(std::function<Status(float*)> read, const Tensor& dst, uint64_t file_bytes);
  // Blocks until everything queued is in place and returns the first error of any read.
  // Logs progress every few seconds while waiting.
  Status finish();

  // File bytes of everything queued so far.
  uint64_t bytes_queued() const { return bytes_queued_; }

 private:
  struct Slot {
    Buffer host;     // staging: pinned for a GPU destination
    Buffer scratch;  // stored bytes on the device, for conversions there (allocated on demand)
    backend::StreamEvent done;  // the slot's last copy (and conversion)
  };
  struct Worker {
    std::unique_ptr<backend::OwnedStream> stream;
    Slot slots[2];
    int next_slot = 0;
    std::thread thread;
  };
  // Rows [row_begin, row_end) of `tensor` into `dst` (those rows' elements, flattened).
  struct ChunkTask {
    std::shared_ptr<const StoredTensor> tensor;
    int64_t row_begin = 0, row_end = 0;
    Tensor dst;
  };
  struct F32Task {
    std::function<Status(float*)> read;
    Tensor dst;
    uint64_t file_bytes = 0;
  };
  using Task = std::variant<ChunkTask, F32Task>;

  void start_workers();
  void allocate_scratch();  // on this thread: the device allocator is not shared with workers
  void run_worker(Worker& worker);
  Status run_chunk(const ChunkTask& task, Worker& worker);
  Status run_f32(const F32Task& task, Worker& worker);
  void push(Task task, uint64_t bytes);

  Allocator& device_allocator_;
  std::unique_ptr<Allocator> staging_allocator_;
  const Device device_;
  const int num_threads_;
  const size_t slot_bytes_;
  bool scratch_ready_ = false;
  uint64_t bytes_queued_ = 0;
  std::vector<std::unique_ptr<Worker>> workers_;

  std::mutex mutex_;
  std::condition_variable work_ready_;  // tasks_ non-empty or stopping_
  std::condition_variable idle_;        // tasks_ empty and busy_ == 0
  std::deque<Task> tasks_;              // under mutex_
  int busy_ = 0;                        // under mutex_
  bool stopping_ = false;               // under mutex_
  uint64_t bytes_done_ = 0;             // under mutex_
  Status error_;                        // under mutex_: the first failure
};

}  // namespace sgl::model
