// The engine and runner flags shared by sgl-generate, sgl-server and sgl-bench (SGLang's names).
#pragma once

#include <set>
#include <string>

#include "app/cli_args.h"
#include "engine/engine.h"
#include "runner/model_runner.h"

namespace sgl::app {

// Flags that take a value / switches, to merge into a tool's own sets.
const std::set<std::string>& engine_value_flags();
const std::set<std::string>& engine_switch_flags();
// Usage lines for them.
const char* engine_flags_usage();

struct EngineSetup {
  runner::ModelRunnerOptions runner;
  engine::EngineOptions engine;
};

// Reads the flags (defaults as SGLang's) and applies --log-level.
Result<EngineSetup> parse_engine_flags(const CliArgs& args);

}  // namespace sgl::app
