// CPU fused MoE experts: group the (token, slot) pairs by expert with moe_align_block_size, then
// per expert gather its tokens' rows and run the dense MLP as GEMMs (kernels' CPU linear), and
// add each result, weighted, into its token's row of a sum that becomes out at the end (so out
// may be x: every expert reads the original rows).
#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/moe_ops.h"

namespace sgl::kernels::cpu {
namespace {

// Rows per expert GEMM at most: big enough for sgemm to run near its peak, small enough that the
// workspace does not grow with a long prefill.
constexpr int64_t kChunkRows = 256;

int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

// Byte offsets of the workspace's pieces. The alignment uses block size 1: no padding, since
// the CPU GEMMs take any row count.
struct WorkspaceLayout {
  int64_t entries = 0, experts = 0, rows = 0, hidden = 0, inter = 0;
  int64_t sorted = 0, expert_ids = 0, offsets = 0, total = 0;  // i32
  int64_t xs = 0, gate_up = 0, act = 0, down = 0;              // f32 [rows, ...]
  int64_t sum = 0;                                             // f32 [tokens, hidden]
  int64_t bytes = 0;

  WorkspaceLayout(int64_t tokens, int64_t top_k, int64_t num_experts, int64_t h, int64_t i)
      : entries(moe_align_sizes(tokens, top_k, num_experts, 1).max_padded),
        experts(num_experts),
        rows(std::min(tokens, kChunkRows)),
        hidden(h),
        inter(i) {
    auto take = [this](int64_t piece_bytes) {
      const int64_t at = bytes;
      bytes += round_up(piece_bytes, 64);
      return at;
    };
    sorted = take(entries * 4);
    expert_ids = take(entries * 4);
    offsets = take((experts + 1) * 4);
    total = take(4);
    xs = take(rows * hidden * 4);
    gate_up = take(rows * 2 * inter * 4);
    act = take(rows * inter * 4);
    down = take(rows * hidden * 4);
    sum = take(tokens * hidden * 4);
  }

  Tensor piece(const Tensor& workspace, int64_t offset, DType dtype,
               std::initializer_list<int64_t> shape) const {
    return Tensor(static_cast<char*>(workspace.raw()) + offset, dtype, shape);
  }
};

}  // namespace

int64_t fused_moe_workspace_bytes(int64_t num_tokens, int64_t top_k, int64_t num_experts,
                                  int64_t hidden, int64_t inter) {
  return WorkspaceLayout(num_tokens, top_k, num_experts, hidden, inter).bytes;
}

void fused_moe(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
               const Tensor& topk_weights, const Tensor& topk_ids, const Tensor& workspace,
               const Tensor& out) {
  const int64_t tokens = x.size(0), hidden = x.size(1), k = topk_ids.size(1);
  const int64_t experts = w_gate_up.size(0), inter = w_gate_up.size(1) / 2;
  const WorkspaceLayout at(tokens, k, experts, hidden, inter);
  const MoeAlignment groups{
      .sorted_token_ids = at.piece(workspace, at.sorted, DType::kI32, {at.entries}),
      .expert_ids = at.piece(workspace, at.expert_ids, DType::kI32, {at.entries}),
      .expert_offsets = at.piece(workspace, at.offsets, DType::kI32, {experts + 1}),
      .num_tokens_post_padded = at.piece(workspace, at.total, DType::kI32, {1}),
  };
  moe_align_block_size(topk_ids, experts, 1, groups);
  const int32_t* sorted = groups.sorted_token_ids.data<int32_t>();
  const int32_t* offsets = groups.expert_offsets.data<int32_t>();
  const float* weights = topk_weights.data<float>();
  float* xs = at.piece(workspace, at.xs, DType::kF32, {at.rows, hidden}).data<float>();
  float* down = at.piece(workspace, at.down, DType::kF32, {at.rows, hidden}).data<float>();
  float* o = at.piece(workspace, at.sum, DType::kF32, {tokens, hidden}).data<float>();
  std::fill_n(o, tokens * hidden, 0.f);

  for (int64_t e = 0; e < experts; ++e) {
    const Tensor w13(w_gate_up.data<float>() + e * 2 * inter * hidden, DType::kF32,
                     {2 * inter, hidden});
    const Tensor w2(w_down.data<float>() + e * hidden * inter, DType::kF32, {hidden, inter});
    // A group holds at most `tokens` rows unless topk_ids repeats an expert within a token; the
    // chunks cover both.
    for (int64_t begin = offsets[e]; begin < offsets[e + 1]; begin += at.rows) {
      const int64_t n = std::min<int64_t>(at.rows, offsets[e + 1] - begin);
      for (int64_t r = 0; r < n; ++r) {
        std::memcpy(xs + r * hidden, x.data<float>() + (sorted[begin + r] / k) * x.stride(0),
                    hidden * sizeof(float));
      }
      const Tensor gate_up = at.piece(workspace, at.gate_up, DType::kF32, {n, 2 * inter});
      const Tensor act = at.piece(workspace, at.act, DType::kF32, {n, inter});
      linear(Tensor(xs, DType::kF32, {n, hidden}), w13, Tensor(), gate_up);
      silu_and_mul(gate_up, act);
      linear(act, w2, Tensor(), Tensor(down, DType::kF32, {n, hidden}));
      for (int64_t r = 0; r < n; ++r) {
        const int32_t entry = sorted[begin + r];
        const float w = weights[entry];
        float* dst = o + (entry / k) * hidden;
        const float* src = down + r * hidden;
        for (int64_t h = 0; h < hidden; ++h) dst[h] += w * src[h];
      }
    }
  }
  std::memcpy(out.data<float>(), o, tokens * hidden * sizeof(float));
}

}  // namespace sgl::kernels::cpu
