// The stored responses of --enable-response-store (SGLang's stateful Responses API): each
// finished response object with the conversation it ends — its input items (a previous
// response's conversation first) then its output items, as Responses input items — for
// GET /v1/responses/{id} and a later request's previous_response_id. A conversation is a chain
// of turns shared with the conversation it continues, so a chain of N responses holds each
// turn's items once (not N times). In memory; past `max_bytes` (counting each turn once while a
// stored response reaches it) the oldest responses are dropped (SGLang keeps every one, which
// grows without bound). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sgl::server {

// The most the server's response store holds.
inline constexpr size_t kResponseStoreBytes = size_t{256} << 20;

// One response's own items (what its request added to the conversation, then its output) after
// the turns before it. Immutable once made; shared by every conversation that continues it.
struct ConversationTurn {
  std::shared_ptr<const ConversationTurn> previous;  // null: the conversation's first turn
  std::string items_json;                            // a JSON list of Responses input items

  // This turn's and the earlier turns' items lists, the first turn's first.
  std::vector<const std::string*> items_in_order() const;
};

class ResponseStore {
 public:
  explicit ResponseStore(size_t max_bytes) : max_bytes_(max_bytes) {}

  struct Stored {
    std::string response_json;                             // the response object
    std::shared_ptr<const ConversationTurn> conversation;  // its last turn; never null
    // The response object's status ("queued" and "in_progress": a background response not yet
    // ended), kept beside it so that a continuation need not parse it.
    std::string status;
  };

  // Stores (or replaces) response `id`; a response larger than max_bytes is not kept.
  void put(const std::string& id, Stored stored);
  std::optional<Stored> get(const std::string& id) const;
  bool contains(const std::string& id) const;
  // Whether `id` was stored (and is removed now).
  bool remove(const std::string& id);
  size_t bytes() const;
  // The places kept in eviction order, removed ones included until compacted (stays within a
  // small multiple of the stored count).
  size_t places() const;

 private:
  struct Entry {
    Stored stored;
    uint64_t seq = 0;  // when it was put
  };

  // The bytes `stored` would add: its id and response, and the turns no stored response reaches.
  size_t added_bytes(const std::string& id, const Stored& stored) const;
  // Counts the entry's turns as reached (bytes_ grows by those reached first) or no longer.
  void reach(const Entry& entry, const std::string& id);
  void unreach(const Entry& entry, const std::string& id);
  void erase(std::unordered_map<std::string, Entry>::iterator it);

  const size_t max_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> stored_;
  // How many stored responses reach each turn (absent: none).
  std::unordered_map<const ConversationTurn*, size_t> turn_refs_;
  // (id, seq), oldest first; an entry whose seq no longer matches (removed, replaced) is skipped.
  std::deque<std::pair<std::string, uint64_t>> order_;
  uint64_t next_seq_ = 0;
  size_t bytes_ = 0;
};

}  // namespace sgl::server
