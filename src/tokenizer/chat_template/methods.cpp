// Python methods of list, tuple and dict values, Markup wrapping, and method lookup.
#include "tokenizer/chat_template/methods.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/errors.h"
#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/method_table.h"
#include "tokenizer/chat_template/value_format.h"
#include "tokenizer/chat_template/value_ops.h"

namespace sgl::tokenizer::jinja {
namespace {

// --- list / tuple ---------------------------------------------------------------------------

Result<Value> l_index(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(
      auto a, bind_args("index", args,
                        {{"value", {}, true}, {"start", Value(0)}, {"stop", Value::none()}}));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(self));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(a[0]));
  const auto& items = self.items();
  int64_t n = static_cast<int64_t>(items.size());
  SGL_ASSIGN_OR_RETURN(int64_t b, int_arg("index", a[1]));
  int64_t e = n;
  if (!a[2].is_none()) {
    SGL_ASSIGN_OR_RETURN(e, int_arg("index", a[2]));
  }
  if (b < 0) b = std::max<int64_t>(0, b + n);
  if (e < 0) e = std::max<int64_t>(0, e + n);
  for (int64_t i = b; i < std::min(e, n); ++i) {
    if (py_equal(items[static_cast<size_t>(i)], a[0])) return Value(i);
  }
  return value_error(message_repr(a[0]) + " is not in " + type_name(self));
}

Result<Value> l_count(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("count", args, {{"value", {}, true}}));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(self));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(a[0]));
  int64_t n = 0;
  for (const Value& v : self.items()) n += py_equal(v, a[0]) ? 1 : 0;
  return Value(n);
}

Result<Value> l_copy(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("copy", args, {}).status());
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(self.items().size()));
  return Value::list(self.items());
}

Result<Value> l_append(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("append", args, {{"object", {}, true}}));
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(self.items().size() + 1));
  self.items().push_back(a[0]);
  return Value::none();
}

Result<Value> l_extend(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("extend", args, {{"iterable", {}, true}}));
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, interp.iterate(a[0]));
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(self.items().size() + items.size()));
  self.items().insert(self.items().end(), items.begin(), items.end());
  return Value::none();
}

Result<Value> l_insert(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a,
                       bind_args("insert", args, {{"index", {}, true}, {"object", {}, true}}));
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(self.items().size() + 1));
  SGL_ASSIGN_OR_RETURN(int64_t i, int_arg("insert", a[0]));
  auto& items = self.items();
  int64_t n = static_cast<int64_t>(items.size());
  if (i < 0) i = std::max<int64_t>(0, i + n);
  i = std::min(i, n);
  items.insert(items.begin() + i, a[1]);
  return Value::none();
}

Result<Value> l_pop(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("pop", args, {{"index", Value(-1)}}));
  SGL_RETURN_IF_ERROR(interp.budget().charge(self.items().size() * sizeof(Value)));
  SGL_ASSIGN_OR_RETURN(int64_t i, int_arg("pop", a[0]));
  auto& items = self.items();
  if (items.empty()) return invalid_argument("IndexError: pop from empty list");
  int64_t n = static_cast<int64_t>(items.size());
  if (i < 0) i += n;
  if (i < 0 || i >= n) return invalid_argument("IndexError: pop index out of range");
  Value v = items[static_cast<size_t>(i)];
  items.erase(items.begin() + i);
  return v;
}

Result<Value> l_remove(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("remove", args, {{"value", {}, true}}));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(self));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(a[0]));
  auto& items = self.items();
  for (size_t i = 0; i < items.size(); ++i) {
    if (py_equal(items[i], a[0])) {
      items.erase(items.begin() + static_cast<std::ptrdiff_t>(i));
      return Value::none();
    }
  }
  return value_error("list.remove(x): x not in list");
}

Result<Value> l_reverse(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("reverse", args, {}).status());
  SGL_RETURN_IF_ERROR(interp.budget().charge(self.items().size() * sizeof(Value)));
  std::reverse(self.items().begin(), self.items().end());
  return Value::none();
}

Result<Value> l_sort(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("sort", args, {{"reverse", Value(false)}}));
  SGL_RETURN_IF_ERROR(interp.budget().charge_sort(self));
  Status error;
  auto& items = self.items();
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    auto c = a[0].truthy() ? py_compare(y, x) : py_compare(x, y);
    if (!c.ok()) {
      if (error.ok()) error = c.status();
      return false;
    }
    return *c < 0;
  });
  SGL_RETURN_IF_ERROR(error);
  return Value::none();
}

Result<Value> l_clear(Interpreter&, const Value& self, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("clear", args, {}).status());
  self.items().clear();
  return Value::none();
}

// --- dict -----------------------------------------------------------------------------------

Result<Value> d_get(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a,
                       bind_args("get", args, {{"key", {}, true}, {"default", Value::none()}}));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(a[0]));  // hashed
  if (!hash_key(a[0])) return type_error("unhashable type: '" + type_name(a[0]) + "'");
  if (const Value* v = self.dict_data().find(a[0])) return *v;
  return a[1];
}

Result<Value> d_items(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("items", args, {}).status());
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(3 * self.dict_data().size()));
  std::vector<Value> out;
  out.reserve(self.dict_data().size());
  for (const auto& [k, v] : self.dict_data().entries()) out.push_back(Value::tuple({k, v}));
  return Value::iterator("dict_items", std::move(out));
}

Result<Value> d_keys(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("keys", args, {}).status());
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(self.dict_data().size()));
  std::vector<Value> out;
  for (const auto& [k, v] : self.dict_data().entries()) out.push_back(k);
  return Value::iterator("dict_keys", std::move(out));
}

Result<Value> d_values(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("values", args, {}).status());
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(self.dict_data().size()));
  std::vector<Value> out;
  for (const auto& [k, v] : self.dict_data().entries()) out.push_back(v);
  return Value::iterator("dict_values", std::move(out));
}

Result<Value> d_copy(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("copy", args, {}).status());
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(2 * self.dict_data().size()));
  return Value::dict(self.dict_data());
}

Result<Value> d_update(Interpreter& interp, const Value& self, const CallArgs& args) {
  if (args.positional.size() > 1) return type_error("update expected at most 1 argument");
  if (!args.positional.empty()) {
    const Value& other = args.positional[0];
    if (!other.is_dict()) return type_error("dict.update() argument must be a dict");
    SGL_RETURN_IF_ERROR(interp.budget().charge_walk(other));
    SGL_RETURN_IF_ERROR(
        interp.budget().allocate_values(2 * (self.dict_data().size() + other.dict_data().size())));
    for (const auto& [k, v] : other.dict_data().entries()) self.dict_data().set(k, v);
  }
  for (const auto& [k, v] : args.keyword) self.dict_data().set(k, v);
  return Value::none();
}

// NOTE: erasing from a DictData rebuilds its index: O(size) per call.
Result<Value> d_pop(Interpreter& interp, const Value& self, const CallArgs& args) {
  if (args.positional.empty() || args.positional.size() > 2) {
    return type_error("pop expected 1 or 2 arguments");
  }
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(args.positional[0]));
  SGL_RETURN_IF_ERROR(interp.budget().charge(self.dict_data().size() * sizeof(Value)));
  const Value& key = args.positional[0];
  if (const Value* v = self.dict_data().find(key)) {
    Value out = *v;
    self.dict_data().erase(key);
    return out;
  }
  if (args.positional.size() == 2) return args.positional[1];
  return invalid_argument("KeyError: " + message_repr(key));
}

Result<Value> d_popitem(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("popitem", args, {}).status());
  SGL_RETURN_IF_ERROR(interp.budget().charge(self.dict_data().size() * sizeof(Value)));
  if (self.dict_data().empty())
    return invalid_argument("KeyError: 'popitem(): dictionary is empty'");
  auto [k, v] = self.dict_data().entries().back();
  self.dict_data().erase(k);
  return Value::tuple({k, v});
}

Result<Value> d_setdefault(Interpreter& interp, const Value& self, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(
      auto a, bind_args("setdefault", args, {{"key", {}, true}, {"default", Value::none()}}));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(a[0]));
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(2 * (self.dict_data().size() + 1)));
  if (const Value* v = self.dict_data().find(a[0])) return *v;
  if (!self.dict_data().set(a[0], a[1])) {
    return type_error("unhashable type: '" + type_name(a[0]) + "'");
  }
  return a[1];
}

Result<Value> d_clear(Interpreter&, const Value& self, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(bind_args("clear", args, {}).status());
  self.dict_data().clear();
  return Value::none();
}

const MethodTable& list_methods() {
  static const MethodTable table = {{"index", l_index}, {"count", l_count}, {"copy", l_copy}};
  return table;
}

const MethodTable& list_mutators() {
  static const MethodTable table = {
      {"append", l_append}, {"extend", l_extend},   {"insert", l_insert}, {"pop", l_pop},
      {"remove", l_remove}, {"reverse", l_reverse}, {"sort", l_sort},     {"clear", l_clear},
  };
  return table;
}

const MethodTable& tuple_methods() {
  static const MethodTable table = {{"index", l_index}, {"count", l_count}};
  return table;
}

const MethodTable& dict_methods() {
  static const MethodTable table = {
      {"get", d_get}, {"items", d_items}, {"keys", d_keys}, {"values", d_values}, {"copy", d_copy}};
  return table;
}

const MethodTable& dict_mutators() {
  static const MethodTable table = {
      {"update", d_update},         {"pop", d_pop},     {"popitem", d_popitem},
      {"setdefault", d_setdefault}, {"clear", d_clear},
  };
  return table;
}

// Calls a method. Every str method reads its string (and string arguments) at least once;
// list and dict methods charge their own work.
Result<Value> invoke(MethodFn fn, Interpreter& interp, const Value& self, const CallArgs& args) {
  if (self.is_string()) {
    size_t bytes = self.as_string().size();
    for (const Value& v : args.positional) bytes += v.is_string() ? v.as_string().size() : 0;
    for (const auto& [k, v] : args.keyword) bytes += v.is_string() ? v.as_string().size() : 0;
    SGL_RETURN_IF_ERROR(interp.budget().charge(bytes));
  }
  SGL_ASSIGN_OR_RETURN(Value result, fn(interp, self, args));
  // Case changes can grow a string (up to 3x): checked here; methods that multiply it
  // (center, join, format, replace, ...) check before building.
  if (result.is_string()) SGL_RETURN_IF_ERROR(interp.budget().allocate(result.as_string().size()));
  return result;
}

Value bind(const Value& self, const std::string& name, MethodFn fn) {
  return Value::callable(name, [self, fn](Interpreter& interp, const CallArgs& args) {
    return invoke(fn, interp, self, args);
  });
}

// How markupsafe.Markup overrides a str method.
enum class MarkupWrap { kNone, kEscapeArgs, kSplit, kJoin, kFormat };

MarkupWrap markup_wrap(const std::string& name) {
  static const std::unordered_map<std::string, MarkupWrap> table = {
      {"capitalize", MarkupWrap::kEscapeArgs},
      {"title", MarkupWrap::kEscapeArgs},
      {"lower", MarkupWrap::kEscapeArgs},
      {"upper", MarkupWrap::kEscapeArgs},
      {"replace", MarkupWrap::kEscapeArgs},
      {"ljust", MarkupWrap::kEscapeArgs},
      {"rjust", MarkupWrap::kEscapeArgs},
      {"lstrip", MarkupWrap::kEscapeArgs},
      {"rstrip", MarkupWrap::kEscapeArgs},
      {"center", MarkupWrap::kEscapeArgs},
      {"strip", MarkupWrap::kEscapeArgs},
      {"swapcase", MarkupWrap::kEscapeArgs},
      {"zfill", MarkupWrap::kEscapeArgs},
      {"removeprefix", MarkupWrap::kEscapeArgs},
      {"removesuffix", MarkupWrap::kEscapeArgs},
      {"partition", MarkupWrap::kEscapeArgs},
      {"rpartition", MarkupWrap::kEscapeArgs},
      {"split", MarkupWrap::kSplit},
      {"rsplit", MarkupWrap::kSplit},
      {"splitlines", MarkupWrap::kSplit},
      {"join", MarkupWrap::kJoin},
      {"format", MarkupWrap::kFormat},
  };
  auto it = table.find(name);
  return it == table.end() ? MarkupWrap::kNone : it->second;
}

// markupsafe.escape(v): Markup stays, anything else becomes escaped Markup text.
Result<Value> escape_to_markup(const Value& v, RenderBudget& budget) {
  if (v.is_markup()) return v;
  std::string text = py_str(v, budget.options().max_output_bytes);
  SGL_RETURN_IF_ERROR(budget.charge(text.size()));
  std::string escaped = html_escape(text);
  SGL_RETURN_IF_ERROR(budget.allocate(escaped.size()));
  return Value::markup(std::move(escaped));
}

Value as_markup(const Value& v) {
  if (v.is_string()) return Value::markup(v.as_string());
  if (v.is_sequence()) {
    std::vector<Value> items;
    for (const Value& item : v.items()) items.push_back(as_markup(item));
    return v.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  }
  return v;
}

// A method of a Markup string: escapes plain-string arguments and keeps results Markup.
Value bind_markup(const Value& self, const std::string& name, MethodFn fn) {
  MarkupWrap wrap = markup_wrap(name);
  if (wrap == MarkupWrap::kNone) return bind(self, name, fn);
  return Value::callable(
      name, [self, fn, wrap](Interpreter& interp, const CallArgs& args) -> Result<Value> {
        CallArgs a = args;
        RenderBudget& budget = interp.budget();
        if (wrap == MarkupWrap::kEscapeArgs) {
          for (Value& v : a.positional) {
            if (v.is_string()) {
              SGL_ASSIGN_OR_RETURN(v, escape_to_markup(v, budget));
            }
          }
          for (auto& [k, v] : a.keyword) {
            if (v.is_string()) {
              SGL_ASSIGN_OR_RETURN(v, escape_to_markup(v, budget));
            }
          }
        } else if (wrap == MarkupWrap::kJoin && a.positional.size() == 1) {
          SGL_ASSIGN_OR_RETURN(std::vector<Value> items, interp.iterate(a.positional[0]));
          for (Value& item : items) {
            SGL_ASSIGN_OR_RETURN(item, escape_to_markup(item, budget));
          }
          a.positional[0] = Value::list(std::move(items));
        } else if (wrap == MarkupWrap::kFormat) {
          for (Value& v : a.positional) {
            SGL_ASSIGN_OR_RETURN(v, escape_format_args(v, budget));
          }
          for (auto& [k, v] : a.keyword) {
            SGL_ASSIGN_OR_RETURN(v, escape_format_args(v, budget));
          }
        }
        SGL_ASSIGN_OR_RETURN(Value result, invoke(fn, interp, self, a));
        return as_markup(result);
      });
}

}  // namespace

std::optional<Value> find_method(const Value& obj, const std::string& name,
                                 bool immutable_sandbox) {
  const MethodTable* safe = nullptr;
  const MethodTable* mutators = nullptr;
  switch (obj.kind()) {
    case Kind::kString:
      safe = &str_method_table();
      break;
    case Kind::kList:
      safe = &list_methods();
      mutators = &list_mutators();
      break;
    case Kind::kTuple:
      safe = &tuple_methods();
      break;
    case Kind::kDict:
      safe = &dict_methods();
      mutators = &dict_mutators();
      break;
    default:
      return std::nullopt;
  }
  if (auto it = safe->find(name); it != safe->end()) {
    if (obj.is_markup()) return bind_markup(obj, name, it->second);
    return bind(obj, name, it->second);
  }
  if (mutators != nullptr) {
    if (auto it = mutators->find(name); it != mutators->end()) {
      if (immutable_sandbox) return unsafe_attribute(obj, name);
      return bind(obj, name, it->second);
    }
  }
  return std::nullopt;
}

}  // namespace sgl::tokenizer::jinja
