// StreamEvent: a marker in a stream's queue of work, so the host or another stream can wait for
// the work queued before it (RAII, move-only). CUDA: a cudaEvent_t without timing. CPU streams
// run their work inline, so there every event is complete and waiting does nothing.
#pragma once

#include "backend/stream.h"
#include "core/device.h"

namespace sgl::backend {

class StreamEvent {
 public:
  StreamEvent() = default;  // empty: record() creates it on the stream's device
  ~StreamEvent();
  StreamEvent(StreamEvent&& other) noexcept;
  StreamEvent& operator=(StreamEvent&& other) noexcept;
  StreamEvent(const StreamEvent&) = delete;
  StreamEvent& operator=(const StreamEvent&) = delete;

  // Marks the work queued on `stream` so far (replacing an earlier mark).
  void record(Stream stream);
  // Blocks the host until the marked work is done (at once when nothing was recorded).
  void synchronize() const;
  // Work queued on `stream` after this call starts only once the marked work is done; the host
  // does not block.
  void make_wait(Stream stream) const;

 private:
  void* native_ = nullptr;  // cudaEvent_t, created on the first CUDA record()
};

}  // namespace sgl::backend
