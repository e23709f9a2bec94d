// RequestRegistry: the generation requests in flight, by the id the client sees (for
// /abort_request, and for draining at shutdown). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace sgl::server {

class RequestRegistry {
 public:
  // Records a request's engine rids under `id`, and under `item_ids[i]` rids[i] alone (a
  // batch's items; empty: none); returns a handle for remove().
  uint64_t add(const std::string& id, std::vector<uint64_t> rids,
               std::vector<std::string> item_ids = {});
  void remove(uint64_t handle);
  // The engine rids of every request or item named `id` (ids from clients may repeat).
  std::vector<uint64_t> find(const std::string& id) const;
  std::vector<uint64_t> all_rids() const;
  size_t size() const;

 private:
  struct Entry {
    std::string id;
    std::vector<uint64_t> rids;
    std::vector<std::string> item_ids;  // empty, or one per rid
  };
  mutable std::mutex mutex_;
  uint64_t next_handle_ = 1;
  std::map<uint64_t, Entry> entries_;
};

}  // namespace sgl::server
