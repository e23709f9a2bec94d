// Statements: if, for/loop, set, namespace, macro, call, filter, with, break/continue, scoping.
#include <gtest/gtest.h>

#include "tokenizer/chat_template/test_util.h"

namespace sgl::tokenizer {
namespace {

const RenderCase kIfCases[] = {
    {"if_elif_else",
     R"J({% for x in [0, 1, 2, 3] %}{% if x == 0 %}zero{% elif x == 1 %}one{% elif x is even %}even{% else %}other{% endif %},{% endfor %})J",
     R"J({})J", R"J(zero,one,even,other,)J"},
    {"nested", R"J({% if a %}{% if b %}ab{% else %}a{% endif %}{% else %}none{% endif %})J",
     R"J({"a": true, "b": false})J", R"J(a)J"},
    {"tuple_condition", R"J({% if 1, 2 %}t{% endif %})J", R"J({})J", R"J(t)J"},
    {"defined_guards",
     R"J({% if x is defined and x > 1 %}y{% elif x is not defined %}n{% else %}e{% endif %})J",
     R"J({"x": 0})J", R"J(e)J"},
};
INSTANTIATE_TEST_SUITE_P(If, ChatTemplateRender, ::testing::ValuesIn(kIfCases), CaseName());

const RenderCase kForCases[] = {
    {"loop_variables",
     R"J({% for x in xs %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }}/{{ loop.depth }};{% endfor %})J",
     R"J({"xs": ["a", "b", "c"]})J",
     R"J(1/0/3/2/True/False/3/1;2/1/2/1/False/False/3/1;3/2/1/0/False/True/3/1;)J"},
    {"previtem_nextitem",
     R"J({% for x in xs %}[{{ loop.previtem }}|{{ loop.nextitem }}|{{ loop.previtem is defined }}]{% endfor %})J",
     R"J({"xs": [1, 2, 3]})J", R"J([|2|False][1|3|True][2||True])J"},
    {"else_branch",
     R"J({% for x in xs %}{{ x }}{% else %}empty{% endfor %}|{% for x in [1] %}{{ x }}{% else %}empty{% endfor %})J",
     R"J({"xs": []})J", R"J(empty|1)J"},
    {"loop_filter",
     R"J({% for x in xs if x > 1 %}{{ x }}:{{ loop.index }}/{{ loop.length }} {% else %}none{% endfor %})J",
     R"J({"xs": [1, 2, 3, 0, 5]})J", R"J(2:1/3 3:2/3 5:3/3 )J"},
    {"loop_filter_all_rejected",
     R"J({% for x in xs if x > 10 %}{{ x }}{% else %}none{% endfor %})J", R"J({"xs": [1, 2]})J",
     R"J(none)J"},
    {"dict_iteration",
     R"J({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for k, v in d | items %}{{ v }}{% endfor %})J",
     R"J({"d": {"b": 1, "a": 2}})J", R"J(b=1;a=2;ba12)J"},
    {"tuple_unpacking",
     R"J({% for a, b in [(1, 2), (3, 4)] %}{{ a + b }} {% endfor %}{% for (a, b), c in [((1, 2), 3)] %}{{ a }}{{ b }}{{ c }}{% endfor %})J",
     R"J({})J", R"J(3 7 123)J"},
    {"string_iteration", R"J({% for c in 'héy' %}{{ c }}.{% endfor %})J", R"J({})J", R"J(h.é.y.)J"},
    {"break_continue",
     R"J({% for x in xs %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %})J",
     R"J({"xs": [1, 2, 3, 4, 5]})J", R"J(13)J"},
    {"nested_break",
     R"J({% for i in [1, 2] %}{% for j in [1, 2, 3] %}{% if j == 2 %}{% break %}{% endif %}{{ i }}{{ j }} {% endfor %}{% endfor %})J",
     R"J({})J", R"J(11 21 )J"},
    {"cycle_and_changed",
     R"J({% for x in [1, 1, 2, 3, 3] %}{{ loop.cycle('a', 'b') }}{% if loop.changed(x) %}{{ x }}{% endif %} {% endfor %})J",
     R"J({})J", R"J(a1 b a2 b3 a )J"},
    {"recursive",
     R"J({% for item in tree recursive %}[{{ item.n }}:{{ loop.depth }}{% if item.c %}{{ loop(item.c) }}{% endif %}]{% endfor %})J",
     R"J({"tree": [{"n": 1, "c": [{"n": 2, "c": [{"n": 3}]}]}, {"n": 4}]})J",
     R"J([1:1[2:2[3:3]]][4:1])J"},
    {"messages_loop",
     R"J({% for m in messages %}{% if loop.first and m.role == 'system' %}<sys>{{ m.content }}</sys>{% elif m.role == 'user' %}U:{{ m.content }}{% else %}A:{{ m.content }}{% endif %}{% if not loop.last %}|{% endif %}{% endfor %})J",
     R"J({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}]})J",
     R"J(<sys>S</sys>|U:U1|A:A1|U:U2)J"},
    {"range_loop",
     R"J({% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(1, 10, 4) %}{{ i }}{% endfor %})J",
     R"J({})J", R"J(012159)J"},
};
INSTANTIATE_TEST_SUITE_P(For, ChatTemplateRender, ::testing::ValuesIn(kForCases), CaseName());

const RenderCase kForErrorsErrorCases[] = {
    {"iterate_int", R"J({% for x in 5 %}{% endfor %})J", R"J({})J",
     R"J(TypeError: 'int' object is not iterable)J"},
    {"iterate_none", R"J({% for x in none %}{% endfor %})J", R"J({})J",
     R"J(TypeError: 'NoneType' object is not iterable)J"},
    {"unpack_too_many", R"J({% for a, b in [(1, 2, 3)] %}{% endfor %})J", R"J({})J",
     R"J(ValueError: too many values to unpack (expected 2))J"},
    {"unpack_too_few", R"J({% for a, b in [(1,)] %}{% endfor %})J", R"J({})J",
     R"J(ValueError: not enough values to unpack (expected 2, got 1))J"},
    {"cycle_without_items", R"J({% for i in [1] %}{{ loop.cycle() }}{% endfor %})J", R"J({})J",
     R"J(TypeError: no items for cycling given)J"},
};
INSTANTIATE_TEST_SUITE_P(ForErrors, ChatTemplateRenderError,
                         ::testing::ValuesIn(kForErrorsErrorCases), CaseName());

const RenderCase kScopingCases[] = {
    {"loop_does_not_leak",
     R"J({% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }})J",
     R"J({})J", R"J(231)J"},
    {"fresh_scope_each_iteration", R"J({% for i in [1, 2] %}[{{ y }}]{% set y = i %}{% endfor %})J",
     R"J({})J", R"J([][])J"},
    {"outer_value_each_iteration",
     R"J({% set y = 5 %}{% for i in [1, 2] %}[{{ y }}]{% set y = i %}{% endfor %}{{ y }})J",
     R"J({})J", R"J([5][5]5)J"},
    {"if_does_not_scope", R"J({% if true %}{% set x = 3 %}{% endif %}{{ x }})J", R"J({})J",
     R"J(3)J"},
    {"macro_sees_later_globals",
     R"J({% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }})J", R"J({})J",
     R"J(2)J"},
    {"macro_locals_private",
     R"J({% macro m() %}{% set x = 5 %}{{ x }}{% endmacro %}{% set x = 1 %}{{ m() }}{{ x }})J",
     R"J({})J", R"J(51)J"},
    {"macro_in_loop_sees_loop_var",
     R"J({% for i in [1, 2] %}{% macro m() %}{{ i }}{% endmacro %}{{ m() }}{% endfor %})J",
     R"J({})J", R"J(12)J"},
    {"with_block",
     R"J({% with a = 1, b = 2 %}{{ a + b }}{% set c = 3 %}{% endwith %}[{{ a }}{{ c }}])J",
     R"J({})J", R"J(3[])J"},
    {"context_shadows_globals", R"J({{ range }})J", R"J({"range": "mine"})J", R"J(mine)J"},
};
INSTANTIATE_TEST_SUITE_P(Scoping, ChatTemplateRender, ::testing::ValuesIn(kScopingCases),
                         CaseName());

const RenderCase kSetCases[] = {
    {"simple_and_tuple",
     R"J({% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}{% set (c, d) = ['x', 'y'] %}{{ c }}{{ d }})J",
     R"J({})J", R"J(12(1, 2)xy)J"},
    {"block_set", R"J({% set x %}  block {{ 1 + 1 }} {% endset %}[{{ x }}])J", R"J({})J",
     R"J([  block 2 ])J"},
    {"block_set_filtered", R"J({% set y | upper | trim %}  abc {% endset %}[{{ y }}])J", R"J({})J",
     R"J([ABC])J"},
    {"reassign_messages",
     R"J({% if messages[0]['role'] == 'system' %}{% set sys = messages[0]['content'] %}{% set messages = messages[1:] %}{% endif %}{{ sys }}|{{ messages | length }})J",
     R"J({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}]})J",
     R"J(S|3)J"},
};
INSTANTIATE_TEST_SUITE_P(Set, ChatTemplateRender, ::testing::ValuesIn(kSetCases), CaseName());

const RenderCase kNamespaceCases[] = {
    {"accumulate_in_loop",
     R"J({% set ns = namespace(t=0, s='') %}{% for i in [1, 2, 3] %}{% set ns.t = ns.t + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.t }} {{ ns.s }})J",
     R"J({})J", R"J(6 123)J"},
    {"print_and_new_attr",
     R"J({% set ns = namespace(a=1) %}{% set ns.b = [1] %}{{ ns }} {{ ns.b }} {{ ns.missing }}|)J",
     R"J({})J", R"J(<Namespace {'a': 1, 'b': [1]}> [1] |)J"},
    {"from_dict", R"J({{ namespace({'b': 2}, c=3).b }} {{ namespace(x=none).x }})J", R"J({})J",
     R"J(2 None)J"},
    {"shared_list_value",
     R"J({% set ns = namespace(items=[]) %}{% for i in [1, 2] %}{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.items }})J",
     R"J({})J", R"J([1, 2])J"},
    {"last_user_index",
     R"J({% set ns = namespace(last=-1) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.last = loop.index0 %}{% endif %}{% endfor %}{{ ns.last }})J",
     R"J({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}]})J",
     R"J(3)J"},
};
INSTANTIATE_TEST_SUITE_P(Namespace, ChatTemplateRender, ::testing::ValuesIn(kNamespaceCases),
                         CaseName());

const RenderCase kNamespaceErrorsErrorCases[] = {
    {"assign_on_non_namespace", R"J({% set x = 1 %}{% set x.a = 1 %})J", R"J({})J",
     R"J(TemplateRuntimeError: cannot assign attribute on non-namespace object)J"},
    {"assign_on_dict", R"J({% set d = {} %}{% set d.a = 1 %})J", R"J({})J",
     R"J(TemplateRuntimeError: cannot assign attribute on non-namespace object)J"},
};
INSTANTIATE_TEST_SUITE_P(NamespaceErrors, ChatTemplateRenderError,
                         ::testing::ValuesIn(kNamespaceErrorsErrorCases), CaseName());

const RenderCase kMacroCases[] = {
    {"defaults_varargs_kwargs",
     R"J({% macro m(a, b=2, c='x') %}{{ a }}-{{ b }}-{{ c }}-{{ varargs }}-{{ kwargs }}{% endmacro %}{{ m(1) }}|{{ m(1, 3, c='z') }}|{{ m(1, 2, 3, 4) }}|{{ m(1, d=5) }})J",
     R"J({})J", R"J(1-2-x-()-{}|1-3-z-()-{}|1-2-3-(4,)-{}|1-2-x-()-{'d': 5})J"},
    {"missing_argument_is_undefined",
     R"J({% macro m(a) %}[{{ a }}|{{ a is defined }}]{% endmacro %}{{ m() }})J", R"J({})J",
     R"J([|False])J"},
    {"default_uses_earlier_param", R"J({% macro m(a, b=a * 2) %}{{ b }}{% endmacro %}{{ m(3) }})J",
     R"J({})J", R"J(6)J"},
    {"recursion",
     R"J({% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * (fact(n - 1) | int) }}{% endif %}{% endmacro %}{{ fact(5) }})J",
     R"J({})J", R"J(120)J"},
    {"output_is_string",
     R"J({% macro m() %}ab{% endmacro %}{{ m() | length }} {{ m() ~ 'c' }} {{ m() is string }})J",
     R"J({})J", R"J(2 abc True)J"},
    {"render_schema",
     R"J({% macro render(p, indent='') %}{% for k, v in p.items() %}{{ indent }}{{ k }}: {% if v is mapping %}
{{ render(v, indent ~ '  ') }}{% else %}{{ v }}
{% endif %}{% endfor %}{% endmacro %}{{ render(schema) }})J",
     R"J({"schema": {"type": "object", "properties": {"city": {"type": "string"}}}})J",
     R"J(type: object
properties:   city:     type: string
)J"},
};
INSTANTIATE_TEST_SUITE_P(Macro, ChatTemplateRender, ::testing::ValuesIn(kMacroCases), CaseName());

const RenderCase kCallCases[] = {
    {"caller",
     R"J({% macro outer() %}<{{ caller() }}>{% endmacro %}{% call outer() %}inner {{ 1 }}{% endcall %})J",
     R"J({})J", R"J(<inner 1>)J"},
    {"caller_with_args",
     R"J({% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each([1, 2]) %}({{ x }}){% endcall %})J",
     R"J({})J", R"J((1)(2))J"},
    {"caller_sees_outer_scope",
     R"J({% set who = 'w' %}{% macro wrap() %}[{{ caller() }}]{% endmacro %}{% call wrap() %}{{ who }}{% endcall %})J",
     R"J({})J", R"J([w])J"},
};
INSTANTIATE_TEST_SUITE_P(Call, ChatTemplateRender, ::testing::ValuesIn(kCallCases), CaseName());

const RenderCase kFilterBlockCases[] = {
    {"upper", R"J({% filter upper %}hello {{ 'world' }}{% endfilter %})J", R"J({})J",
     R"J(HELLO WORLD)J"},
    {"chain", R"J({% filter trim | upper %}  hi  {% endfilter %}!)J", R"J({})J", R"J(HI!)J"},
    {"with_args", R"J({% filter replace('a', 'o') %}banana{% endfilter %})J", R"J({})J",
     R"J(bonono)J"},
};
INSTANTIATE_TEST_SUITE_P(FilterBlock, ChatTemplateRender, ::testing::ValuesIn(kFilterBlockCases),
                         CaseName());

const RenderCase kRawCases[] = {
    {"raw", R"J({% raw %}{{ not evaluated }}{% if %}{% endraw %})J", R"J({})J",
     R"J({{ not evaluated }}{% if %})J"},
};
INSTANTIATE_TEST_SUITE_P(Raw, ChatTemplateRender, ::testing::ValuesIn(kRawCases), CaseName());

const RenderCase kGenerationCases[] = {
    {"renders_body", R"J({% generation %}gen {{ 1 }}{% endgeneration %} after)J", R"J({})J",
     R"J(gen 1 after)J"},
    {"own_scope", R"J({% generation %}{% set q = 1 %}{% endgeneration %}[{{ q }}])J", R"J({})J",
     R"J([])J"},
};
INSTANTIATE_TEST_SUITE_P(Generation, ChatTemplateRender, ::testing::ValuesIn(kGenerationCases),
                         CaseName());

}  // namespace
}  // namespace sgl::tokenizer
