// Jinja parser: turns the token stream into a statement tree (grammar as in jinja2.parser).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat_template/ast.h"
#include "tokenizer/chat_template/lexer.h"

namespace sgl::tokenizer::jinja {

// Lexes and parses a whole template. Errors are TemplateSyntaxError statuses.
Result<Body> parse_template(std::string_view source, const LexerOptions& options);

// Recursive-descent parser; statements in parser.cpp, expressions in parser_expr.cpp.
class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Result<Body> parse();

 private:
  // Token cursor.
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(size_t n = 1) const;
  void advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool at_op(std::string_view op) const;
  bool at_name(std::string_view name) const;
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view name);
  Status expect_op(std::string_view op);
  Result<std::string> expect_name();
  Status expect_block_end();
  Status fail(const std::string& message) const;
  Status fail_unexpected(std::string_view expected) const;
  std::string describe(const Token& t) const;

  // Statements.
  // Parses until a block tag whose name is in end_tags; leaves the cursor on that name.
  Result<Body> parse_body(std::initializer_list<std::string_view> end_tags);
  Result<StmtPtr> parse_statement();
  Result<StmtPtr> parse_if(int line);
  Result<StmtPtr> parse_for(int line);
  Result<StmtPtr> parse_set(int line);
  Result<StmtPtr> parse_macro(int line);
  Result<StmtPtr> parse_call_block(int line);
  Result<StmtPtr> parse_filter_block(int line);
  Result<StmtPtr> parse_with(int line);
  Result<StmtPtr> parse_scope(int line, std::string_view end_tag);
  Result<std::vector<MacroParam>> parse_macro_params();
  // Consumes `{% <end_tag> %}` after parse_body stopped on it.
  Status finish_end_tag(std::string_view end_tag);

  // Assignment targets.
  Result<AssignTarget> parse_assign_target(bool with_namespace,
                                           std::initializer_list<std::string_view> end_names);
  Result<AssignTarget> parse_target_primary();

  // Expressions.
  Result<ExprPtr> parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> end_names,
                              bool explicit_parentheses);
  Result<ExprPtr> parse_expression(bool with_condexpr = true);
  Result<ExprPtr> parse_condexpr();
  Result<ExprPtr> parse_or();
  Result<ExprPtr> parse_and();
  Result<ExprPtr> parse_not();
  Result<ExprPtr> parse_compare();
  Result<ExprPtr> parse_math1();
  Result<ExprPtr> parse_concat();
  Result<ExprPtr> parse_math2();
  Result<ExprPtr> parse_pow();
  Result<ExprPtr> parse_unary(bool with_filter);
  Result<ExprPtr> parse_primary();
  Result<ExprPtr> parse_list();
  Result<ExprPtr> parse_dict();
  Result<ExprPtr> parse_postfix(ExprPtr node);
  Result<ExprPtr> parse_filter_expr(ExprPtr node);
  Result<ExprPtr> parse_subscript(ExprPtr node);
  Result<ExprPtr> parse_subscribed();
  Result<ArgsExpr> parse_call_args();
  // `| name(args)` chain; operand may be null (filter blocks).
  Result<ExprPtr> parse_filter(ExprPtr node, bool start_inline);
  Result<ExprPtr> parse_test(ExprPtr node);
  bool is_tuple_end(std::initializer_list<std::string_view> end_names) const;

  ExprPtr make_expr(auto node, int line) {
    auto e = std::make_unique<Expr>();
    e->node = std::move(node);
    e->line = line;
    return e;
  }

  // Guards against stack exhaustion on deeply nested input (pair with leave()).
  Status enter();
  void leave() { --depth_; }

  // The nodes a loop wraps around its left operand (`a ~ b ~ c`, `x.a[0]()`, `x|f|g`,
  // `a if b if c`): each nests the tree one level deeper without recursing here, but the
  // interpreter and the tree's destructor recurse through every level. Each link counts
  // against the nesting limit until the loop's expression is complete.
  class Chain {
   public:
    explicit Chain(Parser* parser) : parser_(parser) {}
    Chain(const Chain&) = delete;
    Chain& operator=(const Chain&) = delete;
    ~Chain() { parser_->depth_ -= links_; }
    Status link() {
      SGL_RETURN_IF_ERROR(parser_->enter());
      ++links_;
      return Status::ok_status();
    }

   private:
    Parser* parser_;
    int links_ = 0;
  };

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace sgl::tokenizer::jinja
