// One grid-stride kernel: token arrays, per-request arrays, indptrs and the KV index list with
// padding.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "forward/forward_batch.h"
#include "runner/cuda/graph_inputs.h"

namespace sgl::runner::cuda {
namespace {

__global__ void pack_graph_inputs_kernel(GraphInputArrays src, int32_t bs, int32_t num_kv,
                                         GraphInputArrays dst, int32_t padded_bs, int32_t tokens,
                                         const int32_t* sampled) {
  const int32_t real_tokens = bs * tokens, padded_tokens = padded_bs * tokens;
  const int32_t pad_kv = (padded_bs - bs) * tokens;  // the dummy requests' KV entries
  const int32_t total = max(max(padded_tokens, padded_bs + 1), num_kv + pad_kv);
  for (int32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    if (i < padded_tokens) {
      const bool real = i < real_tokens;
      const int32_t k = i % tokens;  // the token's index in its request
      const int32_t id = real ? src.input_ids[i] : 0;
      dst.input_ids[i] = is_sampled_id_ref(id) ? sampled[sampled_id_row(id)] : id;
      dst.positions[i] = real ? src.positions[i] : k;
      dst.out_cache_loc[i] = real ? src.out_cache_loc[i] : 0;  // slot 0: the dummy slot
      if (dst.tree_mask != nullptr) {
        dst.tree_mask[i] =
            real && src.tree_mask != nullptr ? src.tree_mask[i] : ~uint64_t{0} >> (63 - k);
      }
    }
    if (i < padded_bs) {
      const bool real = i < bs;
      dst.seq_lens[i] = real ? src.seq_lens[i] : tokens;
      dst.prefix_lens[i] = real ? src.prefix_lens[i] : 0;
      dst.extend_lens[i] = tokens;
      dst.req_pool_indices[i] = real ? src.req_pool_indices[i] : 0;
    }
    if (i <= padded_bs) {
      dst.qo_indptr[i] = i * tokens;
      dst.kv_indptr[i] = i <= bs ? src.kv_indptr[i] : num_kv + (i - bs) * tokens;
    }
    if (i < num_kv + pad_kv) dst.kv_indices[i] = i < num_kv ? src.kv_indices[i] : 0;
  }
}

}  // namespace

void pack_graph_inputs(const GraphInputArrays& src, int32_t bs, int32_t num_kv,
                       const GraphInputArrays& dst, int32_t padded_bs, int32_t tokens,
                       const int32_t* sampled, backend::Stream stream) {
  const int32_t total =
      std::max(std::max(padded_bs * tokens, padded_bs + 1), num_kv + (padded_bs - bs) * tokens);
  const int threads = 256;
  const int blocks = std::min((total + threads - 1) / threads, 1024);
  pack_graph_inputs_kernel<<<blocks, threads, 0, backend::cuda::native_stream(stream)>>>(
      src, bs, num_kv, dst, padded_bs, tokens, sampled);
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::runner::cuda
