// Declarations of the builtin filter functions (defined in filters_*.cpp).
#pragma once

#include <functional>

#include "core/status.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

#define SGL_DECLARE_FILTER(name) \
  Result<Value> name(Interpreter& interp, const Value& input, const CallArgs& args)

// filters_string.cpp
SGL_DECLARE_FILTER(f_upper);
SGL_DECLARE_FILTER(f_lower);
SGL_DECLARE_FILTER(f_title);
SGL_DECLARE_FILTER(f_capitalize);
SGL_DECLARE_FILTER(f_trim);
SGL_DECLARE_FILTER(f_replace);
SGL_DECLARE_FILTER(f_indent);
SGL_DECLARE_FILTER(f_truncate);
SGL_DECLARE_FILTER(f_wordcount);
SGL_DECLARE_FILTER(f_center);
SGL_DECLARE_FILTER(f_format);
SGL_DECLARE_FILTER(f_escape);
SGL_DECLARE_FILTER(f_safe);
SGL_DECLARE_FILTER(f_string);
SGL_DECLARE_FILTER(f_striptags);

// filters_sequence.cpp
SGL_DECLARE_FILTER(f_length);
SGL_DECLARE_FILTER(f_first);
SGL_DECLARE_FILTER(f_last);
SGL_DECLARE_FILTER(f_join);
SGL_DECLARE_FILTER(f_map);
SGL_DECLARE_FILTER(f_select);
SGL_DECLARE_FILTER(f_reject);
SGL_DECLARE_FILTER(f_selectattr);
SGL_DECLARE_FILTER(f_rejectattr);
SGL_DECLARE_FILTER(f_unique);
SGL_DECLARE_FILTER(f_list);
SGL_DECLARE_FILTER(f_items);
SGL_DECLARE_FILTER(f_dictsort);
SGL_DECLARE_FILTER(f_sort);
SGL_DECLARE_FILTER(f_reverse);
SGL_DECLARE_FILTER(f_min);
SGL_DECLARE_FILTER(f_max);
SGL_DECLARE_FILTER(f_sum);
SGL_DECLARE_FILTER(f_batch);
SGL_DECLARE_FILTER(f_slice);
SGL_DECLARE_FILTER(f_attr);

// filters_misc.cpp
SGL_DECLARE_FILTER(f_default);
SGL_DECLARE_FILTER(f_tojson);
SGL_DECLARE_FILTER(f_int);
SGL_DECLARE_FILTER(f_float);
SGL_DECLARE_FILTER(f_abs);
SGL_DECLARE_FILTER(f_round);
SGL_DECLARE_FILTER(f_pprint);

#undef SGL_DECLARE_FILTER

// Jinja's make_attrgetter: "a.b.0" looks up each part with getitem; undefined results are
// replaced by `default_value` when it is given.
using AttrGetter = std::function<Result<Value>(const Value& item)>;
AttrGetter make_attrgetter(Interpreter& interp, const Value& attribute, const Value* default_value);

}  // namespace sgl::tokenizer::jinja
