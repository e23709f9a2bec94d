// GGUF tokenizer metadata -> a synthesized tokenizer.json document -> HfTokenizer.
#include "tokenizer/gguf_tokenizer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <vector>

#include "model/config_bounds.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer_config.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/unicode.h"

namespace sgl::tokenizer {
namespace {

using Json = nlohmann::json;

// llama.cpp's token types (tokenizer.ggml.token_type).
constexpr int64_t kTypeUnknown = 2;
constexpr int64_t kTypeControl = 3;
constexpr int64_t kTypeUserDefined = 4;

// HF's Llama-3 and Qwen2 split patterns (their tokenizer.json pre_tokenizer Split regexes).
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

Json byte_level_pre(bool use_regex) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", true},
          {"use_regex", use_regex}};
}

Json split_then_byte_level(const char* pattern) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern", {{"Regex", pattern}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            byte_level_pre(false)}}};
}

// Code points of UTF-8 `s` (invalid bytes count one each, as decode_utf8 consumes them).
std::vector<size_t> codepoint_offsets(const std::string& s) {
  std::vector<size_t> offsets;
  size_t pos = 0;
  while (pos < s.size()) {
    offsets.push_back(pos);
    unicode::decode_utf8(s, pos);
  }
  offsets.push_back(s.size());
  return offsets;
}

// transformers' generate_merges(vocab, scores): every split of every token into two vocab
// tokens, each token's splits ordered by the pieces' ids, then all of them stably sorted by
// (score, left length, right length) descending (lengths in code points).
Json merges_from_scores(const std::vector<std::string>& tokens, const std::vector<double>& scores,
                        const std::unordered_map<std::string, int32_t>& vocab) {
  struct Merge {
    double score;
    size_t left_len;
    size_t right_len;
    std::string left;
    std::string right;
  };
  std::vector<Merge> merges;
  for (size_t id = 0; id < tokens.size(); ++id) {
    const std::string& token = tokens[id];
    if (vocab.at(token) != static_cast<int32_t>(id)) continue;  // a duplicate spelling
    const std::vector<size_t> cps = codepoint_offsets(token);
    const size_t n = cps.size() - 1;
    struct Local {
      int32_t left_id, right_id;
      size_t split;
    };
    std::vector<Local> local;
    for (size_t i = 1; i < n; ++i) {
      auto l = vocab.find(token.substr(0, cps[i]));
      if (l == vocab.end()) continue;
      auto r = vocab.find(token.substr(cps[i]));
      if (r == vocab.end()) continue;
      local.push_back({l->second, r->second, i});
    }
    std::stable_sort(local.begin(), local.end(), [](const Local& a, const Local& b) {
      return a.left_id != b.left_id ? a.left_id < b.left_id : a.right_id < b.right_id;
    });
    for (const Local& m : local) {
      merges.push_back({scores[id], m.split, n - m.split, token.substr(0, cps[m.split]),
                        token.substr(cps[m.split])});
    }
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.left_len != b.left_len) return a.left_len > b.left_len;
    return a.right_len > b.right_len;
  });
  Json out = Json::array();
  for (Merge& m : merges) out.push_back(Json::array({std::move(m.left), std::move(m.right)}));
  return out;
}

// A vocabulary (or merge list) longer than any model's is refused before it is copied: each
// entry costs far more in the tokenizer's tables than in the file.
Status check_count(const model::GgufMetadata& md, const char* key, const std::string& source) {
  SGL_ASSIGN_OR_RETURN(const size_t n, md.get_array_size(key));
  if (n > static_cast<size_t>(model::ConfigBounds::kMaxVocabSize)) {
    return data_loss(source + ": " + key + " has " + std::to_string(n) +
                     " entries, above the supported maximum " +
                     std::to_string(model::ConfigBounds::kMaxVocabSize));
  }
  return Status::ok_status();
}

// merges_from_scores tries every split of every token: work grows with the square of each
// token's length. Real vocabularies need ~1e7 steps (sum of squared token bytes: Llama 2's 32k
// tokens 1.6e6, Qwen3's 151k 1.9e7); a hostile one with huge tokens would take hours, and the
// merges it derives (up to one per step, each holding its halves) gigabytes, so the work is
// bounded up front, at over ten times that.
Status check_merge_work(const std::vector<std::string>& tokens, const std::string& source) {
  constexpr uint64_t kMaxWork = uint64_t{1} << 28;
  uint64_t work = 0;
  for (const std::string& token : tokens) {
    work += static_cast<uint64_t>(token.size()) * token.size();
    if (work > kMaxWork) {
      return data_loss(source + ": tokenizer.ggml.tokens: deriving sentencepiece merges from " +
                       "tokens this long (token '" + token.substr(0, 32) + "...' has " +
                       std::to_string(token.size()) + " bytes) exceeds the work limit");
    }
  }
  return Status::ok_status();
}

struct Metadata {
  const model::GgufMetadata& md;
  const std::string& source;

  Result<std::optional<int64_t>> optional_int(std::string_view key) const {
    if (!md.has(key)) return std::optional<int64_t>();
    SGL_ASSIGN_OR_RETURN(const int64_t v, md.get_int(key));
    return std::optional<int64_t>(v);
  }
  Result<std::optional<bool>> optional_bool(std::string_view key) const {
    if (!md.has(key)) return std::optional<bool>();
    SGL_ASSIGN_OR_RETURN(const bool v, md.get_bool(key));
    return std::optional<bool>(v);
  }
  // The token string of the id stored at `key`, when present and in range.
  Result<std::optional<std::string>> token_at(std::string_view key,
                                              const std::vector<std::string>& tokens) const {
    SGL_ASSIGN_OR_RETURN(const std::optional<int64_t> id, optional_int(key));
    if (!id) return std::optional<std::string>();
    if (*id < 0 || *id >= static_cast<int64_t>(tokens.size())) {
      return data_loss(source + ": " + std::string(key) + " = " + std::to_string(*id) +
                       " is outside the " + std::to_string(tokens.size()) + "-token vocab");
    }
    return std::optional<std::string>(tokens[*id]);
  }
};

Result<Json> pre_tokenizer_for(const std::string& pre, const std::string& source) {
  if (pre == "smollm") {
    // HF SmolLM2's tokenizer.json: individual digits, then GPT-2's byte-level regex split.
    return Json{{"type", "Sequence"},
                {"pretokenizers",
                 {{{"type", "Digits"}, {"individual_digits", true}}, byte_level_pre(true)}}};
  }
  if (pre == "gpt-2" || pre == "default") return byte_level_pre(true);
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {
    return split_then_byte_level(kLlama3Pattern);
  }
  if (pre == "qwen2" || pre == "deepseek-r1-qwen") return split_then_byte_level(kQwen2Pattern);
  return unimplemented(source + ": tokenizer.ggml.pre '" + pre +
                       "' is not supported (supported: smollm, gpt-2, default, llama-bpe, "
                       "llama3, llama-v3, qwen2, deepseek-r1-qwen)");
}

Json template_processor(const std::optional<std::string>& bos,
                        const std::optional<std::string>& eos, const Json& vocab) {
  Json single = Json::array();
  Json specials = Json::object();
  auto special = [&](const std::string& token) {
    single.push_back({{"SpecialToken", {{"id", token}, {"type_id", 0}}}});
    specials[token] = {{"id", token}, {"ids", {vocab.at(token)}}, {"tokens", {token}}};
  };
  if (bos) special(*bos);
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (eos) special(*eos);
  return {{"type", "TemplateProcessing"},
          {"single", single},
          {"pair", single},
          {"special_tokens", specials}};
}

struct Built {
  std::string json;
  TokenizerConfig config;
};

Result<Built> build(const model::GgufMetadata& md, const std::string& source) {
  const Metadata m{md, source};
  SGL_ASSIGN_OR_RETURN(const std::string kind, md.get_string("tokenizer.ggml.model"));
  const bool spm = kind == "llama";
  if (kind != "gpt2" && !spm) {
    return unimplemented(source + ": tokenizer.ggml.model '" + kind +
                         "' is not supported (only gpt2 and llama)");
  }
  SGL_RETURN_IF_ERROR(check_count(md, "tokenizer.ggml.tokens", source));
  SGL_ASSIGN_OR_RETURN(const std::vector<std::string> tokens,
                       md.get_string_array("tokenizer.ggml.tokens"));
  std::vector<int64_t> types(tokens.size(), 1);
  if (md.has("tokenizer.ggml.token_type")) {
    SGL_ASSIGN_OR_RETURN(types, md.get_int_array("tokenizer.ggml.token_type"));
    if (types.size() != tokens.size()) {
      return data_loss(source + ": tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                       " entries for " + std::to_string(tokens.size()) + " tokens");
    }
  }

  // The synthesized tokenizer.json holds the tokens as JSON strings: one that is not UTF-8 (GGUF
  // strings are) would become U+FFFD there and collide with others. Refused, not mangled.
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!unicode::is_valid_utf8(tokens[i])) {
      return data_loss(source + ": tokenizer.ggml.tokens[" + std::to_string(i) +
                       "] is not valid UTF-8");
    }
  }
  // Vocab: ids are positions; a repeated spelling keeps its first id.
  std::unordered_map<std::string, int32_t> ids;
  ids.reserve(tokens.size());
  Json vocab = Json::object();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (ids.emplace(tokens[i], static_cast<int32_t>(i)).second) {
      vocab[tokens[i]] = static_cast<int32_t>(i);
    }
  }

  Json added = Json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const bool control = types[i] == kTypeControl || (spm && types[i] == kTypeUnknown);
    if (!control && types[i] != kTypeUserDefined) continue;
    if (ids.at(tokens[i]) != static_cast<int32_t>(i)) continue;
    added.push_back({{"id", i},
                     {"content", tokens[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", control}});
  }

  TokenizerConfig config;
  SGL_ASSIGN_OR_RETURN(config.bos_token, m.token_at("tokenizer.ggml.bos_token_id", tokens));
  SGL_ASSIGN_OR_RETURN(config.eos_token, m.token_at("tokenizer.ggml.eos_token_id", tokens));
  SGL_ASSIGN_OR_RETURN(config.unk_token, m.token_at("tokenizer.ggml.unknown_token_id", tokens));
  SGL_ASSIGN_OR_RETURN(config.pad_token, m.token_at("tokenizer.ggml.padding_token_id", tokens));
  // End-of-turn / end-of-message tokens also stop generation.
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    SGL_ASSIGN_OR_RETURN(const std::optional<std::string> token, m.token_at(key, tokens));
    if (token) config.generation_eos_token_ids.push_back(ids.at(*token));
  }
  if (!config.generation_eos_token_ids.empty() && config.eos_token) {
    config.generation_eos_token_ids.insert(config.generation_eos_token_ids.begin(),
                                           ids.at(*config.eos_token));
  }
  SGL_ASSIGN_OR_RETURN(const std::optional<bool> add_bos,
                       m.optional_bool("tokenizer.ggml.add_bos_token"));
  SGL_ASSIGN_OR_RETURN(const std::optional<bool> add_eos,
                       m.optional_bool("tokenizer.ggml.add_eos_token"));
  // llama.cpp adds BOS to a sentencepiece vocab that does not say otherwise.
  const bool bos = add_bos.value_or(spm) && config.bos_token.has_value();
  const bool eos = add_eos.value_or(false) && config.eos_token.has_value();
  config.add_bos_token = bos;
  config.add_eos_token = eos;
  SGL_ASSIGN_OR_RETURN(config.chat_template, md.get_string_or("tokenizer.chat_template", ""));

  Json model = {{"type", "BPE"},
                {"dropout", nullptr},
                {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""},
                {"vocab", std::move(vocab)}};
  Json doc = {{"version", "1.0"}, {"added_tokens", std::move(added)}};
  if (spm) {
    SGL_ASSIGN_OR_RETURN(const std::vector<double> scores,
                         md.get_float_array("tokenizer.ggml.scores"));
    if (scores.size() != tokens.size()) {
      return data_loss(source + ": tokenizer.ggml.scores has " + std::to_string(scores.size()) +
                       " entries for " + std::to_string(tokens.size()) + " tokens");
    }
    SGL_ASSIGN_OR_RETURN(const bool prefix_space,
                         md.get_bool_or("tokenizer.ggml.add_space_prefix", true));
    SGL_RETURN_IF_ERROR(check_merge_work(tokens, source));
    model["merges"] = merges_from_scores(tokens, scores, ids);
    model["unk_token"] = config.unk_token ? Json(*config.unk_token) : Json(nullptr);
    model["fuse_unk"] = true;
    model["byte_fallback"] = true;
    model["ignore_merges"] = false;
    const Json replace_space = {
        {"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
    Json normalizers = Json::array();
    if (prefix_space) normalizers.push_back({{"type", "Prepend"}, {"prepend", "\u2581"}});
    normalizers.push_back(replace_space);
    doc["normalizer"] = {{"type", "Sequence"}, {"normalizers", std::move(normalizers)}};
    doc["pre_tokenizer"] = nullptr;
    Json decoders = {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                     {{"type", "ByteFallback"}},
                     {{"type", "Fuse"}}};
    if (prefix_space) {
      decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    }
    doc["decoder"] = {{"type", "Sequence"}, {"decoders", std::move(decoders)}};
  } else {
    SGL_ASSIGN_OR_RETURN(const std::string pre, md.get_string_or("tokenizer.ggml.pre", "default"));
    SGL_ASSIGN_OR_RETURN(doc["pre_tokenizer"], pre_tokenizer_for(pre, source));
    SGL_RETURN_IF_ERROR(check_count(md, "tokenizer.ggml.merges", source));
    SGL_ASSIGN_OR_RETURN(model["merges"], md.get_string_array("tokenizer.ggml.merges"));
    model["unk_token"] = nullptr;
    model["fuse_unk"] = false;
    model["byte_fallback"] = false;
    // HF's Llama-3 tokenizer.json looks whole words up in the vocab before merging.
    model["ignore_merges"] = pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3";
    // HF's Qwen2 tokenizer.json NFC-normalizes.
    doc["normalizer"] =
        pre == "qwen2" || pre == "deepseek-r1-qwen" ? Json{{"type", "NFC"}} : Json(nullptr);
    doc["decoder"] = {{"type", "ByteLevel"},
                      {"add_prefix_space", true},
                      {"trim_offsets", true},
                      {"use_regex", true}};
  }
  doc["post_processor"] =
      bos || eos ? template_processor(bos ? config.bos_token : std::nullopt,
                                      eos ? config.eos_token : std::nullopt, model["vocab"])
                 : Json(nullptr);
  doc["model"] = std::move(model);
  return Built{doc.dump(-1, ' ', false, Json::error_handler_t::replace), std::move(config)};
}

}  // namespace

Result<std::string> gguf_tokenizer_json(const model::GgufMetadata& metadata,
                                        const std::string& source) {
  SGL_ASSIGN_OR_RETURN(Built built, build(metadata, source));
  return std::move(built.json);
}

Result<std::unique_ptr<Tokenizer>> tokenizer_from_gguf(const model::GgufFile& file) {
  SGL_ASSIGN_OR_RETURN(Built built, build(file.metadata(), file.path()));
  SGL_ASSIGN_OR_RETURN(TokenizerSpec spec,
                       parse_tokenizer_json(built.json, file.path() + " (tokenizer metadata)"));
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<HfTokenizer> tokenizer,
                       HfTokenizer::create(std::move(spec), std::move(built.config)));
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

}  // namespace sgl::tokenizer
