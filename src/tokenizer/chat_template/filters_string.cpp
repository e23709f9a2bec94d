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

bool is_title_separator(char32_t cp) {
  return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || is_py_space(cp);
}

}  // namespace

Result<Value> f_upper(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("upper", args));
  return like_input(input, py_upper(py_str(input)));
}

Result<Value> f_lower(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("lower", args));
  return like_input(input, py_lower(py_str(input)));
}

// NOTE: Jinja's title() differs from str.title(): words start only after '-', whitespace or an
// opening bracket, so "they're" becomes "They're".
Result<Value> f_title(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("title", args));
  std::string out;
  bool word_start = true;
  for (char32_t cp : utf8_decode(py_str(input))) {
    if (is_title_separator(cp)) {
      utf8_append(out, cp);
      word_start = true;
      continue;
    }
    utf8_append(out, word_start ? to_upper_cp(cp) : to_lower_cp(cp));
    word_start = false;
  }
  return Value(std::move(out));
}

Result<Value> f_capitalize(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("capitalize", args));
  return like_input(input, py_capitalize(py_str(input)));
}

Result<Value> f_trim(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("trim", args, {{"chars", Value::none()}}));
  std::string s = py_str(input);
  if (a[0].is_none() || a[0].is_undefined())
    return like_input(input, py_strip(s, nullptr, true, true));
  if (!a[0].is_string()) return type_error("strip arg must be None or str");
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
  SGL_ASSIGN_OR_RETURN(std::string out,
                       py_replace(interp, py_str(input), py_str(a[0]), py_str(a[1]), count));
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
    SGL_RETURN_IF_ERROR(interp.check_size(static_cast<size_t>(std::max<int64_t>(width, 0))));
    indention.assign(static_cast<size_t>(std::max<int64_t>(width, 0)), ' ');
  }
  std::string s = py_str(input) + "\n";
  std::vector<std::string> lines = py_splitlines(s, false);
  std::string rv;
  if (a[2].truthy()) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) rv += "\n" + indention;
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    if (lines.size() > 1) {
      rv += "\n";
      for (size_t i = 1; i < lines.size(); ++i) {
        if (i > 1) rv += "\n";
        if (!lines[i].empty()) rv += indention;
        rv += lines[i];
      }
    }
  }
  if (a[1].truthy()) rv = indention + rv;
  SGL_RETURN_IF_ERROR(interp.check_size(rv.size()));
  return like_input(input, std::move(rv));
}

Result<Value> f_truncate(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("truncate", args,
                                         {{"length", Value(255)},
                                          {"killwords", Value(false)},
                                          {"end", Value("...")},
                                          {"leeway", Value::none()}}));
  SGL_ASSIGN_OR_RETURN(int64_t length, int_arg("truncate", a[0]));
  std::string end = py_str(a[2]);
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
  std::u32string s = utf8_decode(py_str(input));
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

Result<Value> f_wordcount(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("wordcount", args));
  int64_t n = 0;
  bool in_word = false;
  for (char32_t cp : utf8_decode(py_str(input))) {
    bool w = is_py_word(cp);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

Result<Value> f_center(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("center", args, {{"width", Value(80)}}));
  SGL_ASSIGN_OR_RETURN(int64_t width, int_arg("center", a[0]));
  std::string s = py_str(input);
  int64_t len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return like_input(input, std::move(s));
  SGL_RETURN_IF_ERROR(interp.check_size(static_cast<size_t>(width)));
  int64_t marg = width - len;
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
  if (input.is_markup()) params = escape_format_args(params);
  SGL_ASSIGN_OR_RETURN(std::string out, percent_format(py_str(input), params));
  SGL_RETURN_IF_ERROR(interp.check_size(out.size()));
  return like_input(input, std::move(out));
}

Result<Value> f_escape(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("escape", args));
  if (input.is_markup()) return input;
  return Value::markup(html_escape(py_str(input)));
}

Result<Value> f_safe(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("safe", args));
  if (input.is_markup()) return input;
  return Value::markup(py_str(input));
}

Result<Value> f_string(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("string", args));
  if (input.is_string()) return input;
  return Value(py_str(input));
}

Result<Value> f_striptags(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("striptags", args));
  std::string s = py_str(input);
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
    utf8_append(out, cp);
  }
  return Value(std::move(out));
}

}  // namespace sgl::tokenizer::jinja
