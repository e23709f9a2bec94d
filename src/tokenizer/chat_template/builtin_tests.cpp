// Jinja's builtin tests.
#include "tokenizer/chat_template/builtin_tests.h"

#include <unordered_map>

#include "tokenizer/chat_template/builtin_filters.h"
#include "tokenizer/chat_template/call_args.h"
#include "tokenizer/chat_template/errors.h"
#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"
#include "tokenizer/chat_template/value_ops.h"

namespace sgl::tokenizer::jinja {
namespace {

Status no_args(const char* name, const CallArgs& args) {
  return bind_args(name, args, {}).status();
}

#define SGL_SIMPLE_TEST(fn_name, test_name, expr)                            \
  Result<bool> fn_name(Interpreter&, const Value& v, const CallArgs& args) { \
    SGL_RETURN_IF_ERROR(no_args(test_name, args));                           \
    return (expr);                                                           \
  }

SGL_SIMPLE_TEST(t_defined, "defined", !v.is_undefined())
SGL_SIMPLE_TEST(t_undefined, "undefined", v.is_undefined())
SGL_SIMPLE_TEST(t_none, "none", v.is_none())
SGL_SIMPLE_TEST(t_boolean, "boolean", v.is_bool())
SGL_SIMPLE_TEST(t_false, "false", v.is_bool() && !v.as_bool())
SGL_SIMPLE_TEST(t_true, "true", v.is_bool() && v.as_bool())
SGL_SIMPLE_TEST(t_integer, "integer", v.is_int())
SGL_SIMPLE_TEST(t_float, "float", v.is_float())
SGL_SIMPLE_TEST(t_number, "number", v.is_number())
SGL_SIMPLE_TEST(t_string, "string", v.is_string())
SGL_SIMPLE_TEST(t_mapping, "mapping", v.is_dict())
SGL_SIMPLE_TEST(t_iterable, "iterable",
                v.is_string() || v.is_sequence() || v.is_dict() || v.is_iterator() ||
                    v.is_undefined())
// NOTE: Jinja's test_sequence only checks len() and __getitem__, so dicts and undefined pass.
SGL_SIMPLE_TEST(t_sequence, "sequence",
                v.is_string() || v.is_sequence() || v.is_dict() || v.is_undefined())
SGL_SIMPLE_TEST(t_callable, "callable",
                v.is_callable() || (v.is_object() && static_cast<bool>(v.object_data().call)))
SGL_SIMPLE_TEST(t_escaped, "escaped", v.is_markup())

#undef SGL_SIMPLE_TEST

Result<bool> t_lower(Interpreter& interp, const Value& v, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("lower", args));
  SGL_ASSIGN_OR_RETURN(std::string text, interp.str(v));
  bool cased = false;
  for (char32_t cp : utf8_decode(text)) {
    if (is_py_upper(cp)) return false;
    if (is_py_lower(cp)) cased = true;
  }
  return cased;
}

Result<bool> t_upper(Interpreter& interp, const Value& v, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("upper", args));
  SGL_ASSIGN_OR_RETURN(std::string text, interp.str(v));
  bool cased = false;
  for (char32_t cp : utf8_decode(text)) {
    if (is_py_lower(cp)) return false;
    if (is_py_upper(cp)) cased = true;
  }
  return cased;
}

Result<bool> mod_equals(Interpreter& interp, const Value& v, const Value& divisor,
                        int64_t expected) {
  SGL_ASSIGN_OR_RETURN(Value m, binary_op(BinaryOp::kMod, v, divisor, interp.budget()));
  return py_equal(m, Value(expected));
}

Result<bool> t_odd(Interpreter& interp, const Value& v, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("odd", args));
  return mod_equals(interp, v, Value(2), 1);
}

Result<bool> t_even(Interpreter& interp, const Value& v, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("even", args));
  return mod_equals(interp, v, Value(2), 0);
}

Result<bool> t_divisibleby(Interpreter& interp, const Value& v, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("divisibleby", args, {{"num", {}, true}}));
  return mod_equals(interp, v, a[0], 0);
}

Result<bool> t_sameas(Interpreter& interp, const Value& v, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("sameas", args, {{"other", {}, true}}));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(v));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(a[0]));
  const Value& o = a[0];
  if (v.kind() != o.kind()) return false;
  if (v.identity() != nullptr) {
    if (v.is_string()) return v.as_string() == o.as_string();
    return v.identity() == o.identity();
  }
  return py_equal(v, o);
}

template <CompareOp Op>
Result<bool> t_compare(Interpreter& interp, const Value& v, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("compare", args, {{"other", {}, true}}));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(v));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(a[0]));
  return compare_op(Op, v, a[0]);
}

Result<bool> t_in(Interpreter& interp, const Value& v, const CallArgs& args) {
  SGL_ASSIGN_OR_RETURN(auto a, bind_args("in", args, {{"seq", {}, true}}));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(v));
  SGL_RETURN_IF_ERROR(interp.budget().charge_walk(a[0]));
  return py_contains(a[0], v);
}

Result<bool> t_filter(Interpreter&, const Value& v, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("filter", args));
  return v.is_string() && find_filter(v.as_string()) != nullptr;
}

Result<bool> t_test(Interpreter&, const Value& v, const CallArgs& args) {
  SGL_RETURN_IF_ERROR(no_args("test", args));
  return v.is_string() && find_test(v.as_string()) != nullptr;
}

}  // namespace

TestFn find_test(const std::string& name) {
  static const std::unordered_map<std::string, TestFn> table = {
      {"defined", t_defined},
      {"undefined", t_undefined},
      {"none", t_none},
      {"boolean", t_boolean},
      {"false", t_false},
      {"true", t_true},
      {"integer", t_integer},
      {"float", t_float},
      {"number", t_number},
      {"string", t_string},
      {"mapping", t_mapping},
      {"iterable", t_iterable},
      {"sequence", t_sequence},
      {"callable", t_callable},
      {"escaped", t_escaped},
      {"lower", t_lower},
      {"upper", t_upper},
      {"odd", t_odd},
      {"even", t_even},
      {"divisibleby", t_divisibleby},
      {"sameas", t_sameas},
      {"eq", t_compare<CompareOp::kEq>},
      {"equalto", t_compare<CompareOp::kEq>},
      {"==", t_compare<CompareOp::kEq>},
      {"ne", t_compare<CompareOp::kNe>},
      {"!=", t_compare<CompareOp::kNe>},
      {"lt", t_compare<CompareOp::kLt>},
      {"lessthan", t_compare<CompareOp::kLt>},
      {"<", t_compare<CompareOp::kLt>},
      {"le", t_compare<CompareOp::kLe>},
      {"<=", t_compare<CompareOp::kLe>},
      {"gt", t_compare<CompareOp::kGt>},
      {"greaterthan", t_compare<CompareOp::kGt>},
      {">", t_compare<CompareOp::kGt>},
      {"ge", t_compare<CompareOp::kGe>},
      {">=", t_compare<CompareOp::kGe>},
      {"in", t_in},
      {"filter", t_filter},
      {"test", t_test},
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace sgl::tokenizer::jinja
