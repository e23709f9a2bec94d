// Regex: PCRE2 compile/JIT/match behind an RAII handle, plus the Oniguruma -> PCRE2 rewrite.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include <atomic>

#include "core/logging.h"
#include "tokenizer/unicode.h"

namespace sgl::tokenizer {
namespace {

// Unicode White_Space, as a character-class body (Oniguruma's and Rust's \s).
constexpr std::string_view kSpaceClassBody =
    "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";
// Oniguruma's Unicode \w: letters, marks, decimal and letter numbers, connectors, ZWNJ/ZWJ.
constexpr std::string_view kWordClassBody = "\\p{L}\\p{M}\\p{Nd}\\p{Nl}\\p{Pc}\\x{200C}\\x{200D}";
constexpr std::string_view kHexClassBody = "0-9a-fA-F";

std::string pcre2_error_message(int code) {
  PCRE2_UCHAR buffer[256];
  const int n = pcre2_get_error_message(code, buffer, sizeof(buffer));
  if (n < 0) return "PCRE2 error " + std::to_string(code);
  return std::string(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
}

}  // namespace

std::string translate_oniguruma_pattern(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  int class_depth = 0;  // > 0 inside [...]; Oniguruma allows nested classes
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[i + 1];
      std::string_view body;
      bool negated = false;
      switch (e) {
        case 's':
          body = kSpaceClassBody;
          break;
        case 'S':
          body = kSpaceClassBody, negated = true;
          break;
        case 'w':
          body = kWordClassBody;
          break;
        case 'W':
          body = kWordClassBody, negated = true;
          break;
        case 'h':
          body = kHexClassBody;
          break;
        case 'H':
          body = kHexClassBody, negated = true;
          break;
        default:
          break;
      }
      if (body.empty() || (negated && class_depth > 0)) {
        // NOTE: a negated class inside a class (e.g. [\S]) keeps PCRE2's meaning.
        out.push_back(c);
        out.push_back(e);
      } else if (class_depth > 0) {
        out.append(body);
      } else {
        out.append(negated ? "[^" : "[");
        out.append(body);
        out.push_back(']');
      }
      ++i;
      continue;
    }
    if (c == '[') {
      if (class_depth > 0 && i + 1 < pattern.size() && pattern[i + 1] == ':') {
        // POSIX bracket expression [:alpha:] inside a class: copy it whole.
        const size_t close = pattern.find(":]", i + 2);
        if (close != std::string_view::npos) {
          out.append(pattern.substr(i, close + 2 - i));
          i = close + 1;
          continue;
        }
      }
      ++class_depth;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out.push_back(pattern[++i]);
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out.push_back(pattern[++i]);
      continue;
    }
    if (c == ']' && class_depth > 0) --class_depth;
    out.push_back(c);
  }
  return out;
}

// Python-syntax patterns come from requests: a search that backtracks more than this gives up
// (as "no match") instead of holding the thread that streams the reply.
constexpr uint32_t kRequestPatternMatchLimit = 100000;

struct Regex::Impl {
  pcre2_code* code = nullptr;
  pcre2_match_context* context = nullptr;  // null: PCRE2's default limits
  bool jit = false;
  // A limit warning was logged: once per pattern, however many texts (a client's) hit it.
  mutable std::atomic<bool> warned{false};
  ~Impl() {
    if (context != nullptr) pcre2_match_context_free(context);
    if (code != nullptr) pcre2_code_free(code);
  }
};

Regex::Regex() = default;
Regex::~Regex() = default;
Regex::Regex(Regex&& other) noexcept = default;
Regex& Regex::operator=(Regex&& other) noexcept = default;

Result<Regex> Regex::compile(std::string_view pattern, RegexSyntax syntax) {
  const bool oniguruma = syntax == RegexSyntax::kOniguruma;
  const std::string translated =
      oniguruma ? translate_oniguruma_pattern(pattern) : std::string(pattern);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP | (oniguruma ? PCRE2_MULTILINE : 0u), &error_code,
                    &error_offset, nullptr);
  if (code == nullptr) {
    return invalid_argument("bad regex '" + std::string(pattern) + "' at offset " +
                            std::to_string(error_offset) + ": " + pcre2_error_message(error_code));
  }
  Regex regex;
  regex.impl_ = std::make_unique<Impl>();
  regex.impl_->code = code;
  // JIT is an optimisation only: the interpreter is used when it is unavailable.
  regex.impl_->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  if (!oniguruma) {
    regex.impl_->context = pcre2_match_context_create(nullptr);
    if (regex.impl_->context == nullptr) return resource_exhausted("PCRE2 match context");
    pcre2_set_match_limit(regex.impl_->context, kRequestPatternMatchLimit);
  }
  regex.pattern_ = std::string(pattern);
  return regex;
}

void Regex::find_all(std::string_view subject, std::vector<ByteRange>& out) const {
  Matches matches(*this, subject);
  ByteRange match;
  while (matches.next(match)) out.push_back(match);
}

Regex::Matches::Matches(const Regex& regex, std::string_view subject, size_t start)
    : impl_(regex.impl_.get()),
      subject_(subject),
      pos_(start),
      last_match_end_(std::string_view::npos) {
  if (impl_ != nullptr) data_ = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
}

Regex::Matches::~Matches() { pcre2_match_data_free(static_cast<pcre2_match_data*>(data_)); }

bool Regex::Matches::next(ByteRange& match) {
  auto* data = static_cast<pcre2_match_data*>(data_);
  const auto* bytes = reinterpret_cast<PCRE2_SPTR>(subject_.data());
  while (data != nullptr && pos_ <= subject_.size()) {
    int rc = -1;
    if (impl_->jit) {
      rc = pcre2_jit_match(impl_->code, bytes, subject_.size(), pos_, PCRE2_NO_UTF_CHECK, data,
                           impl_->context);
    }
    if (!impl_->jit || rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // NOTE: the interpreter keeps its backtracking state on the heap; deep inputs that
      // overflow the JIT stack still match here.
      rc = pcre2_match(impl_->code, bytes, subject_.size(), pos_, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                       data, impl_->context);
    }
    if (rc < 0) {  // no match, or a resource limit: the rest has no match
      // A tokenizer's pattern (no limit of ours) past PCRE2's own limits splits this text
      // differently from Hugging Face's: say so rather than tokenize differently in silence.
      if (rc != PCRE2_ERROR_NOMATCH && impl_->context == nullptr && !impl_->warned.exchange(true)) {
        SGL_LOG_WARN << "tokenizer regex gave up at byte " << pos_ << " of a " << subject_.size()
                     << "-byte text (" << pcre2_error_message(rc)
                     << "): the rest is taken to match nothing, so its tokens may differ from "
                        "Hugging Face's";
      }
      break;
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    if (end < begin || end > subject_.size()) break;  // \K tricks; never produced by HF patterns
    if (begin == end && end == last_match_end_) {
      // As Oniguruma's iterator: no empty match right where the previous match ended.
      if (pos_ >= subject_.size()) break;
      pos_ += unicode::utf8_sequence_length(static_cast<unsigned char>(subject_[pos_]));
      continue;
    }
    match = {begin, end};
    pos_ = end;
    last_match_end_ = end;
    return true;
  }
  pos_ = subject_.size() + 1;  // done: later calls return false at once
  return false;
}

}  // namespace sgl::tokenizer
