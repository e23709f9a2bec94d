// The class-loop shortcuts of the mask walk: the tokenizer-level ClassTokenSets (class tokens,
// exit nodes) equal a brute force over real vocabularies, and masks at positions inside class
// loops (a JSON string, an email's and a URI's characters) over the Llama-3 vocabulary equal
// trying every token.
#include "grammar/class_token_sets.h"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>

#include "grammar/json_schema_compiler.h"
#include "grammar/utf8.h"
#include "grammar_test_util.h"
#include "llama3_vocab.h"
#include "test_paths.h"

namespace sgl::grammar {
namespace {

// `bytes` are class characters (the last multibyte one possibly cut). Written apart from
// ClassTokenSets: decodes with decode_utf8 and completes a cut tail by trying continuations.
bool brute_force_in_class(const std::string& bytes, const ByteClass& cls) {
  bool multibyte = false;
  for (char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    if (b < 0x80 && !cls.has(b)) return false;
    multibyte = multibyte || b >= 0x80;
  }
  if (!multibyte) return true;
  if (!cls.utf8) return false;
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (decode_utf8(bytes, pos) < 0) break;
  }
  if (pos == bytes.size()) return true;
  const std::string tail = bytes.substr(pos);
  if (tail.size() > 3) return false;
  for (uint8_t a : {0x80, 0x90, 0xA0}) {
    for (size_t extra = 1; extra + tail.size() <= 4; ++extra) {
      std::string full = tail + std::string(extra, static_cast<char>(0x80));
      full[tail.size()] = static_cast<char>(a);
      size_t p = 0;
      if (decode_utf8(full, p) >= 0 && p == full.size()) return true;
    }
  }
  return false;
}

ByteClass make_class(const std::string& bytes, bool utf8) {
  ByteClass cls;
  for (char c : bytes) cls.add(static_cast<uint8_t>(c));
  cls.utf8 = utf8;
  return cls;
}

std::string path_bytes(const TokenTrie& trie, TokenTrie::NodeId n) {
  std::string out;
  for (; n != 0; n = trie.parent(n)) out.insert(out.begin(), static_cast<char>(trie.byte(n)));
  return out;
}

TEST(grammar_class_token_sets, EqualBruteForceOverRealVocabularies) {
  std::string plain, email, alnum;
  for (int b = 0x20; b < 0x7F; ++b) {
    if (b != '"' && b != '\\') plain.push_back(static_cast<char>(b));
    if (std::isalnum(b) ||
        std::string("!#$%&'*+/=?^_`{|}~-").find(static_cast<char>(b)) != std::string::npos) {
      email.push_back(static_cast<char>(b));
    }
    if (std::isalnum(b)) alnum.push_back(static_cast<char>(b));
  }
  const ByteClass classes[] = {make_class(plain, true), make_class(plain + "\x7F", true),
                               make_class(email, false), make_class(alnum, true),
                               make_class("0123456789", false)};
  int tested = 0;
  for (const char* name : {"llama3_1", "qwen3", "gpt2"}) {
    const std::string dir = sgl::test::testdata_dir().string() + "/tokenizers/" + name;
    if (!std::filesystem::exists(dir)) continue;
    const auto info = test::load_llama3_vocab(dir);
    ASSERT_NE(info, nullptr) << dir;
    const TokenTrie& trie = info->trie();
    for (const ByteClass& cls : classes) {
      const auto sets = info->class_tokens(cls);
      ASSERT_NE(sets, nullptr);
      EXPECT_EQ(sets, info->class_tokens(cls));  // cached
      const auto bits = sets->bits();
      ASSERT_EQ(static_cast<int32_t>(bits.size()), info->bitmask_words());
      for (int32_t id = 0; id < info->vocab_size(); ++id) {
        const bool expected = id < info->num_tokens() && info->is_regular(id) &&
                              brute_force_in_class(info->token_bytes(id), cls);
        ASSERT_EQ(((bits[id >> 5] >> (id & 31)) & 1) != 0, expected) << name << " id " << id;
      }
      std::vector<TokenTrie::NodeId> inside, inside_not_plain, exits;
      for (TokenTrie::NodeId v = 1; v < trie.num_nodes(); ++v) {
        const std::string path = path_bytes(trie, v);
        const bool in = brute_force_in_class(path, cls);
        if (in && !trie.tokens_at(v).empty()) {
          inside.push_back(v);
          if (trie.plain_chars_to(v) == TokenTrie::kNotPlain) inside_not_plain.push_back(v);
        }
        if (!in && brute_force_in_class(path.substr(0, path.size() - 1), cls)) exits.push_back(v);
      }
      EXPECT_EQ(sets->inside(), inside) << name;
      EXPECT_EQ(sets->inside_not_plain(), inside_not_plain) << name;
      EXPECT_EQ(sets->exits(), exits) << name;
    }
    ++tested;
  }
  if (tested == 0) GTEST_SKIP() << "no tokenizers under " << sgl::test::testdata_dir();
}

TEST(grammar_class_token_sets, MasksInClassLoopsEqualEveryTokenTriedWithLlama3) {
  const auto info = test::load_llama3_vocab();
  if (info == nullptr) GTEST_SKIP() << "no Llama-3.1 tokenizer under " << sgl::test::testdata_dir();
  const char* schema = R"({"type": "object", "properties": {
      "s": {"type": "string"}, "e": {"type": "string", "format": "email"},
      "u": {"type": "string", "format": "uri"}, "b": {"type": "string", "maxLength": 30}},
      "required": ["s", "e", "u", "b"]})";
  // Fresh grammars: each prefix's position is computed on first use.
  for (const char* prefix :
       {"{\"s\":\"", "{\"s\":\"ab", "{\"s\":\"a\xC3", "{\"s\":\"\",\"e\":\"",
        "{\"s\":\"\",\"e\":\"a", "{\"s\":\"\",\"e\":\"a.b", "{\"s\":\"\",\"e\":\"a@b",
        "{\"s\":\"\",\"e\":\"a@b.c", "{\"s\":\"\",\"e\":\"a@b.co\",\"u\":\"h",
        "{\"s\":\"\",\"e\":\"a@b.co\",\"u\":\"http:/", "{\"s\":\"\",\"e\":\"a@b.co\",\"u\":\"a:%2",
        "{\"s\":\"\",\"e\":\"a@b.co\",\"u\":\"a:b\",\"b\":\"\xE2\x82",
        "{\"s\":\"\",\"e\":\"a@b.co\",\"u\":\"a:b\",\"b\":\"01234567890123456789012345"}) {
    test::expect_mask_is_brute_force(test::must_compile(*json_schema_to_grammar(schema), info),
                                     *info, prefix);
  }
}

}  // namespace
}  // namespace sgl::grammar
