// GenerationReply.
#include "server/generation_reply.h"

#include "server/engine_request.h"
#include "server/errors.h"

namespace sgl::server {

GenerationReply::GenerationReply(ServerContext& ctx, std::string id,
                                 std::vector<std::unique_ptr<ChoiceStream>> choices, bool stream,
                                 std::vector<std::string> item_ids)
    : ctx_(ctx),
      id_(std::move(id)),
      created_(unix_time()),
      choices_(std::move(choices)),
      stream_(stream),
      held_(choices_.size()),
      streamed_(choices_.size(), false) {
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
  const FinishInfo* failed = nullptr;  // the first choice the server aborted
  for (size_t i = 0; i < choices_.size() && !failed; ++i) {
    std::optional<ChoiceDelta> d = choices_[i]->pull();
    if (d) pulled(i, *d);
    if (d && stream_) d = paced(i, std::move(*d));
    if (choices_[i]->finished() && choices_[i]->finish().error()) {
      failed = &choices_[i]->finish();
      if (d && stream_) p.data += stream_error(i, *d);
    } else if (d && stream_) {
      p.data += stream_delta(i, *d);
    }
    all_finished = all_finished && choices_[i]->finished();
  }
  if (!all_finished && !failed) return p;
  done_ = true;
  p.done = true;
  ctx_.registry.finish(registry_handle_);  // its id may name a new request once answered
  if (failed) {  // the others end with it and for its reason, as SGLang's reply does
    for (auto& c : choices_) c->abort(failed->message, failed->status);
  }
  if (stream_) {
    p.data += stream_end();
  } else {
    p.response = failed ? error_reply(*failed) : complete();
  }
  return p;
}

std::optional<ChoiceDelta> GenerationReply::paced(size_t index, ChoiceDelta d) {
  const int64_t interval = ctx_.info.api.stream_interval;
  if (interval <= 1) return d;
  if (held_[index]) {
    append_delta(*held_[index], d);
  } else {
    held_[index] = std::move(d);
  }
  const bool due = choices_[index]->finished() || !streamed_[index] ||
                   static_cast<int64_t>(held_[index]->token_ids.size()) >= interval;
  if (!due) return std::nullopt;
  streamed_[index] = true;
  return std::exchange(held_[index], std::nullopt);
}

std::string GenerationReply::stream_error(size_t index, const ChoiceDelta& /*delta*/) {
  const FinishInfo& f = choices_[index]->finish();
  return error_event(f.status, f.message);
}

HttpResponse GenerationReply::error_reply(const FinishInfo& finish) {
  return error_response(finish.status, finish.message);
}

void GenerationReply::cancel() {
  if (done_) return;
  done_ = true;
  for (auto& c : choices_) c->abort();
}

}  // namespace sgl::server
