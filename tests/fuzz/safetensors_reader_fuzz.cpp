// libFuzzer target: the input is a .safetensors file, opened in memory; its metadata and a few
// small tensors are read back as f32.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/safetensors.h"
#include "model/weight_source.h"

namespace {

constexpr int64_t kMaxReadElements = int64_t{1} << 20;  // bounds one input's memory
constexpr int kMaxReads = 4;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sgl::model;
  sgl::Result<SafetensorsFile> file = SafetensorsFile::from_bytes(std::span(data, size), "fuzz");
  if (!file.ok()) return 0;
  size_t metadata_chars = 0;
  for (const auto& [key, value] : file->metadata()) metadata_chars += key.size() + value.size();
  (void)metadata_chars;
  int reads = 0;
  for (const auto& [name, info] : file->tensors()) {
    // The reader promised these bytes are inside the input.
    if (info.nbytes > 0 && (info.data < data || info.data + info.nbytes > data + size)) {
      __builtin_trap();
    }
    if (info.numel() > kMaxReadElements) continue;
    std::vector<float> values(static_cast<size_t>(info.numel()));
    (void)tensor_to_f32(info, values.data());
    if (++reads == kMaxReads) break;
  }
  return 0;
}
