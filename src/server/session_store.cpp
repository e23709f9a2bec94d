// SessionStore: sessions' request trees, the history a turn continues, idle timeouts.
#include "server/session_store.h"

#include <algorithm>

namespace sgl::server {

Status SessionStore::open(const std::string& id, std::optional<double> timeout_s) {
  std::lock_guard lock(mutex_);
  const Clock::time_point now = now_();
  reap_locked(now);
  if (sessions_.count(id)) {
    return invalid_argument("Failed to open the session: session id " + id + " is already open");
  }
  sessions_[id] = Session{timeout_s, now, {}};
  return Status::ok_status();
}

void SessionStore::close(const std::string& id) {
  std::lock_guard lock(mutex_);
  sessions_.erase(id);
}

void SessionStore::drop_children(Session& s, const std::string& rid,
                                 std::vector<std::string>& to_abort) {
  std::vector<std::string> work = std::exchange(s.nodes.at(rid).children, {});
  while (!work.empty()) {
    const std::string child = std::move(work.back());
    work.pop_back();
    auto it = s.nodes.find(child);
    if (it == s.nodes.end()) continue;
    if (!it->second.finished) to_abort.push_back(child);
    work.insert(work.end(), it->second.children.begin(), it->second.children.end());
    s.nodes.erase(it);
  }
}

Result<SessionStore::Turn> SessionStore::begin(const SessionParams& p, const std::string& rid,
                                               std::vector<int32_t> prompt_ids,
                                               std::optional<int32_t> bos) {
  std::lock_guard lock(mutex_);
  const Clock::time_point now = now_();
  reap_locked(now);
  auto found = sessions_.find(p.id);
  if (found == sessions_.end()) {
    return invalid_argument("Invalid request: session id " + p.id + " does not exist");
  }
  Session& s = found->second;
  if (s.nodes.count(rid)) {
    return invalid_argument("Invalid request: rid " + rid + " already names a request of session " +
                            p.id);
  }
  Turn turn;
  const Node* last = nullptr;
  if (p.rid) {
    auto it = s.nodes.find(*p.rid);
    if (it == s.nodes.end()) return invalid_argument("Invalid request session id");
    if (!it->second.finished) {
      if (!p.replace) {
        return invalid_argument("Session request is appending to a request that hasn't finished.");
      }
      turn.to_abort.push_back(*p.rid);  // continued from its output so far
    }
    if (p.replace) drop_children(s, *p.rid, turn.to_abort);
    last = &it->second;
  } else if (p.replace) {
    for (const auto& [name, node] : s.nodes) {
      if (!node.finished) turn.to_abort.push_back(name);
    }
    s.nodes.clear();
  }
  if (last != nullptr) {
    if (bos && !prompt_ids.empty() && prompt_ids.front() == *bos) {
      prompt_ids.erase(prompt_ids.begin());
    }
    std::vector<int32_t> history = last->input_ids;
    if (!p.drop_previous_output) {
      history.insert(history.end(), last->output_ids.begin(), last->output_ids.end());
    }
    if (p.offset != 0) {  // Python's history[:offset]
      const auto n = static_cast<int64_t>(history.size());
      const int64_t end = p.offset < 0 ? std::max<int64_t>(n + p.offset, 0) : std::min(p.offset, n);
      history.resize(static_cast<size_t>(end));
    }
    history.insert(history.end(), prompt_ids.begin(), prompt_ids.end());
    turn.input_ids = std::move(history);
  } else {
    turn.input_ids = std::move(prompt_ids);
  }
  if (turn.input_ids.empty()) {
    return invalid_argument("A session request must contain input tokens after restoring history.");
  }
  Node node;
  node.input_ids = turn.input_ids;
  if (p.rid) {
    node.parent = *p.rid;
    s.nodes.at(*p.rid).children.push_back(rid);
  }
  s.nodes.emplace(rid, std::move(node));
  s.last_active = now;
  return turn;
}

void SessionStore::append_output(const std::string& id, const std::string& rid,
                                 std::span<const int32_t> new_ids) {
  if (new_ids.empty()) return;
  std::lock_guard lock(mutex_);
  auto s = sessions_.find(id);
  if (s == sessions_.end()) return;
  auto node = s->second.nodes.find(rid);
  if (node == s->second.nodes.end() || node->second.finished) return;
  node->second.output_ids.insert(node->second.output_ids.end(), new_ids.begin(), new_ids.end());
}

void SessionStore::finish(const std::string& id, const std::string& rid,
                          std::span<const int32_t> output_ids) {
  std::lock_guard lock(mutex_);
  auto s = sessions_.find(id);
  if (s == sessions_.end()) return;
  auto node = s->second.nodes.find(rid);
  if (node == s->second.nodes.end()) return;
  node->second.output_ids.assign(output_ids.begin(), output_ids.end());
  node->second.finished = true;
  s->second.last_active = now_();
}

void SessionStore::abandon(const std::string& id, const std::string& rid) {
  std::lock_guard lock(mutex_);
  auto s = sessions_.find(id);
  if (s == sessions_.end()) return;
  auto node = s->second.nodes.find(rid);
  if (node == s->second.nodes.end()) return;
  if (auto parent = s->second.nodes.find(node->second.parent); parent != s->second.nodes.end()) {
    std::erase(parent->second.children, rid);
  }
  s->second.nodes.erase(node);
}

size_t SessionStore::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

void SessionStore::reap_locked(Clock::time_point now) {
  std::erase_if(sessions_, [now](const auto& entry) {
    const Session& s = entry.second;
    return s.timeout_s && std::chrono::duration<double>(now - s.last_active).count() > *s.timeout_s;
  });
}

}  // namespace sgl::server
