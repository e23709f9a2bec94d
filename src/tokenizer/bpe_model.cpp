// BpeModel: vocab/merge tables and the rank-ordered merge loop (a min-heap over adjacent pairs).
#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <cstdio>

#include "tokenizer/unicode.h"

namespace sgl::tokenizer {
namespace {

// Words at least this long skip the cache (sentencepiece-style models see whole sentences).
constexpr size_t kMaxCachedWordBytes = 256;
constexpr char32_t kCharTableSize = 0x10000;
constexpr size_t kMaxRetainedSymbols = size_t{1} << 16;

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  uint32_t len;  // bytes covered; 0 marks a symbol merged into its left neighbour
};

struct HeapItem {
  uint64_t order;  // rank << 32 | pos: lowest rank first, then leftmost (HF's Word::merge_all)
  int32_t new_id;
  uint32_t pos() const { return static_cast<uint32_t>(order); }
};

HeapItem heap_item(uint32_t rank, uint32_t pos, int32_t new_id) {
  return {(static_cast<uint64_t>(rank) << 32) | pos, new_id};
}

// std heaps are max-heaps: "less" means "later".
struct LowerPriority {
  bool operator()(const HeapItem& a, const HeapItem& b) const { return a.order > b.order; }
};
constexpr LowerPriority lower_priority;

}  // namespace

Result<std::unique_ptr<BpeModel>> BpeModel::create(Vocab vocab, const std::vector<Merge>& merges,
                                                   BpeOptions options) {
  std::unique_ptr<BpeModel> model(new BpeModel());
  int64_t max_id = -1;
  for (const auto& [token, id] : vocab) {
    if (id < 0) {
      return data_loss("model.vocab: token '" + token + "' has negative id " + std::to_string(id));
    }
    max_id = std::max<int64_t>(max_id, id);
  }
  // NOTE: ids index a dense table; refuse absurdly sparse vocabularies instead of allocating.
  const int64_t id_cap = std::max<int64_t>(4 * static_cast<int64_t>(vocab.size()), 1 << 20);
  if (max_id >= id_cap) {
    return data_loss("model.vocab: id " + std::to_string(max_id) + " is out of range for " +
                     std::to_string(vocab.size()) + " tokens");
  }
  model->id_to_token_.resize(static_cast<size_t>(max_id + 1));
  model->has_token_.assign(static_cast<size_t>(max_id + 1), 0);
  model->char_ids_.assign(kCharTableSize, -1);
  for (const auto& [token, id] : vocab) {
    model->id_to_token_[id] = token;
    model->has_token_[id] = 1;
    if (!token.empty() && unicode::is_valid_utf8(token)) {
      size_t pos = 0;
      const char32_t c = unicode::decode_utf8(token, pos);
      if (pos == token.size() && c < kCharTableSize) model->char_ids_[c] = id;
    }
  }
  model->vocab_ = std::move(vocab);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    model->byte_ids_[b] = model->symbol_id(name);
  }
  if (options.unk_token) model->unk_id_ = model->symbol_id(*options.unk_token);

  const size_t prefix_len = options.continuing_subword_prefix.size();
  model->merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const std::string where = "model.merges[" + std::to_string(rank) + "]";
    const int32_t left_id = model->symbol_id(left);
    const int32_t right_id = model->symbol_id(right);
    if (left_id < 0) return data_loss(where + ": token '" + left + "' is not in the vocab");
    if (right_id < 0) return data_loss(where + ": token '" + right + "' is not in the vocab");
    if (right.size() < prefix_len) {
      return data_loss(where + ": token '" + right + "' lacks the continuing_subword_prefix");
    }
    const std::string merged = left + right.substr(prefix_len);
    const int32_t new_id = model->symbol_id(merged);
    if (new_id < 0) return data_loss(where + ": merged token '" + merged + "' is not in the vocab");
    model->merges_.insert(left_id, right_id, {static_cast<uint32_t>(rank), new_id});
  }
  if (options.cache_capacity > 0)
    model->cache_ = std::make_unique<WordCache>(options.cache_capacity);
  model->options_ = std::move(options);
  model->detect_chunk_marker();
  return model;
}

void BpeModel::detect_chunk_marker() {
  // Sentencepiece-style models see a whole sentence as one word. When no token has "▁" after
  // another character (only leading runs like "▁▁the"), no merge can span the boundary before a
  // "▁" that follows another character, so BPE of the word equals BPE of its chunks cut there:
  // merges in different chunks never interact, whatever their order. The chunks ("▁the") are
  // then short and cacheable. Decorated words (prefix/suffix) depend on the whole word: no cut.
  static constexpr std::string_view kMarker = "\xE2\x96\x81";
  if (!options_.continuing_subword_prefix.empty() || !options_.end_of_word_suffix.empty()) return;
  if (symbol_id(kMarker) < 0) return;
  for (const auto& [token, id] : vocab_) {
    std::string_view rest = token;
    while (rest.substr(0, kMarker.size()) == kMarker) rest.remove_prefix(kMarker.size());
    if (rest.find(kMarker) != std::string_view::npos) return;
  }
  chunk_marker_ = std::string(kMarker);
}

int32_t BpeModel::symbol_id(std::string_view symbol) const {
  auto it = vocab_.find(symbol);
  return it == vocab_.end() ? -1 : it->second;
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  const int32_t id = symbol_id(token);
  if (id < 0) return std::nullopt;
  return id;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || id >= id_limit() || !has_token_[id]) return nullptr;
  return &id_to_token_[id];
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    const int32_t id = symbol_id(word);
    if (id >= 0) {
      ids.push_back(id);
      return;
    }
  }
  if (!chunk_marker_.empty()) {
    // Cut before every marker that follows another character (see detect_chunk_marker).
    const std::string_view marker = chunk_marker_;
    size_t begin = 0;
    size_t pos = word.find(marker, 1);
    while (pos != std::string_view::npos) {
      const bool after_marker =
          pos >= marker.size() && word.substr(pos - marker.size(), marker.size()) == marker;
      if (!after_marker) {
        tokenize_cached(word.substr(begin, pos - begin), ids);
        begin = pos;
      }
      pos = word.find(marker, pos + marker.size());
    }
    tokenize_cached(word.substr(begin), ids);
    return;
  }
  tokenize_cached(word, ids);
}

void BpeModel::tokenize_cached(std::string_view word, std::vector<int32_t>& ids) const {
  const bool cacheable = cache_ != nullptr && word.size() < kMaxCachedWordBytes;
  if (cacheable && cache_->lookup(word, ids)) return;
  const size_t start = ids.size();
  merge_word(word, ids);
  if (cacheable)
    cache_->insert(word, std::span<const int32_t>(ids.data() + start, ids.size() - start));
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& ids) const {
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<HeapItem> heap;
  symbols.clear();
  heap.clear();
  auto add = [](int32_t id, uint32_t len) {
    const auto n = static_cast<int32_t>(symbols.size());
    if (n > 0) symbols.back().next = n;
    symbols.push_back({id, n - 1, -1, len});
  };

  const std::string& prefix = options_.continuing_subword_prefix;
  const std::string& suffix = options_.end_of_word_suffix;
  int32_t pending_unk = -1;  // an unk symbol not yet added (so that it can absorb the next one)
  uint32_t pending_unk_len = 0;
  std::string scratch;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t begin = pos;
    const char32_t c = unicode::decode_utf8(word, pos);
    const auto byte_len = static_cast<uint32_t>(pos - begin);
    const bool decorate = (begin > 0 && !prefix.empty()) || (pos >= word.size() && !suffix.empty());
    std::string_view symbol = word.substr(begin, byte_len);
    int32_t id;
    if (decorate) {
      scratch.clear();
      if (begin > 0) scratch.append(prefix);
      scratch.append(symbol);
      if (pos >= word.size()) scratch.append(suffix);
      symbol = scratch;
      id = symbol_id(symbol);
    } else {
      id = c < kCharTableSize ? char_ids_[c] : symbol_id(symbol);
    }
    if (id >= 0) {
      if (pending_unk >= 0) add(pending_unk, pending_unk_len);
      pending_unk = -1;
      add(id, byte_len);
      continue;
    }
    if (options_.byte_fallback) {
      bool all_bytes = true;
      for (char ch : symbol) all_bytes = all_bytes && byte_ids_[static_cast<uint8_t>(ch)] >= 0;
      if (all_bytes) {
        // NOTE: as HF, byte tokens go in without flushing a pending unk first.
        for (char ch : symbol) add(byte_ids_[static_cast<uint8_t>(ch)], 1);
        continue;
      }
    }
    if (unk_id_ < 0) continue;  // no usable unk token: the character is dropped
    if (pending_unk >= 0 && options_.fuse_unk) {
      pending_unk_len += byte_len;
    } else {
      if (pending_unk >= 0) add(pending_unk, pending_unk_len);
      pending_unk = unk_id_;
      pending_unk_len = byte_len;
    }
  }
  if (pending_unk >= 0) add(pending_unk, pending_unk_len);

  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    if (const MergeInfo* m = merges_.find(symbols[i].id, symbols[i + 1].id)) {
      heap.push_back(heap_item(m->rank, static_cast<uint32_t>(i), m->new_id));
    }
  }
  std::make_heap(heap.begin(), heap.end(), lower_priority);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower_priority);
    const HeapItem top = heap.back();
    heap.pop_back();
    const uint32_t top_pos = top.pos();
    Symbol& sym = symbols[top_pos];
    if (sym.len == 0 || sym.next < 0) continue;
    const Symbol right = symbols[sym.next];
    const MergeInfo* current = merges_.find(sym.id, right.id);
    if (current == nullptr || current->new_id != top.new_id) continue;  // stale entry
    symbols[sym.next].len = 0;
    sym.id = top.new_id;
    sym.len += right.len;
    sym.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = static_cast<int32_t>(top_pos);
    if (sym.prev >= 0) {
      if (const MergeInfo* m = merges_.find(symbols[sym.prev].id, sym.id)) {
        heap.push_back(heap_item(m->rank, static_cast<uint32_t>(sym.prev), m->new_id));
        std::push_heap(heap.begin(), heap.end(), lower_priority);
      }
    }
    if (sym.next >= 0) {
      if (const MergeInfo* m = merges_.find(sym.id, symbols[sym.next].id)) {
        heap.push_back(heap_item(m->rank, top_pos, m->new_id));
        std::push_heap(heap.begin(), heap.end(), lower_priority);
      }
    }
  }
  for (const Symbol& s : symbols) {
    if (s.len != 0) ids.push_back(s.id);
  }
  if (symbols.capacity() > kMaxRetainedSymbols) {
    // Do not keep a huge word's scratch space alive in every thread.
    symbols = {};
    heap = {};
  }
}

}  // namespace sgl::tokenizer
