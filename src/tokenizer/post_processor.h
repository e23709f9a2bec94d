// PostProcessor: adds special tokens around an encoded sequence (TemplateProcessing & co).
#pragma once

#include <cstdint>
#include <vector>

namespace sgl::tokenizer {

// One element of a single-sequence template: the sequence itself or a run of special ids.
struct TemplatePiece {
  bool is_sequence = false;
  std::vector<int32_t> ids;  // special-token ids when !is_sequence
};

// The flattened single-sequence templates of a TemplateProcessing / Bert / Roberta processor
// (ByteLevel post-processing only trims offsets, so it contributes nothing here), applied in
// order. Immutable after build.
class PostProcessor {
 public:
  void add_template(std::vector<TemplatePiece> pieces) { templates_.push_back(std::move(pieces)); }
  bool empty() const { return templates_.empty(); }

  // Returns `ids` wrapped by every template.
  std::vector<int32_t> process(std::vector<int32_t> ids) const;

  // The ids added before / after the sequence (to reconcile with add_bos_token/add_eos_token).
  std::vector<int32_t> prefix_ids() const;
  std::vector<int32_t> suffix_ids() const;
  // Whether every template holds the sequence exactly once, so that process(ids) is
  // prefix_ids() + ids + suffix_ids().
  bool wraps_once() const;

 private:
  std::vector<std::vector<TemplatePiece>> templates_;
};

}  // namespace sgl::tokenizer
