// Resolves sampled_id_ref() input ids (forward/forward_batch.h) on the device.
#pragma once

#include <cstdint>

#include "backend/stream.h"

namespace sgl::runner::cuda {

// ids[i] = sampled[row] where ids[i] == sampled_id_ref(row); other ids stay. ids: device i32
// [n]; sampled: device i32, the ids of the latest sampling on the device.
void resolve_sampled_id_refs(int32_t* ids, int32_t n, const int32_t* sampled,
                             backend::Stream stream);

}  // namespace sgl::runner::cuda
