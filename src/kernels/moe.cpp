// MoE op dispatchers: validate arguments once on the host, then run the tensors' backend.
#include "kernels/moe.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/alignment.h"
#include "kernels/check_args.h"
#include "kernels/cpu/moe_ops.h"
#include "kernels/cuda/moe_plan.h"
#ifdef SGL_WITH_CUDA
#include "kernels/cuda/cuda_moe.h"
#endif

namespace sgl::kernels {
namespace {

using detail::check_last_dim_contiguous;
using detail::check_same_device;

#ifdef SGL_WITH_CUDA
#define SGL_MOE_ON_CUDA(op, ...) cuda::op(__VA_ARGS__)
#else
#define SGL_MOE_ON_CUDA(op, ...) detail::no_cuda(#op)
#endif

std::string describe(const Tensor& t) {
  return t.defined() ? std::string(dtype_name(t.dtype())) + " " + t.shape_string() : "undefined";
}

void check_rows(const Tensor& t, DType dtype, int64_t rows, int64_t cols, const char* op,
                const char* name) {
  SGL_CHECK(t.defined() && t.dtype() == dtype && t.ndim() == 2 && t.size(0) == rows &&
            t.size(1) == cols && t.is_contiguous())
      << op << ": " << name << " must be contiguous " << dtype_name(dtype) << " [" << rows << ", "
      << cols << "], got " << describe(t);
}

void check_i32_vector(const Tensor& t, int64_t min_size, const char* op, const char* name) {
  SGL_CHECK(t.defined() && t.dtype() == DType::kI32 && t.ndim() == 1 && t.size(0) >= min_size &&
            t.is_contiguous())
      << op << ": " << name << " must be contiguous i32 [>= " << min_size << "], got "
      << describe(t);
}

// The bytes a view can touch (non-negative strides).
struct ByteRange {
  uintptr_t begin = 0, end = 0;
};
ByteRange byte_range(const Tensor& t) {
  int64_t last = 0;
  for (int d = 0; d < t.ndim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  const auto begin = reinterpret_cast<uintptr_t>(t.raw());
  return {begin, begin + static_cast<uintptr_t>(last + 1) * dtype_size(t.dtype())};
}

void check_disjoint(const Tensor& a, const Tensor& b, const char* op, const char* what) {
  if (a.numel() == 0 || b.numel() == 0) return;
  const ByteRange ra = byte_range(a), rb = byte_range(b);
  SGL_CHECK(ra.end <= rb.begin || rb.end <= ra.begin) << op << ": " << what << " overlap";
}

// The float tensors of an op: one dtype, and f32 on the CPU (as kernels::linear).
void check_float_dtype(const Tensor& t, DType dtype, const char* op, const char* name) {
  SGL_CHECK(t.dtype() == dtype) << op << ": " << name << " is " << dtype_name(t.dtype())
                                << ", expected " << dtype_name(dtype);
  SGL_CHECK(!t.device().is_cpu() || t.dtype() == DType::kF32)
      << op << ": CPU tensors must be f32, " << name << " is " << dtype_name(t.dtype());
}

void check_routing(const Tensor& topk_weights, const Tensor& topk_ids, int64_t tokens,
                   const char* op) {
  SGL_CHECK(topk_ids.ndim() == 2 && topk_ids.size(1) >= 1)
      << op << ": topk_ids must be [T, k >= 1], got " << describe(topk_ids);
  check_rows(topk_ids, DType::kI32, tokens, topk_ids.size(1), op, "topk_ids");
  check_rows(topk_weights, DType::kF32, tokens, topk_ids.size(1), op, "topk_weights");
}

void check_fused_moe_args(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                          const Tensor& topk_weights, const Tensor& topk_ids, const Tensor& out,
                          const char* op) {
  SGL_CHECK(x.ndim() == 2) << op << ": x must be [T, H], got " << describe(x);
  check_last_dim_contiguous(x, op);
  const int64_t tokens = x.size(0), hidden = x.size(1);
  SGL_CHECK(w_gate_up.ndim() == 3 && w_gate_up.is_contiguous() && w_gate_up.size(0) >= 1 &&
            w_gate_up.size(1) >= 2 && w_gate_up.size(1) % 2 == 0 && w_gate_up.size(2) == hidden)
      << op << ": w_gate_up must be contiguous [E, 2I, " << hidden << "], got "
      << describe(w_gate_up);
  const int64_t experts = w_gate_up.size(0), inter = w_gate_up.size(1) / 2;
  SGL_CHECK(w_down.ndim() == 3 && w_down.is_contiguous() && w_down.size(0) == experts &&
            w_down.size(1) == hidden && w_down.size(2) == inter)
      << op << ": w_down must be contiguous [" << experts << ", " << hidden << ", " << inter
      << "], got " << describe(w_down);
  check_routing(topk_weights, topk_ids, tokens, op);
  check_rows(out, x.dtype(), tokens, hidden, op, "out");
  check_float_dtype(x, x.dtype(), op, "x");
  check_float_dtype(w_gate_up, x.dtype(), op, "w_gate_up");
  check_float_dtype(w_down, x.dtype(), op, "w_down");
  for (const Tensor* t : {&w_gate_up, &w_down, &topk_weights, &topk_ids, &out}) {
    check_same_device(x, *t, op);
  }
  // In place (out is x itself) or apart.
  const bool in_place = out.raw() == x.raw() && out.stride(0) == x.stride(0);
  if (!in_place) check_disjoint(x, out, op, "x and out");
}

}  // namespace

void moe_route(const Tensor& router_logits, MoeScoring scoring, bool renormalize,
               const Tensor& topk_weights, const Tensor& topk_ids, backend::Stream stream) {
  const char* op = "moe_route";
  SGL_CHECK(router_logits.dtype() == DType::kF32 && router_logits.ndim() == 2 &&
            router_logits.size(1) >= 1)
      << op << ": router_logits must be f32 [T, E >= 1], got " << describe(router_logits);
  check_last_dim_contiguous(router_logits, op);
  SGL_CHECK(scoring == MoeScoring::kSoftmax || scoring == MoeScoring::kSigmoid)
      << op << ": unknown scoring " << static_cast<int>(scoring);
  check_routing(topk_weights, topk_ids, router_logits.size(0), op);
  SGL_CHECK(topk_ids.size(1) <= router_logits.size(1))
      << op << ": top_k " << topk_ids.size(1) << " > " << router_logits.size(1) << " experts";
  check_same_device(router_logits, topk_weights, op);
  check_same_device(router_logits, topk_ids, op);
  if (router_logits.size(0) == 0) return;
  if (!router_logits.device().is_cpu()) {
    SGL_MOE_ON_CUDA(moe_route, router_logits, scoring == MoeScoring::kSigmoid, renormalize,
                    topk_weights, topk_ids, stream);
    return;
  }
  cpu::moe_route(router_logits, scoring, renormalize, topk_weights, topk_ids);
}

void moe_local_ids(const Tensor& topk_ids, int64_t first_expert, int64_t num_local,
                   const Tensor& local_ids, backend::Stream stream) {
  const char* op = "moe_local_ids";
  SGL_CHECK(topk_ids.dtype() == DType::kI32 && topk_ids.ndim() == 2 && topk_ids.is_contiguous())
      << op << ": topk_ids must be contiguous i32 [T, k], got " << describe(topk_ids);
  SGL_CHECK(local_ids.dtype() == DType::kI32 && local_ids.is_contiguous() &&
            local_ids.ndim() == 2 && local_ids.size(0) == topk_ids.size(0) &&
            local_ids.size(1) == topk_ids.size(1))
      << op << ": local_ids must be contiguous i32 " << topk_ids.shape_string() << ", got "
      << describe(local_ids);
  SGL_CHECK(first_expert >= 0 && num_local >= 1)
      << op << ": experts [" << first_expert << ", +" << num_local << ")";
  check_same_device(topk_ids, local_ids, op);
  if (topk_ids.numel() == 0) return;
  if (!topk_ids.device().is_cpu()) {
    SGL_MOE_ON_CUDA(moe_local_ids, topk_ids, first_expert, num_local, local_ids, stream);
    return;
  }
  cpu::moe_local_ids(topk_ids, first_expert, num_local, local_ids);
}

MoeAlignSizes moe_align_sizes(int64_t num_tokens, int64_t top_k, int64_t num_experts,
                              int64_t block_size) {
  SGL_CHECK(num_tokens >= 0 && top_k >= 1 && num_experts >= 1 && block_size >= 1)
      << "moe_align_sizes: tokens " << num_tokens << " top_k " << top_k << " experts "
      << num_experts << " block_size " << block_size;
  const int64_t entries = num_tokens * top_k;
  // Only experts that got a token are padded, and there are at most `entries` of those.
  MoeAlignSizes sizes;
  sizes.max_padded = entries + std::min(num_experts, entries) * (block_size - 1);
  sizes.max_blocks = (sizes.max_padded + block_size - 1) / block_size;
  SGL_CHECK(sizes.max_padded <= std::numeric_limits<int32_t>::max())
      << "moe_align_sizes: " << sizes.max_padded << " entries do not fit i32 indices";
  return sizes;
}

void moe_align_block_size(const Tensor& topk_ids, int64_t num_experts, int64_t block_size,
                          const MoeAlignment& out, backend::Stream stream) {
  const char* op = "moe_align_block_size";
  SGL_CHECK(topk_ids.dtype() == DType::kI32 && topk_ids.ndim() == 2 && topk_ids.size(1) >= 1 &&
            topk_ids.is_contiguous())
      << op << ": topk_ids must be contiguous i32 [T, k >= 1], got " << describe(topk_ids);
  const MoeAlignSizes sizes =
      moe_align_sizes(topk_ids.size(0), topk_ids.size(1), num_experts, block_size);
  check_i32_vector(out.sorted_token_ids, sizes.max_padded, op, "sorted_token_ids");
  check_i32_vector(out.expert_ids, sizes.max_blocks, op, "expert_ids");
  check_i32_vector(out.expert_offsets, num_experts + 1, op, "expert_offsets");
  SGL_CHECK(out.expert_offsets.size(0) == num_experts + 1)
      << op << ": expert_offsets must be [" << num_experts + 1 << "], got "
      << describe(out.expert_offsets);
  check_i32_vector(out.num_tokens_post_padded, 1, op, "num_tokens_post_padded");
  for (const Tensor* t :
       {&out.sorted_token_ids, &out.expert_ids, &out.expert_offsets, &out.num_tokens_post_padded}) {
    check_same_device(topk_ids, *t, op);
  }
  if (!topk_ids.device().is_cpu()) {
    SGL_MOE_ON_CUDA(moe_align_block_size, topk_ids, num_experts, block_size, out, stream);
    return;
  }
  cpu::moe_align_block_size(topk_ids, num_experts, block_size, out);
}

int64_t fused_moe_workspace_bytes(Device device, int64_t num_tokens, int64_t top_k,
                                  int64_t num_experts, int64_t hidden, int64_t inter) {
  SGL_CHECK(num_tokens >= 0 && top_k >= 1 && num_experts >= 1 && hidden >= 1 && inter >= 1)
      << "fused_moe_workspace_bytes: tokens " << num_tokens << " top_k " << top_k << " experts "
      << num_experts << " hidden " << hidden << " inter " << inter;
  if (!device.is_cpu()) {
    return cuda::moe_workspace_bytes({num_tokens, top_k, num_experts, hidden, inter});
  }
  return cpu::fused_moe_workspace_bytes(num_tokens, top_k, num_experts, hidden, inter);
}

void fused_moe(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
               const Tensor& topk_weights, const Tensor& topk_ids, const Tensor& workspace,
               const Tensor& out, backend::Stream stream, bool masked_pairs) {
  const char* op = "fused_moe";
  check_fused_moe_args(x, w_gate_up, w_down, topk_weights, topk_ids, out, op);
  const int64_t needed = fused_moe_workspace_bytes(
      x.device(), x.size(0), topk_ids.size(1), w_gate_up.size(0), x.size(1), w_gate_up.size(1) / 2);
  SGL_CHECK(workspace.defined() && workspace.is_contiguous() &&
            static_cast<int64_t>(workspace.nbytes()) >= needed && is_aligned(workspace.raw(), 16))
      << op << ": workspace must be contiguous, 16-byte aligned and hold " << needed
      << " bytes, got " << describe(workspace);
  check_same_device(x, workspace, op);
  check_disjoint(workspace, x, op, "workspace and x");
  check_disjoint(workspace, out, op, "workspace and out");
  if (x.size(0) == 0) return;
  if (!x.device().is_cpu()) {
    SGL_MOE_ON_CUDA(fused_moe, x, w_gate_up, w_down, topk_weights, topk_ids, workspace, out, stream,
                    /*allow_hopper=*/true, masked_pairs);
    return;
  }
  cpu::fused_moe(x, w_gate_up, w_down, topk_weights, topk_ids, workspace, out);
}

void fused_moe_reference(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                         const Tensor& topk_weights, const Tensor& topk_ids, const Tensor& out) {
  const char* op = "fused_moe_reference";
  check_fused_moe_args(x, w_gate_up, w_down, topk_weights, topk_ids, out, op);
  SGL_CHECK(x.device().is_cpu()) << op << ": host tensors only";
  cpu::fused_moe_reference(x, w_gate_up, w_down, topk_weights, topk_ids, out);
}

void add_sigmoid_gated(const Tensor& x, const Tensor& w_gate, const Tensor& y, const Tensor& out,
                       backend::Stream stream) {
  const char* op = "add_sigmoid_gated";
  SGL_CHECK(x.ndim() == 2) << op << ": x must be [T, H], got " << describe(x);
  check_last_dim_contiguous(x, op);
  check_rows(w_gate, x.dtype(), 1, x.size(1), op, "w_gate");
  check_rows(y, x.dtype(), x.size(0), x.size(1), op, "y");
  check_rows(out, x.dtype(), x.size(0), x.size(1), op, "out");
  check_float_dtype(x, x.dtype(), op, "x");
  for (const Tensor* t : {&w_gate, &y, &out}) check_same_device(x, *t, op);
  check_disjoint(out, x, op, "out and x");
  check_disjoint(out, y, op, "out and y");
  if (x.size(0) == 0) return;
  if (!x.device().is_cpu()) {
    SGL_MOE_ON_CUDA(add_sigmoid_gated, x, w_gate, y, out, stream);
    return;
  }
  cpu::add_sigmoid_gated(x, w_gate, y, out);
}

}  // namespace sgl::kernels
