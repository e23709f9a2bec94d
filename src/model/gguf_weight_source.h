// GgufWeightSource: a GGUF file's tensors under Hugging Face names, as stored bytes (converted
// where they land) or dequantized to f32, with llama.cpp's q/k row permutation undone for
// Llama-architecture files, and a MoE layer's stacked experts read one expert at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/architectures.h"
#include "model/gguf.h"
#include "model/model_config.h"
#include "model/weight_source.h"

namespace sgl::model {

// Where a Hugging Face tensor lives in a GGUF file: a whole tensor, or one slice along dim 0 of a
// stacked one (llama.cpp stores a MoE layer's experts as [E, rows, cols] tensors).
struct GgufTensorRef {
  std::string name;    // "blk.3.ffn_up.weight", "blk.3.ffn_up_exps.weight"
  int64_t slice = -1;  // the expert; -1: the whole tensor
  bool operator==(const GgufTensorRef&) const = default;
};

// Hugging Face tensor name -> its GGUF place ("model.layers.3.mlp.up_proj.weight" ->
// "blk.3.ffn_up.weight"; "model.layers.3.mlp.experts.5.up_proj.weight" or Mixtral's
// "model.layers.3.block_sparse_moe.experts.5.w3.weight" -> slice 5 of "blk.3.ffn_up_exps.weight"),
// or nullopt for names GGUF has no spelling for.
std::optional<GgufTensorRef> gguf_tensor_ref(std::string_view hf_name);
// The GGUF tensor holding `hf_name` (gguf_tensor_ref's name).
std::optional<std::string> gguf_tensor_name(std::string_view hf_name);
// The inverse, for tensors that are not stacked experts: GGUF name -> Hugging Face name in the
// spelling of `moe` (a router is Mixtral's "block_sparse_moe.gate", else "mlp.gate"), or nullopt
// for tensors we have no use for (e.g. rope_freqs.weight) and for stacked experts.
std::optional<std::string> hf_tensor_name(std::string_view gguf_name,
                                          MoeStyle moe = MoeStyle::kQwen);
// The Hugging Face name of expert `expert` of a stacked GGUF tensor ("blk.3.ffn_up_exps.weight"),
// or nullopt when `gguf_name` is not one.
std::optional<std::string> hf_expert_name(std::string_view gguf_name, int64_t expert, MoeStyle moe);

// llama.cpp's converter stores Llama q/k projections with each head's rows reordered from
// Hugging Face's rotate-half layout (row i of the first half, then row i of the second half:
// pairs rotate together in RoPE) to interleaved pairs. With D = rows / n_head and half = D / 2,
// for head h, i < half, j in {0, 1}:
//   interleaved row h*D + 2*i + j  ==  rotate-half row h*D + j*half + i.
// Both take `rows` x `cols` row-major f32 (cols = 1 for a bias); rows must be a multiple of
// 2 * n_head. `src` and `dst` must not overlap.
void permute_rows_to_interleaved(const float* src, int64_t rows, int64_t cols, int64_t n_head,
                                 float* dst);  // HF -> GGUF (what the converter does)
void permute_rows_to_rotate_half(const float* src, int64_t rows, int64_t cols, int64_t n_head,
                                 float* dst);  // GGUF -> HF (what we do at load)

class GgufWeightSource final : public WeightSource {
 public:
  // `config` (from the same file) gives the head counts that undo the q/k permutation; it is
  // undone when the architecture of `config.model_type` says so (Architecture::
  // gguf_interleaved_qk: "llama"; llama.cpp leaves qwen2 / qwen3 rows alone).
  GgufWeightSource(GgufFile file, const ModelConfig& config);

  const GgufFile& file() const { return file_; }

  std::string describe() const override { return file_.path(); }
  bool has(const std::string& name) const override { return find(name).has_value(); }
  Result<std::vector<int64_t>> shape(const std::string& name) const override;
  std::vector<std::string> names() const override;
  Status check(const std::string& name, const std::vector<int64_t>& shape) const override;
  Status read_f32(const std::string& name, const std::vector<int64_t>& shape,
                  float* dst) const override;
  // Tensors of every stored_format() type (all but F64) whose rows are whole blocks (all but
  // 1-D quantized ones); q/k rows come in the un-permuted order.
  Result<std::optional<StoredTensor>> stored(const std::string& name,
                                             const std::vector<int64_t>& shape) const override;
  Result<size_t> stored_nbytes(const std::string& name) const override;

 private:
  // The bytes behind one Hugging Face name: a whole GGUF tensor or one expert's slice of it.
  struct View {
    const GgufTensorInfo* info = nullptr;
    std::string gguf_name;  // for messages: "blk.3.ffn_up_exps.weight[5]" for a slice
    std::vector<int64_t> shape;
    const uint8_t* data = nullptr;
    size_t nbytes = 0;
    int64_t numel = 0;
  };
  // nullopt when the file has no such tensor (or the slice is past its experts).
  std::optional<View> find(const std::string& hf_name) const;
  // find() with check()'s tests: the view of a tensor that may be read as `shape`.
  Result<View> checked(const std::string& hf_name, const std::vector<int64_t>& shape) const;
  // "weight 'model...' (GGUF tensor 'blk...') in FILE", for errors.
  std::string weight_label(const std::string& hf_name, const View& v) const;
  Status missing(const std::string& hf_name) const;
  // Heads whose rows to un-permute for `hf_name`, or 0 when it is not a permuted tensor.
  int64_t permuted_heads(const std::string& hf_name) const;

  GgufFile file_;
  MoeStyle moe_ = MoeStyle::kNone;  // spells the names() of routers and experts
  bool unpermute_qk_ = false;
  int64_t num_heads_ = 0;
  int64_t num_kv_heads_ = 0;
};

}  // namespace sgl::model
