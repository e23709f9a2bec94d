// PreparedReply.
#include "server/prepared_reply.h"

#include <exception>
#include <mutex>
#include <string>

#include "server/errors.h"

namespace sgl::server {

Reply PreparedReply::submit(ServerContext& ctx, WorkPool& pool, bool event_stream,
                            Prepare prepare) {
  std::unique_ptr<PreparedReply> reply(new PreparedReply(ctx));
  auto accepted = pool.submit(reply->shared_->cancelled, [&ctx, shared = reply->shared_,
                                                          prepare = std::move(prepare)](
                                                             const std::atomic<bool>& cancelled) {
    std::optional<Reply> result;
    // Preparations do not throw; if one does, its client gets a 500 rather than no reply.
    try {
      if (!cancelled.load()) result = prepare(cancelled);
    } catch (const std::exception& e) {
      result =
          Reply::of(error_response(500, std::string("preparing the request failed: ") + e.what()));
    } catch (...) {
      result = Reply::of(error_response(500, "preparing the request failed"));
    }
    if (cancelled.load()) {
      // The client went away (nobody reads this) or the server stops (the client gets a
      // 503); a generation the preparation started aborts as its reply goes.
      ctx.metrics.count_prepare_cancelled();
      result = Reply::of(error_response(503, "the request was cancelled: the server stops"));
    }
    std::function<void()> wake;
    {
      std::lock_guard<std::mutex> lock(shared->mutex);
      shared->result = std::move(result);
      wake = shared->wake;
    }
    if (wake) wake();
  });
  if (!accepted) {
    return Reply::of(error_response(503, "server busy: too many requests are being prepared"));
  }
  return Reply::later(std::move(reply), event_stream);
}

void PreparedReply::start(std::function<void()> wake) {
  bool ready = false;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->wake = wake;
    ready = shared_->result.has_value();
  }
  wake_ = std::move(wake);
  if (ready) wake_();
}

DeferredReply::Progress PreparedReply::poll() {
  if (inner_) return inner_->poll();
  Progress p;
  if (done_) {
    p.done = true;
    return p;
  }
  std::optional<Reply> result;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    result.swap(shared_->result);
  }
  if (!result) return p;
  if (!result->deferred) return answer(std::move(result->response));
  inner_ = std::move(result->deferred);
  inner_->start(wake_);
  return inner_->poll();
}

DeferredReply::Progress PreparedReply::answer(HttpResponse response) {
  done_ = true;
  // Nothing of an event stream went out yet: the session answers this instead.
  Progress p;
  p.done = true;
  p.response = std::move(response);
  return p;
}

void PreparedReply::cancel() {
  shared_->cancelled->store(true);
  if (inner_) return inner_->cancel();
  if (done_) return;
  done_ = true;
}

Reply on_admin_pool(ServerContext& ctx, std::function<Reply()> answer) {
  return PreparedReply::submit(
      ctx, ctx.admin_pool, false,
      [answer = std::move(answer)](const std::atomic<bool>&) { return answer(); });
}

Reply under_generation_control(ServerContext& ctx, std::function<Reply()> answer) {
  return on_admin_pool(ctx, [&ctx, answer = std::move(answer)] {
    std::lock_guard lock(ctx.generation_control);
    return answer();
  });
}

}  // namespace sgl::server
