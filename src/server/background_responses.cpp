// The driver of background replies (background_responses.h).
#include "server/background_responses.h"

#include <utility>
#include <vector>

namespace sgl::server {

BackgroundResponses::BackgroundResponses() : driver_([this] { drive(); }) {}

BackgroundResponses::~BackgroundResponses() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  driver_.join();
  // NOTE: destroyed outside the lock: a reply's destructor unregisters its wake, which an engine
  // thread may be calling (and waiting on the lock in) just then.
  std::map<std::string, std::unique_ptr<Entry>> left;
  {
    std::lock_guard lock(mutex_);
    left.swap(entries_);
  }
  for (auto& [id, entry] : left) entry->reply->cancel();
}

Status BackgroundResponses::run(const std::string& id, std::unique_ptr<DeferredReply> reply,
                                Callbacks callbacks) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return internal_error("the server is stopping");
    if (entries_.contains(id)) {
      return invalid_argument("a background response '" + id + "' is running already");
    }
    auto entry = std::make_unique<Entry>();
    entry->reply = std::move(reply);
    entry->callbacks = std::move(callbacks);
    entries_.emplace(id, std::move(entry));
  }
  changed_.notify_all();
  return Status::ok_status();
}

bool BackgroundResponses::cancel(const std::string& id) {
  std::unique_lock lock(mutex_);
  const auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  const Entry* entry = it->second.get();
  it->second->cancel_requested = true;
  changed_.notify_all();
  changed_.wait(lock, [&] {
    const auto now = entries_.find(id);
    return stopping_ || now == entries_.end() || now->second.get() != entry;
  });
  return true;
}

size_t BackgroundResponses::running() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void BackgroundResponses::wake(const std::string& id) {
  {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(id);
    if (it == entries_.end()) return;
    it->second->woken = true;
  }
  changed_.notify_all();
}

bool BackgroundResponses::has_work_locked() const {
  for (const auto& [id, entry] : entries_) {
    if (!entry->started || entry->woken || entry->cancel_requested) return true;
  }
  return false;
}

void BackgroundResponses::drive() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || has_work_locked(); });
    if (stopping_) return;
    // Entries are erased only here, so their addresses hold while the lock is let go.
    struct Work {
      std::string id;
      Entry* entry;
      bool cancel;
    };
    std::vector<Work> work;
    for (auto& [id, entry] : entries_) {
      if (entry->started && !entry->woken && !entry->cancel_requested) continue;
      work.push_back({id, entry.get(), entry->cancel_requested});
      entry->woken = false;
    }
    lock.unlock();
    std::vector<std::string> ended;
    for (Work& w : work) {
      if (step(w.id, *w.entry, w.cancel)) ended.push_back(w.id);
    }
    std::vector<std::unique_ptr<Entry>> gone;
    lock.lock();
    for (const std::string& id : ended) {
      const auto it = entries_.find(id);
      gone.push_back(std::move(it->second));
      entries_.erase(it);
    }
    if (!ended.empty()) changed_.notify_all();  // cancel() waits for its entry to go
    lock.unlock();
    gone.clear();  // (outside the lock, as in the destructor)
    lock.lock();
  }
}

bool BackgroundResponses::step(const std::string& id, Entry& entry, bool cancel) {
  if (cancel) {
    entry.reply->cancel();
    if (entry.callbacks.cancelled) entry.callbacks.cancelled();
    return true;
  }
  if (!entry.started) {
    entry.started = true;
    entry.reply->start([this, id] { wake(id); });
    if (entry.callbacks.started) entry.callbacks.started();
  }
  DeferredReply::Progress progress = entry.reply->poll();
  if (!progress.done) return false;
  HttpResponse response;
  if (progress.response) {
    response = std::move(*progress.response);
  } else {
    response.status = 500;
    response.body = R"({"error": {"message": "the reply ended without a response"}})";
  }
  if (entry.callbacks.done) entry.callbacks.done(std::move(response));
  return true;
}

}  // namespace sgl::server
