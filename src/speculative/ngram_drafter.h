// N-gram drafts (SGLang's NGRAM speculative algorithm, one chain per request): the tokens that
// followed the most recent earlier occurrence of the sequence's longest matching suffix. No
// draft model: repetitive outputs (code edits, quoting the prompt, lists) are guessed from the
// request's own prompt and output, and the target model verifies the guesses in one pass.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sgl::speculative {

// Up to `max_tokens` drafts for what follows `tokens` (prompt + output so far): for suffix
// lengths w from `max_window` down to `min_window`, the latest earlier position where the last
// w tokens also occur; the drafts are the tokens after it, continued periodically past the
// sequence's end (the text from the occurrence on repeats). Empty when no suffix recurs.
std::vector<int32_t> ngram_draft(std::span<const int32_t> tokens, int32_t max_tokens,
                                 int32_t min_window, int32_t max_window);

}  // namespace sgl::speculative
