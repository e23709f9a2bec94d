// The /tokenize reply body: its JSON layout, and the peak heap of parsing a request and building
// the reply for 4 MiB of text (tests/heap/heap_peak.h counts every allocation of this binary):
// measured 4.9x the text; 53.7x with JSON arrays of the ids and the old encoder.
#include "server/tokenize_reply.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "heap/heap_peak.h"
#include "mixed_text.h"
#include "server/openai_json.h"
#include "test_data.h"

namespace sgl::server {
namespace {

using json = nlohmann::ordered_json;

std::unique_ptr<tokenizer::Tokenizer> llama3() {
  auto tok = tokenizer::Tokenizer::from_dir(test::testdata_dir() / "tokenizers" / "llama3_1");
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

TEST(TokenizeReply, LayoutOfOnePromptAndOfABatch) {
  const auto tok = llama3();
  ASSERT_NE(tok, nullptr);
  TokenizeInput one;
  one.prompts = {"Hello world, 123!"};
  const std::vector<int32_t> ids = tok->encode(one.prompts[0], {});
  const json expected_one = {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", 8192}};
  EXPECT_EQ(tokenize_reply_body(*tok, one, 8192), expected_one.dump());

  TokenizeInput batch;
  batch.batch = true;
  batch.add_special_tokens = false;
  batch.prompts = {"a", "", "\xE4\xB8\xAD\xE6\x96\x87 text"};
  json tokens = json::array(), counts = json::array();
  for (const std::string& p : batch.prompts) {
    const std::vector<int32_t> p_ids = tok->encode(p, {.add_special_tokens = false});
    tokens.push_back(p_ids);
    counts.push_back(p_ids.size());
  }
  const json expected_batch = {{"tokens", tokens}, {"count", counts}, {"max_model_len", 4}};
  EXPECT_EQ(tokenize_reply_body(*tok, batch, 4), expected_batch.dump());
}

// SGLang's chat form (messages and the chat fields) is refused by name, not ignored beside a
// prompt; a value that asks for nothing is accepted.
TEST(TokenizeRequest, ChatFormIsRefusedByName) {
  for (const char* field : {"messages", "tools", "chat_template_kwargs", "add_generation_prompt"}) {
    const json asks = field == std::string("add_generation_prompt") ? json(true)
                      : field == std::string("chat_template_kwargs")
                          ? json{{"x", 1}}
                          : json::array({json{{"role", "user"}}});
    const auto refused = parse_tokenize_request(json{{"prompt", "a"}, {field, asks}}.dump());
    ASSERT_FALSE(refused.ok()) << field;
    EXPECT_NE(refused.status().message().find(std::string("'") + field + "' is not supported"),
              std::string::npos)
        << refused.status().to_string();
    EXPECT_TRUE(parse_tokenize_request(json{{"prompt", "a"}, {field, nullptr}}.dump()).ok());
  }
}

TEST(TokenizeReply, PeakIsASmallMultipleOfTheText) {
  const auto tok = llama3();
  ASSERT_NE(tok, nullptr);
  const std::string text = test::mixed_text(4 << 20);
  const std::string body = json{{"prompt", text}}.dump();
  (void)tok->encode(text, {});  // fills the word cache, which is bounded, not proportional
  test::HeapPeak peak;
  std::string reply;
  {
    auto input = parse_tokenize_request(body);
    ASSERT_TRUE(input.ok()) << input.status().to_string();
    reply = tokenize_reply_body(*tok, *input, 131072);
  }
  const double factor = static_cast<double>(peak.peak_growth()) / static_cast<double>(text.size());
  std::printf("%zu bytes of text, %zu bytes of reply: peak +%lld bytes (%.2fx)\n", text.size(),
              reply.size(), static_cast<long long>(peak.peak_growth()), factor);
  EXPECT_GE(peak.peak_growth(), static_cast<int64_t>(reply.size()));  // the counter counts
  EXPECT_LE(factor, 6.0);
}

}  // namespace
}  // namespace sgl::server
