// The engine and runner flags shared by sgl-generate, sgl-server and sgl-bench (SGLang's names).
#pragma once

#include <set>
#include <span>
#include <string>
#include <vector>

#include "app/cli_args.h"
#include "app/flag_spec.h"
#include "distributed/bootstrap.h"
#include "engine/engine.h"
#include "runner/model_runner.h"

namespace sgl::app {

// The engine and runner flags (all implemented).
std::span<const FlagSpec> engine_flag_table();
// Flags that take a value / switches, to merge into a tool's own sets.
const std::set<std::string>& engine_value_flags();
const std::set<std::string>& engine_switch_flags();
// --help text for them.
const std::string& engine_flags_usage();

struct EngineSetup {
  runner::ModelRunnerOptions runner;
  engine::EngineOptions engine;
  distributed::MultiNode nodes;  // --nnodes, --node-rank, --dist-init-addr
  // What the flags mean here where SGLang's meaning differs, for the start-up log.
  std::vector<std::string> notes;
};

// The start-up notes for the all-reduce flags `runner` makes change nothing:
// --enable-fp32-all-reduce at one rank or in float32 (its all-reduce already adds f32),
// --disable-custom-all-reduce at one rank or on the CPU (the custom all-reduce is between GPUs).
std::vector<std::string> all_reduce_notes(const runner::ModelRunnerOptions& runner);

// --device auto (or absent), as SGLang's default: "cuda" where this build and the machine have a
// GPU (or where --base-gpu-id, `base_gpu`, names one), with a start-up note of that choice in
// `notes`, "cpu" otherwise; any other name as given.
std::string resolve_device_name(const std::string& name, int64_t base_gpu,
                                std::vector<std::string>& notes);

// Applies --log-level (`default_log_level` when it is not given: sgl-server logs at info, as
// SGLang; the other tools at warning).
Status apply_log_level(const CliArgs& args, const std::string& default_log_level);

// A boolean environment variable as SGLang's EnvBool reads it: 1 / true / yes / y or 0 / false /
// no / n in any case; unset or empty: `default_value`; anything else an error naming it.
Result<bool> env_bool(const char* name, bool default_value);
// Seconds from the environment variable `name`, as SGLang's EnvFloat reads it: unset or empty
// 0, a negative value 0; anything but a finite number an error naming it.
Result<double> env_seconds(const char* name);

// Reads the flags (defaults as SGLang's) and applies --log-level (apply_log_level).
Result<EngineSetup> parse_engine_flags(const CliArgs& args,
                                       const std::string& default_log_level = "warning");

}  // namespace sgl::app
