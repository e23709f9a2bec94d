// Builtin filters (and transformers' tojson) against Jinja2's behaviour.
#include <gtest/gtest.h>

#include "tokenizer/chat_template/test_util.h"

namespace sgl::tokenizer {
namespace {

const RenderCase kStringFiltersCases[] = {
    {"case",
     R"J({{ 'Hello World' | upper }} {{ 'Hello' | lower }} {{ "they're bIG-fish (x[y" | title }} {{ 'hello WORLD' | capitalize }} {{ 'ÉCOLE' | lower }})J",
     R"J({})J", R"J(HELLO WORLD hello They're Big-Fish (X[Y Hello world école)J"},
    {"trim",
     R"J([{{ '  x y \n' | trim }}] [{{ 'xxhixx' | trim('x') }}] [{{ undefined_var | trim }}])J",
     R"J({})J", R"J([x y] [hi] [])J"},
    {"replace",
     R"J({{ 'aaa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'abc' | replace('', '-') }} {{ 5 | replace('5', 'x') }})J",
     R"J({})J", R"J(bbb bba -a-b-c- x)J"},
    {"indent",
     R"J([{{ 'a\nb\n\nc' | indent }}] [{{ 'a\nb' | indent(2, true) }}] [{{ 'a\n\nb\n' | indent(2, blank=true) }}] [{{ 'a\nb' | indent('> ') }}] [{{ '' | indent(first=true) }}])J",
     R"J({})J",
     R"J([a
    b

    c] [  a
  b] [a
  
  b
  ] [a
> b] [    ])J"},
    {"truncate",
     R"J({{ 'hello world foo bar' | truncate(9) }}|{{ 'hello world foo bar' | truncate(9, true) }}|{{ 'hello' | truncate(3, leeway=0) }}|{{ 'hello world' | truncate(11) }}|{{ 'abc def ghi jkl' | truncate(10, end='!', leeway=0) }})J",
     R"J({})J", R"J(hello...|hello ...|...|hello world|abc def!)J"},
    {"wordcount_center",
     R"J({{ 'hello, world! foo_bar 42' | wordcount }} [{{ 'ab' | center(6) }}] [{{ 'abc' | center(6) }}])J",
     R"J({})J", R"J(4 [  ab  ] [ abc  ])J"},
    {"format",
     R"J({{ '%s-%s' | format('a', 1) }} {{ '%(a)s' | format(a='z') }} {{ '%.3f' | format(1 / 3) }})J",
     R"J({})J", R"J(a-1 z 0.333)J"},
    {"escape_safe",
     R"J({{ '<a href="x">&\'</a>' | e }} {{ '<b>' | escape | escape }} {{ 5 | e }} {{ '<x>' | safe }} {{ '<y>' | forceescape }})J",
     R"J({})J", R"J(&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt; &lt;b&gt; 5 <x> &lt;y&gt;)J"},
    {"string",
     R"J({{ 123 | string }} {{ [1, 'a'] | string }} {{ none | string }} [{{ undefined_var | string }}] {{ 1.0 | string }})J",
     R"J({})J", R"J(123 [1, 'a'] None [] 1.0)J"},
    {"striptags", R"J({{ '<p>Hello   <b>World</b></p> &amp; more <!-- c -->' | striptags }})J",
     R"J({})J", R"J(Hello World & more)J"},
};
INSTANTIATE_TEST_SUITE_P(StringFilters, ChatTemplateRender,
                         ::testing::ValuesIn(kStringFiltersCases), CaseName());

const RenderCase kSequenceFiltersCases[] = {
    {"length",
     R"J({{ [1, 2, 3] | length }} {{ 'héllo' | count }} {{ {'a': 1} | length }} {{ undefined_var | length }} {{ (1, 2) | length }})J",
     R"J({})J", R"J(3 5 1 0 2)J"},
    {"first_last",
     R"J({{ [3, 1, 2] | first }} {{ [3, 1, 2] | last }} [{{ [] | first }}] {{ 'abc' | first }} {{ 'abc' | last }} {{ {'k': 1} | first }})J",
     R"J({})J", R"J(3 2 [] a c k)J"},
    {"join",
     R"J({{ [1, 2, 3] | join(', ') }} {{ users | join('|', attribute='name') }} {{ [1, none, 'x'] | join }} {{ 'abc' | join('-') }})J",
     R"J({"users": [{"name": "Bob", "age": 30, "tags": ["a"]}, {"name": "alice", "age": 25}, {"name": "Carl", "age": 30, "x": null}]})J",
     R"J(1, 2, 3 Bob|alice|Carl 1Nonex a-b-c)J"},
    {"select_reject",
     R"J({{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3, 4] | reject('odd') | list }} {{ [0, 1, '', 'a', none] | select | list }} {{ [1, 5, 10] | select('gt', 4) | list }} {{ [1, 5, 10] | select('divisibleby', 5) | list }} {{ [1, 2, 3] | select('in', [2, 3]) | list }})J",
     R"J({})J", R"J([1, 3] [2, 4] [1, 'a'] [5, 10] [5, 10] [2, 3])J"},
    {"selectattr_rejectattr",
     R"J({{ users | selectattr('age', 'equalto', 30) | map(attribute='name') | join(',') }} {{ users | rejectattr('age', 'eq', 30) | map(attribute='name') | join(',') }} {{ users | selectattr('x', 'defined') | list | length }} {{ users | selectattr('tags') | list | length }} {{ users | selectattr('x', 'none') | list | length }})J",
     R"J({"users": [{"name": "Bob", "age": 30, "tags": ["a"]}, {"name": "alice", "age": 25}, {"name": "Carl", "age": 30, "x": null}]})J",
     R"J(Bob,Carl alice 1 1 1)J"},
    {"unique",
     R"J({{ ['a', 'A', 'b', 'a'] | unique | list }} {{ ['a', 'A', 'b'] | unique(true) | list }} {{ users | unique(attribute='age') | map(attribute='name') | list }})J",
     R"J({"users": [{"name": "Bob", "age": 30, "tags": ["a"]}, {"name": "alice", "age": 25}, {"name": "Carl", "age": 30, "x": null}]})J",
     R"J(['a', 'b'] ['a', 'A', 'b'] ['Bob', 'alice'])J"},
    {"list_items",
     R"J({{ 'abc' | list }} {{ {'a': 1, 'b': 2} | list }} {{ (1, 2) | list }} {{ {'a': 1, 'b': 2} | items | list }} {{ undefined_var | items | list }})J",
     R"J({})J", R"J(['a', 'b', 'c'] ['a', 'b'] [1, 2] [('a', 1), ('b', 2)] [])J"},
    {"dictsort",
     R"J({{ {'b': 1, 'a': 2, 'C': 0} | dictsort }} {{ {'b': 1, 'a': 2, 'C': 0} | dictsort(true) }} {{ {'b': 1, 'a': 2} | dictsort(by='value') }} {{ {'b': 1, 'a': 2} | dictsort(reverse=true) }})J",
     R"J({})J",
     R"J([('a', 2), ('b', 1), ('C', 0)] [('C', 0), ('a', 2), ('b', 1)] [('b', 1), ('a', 2)] [('b', 1), ('a', 2)])J"},
    {"sort",
     R"J({{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }} {{ [3, 1, 2] | sort(reverse=true) }} {{ users | sort(attribute='age') | map(attribute='name') | list }} {{ users | sort(attribute='age', reverse=true) | map(attribute='name') | list }})J",
     R"J({"users": [{"name": "Bob", "age": 30, "tags": ["a"]}, {"name": "alice", "age": 25}, {"name": "Carl", "age": 30, "x": null}]})J",
     R"J([1, 2, 3] ['A', 'b', 'c'] ['A', 'b', 'c'] [3, 2, 1] ['alice', 'Bob', 'Carl'] ['Bob', 'Carl', 'alice'])J"},
    {"reverse_min_max",
     R"J({{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }} {{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ ['b', 'A'] | min }} {{ users | max(attribute='age') }} [{{ [] | max }}])J",
     R"J({"users": [{"name": "Bob", "age": 30, "tags": ["a"]}, {"name": "alice", "age": 25}, {"name": "Carl", "age": 30, "x": null}]})J",
     R"J([3, 2, 1] cba 1 3 A {'name': 'Bob', 'age': 30, 'tags': ['a']} [])J"},
    {"sum",
     R"J({{ [1, 2, 3] | sum }} {{ users | sum(attribute='age') }} {{ [[1], [2]] | sum(start=[]) }} {{ [0.5, 1] | sum }})J",
     R"J({"users": [{"name": "Bob", "age": 30, "tags": ["a"]}, {"name": "alice", "age": 25}, {"name": "Carl", "age": 30, "x": null}]})J",
     R"J(6 85 [1, 2] 1.5)J"},
    {"batch_slice",
     R"J({{ [1, 2, 3, 4, 5] | batch(2) | list }} {{ [1, 2, 3] | batch(2, 'x') | list }} {{ [1, 2, 3, 4, 5] | slice(2) | list }} {{ [1, 2, 3, 4] | slice(3, 0) | list }})J",
     R"J({})J",
     R"J([[1, 2], [3, 4], [5]] [[1, 2], [3, 'x']] [[1, 2, 3], [4, 5]] [[1, 2], [3, 0], [4, 0]])J"},
    {"generators_are_single_pass",
     R"J({% set g = [1, 2, 3] | map('string') %}{{ g | list }}{{ g | list }})J", R"J({})J",
     R"J(['1', '2', '3'][])J"},
    {"attr", R"J([{{ users[0] | attr('name') }}] {{ users[0] | attr('items') is callable }})J",
     R"J({"users": [{"name": "Bob", "age": 30, "tags": ["a"]}, {"name": "alice", "age": 25}, {"name": "Carl", "age": 30, "x": null}]})J",
     R"J([] True)J"},
};
INSTANTIATE_TEST_SUITE_P(SequenceFilters, ChatTemplateRender,
                         ::testing::ValuesIn(kSequenceFiltersCases), CaseName());

const RenderCase kSequenceFiltersErrorCases[] = {
    {"map",
     R"J({{ users | map(attribute='name') | list }} {{ users | map(attribute='x', default='D') | list }} {{ ['a', 'b'] | map('upper') | join }} {{ [1.5, 2.5] | map('round') | list }} {{ users | map(attribute='tags.0') | list }} {{ none | map('upper') | list }})J",
     R"J({"users": [{"name": "Bob", "age": 30, "tags": ["a"]}, {"name": "alice", "age": 25}, {"name": "Carl", "age": 30, "x": null}]})J",
     R"J(UndefinedError: 'dict object' has no attribute 'tags')J"},
};
INSTANTIATE_TEST_SUITE_P(SequenceFilters, ChatTemplateRenderError,
                         ::testing::ValuesIn(kSequenceFiltersErrorCases), CaseName());

const RenderCase kSequenceFilterErrorsErrorCases[] = {
    {"generator_length", R"J({{ [1, 2] | map('string') | length }})J", R"J({})J",
     R"J(TypeError: object of type 'generator' has no len())J"},
    {"generator_last", R"J({{ [1, 2] | map('string') | last }})J", R"J({})J",
     R"J(TypeError: 'generator' object is not reversible)J"},
    {"none_length", R"J({{ none | length }})J", R"J({})J",
     R"J(TypeError: object of type 'NoneType' has no len())J"},
    {"int_first", R"J({{ 5 | first }})J", R"J({})J",
     R"J(TypeError: 'int' object is not iterable)J"},
    {"map_without_filter", R"J({{ [1] | map | list }})J", R"J({})J",
     R"J(FilterArgumentError: map requires a filter argument)J"},
    {"truncate_bad_length", R"J({{ 'abcdef' | truncate(2) }})J", R"J({})J",
     R"J(AssertionError: expected length >= 3, got 2)J"},
    {"dictsort_bad_by", R"J({{ {} | dictsort(by='x') }})J", R"J({})J",
     R"J(FilterArgumentError: You can only sort by either "key" or "value")J"},
    {"round_bad_method", R"J({{ 1 | round(method='x') }})J", R"J({})J",
     R"J(FilterArgumentError: method must be common, ceil or floor)J"},
    {"format_mixed_args", R"J({{ '%s' | format(1, a=2) }})J", R"J({})J",
     R"J(FilterArgumentError: can't handle positional and keyword arguments at the same time)J"},
    {"items_of_list", R"J({{ [1] | items | list }})J", R"J({})J",
     R"J(TypeError: Can only get item pairs from a mapping.)J"},
    {"sort_mixed", R"J({{ [1, 'a'] | sort }})J", R"J({})J",
     R"J(TypeError: '<' not supported between instances of 'str' and 'int')J"},
};
INSTANTIATE_TEST_SUITE_P(SequenceFilterErrors, ChatTemplateRenderError,
                         ::testing::ValuesIn(kSequenceFilterErrorsErrorCases), CaseName());

const RenderCase kValueFiltersCases[] = {
    {"default",
     R"J({{ undefined_var | default('d') }} {{ none | default('d') }} [{{ '' | default('d') }}] {{ '' | default('d', true) }} {{ 0 | d('z', boolean=true) }} {{ false | default(true) }} {{ undefined_var | d }}|)J",
     R"J({})J", R"J(d None [] d z False |)J"},
    {"int",
     R"J({{ '42' | int }} {{ '42.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ -3.9 | int }} {{ true | int }} {{ none | int }} {{ ' 12 ' | int }} {{ '0x1A' | int(0, 16) }} {{ '1_000' | int }} {{ '-5' | int }})J",
     R"J({})J", R"J(42 42 0 7 3 -3 1 0 12 26 1000 -5)J"},
    {"float",
     R"J({{ '3.5' | float }} {{ 'x' | float }} {{ 2 | float }} {{ '1e3' | float }} {{ none | float }} {{ ' -2.5 ' | float }})J",
     R"J({})J", R"J(3.5 0.0 2.0 1000.0 0.0 -2.5)J"},
    {"abs_round",
     R"J({{ -3 | abs }} {{ -2.5 | abs }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 2.1 | round(0, 'ceil') }} {{ 2.9 | round(method='floor') }} {{ 7 | round }} {{ 1234 | round(-2) }} {{ 1.23456 | round(3) }})J",
     R"J({})J", R"J(3 2.5 2.0 4.0 2.67 3.0 2.0 7 1200 1.235)J"},
    {"pprint", R"J({{ {'a': [1, 'x']} | pprint }})J", R"J({})J", R"J({'a': [1, 'x']})J"},
};
INSTANTIATE_TEST_SUITE_P(ValueFilters, ChatTemplateRender, ::testing::ValuesIn(kValueFiltersCases),
                         CaseName());

const RenderCase kToJsonCases[] = {
    {"default_separators", R"J({{ x | tojson }})J",
     R"J({"x": {"b": [1, 2.5, null, true], "a": {"c": "d"}}})J",
     R"J({"b": [1, 2.5, null, true], "a": {"c": "d"}})J"},
    {"indent",
     R"J({{ x | tojson(indent=2) }}|{{ [] | tojson(indent=2) }}|{{ {} | tojson(indent=2) }}|{{ [{'a': [1]}] | tojson(indent=4) }})J",
     R"J({"x": {"b": [1, 2], "a": {"c": "d"}}})J",
     R"J({
  "b": [
    1,
    2
  ],
  "a": {
    "c": "d"
  }
}|[]|{}|[
    {
        "a": [
            1
        ]
    }
])J"},
    {"non_ascii_kept", R"J({{ 'é"\n\t\\/' | tojson }} {{ '日本 😀' | tojson }})J", R"J({})J",
     R"J("é\"\n\t\\/" "日本 😀")J"},
    {"ensure_ascii", R"J({{ 'é 😀' | tojson(ensure_ascii=true) }})J", R"J({})J",
     R"J("\u00e9 \ud83d\ude00")J"},
    {"sort_keys_separators",
     R"J({{ x | tojson(sort_keys=true) }} {{ x | tojson(separators=(',', ':')) }} {{ x | tojson(indent='\t') }})J",
     R"J({"x": {"b": 1, "a": [2]}})J",
     R"J({"a": [2], "b": 1} {"b":1,"a":[2]} {
	"b": 1,
	"a": [
		2
	]
})J"},
    {"scalars",
     R"J({{ 1.0 | tojson }} {{ 1e100 | tojson }} {{ none | tojson }} {{ true | tojson }} {{ (1, 2) | tojson }} {{ 'x\u0001\u007f' | tojson }} {{ {1: 2, none: 3, true: 4, 1.5: 5} | tojson }})J",
     R"J({})J", R"J(1.0 1e+100 null true [1, 2] "x\u0001" {"1": 4, "null": 3, "1.5": 5})J"},
    {"key_order_preserved", R"J({{ tools | tojson }})J",
     R"J({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}]})J",
     R"J([{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}])J"},
    {"positional_is_ensure_ascii", R"J({{ 'é' | tojson(4) }})J", R"J({})J", R"J("\u00e9")J"},
};
INSTANTIATE_TEST_SUITE_P(ToJson, ChatTemplateRender, ::testing::ValuesIn(kToJsonCases), CaseName());

const RenderCase kToJsonErrorsErrorCases[] = {
    {"undefined", R"J({{ undefined_var | tojson }})J", R"J({})J",
     R"J(TypeError: Object of type Undefined is not JSON serializable)J"},
    {"generator", R"J({{ [1, 2] | map('string') | tojson }})J", R"J({})J",
     R"J(TypeError: Object of type generator is not JSON serializable)J"},
    {"namespace", R"J({{ namespace(a=1) | tojson }})J", R"J({})J",
     R"J(TypeError: Object of type Namespace is not JSON serializable)J"},
    {"dict_items", R"J({{ {'a': 1}.items() | tojson }})J", R"J({})J",
     R"J(TypeError: Object of type dict_items is not JSON serializable)J"},
};
INSTANTIATE_TEST_SUITE_P(ToJsonErrors, ChatTemplateRenderError,
                         ::testing::ValuesIn(kToJsonErrorsErrorCases), CaseName());

}  // namespace
}  // namespace sgl::tokenizer
