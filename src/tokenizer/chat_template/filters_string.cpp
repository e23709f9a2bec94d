// String filters: case, trim, replace, indent, truncate, wordcount, format, escape, string.
#include <string>
#include <vector>

#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/errors.h"
#include "tokenizer/chat_template/filter_impls.h"
#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/methods.h"
#include "tokenizer/chat_template/py_format.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"
#include "tokenizer/chat_template/value_ops.h"

namespace sgl::tokenizer::jinja {
namespace {

Status no_args(const char* name, const CallArgs& args) {
  return bind_args(name, args, {}).status();
}

// Jinja's soft_str keeps Markup, so string filters return Markup for Markup input.
Value like_input(const Value& input, std::string text) {
  return input.is_markup() ? Value::markup(std::move(text)) : Value(std::move(text));
}

// The result of a filter that builds a string at most a few times the size of its input
// (which interp.str() charged): charged once built.
Result<Value> built(Interpreter& interp, const Value& input, std::string text) {
  SGL_RETURN_IF_ERROR(interp.budget().allocate(text.size()));
  return like_input(input, std::move(text));
}

bool is_title_separator(char32_t cp) {
  return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || is_py_space(cp);
}

}  // namespace

Result<Value> f_upper(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("upper", args));
  SGL_ASSIGN_OR_RETURN(std::string s, interp.str(input));
  return built(interp, input, py_upper(s));
}

Result<Value> f_lower(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("lower", args));
  SGL_ASSIGN_OR_RETURN(std::string s, interp.str(input));
  return built(interp, input, py_lower(s));
}

// NOTE: Jinja's title() differs from str.title(): words start only after '-', whitespace or an
// opening bracket, so "they're" becomes "They're".
Result<Value> f_title(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("title", args));
  SGL_ASSIGN_OR_RETURN(std::string s, interp.str(input));
  std::string out;
  bool word_start = true;
  for (char32_t cp : utf8_decode(s)) {
    if (is_title_separator(cp)) {
      append_utf8(out, cp);
      word_start = true;
      continue;
    }
    append_utf8(out, word_start ? to_upper_cp(cp) : to_lower_cp(cp));
    word_start = false;
  }
  SGL_RETURN_IF_ERROR(interp.budget().allocate(out.size()));
  return Value(std::move(out));
}

Result<Value> f_capitalize(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("capitalize", args));
  SGL_ASSIGN_OR_RETURN(std::string s, interp.str(input));
  return built(interp, input, py_capitalize(s));
}

Result<Value> f_trim(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("trim", args, {{"chars", Value::none()}}));
  SGL_ASSIGN_OR_RETURN(std::string s, interp.str(input));
  if (a[0].is_none() || a[0].is_undefined())
    return like_input(input, py_strip(s, nullptr, true, true));
  if (!a[0].is_string()) return type_error("strip arg must be None or str");
  SGL_RETURN_IF_ERROR(interp.budget().charge(a[0].as_string().size()));
  std::string chars =
      input.is_markup() && !a[0].is_markup() ? html_escape(a[0].as_string()) : a[0].as_string();
  return like_input(input, py_strip(s, &chars, true, true));
}

Result<Value> f_replace(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(
      auto a,
      bind_args("replace", args, {{"old", {}, true}, {"new", {}, true}, {"count", Value::none()}}));
  int64_t count = -1;
  if (!a[2].is_none()) {
    SGL_ASSIGN_OR_RETURN(count, int_arg("replace", a[2]));
  }
  SGL_ASSIGN_OR_RETURN(std::string s, interp.str(input));
  SGL_ASSIGN_OR_RETURN(std::string old, interp.str(a[0]));
  SGL_ASSIGN_OR_RETURN(std::string repl, interp.str(a[1]));
  SGL_ASSIGN_OR_RETURN(std::string out, py_replace(interp, s, old, repl, count));
  return Value(std::move(out));
}

Result<Value> f_indent(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(
      auto a, bind_args("indent", args,
                        {{"width", Value(4)}, {"first", Value(false)}, {"blank", Value(false)}}));
  std::string indention;
  if (a[0].is_string()) {
    indention = a[0].as_string();
  } else {
    SGL_ASSIGN_OR_RETURN(int64_t width, int_arg("indent", a[0]));
    SGL_RETURN_IF_ERROR(interp.budget().allocate(static_cast<size_t>(std::max<int64_t>(width, 0))));
    indention.assign(static_cast<size_t>(std::max<int64_t>(width, 0)), ' ');
  }
  SGL_ASSIGN_OR_RETURN(std::string s, interp.str(input));
  s += "\n";
  SGL_ASSIGN_OR_RETURN(std::vector<std::string> lines, py_splitlines(interp.budget(), s, false));
  // Each line gets the indent: built under the budget, as many short lines times a long
  // indent multiply fast.
  BudgetedString rv(interp.budget());
  if (a[1].truthy()) SGL_RETURN_IF_ERROR(rv.append(indention));
  if (a[2].truthy()) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) {
        SGL_RETURN_IF_ERROR(rv.push_back('\n'));
        SGL_RETURN_IF_ERROR(rv.append(indention));
      }
      SGL_RETURN_IF_ERROR(rv.append(lines[i]));
    }
  } else if (!lines.empty()) {
    SGL_RETURN_IF_ERROR(rv.append(lines[0]));
    if (lines.size() > 1) {
      SGL_RETURN_IF_ERROR(rv.push_back('\n'));
      for (size_t i = 1; i < lines.size(); ++i) {
        if (i > 1) SGL_RETURN_IF_ERROR(rv.push_back('\n'));
        if (!lines[i].empty()) SGL_RETURN_IF_ERROR(rv.append(indention));
        SGL_RETURN_IF_ERROR(rv.append(lines[i]));
      }
    }
  }
  SGL_ASSIGN_OR_RETURN(std::string out, rv.take());
  return like_input(input, std::move(out));
}

Result<Value> f_truncate(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("truncate", args,
                                         {{"length", Value(255)},
                                          {"killwords", Value(false)},
                                          {"end", Value("...")},
                                          {"leeway", Value::none()}}));
  SGL_ASSIGN_OR_RETURN(int64_t length, int_arg("truncate", a[0]));
  SGL_ASSIGN_OR_RETURN(std::string end, interp.str(a[2]));
  int64_t leeway = 5;
  if (!a[3].is_none()) {
    SGL_ASSIGN_OR_RETURN(leeway, int_arg("truncate", a[3]));
  }
  int64_t end_len = static_cast<int64_t>(utf8_length(end));
  if (length < end_len) {
    return python_assertion_error("expected length >= " + std::to_string(end_len) + ", got " +
                                  std::to_string(length));
  }
  if (leeway < 0)
    return python_assertion_error("expected leeway >= 0, got " + std::to_string(leeway));
  SGL_ASSIGN_OR_RETURN(std::string text, interp.str(input));
  std::u32string s = utf8_decode(text);
  if (static_cast<int64_t>(s.size()) <= length + leeway)
    return input.is_string() ? input : Value(utf8_encode(s));
  if (input.is_markup() && !a[2].is_markup()) end = html_escape(end);
  std::u32string head = s.substr(0, static_cast<size_t>(length - end_len));
  if (!a[1].truthy()) {
    size_t space = head.rfind(U' ');
    if (space != std::u32string::npos) head.resize(space);
  }
  return like_input(input, utf8_encode(head) + end);
}

Result<Value> f_wordcount(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("wordcount", args));
  SGL_ASSIGN_OR_RETURN(std::string text, interp.str(input));
  int64_t n = 0;
  bool in_word = false;
  for (char32_t cp : utf8_decode(text)) {
    bool w = is_py_word(cp);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

Result<Value> f_center(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("center", args, {{"width", Value(80)}}));
  SGL_ASSIGN_OR_RETURN(int64_t width, int_arg("center", a[0]));
  SGL_ASSIGN_OR_RETURN(std::string s, interp.str(input));
  int64_t len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return like_input(input, std::move(s));
  int64_t marg = width - len;  // padding characters, one byte each
  if (static_cast<uint64_t>(marg) > interp.options().max_output_bytes) {
    return interp.budget().check_size(static_cast<size_t>(marg));
  }
  SGL_RETURN_IF_ERROR(interp.budget().allocate(s.size() + static_cast<size_t>(marg)));
  int64_t left = marg / 2 + (marg & width & 1);
  return like_input(input, std::string(static_cast<size_t>(left), ' ') + s +
                               std::string(static_cast<size_t>(marg - left), ' '));
}

Result<Value> f_format(Interpreter& interp, const Value& input, const CallArgs& args) {
  if (!args.positional.empty() && !args.keyword.empty()) {
    return filter_argument_error("can't handle positional and keyword arguments at the same time");
  }
  Value params;
  if (!args.keyword.empty()) {
    DictData d;
    for (const auto& [k, v] : args.keyword) d.set(k, v);
    params = Value::dict(std::move(d));
  } else {
    params = Value::tuple(args.positional);
  }
  if (input.is_markup()) {
    SGL_ASSIGN_OR_RETURN(params, escape_format_args(params, interp.budget()));
  }
  SGL_ASSIGN_OR_RETURN(std::string fmt, interp.str(input));
  SGL_ASSIGN_OR_RETURN(std::string out, percent_format(fmt, params, interp.budget()));
  return like_input(input, std::move(out));
}

Result<Value> f_escape(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("escape", args));
  if (input.is_markup()) return input;
  SGL_ASSIGN_OR_RETURN(std::string s, interp.str(input));
  std::string escaped = html_escape(s);
  SGL_RETURN_IF_ERROR(interp.budget().allocate(escaped.size()));
  return Value::markup(std::move(escaped));
}

Result<Value> f_safe(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("safe", args));
  if (input.is_markup()) return input;
  SGL_ASSIGN_OR_RETURN(std::string s, interp.str(input));
  return Value::markup(std::move(s));
}

Result<Value> f_string(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("string", args));
  if (input.is_string()) return input;
  SGL_ASSIGN_OR_RETURN(std::string s, interp.str(input));
  return Value(std::move(s));
}

Result<Value> f_striptags(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("striptags", args));
  SGL_ASSIGN_OR_RETURN(std::string s, interp.str(input));
  std::string stripped;
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, 4, "<!--") == 0) {
      size_t e = s.find("-->", i + 4);
      if (e == std::string::npos) break;
      i = e + 3;
    } else if (s[i] == '<') {
      size_t e = s.find('>', i + 1);
      if (e == std::string::npos) {
        stripped += s.substr(i);
        break;
      }
      i = e + 1;
    } else {
      stripped += s[i++];
    }
  }
  static const std::pair<const char*, const char*> kEntities[] = {{"&lt;", "<"},    {"&gt;", ">"},
                                                                  {"&quot;", "\""}, {"&#34;", "\""},
                                                                  {"&#39;", "'"},   {"&amp;", "&"}};
  for (const auto& [from, to] : kEntities) {
    std::string next;
    size_t pos = 0;
    std::string f(from);
    for (size_t hit = stripped.find(f); hit != std::string::npos; hit = stripped.find(f, pos)) {
      next.append(stripped, pos, hit - pos);
      next += to;
      pos = hit + f.size();
    }
    next.append(stripped, pos, std::string::npos);
    stripped = std::move(next);
  }
  std::string out;
  bool pending_space = false;
  for (char32_t cp : utf8_decode(stripped)) {
    if (is_py_space(cp)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    append_utf8(out, cp);
  }
  return Value(std::move(out));
}

}  // namespace sgl::tokenizer::jinja
