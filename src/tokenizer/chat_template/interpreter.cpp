// Interpreter: scopes, statements, loops, macros and output.
#include "tokenizer/chat_template/interpreter.h"

#include <optional>

#include "tokenizer/chat_template/errors.h"
#include "tokenizer/chat_template/utf8.h"
#include "tokenizer/chat_template/value_format.h"
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

const Value* Frame::lookup(const std::string& name) const {
  for (const Frame* f = this; f != nullptr; f = f->parent_.get()) {
    auto it = f->vars_.find(name);
    if (it != f->vars_.end()) return &it->second;
  }
  return nullptr;
}

Interpreter::Interpreter(const RenderOptions& options, const DictData& context)
    : options_(options), budget_(options), frame_(std::make_shared<Frame>(nullptr)) {
  for (const auto& [key, value] : context.entries()) {
    if (key.is_string()) frame_->set(key.as_string(), value);
  }
}

Result<std::string> Interpreter::render(const Body& body) {
  SGL_RETURN_IF_ERROR(budget_.start(__builtin_frame_address(0)));
  std::string out;
  out_ = &out;
  auto flow = exec_body(body);
  out_ = nullptr;
  // NOTE: `{% set ns.me = ns %}` makes a reference cycle that would outlive the render (with
  // whatever else the namespace holds); emptying such namespaces breaks every cycle.
  for (const Value& ns : namespaces_holding_containers_) ns.object_data().attrs.clear();
  namespaces_holding_containers_.clear();
  if (!flow.ok()) return flow.status();
  return out;
}

Result<std::vector<Value>> Interpreter::iterate(const Value& v) {
  if (v.is_string()) {
    // A list of one-character strings: the list's values, then each string's allocations.
    const std::string& s = v.as_string();
    SGL_RETURN_IF_ERROR(budget_.charge(s.size()));
    size_t n = utf8_length(s);
    SGL_RETURN_IF_ERROR(budget_.allocate_values(n));
    SGL_RETURN_IF_ERROR(budget_.charge(n * (RenderBudget::kStringValueBytes - sizeof(Value))));
  } else if (v.is_sequence() || v.is_iterator()) {
    SGL_RETURN_IF_ERROR(budget_.allocate_values(v.items().size()));
  } else if (v.is_dict()) {
    SGL_RETURN_IF_ERROR(budget_.allocate_values(v.dict_data().size()));
  }
  return py_iterate(v);
}

Result<std::string> Interpreter::str(const Value& v) {
  if (v.is_string()) {
    SGL_RETURN_IF_ERROR(budget_.allocate(v.as_string().size()));
    return v.as_string();
  }
  std::string s = py_str(v, options_.max_output_bytes);
  SGL_RETURN_IF_ERROR(budget_.allocate(s.size()));
  return s;
}

Status Interpreter::emit(std::string_view text) {
  SGL_RETURN_IF_ERROR(budget_.check_size(out_->size() + text.size()));
  SGL_RETURN_IF_ERROR(budget_.charge(text.size()));
  out_->append(text);
  return Status::ok_status();
}

Status Interpreter::emit_value(const Value& v) {
  if (v.is_string()) return emit(v.as_string());
  SGL_ASSIGN_OR_RETURN(std::string text, str(v));
  return emit(text);
}

Result<Interpreter::Flow> Interpreter::exec_body(const Body& body) {
  for (const StmtPtr& stmt : body) {
    SGL_ASSIGN_OR_RETURN(Flow flow, exec(*stmt));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Result<Interpreter::Flow> Interpreter::exec(const Stmt& stmt) {
  SGL_RETURN_IF_ERROR(budget_.step());
  auto done = [](Status s) -> Result<Flow> {
    if (!s.ok()) return s;
    return Flow::kNormal;
  };
  return std::visit(
      Overloaded{
          [&](const TextStmt& s) -> Result<Flow> { return done(emit(s.text)); },
          [&](const OutputStmt& s) -> Result<Flow> {
            SGL_ASSIGN_OR_RETURN(Value v, eval(*s.expr));
            return done(emit_value(v));
          },
          [&](const IfStmt& s) -> Result<Flow> { return exec_if(s); },
          [&](const ForStmt& s) -> Result<Flow> { return exec_for(s); },
          [&](const SetStmt& s) -> Result<Flow> { return done(exec_set(s)); },
          [&](const SetBlockStmt& s) -> Result<Flow> { return done(exec_set_block(s)); },
          [&](const MacroStmt& s) -> Result<Flow> {
            frame_->set(s.name, make_macro(MacroDef{s.name, &s.params, &s.body}));
            return Flow::kNormal;
          },
          [&](const CallBlockStmt& s) -> Result<Flow> { return done(exec_call_block(s)); },
          [&](const FilterBlockStmt& s) -> Result<Flow> { return done(exec_filter_block(s)); },
          [&](const WithStmt& s) -> Result<Flow> { return exec_with(s); },
          [&](const ScopeStmt& s) -> Result<Flow> {
            auto saved = frame_;
            frame_ = std::make_shared<Frame>(saved);
            auto flow = exec_body(s.body);
            frame_ = saved;
            return flow;
          },
          [&](const BreakStmt&) -> Result<Flow> { return Flow::kBreak; },
          [&](const ContinueStmt&) -> Result<Flow> { return Flow::kContinue; },
      },
      stmt.node);
}

Result<Interpreter::Flow> Interpreter::exec_if(const IfStmt& stmt) {
  for (const auto& [test, body] : stmt.branches) {
    SGL_ASSIGN_OR_RETURN(Value v, eval(*test));
    if (v.truthy()) return exec_body(body);
  }
  return exec_body(stmt.else_body);
}

Result<Interpreter::Flow> Interpreter::exec_for(const ForStmt& stmt) {
  SGL_ASSIGN_OR_RETURN(Value iterable, eval(*stmt.iterable));
  SGL_RETURN_IF_ERROR(run_loop(stmt, iterable, 0));
  return Flow::kNormal;
}

Status Interpreter::run_loop(const ForStmt& stmt, const Value& iterable, int depth) {
  SGL_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(iterable));
  std::shared_ptr<Frame> outer = frame_;
  frame_ = std::make_shared<Frame>(outer);
  struct Restore {
    Interpreter* self;
    std::shared_ptr<Frame> frame;
    ~Restore() { self->frame_ = std::move(frame); }
  } restore{this, outer};

  if (stmt.filter) {
    std::vector<Value> kept;
    for (Value& item : items) {
      SGL_RETURN_IF_ERROR(budget_.count_iterations(1));
      SGL_RETURN_IF_ERROR(assign(stmt.target, item));
      SGL_ASSIGN_OR_RETURN(Value keep, eval(*stmt.filter));
      if (keep.truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(stmt.else_body).status();

  const size_t n = items.size();
  auto last_changed = std::make_shared<std::optional<std::vector<Value>>>();
  // NOTE: `loop.changed(loop)` stores the loop object in state its own method holds: a
  // reference cycle that would leak (with whatever else was passed) unless cleared at the end.
  struct ForgetChanged {
    std::shared_ptr<std::optional<std::vector<Value>>> state;
    ~ForgetChanged() { state->reset(); }
  } forget_changed{last_changed};
  std::weak_ptr<Frame> weak_outer = outer;
  const ForStmt* stmt_ptr = &stmt;
  for (size_t i = 0; i < n; ++i) {
    SGL_RETURN_IF_ERROR(budget_.count_iterations(1));
    SGL_RETURN_IF_ERROR(budget_.charge(RenderBudget::kIterationBytes));
    auto loop = std::make_shared<ObjectData>();
    loop->type_name = "jinja2.runtime.LoopContext";
    DictData& a = loop->attrs;
    auto idx = static_cast<int64_t>(i);
    auto len = static_cast<int64_t>(n);
    a.set("index", Value(idx + 1));
    a.set("index0", Value(idx));
    a.set("revindex", Value(len - idx));
    a.set("revindex0", Value(len - idx - 1));
    a.set("first", Value(i == 0));
    a.set("last", Value(i + 1 == n));
    a.set("length", Value(len));
    a.set("depth", Value(depth + 1));
    a.set("depth0", Value(depth));
    a.set("previtem", i > 0 ? items[i - 1] : undefined_hint("there is no previous item"));
    a.set("nextitem", i + 1 < n ? items[i + 1] : undefined_hint("there is no next item"));
    a.set("cycle",
          Value::callable("cycle", [idx](Interpreter&, const CallArgs& args) -> Result<Value> {
            if (args.positional.empty()) return type_error("no items for cycling given");
            return args.positional[static_cast<size_t>(idx) % args.positional.size()];
          }));
    a.set("changed", Value::callable("changed",
                                     [last_changed](Interpreter& interp,
                                                    const CallArgs& args) -> Result<Value> {
                                       for (const Value& arg : args.positional) {
                                         SGL_RETURN_IF_ERROR(interp.budget().charge_walk(arg));
                                       }
                                       bool changed = true;
                                       if (last_changed->has_value()) {
                                         const auto& prev = **last_changed;
                                         changed = prev.size() != args.positional.size();
                                         for (size_t k = 0; !changed && k < prev.size(); ++k) {
                                           changed = !py_equal(prev[k], args.positional[k]);
                                         }
                                       }
                                       if (changed) *last_changed = args.positional;
                                       return Value(changed);
                                     }));
    if (stmt.recursive) {
      loop->call = [stmt_ptr, weak_outer, depth](Interpreter& interp,
                                                 const CallArgs& args) -> Result<Value> {
        if (args.positional.size() != 1 || !args.keyword.empty()) {
          return type_error("loop() takes exactly one argument");
        }
        std::shared_ptr<Frame> frame = weak_outer.lock();
        if (!frame) return runtime_error("recursive loop called outside of its scope");
        SGL_RETURN_IF_ERROR(interp.budget_.enter_call());
        std::string buffer;
        std::string* saved_out = interp.out_;
        std::shared_ptr<Frame> saved_frame = interp.frame_;
        interp.out_ = &buffer;
        interp.frame_ = frame;
        Status s = interp.run_loop(*stmt_ptr, args.positional[0], depth + 1);
        interp.out_ = saved_out;
        interp.frame_ = saved_frame;
        interp.budget_.leave_call();
        SGL_RETURN_IF_ERROR(s);
        return Value(std::move(buffer));
      };
    }
    // NOTE: every iteration gets a fresh scope: Jinja re-reads outer variables at the top of
    // each iteration, so `{% set x = x + i %}` inside a loop never accumulates.
    frame_ = std::make_shared<Frame>(outer);
    frame_->set("loop", Value::object(std::move(loop)));
    SGL_RETURN_IF_ERROR(assign(stmt.target, items[i]));
    SGL_ASSIGN_OR_RETURN(Flow flow, exec_body(stmt.body));
    if (flow == Flow::kBreak) break;
  }
  return Status::ok_status();
}

Status Interpreter::assign(const AssignTarget& target, const Value& value) {
  switch (target.kind) {
    case AssignTarget::Kind::kName:
      frame_->set(target.name, value);
      return Status::ok_status();
    case AssignTarget::Kind::kNamespaceAttr: {
      const Value* ns = frame_->lookup(target.name);
      if (ns == nullptr || !ns->is_object() || !ns->object_data().assignable) {
        return runtime_error("cannot assign attribute on non-namespace object");
      }
      bool scalar =
          value.is_none() || value.is_undefined() || value.is_number() || value.is_string();
      if (!scalar && namespaces_seen_.insert(ns->identity()).second) {
        namespaces_holding_containers_.push_back(*ns);
      }
      ns->object_data().attrs.set(target.attr, value);
      return Status::ok_status();
    }
    case AssignTarget::Kind::kTuple: {
      if (value.is_undefined()) return undefined_error(value);
      SGL_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
      size_t expected = target.items.size();
      if (items.size() > expected) {
        return value_error("too many values to unpack (expected " + std::to_string(expected) + ")");
      }
      if (items.size() < expected) {
        return value_error("not enough values to unpack (expected " + std::to_string(expected) +
                           ", got " + std::to_string(items.size()) + ")");
      }
      for (size_t i = 0; i < expected; ++i) SGL_RETURN_IF_ERROR(assign(target.items[i], items[i]));
      return Status::ok_status();
    }
  }
  return Status::ok_status();
}

Status Interpreter::exec_set(const SetStmt& stmt) {
  SGL_ASSIGN_OR_RETURN(Value v, eval(*stmt.value));
  return assign(stmt.target, v);
}

Result<std::string> Interpreter::capture(const Body& body) {
  std::string buffer;
  std::string* saved_out = out_;
  std::shared_ptr<Frame> saved_frame = frame_;
  out_ = &buffer;
  frame_ = std::make_shared<Frame>(saved_frame);
  auto flow = exec_body(body);
  out_ = saved_out;
  frame_ = saved_frame;
  if (!flow.ok()) return flow.status();
  return buffer;
}

Status Interpreter::exec_set_block(const SetBlockStmt& stmt) {
  SGL_ASSIGN_OR_RETURN(std::string text, capture(stmt.body));
  Value v(std::move(text));
  if (stmt.filter) {
    SGL_ASSIGN_OR_RETURN(v, eval_filter(std::get<FilterExpr>(stmt.filter->node), &v));
  }
  return assign(stmt.target, v);
}

Status Interpreter::exec_filter_block(const FilterBlockStmt& stmt) {
  SGL_ASSIGN_OR_RETURN(std::string text, capture(stmt.body));
  Value input(std::move(text));
  SGL_ASSIGN_OR_RETURN(Value v, eval_filter(std::get<FilterExpr>(stmt.filter->node), &input));
  return emit_value(v);
}

Status Interpreter::exec_call_block(const CallBlockStmt& stmt) {
  Value caller = make_macro(MacroDef{"caller", &stmt.params, &stmt.body});
  SGL_ASSIGN_OR_RETURN(Value v, eval_call(std::get<CallExpr>(stmt.call->node), &caller));
  return emit_value(v);
}

Result<Interpreter::Flow> Interpreter::exec_with(const WithStmt& stmt) {
  std::vector<Value> values;
  for (const auto& [target, expr] : stmt.assignments) {
    SGL_ASSIGN_OR_RETURN(Value v, eval(*expr));
    values.push_back(std::move(v));
  }
  std::shared_ptr<Frame> saved = frame_;
  frame_ = std::make_shared<Frame>(saved);
  Status s;
  for (size_t i = 0; i < values.size() && s.ok(); ++i)
    s = assign(stmt.assignments[i].first, values[i]);
  Result<Flow> flow = s.ok() ? exec_body(stmt.body) : Result<Flow>(s);
  frame_ = saved;
  return flow;
}

Value Interpreter::make_macro(const MacroDef& def) {
  std::weak_ptr<Frame> closure = frame_;
  return Value::callable(
      def.name, [def, closure](Interpreter& interp, const CallArgs& args) -> Result<Value> {
        std::shared_ptr<Frame> frame = closure.lock();
        if (!frame) return runtime_error("macro '" + def.name + "' called outside of its scope");
        return interp.invoke_macro(def, frame, args);
      });
}

Result<Value> Interpreter::invoke_macro(const MacroDef& def, const std::shared_ptr<Frame>& closure,
                                        const CallArgs& args) {
  SGL_RETURN_IF_ERROR(budget_.enter_call());
  std::string buffer;
  std::string* saved_out = out_;
  std::shared_ptr<Frame> saved_frame = frame_;
  struct Restore {
    Interpreter* self;
    std::string* out;
    std::shared_ptr<Frame> frame;
    ~Restore() {
      self->out_ = out;
      self->frame_ = std::move(frame);
      self->budget_.leave_call();
    }
  } restore{this, saved_out, saved_frame};
  frame_ = std::make_shared<Frame>(closure);
  out_ = &buffer;

  const std::vector<MacroParam>& params = *def.params;
  std::vector<bool> bound(params.size(), false);
  std::vector<Value> varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < params.size()) {
      frame_->set(params[i].name, args.positional[i]);
      bound[i] = true;
    } else {
      varargs.push_back(args.positional[i]);
    }
  }
  DictData kwargs;
  for (const auto& [name, value] : args.keyword) {
    bool matched = false;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].name != name) continue;
      if (bound[i]) {
        return type_error("macro '" + def.name + "' got multiple values for argument '" + name +
                          "'");
      }
      frame_->set(name, value);
      bound[i] = true;
      matched = true;
      break;
    }
    if (matched) continue;
    if (name == "caller") {
      frame_->set("caller", value);
    } else {
      kwargs.set(name, value);
    }
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (bound[i]) continue;
    if (params[i].default_value) {
      SGL_ASSIGN_OR_RETURN(Value v, eval(*params[i].default_value));
      frame_->set(params[i].name, std::move(v));
    } else {
      frame_->set(params[i].name,
                  undefined_hint("parameter " + string_repr(params[i].name) + " was not provided"));
    }
  }
  frame_->set("varargs", Value::tuple(std::move(varargs)));
  frame_->set("kwargs", Value::dict(std::move(kwargs)));
  SGL_RETURN_IF_ERROR(exec_body(*def.body).status());
  return Value(std::move(buffer));
}

}  // namespace sgl::tokenizer::jinja
