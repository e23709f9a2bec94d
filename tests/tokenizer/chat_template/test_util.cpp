// Shared chat template test helpers and the table-driven render / error tests.
#include "tokenizer/chat_template/test_util.h"

#include <regex>

namespace sgl::tokenizer {

RenderOptions test_options() {
  RenderOptions options;
  options.now = [] {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 10;
    tm.tm_mday = 21;
    tm.tm_hour = 12;
    return tm;
  };
  return options;
}

Result<std::string> render_template(std::string_view source, std::string_view context_json,
                                    const RenderOptions& options) {
  SGL_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::parse(source));
  return tmpl.render_json(context_json, options);
}

std::string without_line_suffix(const std::string& message) {
  static const std::regex kLine(R"( \(line \d+\)$)");
  return std::regex_replace(message, kLine, "");
}

TEST_P(ChatTemplateRender, MatchesJinja) {
  const RenderCase& c = GetParam();
  auto out = render_template(c.source, c.context_json);
  ASSERT_TRUE(out.ok()) << c.source << "\n" << out.status().to_string();
  EXPECT_EQ(*out, c.expected) << c.source;
}

TEST_P(ChatTemplateRenderError, RaisesLikeJinja) {
  const RenderCase& c = GetParam();
  auto out = render_template(c.source, c.context_json);
  ASSERT_FALSE(out.ok()) << c.source << " rendered: " << *out;
  EXPECT_EQ(without_line_suffix(out.status().message()), c.expected) << c.source;
}

}  // namespace sgl::tokenizer
