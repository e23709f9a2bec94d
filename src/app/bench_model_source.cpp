// bench_model_path: --model-path or --config.
#include "app/bench_model_source.h"

namespace sgl::app {

Result<std::string> bench_model_path(const CliArgs& args, std::string& load_format) {
  const std::optional<std::string> model_path = args.get("--model-path");
  const std::optional<std::string> config_path = args.get("--config");
  if (model_path.has_value() == config_path.has_value()) {
    return invalid_argument("give exactly one of --model-path and --config");
  }
  if (model_path) return *model_path;
  if (!args.has("--load-format")) load_format = "dummy";
  return *config_path;
}

}  // namespace sgl::app
