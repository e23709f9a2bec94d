// IdsOnlyTokenizer: what a server started with --skip-tokenizer-init holds in the tokenizer's
// place (SGLang's flag: clients send and receive token ids; no tokenizer is loaded). It knows the
// model's BOS and EOS ids and nothing of text: it encodes to no ids, decodes to "", and maps no
// token to a string. The server refuses text before it could reach it (the text routes, text
// prompts, stop strings, grammars, text in logprobs), so these answers never shape a reply.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace sgl::tokenizer {

class IdsOnlyTokenizer final : public Tokenizer {
 public:
  IdsOnlyTokenizer(std::optional<int32_t> bos_token_id, std::vector<int32_t> eos_token_ids)
      : bos_token_id_(bos_token_id), eos_token_ids_(std::move(eos_token_ids)) {}

  std::vector<int32_t> encode(std::string_view, const EncodeOptions&) const override { return {}; }
  std::string decode(const std::vector<int32_t>&, const DecodeOptions&) const override {
    return {};
  }
  int64_t vocab_size() const override { return 0; }  // no vocabulary: the model's bounds ids
  std::optional<std::string> id_to_token(int32_t) const override { return std::nullopt; }
  std::optional<int32_t> token_to_id(std::string_view) const override { return std::nullopt; }
  std::optional<std::string> token_bytes(int32_t) const override { return std::nullopt; }
  bool is_special(int32_t) const override { return false; }
  std::optional<int32_t> bos_token_id() const override { return bos_token_id_; }
  std::vector<int32_t> eos_token_ids() const override { return eos_token_ids_; }
  const std::string& chat_template() const override { return no_template_; }
  std::optional<std::string> bos_token() const override { return std::nullopt; }
  std::optional<std::string> eos_token() const override { return std::nullopt; }

 private:
  std::optional<int32_t> bos_token_id_;
  std::vector<int32_t> eos_token_ids_;
  std::string no_template_;
};

}  // namespace sgl::tokenizer
