// Parsers for tokenizer.json's normalizer, pre_tokenizer, decoder and post_processor sections.
// NOTE: internal to src/tokenizer/*.cpp (uses JsonReader).
#pragma once

#include <string>

#include "tokenizer/decoders.h"
#include "tokenizer/json_reader.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizers.h"

namespace sgl::tokenizer {

// Each appends the steps of `value` (null = none; Sequence = flattened) at `path`.
Status parse_normalizer(const JsonReader& reader, const Json& value, const std::string& path,
                        Normalizer& out);
Status parse_pre_tokenizer(const JsonReader& reader, const Json& value, const std::string& path,
                           PreTokenizer& out);
Status parse_decoder(const JsonReader& reader, const Json& value, const std::string& path,
                     Decoder& out);
Status parse_post_processor(const JsonReader& reader, const Json& value, const std::string& path,
                            PostProcessor& out);

}  // namespace sgl::tokenizer
