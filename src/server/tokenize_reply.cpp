// tokenize_reply_body: ids written with std::to_chars into a body sized ahead, one prompt at a
// time (a JSON array of ids costs 16 bytes per element before its dump; digits cost ~6).
#include "server/tokenize_reply.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace sgl::server {
namespace {

// Room for the body's end: `,"count":` and `,"max_model_len":` with their numbers and brackets,
// plus, for a batch, each prompt's count.
size_t tail_bytes(size_t prompts) { return 64 + 24 * prompts; }

template <typename Int>
std::string_view digits(Int value, char (&buffer)[24]) {
  return {buffer, std::to_chars(buffer, buffer + sizeof(buffer), value).ptr};
}

// Bytes of `ids` as a JSON array.
size_t array_bytes(const std::vector<int32_t>& ids) {
  char buffer[24];
  size_t bytes = 2 + (ids.empty() ? 0 : ids.size() - 1);
  for (int32_t id : ids) bytes += digits(id, buffer).size();
  return bytes;
}

// Makes room for `extra` more bytes: exactly when the body is small (a single prompt's ids are
// then written without a copy), else growing by half so that a batch is not copied per prompt.
void make_room(std::string& body, size_t extra) {
  const size_t needed = body.size() + extra;
  if (needed > body.capacity()) body.reserve(std::max(needed, body.capacity() * 3 / 2));
}

void append_array(std::string& body, const std::vector<int32_t>& ids) {
  char buffer[24];
  body.push_back('[');
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) body.push_back(',');
    body.append(digits(ids[i], buffer));
  }
  body.push_back(']');
}

}  // namespace

std::string tokenize_reply_body(const tokenizer::Tokenizer& tokenizer, const TokenizeInput& input,
                                int64_t max_model_len) {
  tokenizer::EncodeOptions options;
  options.add_special_tokens = input.add_special_tokens;
  char buffer[24];
  std::string body = "{\"tokens\":";
  std::string counts;
  if (input.batch) body.push_back('[');
  for (size_t i = 0; i < input.prompts.size(); ++i) {
    const std::vector<int32_t> ids = tokenizer.encode(input.prompts[i], options);
    make_room(body, 1 + array_bytes(ids) + tail_bytes(input.prompts.size()));
    if (i > 0) body.push_back(',');
    append_array(body, ids);
    if (i > 0) counts.push_back(',');
    counts.append(digits(ids.size(), buffer));
  }
  if (input.batch) body.push_back(']');
  body.append(",\"count\":");
  if (input.batch) body.push_back('[');
  body.append(counts);
  if (input.batch) body.push_back(']');
  body.append(",\"max_model_len\":").append(digits(max_model_len, buffer)).push_back('}');
  return body;
}

}  // namespace sgl::server
