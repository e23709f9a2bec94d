// AddedVocabulary matching: the cases of HF's added_vocabulary.rs unit tests.
#include "tokenizer/added_vocabulary.h"

#include <gtest/gtest.h>

namespace sgl::tokenizer {
namespace {

using Splits = std::vector<std::pair<std::string, int32_t>>;

AddedToken token(int32_t id, std::string content, bool normalized, bool special = false) {
  AddedToken t;
  t.id = id;
  t.content = std::move(content);
  t.normalized = normalized;
  t.special = special;
  return t;
}

// Raw split, then normalization and normalized split of the text pieces (as encode does).
Splits extract(const AddedVocabulary& vocab, const Normalizer& normalizer, std::string_view text) {
  Splits out;
  for (const TextSegment& s : vocab.split(text, false)) {
    std::string piece(text.substr(s.begin, s.end - s.begin));
    if (s.id >= 0) {
      out.emplace_back(piece, s.id);
      continue;
    }
    normalizer.normalize(piece);
    for (const TextSegment& n : vocab.split(piece, true)) {
      out.emplace_back(piece.substr(n.begin, n.end - n.begin), n.id);
    }
  }
  return out;
}

Normalizer lowercase() {
  Normalizer n;
  n.add(normalizer::Lowercase{});
  return n;
}

TEST(AddedVocabularyTest, ExtractsNormalAndSpecialTokens) {
  const Normalizer none;
  AddedVocabulary vocab;
  vocab.build({token(0, "my", true), token(1, "name", true), token(2, "[CLS]", false, true),
               token(3, "[SEP]", false, true)},
              none);
  EXPECT_EQ(extract(vocab, none, "[CLS] My name is Anthony [SEP]"),
            (Splits{{"[CLS]", 2}, {" My ", -1}, {"name", 1}, {" is Anthony ", -1}, {"[SEP]", 3}}));
}

TEST(AddedVocabularyTest, OptionsUseCases) {
  const Normalizer normalizer = lowercase();
  AddedToken my = token(0, "my", true);
  my.lstrip = my.rstrip = true;
  AddedToken ony = token(2, "ony", true);
  ony.single_word = true;
  AddedVocabulary vocab;
  vocab.build({my, token(1, "name", true), ony, token(3, "[CLS]", false, true),
               token(4, "[SEP]", false, true)},
              normalizer);
  EXPECT_EQ(extract(vocab, normalizer, "[CLS] My name is Anthony [SEP]"),
            (Splits{{"[CLS]", 3}, {" my ", 0}, {"name", 1}, {" is anthony ", -1}, {"[SEP]", 4}}));
}

TEST(AddedVocabularyTest, SingleWord) {
  const Normalizer normalizer = lowercase();
  AddedToken mask = token(0, "<mask>", true);
  mask.single_word = true;
  AddedVocabulary vocab;
  vocab.build({mask}, normalizer);
  EXPECT_EQ(extract(vocab, normalizer, "<mask> My name <mask> A<mask> <mask>ony <mask>"),
            (Splits{{"<mask>", 0},
                    {" my name ", -1},
                    {"<mask>", 0},
                    {" a<mask> <mask>ony ", -1},
                    {"<mask>", 0}}));
  // Punctuation is not a word character; a combining mark is.
  EXPECT_EQ(
      extract(vocab, normalizer, "<mask>, <mask>- \xE2\x97\x8C\xCC\xB0<mask>"),
      (Splits{{"<mask>", 0}, {", ", -1}, {"<mask>", 0}, {"- \xE2\x97\x8C\xCC\xB0<mask>", -1}}));
}

TEST(AddedVocabularyTest, StripsUnicodeSpaces) {
  const Normalizer normalizer = lowercase();
  AddedToken mask = token(0, "<mask>", true);
  mask.lstrip = mask.rstrip = mask.single_word = true;
  AddedVocabulary vocab;
  vocab.build({mask}, normalizer);
  EXPECT_EQ(extract(vocab, normalizer, "Hi <mask> there\t<mask>\t<mask>\xE2\x80\x80"),
            (Splits{{"hi", -1},
                    {" <mask> ", 0},
                    {"there", -1},
                    {"\t<mask>\t", 0},
                    {"<mask>\xE2\x80\x80", 0}}));
}

TEST(AddedVocabularyTest, LeftmostLongest) {
  const Normalizer none;
  AddedVocabulary vocab;
  vocab.build({token(0, "<|a|>", false), token(1, "<|a|><|b|>", false), token(2, "|>", false)},
              none);
  EXPECT_EQ(extract(vocab, none, "x<|a|><|b|>y<|a|>"),
            (Splits{{"x", -1}, {"<|a|><|b|>", 1}, {"y", -1}, {"<|a|>", 0}}));
  EXPECT_TRUE(vocab.split("", false).empty());
}

}  // namespace
}  // namespace sgl::tokenizer
