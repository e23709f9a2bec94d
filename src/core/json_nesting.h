// A bound on how deeply JSON text nests, checked on the text before a parser sees it: parsing
// is iterative, but what walks a parsed value afterwards (dump(), copies, conversions) recurses,
// and a file or body of a million brackets would overflow the stack there.
#pragma once

#include <string_view>

#include "core/status.h"

namespace sgl {

// Deeper than any real model config, tokenizer or request body.
inline constexpr int kMaxJsonNesting = 128;

// kInvalidArgument "the JSON nests deeper than N" when `text` opens more than `max_depth`
// arrays / objects inside one another (brackets inside strings do not count).
Status check_json_nesting(std::string_view text, int max_depth = kMaxJsonNesting);

}  // namespace sgl
