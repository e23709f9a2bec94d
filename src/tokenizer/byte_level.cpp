// GPT-2 byte-level alphabet tables (printable bytes map to themselves, the rest to U+0100...).
#include "tokenizer/byte_level.h"

#include "tokenizer/unicode.h"

namespace sgl::tokenizer {

const ByteLevelAlphabet& ByteLevelAlphabet::get() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

ByteLevelAlphabet::ByteLevelAlphabet() {
  byte_of_char_.fill(-1);
  char32_t next = 0x100;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const char32_t c = printable ? static_cast<char32_t>(b) : next++;
    std::string utf8;
    unicode::append_utf8(utf8, c);
    lengths_[b] = static_cast<uint8_t>(utf8.size());
    for (size_t k = 0; k < utf8.size(); ++k) chars_[b][k] = utf8[k];
    byte_of_char_[c] = static_cast<int16_t>(b);
  }
}

void ByteLevelAlphabet::encode(std::string_view text, std::string& out) const {
  out.reserve(out.size() + text.size() * 2);
  for (char ch : text) out.append(encode_byte(static_cast<uint8_t>(ch)));
}

}  // namespace sgl::tokenizer
