// The text of single tokens for logprob listings: a token decoded after the few tokens before
// it, so that pieces keep the leading space they have mid-text.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tokenizer/tokenizer.h"

namespace sgl::server {

// Tokens of left context used (SGLang's detokenizer reads 5; pieces need far fewer).
constexpr size_t kTokenTextContext = 3;

// Decodes `id` after `context` (its last kTokenTextContext tokens), special tokens included.
std::string token_text(const tokenizer::Tokenizer& tokenizer, std::span<const int32_t> context,
                       int32_t id);

}  // namespace sgl::server
