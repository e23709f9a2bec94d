// Whitespace control: trim_blocks, lstrip_blocks, -/+ markers, comments, raw, newlines.
#include <gtest/gtest.h>

#include "tokenizer/chat_template/test_util.h"

namespace sgl::tokenizer {
namespace {

const RenderCase kWhitespaceCases[] = {
    {"trim_blocks_removes_newline", R"J({% if true %}
line
{% endif %}
after)J",
     R"J({})J",
     R"J(line
after)J"},
    {"lstrip_blocks_indent", R"J(a
  {% if true %}
  b
  {% endif %}
c)J",
     R"J({})J",
     R"J(a
  b
c)J"},
    {"lstrip_not_for_variables", R"J(  {{ 'x' }}
  {% if true %}y{% endif %})J",
     R"J({})J",
     R"J(  x
y)J"},
    {"lstrip_only_blank_prefix", R"J(text {% if true %}x{% endif %})J", R"J({})J", R"J(text x)J"},
    {"lstrip_tabs", R"J(		{% if true %}x{% endif %}
)J",
     R"J({})J", R"J(x)J"},
    {"minus_strips_all", R"J(a  
 {%- if true -%} 
 b 
 {%- endif -%}  
  c)J",
     R"J({})J", R"J(abc)J"},
    {"variable_minus", R"J(a  {{- 'x' -}}  b)J", R"J({})J", R"J(axb)J"},
    {"comment_minus", R"J(a {# c #} b {#- trimmed -#}  c)J", R"J({})J", R"J(a  bc)J"},
    {"comment_lines", R"J(  {# c #}
x
  {#- d #}
y)J",
     R"J({})J", R"J(xy)J"},
    {"plus_disables_lstrip", R"J(  {%+ if true %}x{% endif %})J", R"J({})J", R"J(  x)J"},
    {"plus_disables_trim", R"J({% if true +%}
x{% endif %})J",
     R"J({})J",
     R"J(
x)J"},
    {"trailing_newline_dropped", R"J(a
)J",
     R"J({})J", R"J(a)J"},
    {"two_trailing_newlines", R"J(a

)J",
     R"J({})J",
     R"J(a
)J"},
    {"crlf_normalized", R"J(a
bc)J",
     R"J({})J",
     R"J(a
b
c)J"},
    {"blank_line_block", R"J({% if true %}  	
{% endif %})J",
     R"J({})J",
     R"J(  	
)J"},
    {"typical_chat_template", R"J({%- for m in messages -%}
  {{- m.role }}: {{ m.content }}
{% endfor -%})J",
     R"J({"messages": [{"role": "u", "content": "hi"}, {"role": "a", "content": "yo"}]})J",
     R"J(u: hi
a: yo
)J"},
    {"indented_chat_template", R"J({% for m in messages %}
    {% if m.role == 'u' %}
        U:{{ m.content }}
    {% else %}
        A:{{ m.content }}
    {% endif %}
{% endfor %}
)J",
     R"J({"messages": [{"role": "u", "content": "hi"}, {"role": "a", "content": "yo"}]})J",
     R"J(        U:hi
        A:yo
)J"},
    {"set_lines", R"J({% set a = 1 %}
{% set b = 2 %}
{{ a + b }}
)J",
     R"J({})J", R"J(3)J"},
    {"macro_lines", R"J({% macro m(x) %}
  [{{ x }}]
{% endmacro %}
{{ m(1) }}
{{ m(2) }})J",
     R"J({})J",
     R"J(  [1]

  [2]
)J"},
    {"raw_whitespace", R"J(  {% raw %}
  r {{ x }}
  {% endraw %}
  z)J",
     R"J({})J",
     R"J(
  r {{ x }}
  z)J"},
    {"raw_minus", R"J(x {%- raw -%}   y {{ z }}   {%- endraw -%} w)J", R"J({})J",
     R"J(xy {{ z }}w)J"},
    {"unicode_whitespace_minus", R"J(a   {{- 'b' -}} 　c)J", R"J({})J", R"J(abc)J"},
    {"brace_in_text", R"J({ not a tag } {{ '{{' }} }})J", R"J({})J", R"J({ not a tag } {{ }})J"},
    {"braces_inside_expression", R"J({{ {'a': {'b': 1}} }}{{ {'x': 1}['x'] }})J", R"J({})J",
     R"J({'a': {'b': 1}}1)J"},
    {"string_containing_tag_end", R"J({{ '%}' ~ '}}' }}{% set s = '-%}' %}{{ s }})J", R"J({})J",
     R"J(%}}}-%})J"},
    {"multiline_tag", R"J({% if
  true
  and 1
%}
ok
{% endif %})J",
     R"J({})J",
     R"J(ok
)J"},
};
INSTANTIATE_TEST_SUITE_P(Whitespace, ChatTemplateRender, ::testing::ValuesIn(kWhitespaceCases),
                         CaseName());

}  // namespace
}  // namespace sgl::tokenizer
