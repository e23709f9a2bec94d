// Registry of Jinja's builtin filters (plus transformers' tojson).
#include "tokenizer/chat_template/builtin_filters.h"

#include <unordered_map>

#include "tokenizer/chat_template/filter_impls.h"

namespace sgl::tokenizer::jinja {

FilterFn find_filter(const std::string& name) {
  static const std::unordered_map<std::string, FilterFn> table = {
      {"upper", f_upper},
      {"lower", f_lower},
      {"title", f_title},
      {"capitalize", f_capitalize},
      {"trim", f_trim},
      {"replace", f_replace},
      {"indent", f_indent},
      {"truncate", f_truncate},
      {"wordcount", f_wordcount},
      {"center", f_center},
      {"format", f_format},
      {"e", f_escape},
      {"escape", f_escape},
      {"forceescape", f_escape},
      {"safe", f_safe},
      {"string", f_string},
      {"striptags", f_striptags},
      {"length", f_length},
      {"count", f_length},
      {"first", f_first},
      {"last", f_last},
      {"join", f_join},
      {"map", f_map},
      {"select", f_select},
      {"reject", f_reject},
      {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr},
      {"unique", f_unique},
      {"list", f_list},
      {"items", f_items},
      {"dictsort", f_dictsort},
      {"sort", f_sort},
      {"reverse", f_reverse},
      {"min", f_min},
      {"max", f_max},
      {"sum", f_sum},
      {"batch", f_batch},
      {"slice", f_slice},
      {"attr", f_attr},
      {"default", f_default},
      {"d", f_default},
      {"tojson", f_tojson},
      {"int", f_int},
      {"float", f_float},
      {"abs", f_abs},
      {"round", f_round},
      {"pprint", f_pprint},
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace sgl::tokenizer::jinja
