// GrammarBackend: the served vocabulary as bytes, and compilation with field-named errors.
#include "server/grammar_backend.h"

#include <chrono>

#include "core/logging.h"

namespace sgl::server {

Result<grammar::TokenizerInfo> grammar_tokenizer_info(const tokenizer::Tokenizer& tokenizer,
                                                      int64_t vocab_size,
                                                      const std::vector<int32_t>& stop_ids) {
  // The model's rows past the tokenizer's ids are never allowed; tokenizer ids past the model's
  // rows (a mismatched tokenizer, warned about at start) cannot be sampled at all.
  const int64_t n = std::min<int64_t>(tokenizer.vocab_size(), vocab_size);
  std::vector<std::string> tokens(static_cast<size_t>(n));
  std::vector<int32_t> stops, specials;
  for (int32_t id : stop_ids) {
    if (id >= 0 && id < n) stops.push_back(id);
  }
  for (int32_t id = 0; id < n; ++id) {
    if (tokenizer.is_special(id)) {
      specials.push_back(id);
      continue;
    }
    if (std::optional<std::string> bytes = tokenizer.token_bytes(id))
      tokens[id] = std::move(*bytes);
  }
  return grammar::TokenizerInfo::create(std::move(tokens), static_cast<int32_t>(vocab_size),
                                        std::move(stops), std::move(specials));
}

GrammarBackend::GrammarBackend(const tokenizer::Tokenizer& tokenizer, int64_t vocab_size,
                               std::vector<int32_t> stop_ids, grammar::JsonSchemaOptions json,
                               std::string refusal)
    : tokenizer_(tokenizer),
      vocab_size_(vocab_size),
      stop_ids_(std::move(stop_ids)),
      json_(std::move(json)),
      refusal_(std::move(refusal)) {}

GrammarBackend::~GrammarBackend() = default;

Status GrammarBackend::init() const {
  const auto start = std::chrono::steady_clock::now();
  auto info = grammar_tokenizer_info(tokenizer_, vocab_size_, stop_ids_);
  if (!info.ok()) {
    return internal_error("structured output is unavailable: " + info.status().message());
  }
  grammar::GrammarCompilerOptions options;
  options.json = json_;
  compiler_ = std::make_unique<grammar::GrammarCompiler>(
      std::make_shared<const grammar::TokenizerInfo>(std::move(info).value()), std::move(options));
  SGL_LOG_INFO
      << "structured output: the vocabulary's " << vocab_size_ << " tokens indexed for grammars in "
      << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()
      << " ms";
  return Status::ok_status();
}

Result<std::shared_ptr<const grammar::CompiledGrammar>> GrammarBackend::compile(
    const GrammarInput& input) const {
  if (!refusal_.empty()) return invalid_argument("'" + input.field + "': " + refusal_);
  std::call_once(init_once_, [this] { init_status_ = init(); });
  SGL_RETURN_IF_ERROR(init_status_);
  auto compiled = compiler_->compile(input.kind, input.source);
  if (!compiled.ok()) {
    return invalid_argument("'" + input.field + "': invalid " +
                            grammar::grammar_kind_name(input.kind) + ": " +
                            compiled.status().message());
  }
  return compiled;
}

}  // namespace sgl::server
