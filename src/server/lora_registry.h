// LoraRegistry: the LoRA adapters a server serves by name (SGLang's LoRARegistry): the start's
// (--lora-paths) and those /load_lora_adapter adds, each with the engine's id for it. A request
// takes a lease on its adapter, held with the request until the engine lets it go, so an unload
// waits for the requests already running with the adapter while new ones are refused.
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/lora_adapter.h"

namespace sgl::server {

class LoraRegistry {
 public:
  // `initial`: the adapters the engine has as ids 1, 2, ...; max_loaded 0: no bound.
  LoraRegistry(bool enabled, const std::vector<model::LoraAdapterPath>& initial,
               int64_t max_loaded);

  struct Use {
    int32_t id = 0;                     // the engine's (GenerateRequest::lora_id)
    std::shared_ptr<const void> lease;  // GenerateRequest::lora_lease
  };
  // The adapter `name` for a request, in SGLang's words when it is not served.
  Result<Use> acquire(const std::string& name);
  // The adapters served, in id order.
  std::vector<model::LoraAdapterPath> adapters() const;

  // /load_lora_adapter, in three steps around the engines' load: a free id for `adapter` and
  // the key it caches under (engine::lora_cache_key), refused while the name is served or being
  // unloaded; then commit (requests may name it) or cancel.
  struct Reservation {
    int32_t id = 0;
    std::string key;
  };
  Result<Reservation> reserve(const model::LoraAdapterPath& adapter);
  void commit(int32_t id);
  void cancel(int32_t id);
  // With --max-loaded-loras, the adapter a load must unload first: the least recently used of
  // those not pinned; none while there is room; kResourceExhausted when every one is pinned.
  Result<std::optional<std::string>> eviction_for_load() const;

  // /unload_lora_adapter: new requests naming `name` are refused at once; then wait_unused
  // returns true when no request holds a lease on it, after which the engines unload id and
  // finish_unload frees it. It gives up, serving the adapter again, and returns false once
  // `give_up()` says so while leases remain (the engine paused: they would never end).
  Result<int32_t> begin_unload(const std::string& name);
  bool wait_unused(int32_t id, const std::function<bool()>& give_up);
  void finish_unload(int32_t id);

 private:
  enum class State { kFree, kLoading, kServed, kUnloading };
  struct Slot {
    State state = State::kFree;
    model::LoraAdapterPath adapter;
    uint64_t last_use = 0;  // use_clock_ at its latest acquire
    // Leases are copies of this; the slot is unused when it holds the only one.
    std::shared_ptr<const int> lease;
  };
  Slot* served_locked(const std::string& name);

  const bool enabled_;
  const int64_t max_loaded_;
  mutable std::mutex mutex_;
  std::vector<Slot> slots_;  // id i at [i - 1]
  uint64_t loads_ = 0;       // loads so far, the start's included (keys stay unique)
  uint64_t use_clock_ = 0;
};

}  // namespace sgl::server
