// GenerationReply.
#include "server/generation_reply.h"

#include "server/engine_request.h"

namespace sgl::server {

GenerationReply::GenerationReply(ServerContext& ctx, std::string id,
                                 std::vector<std::unique_ptr<ChoiceStream>> choices, bool stream,
                                 std::vector<std::string> item_ids)
    : ctx_(ctx),
      id_(std::move(id)),
      created_(unix_time()),
      choices_(std::move(choices)),
      stream_(stream) {
  std::vector<uint64_t> rids;
  for (const auto& c : choices_) rids.push_back(c->rid());
  registry_handle_ = ctx_.registry.add(id_, std::move(rids), std::move(item_ids));
}

GenerationReply::~GenerationReply() {
  choices_.clear();  // aborts what is unfinished before the registry forgets the request
  ctx_.registry.remove(registry_handle_);
}

void GenerationReply::start(std::function<void()> wake) {
  for (auto& c : choices_) c->set_notify(wake);
}

DeferredReply::Progress GenerationReply::poll() {
  Progress p;
  if (done_) {
    p.done = true;
    return p;
  }
  bool all_finished = true;
  for (size_t i = 0; i < choices_.size(); ++i) {
    if (std::optional<ChoiceDelta> d = choices_[i]->pull(); d && stream_) {
      p.data += stream_delta(i, *d);
    }
    all_finished = all_finished && choices_[i]->finished();
  }
  if (!all_finished) return p;
  done_ = true;
  p.done = true;
  if (stream_) {
    p.data += stream_end();
    ctx_.metrics.count_response(200);
  } else {
    p.response = complete();
    ctx_.metrics.count_response(p.response->status);
  }
  return p;
}

void GenerationReply::cancel() {
  if (done_) return;
  done_ = true;
  for (auto& c : choices_) c->abort();
  ctx_.metrics.count_response(499);  // the client closed the connection (nginx's code)
}

}  // namespace sgl::server
