// libFuzzer target: the input is a GGUF file, opened in memory and taken as far as a load goes
// without allocating a model: metadata, config, weight checks and a few small tensor reads.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/config_bounds.h"
#include "model/gguf.h"
#include "model/gguf_config.h"
#include "model/gguf_weight_source.h"
#include "model/model_registry.h"
#include "model/weight_loader.h"

namespace {

using namespace sgl::model;

constexpr size_t kMaxItemsTouched = 64;
constexpr int64_t kMaxReadElements = int64_t{1} << 20;  // bounds one input's memory
constexpr int kMaxReads = 4;

// Reads back a few items of every array, nested ones included.
void touch(const GgufArray& array, int depth) {
  for (size_t i = 0; i < array.size() && i < kMaxItemsTouched; ++i) {
    switch (array.element_type()) {
      case GgufValueType::kString:
        (void)array.string_at(i).size();
        break;
      case GgufValueType::kArray:
        if (depth < 8) touch(array.array_at(i), depth + 1);
        break;
      default:
        (void)array.int_at(i);
        (void)array.float_at(i);
        (void)array.bool_at(i);
    }
  }
  (void)array.type_description();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sgl::Result<GgufFile> file = GgufFile::from_bytes(std::span(data, size), "fuzz.gguf",
                                                    {.max_header_bytes = uint64_t{64} << 20});
  if (!file.ok()) return 0;
  for (const auto& [key, value] : file->metadata().entries()) {
    (void)value.as_int();
    (void)value.as_float();
    if (const GgufArray* array = value.as_array()) touch(*array, 0);
  }
  (void)file->metadata().get_string_array("tokenizer.ggml.tokens");
  (void)file->metadata().get_float_array("tokenizer.ggml.scores");

  sgl::Result<ModelConfig> config = model_config_from_gguf(*file);
  if (!config.ok()) return 0;
  (void)check_context_length(*config, config->max_position_embeddings, "fuzz.gguf");
  const GgufWeightSource source(std::move(file).value(), *config);

  // The checking half of a load: every tensor the config implies, nothing allocated.
  WeightLoader loader(&source, sgl::cpu_allocator(), sgl::DType::kF32, sgl::backend::Stream{});
  (void)plan_model(*config, loader, ModelOptions{16, 4, 16});

  int reads = 0;
  for (const std::string& name : source.names()) {
    sgl::Result<std::vector<int64_t>> shape = source.shape(name);
    if (!shape.ok()) continue;
    int64_t n = 1;
    for (int64_t d : *shape) n = d > 0 && n <= kMaxReadElements / d ? n * d : kMaxReadElements + 1;
    if (n > kMaxReadElements) continue;
    std::vector<float> values(static_cast<size_t>(n));
    (void)source.read_f32(name, *shape, values.data());
    if (++reads == kMaxReads) break;
  }
  return 0;
}
