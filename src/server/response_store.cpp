// ResponseStore.
#include "server/response_store.h"

#include <algorithm>

namespace sgl::server {

std::vector<const std::string*> ConversationTurn::items_in_order() const {
  std::vector<const std::string*> out;
  for (const ConversationTurn* t = this; t != nullptr; t = t->previous.get()) {
    out.push_back(&t->items_json);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

size_t ResponseStore::added_bytes(const std::string& id, const Stored& stored) const {
  size_t size = id.size() + stored.response_json.size();
  for (const ConversationTurn* t = stored.conversation.get(); t != nullptr; t = t->previous.get()) {
    if (turn_refs_.contains(t)) break;  // reached, and so are the turns before it
    size += t->items_json.size();
  }
  return size;
}

void ResponseStore::reach(const Entry& entry, const std::string& id) {
  bytes_ += id.size() + entry.stored.response_json.size();
  for (const ConversationTurn* t = entry.stored.conversation.get(); t != nullptr;
       t = t->previous.get()) {
    if (turn_refs_[t]++ == 0) bytes_ += t->items_json.size();
  }
}

void ResponseStore::unreach(const Entry& entry, const std::string& id) {
  bytes_ -= id.size() + entry.stored.response_json.size();
  for (const ConversationTurn* t = entry.stored.conversation.get(); t != nullptr;
       t = t->previous.get()) {
    const auto it = turn_refs_.find(t);
    if (--it->second == 0) {
      bytes_ -= t->items_json.size();
      turn_refs_.erase(it);
    }
  }
}

void ResponseStore::erase(std::unordered_map<std::string, Entry>::iterator it) {
  unreach(it->second, it->first);
  stored_.erase(it);
}

void ResponseStore::put(const std::string& id, Stored stored) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto old = stored_.find(id); old != stored_.end()) erase(old);
  if (added_bytes(id, stored) > max_bytes_) return;
  // Counted first, so that the older responses dropped for it never uncount the turns it shares.
  const uint64_t seq = next_seq_++;
  const auto [it, inserted] = stored_.emplace(id, Entry{std::move(stored), seq});
  reach(it->second, id);
  while (bytes_ > max_bytes_ && !order_.empty()) {
    const auto& [oldest_id, oldest_seq] = order_.front();
    const auto oldest = stored_.find(oldest_id);
    if (oldest != stored_.end() && oldest->second.seq == oldest_seq) erase(oldest);
    order_.pop_front();
  }
  order_.emplace_back(id, seq);
  if (order_.size() > 2 * stored_.size() + 64) {  // many removed: drop their stale places
    std::erase_if(order_, [&](const auto& place) {
      const auto found = stored_.find(place.first);
      return found == stored_.end() || found->second.seq != place.second;
    });
  }
}

std::optional<ResponseStore::Stored> ResponseStore::get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = stored_.find(id);
  if (it == stored_.end()) return std::nullopt;
  return it->second.stored;
}

bool ResponseStore::contains(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stored_.contains(id);
}

bool ResponseStore::remove(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = stored_.find(id);
  if (it == stored_.end()) return false;
  erase(it);
  return true;
}

size_t ResponseStore::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

size_t ResponseStore::places() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return order_.size();
}

}  // namespace sgl::server
