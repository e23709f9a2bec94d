// Shared helpers for the chat template tests: rendering with a JSON context and the
// table-driven fixtures whose expectations come from Python Jinja2 (transformers' setup).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/chat_template/chat_template.h"

namespace sgl::tokenizer {

// strftime_now() sees 2026-11-21 12:00:00 in tests.
RenderOptions test_options();

// Parses `source` and renders it with the variables of the JSON object `context_json`.
Result<std::string> render_template(std::string_view source, std::string_view context_json = "{}",
                                    const RenderOptions& options = test_options());

// `expected` is the rendered text (ChatTemplateRender) or the error message
// (ChatTemplateRenderError) that jinja2 3.1 produces in transformers'
// ImmutableSandboxedEnvironment.
struct RenderCase {
  const char* name;
  const char* source;
  const char* context_json;
  const char* expected;
};

inline void PrintTo(const RenderCase& c, std::ostream* os) { *os << c.name; }

class ChatTemplateRender : public ::testing::TestWithParam<RenderCase> {};
class ChatTemplateRenderError : public ::testing::TestWithParam<RenderCase> {};

struct CaseName {
  std::string operator()(const ::testing::TestParamInfo<RenderCase>& info) const {
    return info.param.name;
  }
};

// Drops the " (line N)" suffix our syntax errors carry (Python keeps the line separately).
std::string without_line_suffix(const std::string& message);

}  // namespace sgl::tokenizer
