// Global functions: range, dict, namespace, cycler, joiner, raise_exception, strftime_now.
#include "tokenizer/chat_template/globals.h"

#include <chrono>
#include <ctime>
#include <memory>
#include <unordered_map>

#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/errors.h"
#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/py_format.h"
#include "tokenizer/chat_template/value_format.h"
#include "tokenizer/chat_template/value_ops.h"

namespace sgl::tokenizer::jinja {
namespace {

Result<Value> g_range(Interpreter& interp, const CallArgs& args) {
  if (!args.keyword.empty()) return type_error("range() takes no keyword arguments");
  size_t n = args.positional.size();
  if (n == 0 || n > 3)
    return type_error("range expected 1 to 3 arguments, got " + std::to_string(n));
  int64_t v[3];
  for (size_t i = 0; i < n; ++i) {
    SGL_ASSIGN_OR_RETURN(v[i], int_arg("range", args.positional[i]));
  }
  int64_t start = n == 1 ? 0 : v[0];
  int64_t stop = n == 1 ? v[0] : v[1];
  int64_t step = n == 3 ? v[2] : 1;
  if (step == 0) return value_error("range() arg 3 must not be zero");
  // Length as Python computes it, then bounded like any other loop.
  __int128 span =
      step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  __int128 abs_step = step > 0 ? step : -static_cast<__int128>(step);
  int64_t count = span <= 0 ? 0 : static_cast<int64_t>((span + abs_step - 1) / abs_step);
  if (count > interp.options().max_loop_iterations) {
    return limit_error("chat template exceeded the loop iteration limit of " +
                       std::to_string(interp.options().max_loop_iterations) + " (a range() of " +
                       std::to_string(count) + " items)");
  }
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(static_cast<size_t>(count)));
  std::vector<Value> out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out.emplace_back(start + i * step);
  return Value::list(std::move(out));
}

Status merge_into(Interpreter& interp, DictData& d, const CallArgs& args, const char* fn) {
  if (args.positional.size() > 1) {
    return type_error(std::string(fn) + " expected at most 1 argument, got " +
                      std::to_string(args.positional.size()));
  }
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    // Every key is hashed.
    SGL_RETURN_IF_ERROR(interp.budget().charge_walk(src));
    if (src.is_dict()) {
      SGL_RETURN_IF_ERROR(interp.budget().allocate_values(2 * src.dict_data().size()));
      for (const auto& [k, v] : src.dict_data().entries()) d.set(k, v);
    } else {
      SGL_ASSIGN_OR_RETURN(std::vector<Value> pairs, interp.iterate(src));
      for (const Value& p : pairs) {
        SGL_ASSIGN_OR_RETURN(std::vector<Value> kv, interp.iterate(p));
        if (kv.size() != 2) {
          return value_error("dictionary update sequence element has length " +
                             std::to_string(kv.size()) + "; 2 is required");
        }
        if (!d.set(kv[0], kv[1])) return type_error("unhashable type: '" + type_name(kv[0]) + "'");
      }
    }
  }
  SGL_RETURN_IF_ERROR(interp.budget().allocate_values(2 * args.keyword.size()));
  for (const auto& [k, v] : args.keyword) d.set(k, v);
  return Status::ok_status();
}

Result<Value> g_dict(Interpreter& interp, const CallArgs& args) {
  DictData d;
  SGL_RETURN_IF_ERROR(merge_into(interp, d, args, "dict"));
  return Value::dict(std::move(d));
}

Result<Value> g_namespace(Interpreter& interp, const CallArgs& args) {
  DictData d;
  SGL_RETURN_IF_ERROR(merge_into(interp, d, args, "namespace"));
  return make_namespace(std::move(d));
}

Result<Value> g_raise_exception(Interpreter& interp, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("raise_exception", args, {{"message", {}, true}}));
  SGL_ASSIGN_OR_RETURN(std::string message, interp.str(a[0]));
  return template_error(message);
}

Result<Value> g_strftime_now(Interpreter& interp, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("strftime_now", args, {{"format", {}, true}}));
  if (!a[0].is_string()) {
    return type_error("strftime() argument 1 must be str, not " + type_name(a[0]));
  }
  std::tm tm{};
  int micros = 0;
  if (interp.options().now) {
    tm = interp.options().now();
    // Derive the weekday / day of year from the date fields.
    std::tm normalized = tm;
    std::time_t t = timegm(&normalized);
    if (t != static_cast<std::time_t>(-1)) gmtime_r(&t, &tm);
  } else {
    auto now = std::chrono::system_clock::now();
    std::time_t t = std::chrono::system_clock::to_time_t(now);
    localtime_r(&t, &tm);
    micros = static_cast<int>(
        std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
        1000000);
  }
  // Each %-code expands to at most a few hundred bytes: built under the output limit.
  std::string text = py_strftime(a[0].as_string(), tm, micros, interp.options().max_output_bytes);
  SGL_RETURN_IF_ERROR(interp.budget().allocate(text.size()));
  return Value(std::move(text));
}

Result<Value> g_cycler(Interpreter&, const CallArgs& args) {
  if (args.positional.empty()) return type_error("at least one item has to be provided");
  auto items = std::make_shared<std::vector<Value>>(args.positional);
  auto pos = std::make_shared<size_t>(0);
  auto obj = std::make_shared<ObjectData>();
  obj->type_name = "jinja2.utils.Cycler";
  std::weak_ptr<ObjectData> weak = obj;
  auto refresh = [items, pos, weak]() {
    if (auto o = weak.lock()) o->attrs.set("current", (*items)[*pos]);
  };
  obj->attrs.set("current", (*items)[0]);
  obj->attrs.set("next",
                 Value::callable(
                     "next", [items, pos, refresh](Interpreter&, const CallArgs&) -> Result<Value> {
                       Value v = (*items)[*pos];
                       *pos = (*pos + 1) % items->size();
                       refresh();
                       return v;
                     }));
  obj->attrs.set(
      "reset",
      Value::callable("reset", [pos, refresh](Interpreter&, const CallArgs&) -> Result<Value> {
        *pos = 0;
        refresh();
        return Value::none();
      }));
  return Value::object(std::move(obj));
}

Result<Value> g_joiner(Interpreter&, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("joiner", args, {{"sep", Value(", ")}}));
  auto used = std::make_shared<bool>(false);
  auto obj = std::make_shared<ObjectData>();
  obj->type_name = "jinja2.utils.Joiner";
  Value sep = a[0];
  obj->call = [used, sep](Interpreter&, const CallArgs&) -> Result<Value> {
    if (!*used) {
      *used = true;
      return Value("");
    }
    return sep;
  };
  return Value::object(std::move(obj));
}

}  // namespace

const Value* find_global(const std::string& name) {
  static const std::unordered_map<std::string, Value> table = {
      {"range", Value::callable("range", g_range)},
      {"dict", Value::callable("dict", g_dict)},
      {"namespace", Value::callable("namespace", g_namespace)},
      {"cycler", Value::callable("cycler", g_cycler)},
      {"joiner", Value::callable("joiner", g_joiner)},
      {"raise_exception", Value::callable("raise_exception", g_raise_exception)},
      {"strftime_now", Value::callable("strftime_now", g_strftime_now)},
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace sgl::tokenizer::jinja
