// The stored responses of --enable-response-store (SGLang's stateful Responses API): each
// finished response object with the conversation it ends — its input items (a previous
// response's conversation first) then its output items, as Responses input items — for
// GET /v1/responses/{id} and a later request's previous_response_id. In memory; past
// `max_bytes` the oldest responses are dropped (SGLang keeps every one, which grows without
// bound). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace sgl::server {

// The most the server's response store holds.
inline constexpr size_t kResponseStoreBytes = size_t{256} << 20;

class ResponseStore {
 public:
  explicit ResponseStore(size_t max_bytes) : max_bytes_(max_bytes) {}

  struct Stored {
    std::string response_json;      // the response object
    std::string conversation_json;  // a JSON list of Responses input items
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
  static size_t size_of(const std::string& id, const Stored& s) {
    return id.size() + s.response_json.size() + s.conversation_json.size();
  }

  struct Entry {
    Stored stored;
    uint64_t seq = 0;  // when it was put
  };

  const size_t max_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> stored_;
  // (id, seq), oldest first; an entry whose seq no longer matches (removed, replaced) is skipped.
  std::deque<std::pair<std::string, uint64_t>> order_;
  uint64_t next_seq_ = 0;
  size_t bytes_ = 0;
};

}  // namespace sgl::server
