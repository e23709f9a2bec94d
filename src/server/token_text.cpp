// token_text: a token's piece as it reads in context.
#include "server/token_text.h"

#include <algorithm>
#include <vector>

namespace sgl::server {

std::string token_text(const tokenizer::Tokenizer& tokenizer, std::span<const int32_t> context,
                       int32_t id) {
  tokenizer::DecodeOptions options;
  options.skip_special_tokens = false;
  const size_t n = std::min(context.size(), kTokenTextContext);
  std::vector<int32_t> ids(context.end() - static_cast<std::ptrdiff_t>(n), context.end());
  const std::string before = n ? tokenizer.decode(ids, options) : std::string();
  ids.push_back(id);
  std::string with = tokenizer.decode(ids, options);
  if (n == 0) return with;
  if (with.compare(0, before.size(), before) == 0) return with.substr(before.size());
  return tokenizer.decode({id}, options);
}

}  // namespace sgl::server
