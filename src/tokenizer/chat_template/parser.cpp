// Jinja parser: token cursor helpers and statement (tag) parsing.
#include "tokenizer/chat_template/parser.h"

#include <algorithm>

#include "tokenizer/chat_template/name_check.h"

namespace sgl::tokenizer::jinja {
namespace {

constexpr int kMaxParseDepth = 200;

bool contains(std::initializer_list<std::string_view> list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

std::string quote_list(std::initializer_list<std::string_view> tags) {
  std::string out;
  size_t i = 0;
  for (std::string_view t : tags) {
    if (i > 0) out += (i + 1 == tags.size()) ? " or " : ", ";
    out += "'" + std::string(t) + "'";
    ++i;
  }
  return out;
}

}  // namespace

Result<Body> parse_template(std::string_view source, const LexerOptions& options) {
  SGL_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source, options));
  Parser parser(std::move(tokens));
  SGL_ASSIGN_OR_RETURN(Body body, parser.parse());
  SGL_RETURN_IF_ERROR(check_names(body));
  return body;
}

Result<Body> Parser::parse() {
  SGL_ASSIGN_OR_RETURN(Body body, parse_body({}));
  if (cur().type != TokenType::kEof) {
    return fail("Encountered unknown tag '" + cur().text + "'.");
  }
  return body;
}

const Token& Parser::peek(size_t n) const {
  size_t i = std::min(pos_ + n, tokens_.size() - 1);
  return tokens_[i];
}

bool Parser::at_op(std::string_view op) const {
  return cur().type == TokenType::kOperator && cur().text == op;
}

bool Parser::at_name(std::string_view name) const {
  return cur().type == TokenType::kName && cur().text == name;
}

bool Parser::skip_op(std::string_view op) {
  if (!at_op(op)) return false;
  advance();
  return true;
}

bool Parser::skip_name(std::string_view name) {
  if (!at_name(name)) return false;
  advance();
  return true;
}

Status Parser::expect_op(std::string_view op) {
  if (!skip_op(op)) return fail_unexpected("'" + std::string(op) + "'");
  return Status::ok_status();
}

Result<std::string> Parser::expect_name() {
  if (cur().type != TokenType::kName) return fail_unexpected("name");
  std::string name = cur().text;
  advance();
  return name;
}

Status Parser::expect_block_end() {
  skip_op(":");
  if (cur().type != TokenType::kBlockEnd) return fail_unexpected("end of statement block");
  advance();
  return Status::ok_status();
}

Status Parser::fail(const std::string& message) const {
  return invalid_argument("TemplateSyntaxError: " + message + " (line " +
                          std::to_string(cur().line) + ")");
}

std::string Parser::describe(const Token& t) const {
  switch (t.type) {
    case TokenType::kData:
      return "template data";
    case TokenType::kVariableBegin:
      return "begin of print statement";
    case TokenType::kVariableEnd:
      return "end of print statement";
    case TokenType::kBlockBegin:
      return "begin of statement block";
    case TokenType::kBlockEnd:
      return "end of statement block";
    case TokenType::kEof:
      return "end of template";
    case TokenType::kString:
      return "string";
    default:
      return t.text;
  }
}

Status Parser::fail_unexpected(std::string_view expected) const {
  return fail("expected token " + std::string(expected) + ", got '" + describe(cur()) + "'");
}

Status Parser::enter() {
  if (++depth_ > kMaxParseDepth) {
    --depth_;
    return fail("template nesting too deep (limit " + std::to_string(kMaxParseDepth) + ")");
  }
  return Status::ok_status();
}

Result<Body> Parser::parse_body(std::initializer_list<std::string_view> end_tags) {
  SGL_RETURN_IF_ERROR(enter());
  struct Leave {
    Parser* p;
    ~Leave() { p->leave(); }
  } leave_guard{this};
  Body body;
  while (true) {
    const Token& t = cur();
    switch (t.type) {
      case TokenType::kData: {
        auto stmt = std::make_unique<Stmt>();
        stmt->node = TextStmt{t.text};
        stmt->line = t.line;
        body.push_back(std::move(stmt));
        advance();
        break;
      }
      case TokenType::kVariableBegin: {
        int line = t.line;
        advance();
        SGL_ASSIGN_OR_RETURN(ExprPtr expr, parse_tuple(true, {}, false));
        if (cur().type != TokenType::kVariableEnd) return fail_unexpected("end of print statement");
        advance();
        auto stmt = std::make_unique<Stmt>();
        stmt->node = OutputStmt{std::move(expr)};
        stmt->line = line;
        body.push_back(std::move(stmt));
        break;
      }
      case TokenType::kBlockBegin: {
        advance();
        if (cur().type == TokenType::kName && contains(end_tags, cur().text)) return body;
        SGL_ASSIGN_OR_RETURN(StmtPtr stmt, parse_statement());
        body.push_back(std::move(stmt));
        break;
      }
      case TokenType::kEof:
        if (end_tags.size() != 0) {
          return fail("Unexpected end of template. Jinja was looking for the following tags: " +
                      quote_list(end_tags) + ".");
        }
        return body;
      default:
        return fail("unexpected '" + describe(t) + "'");
    }
  }
}

Status Parser::finish_end_tag(std::string_view end_tag) {
  if (!skip_name(end_tag)) return fail_unexpected("'" + std::string(end_tag) + "'");
  return expect_block_end();
}

Result<StmtPtr> Parser::parse_statement() {
  if (cur().type != TokenType::kName) return fail("tag name expected");
  std::string tag = cur().text;
  int line = cur().line;
  if (tag == "if") return parse_if(line);
  if (tag == "for") return parse_for(line);
  if (tag == "set") return parse_set(line);
  if (tag == "macro") return parse_macro(line);
  if (tag == "call") return parse_call_block(line);
  if (tag == "filter") return parse_filter_block(line);
  if (tag == "with") return parse_with(line);
  if (tag == "generation") return parse_scope(line, "endgeneration");
  if (tag == "block") return parse_scope(line, "endblock");
  if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) return fail("'" + tag + "' outside of a loop");
    advance();
    SGL_RETURN_IF_ERROR(expect_block_end());
    auto stmt = std::make_unique<Stmt>();
    if (tag == "break") {
      stmt->node = BreakStmt{};
    } else {
      stmt->node = ContinueStmt{};
    }
    stmt->line = line;
    return stmt;
  }
  return fail("Encountered unknown tag '" + tag + "'.");
}

Result<StmtPtr> Parser::parse_if(int line) {
  advance();  // if
  IfStmt node;
  while (true) {
    SGL_ASSIGN_OR_RETURN(ExprPtr test, parse_tuple(false, {}, false));
    SGL_RETURN_IF_ERROR(expect_block_end());
    SGL_ASSIGN_OR_RETURN(Body body, parse_body({"elif", "else", "endif"}));
    node.branches.emplace_back(std::move(test), std::move(body));
    std::string tag = cur().text;
    advance();
    if (tag == "elif") continue;
    if (tag == "else") {
      SGL_RETURN_IF_ERROR(expect_block_end());
      SGL_ASSIGN_OR_RETURN(node.else_body, parse_body({"endif"}));
      SGL_RETURN_IF_ERROR(finish_end_tag("endif"));
    } else {
      SGL_RETURN_IF_ERROR(expect_block_end());
    }
    break;
  }
  auto stmt = std::make_unique<Stmt>();
  stmt->node = std::move(node);
  stmt->line = line;
  return stmt;
}

Result<StmtPtr> Parser::parse_for(int line) {
  advance();  // for
  ForStmt node;
  SGL_ASSIGN_OR_RETURN(node.target, parse_assign_target(false, {"in"}));
  if (!skip_name("in")) return fail_unexpected("'in'");
  SGL_ASSIGN_OR_RETURN(node.iterable, parse_tuple(false, {"recursive"}, false));
  if (skip_name("if")) {
    SGL_ASSIGN_OR_RETURN(node.filter, parse_expression());
  }
  node.recursive = skip_name("recursive");
  SGL_RETURN_IF_ERROR(expect_block_end());
  ++loop_depth_;
  auto body = parse_body({"endfor", "else"});
  --loop_depth_;
  if (!body.ok()) return body.status();
  node.body = std::move(body).value();
  if (skip_name("else")) {
    SGL_RETURN_IF_ERROR(expect_block_end());
    SGL_ASSIGN_OR_RETURN(node.else_body, parse_body({"endfor"}));
  }
  SGL_RETURN_IF_ERROR(finish_end_tag("endfor"));
  auto stmt = std::make_unique<Stmt>();
  stmt->node = std::move(node);
  stmt->line = line;
  return stmt;
}

Result<StmtPtr> Parser::parse_set(int line) {
  advance();  // set
  SGL_ASSIGN_OR_RETURN(AssignTarget target, parse_assign_target(true, {}));
  auto stmt = std::make_unique<Stmt>();
  stmt->line = line;
  if (skip_op("=")) {
    SGL_ASSIGN_OR_RETURN(ExprPtr value, parse_tuple(true, {}, false));
    SGL_RETURN_IF_ERROR(expect_block_end());
    stmt->node = SetStmt{std::move(target), std::move(value)};
    return stmt;
  }
  SetBlockStmt node;
  node.target = std::move(target);
  if (at_op("|")) {
    SGL_ASSIGN_OR_RETURN(node.filter, parse_filter(nullptr, false));
  }
  SGL_RETURN_IF_ERROR(expect_block_end());
  SGL_ASSIGN_OR_RETURN(node.body, parse_body({"endset"}));
  SGL_RETURN_IF_ERROR(finish_end_tag("endset"));
  stmt->node = std::move(node);
  return stmt;
}

Result<std::vector<MacroParam>> Parser::parse_macro_params() {
  SGL_RETURN_IF_ERROR(expect_op("("));
  std::vector<MacroParam> params;
  bool has_default = false;
  while (!at_op(")")) {
    if (!params.empty()) {
      SGL_RETURN_IF_ERROR(expect_op(","));
      if (at_op(")")) break;
    }
    MacroParam param;
    SGL_ASSIGN_OR_RETURN(param.name, expect_name());
    if (skip_op("=")) {
      SGL_ASSIGN_OR_RETURN(param.default_value, parse_expression());
      has_default = true;
    } else if (has_default) {
      return fail("non-default argument follows default argument");
    }
    params.push_back(std::move(param));
  }
  advance();  // )
  return params;
}

Result<StmtPtr> Parser::parse_macro(int line) {
  advance();  // macro
  MacroStmt node;
  SGL_ASSIGN_OR_RETURN(node.name, expect_name());
  SGL_ASSIGN_OR_RETURN(node.params, parse_macro_params());
  SGL_RETURN_IF_ERROR(expect_block_end());
  int saved_loop_depth = loop_depth_;
  loop_depth_ = 0;
  auto body = parse_body({"endmacro"});
  loop_depth_ = saved_loop_depth;
  if (!body.ok()) return body.status();
  node.body = std::move(body).value();
  SGL_RETURN_IF_ERROR(finish_end_tag("endmacro"));
  auto stmt = std::make_unique<Stmt>();
  stmt->node = std::move(node);
  stmt->line = line;
  return stmt;
}

Result<StmtPtr> Parser::parse_call_block(int line) {
  advance();  // call
  CallBlockStmt node;
  if (at_op("(")) {
    SGL_ASSIGN_OR_RETURN(node.params, parse_macro_params());
  }
  SGL_ASSIGN_OR_RETURN(node.call, parse_expression());
  if (!std::holds_alternative<CallExpr>(node.call->node)) return fail("expected call");
  SGL_RETURN_IF_ERROR(expect_block_end());
  int saved_loop_depth = loop_depth_;
  loop_depth_ = 0;
  auto body = parse_body({"endcall"});
  loop_depth_ = saved_loop_depth;
  if (!body.ok()) return body.status();
  node.body = std::move(body).value();
  SGL_RETURN_IF_ERROR(finish_end_tag("endcall"));
  auto stmt = std::make_unique<Stmt>();
  stmt->node = std::move(node);
  stmt->line = line;
  return stmt;
}

Result<StmtPtr> Parser::parse_filter_block(int line) {
  advance();  // filter
  FilterBlockStmt node;
  SGL_ASSIGN_OR_RETURN(node.filter, parse_filter(nullptr, true));
  SGL_RETURN_IF_ERROR(expect_block_end());
  SGL_ASSIGN_OR_RETURN(node.body, parse_body({"endfilter"}));
  SGL_RETURN_IF_ERROR(finish_end_tag("endfilter"));
  auto stmt = std::make_unique<Stmt>();
  stmt->node = std::move(node);
  stmt->line = line;
  return stmt;
}

Result<StmtPtr> Parser::parse_with(int line) {
  advance();  // with
  WithStmt node;
  while (cur().type != TokenType::kBlockEnd) {
    if (!node.assignments.empty()) SGL_RETURN_IF_ERROR(expect_op(","));
    SGL_ASSIGN_OR_RETURN(AssignTarget target, parse_assign_target(false, {}));
    SGL_RETURN_IF_ERROR(expect_op("="));
    SGL_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
    node.assignments.emplace_back(std::move(target), std::move(value));
  }
  SGL_RETURN_IF_ERROR(expect_block_end());
  SGL_ASSIGN_OR_RETURN(node.body, parse_body({"endwith"}));
  SGL_RETURN_IF_ERROR(finish_end_tag("endwith"));
  auto stmt = std::make_unique<Stmt>();
  stmt->node = std::move(node);
  stmt->line = line;
  return stmt;
}

Result<StmtPtr> Parser::parse_scope(int line, std::string_view end_tag) {
  advance();  // generation / block
  if (end_tag == "endblock") {
    SGL_RETURN_IF_ERROR(expect_name().status());  // block name
    skip_name("scoped");
    skip_name("required");
  }
  SGL_RETURN_IF_ERROR(expect_block_end());
  ScopeStmt node;
  SGL_ASSIGN_OR_RETURN(node.body, parse_body({end_tag}));
  advance();                                                               // end tag
  if (end_tag == "endblock" && cur().type == TokenType::kName) advance();  // {% endblock name %}
  SGL_RETURN_IF_ERROR(expect_block_end());
  auto stmt = std::make_unique<Stmt>();
  stmt->node = std::move(node);
  stmt->line = line;
  return stmt;
}

Result<AssignTarget> Parser::parse_target_primary() {
  if (cur().type == TokenType::kName) {
    const std::string& n = cur().text;
    if (n == "true" || n == "false" || n == "none" || n == "True" || n == "False" || n == "None") {
      return fail("can't assign to '" + n + "'");
    }
    AssignTarget t;
    t.kind = AssignTarget::Kind::kName;
    t.name = n;
    advance();
    return t;
  }
  if (skip_op("(")) {
    AssignTarget t;
    t.kind = AssignTarget::Kind::kTuple;
    while (!at_op(")")) {
      if (!t.items.empty()) {
        SGL_RETURN_IF_ERROR(expect_op(","));
        if (at_op(")")) break;
      }
      SGL_ASSIGN_OR_RETURN(AssignTarget item, parse_target_primary());
      t.items.push_back(std::move(item));
    }
    advance();  // )
    return t;
  }
  return fail("can't assign to '" + describe(cur()) + "'");
}

Result<AssignTarget> Parser::parse_assign_target(
    bool with_namespace, std::initializer_list<std::string_view> end_names) {
  if (with_namespace && cur().type == TokenType::kName && peek().type == TokenType::kOperator &&
      peek().text == ".") {
    AssignTarget t;
    t.kind = AssignTarget::Kind::kNamespaceAttr;
    t.name = cur().text;
    advance();
    advance();  // .
    SGL_ASSIGN_OR_RETURN(t.attr, expect_name());
    return t;
  }
  std::vector<AssignTarget> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) SGL_RETURN_IF_ERROR(expect_op(","));
    if (is_tuple_end(end_names)) break;
    SGL_ASSIGN_OR_RETURN(AssignTarget item, parse_target_primary());
    items.push_back(std::move(item));
    if (at_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (items.empty()) return fail("expected an assignment target");
  if (!is_tuple) return std::move(items[0]);
  AssignTarget t;
  t.kind = AssignTarget::Kind::kTuple;
  t.items = std::move(items);
  return t;
}

bool Parser::is_tuple_end(std::initializer_list<std::string_view> end_names) const {
  const Token& t = cur();
  if (t.type == TokenType::kVariableEnd || t.type == TokenType::kBlockEnd ||
      t.type == TokenType::kEof) {
    return true;
  }
  if (t.type == TokenType::kOperator && t.text == ")") return true;
  return t.type == TokenType::kName && contains(end_names, t.text);
}

}  // namespace sgl::tokenizer::jinja
