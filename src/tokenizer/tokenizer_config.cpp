// tokenizer_config.json / generation_config.json / chat_template.* parsing.
#include "tokenizer/tokenizer_config.h"

#include <algorithm>
#include <charconv>

#include "tokenizer/file_reader.h"
#include "tokenizer/json_reader.h"

namespace sgl::tokenizer {
namespace {

// A special token given as "text" or as an AddedToken object {"content": "text", ...}.
Result<std::optional<std::string>> special_token(const JsonReader& r, const Json& obj,
                                                 std::string_view key) {
  const Json* v = r.find(obj, key);
  if (v == nullptr) return std::optional<std::string>();
  if (v->is_string()) return std::optional<std::string>(v->get<std::string>());
  if (v->is_object()) {
    SGL_ASSIGN_OR_RETURN(std::string content, r.string_field(*v, "content", std::string(key)));
    return std::optional<std::string>(std::move(content));
  }
  return r.error(std::string(key), "expected a string or {\"content\": ...}");
}

// The default template of chat_template's `value`: the string, or of a list of {"name",
// "template"} (kept in `named`) the "default" one, else the first.
Result<std::string> chat_template(const JsonReader& r, const Json& value, const std::string& path,
                                  std::vector<std::pair<std::string, std::string>>& named) {
  named.clear();
  if (value.is_string()) return value.get<std::string>();
  SGL_RETURN_IF_ERROR(r.expect_array(value, path));
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string where = JsonReader::index(path, i);
    SGL_RETURN_IF_ERROR(r.expect_object(value[i], where));
    SGL_ASSIGN_OR_RETURN(std::string name, r.string_field(value[i], "name", where));
    SGL_ASSIGN_OR_RETURN(std::string text, r.string_field(value[i], "template", where));
    named.emplace_back(std::move(name), std::move(text));
  }
  for (const auto& [name, text] : named) {
    if (name == "default") return text;
  }
  // No "default": the first listed, as SGLang falls back to (transformers refuses to choose).
  return named.empty() ? std::string() : named.front().second;
}

}  // namespace

Status parse_tokenizer_config(std::string_view json_text, const std::string& file,
                              TokenizerConfig& config) {
  const JsonReader r(file);
  SGL_ASSIGN_OR_RETURN(const Json root, r.parse(json_text));
  SGL_RETURN_IF_ERROR(r.expect_object(root, ""));
  SGL_ASSIGN_OR_RETURN(config.bos_token, special_token(r, root, "bos_token"));
  SGL_ASSIGN_OR_RETURN(config.eos_token, special_token(r, root, "eos_token"));
  SGL_ASSIGN_OR_RETURN(config.unk_token, special_token(r, root, "unk_token"));
  SGL_ASSIGN_OR_RETURN(config.pad_token, special_token(r, root, "pad_token"));
  if (const Json* v = r.find(root, "add_bos_token")) {
    if (!v->is_boolean()) return r.error("add_bos_token", "expected a boolean");
    config.add_bos_token = v->get<bool>();
  }
  if (const Json* v = r.find(root, "add_eos_token")) {
    if (!v->is_boolean()) return r.error("add_eos_token", "expected a boolean");
    config.add_eos_token = v->get<bool>();
  }
  SGL_ASSIGN_OR_RETURN(config.clean_up_tokenization_spaces,
                       r.bool_field(root, "clean_up_tokenization_spaces", "", false));
  if (const Json* v = r.find(root, "chat_template")) {
    SGL_ASSIGN_OR_RETURN(config.chat_template,
                         chat_template(r, *v, "chat_template", config.named_chat_templates));
  }
  if (const Json* list = r.find(root, "additional_special_tokens")) {
    SGL_RETURN_IF_ERROR(r.expect_array(*list, "additional_special_tokens"));
    for (size_t i = 0; i < list->size(); ++i) {
      const Json& e = (*list)[i];
      const std::string where = JsonReader::index("additional_special_tokens", i);
      if (e.is_string()) {
        config.additional_special_tokens.push_back(e.get<std::string>());
      } else {
        SGL_RETURN_IF_ERROR(r.expect_object(e, where));
        SGL_ASSIGN_OR_RETURN(std::string content, r.string_field(e, "content", where));
        config.additional_special_tokens.push_back(std::move(content));
      }
    }
  }
  if (const Json* map = r.find(root, "added_tokens_decoder")) {
    SGL_RETURN_IF_ERROR(r.expect_object(*map, "added_tokens_decoder"));
    for (const auto& [key, entry] : map->items()) {
      const std::string where = JsonReader::join("added_tokens_decoder", key);
      AddedToken token;
      int64_t id = -1;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id > INT32_MAX) {
        return r.error(where, "key is not a token id");
      }
      token.id = static_cast<int32_t>(id);
      SGL_RETURN_IF_ERROR(r.expect_object(entry, where));
      SGL_ASSIGN_OR_RETURN(token.content, r.string_field(entry, "content", where));
      SGL_ASSIGN_OR_RETURN(token.single_word, r.bool_field(entry, "single_word", where, false));
      SGL_ASSIGN_OR_RETURN(token.lstrip, r.bool_field(entry, "lstrip", where, false));
      SGL_ASSIGN_OR_RETURN(token.rstrip, r.bool_field(entry, "rstrip", where, false));
      SGL_ASSIGN_OR_RETURN(token.special, r.bool_field(entry, "special", where, false));
      SGL_ASSIGN_OR_RETURN(token.normalized,
                           r.bool_field(entry, "normalized", where, !token.special));
      config.added_tokens.push_back(std::move(token));
    }
    std::sort(config.added_tokens.begin(), config.added_tokens.end(),
              [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  }
  return Status::ok_status();
}

Status parse_generation_config(std::string_view json_text, const std::string& file,
                               TokenizerConfig& config) {
  const JsonReader r(file);
  SGL_ASSIGN_OR_RETURN(const Json root, r.parse(json_text));
  SGL_RETURN_IF_ERROR(r.expect_object(root, ""));
  const Json* eos = r.find(root, "eos_token_id");
  if (eos == nullptr) return Status::ok_status();
  auto add = [&](const Json& v, const std::string& where) -> Status {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      return r.error(where, "expected a token id");
    }
    config.generation_eos_token_ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
    return Status::ok_status();
  };
  if (!eos->is_array()) return add(*eos, "eos_token_id");
  for (size_t i = 0; i < eos->size(); ++i) {
    SGL_RETURN_IF_ERROR(add((*eos)[i], JsonReader::index("eos_token_id", i)));
  }
  return Status::ok_status();
}

Result<TokenizerConfig> load_tokenizer_config(const std::filesystem::path& dir) {
  TokenizerConfig config;
  const auto config_path = dir / "tokenizer_config.json";
  Result<std::string> text = read_file(config_path);
  if (text.ok()) {
    SGL_RETURN_IF_ERROR(parse_tokenizer_config(*text, config_path.string(), config));
  } else if (text.status().code() != StatusCode::kNotFound) {
    return text.status();
  }
  const auto generation_path = dir / "generation_config.json";
  text = read_file(generation_path);
  if (text.ok()) {
    SGL_RETURN_IF_ERROR(parse_generation_config(*text, generation_path.string(), config));
  } else if (text.status().code() != StatusCode::kNotFound) {
    return text.status();
  }
  // Newer checkpoints keep the template beside the config: chat_template.jinja wins over the
  // config's (as in transformers, where it may be the updated one); chat_template.json (a
  // processor's) only stands in for a missing one.
  text = read_file(dir / "chat_template.jinja");
  if (text.ok()) {
    config.chat_template = std::move(text).value();
  } else if (text.status().code() != StatusCode::kNotFound) {
    return text.status();
  } else if (config.chat_template.empty()) {
    const auto json_path = dir / "chat_template.json";
    text = read_file(json_path);
    if (text.ok()) {
      const JsonReader r(json_path.string());
      SGL_ASSIGN_OR_RETURN(const Json root, r.parse(*text));
      if (const Json* v = r.find(root, "chat_template")) {
        SGL_ASSIGN_OR_RETURN(config.chat_template,
                             chat_template(r, *v, "chat_template", config.named_chat_templates));
      }
    } else if (text.status().code() != StatusCode::kNotFound) {
      return text.status();
    }
  }
  return config;
}

}  // namespace sgl::tokenizer
