// TextOffsets.
#include "server/text_offsets.h"

#include <algorithm>

#include "core/utf8.h"

namespace sgl::server {

TextOffsets::TextOffsets(const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& context,
                         tokenizer::DecodeOptions options, size_t start, size_t limit)
    : detok_(tokenizer, context, options), offset_(std::min(start, limit)), limit_(limit) {}

size_t TextOffsets::next(int32_t id) {
  const size_t at = offset_;
  offset_ = std::min(limit_, offset_ + utf8_length(detok_.add({id})));
  return at;
}

}  // namespace sgl::server
