// ResponseStore.
#include "server/response_store.h"

namespace sgl::server {

void ResponseStore::put(const std::string& id, Stored stored) {
  const size_t size = size_of(id, stored);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto old = stored_.find(id); old != stored_.end()) {
    bytes_ -= size_of(id, old->second.stored);
    stored_.erase(old);
  }
  if (size > max_bytes_) return;
  while (bytes_ + size > max_bytes_ && !order_.empty()) {
    const auto& [oldest_id, seq] = order_.front();
    const auto oldest = stored_.find(oldest_id);
    if (oldest != stored_.end() && oldest->second.seq == seq) {
      bytes_ -= size_of(oldest_id, oldest->second.stored);
      stored_.erase(oldest);
    }
    order_.pop_front();
  }
  const uint64_t seq = next_seq_++;
  stored_.emplace(id, Entry{std::move(stored), seq});
  order_.emplace_back(id, seq);
  bytes_ += size;
  if (order_.size() > 2 * stored_.size() + 64) {  // many removed: drop their stale places
    std::erase_if(order_, [&](const auto& place) {
      const auto it = stored_.find(place.first);
      return it == stored_.end() || it->second.seq != place.second;
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
  bytes_ -= size_of(id, it->second.stored);
  stored_.erase(it);
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
