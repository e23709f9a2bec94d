// parse_weight_quantization: config.json's quantization_config -> WeightQuantization.
#include "model/weight_quantization.h"

#include <nlohmann/json.hpp>

namespace sgl::model {
namespace {

using Json = nlohmann::json;

constexpr const char* kSupported =
    "sgl.cpp loads FP8 (E4M3) weights: quant_method fp8, compressed-tensors with 8-bit float "
    "weights, modelopt FP8";

// A key's value; null counts as absent (transformers' None).
const Json* field(const Json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string spelled(const Json* value) {
  if (value == nullptr) return "(none given)";
  return value->is_string() ? "'" + value->get<std::string>() + "'" : value->dump();
}

Status refuse(const std::string& source, const std::string& what) {
  return unimplemented(source + ": quantization_config " + what + " is not supported (" +
                       kSupported + ")");
}

// [rows, cols] of positive integers.
Result<std::vector<int64_t>> block_shape(const Json& value, const std::string& source,
                                         const std::string& key) {
  std::vector<int64_t> block;
  if (value.is_array() && value.size() == 2) {
    for (const Json& n : value) {
      if (!n.is_number_integer() || n.get<int64_t>() <= 0) break;
      block.push_back(n.get<int64_t>());
    }
  }
  if (block.size() != 2) {
    return invalid_argument(source + ": field 'quantization_config." + key +
                            "' must be two positive integers, got " + value.dump());
  }
  return block;
}

Result<WeightQuantization> parse_fp8(const Json& q, const std::string& source) {
  WeightQuantization out{"fp8", {}};
  if (const Json* fmt = field(q, "fmt"); fmt != nullptr && *fmt != "e4m3") {
    return refuse(source, "fp8 with fmt " + spelled(fmt));
  }
  if (const Json* block = field(q, "weight_block_size")) {
    SGL_ASSIGN_OR_RETURN(out.block_size, block_shape(*block, source, "weight_block_size"));
  }
  return out;
}

// Every config group must quantize weights to 8-bit floats, all with one block shape.
Result<WeightQuantization> parse_compressed_tensors(const Json& q, const std::string& source) {
  WeightQuantization out{"compressed-tensors", {}};
  const Json* format = field(q, "format");
  if (format == nullptr || (*format != "float-quantized" && *format != "naive-quantized")) {
    return refuse(source, "compressed-tensors with format " + spelled(format));
  }
  if (const Json* sparsity = field(q, "sparsity_config");
      sparsity != nullptr && sparsity->is_object() && field(*sparsity, "format") != nullptr &&
      *field(*sparsity, "format") != "dense") {
    return refuse(source, "compressed-tensors with a sparsity_config");
  }
  const Json* groups = field(q, "config_groups");
  if (groups == nullptr || !groups->is_object() || groups->empty()) {
    return invalid_argument(source + ": quantization_config.config_groups must be a non-empty " +
                            "object of quantization schemes");
  }
  bool first = true;
  for (const auto& [name, group] : groups->items()) {
    const std::string where = "compressed-tensors config group '" + name + "'";
    const Json* weights = group.is_object() ? field(group, "weights") : nullptr;
    if (weights == nullptr || !weights->is_object()) {
      return refuse(source, where + " without weight quantization");
    }
    const Json* bits = field(*weights, "num_bits");
    const Json* type = field(*weights, "type");
    if (bits == nullptr || *bits != 8 || type == nullptr || *type != "float") {
      return refuse(source,
                    where + " with " + spelled(bits) + "-bit " + spelled(type) + " weights");
    }
    const Json* strategy = field(*weights, "strategy");
    std::vector<int64_t> block;
    if (strategy != nullptr && *strategy == "block") {
      const Json* structure = field(*weights, "block_structure");
      if (structure == nullptr) {
        return invalid_argument(source + ": " + where + " has strategy block and no " +
                                "block_structure");
      }
      SGL_ASSIGN_OR_RETURN(block, block_shape(*structure, source, "block_structure"));
    } else if (strategy == nullptr || (*strategy != "tensor" && *strategy != "channel")) {
      return refuse(source, where + " with weight strategy " + spelled(strategy));
    }
    if (!first && block != out.block_size) {
      return refuse(source, "compressed-tensors groups with different weight block shapes");
    }
    out.block_size = std::move(block);
    first = false;
  }
  return out;
}

Result<WeightQuantization> parse_modelopt(const Json& q, const std::string& source) {
  // The algorithm at the top (transformers' form) or under "quantization" (hf_quant_config's).
  const Json* algo = field(q, "quant_algo");
  if (algo == nullptr) {
    if (const Json* inner = field(q, "quantization"); inner != nullptr && inner->is_object()) {
      algo = field(*inner, "quant_algo");
    }
  }
  if (algo == nullptr || *algo != "FP8")
    return refuse(source, "modelopt with quant_algo " + spelled(algo));
  return WeightQuantization{"modelopt", {}};
}

}  // namespace

std::string WeightQuantization::describe() const {
  if (!quantized()) return "none";
  if (block_size.empty()) return method + ", a scale per tensor or output channel";
  return method + ", " + std::to_string(block_size[0]) + " x " + std::to_string(block_size[1]) +
         " blocks";
}

Result<WeightQuantization> parse_weight_quantization(const Json& config,
                                                     const std::string& source) {
  const Json* q = field(config, "quantization_config");
  if (q == nullptr) q = field(config, "compression_config");
  if (q == nullptr) return WeightQuantization{};
  const Json* method = q->is_object() ? field(*q, "quant_method") : nullptr;
  if (method != nullptr && *method == "fp8") return parse_fp8(*q, source);
  if (method != nullptr && *method == "compressed-tensors") {
    return parse_compressed_tensors(*q, source);
  }
  if (method != nullptr && *method == "modelopt") return parse_modelopt(*q, source);
  return refuse(source, "with quant_method " + spelled(method));
}

Result<WeightQuantization> parse_hf_quant_config(const Json& file, const std::string& source) {
  if (!file.is_object()) return invalid_argument(source + ": top level must be a JSON object");
  return parse_modelopt(file, source);
}

}  // namespace sgl::model
