// FakeBatchRunner: a stand-in model whose next token is a hash of the tokens it finds in the
// KV slots of the request's row. Wrong input ids, wrong req_to_token rows (or writes the batches
// do not carry) or wrongly shared prefix slots all change the output, so matching the reference
// proves the bookkeeping.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "cache/req_to_token_pool.h"
#include "runner/batch_executor.h"

namespace sgl::test {

class FakeBatchRunner final : public runner::ComputingBatchRunner {
 public:
  // Keeps its own copy of `pool`'s table, as ModelBatchRunner does.
  FakeBatchRunner(const cache::ReqToTokenPool& pool, int32_t num_kv_slots, int32_t vocab)
      : table_(pool.size(), pool.max_context_len()),
        vocab_(vocab),
        kv_(num_kv_slots, -1),
        tokens_(static_cast<size_t>(pool.size()) * pool.max_context_len(), -1) {}

  // The reference: next token after `sequence`, or after its last `memory` tokens (0: all;
  // a short memory makes the output cycle, so n-gram drafts are accepted).
  static int32_t next_token(const std::vector<int32_t>& sequence, int32_t vocab,
                            int32_t memory = 0) {
    uint64_t h = 1469598103934665603ull;
    const size_t from = memory > 0 && sequence.size() > static_cast<size_t>(memory)
                            ? sequence.size() - static_cast<size_t>(memory)
                            : 0;
    for (size_t i = from; i < sequence.size(); ++i) {
      h = (h ^ static_cast<uint64_t>(sequence[i] + 7)) * 1099511628211ull;
    }
    return static_cast<int32_t>((h >> 17) % static_cast<uint64_t>(vocab));
  }

  void set_memory(int32_t memory) { memory_ = memory; }
  int32_t memory() const { return memory_; }
  // Each batch takes at least this long (a model's step time; set before the engine starts).
  void set_step_time(std::chrono::microseconds t) { step_time_ = t; }

  runner::ExecResult compute(const runner::ExecBatch& batch) override {
    runner::ExecResult result;
    result.batch_id = batch.id;
    table_.apply(batch.req_to_token_writes);
    size_t slot_offset = 0;  // r's slots in batch.out_cache_loc
    for (const runner::ExecRequest& r : batch.requests) {
      int32_t* row_tokens =
          tokens_.data() + static_cast<size_t>(r.req_pool_idx) * table_.max_context_len();
      if (!r.input_ids.empty()) {
        std::copy(r.input_ids.begin(), r.input_ids.end(), row_tokens + r.prefix_len);
      }
      for (int32_t i = 0; i < r.extend_len; ++i) {
        // The "KV" is the token.
        kv_.at(batch.out_cache_loc.at(slot_offset + i)) = row_tokens[r.prefix_len + i];
      }
      slot_offset += r.extend_len;
      if (r.return_hidden_states) {  // a "hidden state" per token: {position, token there}
        result.hidden_states.resize(batch.requests.size());
        std::vector<float>& rows =
            result.hidden_states[static_cast<size_t>(&r - batch.requests.data())];
        for (int32_t i = 0; i < r.extend_len; ++i) {
          rows.push_back(static_cast<float>(r.prefix_len + i));
          rows.push_back(static_cast<float>(row_tokens[r.prefix_len + i]));
        }
      }
      if (r.return_routed_experts) {  // "expert ids" per token: {token there, position}
        result.routed_experts.resize(batch.requests.size());
        std::vector<int32_t>& ids =
            result.routed_experts[static_cast<size_t>(&r - batch.requests.data())];
        for (int32_t i = 0; i < r.extend_len; ++i) {
          ids.push_back(row_tokens[r.prefix_len + i]);
          ids.push_back(r.prefix_len + i);
        }
      }
      const auto slots = table_.row(r.req_pool_idx);
      // One result per sampled position: the last one, or a speculative verify's last
      // sample_rows (each the reference's next token after the sequence up to it).
      const int32_t end = r.prefix_len + r.extend_len;
      // Each sample lands on the position after its own (a decode step reads the accepted one).
      for (int32_t k = r.sample_rows; k >= 1; --k) {
        std::vector<int32_t> seen;
        for (int32_t p = 0; p < end - k + 1; ++p) seen.push_back(kv_.at(slots[p]));
        const int32_t next = next_token(seen, vocab_, memory_);
        if (end - k + 1 < table_.max_context_len()) row_tokens[end - k + 1] = next;
        result.output.next_token_ids.push_back(next);
      }
      computed_tokens_ += r.extend_len;
    }
    ++batches_;
    if (step_time_.count() > 0) std::this_thread::sleep_for(step_time_);
    return result;
  }

  int64_t computed_tokens() const { return computed_tokens_; }
  int64_t batches() const { return batches_; }

 private:
  cache::ReqToTokenTable table_;
  int32_t vocab_;
  int32_t memory_ = 0;
  std::chrono::microseconds step_time_{0};
  std::vector<int32_t> kv_;      // [num_kv_slots]: token id whose "KV" the slot holds
  std::vector<int32_t> tokens_;  // [rows, context]: token ids per row position
  int64_t computed_tokens_ = 0;
  int64_t batches_ = 0;
};

// Expected output of a greedy fake-model request run alone.
inline std::vector<int32_t> fake_reference(std::vector<int32_t> prompt, int32_t max_new,
                                           int32_t vocab, const std::vector<int32_t>& stop_ids,
                                           int32_t memory = 0) {
  std::vector<int32_t> out;
  while (static_cast<int32_t>(out.size()) < max_new) {
    const int32_t t = FakeBatchRunner::next_token(prompt, vocab, memory);
    out.push_back(t);
    prompt.push_back(t);
    if (std::find(stop_ids.begin(), stop_ids.end(), t) != stop_ids.end()) break;
  }
  return out;
}

}  // namespace sgl::test
