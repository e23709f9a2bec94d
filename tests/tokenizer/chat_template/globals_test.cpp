// Globals: range, dict, namespace, cycler, joiner, raise_exception, strftime_now.
#include <gtest/gtest.h>

#include "tokenizer/chat_template/test_util.h"

namespace sgl::tokenizer {
namespace {

const RenderCase kGlobalsCases[] = {
    {"range",
     R"J({{ range(3) | list }} {{ range(1, 10, 3) | list }} {{ range(5, 0, -2) | list }} {{ range(0) | list }} {{ range(2, 2) | list }} {{ range(3) | length }} {{ range(3)[1] }})J",
     R"J({})J", R"J([0, 1, 2] [1, 4, 7] [5, 3, 1] [] [] 3 1)J"},
    {"dict",
     R"J({{ dict(a=1, b=2) }} {{ dict([('x', 1)]) }} {{ dict({'y': 2}, z=3) }} {{ dict() }})J",
     R"J({})J", R"J({'a': 1, 'b': 2} {'x': 1} {'y': 2, 'z': 3} {})J"},
    {"namespace", R"J({% set ns = namespace(a=1) %}{{ ns.a }} {{ namespace().x is defined }})J",
     R"J({})J", R"J(1 False)J"},
    {"cycler_joiner",
     R"J({% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}{% set _ = c.reset() %}{{ c.current }} {% set j = joiner('|') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %})J",
     R"J({})J", R"J(ababa 1|2|3)J"},
    {"strftime_now",
     R"J({{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%B %d, %Y') }} {{ strftime_now('%A %H:%M:%S %j %%') }})J",
     R"J({})J", R"J(2026-11-21 21 Nov 2026 November 21, 2026 Saturday 12:00:00 325 %)J"},
    {"raise_in_untaken_branch", R"J({% if false %}{{ raise_exception('no') }}{% endif %}ok)J",
     R"J({})J", R"J(ok)J"},
};
INSTANTIATE_TEST_SUITE_P(Globals, ChatTemplateRender, ::testing::ValuesIn(kGlobalsCases),
                         CaseName());

const RenderCase kGlobalErrorsErrorCases[] = {
    {"raise_exception", R"J({{ raise_exception('boom: ' ~ 42) }})J", R"J({})J", R"J(boom: 42)J"},
    {"raise_exception_in_loop",
     R"J({% for m in messages %}{% if m.role not in ['user', 'assistant'] %}{{ raise_exception('Unsupported role: ' + m.role) }}{% endif %}{% endfor %})J",
     R"J({"messages": [{"role": "user"}, {"role": "tool"}]})J", R"J(Unsupported role: tool)J"},
    {"range_zero_step", R"J({{ range(1, 2, 0) }})J", R"J({})J",
     R"J(ValueError: range() arg 3 must not be zero)J"},
    {"range_non_int", R"J({{ range('a') }})J", R"J({})J",
     R"J(TypeError: 'str' object cannot be interpreted as an integer)J"},
};
INSTANTIATE_TEST_SUITE_P(GlobalErrors, ChatTemplateRenderError,
                         ::testing::ValuesIn(kGlobalErrorsErrorCases), CaseName());

}  // namespace
}  // namespace sgl::tokenizer
