// libFuzzer target: loading a tokenizer from tokenizer.json text (HfTokenizer::from_json), then
// encoding and decoding a few short strings and decoding arbitrary ids. Loading may fail, with a
// message; a tokenizer that loads must encode to ids inside its vocabulary and decode any ids.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "tokenizer/hf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sgl::tokenizer;
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto loaded = HfTokenizer::from_json(json);
  if (!loaded.ok()) {
    SGL_CHECK(!loaded.status().message().empty()) << "an error without a message";
    return 0;
  }
  const HfTokenizer& tok = **loaded;
  const int64_t vocab = tok.vocab_size();
  SGL_CHECK_GE(vocab, 0);
  // Plain words, digits, spaces, newlines, accents, CJK, an emoji, special-looking text and an
  // invalid UTF-8 byte.
  static constexpr std::string_view kTexts[] = {
      "Hello world! 123", "  two  spaces\n\ttab",
      "caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80", "<s>[INST] <|im_start|>user</s>",
      "\xff broken \xc3"};
  for (std::string_view text : kTexts) {
    for (bool special : {true, false}) {
      const std::vector<int32_t> ids = tok.encode(text, {.add_special_tokens = special});
      for (int32_t id : ids) SGL_CHECK(id >= 0 && id < vocab) << "id " << id << " of " << vocab;
      (void)tok.decode(ids, {.skip_special_tokens = !special});
    }
  }
  // Ids around the vocabulary's edges, out of range ones included (decode skips those).
  std::vector<int32_t> ids = {-1, 0, 1, 2, 3};
  for (int64_t id : {vocab - 2, vocab - 1, vocab, vocab + 1}) {
    if (id >= 0 && id <= INT32_MAX) ids.push_back(static_cast<int32_t>(id));
  }
  (void)tok.decode(ids, {.skip_special_tokens = false});
  (void)tok.decode(ids, {.skip_special_tokens = true, .spaces_between_special_tokens = true});
  for (int32_t id : ids) {
    if (const auto token = tok.id_to_token(id)) (void)tok.token_to_id(*token);
    (void)tok.is_special(id);
  }
  return 0;
}
