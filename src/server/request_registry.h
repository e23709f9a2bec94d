// RequestRegistry: the generation requests in flight, by the id the client sees (for
// /abort_request, and for draining at shutdown). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"

namespace sgl::server {

class RequestRegistry {
 public:
  // A request's client-chosen ids, held from before its submission until the reply that
  // registers them (add) exists; released when destroyed.
  class Claim {
   public:
    Claim(Claim&& other) noexcept;
    Claim& operator=(Claim&&) = delete;
    ~Claim();

   private:
    friend class RequestRegistry;
    Claim(RequestRegistry* registry, uint64_t handle) : registry_(registry), handle_(handle) {}
    RequestRegistry* registry_;
    uint64_t handle_;
  };
  // Claims `names` (none: nothing to hold); kInvalidArgument naming the duplicate when one is
  // held, names a request in flight or repeats within `names` (SGLang refuses a duplicate
  // request id), so two requests never share a client's id.
  Result<Claim> claim(std::vector<std::string> names);

  // Records a request's engine rids under `id`, and under `item_ids[i]` rids[i] alone (a
  // batch's items; empty: none); returns a handle for remove().
  uint64_t add(const std::string& id, std::vector<uint64_t> rids,
               std::vector<std::string> item_ids = {});
  void remove(uint64_t handle);
  // The request answered (its reply is being sent): its ids are free for a new request, though
  // it stays in size() until removed (the drain waits for its bytes).
  void finish(uint64_t handle);
  // The engine rids of every request or item named `id` (ids from clients may repeat).
  std::vector<uint64_t> find(const std::string& id) const;
  std::vector<uint64_t> all_rids() const;
  size_t size() const;

 private:
  struct Entry {
    std::string id;
    std::vector<uint64_t> rids;
    std::vector<std::string> item_ids;  // empty, or one per rid
    bool finished = false;              // finish(): its names are free
  };
  bool in_use_locked(const std::string& name) const;

  mutable std::mutex mutex_;
  uint64_t next_handle_ = 1;
  std::map<uint64_t, Entry> entries_;
  std::map<uint64_t, std::vector<std::string>> claims_;
};

}  // namespace sgl::server
