// GgmlType: the tensor element types of GGUF files (ggml's type ids), their names and block sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace sgl::model {

// ggml's type ids as stored in GGUF tensor infos. Ids 4, 5 and 31..33, 36..38 were removed
// upstream and are not valid in files.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

// Storage layout of one type: `block_size` elements (along the innermost dimension) are stored
// in `type_size` bytes. Plain types have block_size 1.
struct GgmlTypeTraits {
  std::string_view name;  // ggml's spelling: "F32", "Q4_1", "Q6_K", ...
  int64_t block_size = 0;
  int64_t type_size = 0;
};

// Traits of a known type id, or nullopt for an id no ggml version defines (or one removed).
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);
// The type's name, or "type <id>" for unknown ids.
std::string ggml_type_name(GgmlType type);

}  // namespace sgl::model
