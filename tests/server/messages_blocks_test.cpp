// A Messages reply's content blocks from hand-made choice deltas: the whole reply's blocks, and
// the stream's block events — indices, each piece in its block, every started block stopped, no
// argument piece lost when a delta also carries text, no empty text block beside calls.
#include "server/messages_blocks.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace sgl::server::anthropic {
namespace {

using json = nlohmann::json;

// The events of an SSE text, each as {"event": name, ...data}.
std::vector<json> events(const std::string& sse) {
  std::vector<json> out;
  std::istringstream in(sse);
  std::string line, name;
  while (std::getline(in, line)) {
    if (line.starts_with("event: ")) name = line.substr(7);
    if (!line.starts_with("data: ")) continue;
    json data = json::parse(line.substr(6));
    EXPECT_EQ(data["type"], name);
    out.push_back(std::move(data));
  }
  return out;
}

// Checks the block events are well formed (each index started once, its deltas inside, stopped
// once, indices from 0 in order) and returns each block: its start's content_block with the
// deltas' text joined into "text", "thinking" or "partial_json".
std::vector<json> blocks(const std::vector<json>& evs) {
  std::vector<json> out;
  bool open = false;
  for (const json& e : evs) {
    if (e["type"] == "content_block_start") {
      EXPECT_FALSE(open);
      EXPECT_EQ(e["index"], out.size());
      out.push_back(e["content_block"]);
      out.back()["partial_json"] = "";
      open = true;
    } else if (e["type"] == "content_block_delta") {
      EXPECT_TRUE(open);
      EXPECT_EQ(e["index"], out.size() - 1);
      const json& d = e["delta"];
      json& b = out.back();
      if (d["type"] == "text_delta") {
        EXPECT_EQ(b["type"], "text");
        b["text"] = b["text"].get<std::string>() + d["text"].get<std::string>();
      } else if (d["type"] == "thinking_delta") {
        EXPECT_EQ(b["type"], "thinking");
        b["thinking"] = b["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      } else {
        EXPECT_EQ(d["type"], "input_json_delta");
        EXPECT_EQ(b["type"], "tool_use");
        b["partial_json"] =
            b["partial_json"].get<std::string>() + d["partial_json"].get<std::string>();
      }
    } else if (e["type"] == "content_block_stop") {
      EXPECT_TRUE(open);
      EXPECT_EQ(e["index"], out.size() - 1);
      open = false;
    }
  }
  EXPECT_FALSE(open) << "a block was never stopped";
  for (json& b : out) {
    if (b["partial_json"] == "") b.erase("partial_json");
  }
  return out;
}

// The stream's events for `deltas` fed in order (operands of + are not evaluated in order).
std::string streamed(BlockStream& s, const std::vector<ChoiceDelta>& deltas) {
  std::string sse = s.start();
  for (const ChoiceDelta& d : deltas) sse += s.add(d);
  return sse + s.finish();
}

ChoiceDelta text(std::string t) {
  ChoiceDelta d;
  d.text = std::move(t);
  return d;
}

ToolCallDelta call(int32_t index, std::string id, std::string name, std::string args) {
  return {index, std::move(id), std::move(name), std::move(args)};
}

TEST(MessagesBlocks, TextOnlyOpensItsBlockAtTheStart) {
  BlockStream first(/*text_first=*/true);
  EXPECT_EQ(events(first.start()).size(), 1u);  // the text block opens before any text
  BlockStream s(/*text_first=*/true);
  EXPECT_EQ(blocks(events(streamed(s, {text("Once"), text(" upon")}))),
            (std::vector<json>{{{"type", "text"}, {"text", "Once upon"}}}));
  // Nothing written: the empty text block still comes.
  BlockStream empty(false);
  EXPECT_EQ(blocks(events(streamed(empty, {}))),
            (std::vector<json>{{{"type", "text"}, {"text", ""}}}));
}

TEST(MessagesBlocks, OnlyCallsMakeNoTextBlock) {
  BlockStream s(/*text_first=*/false);
  ChoiceDelta d;
  d.tool_calls = {call(0, "call_a1", "get_time", R"({"zone": "UTC"})")};
  d.finished = true;
  EXPECT_EQ(blocks(events(streamed(s, {d}))),
            (std::vector<json>{{{"type", "tool_use"},
                                {"id", "toolu_a1"},
                                {"name", "get_time"},
                                {"input", json::object()},
                                {"partial_json", R"({"zone": "UTC"})"}}}));
}

TEST(MessagesBlocks, NoArgumentPieceIsLostBesideText) {
  BlockStream s(false);
  ChoiceDelta first;
  first.reasoning = "Think.";
  first.text = "Checking.";
  first.tool_calls = {call(0, "call_1", "f", R"({"a": )")};
  // The call's last piece, then text after it and a second call, in one delta.
  ChoiceDelta second;
  second.text = " Done.";
  second.tool_calls = {call(0, "", "", "1}"), call(1, "call_2", "g", "{}")};
  EXPECT_EQ(blocks(events(streamed(s, {first, second}))),
            (std::vector<json>{
                {{"type", "thinking"}, {"thinking", "Think."}, {"signature", ""}},
                {{"type", "text"}, {"text", "Checking."}},
                {{"type", "tool_use"},
                 {"id", "toolu_1"},
                 {"name", "f"},
                 {"input", json::object()},
                 {"partial_json", R"({"a": 1})"}},
                {{"type", "text"}, {"text", " Done."}},
                {{"type", "tool_use"},
                 {"id", "toolu_2"},
                 {"name", "g"},
                 {"input", json::object()},
                 {"partial_json", "{}"}},
            }));
}

TEST(MessagesBlocks, CloseEndsAnOpenBlockForAnError) {
  BlockStream s(false);
  std::string sse = s.start();
  sse += s.add(text("partial"));
  sse += s.close();
  EXPECT_EQ(blocks(events(sse)), (std::vector<json>{{{"type", "text"}, {"text", "partial"}}}));
  EXPECT_EQ(s.close(), "");  // nothing left open
}

TEST(MessagesBlocks, WholeReplyBlocks) {
  ChoiceDelta total;
  total.reasoning = "Think.";
  total.tool_calls = {call(0, "call_1", "f", R"({"a": 1})"), call(1, "call_2", "g", R"({"b": )")};
  EXPECT_EQ(json(content_blocks(total)),
            json::parse(R"([{"type": "thinking", "thinking": "Think.", "signature": ""},
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
                {"type": "tool_use", "id": "toolu_2", "name": "g", "input": {}}])"));
  EXPECT_EQ(json(content_blocks(text(""))), json::parse(R"([{"type": "text", "text": ""}])"));
  total.text = "Sure.";
  EXPECT_EQ(json(content_blocks(total))[1], json::parse(R"({"type": "text", "text": "Sure."})"));
}

}  // namespace
}  // namespace sgl::server::anthropic
