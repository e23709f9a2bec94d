// Loaders for a tokenizer's definition: tokenizer.json, or GPT-2's vocab.json + merges.txt.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoders.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizers.h"

namespace sgl::tokenizer {

// Everything a tokenizer.json describes that encode/decode need.
struct TokenizerSpec {
  std::unique_ptr<BpeModel> model;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  Decoder decoder;
  PostProcessor post_processor;
  std::vector<AddedToken> added_tokens;
};

// Parses tokenizer.json text. `file` names the source in error messages. Unsupported but
// well-formed components (a Unigram model, a BertNormalizer) are Unimplemented errors.
Result<TokenizerSpec> parse_tokenizer_json(std::string_view json_text, const std::string& file,
                                           size_t cache_capacity = 65536);

// GPT-2's original files: vocab.json ({token: id}) and merges.txt ("#version" header, "a b"
// lines). Builds a byte-level BPE; "<|endoftext|>" becomes a special added token if present.
Result<TokenizerSpec> parse_vocab_merges(std::string_view vocab_json, const std::string& vocab_file,
                                         std::string_view merges_txt,
                                         const std::string& merges_file);

}  // namespace sgl::tokenizer
