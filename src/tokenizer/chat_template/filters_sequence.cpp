// Sequence filters: length, first/last, join, map, select/reject(attr), unique, sorting, sums.
#include <algorithm>
#include <string>
#include <vector>

#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/errors.h"
#include "tokenizer/chat_template/filter_impls.h"
#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/methods.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"
#include "tokenizer/chat_template/value_ops.h"

namespace sgl::tokenizer::jinja {
namespace {

Value generator(std::vector<Value> items) { return Value::iterator("generator", std::move(items)); }

// Jinja's `if value: for item in value` (falsy inputs such as none yield nothing).
Result<std::vector<Value>> iterate_if_truthy(Interpreter& interp, const Value& v) {
  if (!v.truthy()) return std::vector<Value>{};
  return interp.iterate(v);
}

Value ignore_case(const Value& v) {
  if (v.is_string()) return Value(py_lower(v.as_string()));
  return v;
}

// Stable sort by key with Python ordering; `reverse` keeps equal keys in input order.
Status sort_by_key(std::vector<std::pair<Value, Value>>& keyed, bool reverse) {
  Status error;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    auto c = reverse ? py_compare(b.first, a.first) : py_compare(a.first, b.first);
    if (!c.ok()) {
      if (error.ok()) error = c.status();
      return false;
    }
    return *c < 0;
  });
  return error;
}

Result<Value> select_or_reject(Interpreter& interp, const Value& input, const CallArgs& args,
                               bool select, bool lookup_attr) {
  size_t off = 0;
  AttrGetter transform;
  if (lookup_attr) {
    if (args.positional.empty())
      return filter_argument_error("Missing parameter for attribute name");
    transform = make_attrgetter(interp, args.positional[0], nullptr);
    off = 1;
  }
  std::string test_name;
  bool has_test = args.positional.size() > off;
  if (has_test) {
    if (!args.positional[off].is_string()) return type_error("test name must be a string");
    test_name = args.positional[off].as_string();
  }
  CallArgs test_args;
  if (has_test) {
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(off + 1),
                                args.positional.end());
  }
  test_args.keyword = args.keyword;
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, iterate_if_truthy(interp, input));
  std::vector<Value> out;
  for (Value& item : items) {
    Value v = item;
    if (transform) {
      SGL_ASSIGN_OR_RETURN(v, transform(item));
    }
    bool result = false;
    if (has_test) {
      SGL_ASSIGN_OR_RETURN(result, interp.apply_test(test_name, v, test_args));
    } else {
      result = v.truthy();
    }
    if (result == select) out.push_back(std::move(item));
  }
  return generator(std::move(out));
}

Result<Value> min_or_max(Interpreter& interp, const Value& input, const CallArgs& args, bool max) {
  SGL_ASSIGN_OR_RETURN(auto a,
                       bind_args(max ? "max" : "min", args,
                                 {{"case_sensitive", Value(false)}, {"attribute", Value::none()}}));
  // Before iterating, which consumes a generator.
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(input));  // n comparisons
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, interp.iterate(input));
  if (items.empty()) {
    return undefined_hint(max ? "No largest item, sequence was empty."
                              : "No smallest item, sequence was empty.");
  }
  AttrGetter getter;
  if (!a[1].is_none()) getter = make_attrgetter(interp, a[1], nullptr);
  auto key_of = [&](const Value& item) -> Result<Value> {
    Value k = item;
    if (getter) {
      SGL_ASSIGN_OR_RETURN(k, getter(item));
    }
    return a[0].truthy() ? k : ignore_case(k);
  };
  size_t best = 0;
  SGL_ASSIGN_OR_RETURN(Value best_key, key_of(items[0]));
  for (size_t i = 1; i < items.size(); ++i) {
    SGL_ASSIGN_OR_RETURN(Value k, key_of(items[i]));
    SGL_ASSIGN_OR_RETURN(int c, py_compare(k, best_key));
    if (max ? c > 0 : c < 0) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

}  // namespace

AttrGetter make_attrgetter(Interpreter& interp, const Value& attribute,
                           const Value* default_value) {
  std::vector<Value> parts;
  if (attribute.is_string()) {
    const std::string& s = attribute.as_string();
    size_t pos = 0;
    while (true) {
      size_t dot = s.find('.', pos);
      std::string part = s.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
      if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos &&
          part.size() < 18) {
        parts.emplace_back(static_cast<int64_t>(std::stoll(part)));
      } else {
        parts.emplace_back(std::move(part));
      }
      if (dot == std::string::npos) break;
      pos = dot + 1;
    }
  } else {
    parts.push_back(attribute);
  }
  std::optional<Value> fallback;
  if (default_value != nullptr) fallback = *default_value;
  return [&interp, parts, fallback](const Value& item) -> Result<Value> {
    Value v = item;
    for (const Value& part : parts) {
      SGL_ASSIGN_OR_RETURN(v, interp.get_item(v, part));
      if (fallback && v.is_undefined()) v = *fallback;
    }
    return v;
  };
}

Result<Value> f_length(Interpreter&, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("length", args, {}).status());
  SGL_ASSIGN_OR_RETURN(int64_t n, py_len(input));
  return Value(n);
}

Result<Value> f_first(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("first", args, {}).status());
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, interp.iterate(input));
  if (items.empty()) return undefined_hint("No first item, sequence was empty.");
  return items.front();
}

Result<Value> f_last(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("last", args, {}).status());
  if (input.is_iterator() && input.list_data().iter_type == "generator") {
    return type_error("'generator' object is not reversible");
  }
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, interp.iterate(input));
  if (items.empty()) return undefined_hint("No last item, sequence was empty.");
  return items.back();
}

Result<Value> f_join(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a,
                       bind_args("join", args, {{"d", Value("")}, {"attribute", Value::none()}}));
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, interp.iterate(input));
  AttrGetter getter;
  if (!a[1].is_none()) getter = make_attrgetter(interp, a[1], nullptr);
  SGL_ASSIGN_OR_RETURN(std::string sep, interp.str(a[0]));
  const size_t limit = interp.options().max_output_bytes;
  BudgetedString out(interp.budget());
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) SGL_RETURN_IF_ERROR(out.append(sep));
    Value v = items[i];
    if (getter) {
      SGL_ASSIGN_OR_RETURN(v, getter(items[i]));
    }
    if (v.is_string()) {
      SGL_RETURN_IF_ERROR(out.append(v.as_string()));
    } else {
      SGL_RETURN_IF_ERROR(out.append(py_str(v, limit)));
    }
  }
  SGL_ASSIGN_OR_RETURN(std::string text, out.take());
  return Value(std::move(text));
}

Result<Value> f_map(Interpreter& interp, const Value& input, const CallArgs& args) {
  std::function<Result<Value>(const Value&)> func;
  bool by_attribute = false;
  for (const auto& [k, v] : args.keyword) by_attribute |= (k == "attribute");
  if (args.positional.empty() && by_attribute) {
    Value attribute;
    std::optional<Value> dflt;
    for (const auto& [k, v] : args.keyword) {
      if (k == "attribute") {
        attribute = v;
      } else if (k == "default") {
        if (!v.is_none()) dflt = v;
      } else {
        return filter_argument_error("Unexpected keyword argument '" + k + "'");
      }
    }
    func = make_attrgetter(interp, attribute, dflt ? &*dflt : nullptr);
  } else {
    if (args.positional.empty()) return filter_argument_error("map requires a filter argument");
    if (!args.positional[0].is_string()) return type_error("filter name must be a string");
    std::string name = args.positional[0].as_string();
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    func = [&interp, name, rest](const Value& item) {
      return interp.apply_filter(name, item, rest);
    };
  }
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, iterate_if_truthy(interp, input));
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(items.size()));
  std::vector<Value> out;
  out.reserve(items.size());
  for (const Value& item : items) {
    SGL_ASSIGN_OR_RETURN(Value v, func(item));
    out.push_back(std::move(v));
  }
  return generator(std::move(out));
}

Result<Value> f_select(Interpreter& interp, const Value& input, const CallArgs& args) {
  return select_or_reject(interp, input, args, true, false);
}

Result<Value> f_reject(Interpreter& interp, const Value& input, const CallArgs& args) {
  return select_or_reject(interp, input, args, false, false);
}

Result<Value> f_selectattr(Interpreter& interp, const Value& input, const CallArgs& args) {
  return select_or_reject(interp, input, args, true, true);
}

Result<Value> f_rejectattr(Interpreter& interp, const Value& input, const CallArgs& args) {
  return select_or_reject(interp, input, args, false, true);
}

Result<Value> f_unique(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(
      auto a,
      bind_args("unique", args, {{"case_sensitive", Value(false)}, {"attribute", Value::none()}}));
  AttrGetter getter;
  if (!a[1].is_none()) getter = make_attrgetter(interp, a[1], nullptr);
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(input));  // hashing every key
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, interp.iterate(input));
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(2 * items.size()));
  DictData seen;
  std::vector<Value> out;
  for (const Value& item : items) {
    Value key = item;
    if (getter) {
      SGL_ASSIGN_OR_RETURN(key, getter(item));
    }
    if (!a[0].truthy()) key = ignore_case(key);
    if (!hash_key(key)) return type_error("unhashable type: '" + type_name(key) + "'");
    if (seen.find(key) != nullptr) continue;
    seen.set(key, Value(true));
    out.push_back(item);
  }
  return generator(std::move(out));
}

Result<Value> f_list(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("list", args, {}).status());
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, interp.iterate(input));
  return Value::list(std::move(items));
}

Result<Value> f_items(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("items", args, {}).status());
  if (input.is_undefined()) return generator({});
  if (!input.is_dict()) return type_error("Can only get item pairs from a mapping.");
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(3 * input.dict_data().size()));
  std::vector<Value> out;
  for (const auto& [k, v] : input.dict_data().entries()) out.push_back(Value::tuple({k, v}));
  return generator(std::move(out));
}

Result<Value> f_dictsort(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("dictsort", args,
                                         {{"case_sensitive", Value(false)},
                                          {"by", Value("key")},
                                          {"reverse", Value(false)}}));
  if (!input.is_dict()) {
    if (input.is_undefined()) return undefined_error(input);
    return invalid_argument("AttributeError: '" + type_name(input) +
                            "' object has no attribute 'items'");
  }
  SGL_ASSIGN_OR_RETURN(std::string by, interp.str(a[1]));
  if (by != "key" && by != "value") {
    return filter_argument_error("You can only sort by either \"key\" or \"value\"");
  }
  SGL_RETURN_IF_ERROR(interp.budget().charge_sort(input));
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(5 * input.dict_data().size()));
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [k, v] : input.dict_data().entries()) {
    Value key = by == "key" ? k : v;
    keyed.emplace_back(a[0].truthy() ? key : ignore_case(key), Value::tuple({k, v}));
  }
  SGL_RETURN_IF_ERROR(sort_by_key(keyed, a[2].truthy()));
  std::vector<Value> out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Result<Value> f_sort(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("sort", args,
                                         {{"reverse", Value(false)},
                                          {"case_sensitive", Value(false)},
                                          {"attribute", Value::none()}}));
  SGL_RETURN_IF_ERROR(interp.budget().charge_sort(input));
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, interp.iterate(input));
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(3 * items.size()));
  AttrGetter getter;
  if (!a[2].is_none()) getter = make_attrgetter(interp, a[2], nullptr);
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) {
    Value key = item;
    if (getter) {
      SGL_ASSIGN_OR_RETURN(key, getter(item));
    }
    keyed.emplace_back(a[1].truthy() ? key : ignore_case(key), std::move(item));
  }
  SGL_RETURN_IF_ERROR(sort_by_key(keyed, a[0].truthy()));
  std::vector<Value> out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Result<Value> f_reverse(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("reverse", args, {}).status());
  if (input.is_string()) {
    SGL_RETURN_IF_ERROR(interp.budget().allocate(input.as_string().size()));
    std::u32string u = utf8_decode(input.as_string());
    std::reverse(u.begin(), u.end());
    return Value(utf8_encode(u));
  }
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, interp.iterate(input));
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Result<Value> f_min(Interpreter& interp, const Value& input, const CallArgs& args) {
  return min_or_max(interp, input, args, false);
}

Result<Value> f_max(Interpreter& interp, const Value& input, const CallArgs& args) {
  return min_or_max(interp, input, args, true);
}

Result<Value> f_sum(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a,
                       bind_args("sum", args, {{"attribute", Value::none()}, {"start", Value(0)}}));
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, interp.iterate(input));
  AttrGetter getter;
  if (!a[0].is_none()) getter = make_attrgetter(interp, a[0], nullptr);
  Value total = a[1];
  for (const Value& item : items) {
    Value v = item;
    if (getter) {
      SGL_ASSIGN_OR_RETURN(v, getter(item));
    }
    SGL_ASSIGN_OR_RETURN(total, binary_op(BinaryOp::kAdd, total, v, interp.budget()));
  }
  return total;
}

Result<Value> f_batch(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(
      auto a, bind_args("batch", args, {{"linecount", {}, true}, {"fill_with", Value::none()}}));
  SGL_ASSIGN_OR_RETURN(int64_t n, int_arg("batch", a[0]));
  if (n <= 0) return value_error("batch size must be positive");
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, interp.iterate(input));
  // Filling pads the last batch up to n items: one batch of [1]|batch(10**9, 0) is 10**9 long.
  size_t fill = a[1].is_none() || items.empty() ? 0 : static_cast<size_t>(n) - 1;
  if (fill > interp.options().max_output_bytes) return interp.budget().check_size(fill);
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(2 * items.size() + fill));
  std::vector<Value> out;
  std::vector<Value> tmp;
  for (Value& item : items) {
    if (static_cast<int64_t>(tmp.size()) == n) {
      out.push_back(Value::list(std::move(tmp)));
      tmp.clear();
    }
    tmp.push_back(std::move(item));
  }
  if (!tmp.empty()) {
    if (!a[1].is_none()) {
      while (static_cast<int64_t>(tmp.size()) < n) tmp.push_back(a[1]);
    }
    out.push_back(Value::list(std::move(tmp)));
  }
  return generator(std::move(out));
}

Result<Value> f_slice(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(
      auto a, bind_args("slice", args, {{"slices", {}, true}, {"fill_with", Value::none()}}));
  SGL_ASSIGN_OR_RETURN(int64_t slices, int_arg("slice", a[0]));
  if (slices <= 0) return invalid_argument("ZeroDivisionError: integer division or modulo by zero");
  if (slices > 1'000'000) return value_error("too many slices");
  SGL_ASSIGN_OR_RETURN(std::vector<Value> seq, interp.iterate(input));
  // Every slice is a list of its own (and may get a fill value), even when seq is empty.
  SGL_RETURN_IF_ERROR(
      interp.budget().allocate_values(seq.size() + 4 * static_cast<size_t>(slices)));
  int64_t length = static_cast<int64_t>(seq.size());
  int64_t per = length / slices;
  int64_t extra = length % slices;
  int64_t offset = 0;
  std::vector<Value> out;
  for (int64_t k = 0; k < slices; ++k) {
    int64_t start = offset + k * per;
    if (k < extra) ++offset;
    int64_t end = offset + (k + 1) * per;
    std::vector<Value> tmp(seq.begin() + start, seq.begin() + end);
    if (!a[1].is_none() && k >= extra) tmp.push_back(a[1]);
    out.push_back(Value::list(std::move(tmp)));
  }
  return generator(std::move(out));
}

Result<Value> f_attr(Interpreter& interp, const Value& input, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("attr", args, {{"name", {}, true}}));
  if (!a[0].is_string()) return undefined_element(input, a[0]);
  // NOTE: Python getattr only: dict keys are not attributes.
  if (input.is_dict()) {
    if (auto m = find_method(input, a[0].as_string(), interp.options().immutable_sandbox))
      return *m;
    return undefined_attribute(input, a[0].as_string());
  }
  return interp.get_attr(input, a[0].as_string());
}

}  // namespace sgl::tokenizer::jinja
