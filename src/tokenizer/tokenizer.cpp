// Tokenizer::from_dir: finds the tokenizer files of a model directory (or a .gguf file) and
// builds an HfTokenizer.
#include "tokenizer/tokenizer.h"

#include "model/gguf.h"
#include "tokenizer/file_reader.h"
#include "tokenizer/gguf_tokenizer.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer_config.h"
#include "tokenizer/tokenizer_json.h"

namespace sgl::tokenizer {
namespace {

// The first of `names` that exists in `dir` (empty if none).
std::filesystem::path find_file(const std::filesystem::path& dir,
                                std::initializer_list<const char*> names) {
  std::error_code ec;
  for (const char* name : names) {
    const auto path = dir / name;
    if (std::filesystem::is_regular_file(path, ec)) return path;
  }
  return {};
}

// `*gpt2_files` is set when the spec comes from vocab.json + merges.txt.
Result<TokenizerSpec> load_spec(const std::filesystem::path& dir, bool* gpt2_files) {
  *gpt2_files = false;
  const auto json_path = find_file(dir, {"tokenizer.json", "tokenizer.json.gz"});
  if (!json_path.empty()) {
    SGL_ASSIGN_OR_RETURN(const std::string text, read_file(json_path));
    return parse_tokenizer_json(text, json_path.string());
  }
  const auto vocab_path = find_file(dir, {"vocab.json", "vocab.json.gz"});
  const auto merges_path = find_file(dir, {"merges.txt", "merges.txt.gz"});
  if (!vocab_path.empty() && !merges_path.empty()) {
    SGL_ASSIGN_OR_RETURN(const std::string vocab, read_file(vocab_path));
    SGL_ASSIGN_OR_RETURN(const std::string merges, read_file(merges_path));
    *gpt2_files = true;
    return parse_vocab_merges(vocab, vocab_path.string(), merges, merges_path.string());
  }
  return not_found(dir.string() + ": no tokenizer.json(.gz) or vocab.json(.gz) + merges.txt(.gz)");
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_dir(const std::filesystem::path& dir) {
  if (model::is_gguf_file(dir)) {
    SGL_ASSIGN_OR_RETURN(const model::GgufFile file, model::GgufFile::open(dir));
    return tokenizer_from_gguf(file);
  }
  bool gpt2_files = false;
  SGL_ASSIGN_OR_RETURN(TokenizerSpec spec, load_spec(dir, &gpt2_files));
  SGL_ASSIGN_OR_RETURN(TokenizerConfig config, load_tokenizer_config(dir));
  if (gpt2_files && !config.bos_token && !config.eos_token) {
    // GPT-2's tokenizer defaults bos/eos/unk to <|endoftext|>.
    for (const AddedToken& t : spec.added_tokens) {
      if (t.content == "<|endoftext|>") config.bos_token = config.eos_token = t.content;
    }
  }
  SGL_ASSIGN_OR_RETURN(std::unique_ptr<HfTokenizer> tokenizer,
                       HfTokenizer::create(std::move(spec), std::move(config)));
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

}  // namespace sgl::tokenizer
