// SGLang's --lora-paths values: NAME=PATH, PATH (named by itself), or a JSON object
// {"lora_name": ..., "lora_path": ..., "pinned": ...}.
#pragma once

#include <string_view>
#include <vector>

#include "app/cli_args.h"
#include "core/status.h"
#include "model/lora_adapter.h"
#include "runner/model_runner.h"
#include "scheduler/scheduler_options.h"

namespace sgl::app {

// `joined`: the flag's values as the parser joins them (by spaces; a JSON object's own spaces
// are rejoined). Names must be unique and non-empty.
Result<std::vector<model::LoraAdapterPath>> parse_lora_paths(std::string_view joined);

// SGLang's LoRA flags into the runner's adapters, rank and module bounds (which the model checks
// each adapter's config against as it reads it) and the scheduler's bound, checked: LoRA on the
// CPU, at one rank, without speculative decoding; --max-loaded-loras holding every adapter.
// `notes`: the flags that change nothing without LoRA.
Status parse_lora_flags(const CliArgs& args, bool speculative, runner::ModelRunnerOptions& runner,
                        scheduler::SchedulerOptions& scheduler, std::vector<std::string>& notes);

}  // namespace sgl::app
