// The Llama-3.1 vocabulary (128,256 ids, byte-level BPE) as a TokenizerInfo, read straight from
// the shared test data's tokenizer.json.gz: for the grammar bench and the tests that need a real
// vocabulary. Stop ids: <|eot_id|>, <|end_of_text|>, <|eom_id|>; other added tokens are special.
#pragma once

#include <zlib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grammar/tokenizer_info.h"

namespace sgl::grammar::test {

inline std::string default_llama3_path() {
  return std::string(SGL_TESTDATA_DIR) + "/tokenizers/llama3_1/tokenizer.json.gz";
}

inline std::string read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, n);
  gzclose(f);
  return out;
}

// Byte-level BPE: each token character stands for one byte (GPT-2's bytes_to_unicode).
inline std::vector<int> unicode_to_byte() {
  std::vector<int> map(512, -1);
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    map[printable ? b : 256 + n++] = b;
  }
  return map;
}

inline std::string decode_byte_level_token(const std::string& s, const std::vector<int>& map) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    uint32_t cp = c;
    int len = 1;
    if (c >= 0xC0) {
      len = c >= 0xE0 ? 3 : 2;
      cp = c & (len == 2 ? 0x1F : 0x0F);
      for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    }
    i += len;
    if (cp >= map.size() || map[cp] < 0) return "";  // not a byte-level token
    out += static_cast<char>(map[cp]);
  }
  return out;
}

// nullptr when the file is missing or unreadable.
inline std::shared_ptr<const TokenizerInfo> load_llama3_vocab(
    const std::string& path = default_llama3_path()) {
  const std::string text = read_gz(path);
  if (text.empty()) return nullptr;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return nullptr;
  const auto map = unicode_to_byte();
  std::vector<std::string> tokens;
  std::vector<int32_t> stops, specials;
  for (const auto& [tok, id] : j["model"]["vocab"].items()) {
    const int i = id.get<int>();
    if (static_cast<int>(tokens.size()) <= i) tokens.resize(i + 1);
    tokens[i] = decode_byte_level_token(tok, map);
  }
  for (const auto& a : j["added_tokens"]) {
    const int i = a["id"].get<int>();
    if (static_cast<int>(tokens.size()) <= i) tokens.resize(i + 1);
    tokens[i] = a["content"].get<std::string>();
    const std::string& c = tokens[i];
    if (c == "<|eot_id|>" || c == "<|end_of_text|>" || c == "<|eom_id|>") {
      stops.push_back(i);
    } else {
      specials.push_back(i);
    }
  }
  const auto n = static_cast<int32_t>(tokens.size());
  auto info = TokenizerInfo::create(std::move(tokens), n, stops, specials);
  if (!info.ok()) return nullptr;
  return std::make_shared<const TokenizerInfo>(std::move(info).value());
}

}  // namespace sgl::grammar::test
