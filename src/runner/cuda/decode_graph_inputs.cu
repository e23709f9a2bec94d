// One grid-stride kernel: per-request arrays, indptrs and the KV index list with padding.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/native_stream.h"
#include "forward/forward_batch.h"
#include "runner/cuda/decode_graph_inputs.h"

namespace sgl::runner::cuda {
namespace {

__global__ void pack_decode_inputs_kernel(DecodeArrays src, int32_t bs, int32_t num_kv,
                                          DecodeArrays dst, int32_t padded_bs,
                                          const int32_t* sampled) {
  const int32_t pad = padded_bs - bs;
  const int32_t total = max(padded_bs + 1, num_kv + pad);
  for (int32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    if (i < padded_bs) {
      const bool real = i < bs;
      const int32_t id = real ? src.input_ids[i] : 0;
      dst.input_ids[i] = is_sampled_id_ref(id) ? sampled[sampled_id_row(id)] : id;
      dst.positions[i] = real ? src.positions[i] : 0;
      dst.out_cache_loc[i] = real ? src.out_cache_loc[i] : 0;  // slot 0: the dummy slot
      dst.seq_lens[i] = real ? src.seq_lens[i] : 1;
      dst.prefix_lens[i] = real ? src.prefix_lens[i] : 0;
      dst.extend_lens[i] = 1;
      dst.req_pool_indices[i] = real ? src.req_pool_indices[i] : 0;
    }
    if (i <= padded_bs) {
      dst.qo_indptr[i] = i;
      dst.kv_indptr[i] = i <= bs ? src.kv_indptr[i] : num_kv + (i - bs);
    }
    if (i < num_kv + pad) dst.kv_indices[i] = i < num_kv ? src.kv_indices[i] : 0;
  }
}

}  // namespace

void pack_decode_inputs(const DecodeArrays& src, int32_t bs, int32_t num_kv,
                        const DecodeArrays& dst, int32_t padded_bs, const int32_t* sampled,
                        backend::Stream stream) {
  const int32_t total = std::max(padded_bs + 1, num_kv + padded_bs - bs);
  const int threads = 256;
  const int blocks = std::min((total + threads - 1) / threads, 1024);
  pack_decode_inputs_kernel<<<blocks, threads, 0, backend::cuda::native_stream(stream)>>>(
      src, bs, num_kv, dst, padded_bs, sampled);
  SGL_CUDA_CHECK_LAUNCH();
}

}  // namespace sgl::runner::cuda
