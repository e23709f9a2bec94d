// Jinja parser: expressions (precedence climbing as in jinja2.parser).
#include "tokenizer/chat_template/parser.h"

namespace sgl::tokenizer::jinja {

namespace {

struct DepthLeave {
  int* depth;
  ~DepthLeave() { --*depth; }
};

}  // namespace

Result<ExprPtr> Parser::parse_tuple(bool with_condexpr,
                                    std::initializer_list<std::string_view> end_names,
                                    bool explicit_parentheses) {
  int line = cur().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) SGL_RETURN_IF_ERROR(expect_op(","));
    if (is_tuple_end(end_names)) break;
    SGL_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(with_condexpr));
    items.push_back(std::move(item));
    if (at_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parentheses) {
      return fail("Expected an expression, got '" + describe(cur()) + "'");
    }
  }
  return make_expr(TupleExpr{std::move(items)}, line);
}

Result<ExprPtr> Parser::parse_expression(bool with_condexpr) {
  SGL_RETURN_IF_ERROR(enter());
  DepthLeave leave_guard{&depth_};
  if (with_condexpr) return parse_condexpr();
  return parse_or();
}

Result<ExprPtr> Parser::parse_condexpr() {
  int line = cur().line;
  SGL_ASSIGN_OR_RETURN(ExprPtr expr1, parse_or());
  Chain chain(this);
  while (skip_name("if")) {
    SGL_RETURN_IF_ERROR(chain.link());
    SGL_ASSIGN_OR_RETURN(ExprPtr expr2, parse_or());
    ExprPtr expr3;
    if (skip_name("else")) {
      SGL_RETURN_IF_ERROR(enter());
      DepthLeave leave_guard{&depth_};
      SGL_ASSIGN_OR_RETURN(expr3, parse_condexpr());
    }
    expr1 = make_expr(CondExpr{std::move(expr2), std::move(expr1), std::move(expr3)}, line);
  }
  return expr1;
}

Result<ExprPtr> Parser::parse_or() {
  int line = cur().line;
  SGL_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
  Chain chain(this);
  while (skip_name("or")) {
    SGL_RETURN_IF_ERROR(chain.link());
    SGL_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
    left = make_expr(BinaryExpr{BinaryOp::kOr, std::move(left), std::move(right)}, line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_and() {
  int line = cur().line;
  SGL_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
  Chain chain(this);
  while (skip_name("and")) {
    SGL_RETURN_IF_ERROR(chain.link());
    SGL_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
    left = make_expr(BinaryExpr{BinaryOp::kAnd, std::move(left), std::move(right)}, line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_not() {
  int line = cur().line;
  if (skip_name("not")) {
    SGL_RETURN_IF_ERROR(enter());
    DepthLeave leave_guard{&depth_};
    SGL_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
    return make_expr(UnaryExpr{UnaryOp::kNot, std::move(operand)}, line);
  }
  return parse_compare();
}

Result<ExprPtr> Parser::parse_compare() {
  int line = cur().line;
  SGL_ASSIGN_OR_RETURN(ExprPtr expr, parse_math1());
  std::vector<std::pair<CompareOp, ExprPtr>> ops;
  while (true) {
    CompareOp op;
    if (at_op("==")) {
      op = CompareOp::kEq;
    } else if (at_op("!=")) {
      op = CompareOp::kNe;
    } else if (at_op("<")) {
      op = CompareOp::kLt;
    } else if (at_op("<=")) {
      op = CompareOp::kLe;
    } else if (at_op(">")) {
      op = CompareOp::kGt;
    } else if (at_op(">=")) {
      op = CompareOp::kGe;
    } else if (at_name("in")) {
      op = CompareOp::kIn;
    } else if (at_name("not") && peek().type == TokenType::kName && peek().text == "in") {
      op = CompareOp::kNotIn;
      advance();
    } else {
      break;
    }
    advance();
    SGL_ASSIGN_OR_RETURN(ExprPtr right, parse_math1());
    ops.emplace_back(op, std::move(right));
  }
  if (ops.empty()) return expr;
  return make_expr(CompareExpr{std::move(expr), std::move(ops)}, line);
}

Result<ExprPtr> Parser::parse_math1() {
  int line = cur().line;
  SGL_ASSIGN_OR_RETURN(ExprPtr left, parse_concat());
  Chain chain(this);
  while (at_op("+") || at_op("-")) {
    BinaryOp op = at_op("+") ? BinaryOp::kAdd : BinaryOp::kSub;
    advance();
    SGL_RETURN_IF_ERROR(chain.link());
    SGL_ASSIGN_OR_RETURN(ExprPtr right, parse_concat());
    left = make_expr(BinaryExpr{op, std::move(left), std::move(right)}, line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_concat() {
  int line = cur().line;
  SGL_ASSIGN_OR_RETURN(ExprPtr left, parse_math2());
  Chain chain(this);
  while (skip_op("~")) {
    SGL_RETURN_IF_ERROR(chain.link());
    SGL_ASSIGN_OR_RETURN(ExprPtr right, parse_math2());
    left = make_expr(BinaryExpr{BinaryOp::kConcat, std::move(left), std::move(right)}, line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_math2() {
  int line = cur().line;
  SGL_ASSIGN_OR_RETURN(ExprPtr left, parse_pow());
  Chain chain(this);
  while (true) {
    BinaryOp op;
    if (at_op("*")) {
      op = BinaryOp::kMul;
    } else if (at_op("/")) {
      op = BinaryOp::kDiv;
    } else if (at_op("//")) {
      op = BinaryOp::kFloorDiv;
    } else if (at_op("%")) {
      op = BinaryOp::kMod;
    } else {
      break;
    }
    advance();
    SGL_RETURN_IF_ERROR(chain.link());
    SGL_ASSIGN_OR_RETURN(ExprPtr right, parse_pow());
    left = make_expr(BinaryExpr{op, std::move(left), std::move(right)}, line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_pow() {
  int line = cur().line;
  SGL_ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
  Chain chain(this);
  while (skip_op("**")) {
    SGL_RETURN_IF_ERROR(chain.link());
    SGL_ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
    left = make_expr(BinaryExpr{BinaryOp::kPow, std::move(left), std::move(right)}, line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_unary(bool with_filter) {
  SGL_RETURN_IF_ERROR(enter());
  DepthLeave leave_guard{&depth_};
  int line = cur().line;
  ExprPtr node;
  if (skip_op("-")) {
    SGL_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
    node = make_expr(UnaryExpr{UnaryOp::kNeg, std::move(operand)}, line);
  } else if (skip_op("+")) {
    SGL_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
    node = make_expr(UnaryExpr{UnaryOp::kPos, std::move(operand)}, line);
  } else {
    SGL_ASSIGN_OR_RETURN(node, parse_primary());
  }
  SGL_ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
  if (with_filter) {
    SGL_ASSIGN_OR_RETURN(node, parse_filter_expr(std::move(node)));
  }
  return node;
}

Result<ExprPtr> Parser::parse_primary() {
  const Token& t = cur();
  int line = t.line;
  switch (t.type) {
    case TokenType::kName: {
      std::string name = t.text;
      advance();
      if (name == "true" || name == "True") return make_expr(LiteralExpr{Value(true)}, line);
      if (name == "false" || name == "False") return make_expr(LiteralExpr{Value(false)}, line);
      if (name == "none" || name == "None") return make_expr(LiteralExpr{Value::none()}, line);
      return make_expr(NameExpr{std::move(name)}, line);
    }
    case TokenType::kString: {
      std::string s;
      while (cur().type == TokenType::kString) {
        s += cur().text;
        advance();
      }
      return make_expr(LiteralExpr{Value(std::move(s))}, line);
    }
    case TokenType::kInteger: {
      int64_t v = t.int_value;
      advance();
      return make_expr(LiteralExpr{Value(v)}, line);
    }
    case TokenType::kFloat: {
      double v = t.float_value;
      advance();
      return make_expr(LiteralExpr{Value(v)}, line);
    }
    case TokenType::kOperator:
      if (t.text == "(") {
        advance();
        SGL_ASSIGN_OR_RETURN(ExprPtr node, parse_tuple(true, {}, true));
        SGL_RETURN_IF_ERROR(expect_op(")"));
        return node;
      }
      if (t.text == "[") return parse_list();
      if (t.text == "{") return parse_dict();
      break;
    default:
      break;
  }
  return fail("unexpected '" + describe(t) + "'");
}

Result<ExprPtr> Parser::parse_list() {
  int line = cur().line;
  SGL_RETURN_IF_ERROR(expect_op("["));
  std::vector<ExprPtr> items;
  while (!at_op("]")) {
    if (!items.empty()) {
      SGL_RETURN_IF_ERROR(expect_op(","));
      if (at_op("]")) break;
    }
    SGL_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
    items.push_back(std::move(item));
  }
  advance();  // ]
  return make_expr(ListExpr{std::move(items)}, line);
}

Result<ExprPtr> Parser::parse_dict() {
  int line = cur().line;
  SGL_RETURN_IF_ERROR(expect_op("{"));
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
  while (!at_op("}")) {
    if (!items.empty()) {
      SGL_RETURN_IF_ERROR(expect_op(","));
      if (at_op("}")) break;
    }
    SGL_ASSIGN_OR_RETURN(ExprPtr key, parse_expression());
    SGL_RETURN_IF_ERROR(expect_op(":"));
    SGL_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
    items.emplace_back(std::move(key), std::move(value));
  }
  advance();  // }
  return make_expr(DictExpr{std::move(items)}, line);
}

Result<ExprPtr> Parser::parse_postfix(ExprPtr node) {
  Chain chain(this);
  while (true) {
    if (at_op(".") || at_op("[") || at_op("(")) SGL_RETURN_IF_ERROR(chain.link());
    if (at_op(".") || at_op("[")) {
      SGL_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node)));
    } else if (at_op("(")) {
      int line = cur().line;
      SGL_ASSIGN_OR_RETURN(ArgsExpr args, parse_call_args());
      node = make_expr(CallExpr{std::move(node), std::move(args)}, line);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::parse_filter_expr(ExprPtr node) {
  Chain chain(this);
  while (true) {
    // parse_filter counts its own links; a test wraps its operand in up to two nodes.
    if (at_op("(")) SGL_RETURN_IF_ERROR(chain.link());
    if (at_name("is")) {
      SGL_RETURN_IF_ERROR(chain.link());
      SGL_RETURN_IF_ERROR(chain.link());
    }
    if (at_op("|")) {
      SGL_ASSIGN_OR_RETURN(node, parse_filter(std::move(node), false));
    } else if (at_name("is")) {
      SGL_ASSIGN_OR_RETURN(node, parse_test(std::move(node)));
    } else if (at_op("(")) {
      int line = cur().line;
      SGL_ASSIGN_OR_RETURN(ArgsExpr args, parse_call_args());
      node = make_expr(CallExpr{std::move(node), std::move(args)}, line);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::parse_subscript(ExprPtr node) {
  int line = cur().line;
  if (skip_op(".")) {
    const Token& attr = cur();
    if (attr.type == TokenType::kName) {
      std::string name = attr.text;
      advance();
      return make_expr(GetAttrExpr{std::move(node), std::move(name)}, line);
    }
    if (attr.type != TokenType::kInteger) return fail("expected name or number");
    int64_t index = attr.int_value;
    advance();
    return make_expr(GetItemExpr{std::move(node), make_expr(LiteralExpr{Value(index)}, line)},
                     line);
  }
  SGL_RETURN_IF_ERROR(expect_op("["));
  std::vector<ExprPtr> args;
  while (!at_op("]")) {
    if (!args.empty()) SGL_RETURN_IF_ERROR(expect_op(","));
    SGL_ASSIGN_OR_RETURN(ExprPtr arg, parse_subscribed());
    args.push_back(std::move(arg));
  }
  advance();  // ]
  if (args.empty()) return fail("expected subscript expression");
  ExprPtr index =
      args.size() == 1 ? std::move(args[0]) : make_expr(TupleExpr{std::move(args)}, line);
  return make_expr(GetItemExpr{std::move(node), std::move(index)}, line);
}

Result<ExprPtr> Parser::parse_subscribed() {
  int line = cur().line;
  SliceExpr slice;
  if (skip_op(":")) {
    // start omitted
  } else {
    SGL_ASSIGN_OR_RETURN(ExprPtr node, parse_expression());
    if (!skip_op(":")) return node;
    slice.start = std::move(node);
  }
  if (!at_op(":") && !at_op("]") && !at_op(",")) {
    SGL_ASSIGN_OR_RETURN(slice.stop, parse_expression());
  }
  if (skip_op(":")) {
    if (!at_op("]") && !at_op(",")) {
      SGL_ASSIGN_OR_RETURN(slice.step, parse_expression());
    }
  }
  return make_expr(std::move(slice), line);
}

Result<ArgsExpr> Parser::parse_call_args() {
  SGL_RETURN_IF_ERROR(expect_op("("));
  ArgsExpr args;
  bool require_comma = false;
  while (!at_op(")")) {
    if (require_comma) {
      SGL_RETURN_IF_ERROR(expect_op(","));
      if (at_op(")")) break;
    }
    if (skip_op("*")) {
      SGL_ASSIGN_OR_RETURN(args.star_args, parse_expression());
    } else if (skip_op("**")) {
      SGL_ASSIGN_OR_RETURN(args.star_kwargs, parse_expression());
    } else if (cur().type == TokenType::kName && peek().type == TokenType::kOperator &&
               peek().text == "=") {
      std::string key = cur().text;
      advance();
      advance();
      SGL_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      args.keyword.emplace_back(std::move(key), std::move(value));
    } else {
      if (!args.keyword.empty() || args.star_args || args.star_kwargs) {
        return fail("invalid syntax for function call expression");
      }
      SGL_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      args.positional.push_back(std::move(value));
    }
    require_comma = true;
  }
  advance();  // )
  return args;
}

Result<ExprPtr> Parser::parse_filter(ExprPtr node, bool start_inline) {
  Chain chain(this);
  while (at_op("|") || start_inline) {
    SGL_RETURN_IF_ERROR(chain.link());
    if (!start_inline) advance();
    start_inline = false;
    int line = cur().line;
    SGL_ASSIGN_OR_RETURN(std::string name, expect_name());
    while (skip_op(".")) {
      SGL_ASSIGN_OR_RETURN(std::string part, expect_name());
      name += "." + part;
    }
    ArgsExpr args;
    if (at_op("(")) {
      SGL_ASSIGN_OR_RETURN(args, parse_call_args());
    }
    node = make_expr(FilterExpr{std::move(node), std::move(name), std::move(args)}, line);
  }
  return node;
}

Result<ExprPtr> Parser::parse_test(ExprPtr node) {
  int line = cur().line;
  advance();  // is
  bool negated = skip_name("not");
  SGL_ASSIGN_OR_RETURN(std::string name, expect_name());
  while (skip_op(".")) {
    SGL_ASSIGN_OR_RETURN(std::string part, expect_name());
    name += "." + part;
  }
  ArgsExpr args;
  const Token& t = cur();
  if (at_op("(")) {
    SGL_ASSIGN_OR_RETURN(args, parse_call_args());
  } else if ((t.type == TokenType::kName || t.type == TokenType::kString ||
              t.type == TokenType::kInteger || t.type == TokenType::kFloat || at_op("[") ||
              at_op("{")) &&
             !at_name("else") && !at_name("or") && !at_name("and")) {
    if (at_name("is")) return fail("You cannot chain multiple tests with is");
    SGL_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
    SGL_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
    args.positional.push_back(std::move(arg));
  }
  node = make_expr(TestExpr{std::move(node), std::move(name), std::move(args)}, line);
  if (negated) node = make_expr(UnaryExpr{UnaryOp::kNot, std::move(node)}, line);
  return node;
}

}  // namespace sgl::tokenizer::jinja
