// Tree-walking interpreter: executes a parsed template against a context of variables.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat_template/ast.h"
#include "tokenizer/chat_template/render_budget.h"
#include "tokenizer/chat_template/render_options.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

// One variable scope. Child scopes (loops, macros, blocks) see their parents' variables;
// assignments always go to the innermost scope, as Jinja's scoping rules require.
class Frame {
 public:
  explicit Frame(std::shared_ptr<Frame> parent) : parent_(std::move(parent)) {}
  // nullptr when no scope defines the name. The pointer is invalidated by the next set().
  const Value* lookup(const std::string& name) const;
  void set(const std::string& name, Value value) { vars_[name] = std::move(value); }

 private:
  std::shared_ptr<Frame> parent_;
  std::unordered_map<std::string, Value> vars_;
};

class Interpreter {
 public:
  // `context` holds the template variables (messages, tools, bos_token, ...).
  Interpreter(const RenderOptions& options, const DictData& context);

  Result<std::string> render(const Body& body);

  // Services for filters, tests, methods and globals.
  const RenderOptions& options() const { return options_; }
  RenderBudget& budget() { return budget_; }
  Result<Value> call(const Value& callee, const CallArgs& args);
  Result<Value> apply_filter(const std::string& name, const Value& input, const CallArgs& args);
  Result<bool> apply_test(const std::string& name, const Value& input, const CallArgs& args);
  // Jinja's sandboxed getattr (`x.name`) and getitem (`x[key]`).
  Result<Value> get_attr(const Value& obj, const std::string& name);
  Result<Value> get_item(const Value& obj, const Value& key);
  // Python list(v) (py_iterate) with the list it builds charged to the budget first.
  Result<std::vector<Value>> iterate(const Value& v);
  // Python str(v) (py_str), bounded by and charged to the budget.
  Result<std::string> str(const Value& v);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  struct MacroDef {
    std::string name;
    const std::vector<MacroParam>* params;
    const Body* body;
  };

  // Statements (interpreter.cpp).
  Result<Flow> exec_body(const Body& body);
  Result<Flow> exec(const Stmt& stmt);
  Status emit(std::string_view text);
  Status emit_value(const Value& v);  // str(v)
  Result<Flow> exec_if(const IfStmt& stmt);
  Result<Flow> exec_for(const ForStmt& stmt);
  Status run_loop(const ForStmt& stmt, const Value& iterable, int depth);
  Status exec_set(const SetStmt& stmt);
  Status exec_set_block(const SetBlockStmt& stmt);
  Status exec_call_block(const CallBlockStmt& stmt);
  Status exec_filter_block(const FilterBlockStmt& stmt);
  Result<Flow> exec_with(const WithStmt& stmt);
  Status assign(const AssignTarget& target, const Value& value);
  // Renders `body` in a child scope of the current one and returns its output.
  Result<std::string> capture(const Body& body);
  Value make_macro(const MacroDef& def);
  Result<Value> invoke_macro(const MacroDef& def, const std::shared_ptr<Frame>& closure,
                             const CallArgs& args);

  // Expressions (evaluator.cpp).
  Result<Value> eval(const Expr& expr);
  Result<Value> eval_name(const NameExpr& e);
  Result<Value> eval_getattr(const GetAttrExpr& e);
  Result<Value> eval_getitem(const GetItemExpr& e);
  Result<Value> eval_binary(const BinaryExpr& e);
  Result<Value> eval_compare(const CompareExpr& e);
  Result<Value> eval_call(const CallExpr& e, const Value* caller);
  Result<CallArgs> eval_args(const ArgsExpr& args);
  // Applies a filter chain whose innermost operand is null to `input` (filter blocks).
  Result<Value> eval_filter(const FilterExpr& e, const Value* block_input);
  Result<Value> eval_test(const TestExpr& e);
  Result<Value> eval_slice(const Value& obj, const SliceExpr& slice);

  const RenderOptions& options_;
  RenderBudget budget_;
  std::shared_ptr<Frame> frame_;
  std::string* out_ = nullptr;
  // Namespaces assigned a container (a possible reference cycle): emptied when the render ends.
  std::vector<Value> namespaces_holding_containers_;
  std::unordered_set<const void*> namespaces_seen_;
};

}  // namespace sgl::tokenizer::jinja
