// Python methods of str values (split, strip, replace, find, format, join, ...).
#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/errors.h"
#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/method_table.h"
#include "tokenizer/chat_template/methods.h"
#include "tokenizer/chat_template/py_format.h"
#include "tokenizer/chat_template/str_search.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"
#include "tokenizer/chat_template/value_ops.h"

namespace sgl::tokenizer::jinja {
namespace {

Result<std::string> str_arg(std::string_view fn, const Value& v) {
  if (!v.is_string()) {
    return type_error(std::string(fn) + "() argument must be str, not " + type_name(v));
  }
  return v.as_string();
}

// Byte offset of code point `index` (clamped Python-style, negatives from the end); a TypeError,
// as Python's, for an index that is neither an integer nor None.
Result<size_t> byte_offset(const std::string& s, const Value& index, size_t default_bytes) {
  if (index.is_none() || index.is_undefined()) return default_bytes;
  if (!index.is_integral()) {
    return type_error("slice indices must be integers or None, not " + type_name(index));
  }
  int64_t len = static_cast<int64_t>(utf8_length(s));
  int64_t i = index.as_int();
  if (i < 0) i = std::max<int64_t>(0, i + len);
  i = std::min(i, len);
  if (is_ascii(s)) return static_cast<size_t>(i);
  size_t pos = 0;
  for (int64_t k = 0; k < i && pos < s.size(); ++k) {
    ++pos;
    while (pos < s.size() && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) ++pos;
  }
  return pos;
}

Value code_point_index(const std::string& s, size_t byte_pos) {
  return Value(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, byte_pos))));
}

// --- str ---------------------------------------------------------------------------------

Result<Value> s_affix(const Value& self, const CallArgs& args, bool prefix) {
  const char* fn = prefix ? "startswith" : "endswith";
  SGL_ASSIGN_OR_RETURN(
      auto a,
      bind_args(fn, args, {{"affix", {}, true}, {"start", Value::none()}, {"end", Value::none()}}));
  const std::string& s = self.as_string();
  SGL_ASSIGN_OR_RETURN(const size_t b, byte_offset(s, a[1], 0));
  SGL_ASSIGN_OR_RETURN(const size_t e, byte_offset(s, a[2], s.size()));
  std::string_view view = b <= e ? std::string_view(s).substr(b, e - b) : std::string_view();
  std::vector<Value> candidates;
  if (a[0].is_tuple()) {
    candidates = a[0].items();
  } else {
    candidates.push_back(a[0]);
  }
  for (const Value& c : candidates) {
    if (!c.is_string()) {
      return type_error(std::string(fn) + " first arg must be str or a tuple of str, not " +
                        type_name(c));
    }
    std::string_view x = c.as_string();
    if (b > e) continue;
    if (prefix ? view.starts_with(x) : view.ends_with(x)) return Value(true);
  }
  return Value(false);
}

Result<Value> s_startswith(Interpreter&, const Value& self, const CallArgs& args) {
  return s_affix(self, args, true);
}
Result<Value> s_endswith(Interpreter&, const Value& self, const CallArgs& args) {
  return s_affix(self, args, false);
}

// Appends a piece to a split result, charged first: a string of separators splits into far
// more (and larger) values than it has bytes.
Status add_piece(RenderBudget& budget, std::vector<Value>& out, std::string piece) {
  SGL_RETURN_IF_ERROR(budget.allocate_string_item(out.size(), piece.size()));
  out.emplace_back(std::move(piece));
  return Status::ok_status();
}

Result<std::vector<Value>> split_whitespace(RenderBudget& budget, const std::string& s,
                                            int64_t maxsplit, bool from_right) {
  std::u32string u = utf8_decode(s);
  std::vector<Value> out;
  auto piece = [&](size_t b, size_t e) {
    return utf8_encode(std::u32string_view(u).substr(b, e - b));
  };
  if (!from_right) {
    size_t i = 0;
    while (true) {
      while (i < u.size() && is_py_space(u[i])) ++i;
      if (i >= u.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        SGL_RETURN_IF_ERROR(add_piece(budget, out, piece(i, u.size())));
        break;
      }
      size_t j = i;
      while (j < u.size() && !is_py_space(u[j])) ++j;
      SGL_RETURN_IF_ERROR(add_piece(budget, out, piece(i, j)));
      i = j;
    }
    return out;
  }
  size_t e = u.size();
  while (true) {
    while (e > 0 && is_py_space(u[e - 1])) --e;
    if (e == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      SGL_RETURN_IF_ERROR(add_piece(budget, out, piece(0, e)));
      break;
    }
    size_t b = e;
    while (b > 0 && !is_py_space(u[b - 1])) --b;
    SGL_RETURN_IF_ERROR(add_piece(budget, out, piece(b, e)));
    e = b;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

Result<Value> s_split_impl(RenderBudget& budget, const Value& self, const CallArgs& args,
                           bool from_right) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args(from_right ? "rsplit" : "split", args,
                                         {{"sep", Value::none()}, {"maxsplit", Value(-1)}}));
  SGL_ASSIGN_OR_RETURN(int64_t maxsplit, int_arg("split", a[1]));
  const std::string& s = self.as_string();
  if (a[0].is_none()) {
    SGL_ASSIGN_OR_RETURN(std::vector<Value> words,
                         split_whitespace(budget, s, maxsplit, from_right));
    return Value::list(std::move(words));
  }
  SGL_ASSIGN_OR_RETURN(std::string sep, str_arg("split", a[0]));
  if (sep.empty()) return value_error("empty separator");
  std::vector<Value> out;
  if (!from_right) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t f = find_substring(s, sep, pos);
      if (f == std::string::npos) break;
      SGL_RETURN_IF_ERROR(add_piece(budget, out, s.substr(pos, f - pos)));
      pos = f + sep.size();
    }
    SGL_RETURN_IF_ERROR(add_piece(budget, out, s.substr(pos)));
    return Value::list(std::move(out));
  }
  // From the right: split the reversed text at the reversed separator, then reverse back.
  std::string rev(s.rbegin(), s.rend());
  std::string rev_sep(sep.rbegin(), sep.rend());
  auto piece = [&](size_t b, size_t e) {  // rev[b, e), reversed back
    std::string p = rev.substr(b, e - b);
    std::reverse(p.begin(), p.end());
    return p;
  };
  size_t pos = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    size_t f = find_substring(rev, rev_sep, pos);
    if (f == std::string::npos) break;
    SGL_RETURN_IF_ERROR(add_piece(budget, out, piece(pos, f)));
    pos = f + rev_sep.size();
  }
  SGL_RETURN_IF_ERROR(add_piece(budget, out, piece(pos, rev.size())));
  std::reverse(out.begin(), out.end());
  return Value::list(std::move(out));
}

Result<Value> s_split(Interpreter& interp, const Value& self, const CallArgs& args) {
  return s_split_impl(interp.budget(), self, args, false);
}
Result<Value> s_rsplit(Interpreter& interp, const Value& self, const CallArgs& args) {
  return s_split_impl(interp.budget(), self, args, true);
}

Result<Value> s_strip_impl(const Value& self, const CallArgs& args, bool left, bool right) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("strip", args, {{"chars", Value::none()}}));
  if (a[0].is_none()) return Value(py_strip(self.as_string(), nullptr, left, right));
  SGL_ASSIGN_OR_RETURN(std::string chars, str_arg("strip", a[0]));
  return Value(py_strip(self.as_string(), &chars, left, right));
}

Result<Value> s_strip(Interpreter&, const Value& self, const CallArgs& args) {
  return s_strip_impl(self, args, true, true);
}
Result<Value> s_lstrip(Interpreter&, const Value& self, const CallArgs& args) {
  return s_strip_impl(self, args, true, false);
}
Result<Value> s_rstrip(Interpreter&, const Value& self, const CallArgs& args) {
  return s_strip_impl(self, args, false, true);
}

}  // namespace

// Shared with the `replace` filter.
Result<std::string> py_replace(Interpreter& interp, const std::string& s, const std::string& old,
                               const std::string& repl, int64_t count) {
  BudgetedString out(interp.budget());
  if (old.empty()) {
    std::u32string u = utf8_decode(s);
    int64_t done = 0;
    for (size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || done < count) {
        SGL_RETURN_IF_ERROR(out.append(repl));
        ++done;
      }
      if (i < u.size()) {
        std::string one;
        append_utf8(one, u[i]);
        SGL_RETURN_IF_ERROR(out.append(one));
      }
    }
    return out.take();
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t f = find_substring(s, old, pos);
    if (f == std::string::npos) break;
    SGL_RETURN_IF_ERROR(out.append(std::string_view(s).substr(pos, f - pos)));
    SGL_RETURN_IF_ERROR(out.append(repl));
    pos = f + old.size();
    ++done;
  }
  SGL_RETURN_IF_ERROR(out.append(std::string_view(s).substr(pos)));
  return out.take();
}

namespace {

Result<Value> s_replace(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(
      auto a,
      bind_args("replace", args, {{"old", {}, true}, {"new", {}, true}, {"count", Value(-1)}}));
  SGL_ASSIGN_OR_RETURN(std::string old, str_arg("replace", a[0]));
  SGL_ASSIGN_OR_RETURN(std::string repl, str_arg("replace", a[1]));
  SGL_ASSIGN_OR_RETURN(int64_t count, int_arg("replace", a[2]));
  SGL_ASSIGN_OR_RETURN(std::string out, py_replace(interp, self.as_string(), old, repl, count));
  return Value(std::move(out));
}

Result<Value> s_upper(Interpreter&, const Value& self, const CallArgs&) {
  return Value(py_upper(self.as_string()));
}
Result<Value> s_lower(Interpreter&, const Value& self, const CallArgs&) {
  return Value(py_lower(self.as_string()));
}
Result<Value> s_title(Interpreter&, const Value& self, const CallArgs&) {
  return Value(py_title(self.as_string()));
}
Result<Value> s_capitalize(Interpreter&, const Value& self, const CallArgs&) {
  return Value(py_capitalize(self.as_string()));
}
Result<Value> s_swapcase(Interpreter&, const Value& self, const CallArgs&) {
  std::string out;
  for (char32_t cp : utf8_decode(self.as_string())) {
    char32_t up = to_upper_cp(cp);
    append_utf8(out, up != cp ? up : to_lower_cp(cp));
  }
  return Value(std::move(out));
}

Result<Value> s_find_impl(const Value& self, const CallArgs& args, const char* fn, bool reverse,
                          bool raise) {
  SGL_ASSIGN_OR_RETURN(
      auto a,
      bind_args(fn, args, {{"sub", {}, true}, {"start", Value::none()}, {"end", Value::none()}}));
  SGL_ASSIGN_OR_RETURN(std::string sub, str_arg(fn, a[0]));
  const std::string& s = self.as_string();
  SGL_ASSIGN_OR_RETURN(const size_t b, byte_offset(s, a[1], 0));
  SGL_ASSIGN_OR_RETURN(const size_t e, byte_offset(s, a[2], s.size()));
  size_t found = std::string::npos;
  if (b <= e && e - b >= sub.size()) {
    std::string_view view = std::string_view(s).substr(b, e - b);
    size_t f = reverse ? rfind_substring(view, sub) : find_substring(view, sub);
    if (f != std::string_view::npos) found = b + f;
  }
  if (found == std::string::npos) {
    if (raise) return value_error("substring not found");
    return Value(-1);
  }
  return code_point_index(s, found);
}

Result<Value> s_find(Interpreter&, const Value& self, const CallArgs& args) {
  return s_find_impl(self, args, "find", false, false);
}
Result<Value> s_rfind(Interpreter&, const Value& self, const CallArgs& args) {
  return s_find_impl(self, args, "rfind", true, false);
}
Result<Value> s_index(Interpreter&, const Value& self, const CallArgs& args) {
  return s_find_impl(self, args, "index", false, true);
}
Result<Value> s_rindex(Interpreter&, const Value& self, const CallArgs& args) {
  return s_find_impl(self, args, "rindex", true, true);
}

Result<Value> s_count(Interpreter&, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(
      auto a, bind_args("count", args,
                        {{"sub", {}, true}, {"start", Value::none()}, {"end", Value::none()}}));
  SGL_ASSIGN_OR_RETURN(std::string sub, str_arg("count", a[0]));
  const std::string& s = self.as_string();
  SGL_ASSIGN_OR_RETURN(const size_t b, byte_offset(s, a[1], 0));
  SGL_ASSIGN_OR_RETURN(const size_t e, byte_offset(s, a[2], s.size()));
  if (b > e) return Value(0);
  std::string_view view = std::string_view(s).substr(b, e - b);
  if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(view) + 1));
  int64_t n = 0;
  for (size_t f = find_substring(view, sub); f != std::string_view::npos;
       f = find_substring(view, sub, f + sub.size())) {
    ++n;
  }
  return Value(n);
}

Result<Value> s_format(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(std::string out, str_format(self.as_string(), args, interp.budget()));
  return Value(std::move(out));
}

Result<Value> s_join(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("join", args, {{"iterable", {}, true}}));
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, interp.iterate(a[0]));
  BudgetedString out(interp.budget());
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) {
      return type_error("sequence item " + std::to_string(i) + ": expected str instance, " +
                        type_name(items[i]) + " found");
    }
    if (i > 0) SGL_RETURN_IF_ERROR(out.append(self.as_string()));
    SGL_RETURN_IF_ERROR(out.append(items[i].as_string()));
  }
  SGL_ASSIGN_OR_RETURN(std::string text, out.take());
  return Value(std::move(text));
}

template <bool (*Pred)(char32_t)>
Result<Value> s_is(Interpreter&, const Value& self, const CallArgs&) {
  std::u32string u = utf8_decode(self.as_string());
  if (u.empty()) return Value(false);
  return Value(std::all_of(u.begin(), u.end(), Pred));
}

bool is_alnum_cp(char32_t cp) { return is_py_alpha(cp) || is_py_digit(cp); }

Result<Value> s_case_test(const Value& self, bool want_lower) {
  bool cased = false;
  for (char32_t cp : utf8_decode(self.as_string())) {
    if (want_lower ? is_py_upper(cp) : is_py_lower(cp)) return Value(false);
    if (is_py_upper(cp) || is_py_lower(cp)) cased = true;
  }
  return Value(cased);
}
Result<Value> s_islower(Interpreter&, const Value& self, const CallArgs&) {
  return s_case_test(self, true);
}
Result<Value> s_isupper(Interpreter&, const Value& self, const CallArgs&) {
  return s_case_test(self, false);
}

Result<Value> s_justify(Interpreter& interp, const Value& self, const CallArgs& args,
                        const char* fn, char how) {
  SGL_ASSIGN_OR_RETURN(auto a,
                       bind_args(fn, args, {{"width", {}, true}, {"fillchar", Value(" ")}}));
  SGL_ASSIGN_OR_RETURN(int64_t width, int_arg(fn, a[0]));
  SGL_ASSIGN_OR_RETURN(std::string fill, str_arg(fn, a[1]));
  if (utf8_length(fill) != 1) {
    return type_error("The fill character must be exactly one character long");
  }
  const std::string& s = self.as_string();
  int64_t len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return self;
  size_t total = static_cast<size_t>(width - len);
  size_t left = how == 'l'   ? 0
                : how == 'r' ? total
                             : total / 2 + (total & static_cast<size_t>(width) & 1);
  BudgetedString out(interp.budget());
  SGL_RETURN_IF_ERROR(out.append_repeated(fill, left));
  SGL_RETURN_IF_ERROR(out.append(s));
  SGL_RETURN_IF_ERROR(out.append_repeated(fill, total - left));
  SGL_ASSIGN_OR_RETURN(std::string text, out.take());
  return Value(std::move(text));
}
Result<Value> s_center(Interpreter& interp, const Value& self, const CallArgs& args) {
  return s_justify(interp, self, args, "center", 'c');
}
Result<Value> s_ljust(Interpreter& interp, const Value& self, const CallArgs& args) {
  return s_justify(interp, self, args, "ljust", 'l');
}
Result<Value> s_rjust(Interpreter& interp, const Value& self, const CallArgs& args) {
  return s_justify(interp, self, args, "rjust", 'r');
}

Result<Value> s_zfill(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("zfill", args, {{"width", {}, true}}));
  SGL_ASSIGN_OR_RETURN(int64_t width, int_arg("zfill", a[0]));
  std::string s = self.as_string();
  int64_t len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return Value(s);
  if (static_cast<uint64_t>(width - len) > interp.options().max_output_bytes) {
    return interp.budget().check_size(static_cast<size_t>(width - len));
  }
  SGL_RETURN_IF_ERROR(interp.budget().allocate(s.size() + static_cast<size_t>(width - len)));
  size_t sign = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  s.insert(sign, static_cast<size_t>(width - len), '0');
  return Value(std::move(s));
}

bool is_line_break(char32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D ||
         cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

}  // namespace

// Python's str.splitlines(); shared with the indent filter.
Result<std::vector<std::string>> py_splitlines(RenderBudget& budget, const std::string& s,
                                               bool keepends) {
  std::u32string u = utf8_decode(s);
  std::vector<std::string> out;
  size_t i = 0;
  while (i < u.size()) {
    size_t j = i;
    while (j < u.size() && !is_line_break(u[j])) ++j;
    size_t eol = j;
    if (j < u.size()) {
      eol = (u[j] == '\r' && j + 1 < u.size() && u[j + 1] == '\n') ? j + 2 : j + 1;
    }
    std::string line = utf8_encode(std::u32string_view(u).substr(i, (keepends ? eol : j) - i));
    SGL_RETURN_IF_ERROR(budget.allocate_string_item(out.size(), line.size()));
    out.push_back(std::move(line));
    i = eol;
  }
  return out;
}

namespace {

Result<Value> s_splitlines(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("splitlines", args, {{"keepends", Value(false)}}));
  SGL_ASSIGN_OR_RETURN(std::vector<std::string> lines,
                       py_splitlines(interp.budget(), self.as_string(), a[0].truthy()));
  std::vector<Value> out;
  for (std::string& line : lines) out.emplace_back(std::move(line));
  return Value::list(std::move(out));
}

Result<Value> s_partition_impl(const Value& self, const CallArgs& args, bool reverse) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("partition", args, {{"sep", {}, true}}));
  SGL_ASSIGN_OR_RETURN(std::string sep, str_arg("partition", a[0]));
  if (sep.empty()) return value_error("empty separator");
  const std::string& s = self.as_string();
  size_t f = reverse ? rfind_substring(s, sep) : find_substring(s, sep);
  if (f == std::string::npos) {
    if (reverse) return Value::tuple({Value(""), Value(""), Value(s)});
    return Value::tuple({Value(s), Value(""), Value("")});
  }
  return Value::tuple({Value(s.substr(0, f)), Value(sep), Value(s.substr(f + sep.size()))});
}
Result<Value> s_partition(Interpreter&, const Value& self, const CallArgs& args) {
  return s_partition_impl(self, args, false);
}
Result<Value> s_rpartition(Interpreter&, const Value& self, const CallArgs& args) {
  return s_partition_impl(self, args, true);
}

Result<Value> s_removeprefix(Interpreter&, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("removeprefix", args, {{"prefix", {}, true}}));
  SGL_ASSIGN_OR_RETURN(std::string p, str_arg("removeprefix", a[0]));
  std::string_view s = self.as_string();
  if (s.starts_with(p)) return Value(std::string(s.substr(p.size())));
  return self;
}
Result<Value> s_removesuffix(Interpreter&, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("removesuffix", args, {{"suffix", {}, true}}));
  SGL_ASSIGN_OR_RETURN(std::string p, str_arg("removesuffix", a[0]));
  std::string_view s = self.as_string();
  if (!p.empty() && s.ends_with(p)) return Value(std::string(s.substr(0, s.size() - p.size())));
  return self;
}

}  // namespace

const MethodTable& str_method_table() {
  static const MethodTable table = {
      {"startswith", s_startswith},
      {"endswith", s_endswith},
      {"split", s_split},
      {"rsplit", s_rsplit},
      {"strip", s_strip},
      {"lstrip", s_lstrip},
      {"rstrip", s_rstrip},
      {"replace", s_replace},
      {"upper", s_upper},
      {"lower", s_lower},
      {"casefold", s_lower},
      {"title", s_title},
      {"capitalize", s_capitalize},
      {"swapcase", s_swapcase},
      {"find", s_find},
      {"rfind", s_rfind},
      {"index", s_index},
      {"rindex", s_rindex},
      {"count", s_count},
      {"format", s_format},
      {"join", s_join},
      {"isdigit", s_is<is_py_digit>},
      {"isdecimal", s_is<is_py_digit>},
      {"isnumeric", s_is<is_py_digit>},
      {"isalpha", s_is<is_py_alpha>},
      {"isalnum", s_is<is_alnum_cp>},
      {"isspace", s_is<is_py_space>},
      {"islower", s_islower},
      {"isupper", s_isupper},
      {"center", s_center},
      {"ljust", s_ljust},
      {"rjust", s_rjust},
      {"zfill", s_zfill},
      {"splitlines", s_splitlines},
      {"partition", s_partition},
      {"rpartition", s_rpartition},
      {"removeprefix", s_removeprefix},
      {"removesuffix", s_removesuffix},
  };
  return table;
}

}  // namespace sgl::tokenizer::jinja
