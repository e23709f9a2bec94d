// What a chain verify's accepted drafts decide for the draft extend and the next chain after it,
// computed where the verify's ids are. On the GPU that is the device: the extend and the next
// chain queue right behind the verify instead of waiting for its ids to reach the host
// (EagleChain::extend_and_draft). The host filled every array as if all drafts stood; one call
// per request row corrects what depends on the accept count.
#pragma once

#include <cstdint>

#include "backend/stream.h"
#include "core/host_device.h"
#include "forward/forward_batch.h"

namespace sgl::runner {

struct ChainAcceptArgs {
  // The verify: bs requests of `tokens` tokens each, request b's at [b * tokens, (b+1) * tokens).
  const int32_t* verify_ids = nullptr;  // its input ids: the last token, then the drafts
  const int32_t* id_table = nullptr;    // where sampled_id_ref() inputs among them resolve
  const int32_t* sampled = nullptr;     // the id sampled at each of its positions
  int32_t bs = 0;
  int32_t tokens = 0;
  // sgl-bench's --speculative-bench-accept-length (0: off): drafts < L - 1 stand, draft L - 1
  // (if any) falls, as ModelBatchRunner::force_acceptance makes the host's ids say.
  int32_t forced_accept = 0;
  int32_t vocab_size = 0;
  // The chain: `steps` steps, per-row arrays `capacity` apart (EagleChain's layout).
  int32_t steps = 0;
  int32_t capacity = 0;
  int32_t max_position = 0;  // the model's context length - 1
  int32_t scratch_base = 0;  // row b's step j stores at scratch_base + b * steps + j - 1
  const int32_t* prefix_lens = nullptr;  // [bs]: each verify's prefix
  const int32_t* kv_indptr = nullptr;    // [bs + 1]: each row's list in kv_indices
  // Written: the extend's ids [bs * tokens] and out rows [bs]; step j's positions, seq lens and
  // prefix lens at (j - 1) * capacity + b; the scratch slots in each row's KV list.
  int32_t* extend_ids = nullptr;
  int32_t* out_rows = nullptr;
  int32_t* positions = nullptr;
  int32_t* seq_lens = nullptr;
  int32_t* step_prefix_lens = nullptr;
  int32_t* kv_indices = nullptr;
};

// sgl-bench's --speculative-bench-accept-length L on a verify of `tokens` tokens: the first
// forced_accept_count drafts stand, and the id sampled at position i becomes forced_sample(...)
// (the draft itself before that count, at it anything but the draft). The host
// (ModelBatchRunner::force_acceptance) and the device (below) apply the same rule.
SGL_HOST_DEVICE inline int32_t forced_accept_count(int32_t length, int32_t tokens) {
  return length - 1 < tokens - 1 ? length - 1 : tokens - 1;
}
SGL_HOST_DEVICE inline int32_t forced_sample(int32_t i, int32_t accepted, int32_t tokens,
                                             int32_t draft, int32_t sampled, int32_t vocab_size) {
  if (i < accepted) return draft;
  if (i == accepted && i < tokens - 1 && sampled == draft) return (sampled + 1) % vocab_size;
  return sampled;
}

// Request row b: its accept count from the verify's drafts and samples, then every array that
// depends on it. The host's accepted_drafts() (speculative/draft_acceptance.h) counts alike.
SGL_HOST_DEVICE inline void apply_chain_accept(const ChainAcceptArgs& a, int32_t b) {
  const int32_t t = a.tokens, first = b * t;
  auto draft = [&](int32_t j) {  // draft j (0-based): input j + 1
    const int32_t id = a.verify_ids[first + 1 + j];
    return is_sampled_id_ref(id) ? a.id_table[sampled_id_row(id)] : id;
  };
  int32_t accepted = 0;
  if (a.forced_accept > 0) {
    accepted = forced_accept_count(a.forced_accept, t);
  } else {
    while (accepted < t - 1 && a.sampled[first + accepted] == draft(accepted)) ++accepted;
  }
  // Position prefix + i reads the token after it: the accepted drafts, then the bonus token.
  for (int32_t i = 0; i < t; ++i) {
    const int32_t id = a.sampled[first + i];
    a.extend_ids[first + i] = a.forced_accept > 0 && i < t - 1
                                  ? forced_sample(i, accepted, t, draft(i), id, a.vocab_size)
                                  : id;
  }
  a.out_rows[b] = first + accepted;  // the accepted path's end
  const int32_t next_prefix = a.prefix_lens[b] + accepted + 1;
  for (int32_t j = 1; j <= a.steps; ++j) {
    const int32_t at = (j - 1) * a.capacity + b;
    const int32_t pos = next_prefix + j - 1;
    a.positions[at] = pos < a.max_position ? pos : a.max_position;
    a.seq_lens[at] = next_prefix + j;
    a.step_prefix_lens[at] = next_prefix + j - 1;
    a.kv_indices[a.kv_indptr[b] + pos] = a.scratch_base + b * a.steps + j - 1;
  }
}

namespace cuda {
// apply_chain_accept for every row, on the device (args' pointers: device memory).
void apply_chain_accept(const ChainAcceptArgs& args, backend::Stream stream);
}  // namespace cuda

}  // namespace sgl::runner
