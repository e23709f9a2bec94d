// open_model_source: format detection and opening of config + weights for either format.
#include "model/model_source.h"

#include <algorithm>
#include <cctype>
#include <system_error>

#include "core/logging.h"
#include "model/fp8_weight_source.h"
#include "model/gguf.h"
#include "model/gguf_config.h"
#include "model/gguf_weight_source.h"

namespace sgl::model {

bool looks_like_hub_repo_id(std::string_view path) {
  const size_t slash = path.find('/');
  if (slash == 0 || slash == std::string_view::npos || slash + 1 == path.size() ||
      path.find('/', slash + 1) != std::string_view::npos || path.front() == '.' ||
      path.front() == '~') {
    return false;
  }
  return std::all_of(path.begin(), path.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '/';
  });
}

Result<ModelFormat> check_model_path(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  const std::string name = path.string();
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) {
    if (looks_like_hub_repo_id(name)) {
      return not_found("no such file or directory: " + name +
                       " (a Hugging Face repo id? sgl.cpp downloads nothing: fetch it with `hf "
                       "download " +
                       name + " --local-dir DIR` and pass --model-path DIR)");
    }
    return not_found("no such file or directory: " + name);
  }
  if (ec) return invalid_argument("cannot inspect " + name + ": " + ec.message());
  if (fs::is_directory(status)) {
    const fs::file_status config = fs::status(path / "config.json", ec);
    if (fs::exists(config)) return ModelFormat::kHuggingFace;  // read_small_file refuses a FIFO
    if (path.extension() == ".gguf") {
      return invalid_argument("not a regular file: " + name +
                              " (a directory; a GGUF model is a single .gguf file)");
    }
    return not_found(name +
                     ": not a model directory: it has no config.json (expected a Hugging Face "
                     "model directory or a .gguf file)");
  }
  if (!fs::is_regular_file(status)) {
    return invalid_argument("not a regular file: " + name +
                            " (expected a model directory or a .gguf file)");
  }
  if (is_gguf_file(path)) return ModelFormat::kGguf;
  if (path.extension() == ".json") return ModelFormat::kConfigFile;
  return invalid_argument(name + ": not a GGUF file (no 'GGUF' magic) and not a model directory");
}

Result<ModelSource> open_model_source(const std::filesystem::path& path,
                                      const ModelSourceOptions& options) {
  ModelSource source;
  source.path = path;
  SGL_ASSIGN_OR_RETURN(source.format, check_model_path(path));
  switch (source.format) {
    case ModelFormat::kConfigFile: {
      // A bare config.json (sgl-bench --config): enough for dummy weights.
      if (options.open_weights) {
        return invalid_argument(path.string() +
                                ": a config file has no weights (use --load-format dummy)");
      }
      SGL_ASSIGN_OR_RETURN(source.config, load_model_config_file(path, options.config_overrides));
      return source;
    }
    case ModelFormat::kGguf: {
      if (!options.config_overrides.empty()) return gguf_config_overrides_error(path);
      SGL_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(path));
      SGL_ASSIGN_OR_RETURN(source.config, model_config_from_gguf(file));
      if (options.open_weights) {
        source.weights = std::make_unique<GgufWeightSource>(std::move(file), source.config);
      }
      return source;
    }
    case ModelFormat::kHuggingFace:
      break;
  }
  SGL_ASSIGN_OR_RETURN(source.config, load_model_config(path, options.config_overrides));
  if (!options.open_weights) return source;
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsWeightSource> weights,
                       SafetensorsWeightSource::open(path));
  if (!source.config.quantization.quantized()) {
    source.weights = std::move(weights);
    return source;
  }
  SGL_LOG_INFO << path.string() << ": FP8 weights (" << source.config.quantization.describe()
               << ") are multiplied by their scales as they load, into the model's dtype: no "
                  "kernel reads FP8, so they take that dtype's memory";
  source.weights =
      std::make_unique<Fp8WeightSource>(std::move(weights), source.config.quantization);
  return source;
}

}  // namespace sgl::model
