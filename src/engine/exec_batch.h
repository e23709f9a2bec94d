// Translation of the scheduler's ScheduleBatch into the runner's ExecBatch (host values only).
#pragma once

#include <span>

#include "runner/batch_executor.h"
#include "scheduler/schedule_batch.h"

namespace sgl::engine {

// `eos_token_ids`: the model's EOS ids, masked (with each request's stop_token_ids) while a
// request has generated fewer than its min_new_tokens.
runner::ExecBatch to_exec_batch(const scheduler::ScheduleBatch& batch,
                                std::span<const int32_t> eos_token_ids = {});

}  // namespace sgl::engine
