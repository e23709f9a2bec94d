// Interpreter: expression evaluation (names, operators, calls, filters, tests, subscripts).
#include <algorithm>
#include <optional>

#include "tokenizer/chat_template/builtin_filters.h"
#include "tokenizer/chat_template/builtin_tests.h"
#include "tokenizer/chat_template/errors.h"
#include "tokenizer/chat_template/globals.h"
#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_ops.h"

namespace sgl::tokenizer::jinja {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace

Result<Value> Interpreter::eval(const Expr& expr) {
  SGL_RETURN_IF_ERROR(budget_.step());
  return std::visit(
      Overloaded{
          [&](const LiteralExpr& e) -> Result<Value> { return e.value; },
          [&](const NameExpr& e) -> Result<Value> { return eval_name(e); },
          [&](const ListExpr& e) -> Result<Value> {
            SGL_RETURN_IF_ERROR(budget_.allocate_values(e.items.size()));
            std::vector<Value> items;
            items.reserve(e.items.size());
            for (const ExprPtr& item : e.items) {
              SGL_ASSIGN_OR_RETURN(Value v, eval(*item));
              items.push_back(std::move(v));
            }
            return Value::list(std::move(items));
          },
          [&](const TupleExpr& e) -> Result<Value> {
            SGL_RETURN_IF_ERROR(budget_.allocate_values(e.items.size()));
            std::vector<Value> items;
            items.reserve(e.items.size());
            for (const ExprPtr& item : e.items) {
              SGL_ASSIGN_OR_RETURN(Value v, eval(*item));
              items.push_back(std::move(v));
            }
            return Value::tuple(std::move(items));
          },
          [&](const DictExpr& e) -> Result<Value> {
            SGL_RETURN_IF_ERROR(budget_.allocate_values(2 * e.items.size()));
            DictData d;
            for (const auto& [key_expr, value_expr] : e.items) {
              SGL_ASSIGN_OR_RETURN(Value key, eval(*key_expr));
              SGL_ASSIGN_OR_RETURN(Value value, eval(*value_expr));
              SGL_RETURN_IF_ERROR(budget_.charge_walk(key));  // hashed
              if (!d.set(key, std::move(value))) {
                return type_error("unhashable type: '" + type_name(key) + "'");
              }
            }
            return Value::dict(std::move(d));
          },
          [&](const GetAttrExpr& e) -> Result<Value> { return eval_getattr(e); },
          [&](const GetItemExpr& e) -> Result<Value> { return eval_getitem(e); },
          [&](const SliceExpr&) -> Result<Value> {
            return runtime_error("slice outside of a subscript");
          },
          [&](const UnaryExpr& e) -> Result<Value> {
            SGL_ASSIGN_OR_RETURN(Value v, eval(*e.operand));
            if (e.op == UnaryOp::kNot) return Value(!v.truthy());
            return unary_op(e.op, v);
          },
          [&](const BinaryExpr& e) -> Result<Value> { return eval_binary(e); },
          [&](const CompareExpr& e) -> Result<Value> { return eval_compare(e); },
          [&](const CondExpr& e) -> Result<Value> {
            SGL_ASSIGN_OR_RETURN(Value test, eval(*e.test));
            if (test.truthy()) return eval(*e.then_expr);
            if (e.else_expr) return eval(*e.else_expr);
            return undefined_hint("the inline if-expression on line " + std::to_string(expr.line) +
                                  " evaluated to false and no else section was defined.");
          },
          [&](const CallExpr& e) -> Result<Value> { return eval_call(e, nullptr); },
          [&](const FilterExpr& e) -> Result<Value> { return eval_filter(e, nullptr); },
          [&](const TestExpr& e) -> Result<Value> { return eval_test(e); },
      },
      expr.node);
}

Result<Value> Interpreter::eval_name(const NameExpr& e) {
  if (const Value* v = frame_->lookup(e.name)) return *v;
  if (const Value* g = find_global(e.name)) return *g;
  return undefined_name(e.name);
}

Result<Value> Interpreter::eval_getattr(const GetAttrExpr& e) {
  SGL_ASSIGN_OR_RETURN(Value obj, eval(*e.object));
  return get_attr(obj, e.name);
}

Result<Value> Interpreter::eval_getitem(const GetItemExpr& e) {
  SGL_ASSIGN_OR_RETURN(Value obj, eval(*e.object));
  if (const auto* slice = std::get_if<SliceExpr>(&e.index->node)) {
    if (obj.is_undefined()) return undefined_error(obj);
    return eval_slice(obj, *slice);
  }
  SGL_ASSIGN_OR_RETURN(Value key, eval(*e.index));
  return get_item(obj, key);
}

Result<Value> Interpreter::eval_binary(const BinaryExpr& e) {
  SGL_ASSIGN_OR_RETURN(Value left, eval(*e.left));
  if (e.op == BinaryOp::kAnd) {
    if (!left.truthy()) return left;
    return eval(*e.right);
  }
  if (e.op == BinaryOp::kOr) {
    if (left.truthy()) return left;
    return eval(*e.right);
  }
  SGL_ASSIGN_OR_RETURN(Value right, eval(*e.right));
  return binary_op(e.op, left, right, budget_);
}

Result<Value> Interpreter::eval_compare(const CompareExpr& e) {
  SGL_ASSIGN_OR_RETURN(Value left, eval(*e.first));
  for (const auto& [op, right_expr] : e.rest) {
    SGL_ASSIGN_OR_RETURN(Value right, eval(*right_expr));
    // Equality, ordering and membership may walk both operands to the bottom.
    SGL_RETURN_IF_ERROR(budget_.charge_walk(left));
    SGL_RETURN_IF_ERROR(budget_.charge_walk(right));
    SGL_ASSIGN_OR_RETURN(bool ok, compare_op(op, left, right));
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Result<CallArgs> Interpreter::eval_args(const ArgsExpr& args) {
  CallArgs out;
  out.positional.reserve(args.positional.size());
  for (const ExprPtr& e : args.positional) {
    SGL_ASSIGN_OR_RETURN(Value v, eval(*e));
    out.positional.push_back(std::move(v));
  }
  for (const auto& [name, e] : args.keyword) {
    SGL_ASSIGN_OR_RETURN(Value v, eval(*e));
    out.keyword.emplace_back(name, std::move(v));
  }
  if (args.star_args) {
    SGL_ASSIGN_OR_RETURN(Value v, eval(*args.star_args));
    SGL_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
    for (Value& item : items) out.positional.push_back(std::move(item));
  }
  if (args.star_kwargs) {
    SGL_ASSIGN_OR_RETURN(Value v, eval(*args.star_kwargs));
    if (!v.is_dict()) return type_error("argument after ** must be a mapping, not " + type_name(v));
    SGL_RETURN_IF_ERROR(budget_.allocate_values(2 * v.dict_data().size()));
    for (const auto& [k, val] : v.dict_data().entries()) {
      if (!k.is_string()) return type_error("keywords must be strings");
      out.keyword.emplace_back(k.as_string(), val);
    }
  }
  return out;
}

Result<Value> Interpreter::eval_call(const CallExpr& e, const Value* caller) {
  SGL_ASSIGN_OR_RETURN(Value callee, eval(*e.callee));
  SGL_ASSIGN_OR_RETURN(CallArgs args, eval_args(e.args));
  if (caller != nullptr) args.keyword.emplace_back("caller", *caller);
  return call(callee, args);
}

Result<Value> Interpreter::call(const Value& callee, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(budget_.step());
  if (callee.is_callable()) return callee.callable_data().fn(*this, args);
  if (callee.is_object() && callee.object_data().call)
    return callee.object_data().call(*this, args);
  if (callee.is_undefined()) return undefined_error(callee);
  return type_error("'" + type_name(callee) + "' object is not callable");
}

Result<Value> Interpreter::eval_filter(const FilterExpr& e, const Value* block_input) {
  Value input;
  if (!e.operand) {
    if (block_input == nullptr) return runtime_error("filter without an operand");
    input = *block_input;
  } else if (const auto* inner = std::get_if<FilterExpr>(&e.operand->node)) {
    SGL_ASSIGN_OR_RETURN(input, eval_filter(*inner, block_input));
  } else {
    SGL_ASSIGN_OR_RETURN(input, eval(*e.operand));
  }
  SGL_ASSIGN_OR_RETURN(CallArgs args, eval_args(e.args));
  return apply_filter(e.name, input, args);
}

Result<Value> Interpreter::eval_test(const TestExpr& e) {
  SGL_ASSIGN_OR_RETURN(Value input, eval(*e.operand));
  SGL_ASSIGN_OR_RETURN(CallArgs args, eval_args(e.args));
  SGL_ASSIGN_OR_RETURN(bool result, apply_test(e.name, input, args));
  return Value(result);
}

Result<Value> Interpreter::apply_filter(const std::string& name, const Value& input,
                                        const CallArgs& args) {
  FilterFn fn = find_filter(name);
  if (fn == nullptr) return runtime_error("No filter named '" + name + "' found.");
  // Filters on strings read them at least once (length counts characters, int parses).
  if (input.is_string()) SGL_RETURN_IF_ERROR(budget_.charge(input.as_string().size()));
  return fn(*this, input, args);
}

Result<bool> Interpreter::apply_test(const std::string& name, const Value& input,
                                     const CallArgs& args) {
  TestFn fn = find_test(name);
  if (fn == nullptr) return runtime_error("No test named '" + name + "' found.");
  return fn(*this, input, args);
}

Result<Value> Interpreter::eval_slice(const Value& obj, const SliceExpr& slice) {
  auto bound = [&](const ExprPtr& e) -> Result<std::optional<int64_t>> {
    if (!e) return std::optional<int64_t>();
    SGL_ASSIGN_OR_RETURN(Value v, eval(*e));
    if (v.is_none()) return std::optional<int64_t>();
    if (!v.is_integral()) {
      return type_error("slice indices must be integers or None or have an __index__ method");
    }
    return std::optional<int64_t>(v.as_int());
  };
  SGL_ASSIGN_OR_RETURN(std::optional<int64_t> start, bound(slice.start));
  SGL_ASSIGN_OR_RETURN(std::optional<int64_t> stop, bound(slice.stop));
  SGL_ASSIGN_OR_RETURN(std::optional<int64_t> step_opt, bound(slice.step));
  int64_t step = step_opt.value_or(1);
  if (step == 0) return value_error("slice step cannot be zero");
  // NOTE: Jinja compiles slices to a plain Python subscript (no sandbox getitem), so slicing
  // an unsliceable value raises instead of yielding undefined.
  if (!obj.is_string() && !obj.is_sequence()) {
    if (obj.is_dict()) return type_error("unhashable type: 'slice'");
    return type_error("'" + type_name(obj) + "' object is not subscriptable");
  }
  std::u32string chars;
  int64_t len = 0;
  if (obj.is_string()) {
    SGL_RETURN_IF_ERROR(budget_.charge(obj.as_string().size()));
    chars = utf8_decode(obj.as_string());
    len = static_cast<int64_t>(chars.size());
  } else {
    len = static_cast<int64_t>(obj.items().size());
  }
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= len) {
      x = step < 0 ? len - 1 : len;
    }
    return x;
  };
  int64_t b = adjust(start, step < 0 ? len - 1 : 0);
  int64_t e = adjust(stop, step < 0 ? -1 : len);
  // Python's slice length: the indices are b, b + step, ... short of e. |step| is unsigned
  // because -INT64_MIN does not fit.
  uint64_t stride = step < 0 ? 0 - static_cast<uint64_t>(step) : static_cast<uint64_t>(step);
  uint64_t span = step > 0 ? static_cast<uint64_t>(std::max<int64_t>(e - b, 0))
                           : static_cast<uint64_t>(std::max<int64_t>(b - e, 0));
  auto count = static_cast<int64_t>(span == 0 ? 0 : (span - 1) / stride + 1);
  auto index = [&](int64_t k) { return static_cast<size_t>(b + k * step); };
  if (obj.is_string()) {
    std::u32string out;
    out.reserve(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) out.push_back(chars[index(k)]);
    std::string text = utf8_encode(out);
    SGL_RETURN_IF_ERROR(budget_.allocate(text.size()));
    return obj.is_markup() ? Value::markup(std::move(text)) : Value(std::move(text));
  }
  SGL_RETURN_IF_ERROR(budget_.allocate_values(static_cast<size_t>(count)));
  std::vector<Value> out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) out.push_back(obj.items()[index(k)]);
  return obj.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

}  // namespace sgl::tokenizer::jinja
