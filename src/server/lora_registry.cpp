// LoraRegistry: names to ids, leases, and the load / unload steps.
#include "server/lora_registry.h"

#include <chrono>
#include <thread>

#include "core/check.h"
#include "engine/model_engine.h"

namespace sgl::server {

LoraRegistry::LoraRegistry(bool enabled, const std::vector<model::LoraAdapterPath>& initial,
                           int64_t max_loaded)
    : enabled_(enabled), max_loaded_(max_loaded) {
  for (const model::LoraAdapterPath& adapter : initial) {
    slots_.push_back({State::kServed, adapter, 0, std::make_shared<const int>(0)});
    ++loads_;
  }
}

LoraRegistry::Slot* LoraRegistry::served_locked(const std::string& name) {
  for (Slot& slot : slots_) {
    if (slot.state == State::kServed && slot.adapter.name == name) return &slot;
  }
  return nullptr;
}

Result<LoraRegistry::Use> LoraRegistry::acquire(const std::string& name) {
  if (!enabled_) {
    return invalid_argument("LoRA adapter '" + name +
                            "' was requested, but LoRA is not enabled. Please launch the server "
                            "with --enable-lora flag and preload adapters using --lora-paths.");
  }
  std::lock_guard lock(mutex_);
  if (Slot* slot = served_locked(name)) {
    slot->last_use = ++use_clock_;
    return Use{static_cast<int32_t>(slot - slots_.data() + 1), slot->lease};
  }
  std::string loaded;
  for (const Slot& slot : slots_) {
    if (slot.state == State::kServed) loaded += (loaded.empty() ? "" : ", ") + slot.adapter.name;
  }
  return invalid_argument("The following requested LoRA adapters are not loaded: " + name +
                          "\nLoaded adapters: [" + loaded + "].");
}

std::vector<model::LoraAdapterPath> LoraRegistry::adapters() const {
  std::lock_guard lock(mutex_);
  std::vector<model::LoraAdapterPath> out;
  for (const Slot& slot : slots_) {
    if (slot.state == State::kServed) out.push_back(slot.adapter);
  }
  return out;
}

Result<LoraRegistry::Reservation> LoraRegistry::reserve(const model::LoraAdapterPath& adapter) {
  if (!enabled_) {
    return invalid_argument("LoRA is not enabled. Please set `--enable-lora` to enable LoRA.");
  }
  std::lock_guard lock(mutex_);
  for (const Slot& slot : slots_) {
    if (slot.state != State::kFree && slot.adapter.name == adapter.name) {
      return invalid_argument(slot.state == State::kUnloading
                                  ? "LoRA adapter '" + adapter.name + "' is being unloaded"
                                  : "The LoRA adapter '" + adapter.name + "' is already loaded");
    }
  }
  size_t index = 0;
  while (index < slots_.size() && slots_[index].state != State::kFree) ++index;
  if (index == slots_.size()) slots_.emplace_back();
  slots_[index] = {State::kLoading, adapter, 0, std::make_shared<const int>(0)};
  return Reservation{static_cast<int32_t>(index + 1),
                     engine::lora_cache_key(++loads_, adapter.name)};
}

void LoraRegistry::commit(int32_t id) {
  std::lock_guard lock(mutex_);
  Slot& slot = slots_.at(static_cast<size_t>(id - 1));
  SGL_CHECK(slot.state == State::kLoading) << "LoRA adapter " << id << " was not reserved";
  slot.state = State::kServed;
  slot.last_use = ++use_clock_;
}

void LoraRegistry::cancel(int32_t id) {
  std::lock_guard lock(mutex_);
  Slot& slot = slots_.at(static_cast<size_t>(id - 1));
  SGL_CHECK(slot.state == State::kLoading) << "LoRA adapter " << id << " was not reserved";
  slot = Slot();
}

Result<std::optional<std::string>> LoraRegistry::eviction_for_load() const {
  std::lock_guard lock(mutex_);
  int64_t held = 0;
  const Slot* oldest = nullptr;
  for (const Slot& slot : slots_) {
    if (slot.state == State::kFree) continue;
    ++held;
    if (slot.state == State::kServed && !slot.adapter.pinned &&
        (oldest == nullptr || slot.last_use < oldest->last_use)) {
      oldest = &slot;
    }
  }
  if (max_loaded_ <= 0 || held < max_loaded_) return std::optional<std::string>();
  if (oldest == nullptr) {
    return resource_exhausted("--max-loaded-loras " + std::to_string(max_loaded_) +
                              " adapters are loaded and none can be unloaded to make room (each "
                              "is pinned or being loaded or unloaded)");
  }
  return std::optional<std::string>(oldest->adapter.name);
}

Result<int32_t> LoraRegistry::begin_unload(const std::string& name) {
  if (!enabled_) {
    return invalid_argument("LoRA is not enabled. Please set `--enable-lora` to enable LoRA.");
  }
  std::lock_guard lock(mutex_);
  Slot* slot = served_locked(name);
  if (slot == nullptr) {
    return invalid_argument("LoRA adapter '" + name + "' is not loaded");
  }
  slot->state = State::kUnloading;
  return static_cast<int32_t>(slot - slots_.data() + 1);
}

bool LoraRegistry::wait_unused(int32_t id, const std::function<bool()>& give_up) {
  // No new lease can be taken (the slot is unloading): the count only falls. Requests end in
  // milliseconds to minutes; a short poll costs nothing beside them.
  for (;;) {
    const bool giving_up = give_up();
    {
      std::lock_guard lock(mutex_);
      Slot& slot = slots_.at(static_cast<size_t>(id - 1));
      SGL_CHECK(slot.state == State::kUnloading) << "LoRA adapter " << id << " is not unloading";
      if (slot.lease.use_count() == 1) return true;
      if (giving_up) {
        slot.state = State::kServed;
        return false;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void LoraRegistry::finish_unload(int32_t id) {
  std::lock_guard lock(mutex_);
  Slot& slot = slots_.at(static_cast<size_t>(id - 1));
  SGL_CHECK(slot.state == State::kUnloading) << "LoRA adapter " << id << " is not unloading";
  slot = Slot();
}

}  // namespace sgl::server
