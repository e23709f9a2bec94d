// Grammar sources (EBNF, regex, JSON Schema; the first byte picks) compiled for a small
// vocabulary; what compiles is then driven by the rest of the input: masks must agree with
// accept_token, and rollback must restore the mask. Errors must be clean statuses.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/check.h"
#include "grammar/compiled_grammar.h"
#include "grammar/ebnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/regex_compiler.h"

namespace {

std::shared_ptr<const sgl::grammar::TokenizerInfo> vocab() {
  static const auto kVocab = [] {
    std::vector<std::string> tokens = {"<eos>"};
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
    for (const char* t : {"{\"", "\":", "\",", "\"}", "true", "null", "12", "ab", "\xC3\xA9"}) {
      tokens.push_back(t);
    }
    const auto n = static_cast<int32_t>(tokens.size());
    return std::make_shared<const sgl::grammar::TokenizerInfo>(
        sgl::grammar::TokenizerInfo::create(std::move(tokens), n, {0}).value());
  }();
  return kVocab;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sgl::grammar;
  if (size < 2) return 0;
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Source, then (after a NUL) the bytes that drive the matcher.
  const size_t nul = input.find('\0');
  const std::string source = input.substr(0, nul);
  const std::string drive = nul == std::string::npos ? "" : input.substr(nul + 1);
  sgl::Result<Grammar> g = sgl::invalid_argument("unset");
  switch (data[0] % 3) {
    case 0:
      g = parse_ebnf(source);
      break;
    case 1:
      g = regex_to_grammar(source);
      break;
    default:
      g = json_schema_to_grammar(source);
      break;
  }
  if (!g.ok()) {
    SGL_CHECK(!g.status().message().empty());
    return 0;
  }
  auto compiled = CompiledGrammar::compile(std::move(g).value(), vocab());
  if (!compiled.ok()) {
    SGL_CHECK(!compiled.status().message().empty());
    return 0;
  }
  GrammarMatcher m(*compiled);
  std::vector<uint32_t> mask(m.bitmask_words()), again(m.bitmask_words());
  const int32_t n = vocab()->num_tokens();
  // (Once terminated the mask holds only the stop tokens, which are not accepted again.)
  for (size_t i = 0; i < drive.size() && i < 64 && !m.is_terminated(); ++i) {
    m.fill_next_token_bitmask(mask.data());
    const int32_t id = static_cast<uint8_t>(drive[i]) % n;
    const bool allowed = (mask[id >> 5] >> (id & 31)) & 1;
    const bool accepted = m.accept_token(id);
    SGL_CHECK_EQ(allowed, accepted) << "token " << id;
    if (accepted && (i % 5) == 4) {
      m.rollback(1);
      m.fill_next_token_bitmask(again.data());
      SGL_CHECK(again == mask);
      SGL_CHECK(m.accept_token(id));
    }
  }
  return 0;
}
