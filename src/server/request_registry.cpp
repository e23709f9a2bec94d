// RequestRegistry.
#include "server/request_registry.h"

namespace sgl::server {

uint64_t RequestRegistry::add(const std::string& id, std::vector<uint64_t> rids,
                              std::vector<std::string> item_ids) {
  std::lock_guard lock(mutex_);
  const uint64_t handle = next_handle_++;
  item_ids.resize(item_ids.empty() ? 0 : rids.size());
  entries_.emplace(handle, Entry{id, std::move(rids), std::move(item_ids)});
  return handle;
}

void RequestRegistry::remove(uint64_t handle) {
  std::lock_guard lock(mutex_);
  entries_.erase(handle);
}

std::vector<uint64_t> RequestRegistry::find(const std::string& id) const {
  std::lock_guard lock(mutex_);
  std::vector<uint64_t> rids;
  for (const auto& [handle, entry] : entries_) {
    if (entry.id == id) {
      rids.insert(rids.end(), entry.rids.begin(), entry.rids.end());
      continue;
    }
    for (size_t i = 0; i < entry.item_ids.size(); ++i) {
      if (entry.item_ids[i] == id) rids.push_back(entry.rids[i]);
    }
  }
  return rids;
}

std::vector<uint64_t> RequestRegistry::all_rids() const {
  std::lock_guard lock(mutex_);
  std::vector<uint64_t> rids;
  for (const auto& [handle, entry] : entries_) {
    rids.insert(rids.end(), entry.rids.begin(), entry.rids.end());
  }
  return rids;
}

size_t RequestRegistry::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace sgl::server
