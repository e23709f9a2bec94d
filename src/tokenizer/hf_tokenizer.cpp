// HfTokenizer: added-token splitting, the normalize/pre-tokenize/BPE pipeline, post-processing.
#include "tokenizer/hf_tokenizer.h"

#include <algorithm>
#include <unordered_map>

#include "core/logging.h"
#include "tokenizer/unicode.h"

namespace sgl::tokenizer {
namespace {

// Ids as HF's AddedVocabulary assigns them while loading: a token keeps the id its content
// already has (added earlier or in the model vocab); a new content gets the next free id.
// The file's "id" fields agree with this in every well-formed tokenizer.json.
std::vector<AddedToken> resolve_added_token_ids(std::vector<AddedToken> candidates,
                                                const BpeModel& model) {
  const auto model_size = static_cast<int64_t>(model.vocab().size());
  std::vector<AddedToken> resolved;
  std::unordered_map<std::string, int32_t> id_of_content;
  std::unordered_map<int32_t, size_t> index_of_id;
  int64_t max_added = -1;
  for (AddedToken& token : candidates) {
    if (token.content.empty()) continue;
    int32_t id;
    if (auto it = id_of_content.find(token.content); it != id_of_content.end()) {
      id = it->second;
    } else if (const std::optional<int32_t> model_id = model.token_to_id(token.content)) {
      id = *model_id;
    } else if (max_added < 0) {
      id = static_cast<int32_t>(model_size);
    } else {
      id = static_cast<int32_t>(max_added >= model_size || model_size == 0 ? max_added + 1
                                                                           : model_size);
    }
    if (token.id >= 0 && token.id != id) {
      // As the tokenizers library: the ids follow the vocabulary, whatever the file says.
      SGL_LOG_WARN << "added token '" << token.content << "' was expected to have id " << token.id
                   << " but was given id " << id;
    }
    token.id = id;
    id_of_content[token.content] = id;
    max_added = std::max<int64_t>(max_added, id);
    if (auto it = index_of_id.find(id); it != index_of_id.end()) {
      resolved[it->second] = std::move(token);  // a later registration updates the token
    } else {
      index_of_id[id] = resolved.size();
      resolved.push_back(std::move(token));
    }
  }
  return resolved;
}

}  // namespace

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::create(TokenizerSpec spec,
                                                         TokenizerConfig config) {
  if (spec.model == nullptr) return invalid_argument("tokenizer spec has no model");
  std::unique_ptr<HfTokenizer> tok(new HfTokenizer());
  const BpeModel& model = *spec.model;

  // tokenizer_config.json may declare added tokens tokenizer.json lacks, and names special
  // tokens that transformers registers as special added tokens when the vocab has them.
  // tokenizer.json stays authoritative for tokens it already has.
  std::vector<AddedToken> candidates = std::move(spec.added_tokens);
  auto known = [&](const std::string& content) {
    return std::any_of(candidates.begin(), candidates.end(),
                       [&](const AddedToken& t) { return t.content == content; });
  };
  for (AddedToken& t : config.added_tokens) {
    if (!known(t.content)) candidates.push_back(std::move(t));
  }
  config.added_tokens.clear();
  std::vector<std::string> named = config.additional_special_tokens;
  for (const auto* name :
       {&config.bos_token, &config.eos_token, &config.unk_token, &config.pad_token}) {
    if (*name) named.push_back(**name);
  }
  for (const std::string& content : named) {
    if (content.empty() || known(content) || !model.token_to_id(content)) continue;
    AddedToken token;
    token.content = content;
    token.special = true;
    token.normalized = false;
    candidates.push_back(std::move(token));
  }
  spec.added_tokens = resolve_added_token_ids(std::move(candidates), model);

  int64_t limit = model.id_limit();
  for (const AddedToken& t : spec.added_tokens) limit = std::max<int64_t>(limit, t.id + 1);
  tok->vocab_size_ = limit;
  tok->token_by_id_.assign(static_cast<size_t>(limit), nullptr);
  for (int64_t id = 0; id < model.id_limit(); ++id) {
    tok->token_by_id_[id] = model.id_to_token(static_cast<int32_t>(id));
  }
  tok->special_.assign(static_cast<size_t>(limit), 0);
  tok->added_vocabulary_.build(spec.added_tokens, spec.normalizer);
  tok->spec_ = std::move(spec);
  // NOTE: as HF (>= 0.22), a normalized added token decodes as its normalized form.
  tok->added_strings_.reserve(tok->spec_.added_tokens.size());
  for (const AddedToken& t : tok->spec_.added_tokens) {
    std::string text = t.content;
    if (t.normalized) tok->spec_.normalizer.normalize(text);
    tok->added_strings_.push_back(std::move(text));
    tok->token_by_id_[t.id] = &tok->added_strings_.back();
    tok->added_by_content_[t.content] = t.id;
  }
  // NOTE: HF skips by token string: any id whose string is a special token's content is special.
  for (const AddedToken& t : tok->spec_.added_tokens) {
    if (!t.special) continue;
    tok->special_[t.id] = 1;
    if (const std::optional<int32_t> id = model.token_to_id(t.content)) tok->special_[*id] = 1;
  }

  tok->config_ = std::move(config);
  const TokenizerConfig& cfg = tok->config_;
  if (cfg.bos_token) tok->bos_token_id_ = tok->token_to_id(*cfg.bos_token);
  if (cfg.eos_token) tok->eos_token_id_ = tok->token_to_id(*cfg.eos_token);
  if (tok->eos_token_id_) tok->eos_token_ids_.push_back(*tok->eos_token_id_);
  for (int32_t id : cfg.generation_eos_token_ids) {
    if (std::find(tok->eos_token_ids_.begin(), tok->eos_token_ids_.end(), id) ==
        tok->eos_token_ids_.end()) {
      tok->eos_token_ids_.push_back(id);
    }
  }

  // An explicit add_bos_token / add_eos_token wins over the post-processor's template.
  const std::vector<int32_t> prefix = tok->spec_.post_processor.prefix_ids();
  const std::vector<int32_t> suffix = tok->spec_.post_processor.suffix_ids();
  if (cfg.add_bos_token && tok->bos_token_id_) {
    const bool template_bos = !prefix.empty() && prefix.front() == *tok->bos_token_id_;
    tok->prepend_bos_ = *cfg.add_bos_token && !template_bos;
    tok->drop_template_bos_ = !*cfg.add_bos_token && template_bos;
  }
  if (cfg.add_eos_token && tok->eos_token_id_) {
    const bool template_eos = !suffix.empty() && suffix.back() == *tok->eos_token_id_;
    tok->append_eos_ = *cfg.add_eos_token && !template_eos;
    tok->drop_template_eos_ = !*cfg.add_eos_token && template_eos;
  }
  if (tok->spec_.post_processor.wraps_once()) {
    SpecialWrap wrap{prefix, suffix};
    if (tok->drop_template_bos_) wrap.prefix.erase(wrap.prefix.begin());
    if (tok->drop_template_eos_) wrap.suffix.pop_back();
    if (tok->prepend_bos_) wrap.prefix.insert(wrap.prefix.begin(), *tok->bos_token_id_);
    if (tok->append_eos_) wrap.suffix.push_back(*tok->eos_token_id_);
    tok->special_wrap_ = std::move(wrap);
  }
  return tok;
}

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::from_json(
    std::string_view tokenizer_json, std::string_view tokenizer_config_json) {
  SGL_ASSIGN_OR_RETURN(TokenizerSpec spec, parse_tokenizer_json(tokenizer_json, "tokenizer.json"));
  TokenizerConfig config;
  if (!tokenizer_config_json.empty()) {
    SGL_RETURN_IF_ERROR(
        parse_tokenizer_config(tokenizer_config_json, "tokenizer_config.json", config));
  }
  return create(std::move(spec), std::move(config));
}

void HfTokenizer::encode_text(std::string_view text, std::vector<int32_t>& ids) const {
  const WordSink to_ids = [&](std::string_view word) { spec_.model->tokenize(word, ids); };
  std::string normalized;
  for (const TextSegment& segment : added_vocabulary_.split(text, /*normalized=*/false)) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      continue;
    }
    std::string_view piece = text.substr(segment.begin, segment.end - segment.begin);
    if (!spec_.normalizer.empty()) {
      normalized.assign(piece);
      spec_.normalizer.normalize(normalized);
      piece = normalized;
    }
    const bool at_start = segment.begin == 0;
    for (const TextSegment& sub : added_vocabulary_.split(piece, /*normalized=*/true)) {
      if (sub.id >= 0) {
        ids.push_back(sub.id);
        continue;
      }
      spec_.pre_tokenizer.pre_tokenize(piece.substr(sub.begin, sub.end - sub.begin),
                                       at_start && sub.begin == 0, to_ids);
    }
  }
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text,
                                         const EncodeOptions& options) const {
  std::string repaired;
  if (!unicode::is_valid_utf8(text)) {
    repaired = unicode::to_valid_utf8_lossy(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  if (options.add_special_tokens && special_wrap_) {
    ids = special_wrap_->prefix;
    encode_text(text, ids);
    ids.insert(ids.end(), special_wrap_->suffix.begin(), special_wrap_->suffix.end());
    return ids;
  }
  encode_text(text, ids);
  if (!options.add_special_tokens) return ids;
  ids = spec_.post_processor.process(std::move(ids));
  if (drop_template_bos_ && !ids.empty() && ids.front() == *bos_token_id_) ids.erase(ids.begin());
  if (drop_template_eos_ && !ids.empty() && ids.back() == *eos_token_id_) ids.pop_back();
  if (prepend_bos_) ids.insert(ids.begin(), *bos_token_id_);
  if (append_eos_) ids.push_back(*eos_token_id_);
  return ids;
}

std::string HfTokenizer::decode(const std::vector<int32_t>& ids,
                                const DecodeOptions& options) const {
  if (options.spaces_between_special_tokens && !options.skip_special_tokens) {
    std::vector<std::string> parts;
    std::vector<int32_t> run;
    DecodeOptions plain = options;
    plain.spaces_between_special_tokens = false;
    auto flush = [&] {
      if (!run.empty()) parts.push_back(decode(run, plain));
      run.clear();
    };
    for (int32_t id : ids) {
      if (!is_special(id)) {
        run.push_back(id);
        continue;
      }
      flush();
      if (const std::string* token = token_string(id)) parts.push_back(*token);
    }
    flush();
    std::string text;
    for (size_t i = 0; i < parts.size(); ++i) text += (i ? " " : "") + parts[i];
    return text;
  }
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (options.skip_special_tokens && is_special(id)) continue;
    if (const std::string* token = token_string(id)) tokens.push_back(*token);
  }
  std::string text = spec_.decoder.decode(std::move(tokens));
  if (options.clean_up_tokenization_spaces) text = clean_up_tokenization(text);
  return text;
}

const std::string* HfTokenizer::token_string(int32_t id) const {
  if (id < 0 || id >= vocab_size_) return nullptr;
  return token_by_id_[id];
}

std::optional<std::string> HfTokenizer::id_to_token(int32_t id) const {
  const std::string* token = token_string(id);
  if (token == nullptr) return std::nullopt;
  return *token;
}

std::optional<std::string> HfTokenizer::token_bytes(int32_t id) const {
  const std::string* token = token_string(id);
  if (token == nullptr) return std::nullopt;
  return spec_.decoder.token_bytes(*token);
}

std::optional<int32_t> HfTokenizer::token_to_id(std::string_view token) const {
  auto it = added_by_content_.find(token);
  if (it != added_by_content_.end()) return it->second;
  return spec_.model->token_to_id(token);
}

bool HfTokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size_ && special_[id] != 0;
}

}  // namespace sgl::tokenizer
