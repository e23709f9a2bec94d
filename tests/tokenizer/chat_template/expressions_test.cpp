// Expressions: literals, operators, comparisons, tests, access, slicing, undefined, printing.
#include <gtest/gtest.h>

#include "tokenizer/chat_template/test_util.h"

namespace sgl::tokenizer {
namespace {

const RenderCase kLiteralsCases[] = {
    {"ints_floats",
     R"J({{ 42 }} {{ -7 }} {{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1.5 }} {{ 2e3 }} {{ 1E-7 }} {{ 1.0 }})J",
     R"J({})J", R"J(42 -7 1000 31 15 5 1.5 2000.0 1e-07 1.0)J"},
    {"strings_escapes",
     R"J({{ 'single' }} {{ "double" }} {{ 'tab\tnl\nq\'dq\"bs\\' }} {{ '\u00e9\x41\101' }} {{ 'un\known' }} {{ 'a' 'b' }})J",
     R"J({})J",
     R"J(single double tab	nl
q'dq"bs\ éAA un\known ab)J"},
    {"booleans_none", R"J({{ true }} {{ True }} {{ false }} {{ False }} {{ none }} {{ None }})J",
     R"J({})J", R"J(True True False False None None)J"},
    {"containers",
     R"J({{ [1, 'a', none, true, 1.5] }} {{ {'k': 'v', 1: [2]} }} {{ (1,) }} {{ (1, 2) }} {{ () }} {{ [1, 2,] }} {{ {'a': 1,} }})J",
     R"J({})J", R"J([1, 'a', None, True, 1.5] {'k': 'v', 1: [2]} (1,) (1, 2) () [1, 2] {'a': 1})J"},
    {"nested_dict_print", R"J({{ {'a': {'b': [1, {'c': none}]}} }})J", R"J({})J",
     R"J({'a': {'b': [1, {'c': None}]}})J"},
};
INSTANTIATE_TEST_SUITE_P(Literals, ChatTemplateRender, ::testing::ValuesIn(kLiteralsCases),
                         CaseName());

const RenderCase kArithmeticCases[] = {
    {"int_ops",
     R"J({{ 1 + 2 }} {{ 7 - 10 }} {{ 6 * 7 }} {{ 7 / 2 }} {{ 6 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }})J",
     R"J({})J", R"J(3 -3 42 3.5 3.0 3 -4 1 2 -2 1024 0.5)J"},
    {"float_ops",
     R"J({{ 0.1 + 0.2 }} {{ 5.0 // 2 }} {{ -5.5 % 2 }} {{ 2 ** 0.5 }} {{ 10 // 3.0 }} {{ 1 / 3 }} {{ 1e16 }} {{ 1e-5 }} {{ 0.0001 }} {{ 123456789.123 }} {{ 1e15 + 0.5 }} {{ -0.0 }})J",
     R"J({})J",
     R"J(0.30000000000000004 2.0 0.5 1.4142135623730951 3.0 0.3333333333333333 1e+16 1e-05 0.0001 123456789.123 1000000000000000.5 -0.0)J"},
    // Floor division from the exact remainder, as Python's float_divmod.
    {"float_floordiv", R"J({{ 1 // 0.1 }} {{ -1 // 0.1 }} {{ -7.5 // 2 }} {{ 0.0 // -3 }})J",
     R"J({})J", R"J(9.0 -10.0 -4.0 -0.0)J"},
    {"bool_arith", R"J({{ true + true }} {{ 3 * true }} {{ true / 2 }})J", R"J({})J",
     R"J(2 3 0.5)J"},
    {"unary", R"J({{ -x }} {{ +x }} {{ - -x }} {{ -x | abs }} {{ -(x) }})J", R"J({"x": 3})J",
     R"J(-3 3 3 3 -3)J"},
    {"concat_tilde", R"J({{ 'a' ~ 1 ~ none ~ true ~ [1] ~ undefined_var }})J", R"J({})J",
     R"J(a1NoneTrue[1])J"},
    {"string_ops",
     R"J({{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ 'ab' * 0 }}|{{ 'ab' * -2 }}|)J",
     R"J({})J", R"J(abcd ababab xxx ||)J"},
    {"list_ops", R"J({{ [1, 2] + [3] }} {{ [0] * 3 }} {{ (1,) + (2,) }} {{ (1, 2) * 2 }})J",
     R"J({})J", R"J([1, 2, 3] [0, 0, 0] (1, 2) (1, 2, 1, 2))J"},
    {"percent_format",
     R"J({{ '%s and %d and %05.2f and %r' % ('a', 3, 3.14159, 'q') }} {{ '%(x)s-%(y)03d' % {'x': 'X', 'y': 7} }} {{ '%s' % 5 }} {{ '%-5s|%5s|' % ('a', 'b') }} {{ '%x %X %o %c %e' % (255, 255, 8, 65, 12345.678) }} {{ '%+d % d %%' % (5, 5) }})J",
     R"J({})J",
     R"J(a and 3 and 03.14 and 'q' X-007 5 a    |    b| ff FF 10 A 1.234568e+04 +5  5 %)J"},
};
INSTANTIATE_TEST_SUITE_P(Arithmetic, ChatTemplateRender, ::testing::ValuesIn(kArithmeticCases),
                         CaseName());

const RenderCase kArithmeticErrorCases[] = {
    {"precedence",
     R"J({{ 2 + 3 * 4 }} {{ (2 + 3) * 4 }} {{ 10 - 2 - 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 'a' ~ 1 + 2 }} {{ 2 * 3 ~ 4 }})J",
     R"J({})J", R"J(TypeError: can only concatenate str (not "int") to str)J"},
};
INSTANTIATE_TEST_SUITE_P(Arithmetic, ChatTemplateRenderError,
                         ::testing::ValuesIn(kArithmeticErrorCases), CaseName());

const RenderCase kArithmeticErrorsErrorCases[] = {
    {"str_plus_int", R"J({{ 'a' + 1 }})J", R"J({})J",
     R"J(TypeError: can only concatenate str (not "int") to str)J"},
    {"int_plus_str", R"J({{ 1 + 'a' }})J", R"J({})J",
     R"J(TypeError: unsupported operand type(s) for +: 'int' and 'str')J"},
    {"list_plus_str", R"J({{ [1] + 'a' }})J", R"J({})J",
     R"J(TypeError: can only concatenate list (not "str") to list)J"},
    {"str_plus_dict", R"J({{ 'a' + {} }})J", R"J({})J",
     R"J(TypeError: can only concatenate str (not "dict") to str)J"},
    {"none_plus_int", R"J({{ none + 1 }})J", R"J({})J",
     R"J(TypeError: unsupported operand type(s) for +: 'NoneType' and 'int')J"},
    {"dict_plus_dict", R"J({{ {} + {} }})J", R"J({})J",
     R"J(TypeError: unsupported operand type(s) for +: 'dict' and 'dict')J"},
    {"str_times_str", R"J({{ 'x' * 'y' }})J", R"J({})J",
     R"J(TypeError: can't multiply sequence by non-int of type 'str')J"},
    {"div_zero", R"J({{ 1 / 0 }})J", R"J({})J", R"J(ZeroDivisionError: division by zero)J"},
    {"floordiv_zero", R"J({{ 1 // 0 }})J", R"J({})J",
     R"J(ZeroDivisionError: integer division or modulo by zero)J"},
    {"mod_zero", R"J({{ 1 % 0 }})J", R"J({})J", R"J(ZeroDivisionError: integer modulo by zero)J"},
    {"neg_str", R"J({{ -'a' }})J", R"J({})J",
     R"J(TypeError: bad operand type for unary -: 'str')J"},
    {"undefined_plus", R"J({{ undefined_var + 1 }})J", R"J({})J",
     R"J(UndefinedError: 'undefined_var' is undefined)J"},
    {"percent_too_few", R"J({{ '%s %s' % ('a',) }})J", R"J({})J",
     R"J(TypeError: not enough arguments for format string)J"},
    {"percent_too_many", R"J({{ '%s' % ('a', 'b') }})J", R"J({})J",
     R"J(TypeError: not all arguments converted during string formatting)J"},
    {"percent_bad_type", R"J({{ '%d' % 'x' }})J", R"J({})J",
     R"J(TypeError: %d format: a real number is required, not str)J"},
};
INSTANTIATE_TEST_SUITE_P(ArithmeticErrors, ChatTemplateRenderError,
                         ::testing::ValuesIn(kArithmeticErrorsErrorCases), CaseName());

const RenderCase kComparisonsCases[] = {
    {"basic",
     R"J({{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 4 }} {{ 4 >= 4 }} {{ 1 == 1.0 }} {{ 1 != 2 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ 'B' < 'a' }})J",
     R"J({})J", R"J(True True False True True True True True True)J"},
    {"chained", R"J({{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1 == 1 }} {{ 1 < 3 > 2 }})J", R"J({})J",
     R"J(True False True True)J"},
    {"containers",
     R"J({{ [1, 2] < [1, 3] }} {{ [1, 2] == [1, 2] }} {{ (1,) == [1] }} {{ {'a': 1} == {'a': 1.0} }} {{ [1, [2]] == [1, [2]] }} {{ none == none }})J",
     R"J({})J", R"J(True True False True True True)J"},
    {"undefined_equality",
     R"J({{ undefined_x == undefined_y }} {{ undefined_x != 1 }} {{ undefined_x == none }})J",
     R"J({})J", R"J(True True False)J"},
};
INSTANTIATE_TEST_SUITE_P(Comparisons, ChatTemplateRender, ::testing::ValuesIn(kComparisonsCases),
                         CaseName());

const RenderCase kComparisonErrorsErrorCases[] = {
    {"int_lt_str", R"J({{ 1 < 'a' }})J", R"J({})J",
     R"J(TypeError: '<' not supported between instances of 'int' and 'str')J"},
    {"none_lt_int", R"J({{ none < 1 }})J", R"J({})J",
     R"J(TypeError: '<' not supported between instances of 'NoneType' and 'int')J"},
    {"nested_list", R"J({{ [1, 2] < [1, 'a'] }})J", R"J({})J",
     R"J(TypeError: '<' not supported between instances of 'int' and 'str')J"},
    {"undefined_lt", R"J({{ undefined_x < 1 }})J", R"J({})J",
     R"J(UndefinedError: 'undefined_x' is undefined)J"},
};
INSTANTIATE_TEST_SUITE_P(ComparisonErrors, ChatTemplateRenderError,
                         ::testing::ValuesIn(kComparisonErrorsErrorCases), CaseName());

const RenderCase kLogicCases[] = {
    {"and_or_values",
     R"J({{ true and 'x' }} {{ 0 or 'y' }} {{ [] or none }} {{ '' and 1 }} {{ 1 and 2 and 3 }} {{ 0 or '' or 'z' }})J",
     R"J({})J", R"J(x y None  3 z)J"},
    {"not",
     R"J({{ not true }} {{ not none }} {{ not [] }} {{ not 'a' }} {{ not 1 == 2 }} {{ not not 1 }})J",
     R"J({})J", R"J(False True True False True True)J"},
    {"short_circuit", R"J({{ false and undefined_var.x }} {{ true or undefined_var.x }})J",
     R"J({})J", R"J(False True)J"},
    {"truthiness",
     R"J({% for v in [0, 1, 0.0, '', 'a', [], [0], {}, {'a': 1}, none, undefined_var] %}{{ 'T' if v else 'F' }}{% endfor %})J",
     R"J({})J", R"J(FTFFTFTFTFF)J"},
};
INSTANTIATE_TEST_SUITE_P(Logic, ChatTemplateRender, ::testing::ValuesIn(kLogicCases), CaseName());

const RenderCase kMembershipCases[] = {
    {"in",
     R"J({{ 'a' in 'abc' }} {{ 'bc' in 'abc' }} {{ 1 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'x' not in ['y'] }} {{ 1 in undefined_var }} {{ 1.0 in [1] }} {{ 'a' in ('a',) }})J",
     R"J({})J", R"J(True True True True True False True True)J"},
};
INSTANTIATE_TEST_SUITE_P(Membership, ChatTemplateRender, ::testing::ValuesIn(kMembershipCases),
                         CaseName());

const RenderCase kMembershipErrorsErrorCases[] = {
    {"in_int", R"J({{ 1 in 2 }})J", R"J({})J",
     R"J(TypeError: argument of type 'int' is not iterable)J"},
    {"int_in_str", R"J({{ 1 in 'abc' }})J", R"J({})J",
     R"J(TypeError: 'in <string>' requires string as left operand, not int)J"},
    {"in_none", R"J({{ 'a' in none }})J", R"J({})J",
     R"J(TypeError: argument of type 'NoneType' is not iterable)J"},
    {"unhashable_in_dict", R"J({{ [1] in {} }})J", R"J({})J",
     R"J(TypeError: unhashable type: 'list')J"},
};
INSTANTIATE_TEST_SUITE_P(MembershipErrors, ChatTemplateRenderError,
                         ::testing::ValuesIn(kMembershipErrorsErrorCases), CaseName());

const RenderCase kTestsCases[] = {
    {"defined",
     R"J({{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ x.a is defined }} {{ x.b is defined }})J",
     R"J({"x": {"a": 1}})J", R"J(True False True True False)J"},
    {"none_and_types",
     R"J({{ x is none }} {{ x is not none }} {{ 1 is number }} {{ true is number }} {{ 1 is integer }} {{ true is integer }} {{ 1.0 is float }} {{ 1 is float }} {{ true is boolean }} {{ 1 is boolean }})J",
     R"J({"x": null})J", R"J(True False True True True False True False True False)J"},
    {"containers",
     R"J({{ 'a' is string }} {{ {} is mapping }} {{ [] is mapping }} {{ [] is iterable }} {{ 'a' is iterable }} {{ 1 is iterable }} {{ {} is iterable }} {{ {} is sequence }} {{ 'x' is sequence }} {{ 1 is sequence }} {{ u is sequence }} {{ u is iterable }})J",
     R"J({})J", R"J(True True False True True False True True True False True True)J"},
    {"true_false",
     R"J({{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }} {{ none is false }})J",
     R"J({})J", R"J(True False True False False)J"},
    {"numbers",
     R"J({{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ 3.0 is odd }})J",
     R"J({})J", R"J(True True True False True)J"},
    {"case",
     R"J({{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'aBc' is lower }} {{ '123' is lower }} {{ 'A1' is upper }})J",
     R"J({})J", R"J(True True False False True)J"},
    {"comparison_tests",
     R"J({{ 1 is eq 1 }} {{ 1 is equalto 2 }} {{ 2 is gt 1 }} {{ 2 is greaterthan 3 }} {{ 2 is ge 3 }} {{ 1 is lt 2 }} {{ 1 is lessthan 0 }} {{ 1 is le 1 }} {{ 1 is ne 2 }} {{ 1 is in [1] }} {{ 'a' is in 'xyz' }})J",
     R"J({})J", R"J(True False True False False True False True True True False)J"},
    {"sameas",
     R"J({{ x is sameas x }} {{ x is sameas y }} {{ none is sameas none }} {{ true is sameas true }} {{ 1 is sameas true }})J",
     R"J({"x": [1], "y": [1]})J", R"J(True False True True False)J"},
    {"callable_filter_test",
     R"J({{ range is callable }} {{ 1 is callable }} {{ 'upper' is filter }} {{ 'nope' is filter }} {{ 'defined' is test }})J",
     R"J({})J", R"J(True False True False True)J"},
    {"negated_and_precedence",
     R"J({{ x is not string and x is not none }} {{ not x is string }} {{ 'a' if x is string else 'b' }})J",
     R"J({"x": 1})J", R"J(True True b)J"},
    {"escaped", R"J({{ 'a' is escaped }} {{ ('a' | safe) is escaped }})J", R"J({})J",
     R"J(False True)J"},
};
INSTANTIATE_TEST_SUITE_P(Tests, ChatTemplateRender, ::testing::ValuesIn(kTestsCases), CaseName());

const RenderCase kAccessCases[] = {
    {"dict_attr_and_item",
     R"J({{ d.a }} {{ d['a'] }} {{ d.missing }}|{{ d['missing'] }}|{{ d.missing is defined }})J",
     R"J({"d": {"a": 1}})J", R"J(1 1 ||False)J"},
    {"attr_prefers_methods", R"J({{ d['items'] }} {{ d.get('items') }})J",
     R"J({"d": {"items": 5}})J", R"J(5 5)J"},
    {"list_index", R"J({{ xs[0] }} {{ xs[-1] }} {{ xs[5] }}|{{ xs.0 }} {{ xs.1.a }})J",
     R"J({"xs": [5, {"a": 6}]})J", R"J(5 {'a': 6} |5 6)J"},
    {"string_index", R"J({{ s[0] }} {{ s[-1] }} {{ s[1] }} {{ s | length }})J",
     R"J({"s": "héllo"})J", R"J(h o é 5)J"},
    {"none_subscript_is_undefined", R"J({{ n.x }}|{{ n['x'] }}|{{ n[0] }}|{{ n.x is defined }})J",
     R"J({"n": null})J", R"J(|||False)J"},
    {"dict_keys_types",
     R"J({% set d = {1: 'a', 'k': 'b', none: 'n', (1, 2): 't'} %}{{ d[1] }}{{ d[1.0] }}{{ d[true] }}{{ d.k }}{{ d[none] }}{{ d[(1, 2)] }})J",
     R"J({})J", R"J(aaabnt)J"},
    {"nested_missing_defined",
     R"J({{ m.content is defined }} {{ m.tool_calls is defined }} {{ m.get('tool_calls') is none }})J",
     R"J({"m": {"content": "c"}})J", R"J(True False True)J"},
    {"multi_index_tuple_key", R"J({% set d = {(1, 2): 'x'} %}{{ d[1, 2] }})J", R"J({})J", R"J(x)J"},
};
INSTANTIATE_TEST_SUITE_P(Access, ChatTemplateRender, ::testing::ValuesIn(kAccessCases), CaseName());

const RenderCase kAccessErrorsErrorCases[] = {
    {"attr_of_undefined", R"J({{ undefined_var.attr }})J", R"J({})J",
     R"J(UndefinedError: 'undefined_var' is undefined)J"},
    {"attr_of_missing", R"J({{ d.missing.x }})J", R"J({"d": {"a": 1}})J",
     R"J(UndefinedError: 'dict object' has no attribute 'missing')J"},
    {"item_of_missing_list", R"J({{ messages[1].content }})J",
     R"J({"messages": [{"content": "c"}]})J", R"J(UndefinedError: list object has no element 1)J"},
    {"call_undefined", R"J({{ foo(1) }})J", R"J({})J", R"J(UndefinedError: 'foo' is undefined)J"},
    {"call_int", R"J({{ x() }})J", R"J({"x": 1})J", R"J(TypeError: 'int' object is not callable)J"},
    {"slice_none", R"J({{ x[1:] }})J", R"J({"x": null})J",
     R"J(TypeError: 'NoneType' object is not subscriptable)J"},
    {"slice_dict", R"J({{ x[1:] }})J", R"J({"x": {}})J",
     R"J(TypeError: unhashable type: 'slice')J"},
    {"slice_step_zero", R"J({{ [1, 2][::0] }})J", R"J({})J",
     R"J(ValueError: slice step cannot be zero)J"},
    {"missing_parameter_used", R"J({% macro m(a) %}{{ a.x }}{% endmacro %}{{ m() }})J", R"J({})J",
     R"J(UndefinedError: parameter 'a' was not provided)J"},
};
INSTANTIATE_TEST_SUITE_P(AccessErrors, ChatTemplateRenderError,
                         ::testing::ValuesIn(kAccessErrorsErrorCases), CaseName());

const RenderCase kSlicingCases[] = {
    {"lists",
     R"J({{ xs[1:] }} {{ xs[::-1] }} {{ xs[-2:] }} {{ xs[:1] }} {{ xs[::2] }} {{ xs[1:2] }} {{ xs[5:] }} {{ xs[4:0:-2] }} {{ xs[-10:10] }})J",
     R"J({"xs": [1, 2, 3, 4, 5]})J",
     R"J([2, 3, 4, 5] [5, 4, 3, 2, 1] [4, 5] [1] [1, 3, 5] [2] [] [5, 3] [1, 2, 3, 4, 5])J"},
    {"strings", R"J({{ s[1:3] }} {{ s[::-1] }} {{ s[-3:] }} {{ s[:0] }}|)J",
     R"J({"s": "héllo wörld"})J", R"J(él dlröw olléh rld |)J"},
    {"none_bounds", R"J({{ xs[a:b] }})J", R"J({"xs": [1, 2, 3], "a": null, "b": 2})J",
     R"J([1, 2])J"},
    {"tuple", R"J({{ (1, 2, 3)[1:] }})J", R"J({})J", R"J((2, 3))J"},
};
INSTANTIATE_TEST_SUITE_P(Slicing, ChatTemplateRender, ::testing::ValuesIn(kSlicingCases),
                         CaseName());

const RenderCase kInlineIfCases[] = {
    {"basic", R"J({{ 'x' if false }}|{{ 'y' if true else 'z' }}|{{ 1 if 0 else 2 if 0 else 3 }})J",
     R"J({})J", R"J(|y|3)J"},
    {"with_filters",
     R"J({{ 1 if true else 0 | string }} {{ ('a' if false) | default('dd') }} {{ ('a' if false) is defined }})J",
     R"J({})J", R"J(1 dd False)J"},
};
INSTANTIATE_TEST_SUITE_P(InlineIf, ChatTemplateRender, ::testing::ValuesIn(kInlineIfCases),
                         CaseName());

const RenderCase kUndefinedCases[] = {
    {"printing_and_iteration",
     R"J([{{ undefined_var }}] {{ undefined_var is defined }} {% for a in undefined_var %}x{% endfor %}{{ undefined_var | length }} {{ undefined_var | list }} {{ undefined_var | default('d') }})J",
     R"J({})J", R"J([] False 0 [] d)J"},
    {"in_list_repr", R"J({{ [undefined_var] }})J", R"J({})J", R"J([Undefined])J"},
    {"missing_attr_chain_defined", R"J({{ d.a is defined }})J", R"J({"d": {}})J", R"J(False)J"},
};
INSTANTIATE_TEST_SUITE_P(Undefined, ChatTemplateRender, ::testing::ValuesIn(kUndefinedCases),
                         CaseName());

const RenderCase kPrintingCases[] = {
    {"python_repr", R"J({{ [1, 'a', none, true, 1.5, {'k': 'v'}, (1,), (1, 2), []] }})J", R"J({})J",
     R"J([1, 'a', None, True, 1.5, {'k': 'v'}, (1,), (1, 2), []])J"},
    {"quotes_in_repr", R"J({{ ['it\'s'] }} {{ ['a"b'] }} {{ ['both\'"'] }} {{ ['a\nb\t\\'] }})J",
     R"J({})J", R"J(["it's"] ['a"b'] ['both\'"'] ['a\nb\t\\'])J"},
    {"unicode_repr", R"J({{ ['é', '\x00', '\x7f', '\xa0', '\u200b', '\U0001F600', '日本'] }})J",
     R"J({})J", R"J(['é', '\x00', '\x7f', '\xa0', '\u200b', '😀', '日本'])J"},
    {"json_input_types", R"J({{ x }} {{ x.a }} {{ x.b }} {{ x.c }} {{ x.d }})J",
     R"J({"x": {"a": 1.5, "b": 2, "c": true, "d": null}})J",
     R"J({'a': 1.5, 'b': 2, 'c': True, 'd': None} 1.5 2 True None)J"},
    {"tuple_output", R"J({{ 1, 2 }})J", R"J({})J", R"J((1, 2))J"},
};
INSTANTIATE_TEST_SUITE_P(Printing, ChatTemplateRender, ::testing::ValuesIn(kPrintingCases),
                         CaseName());

}  // namespace
}  // namespace sgl::tokenizer
