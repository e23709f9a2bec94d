// Jinja lexer: splits template source into data, tag and expression tokens, applying whitespace
// control (`-`/`+` markers, trim_blocks, lstrip_blocks) exactly as Jinja2's lexer does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace sgl::tokenizer::jinja {

enum class TokenType {
  kData,           // literal template text (raw blocks included)
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,  // text holds the unescaped value
  kInteger,
  kFloat,
  kOperator,  // text holds the operator, e.g. "//", "(", "|"
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Errors are TemplateSyntaxError statuses naming the line.
Result<std::vector<Token>> tokenize(std::string_view source, const LexerOptions& options);

}  // namespace sgl::tokenizer::jinja
