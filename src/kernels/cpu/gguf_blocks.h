// Host decoders of ggml's block-quantized formats: one stored block -> its values as f32.
#pragma once

#include <cstdint>

#include "kernels/convert_stored.h"

namespace sgl::kernels::cpu {

// Decodes the block at `block` (stored_block_bytes(format) bytes, any alignment) into
// out[0, stored_block_elems(format)).
using BlockDecoder = void (*)(const uint8_t* block, float* out);

// The decoder of a block-quantized format; nullptr for the plain floats (F32, F16, BF16).
BlockDecoder block_decoder(StoredFormat format);

}  // namespace sgl::kernels::cpu
