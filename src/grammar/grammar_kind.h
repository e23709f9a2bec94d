// What a grammar's source text is (the API field it came from decides).
#pragma once

#include <cstdint>

namespace sgl::grammar {

enum class GrammarKind : uint8_t {
  kEbnf,        // source: the grammar text, root rule `root`
  kRegex,       // source: the pattern
  kJsonSchema,  // source: the schema's JSON text
  kJsonObject,  // any JSON object; source ignored
};

const char* grammar_kind_name(GrammarKind kind);

}  // namespace sgl::grammar
