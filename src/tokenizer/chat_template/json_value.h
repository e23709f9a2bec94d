// JSON <-> Value: parsing inputs (order-preserving) and Python json.dumps for `tojson`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/chat_template/value.h"

namespace sgl::tokenizer::jinja {

// Parses JSON text into a Value; object key order is preserved like a Python dict.
Result<Value> value_from_json(std::string_view json);

// Options of Python's json.dumps.
struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;          // set: pretty-print with this indent string
  std::optional<std::string> item_separator;  // default ", " (or "," when indenting)
  std::string key_separator = ": ";
  bool sort_keys = false;
  // Fails (output limit error) as soon as the text grows past this, before building more.
  size_t max_bytes = SIZE_MAX;
};

// Python's json.dumps(value, ...) byte for byte; TypeError for values JSON cannot hold
// ("Object of type generator is not JSON serializable").
Result<std::string> dump_json(const Value& value, const JsonDumpOptions& options);

}  // namespace sgl::tokenizer::jinja
