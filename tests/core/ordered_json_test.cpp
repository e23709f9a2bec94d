// parse_ordered_json against nlohmann's own parser: the same values, keys in their order, a
// repeated key's first place and last value, the same errors; nesting past the limit refused.
#include "core/ordered_json.h"

#include <gtest/gtest.h>

#include <string>

namespace sgl {
namespace {

TEST(OrderedJson, EqualsNlohmannsParse) {
  for (const char* text :
       {R"({"z": 1, "a": [true, null, -2.5e3, "s\u00e9\n"], "m": {"y": {}, "b": []}})",
        R"([1, 18446744073709551615, -9223372036854775808, 0.1])", R"("just a string")",
        R"({"k": 1, "j": 2, "k": 3})", "  {}  "}) {
    auto ours = parse_ordered_json(text);
    ASSERT_TRUE(ours.ok()) << text << ": " << ours.status().to_string();
    EXPECT_EQ(*ours, nlohmann::ordered_json::parse(text)) << text;
    EXPECT_EQ(ours->dump(), nlohmann::ordered_json::parse(text).dump()) << text;  // key order
  }
  for (const char* text : {"{", R"({"a": 1,})", "[1] 2", "1e400", "\"\xff\"", ""}) {
    auto ours = parse_ordered_json(text);
    ASSERT_FALSE(ours.ok()) << text;
    try {
      const auto accepted = nlohmann::ordered_json::parse(text);
      ADD_FAILURE() << "nlohmann accepted " << text << " as " << accepted.dump();
    } catch (const nlohmann::json::exception& e) {
      EXPECT_EQ(ours.status().message(), e.what()) << text;
    }
  }
}

TEST(OrderedJson, NestingPastTheLimitIsAnError) {
  const auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_TRUE(parse_ordered_json(nested(kMaxOrderedJsonDepth)).ok());
  auto deep = parse_ordered_json(nested(kMaxOrderedJsonDepth + 1));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nested too deeply (deeper than 128)"), std::string::npos);
  EXPECT_TRUE(parse_ordered_json(nested(500), 1000).ok());
}

TEST(OrderedJson, ManyKeysInTheirOrder) {
  std::string text = "{";
  for (int i = 200000; i > 0; --i)
    text += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ",";
  text.back() = '}';
  auto parsed = parse_ordered_json(text);
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->size(), 200000u);
  EXPECT_EQ(parsed->begin().key(), "k200000");
  EXPECT_EQ((*parsed)["k1"], 1);
}

}  // namespace
}  // namespace sgl
