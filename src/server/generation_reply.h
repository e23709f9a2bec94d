// GenerationReply: the deferred reply of a generation request — polls its choices on the
// connection's strand, streams their deltas or assembles the whole response, aborts them when
// the client goes away, and keeps the request in the registry while it runs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/choice_stream.h"
#include "server/http_types.h"
#include "server/server_context.h"

namespace sgl::server {

class GenerationReply : public DeferredReply {
 public:
  // `id` is the request id clients see (and may pass to /abort_request); `item_ids`, when
  // given, one per choice, name each choice alone too (a batch's items).
  GenerationReply(ServerContext& ctx, std::string id,
                  std::vector<std::unique_ptr<ChoiceStream>> choices, bool stream,
                  std::vector<std::string> item_ids = {});
  ~GenerationReply() override;  // unregisters; unfinished choices abort

  void start(std::function<void()> wake) override;
  Progress poll() override;
  void cancel() override;

 protected:
  // Streaming: the event-stream bytes for one choice's delta (may be empty).
  virtual std::string stream_delta(size_t index, const ChoiceDelta& delta) = 0;
  // Streaming: the bytes after every choice finished, "data: [DONE]" included.
  virtual std::string stream_end() = 0;
  // Non-streaming: the response once every choice finished.
  virtual HttpResponse complete() = 0;

  // Every delta of choice `index` as it arrives, before any --stream-interval pacing.
  virtual void pulled(size_t /*index*/, const ChoiceDelta& /*delta*/) {}

  // A choice the server aborted (FinishInfo::error: a timeout, a full queue, shutdown) ends the
  // reply as SGLang ends it: without its other choices, as this error event on a stream (then
  // stream_end), as this error response otherwise. Routes override the shapes (Messages: its
  // error; /generate and Responses: their own delta, which says the reply failed).
  virtual std::string stream_error(size_t index, const ChoiceDelta& delta);
  virtual HttpResponse error_reply(const FinishInfo& finish);

  ServerContext& ctx_;
  const std::string id_;
  const int64_t created_;
  std::vector<std::unique_ptr<ChoiceStream>> choices_;

 private:
  // --stream-interval: the delta to stream for choice `index` now, `d` merged into what it holds
  // back (nullopt: hold it until the interval's tokens are new, or the choice's first or last).
  std::optional<ChoiceDelta> paced(size_t index, ChoiceDelta d);

  const bool stream_;
  uint64_t registry_handle_ = 0;
  bool done_ = false;
  std::vector<std::optional<ChoiceDelta>> held_;  // per choice, with --stream-interval
  std::vector<bool> streamed_;                    // per choice: a delta was sent
};

}  // namespace sgl::server
