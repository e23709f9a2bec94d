// BackgroundResponses: the Responses API's background mode (background: true) runs a reply with
// no connection waiting for it. One thread drives every such reply to its end (polling it when it
// wakes, as a connection's strand would) and hands its response to the route, which stores it;
// a cancel aborts the reply on that thread. Bounded by the engines' queues, as any request.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "server/http_types.h"

namespace sgl::server {

class BackgroundResponses {
 public:
  struct Callbacks {
    std::function<void()> started;           // the reply runs (status in_progress)
    std::function<void(HttpResponse)> done;  // its response (its status may be an error)
    std::function<void()> cancelled;         // cancel() aborted it
  };

  BackgroundResponses();
  ~BackgroundResponses();  // aborts the replies still running (no callback), then joins
  BackgroundResponses(const BackgroundResponses&) = delete;
  BackgroundResponses& operator=(const BackgroundResponses&) = delete;

  // Runs the non-streaming `reply` under `id` (unique among those running, else InvalidArgument)
  // to its end; the callbacks run on the driver thread, one at a time for all replies.
  Status run(const std::string& id, std::unique_ptr<DeferredReply> reply, Callbacks callbacks);
  // Aborts reply `id` if it still runs and waits until the driver has (its `cancelled` callback
  // ran) or it ended first (its `done` ran). False: no reply `id` runs.
  bool cancel(const std::string& id);
  size_t running() const;

 private:
  struct Entry {
    std::unique_ptr<DeferredReply> reply;
    Callbacks callbacks;
    bool started = false;
    bool woken = true;  // poll once it starts
    bool cancel_requested = false;
  };

  void drive();
  // Starts, polls or aborts one entry (outside the lock); true once it has ended.
  bool step(const std::string& id, Entry& entry, bool cancel);
  // A reply's wake: poll it again (nothing once it has gone).
  void wake(const std::string& id);
  bool has_work_locked() const;

  mutable std::mutex mutex_;
  std::condition_variable changed_;  // work for the driver, or an entry gone (cancel's wait)
  std::map<std::string, std::unique_ptr<Entry>> entries_;
  bool stopping_ = false;
  std::thread driver_;  // last: starts once the rest is made
};

}  // namespace sgl::server
