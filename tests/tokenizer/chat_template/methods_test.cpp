// Python str/list/dict methods, the immutable sandbox and Markup strings.
#include <gtest/gtest.h>

#include "tokenizer/chat_template/test_util.h"

namespace sgl::tokenizer {
namespace {

const RenderCase kStrMethodsCases[] = {
    {"split",
     R"J({{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ '  a b  '.rsplit(None, 1) }} {{ ''.split(',') }} {{ ''.split() }} {{ 'x</think>y'.split('</think>')[-1] }})J",
     R"J({})J",
     R"J(['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c'] ['a,b', 'c'] ['  a', 'b'] [''] [] y)J"},
    {"strip",
     R"J([{{ ' x '.strip() }}] [{{ 'xxhixx'.strip('x') }}] [{{ '\n\nhi\n'.lstrip('\n') }}] [{{ ' hi '.rstrip() }}] [{{ '\u3000hi\xa0'.strip() }}])J",
     R"J({})J",
     R"J([x] [hi] [hi
] [ hi] [hi])J"},
    {"startswith_endswith",
     R"J({{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'abc'.startswith('b', 1) }} {{ 'abc'.endswith('b', 0, 2) }} {{ 'abc'.startswith('') }})J",
     R"J({})J", R"J(True True True True True)J"},
    {"replace_find_count",
     R"J({{ 'aXbX'.replace('X', '-') }} {{ 'aXbX'.replace('X', '-', 1) }} {{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'héllo'.find('l') }} {{ 'hello'.find('l', 3) }} {{ 'hello'.count('l') }} {{ 'hello'.index('e') }} {{ 'aaa'.count('') }})J",
     R"J({})J", R"J(a-b- a-bX 2 3 -1 2 3 2 1 4)J"},
    {"case",
     R"J({{ 'Hello World'.upper() }} {{ 'Hello'.lower() }} {{ "they're bob".title() }} {{ 'hELLO'.capitalize() }} {{ 'aB'.swapcase() }})J",
     R"J({})J", R"J(HELLO WORLD hello They'Re Bob Hello Ab)J"},
    {"predicates",
     R"J({{ '123'.isdigit() }} {{ '12a'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'a1'.isalnum() }} {{ '  '.isspace() }} {{ ''.isspace() }} {{ 'ab'.islower() }} {{ 'AB'.isupper() }})J",
     R"J({})J", R"J(True False True True True False True True)J"},
    {"join_format",
     R"J({{ '-'.join(['a', 'b']) }} {{ ', '.join(d) }} {{ '{} {}'.format(1, 'a') }} {{ '{0}{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='n') }} {{ '{!r}'.format('s') }} {{ '{{}}'.format() }})J",
     R"J({"d": {"k1": 1, "k2": 2}})J", R"J(a-b k1, k2 1 a xyx n! 's' {})J"},
    {"format_specs",
     R"J({{ '{:>5}|{:<5}|{:^5}|{:05d}|{:.2f}|{:,}'.format('a', 'b', 'c', 42, 3.14159, 1234567) }} {{ '{:x} {:b} {:o} {:#x} {:e} {:g} {:%}'.format(255, 5, 8, 255, 1234.5, 0.00001234, 0.5) }} {{ '{0[a]} {0[b][0]}'.format({'a': 1, 'b': [2]}) }} {{ '{:10.3}|'.format('abcdef') }} {{ '{:*^9}'.format('x') }} {{ '{:+.2f}'.format(3) }})J",
     R"J({})J",
     R"J(    a|b    |  c  |00042|3.14|1,234,567 ff 101 10 0xff 1.234500e+03 1.234e-05 50.000000% 1 2 abc       | ****x**** +3.00)J"},
    {"padding",
     R"J({{ '42'.zfill(5) }} {{ '-42'.zfill(5) }} {{ 'a'.center(5, '*') }} {{ 'ab'.center(5) }}| {{ 'a'.ljust(3, '.') }}|{{ 'a'.rjust(3) }})J",
     R"J({})J", R"J(00042 -0042 **a**   ab | a..|  a)J"},
    {"splitlines_partition",
     R"J({{ 'a\nb\r\nc\n'.splitlines() }} {{ 'a\nb'.splitlines(true) }} {{ 'a=b=c'.partition('=') }} {{ 'a=b=c'.rpartition('=') }} {{ 'abc'.partition('x') }} {{ 'prefix_x'.removeprefix('prefix_') }} {{ 'x.txt'.removesuffix('.txt') }})J",
     R"J({})J",
     R"J(['a', 'b', 'c'] ['a\n', 'b'] ('a', '=', 'b=c') ('a=b', '=', 'c') ('abc', '', '') x x)J"},
    {"unknown_method_is_undefined", R"J([{{ 'abc'.nosuch }}] {{ 'abc'.nosuch is defined }})J",
     R"J({})J", R"J([] False)J"},
};
INSTANTIATE_TEST_SUITE_P(StrMethods, ChatTemplateRender, ::testing::ValuesIn(kStrMethodsCases),
                         CaseName());

const RenderCase kStrMethodErrorsErrorCases[] = {
    {"index_missing", R"J({{ 'hello'.index('z') }})J", R"J({})J",
     R"J(ValueError: substring not found)J"},
    {"join_non_strings", R"J({{ '-'.join([1, 2]) }})J", R"J({})J",
     R"J(TypeError: sequence item 0: expected str instance, int found)J"},
    {"split_empty_separator", R"J({{ 'a'.split('') }})J", R"J({})J",
     R"J(ValueError: empty separator)J"},
    {"format_missing_index", R"J({{ '{} {}'.format(1) }})J", R"J({})J",
     R"J(IndexError: tuple index out of range)J"},
    {"call_unknown_method", R"J({{ 'abc'.nosuch() }})J", R"J({})J",
     R"J(UndefinedError: 'str object' has no attribute 'nosuch')J"},
};
INSTANTIATE_TEST_SUITE_P(StrMethodErrors, ChatTemplateRenderError,
                         ::testing::ValuesIn(kStrMethodErrorsErrorCases), CaseName());

const RenderCase kDictMethodsCases[] = {
    {"get_keys_values_items",
     R"J({{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | list }} {{ d.items() | length }} {{ 'a' in d.keys() }} {{ 1 in d.values() }})J",
     R"J({"d": {"a": 1, "b": 2}})J",
     R"J(1 None 5 ['a', 'b'] [1, 2] [('a', 1), ('b', 2)] 2 True True)J"},
    {"views_print", R"J({{ d.items() }} {{ d.keys() }} {{ d.values() }})J", R"J({"d": {"a": 1}})J",
     R"J(dict_items([('a', 1)]) dict_keys(['a']) dict_values([1]))J"},
    {"copy", R"J({% set c = d.copy() %}{{ c }} {{ c is sameas d }})J", R"J({"d": {"a": 1}})J",
     R"J({'a': 1} False)J"},
    // A view is as true as its dict; a generator always is.
    {"views_truth",
     R"J({{ 'T' if d.items() else 'F' }}{{ 'T' if d.keys() else 'F' }}{{ 'T' if d.values() else 'F' }}{{ 'T' if e.items() else 'F' }}{{ 'T' if ([] | select) else 'F' }})J",
     R"J({"d": {}, "e": {"a": 1}})J", R"J(FFFTT)J"},
};
INSTANTIATE_TEST_SUITE_P(DictMethods, ChatTemplateRender, ::testing::ValuesIn(kDictMethodsCases),
                         CaseName());

const RenderCase kListMethodsCases[] = {
    {"index_count",
     R"J({{ [1, 2, 1].index(2) }} {{ [1, 2, 1].count(1) }} {{ (1, 2).index(2) }} {{ [1, 2, 1].index(1, 1) }})J",
     R"J({})J", R"J(1 2 1 2)J"},
};
INSTANTIATE_TEST_SUITE_P(ListMethods, ChatTemplateRender, ::testing::ValuesIn(kListMethodsCases),
                         CaseName());

const RenderCase kListMethodErrorsErrorCases[] = {
    {"index_missing", R"J({{ [1].index(5) }})J", R"J({})J", R"J(ValueError: 5 is not in list)J"},
};
INSTANTIATE_TEST_SUITE_P(ListMethodErrors, ChatTemplateRenderError,
                         ::testing::ValuesIn(kListMethodErrorsErrorCases), CaseName());

const RenderCase kSandboxCases[] = {
    {"append_access_is_undefined", R"J([{{ [1].append }}] {{ [1].append is defined }})J", R"J({})J",
     R"J([] False)J"},
    {"dict_key_named_like_method",
     R"J({{ x.items is callable }} {{ x['items'] }} {{ x.get('items') }})J",
     R"J({"x": {"items": 5}})J", R"J(True 5 5)J"},
};
INSTANTIATE_TEST_SUITE_P(Sandbox, ChatTemplateRender, ::testing::ValuesIn(kSandboxCases),
                         CaseName());

const RenderCase kSandboxErrorsErrorCases[] = {
    {"list_append", R"J({% set l = [1] %}{{ l.append(2) }})J", R"J({})J",
     R"J(SecurityError: access to attribute 'append' of 'list' object is unsafe.)J"},
    {"list_pop", R"J({% set l = [1] %}{% set _ = l.pop() %})J", R"J({})J",
     R"J(SecurityError: access to attribute 'pop' of 'list' object is unsafe.)J"},
    {"list_extend", R"J({% set l = [1] %}{% set _ = l.extend([2]) %})J", R"J({})J",
     R"J(SecurityError: access to attribute 'extend' of 'list' object is unsafe.)J"},
    {"list_insert", R"J({% set l = [1] %}{% set _ = l.insert(0, 2) %})J", R"J({})J",
     R"J(SecurityError: access to attribute 'insert' of 'list' object is unsafe.)J"},
    {"dict_update", R"J({% set d = {} %}{% set _ = d.update({'a': 1}) %})J", R"J({})J",
     R"J(SecurityError: access to attribute 'update' of 'dict' object is unsafe.)J"},
    {"dict_pop", R"J({% set d = {'a': 1} %}{% set _ = d.pop('a') %})J", R"J({})J",
     R"J(SecurityError: access to attribute 'pop' of 'dict' object is unsafe.)J"},
    {"dict_setdefault", R"J({% set d = {} %}{% set _ = d.setdefault('a', 1) %})J", R"J({})J",
     R"J(SecurityError: access to attribute 'setdefault' of 'dict' object is unsafe.)J"},
    {"namespace_list_append", R"J({% set ns = namespace(ids=[]) %}{% set _ = ns.ids.append(1) %})J",
     R"J({})J", R"J(SecurityError: access to attribute 'append' of 'list' object is unsafe.)J"},
};
INSTANTIATE_TEST_SUITE_P(SandboxErrors, ChatTemplateRenderError,
                         ::testing::ValuesIn(kSandboxErrorsErrorCases), CaseName());

const RenderCase kMarkupCases[] = {
    {"safe_plus_str_escapes",
     R"J({{ '<b>' | safe + '<i>' }} {{ '<i>' + '<b>' | safe }} {{ ('<b>' | safe) ~ '<' }})J",
     R"J({})J", R"J(<b>&lt;i&gt; &lt;i&gt;<b> <b><)J"},
    {"markup_methods",
     R"J({{ ('<b>' | safe).join(['<', '>']) }} {{ ('<b>{}' | safe).format('<x>') }} {{ ('a<b' | safe).upper() }} {{ ('a b' | safe).split() }} {{ ('a' | safe).replace('a', '<') }})J",
     R"J({})J", R"J(&lt;<b>&gt; <b>&lt;x&gt; A<B [Markup('a'), Markup('b')] &lt;)J"},
    {"markup_ops",
     R"J({{ ('%s' | safe) % '<x>' }} {{ '<x>' | safe | length }} {{ ('x' | safe) * 2 }} {{ ('ab' | safe)[0] }} {{ ['x' | safe] }})J",
     R"J({})J", R"J(&lt;x&gt; 3 xx a [Markup('x')])J"},
    {"markup_filters",
     R"J({{ '<a>' | safe | upper }} {{ '<a>' | safe | replace('a', '&') }} {{ '<a>' | safe | escape }} {{ '<a>' | safe | tojson }} {{ '<a>' | safe | string }} {{ ['<'] | join | safe }})J",
     R"J({})J", R"J(<A> <&> <a> "<a>" <a> <)J"},
    {"functionary_pattern", R"J({{ 'Use ' | safe + t.name + ': ' | safe + t | tojson }})J",
     R"J({"t": {"name": "f<x>", "d": "a \"q\""}})J",
     R"J(Use f&lt;x&gt;: {&#34;name&#34;: &#34;f&lt;x&gt;&#34;, &#34;d&#34;: &#34;a \&#34;q\&#34;&#34;})J"},
};
INSTANTIATE_TEST_SUITE_P(Markup, ChatTemplateRender, ::testing::ValuesIn(kMarkupCases), CaseName());

}  // namespace
}  // namespace sgl::tokenizer
