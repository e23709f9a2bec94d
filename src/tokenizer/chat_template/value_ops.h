// Python semantics of operators on values: arithmetic, comparison, membership, iteration, len.
#pragma once

#include <cstddef>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat_template/ast.h"
#include "tokenizer/chat_template/render_budget.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

// Arithmetic and `~` (not and/or, which short-circuit in the evaluator). Strings and lists it
// builds are sized and charged to `budget` first.
Result<Value> binary_op(BinaryOp op, const Value& a, const Value& b, RenderBudget& budget);
Result<Value> unary_op(UnaryOp op, const Value& v);  // kNeg / kPos
Result<bool> compare_op(CompareOp op, const Value& a, const Value& b);
// Ordering for <, sort, min/max: -1, 0 or 1; TypeError (naming `op`) for unorderable types.
Result<int> py_compare(const Value& a, const Value& b, const char* op = "<");
// Python `item in container`.
Result<bool> py_contains(const Value& container, const Value& item);
// Python list(v): strings yield characters, dicts their keys; undefined yields nothing.
// NOTE: generators are single-pass; iterating one consumes it as Python does.
Result<std::vector<Value>> py_iterate(const Value& v);
// Arguments of `markup % args` / `markup.format(...)`: non-numbers become escaped Markup.
Result<Value> escape_format_args(const Value& args, RenderBudget& budget);
// Python len(v); undefined has length 0.
Result<int64_t> py_len(const Value& v);

}  // namespace sgl::tokenizer::jinja
