// libFuzzer target: the Jinja lexer and parser (ChatTemplate::parse) over arbitrary template text.
// Parsing either succeeds or fails with a message; it never renders (jinja_template_fuzz does).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "tokenizer/chat_template/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  const auto parsed = sgl::tokenizer::ChatTemplate::parse(source);
  if (parsed.ok()) {
    SGL_CHECK_EQ(parsed->source(), source);
  } else {
    SGL_CHECK(!parsed.status().message().empty()) << "an error without a message";
  }
  return 0;
}
