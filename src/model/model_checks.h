// The checks every architecture's load runs before it allocates: options, extra layers in the
// checkpoint, and whether the memory plan fits the device.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"
#include "core/status.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/weight_source.h"

namespace sgl::model {

// max_positions in [0, ConfigBounds::kMaxContextLength] (0 = the config's), the others positive.
Status check_model_options(const ModelOptions& options);

// A checkpoint with more layers than the config would load as a different, truncated network
// and answer without complaint; refuse it. `unread` are the source's tensors the load did not
// ask for (WeightLoader::unread_tensors: a layer past the config's is among them);
// `layers_prefix` is where the layers' tensors sit ("model.layers.").
Status check_no_extra_layers(const ModelConfig& config, const WeightSource& source,
                             const std::vector<std::string>& unread,
                             std::string_view layers_prefix);

// Logs a warning naming the checkpoint tensors in `unread` (WeightLoader::unread_tensors):
// a checkpoint for another architecture or config loads without them, silently different (a
// bias the config does not declare, a module the architecture lacks). transformers and SGLang
// warn alike. Legacy RoPE buffers (rotary_emb.inv_freq) are expected and not named.
void warn_unread_tensors(const WeightSource& source, const std::vector<std::string>& unread);

// A weight update (/update_weights_from_disk) replaces the served model's weights, not its
// network: `update`'s config (from `source`) must describe the same one as `served`'s (its
// architecture, sizes, norms, RoPE and routing); InvalidArgument naming the first field that
// differs. Its sampling defaults, EOS ids and quantization may differ.
Status check_same_network(const ModelConfig& served, const ModelConfig& update,
                          const std::string& source);

// The plan must fit the device: GPU memory is not overcommitted (cudaMalloc fails, and fails
// by aborting), and host memory past the machine's RAM cannot be resident either.
// ResourceExhausted naming the sizes otherwise.
Status check_fits(Device device, const ModelMemoryPlan& plan, int64_t max_positions);

}  // namespace sgl::model
