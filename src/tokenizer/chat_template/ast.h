// Jinja template AST: expression and statement nodes produced by the parser.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class UnaryOp { kNeg, kPos, kNot };
enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kConcat, kAnd, kOr };
enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

// Arguments of a call, filter or test: `f(a, b, k=v, *args, **kwargs)`.
struct ArgsExpr {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  ExprPtr star_args;    // may be null
  ExprPtr star_kwargs;  // may be null
};

struct LiteralExpr {
  Value value;
};
struct NameExpr {
  std::string name;
};
struct ListExpr {
  std::vector<ExprPtr> items;
};
struct TupleExpr {
  std::vector<ExprPtr> items;
};
struct DictExpr {
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};
struct GetAttrExpr {
  ExprPtr object;
  std::string name;
};
struct GetItemExpr {
  ExprPtr object;
  ExprPtr index;  // a SliceExpr for `x[a:b:c]`
};
struct SliceExpr {
  ExprPtr start;  // each may be null
  ExprPtr stop;
  ExprPtr step;
};
struct UnaryExpr {
  UnaryOp op;
  ExprPtr operand;
};
struct BinaryExpr {
  BinaryOp op;
  ExprPtr left;
  ExprPtr right;
};
// Chained comparison `a < b <= c`.
struct CompareExpr {
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
};
// `then_expr if test else else_expr`; else_expr may be null (yields undefined).
struct CondExpr {
  ExprPtr test;
  ExprPtr then_expr;
  ExprPtr else_expr;
};
struct CallExpr {
  ExprPtr callee;
  ArgsExpr args;
};
// `operand | name(args)`; operand is null for the head of a filter-block / set-block chain,
// which then filters the rendered block body.
struct FilterExpr {
  ExprPtr operand;
  std::string name;
  ArgsExpr args;
};
// `operand is name(args)` (negation is a surrounding UnaryOp::kNot).
struct TestExpr {
  ExprPtr operand;
  std::string name;
  ArgsExpr args;
};

struct Expr {
  std::variant<LiteralExpr, NameExpr, ListExpr, TupleExpr, DictExpr, GetAttrExpr, GetItemExpr,
               SliceExpr, UnaryExpr, BinaryExpr, CompareExpr, CondExpr, CallExpr, FilterExpr,
               TestExpr>
      node;
  int line = 0;
};

// Assignment target of set/for/with: a name, `ns.attr`, or a (nested) tuple of targets.
struct AssignTarget {
  enum class Kind { kName, kNamespaceAttr, kTuple };
  Kind kind = Kind::kName;
  std::string name;
  std::string attr;                 // kNamespaceAttr
  std::vector<AssignTarget> items;  // kTuple
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct TextStmt {
  std::string text;
};
struct OutputStmt {
  ExprPtr expr;
};
struct IfStmt {
  std::vector<std::pair<ExprPtr, Body>> branches;  // if + elifs
  Body else_body;
};
struct ForStmt {
  AssignTarget target;
  ExprPtr iterable;
  ExprPtr filter;  // `for x in xs if cond`; may be null
  Body body;
  Body else_body;
  bool recursive = false;
};
struct SetStmt {
  AssignTarget target;
  ExprPtr value;
};
struct SetBlockStmt {
  AssignTarget target;
  ExprPtr filter;  // FilterExpr chain or null
  Body body;
};
struct MacroStmt {
  std::string name;
  std::vector<MacroParam> params;
  Body body;
};
struct CallBlockStmt {
  std::vector<MacroParam> params;  // caller(params)
  ExprPtr call;                    // a CallExpr
  Body body;
};
struct FilterBlockStmt {
  ExprPtr filter;  // FilterExpr chain
  Body body;
};
struct WithStmt {
  std::vector<std::pair<AssignTarget, ExprPtr>> assignments;
  Body body;
};
// A body rendered in its own scope: `{% generation %}` and `{% block %}`.
struct ScopeStmt {
  Body body;
};
struct BreakStmt {};
struct ContinueStmt {};

struct Stmt {
  std::variant<TextStmt, OutputStmt, IfStmt, ForStmt, SetStmt, SetBlockStmt, MacroStmt,
               CallBlockStmt, FilterBlockStmt, WithStmt, ScopeStmt, BreakStmt, ContinueStmt>
      node;
  int line = 0;
};

}  // namespace sgl::tokenizer::jinja
