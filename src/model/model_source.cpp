// open_model_source: format detection and opening of config + weights for either format.
#include "model/model_source.h"

#include <system_error>

#include "model/gguf.h"
#include "model/gguf_config.h"
#include "model/gguf_weight_source.h"

namespace sgl::model {

Result<ModelSource> open_model_source(const std::filesystem::path& path,
                                      const ModelSourceOptions& options) {
  ModelSource source;
  source.path = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return not_found(path.string() + ": no such model directory or GGUF file");
  }
  if (std::filesystem::is_regular_file(path, ec) && path.extension() == ".json") {
    // A bare config.json (sgl-bench --config): enough for dummy weights.
    if (options.open_weights) {
      return invalid_argument(path.string() +
                              ": a config file has no weights (use --load-format dummy)");
    }
    source.format = ModelFormat::kHuggingFace;
    SGL_ASSIGN_OR_RETURN(source.config, load_model_config_file(path));
    return source;
  }
  if (std::filesystem::is_regular_file(path, ec)) {
    if (!is_gguf_file(path)) {
      return invalid_argument(path.string() +
                              ": not a GGUF file (no 'GGUF' magic) and not a model directory");
    }
    source.format = ModelFormat::kGguf;
    SGL_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(path));
    SGL_ASSIGN_OR_RETURN(source.config, model_config_from_gguf(file));
    if (options.open_weights) {
      source.weights = std::make_unique<GgufWeightSource>(std::move(file), source.config);
    }
    return source;
  }
  source.format = ModelFormat::kHuggingFace;
  SGL_ASSIGN_OR_RETURN(source.config, load_model_config(path));
  if (options.open_weights) {
    SGL_ASSIGN_OR_RETURN(source.weights, SafetensorsWeightSource::open(path));
  }
  return source;
}

}  // namespace sgl::model
