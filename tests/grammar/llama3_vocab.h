// The Llama-3.1 vocabulary (128,256 ids, byte-level BPE) as a TokenizerInfo, loaded the way the
// server loads any vocabulary (Tokenizer::token_bytes through server::grammar_tokenizer_info):
// for the grammar bench and the tests that need a real vocabulary. Stop ids: <|eot_id|>,
// <|end_of_text|>, <|eom_id|>; the other special tokens are never allowed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "grammar/tokenizer_info.h"
#include "server/grammar_backend.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace sgl::grammar::test {

inline std::string default_llama3_path() {
  return (sgl::test::testdata_dir() / "tokenizers" / "llama3_1").string();
}

// `dir`: a tokenizer directory. nullptr when it is missing or unreadable.
inline std::shared_ptr<const TokenizerInfo> load_llama3_vocab(
    const std::string& dir = default_llama3_path()) {
  auto tok = tokenizer::Tokenizer::from_dir(dir);
  if (!tok.ok()) return nullptr;
  std::vector<int32_t> stops;
  for (const char* name : {"<|eot_id|>", "<|end_of_text|>", "<|eom_id|>"}) {
    if (const auto id = (*tok)->token_to_id(name)) stops.push_back(*id);
  }
  auto info = server::grammar_tokenizer_info(**tok, (*tok)->vocab_size(), stops);
  if (!info.ok()) return nullptr;
  return std::make_shared<const TokenizerInfo>(std::move(info).value());
}

}  // namespace sgl::grammar::test
