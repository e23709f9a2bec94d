// PausedInPlace: the engines paused in place while a route changes what their batches read
// (weights, LoRA adapters): the batches in flight finish, the running requests go on after.
#pragma once

#include "engine/data_parallel_controller.h"

namespace sgl::server {

// The engines paused in place for the guard's life (the batches in flight finish; running
// requests go on afterwards), unless they already were; keep() leaves them paused.
class PausedInPlace {
 public:
  explicit PausedInPlace(engine::DataParallelController& engine)
      : engine_(engine), was_paused_(engine.paused()) {
    if (!was_paused_) engine_.pause_generation(engine::PauseMode::kInPlace);
  }
  ~PausedInPlace() {
    if (!was_paused_ && !keep_) engine_.continue_generation();
  }
  PausedInPlace(const PausedInPlace&) = delete;
  PausedInPlace& operator=(const PausedInPlace&) = delete;
  void keep() { keep_ = true; }

 private:
  engine::DataParallelController& engine_;
  const bool was_paused_;
  bool keep_ = false;
};

}  // namespace sgl::server
