// Op dispatchers: validate arguments once on the host, then run the tensor's backend.
#include <string>

#include "kernels/activation.h"
#include "kernels/check_args.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/embedding.h"
#include "kernels/gather.h"
#include "kernels/linear.h"
#include "kernels/lora.h"
#include "kernels/pooling.h"
#include "kernels/rms_norm.h"
#include "kernels/rope.h"
#ifdef SGL_WITH_CUDA
#include "kernels/cuda/cuda_embedding_shard.h"
#include "kernels/cuda/cuda_ops.h"
#define SGL_RUN_ON(device, fn, cpu_args, cuda_args) \
  ((device).is_cpu() ? cpu::fn cpu_args : cuda::fn cuda_args)
#else
#define SGL_RUN_ON(device, fn, cpu_args, cuda_args) \
  ((device).is_cpu() ? cpu::fn cpu_args : detail::no_cuda(#fn))
#endif

namespace sgl::kernels {

using detail::check_last_dim_contiguous;
using detail::check_same_device;

void embedding(const Tensor& ids, const Tensor& table, const Tensor& out, backend::Stream stream) {
  SGL_CHECK(ids.dtype() == DType::kI32 && ids.ndim() == 1)
      << "embedding: ids " << ids.shape_string();
  SGL_CHECK(table.ndim() == 2 && table.is_contiguous())
      << "embedding: table " << table.shape_string();
  SGL_CHECK(out.ndim() == 2 && out.is_contiguous() && out.size(0) == ids.size(0) &&
            out.size(1) == table.size(1) && out.dtype() == table.dtype())
      << "embedding: out " << out.shape_string() << " for table " << table.shape_string();
  check_same_device(ids, table, "embedding");
  check_same_device(out, table, "embedding");
  SGL_RUN_ON(table.device(), embedding, (ids, table, out), (ids, table, out, stream));
}

void embedding_shard(const Tensor& ids, const Tensor& table, int64_t vocab_start,
                     int64_t vocab_size, const Tensor& out, backend::Stream stream) {
  SGL_CHECK(ids.dtype() == DType::kI32 && ids.ndim() == 1)
      << "embedding_shard: ids " << ids.shape_string();
  SGL_CHECK(table.ndim() == 2 && table.is_contiguous())
      << "embedding_shard: table " << table.shape_string();
  SGL_CHECK(out.ndim() == 2 && out.is_contiguous() && out.size(0) == ids.size(0) &&
            out.size(1) == table.size(1) && out.dtype() == table.dtype())
      << "embedding_shard: out " << out.shape_string() << " for table " << table.shape_string();
  SGL_CHECK(vocab_start >= 0 && vocab_start + table.size(0) <= vocab_size)
      << "embedding_shard: rows [" << vocab_start << ", " << vocab_start + table.size(0)
      << ") of a vocabulary of " << vocab_size;
  check_same_device(ids, table, "embedding_shard");
  check_same_device(out, table, "embedding_shard");
  SGL_RUN_ON(table.device(), embedding_shard, (ids, table, vocab_start, vocab_size, out),
             (ids, table, vocab_start, vocab_size, out, stream));
}

void rms_norm(const Tensor& x, const Tensor& weight, double eps, const Tensor& out,
              backend::Stream stream) {
  check_last_dim_contiguous(x, "rms_norm");
  check_last_dim_contiguous(out, "rms_norm");
  SGL_CHECK(weight.ndim() == 1 && weight.size(0) == x.size(-1))
      << "rms_norm: weight " << weight.shape_string() << " for x " << x.shape_string();
  SGL_CHECK(x.ndim() == out.ndim() && x.numel() == out.numel() && x.dtype() == out.dtype())
      << "rms_norm: out " << out.shape_string() << " for x " << x.shape_string();
  check_same_device(x, weight, "rms_norm");
  check_same_device(x, out, "rms_norm");
  SGL_RUN_ON(x.device(), rms_norm, (x, weight, eps, out), (x, weight, eps, out, stream));
}

void qk_rms_norm(const Tensor& q, const Tensor& k, const Tensor& q_weight, const Tensor& k_weight,
                 double eps, backend::Stream stream) {
  const char* op = "qk_rms_norm";
  check_last_dim_contiguous(q, op);
  check_last_dim_contiguous(k, op);
  SGL_CHECK(q.size(-1) == k.size(-1) && q.dtype() == k.dtype())
      << op << ": q " << q.shape_string() << " and k " << k.shape_string()
      << " need one head size and dtype";
  for (const Tensor* w : {&q_weight, &k_weight}) {
    SGL_CHECK(w->ndim() == 1 && w->size(0) == q.size(-1) && w->dtype() == q.dtype())
        << op << ": weight " << w->shape_string() << " for heads of " << q.size(-1);
    check_same_device(q, *w, op);
  }
  check_same_device(q, k, op);
  SGL_RUN_ON(q.device(), qk_rms_norm, (q, k, q_weight, k_weight, eps),
             (q, k, q_weight, k_weight, eps, stream));
}

void fused_add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& weight, double eps,
                        backend::Stream stream) {
  SGL_CHECK(
      x.ndim() == 2 && x.is_contiguous() && residual.is_contiguous() && residual.ndim() == 2 &&
      x.size(0) == residual.size(0) && x.size(1) == residual.size(1) &&
      (x.dtype() == residual.dtype() || (residual.dtype() == DType::kF32 && !x.device().is_cpu())))
      << "fused_add_rms_norm: x " << x.shape_string() << " residual " << residual.shape_string();
  SGL_CHECK(weight.ndim() == 1 && weight.size(0) == x.size(1))
      << "fused_add_rms_norm: weight " << weight.shape_string();
  check_same_device(x, residual, "fused_add_rms_norm");
  check_same_device(x, weight, "fused_add_rms_norm");
  SGL_RUN_ON(x.device(), fused_add_rms_norm, (x, residual, weight, eps),
             (x, residual, weight, eps, stream));
}

void check_rope_args(const Tensor& q, const Tensor& k, const Tensor& positions,
                     const Tensor& cos_sin) {
  SGL_CHECK(q.ndim() == 3 && k.ndim() == 3 && q.size(0) == k.size(0) && q.size(2) == k.size(2))
      << "rope: q " << q.shape_string() << " k " << k.shape_string();
  check_last_dim_contiguous(q, "rope");
  check_last_dim_contiguous(k, "rope");
  SGL_CHECK(q.size(2) % 2 == 0) << "rope: odd head_dim " << q.size(2);
  SGL_CHECK(positions.dtype() == DType::kI32 && positions.ndim() == 1 &&
            positions.size(0) == q.size(0))
      << "rope: positions " << positions.shape_string();
  SGL_CHECK(cos_sin.dtype() == DType::kF32 && cos_sin.ndim() == 2 && cos_sin.is_contiguous() &&
            cos_sin.size(1) == q.size(2))
      << "rope: cos_sin " << cos_sin.shape_string() << " for head_dim " << q.size(2);
  check_same_device(q, k, "rope");
  check_same_device(q, positions, "rope");
  check_same_device(q, cos_sin, "rope");
}

void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& cos_sin,
          backend::Stream stream) {
  check_rope_args(q, k, positions, cos_sin);
  SGL_RUN_ON(q.device(), rope, (q, k, positions, cos_sin), (q, k, positions, cos_sin, stream));
}

void linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
            backend::Stream stream) {
  SGL_CHECK(x.ndim() == 2 && w.ndim() == 2 && y.ndim() == 2 && x.size(1) == w.size(1) &&
            y.size(0) == x.size(0) && y.size(1) == w.size(0))
      << "linear: x " << x.shape_string() << " w " << w.shape_string() << " y " << y.shape_string();
  check_last_dim_contiguous(x, "linear");
  SGL_CHECK(w.is_contiguous() && y.is_contiguous()) << "linear: w and y must be contiguous";
  if (bias.defined()) {
    SGL_CHECK(bias.ndim() == 1 && bias.size(0) == w.size(0))
        << "linear: bias " << bias.shape_string();
    check_same_device(bias, w, "linear");
  }
  check_same_device(x, w, "linear");
  check_same_device(x, y, "linear");
  SGL_RUN_ON(x.device(), linear, (x, w, bias, y), (x, w, bias, y, stream));
}

void add_lora(const Tensor& x, const Tensor& a, const Tensor& b, float scaling,
              const Tensor& shrunk, const Tensor& y, backend::Stream stream) {
  SGL_CHECK(x.ndim() == 2 && a.ndim() == 2 && b.ndim() == 2 && shrunk.ndim() == 2 &&
            y.ndim() == 2 && a.size(1) == x.size(1) && b.size(1) == a.size(0) &&
            shrunk.size(0) == x.size(0) && shrunk.size(1) == a.size(0) && y.size(0) == x.size(0) &&
            y.size(1) == b.size(0))
      << "add_lora: x " << x.shape_string() << " a " << a.shape_string() << " b "
      << b.shape_string() << " shrunk " << shrunk.shape_string() << " y " << y.shape_string();
  check_last_dim_contiguous(x, "add_lora");
  check_last_dim_contiguous(y, "add_lora");
  SGL_CHECK(a.is_contiguous() && b.is_contiguous() && shrunk.is_contiguous())
      << "add_lora: a, b and shrunk must be contiguous";
  SGL_CHECK(a.dtype() == DType::kF32 && b.dtype() == DType::kF32 && shrunk.dtype() == DType::kF32)
      << "add_lora: the adapter and the scratch are f32";
  SGL_CHECK(x.dtype() == y.dtype() && (x.dtype() == DType::kF32 || !x.device().is_cpu()))
      << "add_lora: x and y of one dtype (f32 on the CPU)";
  for (const Tensor* t : {&a, &b, &shrunk, &y}) check_same_device(x, *t, "add_lora");
  SGL_RUN_ON(x.device(), add_lora, (x, a, b, scaling, shrunk, y),
             (x, a, b, scaling, shrunk, y, stream));
}

void linear_silu_and_mul(const Tensor& x, const Tensor& w_gate_up, const Tensor& gate_up,
                         const Tensor& out, backend::Stream stream) {
  SGL_CHECK(w_gate_up.ndim() == 2 && w_gate_up.size(0) == 2 * out.size(1) && out.ndim() == 2 &&
            out.size(0) == x.size(0) && gate_up.ndim() == 2 && gate_up.size(0) == x.size(0) &&
            gate_up.size(1) == w_gate_up.size(0))
      << "linear_silu_and_mul: x " << x.shape_string() << " w " << w_gate_up.shape_string()
      << " gate_up " << gate_up.shape_string() << " out " << out.shape_string();
  if (x.device().is_cpu()) {
    linear(x, w_gate_up, Tensor(), gate_up, stream);
    silu_and_mul(gate_up, out, stream);
    return;
  }
#ifdef SGL_WITH_CUDA
  check_last_dim_contiguous(x, "linear_silu_and_mul");
  SGL_CHECK(w_gate_up.is_contiguous() && gate_up.is_contiguous() && out.is_contiguous() &&
            x.dtype() == w_gate_up.dtype() && out.dtype() == gate_up.dtype())
      << "linear_silu_and_mul: layouts or dtypes";
  check_same_device(x, w_gate_up, "linear_silu_and_mul");
  check_same_device(x, out, "linear_silu_and_mul");
  check_same_device(x, gate_up, "linear_silu_and_mul");
  cuda::linear_silu_and_mul(x, w_gate_up, gate_up, out, stream);
#else
  detail::no_cuda("linear_silu_and_mul");
#endif
}

Status set_linear_backend(backend::Stream stream, std::string_view name) {
  if (name == "auto") {
#ifdef SGL_WITH_CUDA
    if (stream.device.is_cuda()) return cuda::set_hopper_linear(stream, false);
#endif
    return Status::ok_status();
  }
  if (name != "hopper") {
    return invalid_argument("--linear-backend '" + std::string(name) +
                            "' (expected auto or hopper)");
  }
#ifdef SGL_WITH_CUDA
  if (stream.device.is_cuda()) return cuda::set_hopper_linear(stream, true);
#endif
  return invalid_argument("--linear-backend hopper needs a CUDA device");
}

void silu_and_mul(const Tensor& gate_up, const Tensor& out, backend::Stream stream) {
  SGL_CHECK(gate_up.ndim() == 2 && out.ndim() == 2 && gate_up.is_contiguous() &&
            out.is_contiguous() && gate_up.size(0) == out.size(0) &&
            gate_up.size(1) == 2 * out.size(1) && gate_up.dtype() == out.dtype())
      << "silu_and_mul: gate_up " << gate_up.shape_string() << " out " << out.shape_string();
  check_same_device(gate_up, out, "silu_and_mul");
  SGL_RUN_ON(out.device(), silu_and_mul, (gate_up, out), (gate_up, out, stream));
}

void relu(const Tensor& x, backend::Stream stream) {
  SGL_CHECK(x.is_contiguous()) << "relu: x " << x.shape_string() << " is not contiguous";
  SGL_RUN_ON(x.device(), relu, (x), (x, stream));
}

void gather_last_tokens(const Tensor& src, const Tensor& qo_indptr, const Tensor& out,
                        backend::Stream stream) {
  SGL_CHECK(src.ndim() == 2 && out.ndim() == 2 && src.is_contiguous() && out.is_contiguous() &&
            src.size(1) == out.size(1) && src.dtype() == out.dtype())
      << "gather_last_tokens: src " << src.shape_string() << " out " << out.shape_string();
  SGL_CHECK(qo_indptr.dtype() == DType::kI32 && qo_indptr.ndim() == 1 &&
            qo_indptr.size(0) == out.size(0) + 1)
      << "gather_last_tokens: qo_indptr " << qo_indptr.shape_string();
  check_same_device(src, out, "gather_last_tokens");
  check_same_device(src, qo_indptr, "gather_last_tokens");
  SGL_RUN_ON(src.device(), gather_last_tokens, (src, qo_indptr, out),
             (src, qo_indptr, out, stream));
}

void scatter_rows(const Tensor& src, const Tensor& rows, const Tensor& dst,
                  backend::Stream stream) {
  SGL_CHECK(src.ndim() == 2 && dst.ndim() == 2 && src.is_contiguous() && dst.is_contiguous() &&
            src.size(1) == dst.size(1) && src.dtype() == dst.dtype())
      << "scatter_rows: src " << src.shape_string() << " dst " << dst.shape_string();
  SGL_CHECK(rows.dtype() == DType::kI32 && rows.ndim() == 1 && rows.size(0) == src.size(0))
      << "scatter_rows: rows " << rows.shape_string() << " for src " << src.shape_string();
  check_same_device(src, dst, "scatter_rows");
  check_same_device(src, rows, "scatter_rows");
  SGL_RUN_ON(src.device(), scatter_rows, (src, rows, dst), (src, rows, dst, stream));
}

void pool_rows(const Tensor& src, const Tensor& qo_indptr, RowPool pool, const Tensor& out,
               backend::Stream stream) {
  SGL_CHECK(src.ndim() == 2 && out.ndim() == 2 && src.is_contiguous() && out.is_contiguous() &&
            src.size(1) == out.size(1) &&
            (src.dtype() == DType::kF32 || src.dtype() == DType::kBF16) &&
            out.dtype() == DType::kF32)
      << "pool_rows: src " << src.shape_string() << " " << dtype_name(src.dtype()) << " out "
      << out.shape_string() << " " << dtype_name(out.dtype());
  SGL_CHECK(qo_indptr.dtype() == DType::kI32 && qo_indptr.ndim() == 1 &&
            qo_indptr.size(0) == out.size(0) + 1)
      << "pool_rows: qo_indptr " << qo_indptr.shape_string();
  check_same_device(src, out, "pool_rows");
  check_same_device(src, qo_indptr, "pool_rows");
  if (out.size(0) == 0) return;
  SGL_RUN_ON(src.device(), pool_rows, (src, qo_indptr, pool, out),
             (src, qo_indptr, pool, out, stream));
}

}  // namespace sgl::kernels
