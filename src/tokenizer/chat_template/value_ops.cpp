// Python operator semantics for interpreter values.
#include "tokenizer/chat_template/value_ops.h"

#include <cmath>
#include <string>

#include "tokenizer/chat_template/errors.h"
#include "tokenizer/chat_template/py_format.h"
#include "tokenizer/chat_template/str_search.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"

namespace sgl::tokenizer::jinja {
namespace {

// Python's float floor division (CPython's float_divmod): from the exact remainder, so that
// 1 // 0.1 is 9.0 as (1 - fmod(1, 0.1)) / 0.1 makes it, not floor(1 / 0.1) = 10.0.
double python_floor_div(double x, double y) {
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0 && ((y < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return std::copysign(0.0, x / y);
  double floordiv = std::floor(div);
  if (div - floordiv > 0.5) floordiv += 1.0;
  return floordiv;
}

const char* op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kFloorDiv:
      return "//";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kPow:
      return "** or pow()";
    default:
      return "?";
  }
}

Status unsupported(BinaryOp op, const Value& a, const Value& b) {
  return type_error(std::string("unsupported operand type(s) for ") + op_symbol(op) + ": '" +
                    type_name(a) + "' and '" + type_name(b) + "'");
}

Status overflow() { return invalid_argument("OverflowError: integer overflow"); }

Result<Value> repeat(const Value& seq, int64_t times, RenderBudget& budget) {
  if (times < 0) times = 0;
  auto n = static_cast<size_t>(times);
  if (seq.is_string()) {
    BudgetedString out(budget);
    SGL_RETURN_IF_ERROR(out.append_repeated(seq.as_string(), n));
    SGL_ASSIGN_OR_RETURN(std::string text, out.take());
    return seq.is_markup() ? Value::markup(std::move(text)) : Value(std::move(text));
  }
  const auto& items = seq.items();
  if (!items.empty() && n > SIZE_MAX / items.size()) return budget.check_size(SIZE_MAX);
  SGL_RETURN_IF_ERROR(budget.allocate_values(items.size() * n));
  std::vector<Value> out;
  out.reserve(items.size() * n);
  for (size_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return seq.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

// Python str() of both operands joined, sized and charged before it is built.
Result<std::string> concat(const Value& a, const Value& b, RenderBudget& budget) {
  size_t limit = budget.options().max_output_bytes;
  std::string a_text = a.is_string() ? std::string() : py_str(a, limit);
  std::string b_text = b.is_string() ? std::string() : py_str(b, limit);
  std::string_view l = a.is_string() ? std::string_view(a.as_string()) : a_text;
  std::string_view r = b.is_string() ? std::string_view(b.as_string()) : b_text;
  BudgetedString out(budget);
  SGL_RETURN_IF_ERROR(out.append(l));
  SGL_RETURN_IF_ERROR(out.append(r));
  return out.take();
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

Result<Value> arithmetic(BinaryOp op, const Value& a, const Value& b) {
  bool use_float = a.is_float() || b.is_float();
  if (op == BinaryOp::kDiv) {
    if (b.as_double() == 0) {
      return invalid_argument(use_float ? "ZeroDivisionError: float division by zero"
                                        : "ZeroDivisionError: division by zero");
    }
    return Value(a.as_double() / b.as_double());
  }
  if (use_float) {
    double x = a.as_double();
    double y = b.as_double();
    switch (op) {
      case BinaryOp::kAdd:
        return Value(x + y);
      case BinaryOp::kSub:
        return Value(x - y);
      case BinaryOp::kMul:
        return Value(x * y);
      case BinaryOp::kFloorDiv:
        if (y == 0) return invalid_argument("ZeroDivisionError: float floor division by zero");
        return Value(python_floor_div(x, y));
      case BinaryOp::kMod: {
        if (y == 0) return invalid_argument("ZeroDivisionError: float modulo");
        double m = std::fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return Value(m);
      }
      case BinaryOp::kPow:
        if (x == 0 && y < 0) {
          return invalid_argument("ZeroDivisionError: 0.0 cannot be raised to a negative power");
        }
        return Value(std::pow(x, y));
      default:
        break;
    }
    return unsupported(op, a, b);
  }
  int64_t x = a.as_int();
  int64_t y = b.as_int();
  int64_t r = 0;
  switch (op) {
    case BinaryOp::kAdd:
      if (__builtin_add_overflow(x, y, &r)) return overflow();
      return Value(r);
    case BinaryOp::kSub:
      if (__builtin_sub_overflow(x, y, &r)) return overflow();
      return Value(r);
    case BinaryOp::kMul:
      if (__builtin_mul_overflow(x, y, &r)) return overflow();
      return Value(r);
    case BinaryOp::kFloorDiv:
      if (y == 0) return invalid_argument("ZeroDivisionError: integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) return overflow();
      return Value(floor_div(x, y));
    case BinaryOp::kMod:
      if (y == 0) return invalid_argument("ZeroDivisionError: integer modulo by zero");
      if (y == -1) return Value(int64_t{0});
      return Value(floor_mod(x, y));
    case BinaryOp::kPow: {
      if (y < 0) {
        if (x == 0) {
          return invalid_argument("ZeroDivisionError: 0.0 cannot be raised to a negative power");
        }
        return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
      }
      int64_t result = 1;
      int64_t base = x;
      int64_t e = y;
      while (e > 0) {
        if (e & 1) {
          if (__builtin_mul_overflow(result, base, &result)) return overflow();
        }
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) return overflow();
      }
      return Value(result);
    }
    default:
      break;
  }
  return unsupported(op, a, b);
}

}  // namespace

Result<Value> escape_format_args(const Value& args, RenderBudget& budget) {
  auto escape_one = [&](const Value& v) -> Result<Value> {
    if (v.is_number() || v.is_markup()) return v;
    std::string text = py_str(v, budget.options().max_output_bytes);
    SGL_RETURN_IF_ERROR(budget.charge(text.size()));
    std::string escaped = html_escape(text);
    SGL_RETURN_IF_ERROR(budget.allocate(escaped.size()));
    return Value::markup(std::move(escaped));
  };
  if (args.is_tuple()) {
    SGL_RETURN_IF_ERROR(budget.allocate_values(args.items().size()));
    std::vector<Value> items;
    for (const Value& v : args.items()) {
      SGL_ASSIGN_OR_RETURN(Value escaped, escape_one(v));
      items.push_back(std::move(escaped));
    }
    return Value::tuple(std::move(items));
  }
  if (args.is_dict()) {
    SGL_RETURN_IF_ERROR(budget.allocate_values(2 * args.dict_data().size()));
    DictData d;
    for (const auto& [k, v] : args.dict_data().entries()) {
      SGL_ASSIGN_OR_RETURN(Value escaped, escape_one(v));
      d.set(k, std::move(escaped));
    }
    return Value::dict(std::move(d));
  }
  return escape_one(args);
}

Result<Value> binary_op(BinaryOp op, const Value& a, const Value& b, RenderBudget& budget) {
  if (op == BinaryOp::kConcat) {
    SGL_ASSIGN_OR_RETURN(std::string out, concat(a, b, budget));
    return Value(std::move(out));
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
  switch (op) {
    case BinaryOp::kAdd:
      if (a.is_string() && b.is_string()) {
        if (a.is_markup() || b.is_markup()) {
          // markupsafe: the plain operand is escaped, the result stays Markup.
          SGL_ASSIGN_OR_RETURN(Value l,
                               a.is_markup() ? Result<Value>(a) : escape_format_args(a, budget));
          SGL_ASSIGN_OR_RETURN(Value r,
                               b.is_markup() ? Result<Value>(b) : escape_format_args(b, budget));
          SGL_ASSIGN_OR_RETURN(std::string out, concat(l, r, budget));
          return Value::markup(std::move(out));
        }
        SGL_ASSIGN_OR_RETURN(std::string out, concat(a, b, budget));
        return Value(std::move(out));
      }
      if ((a.is_list() && b.is_list()) || (a.is_tuple() && b.is_tuple())) {
        SGL_RETURN_IF_ERROR(budget.allocate_values(a.items().size() + b.items().size()));
        std::vector<Value> out;
        out.reserve(a.items().size() + b.items().size());
        out.insert(out.end(), a.items().begin(), a.items().end());
        out.insert(out.end(), b.items().begin(), b.items().end());
        return a.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
      }
      if (a.is_string() || a.is_list() || a.is_tuple()) {
        return type_error("can only concatenate " + type_name(a) + " (not \"" + type_name(b) +
                          "\") to " + type_name(a));
      }
      return unsupported(op, a, b);
    case BinaryOp::kMul: {
      bool a_seq = a.is_string() || a.is_sequence();
      bool b_seq = b.is_string() || b.is_sequence();
      if (a_seq && b.is_integral()) return repeat(a, b.as_int(), budget);
      if (b_seq && a.is_integral()) return repeat(b, a.as_int(), budget);
      if (a_seq || b_seq) {
        return type_error("can't multiply sequence by non-int of type '" +
                          type_name(a_seq ? b : a) + "'");
      }
      return unsupported(op, a, b);
    }
    case BinaryOp::kMod:
      if (a.is_string()) {
        Value args = b;
        if (a.is_markup()) {
          SGL_ASSIGN_OR_RETURN(args, escape_format_args(b, budget));
        }
        SGL_ASSIGN_OR_RETURN(std::string s, percent_format(a.as_string(), args, budget));
        return a.is_markup() ? Value::markup(std::move(s)) : Value(std::move(s));
      }
      return unsupported(op, a, b);
    default:
      return unsupported(op, a, b);
  }
}

Result<Value> unary_op(UnaryOp op, const Value& v) {
  if (v.is_undefined()) return undefined_error(v);
  if (v.is_float()) return Value(op == UnaryOp::kNeg ? -v.as_double() : v.as_double());
  if (v.is_integral()) {
    if (op == UnaryOp::kPos) return Value(v.as_int());
    if (v.as_int() == INT64_MIN) return overflow();
    return Value(-v.as_int());
  }
  return type_error(std::string("bad operand type for unary ") + (op == UnaryOp::kNeg ? "-" : "+") +
                    ": '" + type_name(v) + "'");
}

namespace {

// As in value.cpp's walks: stop where Python would raise RecursionError.
constexpr int kMaxCompareDepth = 1000;

Result<int> compare_at(const Value& a, const Value& b, const char* op, int depth) {
  if (depth > kMaxCompareDepth) {
    return invalid_argument("RecursionError: maximum recursion depth exceeded in comparison");
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_double();
      double y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    int64_t x = a.as_int();
    int64_t y = b.as_int();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if ((a.is_list() && b.is_list()) || (a.is_tuple() && b.is_tuple())) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (py_equal(x[i], y[i])) continue;
      return compare_at(x[i], y[i], op, depth + 1);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return type_error(std::string("'") + op + "' not supported between instances of '" +
                    type_name(a) + "' and '" + type_name(b) + "'");
}

}  // namespace

Result<int> py_compare(const Value& a, const Value& b, const char* op) {
  return compare_at(a, b, op, 0);
}

Result<bool> compare_op(CompareOp op, const Value& a, const Value& b) {
  switch (op) {
    case CompareOp::kEq:
      return py_equal_checked(a, b);
    case CompareOp::kNe: {
      SGL_ASSIGN_OR_RETURN(bool equal, py_equal_checked(a, b));
      return !equal;
    }
    case CompareOp::kIn:
      return py_contains(b, a);
    case CompareOp::kNotIn: {
      SGL_ASSIGN_OR_RETURN(bool in, py_contains(b, a));
      return !in;
    }
    default:
      break;
  }
  const char* sym = op == CompareOp::kLt   ? "<"
                    : op == CompareOp::kLe ? "<="
                    : op == CompareOp::kGt ? ">"
                                           : ">=";
  SGL_ASSIGN_OR_RETURN(int c, py_compare(a, b, sym));
  switch (op) {
    case CompareOp::kLt:
      return c < 0;
    case CompareOp::kLe:
      return c <= 0;
    case CompareOp::kGt:
      return c > 0;
    default:
      return c >= 0;
  }
}

Result<bool> py_contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kString:
      if (!item.is_string()) {
        if (item.is_undefined()) return undefined_error(item);
        return type_error("'in <string>' requires string as left operand, not " + type_name(item));
      }
      return find_substring(container.as_string(), item.as_string()) != std::string::npos;
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kIterator:
      for (const Value& v : container.items()) {
        if (py_equal(v, item)) return true;
      }
      return false;
    case Kind::kDict:
      if (!hash_key(item)) return type_error("unhashable type: '" + type_name(item) + "'");
      return container.dict_data().find(item) != nullptr;
    case Kind::kUndefined:
      return false;
    default:
      return type_error("argument of type '" + type_name(container) + "' is not iterable");
  }
}

Result<std::vector<Value>> py_iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return std::vector<Value>{};
    case Kind::kString: {
      std::vector<Value> out;
      const std::string& s = v.as_string();
      if (is_ascii(s)) {
        out.reserve(s.size());
        for (char c : s) out.emplace_back(std::string(1, c));
      } else {
        for (char32_t cp : utf8_decode(s)) {
          std::string one;
          append_utf8(one, cp);
          out.emplace_back(std::move(one));
        }
      }
      return out;
    }
    case Kind::kList:
    case Kind::kTuple:
      return v.items();
    case Kind::kIterator: {
      if (v.list_data().iter_type != "generator") return v.items();
      std::vector<Value> out = std::move(v.items());
      v.items().clear();
      return out;
    }
    case Kind::kDict: {
      std::vector<Value> out;
      out.reserve(v.dict_data().size());
      for (const auto& [k, val] : v.dict_data().entries()) out.push_back(k);
      return out;
    }
    default:
      return type_error("'" + type_name(v) + "' object is not iterable");
  }
}

Result<int64_t> py_len(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return int64_t{0};
    case Kind::kString:
      return static_cast<int64_t>(utf8_length(v.as_string()));
    case Kind::kList:
    case Kind::kTuple:
      return static_cast<int64_t>(v.items().size());
    case Kind::kIterator:
      if (v.list_data().iter_type != "generator") return static_cast<int64_t>(v.items().size());
      break;
    case Kind::kDict:
      return static_cast<int64_t>(v.dict_data().size());
    default:
      break;
  }
  return type_error("object of type '" + type_name(v) + "' has no len()");
}

}  // namespace sgl::tokenizer::jinja
