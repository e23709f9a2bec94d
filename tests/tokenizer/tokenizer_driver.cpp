// tokenizer_driver: JSON-lines encode/decode server over stdin/stdout for fuzz_vs_hf.py.
//   tokenizer_driver <model dir | tokenizer.json>
//   {"op": "encode", "text": "...", "add_special_tokens": false} -> {"ids": [...]}
//   {"op": "decode", "ids": [...], "skip_special_tokens": true}   -> {"text": "..."}
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/file_reader.h"
#include "tokenizer/hf_tokenizer.h"

int main(int argc, char** argv) {
  using sgl::tokenizer::Tokenizer;
  if (argc != 2) {
    std::cerr << "usage: tokenizer_driver <model dir | tokenizer.json>\n";
    return 2;
  }
  const std::filesystem::path path = argv[1];
  std::unique_ptr<Tokenizer> tok;
  if (std::filesystem::is_directory(path)) {
    auto loaded = Tokenizer::from_dir(path);
    if (!loaded.ok()) {
      std::cerr << loaded.status().to_string() << "\n";
      return 1;
    }
    tok = std::move(loaded).value();
  } else {
    auto text = sgl::tokenizer::read_file(path);
    if (!text.ok()) {
      std::cerr << text.status().to_string() << "\n";
      return 1;
    }
    auto loaded = sgl::tokenizer::HfTokenizer::from_json(*text);
    if (!loaded.ok()) {
      std::cerr << loaded.status().to_string() << "\n";
      return 1;
    }
    tok = std::move(loaded).value();
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    nlohmann::json request = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    nlohmann::json reply;
    if (request.is_discarded() || !request.is_object()) {
      reply["error"] = "bad request";
    } else if (request.value("op", "") == "encode") {
      sgl::tokenizer::EncodeOptions options;
      options.add_special_tokens = request.value("add_special_tokens", false);
      reply["ids"] = tok->encode(request.value("text", ""), options);
    } else if (request.value("op", "") == "decode") {
      sgl::tokenizer::DecodeOptions options;
      options.skip_special_tokens = request.value("skip_special_tokens", true);
      reply["text"] = tok->decode(request.value("ids", std::vector<int32_t>{}), options);
    } else {
      reply["error"] = "unknown op";
    }
    std::cout << reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n"
              << std::flush;
  }
  return 0;
}
