// The model an sgl-bench subcommand runs on.
#pragma once

#include <string>

#include "app/cli_args.h"

namespace sgl::app {

// Exactly one of --model-path DIR|FILE.gguf and --config CONFIG.json (a bare config with random
// weights); returns that path. For --config, `load_format` becomes "dummy" unless --load-format
// was given.
Result<std::string> bench_model_path(const CliArgs& args, std::string& load_format);

}  // namespace sgl::app
