// RequestRegistry.
#include "server/request_registry.h"

#include <algorithm>
#include <utility>

namespace sgl::server {

uint64_t RequestRegistry::add(const std::string& id, std::vector<uint64_t> rids,
                              std::vector<std::string> item_ids) {
  std::lock_guard lock(mutex_);
  const uint64_t handle = next_handle_++;
  item_ids.resize(item_ids.empty() ? 0 : rids.size());
  entries_.emplace(handle, Entry{id, std::move(rids), std::move(item_ids)});
  return handle;
}

RequestRegistry::Claim::Claim(Claim&& other) noexcept
    : registry_(std::exchange(other.registry_, nullptr)), handle_(other.handle_) {}

RequestRegistry::Claim::~Claim() {
  if (registry_ == nullptr) return;
  std::lock_guard lock(registry_->mutex_);
  registry_->claims_.erase(handle_);
}

bool RequestRegistry::in_use_locked(const std::string& name) const {
  for (const auto& [handle, entry] : entries_) {
    if (entry.finished) continue;
    if (entry.id == name ||
        std::find(entry.item_ids.begin(), entry.item_ids.end(), name) != entry.item_ids.end()) {
      return true;
    }
  }
  for (const auto& [handle, names] : claims_) {
    if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  }
  return false;
}

Result<RequestRegistry::Claim> RequestRegistry::claim(std::vector<std::string> names) {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < names.size(); ++i) {
    if (in_use_locked(names[i]) ||
        std::find(names.begin(), names.begin() + static_cast<ptrdiff_t>(i), names[i]) !=
            names.begin() + static_cast<ptrdiff_t>(i)) {
      return invalid_argument("Duplicate request ID detected: " + names[i]);
    }
  }
  const uint64_t handle = next_handle_++;
  claims_.emplace(handle, std::move(names));
  return Claim(this, handle);
}

void RequestRegistry::finish(uint64_t handle) {
  std::lock_guard lock(mutex_);
  if (auto it = entries_.find(handle); it != entries_.end()) it->second.finished = true;
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
