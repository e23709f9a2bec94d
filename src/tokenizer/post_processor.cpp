// PostProcessor: template application for single sequences.
#include "tokenizer/post_processor.h"

namespace sgl::tokenizer {

std::vector<int32_t> PostProcessor::process(std::vector<int32_t> ids) const {
  for (const std::vector<TemplatePiece>& pieces : templates_) {
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const TemplatePiece& piece : pieces) {
      if (piece.is_sequence) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), piece.ids.begin(), piece.ids.end());
      }
    }
    ids = std::move(out);
  }
  return ids;
}

std::vector<int32_t> PostProcessor::prefix_ids() const {
  // A marker id never produced by the model stands in for the sequence.
  const std::vector<int32_t> processed = process({-1});
  std::vector<int32_t> prefix;
  for (int32_t id : processed) {
    if (id == -1) break;
    prefix.push_back(id);
  }
  return prefix;
}

std::vector<int32_t> PostProcessor::suffix_ids() const {
  const std::vector<int32_t> processed = process({-1});
  std::vector<int32_t> suffix;
  bool after = false;
  for (int32_t id : processed) {
    if (after) suffix.push_back(id);
    if (id == -1) after = true;
  }
  return suffix;
}

bool PostProcessor::wraps_once() const {
  for (const std::vector<TemplatePiece>& pieces : templates_) {
    int sequences = 0;
    for (const TemplatePiece& piece : pieces) sequences += piece.is_sequence ? 1 : 0;
    if (sequences != 1) return false;
  }
  return true;
}

}  // namespace sgl::tokenizer
