// check_json_nesting.
#include "core/json_nesting.h"

#include <string>

namespace sgl {

Status check_json_nesting(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return invalid_argument("the JSON nests deeper than " + std::to_string(max_depth));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return Status::ok_status();
}

}  // namespace sgl
