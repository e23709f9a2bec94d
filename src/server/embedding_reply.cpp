// EmbeddingReply and the submission of encode requests.
#include "server/embedding_reply.h"

#include <chrono>

#include "server/engine_request.h"
#include "server/errors.h"
#include "server/request_log_json.h"

namespace sgl::server {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

EmbeddingReply::EmbeddingReply(ServerContext& ctx, std::string id,
                               std::vector<std::shared_ptr<engine::RequestStream>> streams,
                               Format format, bool log_metrics)
    : ctx_(ctx),
      streams_(std::move(streams)),
      format_(std::move(format)),
      log_metrics_(log_metrics),
      results_(streams_.size()),
      finished_(streams_.size(), false),
      start_s_(now_s()) {
  std::vector<uint64_t> rids;
  for (const auto& s : streams_) rids.push_back(s->rid());
  registry_handle_ = ctx_.registry.add(id, std::move(rids));
}

EmbeddingReply::~EmbeddingReply() {
  for (size_t i = 0; i < streams_.size(); ++i) {
    streams_[i]->set_notify({});
    if (!finished_[i]) ctx_.engine.abort(streams_[i]->rid());
  }
  ctx_.registry.remove(registry_handle_);
}

void EmbeddingReply::start(std::function<void()> wake) {
  for (const auto& s : streams_) s->set_notify(wake);
}

DeferredReply::Progress EmbeddingReply::poll() {
  Progress p;
  if (done_) {
    p.done = true;
    return p;
  }
  bool all_finished = true;
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (!finished_[i]) {
      // An encode request has one event: its embedding with its finish.
      std::optional<engine::StreamEvent> event = streams_[i]->next(std::chrono::milliseconds(0));
      if (event && event->finished) {
        finished_[i] = true;
        const scheduler::FinishState& f = *event->finished;
        const double latency = now_s() - start_s_;
        if (log_metrics_) {
          ctx_.metrics.observe_finished(latency, scheduler::finish_reason_name(f.reason),
                                        event->usage.prompt_tokens, 0, event->usage.cached_tokens);
        }
        const RequestLogView log = ctx_.request_log.view();
        if (log_metrics_ && log.enabled) {
          request_log::json out = request_log::json::object();
          if (log.level >= 2) out["embedding"] = event->embedding;  // (0 and 1 drop it)
          ctx_.request_log.write(request_log::finished_line(
              log,
              {std::to_string(streams_[i]->rid()), event->usage.prompt_tokens, 0,
               event->usage.cached_tokens, scheduler::finish_reason_name(f.reason), latency},
              out));
        }
        if (event->embedding.empty()) {
          if (!aborted_) aborted_ = f.message.empty() ? "no embedding came back" : f.message;
        } else {
          results_[i] = Encoded{std::move(event->embedding), event->usage.prompt_tokens,
                                event->usage.cached_tokens};
        }
      }
    }
    all_finished = all_finished && finished_[i];
  }
  if (!all_finished) return p;
  done_ = true;
  p.done = true;
  ctx_.registry.finish(registry_handle_);  // its id may name a new request once answered
  if (aborted_) {
    p.response = error_response(503, "the embedding request was aborted: " + *aborted_);
  } else {
    std::vector<Encoded> results;
    results.reserve(results_.size());
    for (std::optional<Encoded>& r : results_) results.push_back(std::move(*r));
    p.response = format_(results, now_s() - start_s_);
  }
  return p;
}

void EmbeddingReply::cancel() {
  if (done_) return;
  done_ = true;
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (!finished_[i]) ctx_.engine.abort(streams_[i]->rid());
    finished_[i] = true;
  }
}

Result<std::vector<std::shared_ptr<engine::RequestStream>>> submit_encodes(
    ServerContext& ctx, const std::vector<std::vector<int32_t>>& prompts, bool logged,
    std::optional<int64_t> priority) {
  for (const std::vector<int32_t>& ids : prompts) SGL_RETURN_IF_ERROR(check_prompt_ids(ctx, ids));
  std::vector<std::shared_ptr<engine::RequestStream>> streams;
  streams.reserve(prompts.size());
  for (const std::vector<int32_t>& ids : prompts) {
    auto stream = ctx.engine.encode(ids, priority);
    if (!stream.ok()) {
      for (const auto& s : streams) ctx.engine.abort(s->rid());
      return stream.status();
    }
    streams.push_back(std::move(stream).value());
  }
  const RequestLogView log = ctx.request_log.view();
  for (size_t i = 0; logged && log.enabled && i < prompts.size(); ++i) {
    request_log::json request = {{"prompt_tokens", prompts[i].size()}};
    if (log.level >= 2) request["input_ids"] = prompts[i];  // (levels 0 and 1 drop it)
    ctx.request_log.write(
        request_log::received_line(log, std::to_string(streams[i]->rid()), request));
  }
  return streams;
}

}  // namespace sgl::server
