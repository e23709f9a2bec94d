// Translation of the scheduler's ScheduleBatch into the runner's ExecBatch (host values only).
#pragma once

#include "runner/batch_executor.h"
#include "scheduler/schedule_batch.h"

namespace sgl::engine {

runner::ExecBatch to_exec_batch(const scheduler::ScheduleBatch& batch);

}  // namespace sgl::engine
