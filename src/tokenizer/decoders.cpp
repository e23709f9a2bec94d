// Decoder steps, each mirroring HF tokenizers' decode_chain of the decoder of the same name.
#include "tokenizer/decoders.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/unicode.h"

namespace sgl::tokenizer {
namespace {

using Tokens = std::vector<std::string>;

// The byte a "<0xXX>" token stands for, or -1.
int byte_token_value(std::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return -1;
  int value = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = token[i];
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return -1;
    }
    value = value * 16 + digit;
  }
  return value;
}

std::string replace_wordpiece_cleanup(std::string text, bool do_not) {
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
      {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
      {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    if (!do_not && from == " do not") continue;
    if (text.find(from) != std::string::npos) text = replace_all(text, from, to);
  }
  return text;
}

struct StepApplier {
  Tokens& tokens;

  void operator()(const decoder::ByteLevel&) const {
    const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::get();
    std::string bytes;
    for (const std::string& token : tokens) {
      const size_t mark = bytes.size();
      bool all_mapped = true;
      size_t pos = 0;
      while (pos < token.size()) {
        const int b = alphabet.decode_char(unicode::decode_utf8(token, pos));
        if (b < 0) {
          all_mapped = false;
          break;
        }
        bytes.push_back(static_cast<char>(b));
      }
      if (!all_mapped) {
        // NOTE: tokens outside the byte alphabet (added tokens) pass through as their UTF-8.
        bytes.resize(mark);
        bytes.append(token);
      }
    }
    tokens.assign(1, unicode::to_valid_utf8_lossy(bytes));
  }
  void operator()(const decoder::ByteFallback&) const {
    Tokens out;
    out.reserve(tokens.size());
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (unicode::is_valid_utf8(pending)) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending.size(); ++i) out.emplace_back(unicode::kReplacementChar);
      }
      pending.clear();
    };
    for (std::string& token : tokens) {
      const int b = byte_token_value(token);
      if (b >= 0) {
        pending.push_back(static_cast<char>(b));
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    tokens = std::move(out);
  }
  void operator()(const decoder::Fuse&) const {
    std::string joined;
    for (const std::string& token : tokens) joined.append(token);
    tokens.assign(1, std::move(joined));
  }
  void operator()(const decoder::ReplaceString& step) const {
    if (step.pattern.empty()) return;
    for (std::string& token : tokens) {
      if (token.find(step.pattern) != std::string::npos) {
        token = replace_all(token, step.pattern, step.content);
      }
    }
  }
  void operator()(const decoder::ReplaceRegex& step) const {
    for (std::string& token : tokens) token = replace_all(token, step.regex, step.content);
  }
  void operator()(const decoder::Strip& step) const {
    const std::string_view c = step.content;
    if (c.empty()) return;
    for (std::string& token : tokens) {
      size_t start_cut = 0;
      for (size_t i = 0; i < step.start && token.compare(start_cut, c.size(), c) == 0; ++i) {
        start_cut += c.size();
      }
      size_t stop_cut = 0;
      for (size_t i = 0; i < step.stop && token.size() >= stop_cut + c.size() &&
                         token.compare(token.size() - stop_cut - c.size(), c.size(), c) == 0;
           ++i) {
        stop_cut += c.size();
      }
      if (start_cut + stop_cut >= token.size()) {
        token.clear();
      } else {
        token = token.substr(start_cut, token.size() - start_cut - stop_cut);
      }
    }
  }
  void operator()(const decoder::Metaspace& step) const {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& token = tokens[i];
      if (token.find(step.replacement) == std::string::npos) continue;
      // NOTE: as HF, the first token loses every replacement character, not only a leading one.
      const bool drop = i == 0 && step.prepend_scheme != pre_tokenizer::PrependScheme::kNever;
      token = replace_all(token, step.replacement, drop ? "" : " ");
    }
  }
  void operator()(const decoder::WordPiece& step) const {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& token = tokens[i];
      if (i != 0) {
        if (!step.prefix.empty() && token.rfind(step.prefix, 0) == 0) {
          token.erase(0, step.prefix.size());
        } else {
          token.insert(token.begin(), ' ');
        }
      }
      if (step.cleanup) token = replace_wordpiece_cleanup(std::move(token), /*do_not=*/true);
    }
  }
  void operator()(const decoder::BpeSuffix& step) const {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (step.suffix.empty()) break;
      tokens[i] = replace_all(tokens[i], step.suffix, i + 1 == tokens.size() ? "" : " ");
    }
  }
};

// One token's bytes mid-sequence (Decoder::token_bytes): each step as StepApplier applies it to
// a token that is neither first nor last, without UTF-8 repair.
struct TokenBytesApplier {
  std::string& token;
  bool& fused;  // a Fuse ran: later steps see the whole text, so positional ones do not apply

  void operator()(const decoder::ByteLevel&) const {
    const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::get();
    std::string bytes;
    size_t pos = 0;
    while (pos < token.size()) {
      const int b = alphabet.decode_char(unicode::decode_utf8(token, pos));
      if (b < 0) return;  // outside the byte alphabet (an added token): its UTF-8 as it is
      bytes.push_back(static_cast<char>(b));
    }
    token = std::move(bytes);
  }
  void operator()(const decoder::ByteFallback&) const {
    if (const int b = byte_token_value(token); b >= 0) token.assign(1, static_cast<char>(b));
  }
  void operator()(const decoder::Fuse&) const { fused = true; }
  void operator()(const decoder::ReplaceString& step) const {
    if (!step.pattern.empty()) token = replace_all(token, step.pattern, step.content);
  }
  void operator()(const decoder::ReplaceRegex& step) const {
    token = replace_all(token, step.regex, step.content);
  }
  void operator()(const decoder::Strip& step) const {
    if (fused) return;  // strips the ends of the whole text, not of a token inside it
    Tokens one{token};
    StepApplier{one}(step);
    token = std::move(one[0]);
  }
  void operator()(const decoder::Metaspace& step) const {
    token = replace_all(token, step.replacement, " ");
  }
  void operator()(const decoder::WordPiece& step) const {
    if (!step.prefix.empty() && token.rfind(step.prefix, 0) == 0) {
      token.erase(0, step.prefix.size());
    } else {
      token.insert(token.begin(), ' ');
    }
  }
  void operator()(const decoder::BpeSuffix& step) const {
    if (!step.suffix.empty()) token = replace_all(token, step.suffix, " ");
  }
};

}  // namespace

std::string Decoder::token_bytes(std::string_view token) const {
  std::string bytes(token);
  bool fused = false;
  for (const DecoderStep& step : steps_) std::visit(TokenBytesApplier{bytes, fused}, step);
  return bytes;
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
  std::string out;
  if (!present_) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) out.push_back(' ');
      out.append(tokens[i]);
    }
    return out;
  }
  for (const DecoderStep& step : steps_) std::visit(StepApplier{tokens}, step);
  for (const std::string& token : tokens) out.append(token);
  return out;
}

std::string clean_up_tokenization(std::string_view text) {
  return replace_wordpiece_cleanup(std::string(text), /*do_not=*/false);
}

}  // namespace sgl::tokenizer
