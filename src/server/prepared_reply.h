// PreparedReply: a deferred reply whose preparation (chat-template rendering, tokenization,
// submission to the engine) runs on the work pool instead of an HTTP I/O thread; once prepared,
// it answers as the reply the preparation produced.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "server/http_types.h"
#include "server/server_context.h"

namespace sgl::server {

class PreparedReply final : public DeferredReply {
 public:
  // Runs on a pool thread; returns soon once `cancelled` is true (the client went away or the
  // server stops). Must not throw.
  using Prepare = std::function<Reply(const std::atomic<bool>& cancelled)>;

  // Queues `prepare` on `pool` (ctx.pool: the request pool): a deferred reply (an event stream
  // when `event_stream`), or a 503 at once when the pool's queue is full.
  static Reply submit(ServerContext& ctx, bool event_stream, Prepare prepare) {
    return submit(ctx, ctx.pool, event_stream, std::move(prepare));
  }
  static Reply submit(ServerContext& ctx, WorkPool& pool, bool event_stream, Prepare prepare);

  void start(std::function<void()> wake) override;
  Progress poll() override;
  void cancel() override;

 private:
  // What the pool thread and the connection share.
  struct Shared {
    std::mutex mutex;
    std::optional<Reply> result;
    std::function<void()> wake;
    std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  };

  explicit PreparedReply(ServerContext& ctx) : ctx_(ctx), shared_(std::make_shared<Shared>()) {}
  Progress answer(HttpResponse response);

  ServerContext& ctx_;
  std::shared_ptr<Shared> shared_;
  std::function<void()> wake_;
  std::unique_ptr<DeferredReply> inner_;  // the prepared reply, once it answers later
  bool done_ = false;
};

// Endpoints that ask the engine loops (stats, a cache flush, a pause) wait for each loop's
// current step: they answer from the admin pool, so a long prefill never holds an HTTP I/O
// thread (which every connection, /health included, shares), and a queue of slow renders never
// delays them.
Reply on_admin_pool(ServerContext& ctx, std::function<Reply()> answer);
// on_admin_pool holding ctx.generation_control: the routes that pause, continue, update or
// release the engines' state run one at a time.
Reply under_generation_control(ServerContext& ctx, std::function<Reply()> answer);

}  // namespace sgl::server
