// tokenizer.json pipeline sections -> Normalizer / PreTokenizer / Decoder / PostProcessor steps.
#include "tokenizer/pipeline_json.h"

#include <map>

#include "tokenizer/unicode.h"

namespace sgl::tokenizer {
namespace {

// Deeper Sequence nesting is refused rather than recursed into.
constexpr int kMaxNesting = 64;

struct Pattern {
  bool is_regex = false;
  std::string text;
};

Result<Pattern> parse_pattern(const JsonReader& r, const Json& obj, const std::string& path) {
  const std::string where = JsonReader::join(path, "pattern");
  const Json* p = r.find(obj, "pattern");
  if (p == nullptr) return r.error(where, "missing pattern");
  SGL_RETURN_IF_ERROR(r.expect_object(*p, where));
  if (const Json* s = r.find(*p, "String")) {
    if (!s->is_string()) return r.error(JsonReader::join(where, "String"), "expected a string");
    return Pattern{false, s->get<std::string>()};
  }
  if (const Json* s = r.find(*p, "Regex")) {
    if (!s->is_string()) return r.error(JsonReader::join(where, "Regex"), "expected a string");
    return Pattern{true, s->get<std::string>()};
  }
  return r.error(where, "expected {\"String\": ...} or {\"Regex\": ...}");
}

Result<Regex> compile_pattern(const JsonReader& r, const Pattern& pattern,
                              const std::string& path) {
  Result<Regex> regex = Regex::compile(pattern.text);
  if (!regex.ok())
    return r.error(JsonReader::join(path, "pattern.Regex"), regex.status().message());
  return regex;
}

Result<SplitBehavior> parse_behavior(const JsonReader& r, const Json& obj, const std::string& path,
                                     std::optional<std::string> fallback) {
  SGL_ASSIGN_OR_RETURN(const std::string name, r.string_field(obj, "behavior", path, fallback));
  static const std::map<std::string, SplitBehavior, std::less<>> kNames = {
      {"Removed", SplitBehavior::kRemoved},
      {"Isolated", SplitBehavior::kIsolated},
      {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious},
      {"MergedWithNext", SplitBehavior::kMergedWithNext},
      {"Contiguous", SplitBehavior::kContiguous}};
  auto it = kNames.find(name);
  if (it == kNames.end()) {
    return r.error(JsonReader::join(path, "behavior"), "unknown behavior '" + name + "'");
  }
  return it->second;
}

// A string field holding exactly one character.
Result<std::string> char_field(const JsonReader& r, const Json& obj, std::string_view key,
                               const std::string& path, std::string fallback) {
  SGL_ASSIGN_OR_RETURN(std::string value, r.string_field(obj, key, path, std::move(fallback)));
  size_t pos = 0;
  if (value.empty() || !unicode::is_valid_utf8(value) ||
      (unicode::decode_utf8(value, pos), pos != value.size())) {
    return r.error(JsonReader::join(path, key), "expected a single character");
  }
  return value;
}

Result<pre_tokenizer::PrependScheme> parse_prepend_scheme(const JsonReader& r, const Json& obj,
                                                          const std::string& path) {
  SGL_ASSIGN_OR_RETURN(auto scheme, r.optional_string_field(obj, "prepend_scheme", path));
  if (!scheme) {
    // Older files: add_prefix_space (default true).
    SGL_ASSIGN_OR_RETURN(const bool add, r.bool_field(obj, "add_prefix_space", path, true));
    return add ? pre_tokenizer::PrependScheme::kAlways : pre_tokenizer::PrependScheme::kNever;
  }
  if (*scheme == "always") return pre_tokenizer::PrependScheme::kAlways;
  if (*scheme == "first") return pre_tokenizer::PrependScheme::kFirst;
  if (*scheme == "never") return pre_tokenizer::PrependScheme::kNever;
  return r.error(JsonReader::join(path, "prepend_scheme"),
                 "unknown prepend_scheme '" + *scheme + "'");
}

template <typename Out, typename Step>
Status add_step(Out& out, Step step) {
  out.add(std::move(step));
  return Status::ok_status();
}

// Validates `value` as an object with a string "type" and returns the type.
Result<std::string> type_of(const JsonReader& r, const Json& value, const std::string& path) {
  SGL_RETURN_IF_ERROR(r.expect_object(value, path));
  return r.string_field(value, "type", path);
}

// Calls `parse_one(element, element_path)` for each element of the array field `key`.
template <typename F>
Status for_each_element(const JsonReader& r, const Json& obj, std::string_view key,
                        const std::string& path, F&& parse_one) {
  const std::string where = JsonReader::join(path, key);
  const Json* list = r.find(obj, key);
  if (list == nullptr) return r.error(where, "missing array field");
  SGL_RETURN_IF_ERROR(r.expect_array(*list, where));
  for (size_t i = 0; i < list->size(); ++i) {
    SGL_RETURN_IF_ERROR(parse_one((*list)[i], JsonReader::index(where, i)));
  }
  return Status::ok_status();
}

// [token, id] pair of Bert/Roberta processors.
Result<int32_t> special_pair_id(const JsonReader& r, const Json& obj, std::string_view key,
                                const std::string& path) {
  const std::string where = JsonReader::join(path, key);
  const Json* pair = r.find(obj, key);
  if (pair == nullptr || !pair->is_array() || pair->size() != 2 ||
      !(*pair)[1].is_number_integer() || (*pair)[1].get<int64_t>() < 0 ||
      (*pair)[1].get<int64_t>() > INT32_MAX) {
    return r.error(where, "expected [token, id]");
  }
  return static_cast<int32_t>((*pair)[1].get<int64_t>());
}

Status parse_normalizer_at(const JsonReader& r, const Json& value, const std::string& path,
                           Normalizer& out, int depth) {
  if (depth > kMaxNesting) return r.error(path, "nesting too deep");
  if (value.is_null()) return Status::ok_status();
  SGL_ASSIGN_OR_RETURN(const std::string type, type_of(r, value, path));
  using normalizer::UnicodeForm;
  if (type == "Sequence") {
    return for_each_element(r, value, "normalizers", path,
                            [&](const Json& e, const std::string& p) {
                              return parse_normalizer_at(r, e, p, out, depth + 1);
                            });
  }
  if (type == "NFC") return add_step(out, normalizer::Unicode{UnicodeForm::kNfc});
  if (type == "NFD") return add_step(out, normalizer::Unicode{UnicodeForm::kNfd});
  if (type == "NFKC") return add_step(out, normalizer::Unicode{UnicodeForm::kNfkc});
  if (type == "NFKD") return add_step(out, normalizer::Unicode{UnicodeForm::kNfkd});
  if (type == "Lowercase") return add_step(out, normalizer::Lowercase{});
  if (type == "StripAccents") return add_step(out, normalizer::StripAccents{});
  if (type == "ByteLevel") return add_step(out, normalizer::ByteLevel{});
  if (type == "Strip") {
    SGL_ASSIGN_OR_RETURN(const bool left, r.bool_field(value, "strip_left", path, true));
    SGL_ASSIGN_OR_RETURN(const bool right, r.bool_field(value, "strip_right", path, true));
    out.add(normalizer::Strip{left, right});
    return Status::ok_status();
  }
  if (type == "Prepend") {
    SGL_ASSIGN_OR_RETURN(std::string prefix, r.string_field(value, "prepend", path));
    out.add(normalizer::Prepend{std::move(prefix)});
    return Status::ok_status();
  }
  if (type == "Replace") {
    SGL_ASSIGN_OR_RETURN(Pattern pattern, parse_pattern(r, value, path));
    SGL_ASSIGN_OR_RETURN(std::string content, r.string_field(value, "content", path));
    if (!pattern.is_regex) {
      out.add(normalizer::ReplaceString{std::move(pattern.text), std::move(content)});
      return Status::ok_status();
    }
    SGL_ASSIGN_OR_RETURN(Regex regex, compile_pattern(r, pattern, path));
    out.add(normalizer::ReplaceRegex{std::move(regex), std::move(content)});
    return Status::ok_status();
  }
  if (type == "Precompiled") {
    // An empty charsmap (some converted sentencepiece models) is the identity.
    const Json* map = r.find(value, "precompiled_charsmap");
    if (map == nullptr || (map->is_string() && map->get<std::string>().empty())) {
      return Status::ok_status();
    }
  }
  return r.unsupported(JsonReader::join(path, "type"),
                       "normalizer '" + type + "' is not supported");
}

Status parse_pre_tokenizer_at(const JsonReader& r, const Json& value, const std::string& path,
                              PreTokenizer& out, int depth) {
  if (depth > kMaxNesting) return r.error(path, "nesting too deep");
  if (value.is_null()) return Status::ok_status();
  SGL_ASSIGN_OR_RETURN(const std::string type, type_of(r, value, path));
  if (type == "Sequence") {
    return for_each_element(r, value, "pretokenizers", path,
                            [&](const Json& e, const std::string& p) {
                              return parse_pre_tokenizer_at(r, e, p, out, depth + 1);
                            });
  }
  if (type == "ByteLevel") {
    pre_tokenizer::ByteLevel step;
    SGL_ASSIGN_OR_RETURN(step.add_prefix_space,
                         r.bool_field(value, "add_prefix_space", path, true));
    SGL_ASSIGN_OR_RETURN(step.use_regex, r.bool_field(value, "use_regex", path, true));
    out.add(step);
    return Status::ok_status();
  }
  if (type == "Split") {
    SGL_ASSIGN_OR_RETURN(Pattern pattern, parse_pattern(r, value, path));
    SGL_ASSIGN_OR_RETURN(const SplitBehavior behavior,
                         parse_behavior(r, value, path, std::nullopt));
    SGL_ASSIGN_OR_RETURN(const bool invert, r.bool_field(value, "invert", path, false));
    if (!pattern.is_regex) {
      out.add(pre_tokenizer::SplitString{std::move(pattern.text), behavior, invert});
      return Status::ok_status();
    }
    SGL_ASSIGN_OR_RETURN(Regex regex, compile_pattern(r, pattern, path));
    out.add(pre_tokenizer::SplitRegex{std::move(regex), behavior, invert});
    return Status::ok_status();
  }
  if (type == "Metaspace") {
    pre_tokenizer::Metaspace step;
    SGL_ASSIGN_OR_RETURN(step.replacement,
                         char_field(r, value, "replacement", path, step.replacement));
    SGL_ASSIGN_OR_RETURN(step.prepend_scheme, parse_prepend_scheme(r, value, path));
    SGL_ASSIGN_OR_RETURN(step.split, r.bool_field(value, "split", path, true));
    out.add(std::move(step));
    return Status::ok_status();
  }
  if (type == "Digits") {
    SGL_ASSIGN_OR_RETURN(const bool individual,
                         r.bool_field(value, "individual_digits", path, false));
    out.add(pre_tokenizer::Digits{individual});
    return Status::ok_status();
  }
  if (type == "Punctuation") {
    SGL_ASSIGN_OR_RETURN(const SplitBehavior behavior,
                         parse_behavior(r, value, path, std::string("Isolated")));
    out.add(pre_tokenizer::Punctuation{behavior});
    return Status::ok_status();
  }
  if (type == "Whitespace") return add_step(out, pre_tokenizer::Whitespace{});
  if (type == "WhitespaceSplit") {
    return add_step(out, pre_tokenizer::WhitespaceSplit{});
  }
  if (type == "BertPreTokenizer") return add_step(out, pre_tokenizer::Bert{});
  if (type == "CharDelimiterSplit") {
    SGL_ASSIGN_OR_RETURN(const std::string delimiter, char_field(r, value, "delimiter", path, ""));
    size_t pos = 0;
    out.add(pre_tokenizer::CharDelimiter{unicode::decode_utf8(delimiter, pos)});
    return Status::ok_status();
  }
  return r.unsupported(JsonReader::join(path, "type"),
                       "pre-tokenizer '" + type + "' is not supported");
}

Status parse_decoder_at(const JsonReader& r, const Json& value, const std::string& path,
                        Decoder& out, int depth) {
  if (depth > kMaxNesting) return r.error(path, "nesting too deep");
  if (value.is_null()) return Status::ok_status();
  SGL_ASSIGN_OR_RETURN(const std::string type, type_of(r, value, path));
  out.set_present();
  if (type == "Sequence") {
    return for_each_element(r, value, "decoders", path, [&](const Json& e, const std::string& p) {
      return parse_decoder_at(r, e, p, out, depth + 1);
    });
  }
  if (type == "ByteLevel") return add_step(out, decoder::ByteLevel{});
  if (type == "ByteFallback") return add_step(out, decoder::ByteFallback{});
  if (type == "Fuse") return add_step(out, decoder::Fuse{});
  if (type == "Replace") {
    SGL_ASSIGN_OR_RETURN(Pattern pattern, parse_pattern(r, value, path));
    SGL_ASSIGN_OR_RETURN(std::string content, r.string_field(value, "content", path));
    if (!pattern.is_regex) {
      out.add(decoder::ReplaceString{std::move(pattern.text), std::move(content)});
      return Status::ok_status();
    }
    SGL_ASSIGN_OR_RETURN(Regex regex, compile_pattern(r, pattern, path));
    out.add(decoder::ReplaceRegex{std::move(regex), std::move(content)});
    return Status::ok_status();
  }
  if (type == "Strip") {
    decoder::Strip step;
    SGL_ASSIGN_OR_RETURN(step.content, char_field(r, value, "content", path, " "));
    SGL_ASSIGN_OR_RETURN(const int64_t start, r.int_field(value, "start", path, 0));
    SGL_ASSIGN_OR_RETURN(const int64_t stop, r.int_field(value, "stop", path, 0));
    if (start < 0 || stop < 0) return r.error(path, "start/stop must be non-negative");
    step.start = static_cast<size_t>(start);
    step.stop = static_cast<size_t>(stop);
    out.add(std::move(step));
    return Status::ok_status();
  }
  if (type == "Metaspace") {
    decoder::Metaspace step;
    SGL_ASSIGN_OR_RETURN(step.replacement,
                         char_field(r, value, "replacement", path, step.replacement));
    SGL_ASSIGN_OR_RETURN(step.prepend_scheme, parse_prepend_scheme(r, value, path));
    out.add(std::move(step));
    return Status::ok_status();
  }
  if (type == "WordPiece") {
    decoder::WordPiece step;
    SGL_ASSIGN_OR_RETURN(step.prefix, r.string_field(value, "prefix", path, step.prefix));
    SGL_ASSIGN_OR_RETURN(step.cleanup, r.bool_field(value, "cleanup", path, true));
    out.add(std::move(step));
    return Status::ok_status();
  }
  if (type == "BPEDecoder") {
    decoder::BpeSuffix step;
    SGL_ASSIGN_OR_RETURN(step.suffix, r.string_field(value, "suffix", path, step.suffix));
    out.add(std::move(step));
    return Status::ok_status();
  }
  return r.unsupported(JsonReader::join(path, "type"), "decoder '" + type + "' is not supported");
}

Status parse_post_processor_at(const JsonReader& r, const Json& value, const std::string& path,
                               PostProcessor& out, int depth) {
  if (depth > kMaxNesting) return r.error(path, "nesting too deep");
  if (value.is_null()) return Status::ok_status();
  SGL_ASSIGN_OR_RETURN(const std::string type, type_of(r, value, path));
  if (type == "Sequence") {
    return for_each_element(r, value, "processors", path, [&](const Json& e, const std::string& p) {
      return parse_post_processor_at(r, e, p, out, depth + 1);
    });
  }
  if (type == "ByteLevel") return Status::ok_status();  // offsets only
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    SGL_ASSIGN_OR_RETURN(const int32_t cls, special_pair_id(r, value, "cls", path));
    SGL_ASSIGN_OR_RETURN(const int32_t sep, special_pair_id(r, value, "sep", path));
    out.add_template({{false, {cls}}, {true, {}}, {false, {sep}}});
    return Status::ok_status();
  }
  if (type != "TemplateProcessing") {
    return r.unsupported(JsonReader::join(path, "type"),
                         "post-processor '" + type + "' is not supported");
  }
  // special_tokens: name -> {"id": name, "ids": [...], "tokens": [...]}
  std::map<std::string, std::vector<int32_t>, std::less<>> specials;
  const std::string specials_path = JsonReader::join(path, "special_tokens");
  if (const Json* map = r.find(value, "special_tokens")) {
    SGL_RETURN_IF_ERROR(r.expect_object(*map, specials_path));
    for (const auto& [name, entry] : map->items()) {
      const std::string where = JsonReader::join(specials_path, name);
      SGL_RETURN_IF_ERROR(r.expect_object(entry, where));
      const Json* ids = r.find(entry, "ids");
      if (ids == nullptr) return r.error(JsonReader::join(where, "ids"), "missing array field");
      SGL_RETURN_IF_ERROR(r.expect_array(*ids, JsonReader::join(where, "ids")));
      std::vector<int32_t>& list = specials[name];
      for (const Json& id : *ids) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
          return r.error(JsonReader::join(where, "ids"), "expected non-negative integers");
        }
        list.push_back(static_cast<int32_t>(id.get<int64_t>()));
      }
    }
  }
  std::vector<TemplatePiece> pieces;
  SGL_RETURN_IF_ERROR(for_each_element(
      r, value, "single", path, [&](const Json& item, const std::string& p) -> Status {
        SGL_RETURN_IF_ERROR(r.expect_object(item, p));
        if (const Json* seq = r.find(item, "Sequence")) {
          SGL_RETURN_IF_ERROR(r.expect_object(*seq, JsonReader::join(p, "Sequence")));
          pieces.push_back({true, {}});
          return Status::ok_status();
        }
        if (const Json* special = r.find(item, "SpecialToken")) {
          const std::string where = JsonReader::join(p, "SpecialToken");
          SGL_RETURN_IF_ERROR(r.expect_object(*special, where));
          SGL_ASSIGN_OR_RETURN(const std::string name, r.string_field(*special, "id", where));
          auto it = specials.find(name);
          if (it == specials.end()) {
            return r.error(JsonReader::join(where, "id"),
                           "'" + name + "' is not in " + specials_path);
          }
          pieces.push_back({false, it->second});
          return Status::ok_status();
        }
        return r.error(p, "expected a Sequence or SpecialToken item");
      }));
  out.add_template(std::move(pieces));
  return Status::ok_status();
}

}  // namespace

Status parse_normalizer(const JsonReader& r, const Json& value, const std::string& path,
                        Normalizer& out) {
  return parse_normalizer_at(r, value, path, out, 0);
}
Status parse_pre_tokenizer(const JsonReader& r, const Json& value, const std::string& path,
                           PreTokenizer& out) {
  return parse_pre_tokenizer_at(r, value, path, out, 0);
}
Status parse_decoder(const JsonReader& r, const Json& value, const std::string& path,
                     Decoder& out) {
  return parse_decoder_at(r, value, path, out, 0);
}
Status parse_post_processor(const JsonReader& r, const Json& value, const std::string& path,
                            PostProcessor& out) {
  return parse_post_processor_at(r, value, path, out, 0);
}
}  // namespace sgl::tokenizer
