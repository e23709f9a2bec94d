// Unknown filter/test detection mirroring jinja2.compiler's soft frames.
#include "tokenizer/chat_template/name_check.h"

#include "tokenizer/chat_template/builtin_filters.h"
#include "tokenizer/chat_template/builtin_tests.h"

namespace sgl::tokenizer::jinja {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

Status unknown(const char* kind, const std::string& name, int line) {
  return invalid_argument("TemplateAssertionError: No " + std::string(kind) + " named '" + name +
                          "'. (line " + std::to_string(line) + ")");
}

// `soft` is true inside if blocks and inline ifs (Jinja's soft frames); nested scopes (loops,
// macros, blocks) start hard again.
class NameChecker {
 public:
  Status body(const Body& b, bool soft) {
    for (const StmtPtr& s : b) SGL_RETURN_IF_ERROR(stmt(*s, soft));
    return Status::ok_status();
  }

 private:
  Status opt(const ExprPtr& e, bool soft) { return e ? expr(*e, soft) : Status::ok_status(); }

  Status args(const ArgsExpr& a, bool soft) {
    for (const ExprPtr& e : a.positional) SGL_RETURN_IF_ERROR(expr(*e, soft));
    for (const auto& [k, e] : a.keyword) SGL_RETURN_IF_ERROR(expr(*e, soft));
    SGL_RETURN_IF_ERROR(opt(a.star_args, soft));
    return opt(a.star_kwargs, soft);
  }

  Status params(const std::vector<MacroParam>& ps, bool soft) {
    for (const MacroParam& p : ps) SGL_RETURN_IF_ERROR(opt(p.default_value, soft));
    return Status::ok_status();
  }

  Status expr(const Expr& e, bool soft) {
    return std::visit(Overloaded{
                          [&](const LiteralExpr&) { return Status::ok_status(); },
                          [&](const NameExpr&) { return Status::ok_status(); },
                          [&](const ListExpr& x) { return list(x.items, soft); },
                          [&](const TupleExpr& x) { return list(x.items, soft); },
                          [&](const DictExpr& x) {
                            for (const auto& [k, v] : x.items) {
                              SGL_RETURN_IF_ERROR(expr(*k, soft));
                              SGL_RETURN_IF_ERROR(expr(*v, soft));
                            }
                            return Status::ok_status();
                          },
                          [&](const GetAttrExpr& x) { return expr(*x.object, soft); },
                          [&](const GetItemExpr& x) {
                            SGL_RETURN_IF_ERROR(expr(*x.object, soft));
                            return expr(*x.index, soft);
                          },
                          [&](const SliceExpr& x) {
                            SGL_RETURN_IF_ERROR(opt(x.start, soft));
                            SGL_RETURN_IF_ERROR(opt(x.stop, soft));
                            return opt(x.step, soft);
                          },
                          [&](const UnaryExpr& x) { return expr(*x.operand, soft); },
                          [&](const BinaryExpr& x) {
                            SGL_RETURN_IF_ERROR(expr(*x.left, soft));
                            return expr(*x.right, soft);
                          },
                          [&](const CompareExpr& x) {
                            SGL_RETURN_IF_ERROR(expr(*x.first, soft));
                            for (const auto& [op, r] : x.rest) SGL_RETURN_IF_ERROR(expr(*r, soft));
                            return Status::ok_status();
                          },
                          [&](const CondExpr& x) {
                            SGL_RETURN_IF_ERROR(expr(*x.test, true));
                            SGL_RETURN_IF_ERROR(expr(*x.then_expr, true));
                            return opt(x.else_expr, true);
                          },
                          [&](const CallExpr& x) {
                            SGL_RETURN_IF_ERROR(expr(*x.callee, soft));
                            return args(x.args, soft);
                          },
                          [&](const FilterExpr& x) {
                            if (!soft && find_filter(x.name) == nullptr)
                              return unknown("filter", x.name, e.line);
                            SGL_RETURN_IF_ERROR(opt(x.operand, soft));
                            return args(x.args, soft);
                          },
                          [&](const TestExpr& x) {
                            if (!soft && find_test(x.name) == nullptr)
                              return unknown("test", x.name, e.line);
                            SGL_RETURN_IF_ERROR(expr(*x.operand, soft));
                            return args(x.args, soft);
                          },
                      },
                      e.node);
  }

  Status list(const std::vector<ExprPtr>& items, bool soft) {
    for (const ExprPtr& e : items) SGL_RETURN_IF_ERROR(expr(*e, soft));
    return Status::ok_status();
  }

  Status stmt(const Stmt& s, bool soft) {
    return std::visit(Overloaded{
                          [&](const TextStmt&) { return Status::ok_status(); },
                          [&](const OutputStmt& x) { return expr(*x.expr, soft); },
                          [&](const IfStmt& x) {
                            for (const auto& [test, b] : x.branches) {
                              SGL_RETURN_IF_ERROR(expr(*test, true));
                              SGL_RETURN_IF_ERROR(body(b, true));
                            }
                            return body(x.else_body, true);
                          },
                          [&](const ForStmt& x) {
                            SGL_RETURN_IF_ERROR(expr(*x.iterable, soft));
                            SGL_RETURN_IF_ERROR(opt(x.filter, false));
                            SGL_RETURN_IF_ERROR(body(x.body, false));
                            return body(x.else_body, false);
                          },
                          [&](const SetStmt& x) { return expr(*x.value, soft); },
                          [&](const SetBlockStmt& x) {
                            SGL_RETURN_IF_ERROR(opt(x.filter, false));
                            return body(x.body, false);
                          },
                          [&](const MacroStmt& x) {
                            SGL_RETURN_IF_ERROR(params(x.params, false));
                            return body(x.body, false);
                          },
                          [&](const CallBlockStmt& x) {
                            SGL_RETURN_IF_ERROR(params(x.params, false));
                            SGL_RETURN_IF_ERROR(expr(*x.call, soft));
                            return body(x.body, false);
                          },
                          [&](const FilterBlockStmt& x) {
                            SGL_RETURN_IF_ERROR(expr(*x.filter, false));
                            return body(x.body, false);
                          },
                          [&](const WithStmt& x) {
                            for (const auto& [t, v] : x.assignments)
                              SGL_RETURN_IF_ERROR(expr(*v, soft));
                            return body(x.body, false);
                          },
                          [&](const ScopeStmt& x) { return body(x.body, false); },
                          [&](const BreakStmt&) { return Status::ok_status(); },
                          [&](const ContinueStmt&) { return Status::ok_status(); },
                      },
                      s.node);
  }
};

}  // namespace

Status check_names(const Body& body) { return NameChecker().body(body, false); }

}  // namespace sgl::tokenizer::jinja
