// GPT-2 byte-level alphabet: each byte 0..255 maps to one printable Unicode character.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sgl::tokenizer {

class ByteLevelAlphabet {
 public:
  static const ByteLevelAlphabet& get();

  // UTF-8 encoding of the character standing for byte `b`.
  std::string_view encode_byte(uint8_t b) const { return {chars_[b].data(), lengths_[b]}; }
  // Appends the byte-level form of every byte of `text`.
  void encode(std::string_view text, std::string& out) const;
  // The byte a code point stands for, or -1 when the code point is not in the alphabet.
  int decode_char(char32_t c) const { return c < kMaxChar ? byte_of_char_[c] : -1; }

 private:
  ByteLevelAlphabet();
  static constexpr char32_t kMaxChar = 0x144;
  std::array<std::array<char, 2>, 256> chars_{};
  std::array<uint8_t, 256> lengths_{};
  std::array<int16_t, kMaxChar> byte_of_char_{};
};

}  // namespace sgl::tokenizer
