// tokenizer.json (model, added_tokens, pipeline) and vocab.json/merges.txt -> TokenizerSpec.
#include "tokenizer/tokenizer_json.h"

#include "tokenizer/json_reader.h"
#include "tokenizer/pipeline_json.h"

namespace sgl::tokenizer {
namespace {

Result<Vocab> parse_vocab(const JsonReader& r, const Json& value, const std::string& path) {
  SGL_RETURN_IF_ERROR(r.expect_object(value, path));
  Vocab vocab;
  vocab.reserve(value.size());
  for (const auto& [token, id] : value.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      return r.error(JsonReader::join(path, token), "expected a non-negative 32-bit id");
    }
    vocab.emplace(token, static_cast<int32_t>(id.get<int64_t>()));
  }
  return vocab;
}

Result<std::vector<BpeModel::Merge>> parse_merges(const JsonReader& r, const Json* value,
                                                  const std::string& path) {
  std::vector<BpeModel::Merge> merges;
  if (value == nullptr) return merges;
  SGL_RETURN_IF_ERROR(r.expect_array(*value, path));
  merges.reserve(value->size());
  for (size_t i = 0; i < value->size(); ++i) {
    const Json& m = (*value)[i];
    if (m.is_string()) {
      // Legacy form "left right".
      const std::string& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        return r.error(JsonReader::index(path, i), "expected \"left right\", got '" + s + "'");
      }
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return r.error(JsonReader::index(path, i), "expected \"left right\" or [left, right]");
    }
  }
  return merges;
}

Result<std::unique_ptr<BpeModel>> parse_model(const JsonReader& r, const Json& root,
                                              size_t cache_capacity) {
  const Json* model = r.find(root, "model");
  if (model == nullptr) return r.error("model", "missing");
  SGL_RETURN_IF_ERROR(r.expect_object(*model, "model"));
  SGL_ASSIGN_OR_RETURN(auto type, r.optional_string_field(*model, "type", "model"));
  if (type ? *type != "BPE" : r.find(*model, "merges") == nullptr) {
    return r.unsupported("model.type",
                         "model '" + type.value_or("(untyped)") + "' is not supported (only BPE)");
  }
  const Json* vocab_json = r.find(*model, "vocab");
  if (vocab_json == nullptr) return r.error("model.vocab", "missing");
  SGL_ASSIGN_OR_RETURN(Vocab vocab, parse_vocab(r, *vocab_json, "model.vocab"));
  SGL_ASSIGN_OR_RETURN(auto merges, parse_merges(r, r.find(*model, "merges"), "model.merges"));

  BpeOptions options;
  options.cache_capacity = cache_capacity;
  SGL_ASSIGN_OR_RETURN(options.unk_token, r.optional_string_field(*model, "unk_token", "model"));
  SGL_ASSIGN_OR_RETURN(options.continuing_subword_prefix,
                       r.string_field(*model, "continuing_subword_prefix", "model", ""));
  SGL_ASSIGN_OR_RETURN(options.end_of_word_suffix,
                       r.string_field(*model, "end_of_word_suffix", "model", ""));
  SGL_ASSIGN_OR_RETURN(options.fuse_unk, r.bool_field(*model, "fuse_unk", "model", false));
  SGL_ASSIGN_OR_RETURN(options.byte_fallback,
                       r.bool_field(*model, "byte_fallback", "model", false));
  SGL_ASSIGN_OR_RETURN(options.ignore_merges,
                       r.bool_field(*model, "ignore_merges", "model", false));
  // NOTE: "dropout" is a training-time option; encoding here is always deterministic.

  Result<std::unique_ptr<BpeModel>> bpe = BpeModel::create(std::move(vocab), merges, options);
  if (!bpe.ok()) return Status(bpe.status().code(), r.file() + ": " + bpe.status().message());
  return bpe;
}

Result<std::vector<AddedToken>> parse_added_tokens(const JsonReader& r, const Json& root) {
  std::vector<AddedToken> tokens;
  const Json* list = r.find(root, "added_tokens");
  if (list == nullptr) return tokens;
  SGL_RETURN_IF_ERROR(r.expect_array(*list, "added_tokens"));
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& t = (*list)[i];
    const std::string path = JsonReader::index("added_tokens", i);
    SGL_RETURN_IF_ERROR(r.expect_object(t, path));
    AddedToken token;
    SGL_ASSIGN_OR_RETURN(const int64_t id, r.int_field(t, "id", path));
    if (id < 0 || id > INT32_MAX) return r.error(JsonReader::join(path, "id"), "out of range");
    token.id = static_cast<int32_t>(id);
    SGL_ASSIGN_OR_RETURN(token.content, r.string_field(t, "content", path));
    SGL_ASSIGN_OR_RETURN(token.single_word, r.bool_field(t, "single_word", path, false));
    SGL_ASSIGN_OR_RETURN(token.lstrip, r.bool_field(t, "lstrip", path, false));
    SGL_ASSIGN_OR_RETURN(token.rstrip, r.bool_field(t, "rstrip", path, false));
    SGL_ASSIGN_OR_RETURN(token.special, r.bool_field(t, "special", path, false));
    SGL_ASSIGN_OR_RETURN(token.normalized, r.bool_field(t, "normalized", path, !token.special));
    tokens.push_back(std::move(token));
  }
  return tokens;
}

}  // namespace

Result<TokenizerSpec> parse_tokenizer_json(std::string_view json_text, const std::string& file,
                                           size_t cache_capacity) {
  const JsonReader r(file);
  SGL_ASSIGN_OR_RETURN(const Json root, r.parse(json_text));
  SGL_RETURN_IF_ERROR(r.expect_object(root, ""));
  TokenizerSpec spec;
  SGL_ASSIGN_OR_RETURN(spec.model, parse_model(r, root, cache_capacity));
  SGL_ASSIGN_OR_RETURN(spec.added_tokens, parse_added_tokens(r, root));
  static const Json kNull;
  auto section = [&](const char* key) -> const Json& {
    const Json* v = r.find(root, key);
    return v == nullptr ? kNull : *v;
  };
  SGL_RETURN_IF_ERROR(parse_normalizer(r, section("normalizer"), "normalizer", spec.normalizer));
  SGL_RETURN_IF_ERROR(
      parse_pre_tokenizer(r, section("pre_tokenizer"), "pre_tokenizer", spec.pre_tokenizer));
  SGL_RETURN_IF_ERROR(parse_decoder(r, section("decoder"), "decoder", spec.decoder));
  SGL_RETURN_IF_ERROR(
      parse_post_processor(r, section("post_processor"), "post_processor", spec.post_processor));
  return spec;
}

Result<TokenizerSpec> parse_vocab_merges(std::string_view vocab_json, const std::string& vocab_file,
                                         std::string_view merges_txt,
                                         const std::string& merges_file) {
  const JsonReader r(vocab_file);
  SGL_ASSIGN_OR_RETURN(const Json root, r.parse(vocab_json));
  SGL_ASSIGN_OR_RETURN(Vocab vocab, parse_vocab(r, root, ""));

  std::vector<BpeModel::Merge> merges;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < merges_txt.size()) {
    size_t end = merges_txt.find('\n', pos);
    if (end == std::string_view::npos) end = merges_txt.size();
    std::string_view line = merges_txt.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos) {
      return data_loss(merges_file + ": line " + std::to_string(line_no) +
                       ": expected \"left right\"");
    }
    merges.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
  }

  TokenizerSpec spec;
  Result<std::unique_ptr<BpeModel>> bpe = BpeModel::create(std::move(vocab), merges, BpeOptions{});
  if (!bpe.ok()) {
    return Status(bpe.status().code(), merges_file + ": " + bpe.status().message());
  }
  spec.model = std::move(bpe).value();
  spec.pre_tokenizer.add(pre_tokenizer::ByteLevel{/*add_prefix_space=*/false, /*use_regex=*/true});
  spec.decoder.add(decoder::ByteLevel{});
  if (const std::optional<int32_t> eot = spec.model->token_to_id("<|endoftext|>")) {
    AddedToken token;
    token.id = *eot;
    token.content = "<|endoftext|>";
    token.special = true;
    spec.added_tokens.push_back(std::move(token));
  }
  return spec;
}

}  // namespace sgl::tokenizer
