// ExecBatch on the wire (runner/exec_batch_wire.h): a batch with every field set survives the
// round trip field for field; every truncation, a flipped enum or flag, trailing bytes and random
// bytes are clear errors, never a read past the message.
#include "runner/exec_batch_wire.h"

#include <gtest/gtest.h>

#include <future>
#include <random>

namespace sgl::runner {
namespace {

ExecBatch full_batch() {
  ExecBatch b;
  b.id = 1234567890123;
  b.mode = ForwardMode::kTargetVerify;
  b.pooling = PoolingType::kLast;
  for (int i = 0; i < 3; ++i) {
    ExecRequest q;
    q.req_pool_idx = 7 + i;
    q.prefix_len = 100 * i;
    q.extend_len = 3;
    q.input_ids = {11 + i, -2, 13};
    q.sampling.temperature = 0.7f;
    q.sampling.top_k = 40 + i;
    q.sampling.top_p = 0.9f;
    q.sampling.min_p = 0.05f;
    if (i != 1) q.sampling.seed = 0xDEADBEEF12345678ull + i;
    q.sampling.presence_penalty = 0.5f;
    q.sampling.frequency_penalty = -0.25f;
    q.sampling.repetition_penalty = 1.1f;
    q.sampling.min_new_tokens = 4;
    q.sampling.logit_bias = {{5, -100.f}, {6, 2.5f}};
    q.top_logprobs_num = 5;
    q.return_logprob = true;
    q.samples = i != 2;
    q.next_input_id = 99;
    q.sample_rows = 3;
    q.process_logits = true;
    q.prompt_len = 50;
    q.cached_prefix_ids = {1, 2, 3, 4};
    q.min_tokens_stop_ids = {2};
    q.logprob_begin = 100 * i + 1;
    q.logprob_targets = {8, 9};
    q.token_ids_logprob = {10, 20, 30};
    q.return_hidden_states = i != 0;
    q.return_routed_experts = i == 1;
    q.lora_id = 2 * i + 1;
    b.requests.push_back(q);
  }
  b.out_cache_loc = {40, 41, 42, 43, 44, 45, 46, 47, 48};
  b.req_to_token_writes.add(7, 0, std::vector<int32_t>{40, 41, 42});
  b.req_to_token_writes.add(8, 100, std::vector<int32_t>{43});
  sampling::VocabMask mask;
  mask.words = 2;
  mask.rows = {0, 2};
  mask.bits = {0xFFFFFFFFu, 1u, 0x80000000u, 0u};
  std::promise<sampling::VocabMask> ready;
  ready.set_value(mask);
  b.vocab_mask = ready.get_future().share();
  b.skip_draft = true;
  return b;
}

TEST(ExecBatchWire, EveryFieldSurvivesTheRoundTrip) {
  const ExecBatch in = full_batch();
  const std::vector<uint8_t> message = encode_exec_batch(in);
  Result<ExecBatch> decoded = decode_exec_batch(message);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  const ExecBatch& out = decoded.value();
  EXPECT_EQ(out.id, in.id);
  EXPECT_EQ(out.mode, in.mode);
  EXPECT_EQ(out.pooling, in.pooling);
  ASSERT_EQ(out.requests.size(), in.requests.size());
  for (size_t i = 0; i < in.requests.size(); ++i) {
    const ExecRequest &a = in.requests[i], &b = out.requests[i];
    EXPECT_EQ(b.req_pool_idx, a.req_pool_idx);
    EXPECT_EQ(b.prefix_len, a.prefix_len);
    EXPECT_EQ(b.extend_len, a.extend_len);
    EXPECT_EQ(b.input_ids, a.input_ids);
    EXPECT_EQ(b.sampling.temperature, a.sampling.temperature);
    EXPECT_EQ(b.sampling.top_k, a.sampling.top_k);
    EXPECT_EQ(b.sampling.top_p, a.sampling.top_p);
    EXPECT_EQ(b.sampling.min_p, a.sampling.min_p);
    EXPECT_EQ(b.sampling.seed, a.sampling.seed);
    EXPECT_EQ(b.sampling.presence_penalty, a.sampling.presence_penalty);
    EXPECT_EQ(b.sampling.frequency_penalty, a.sampling.frequency_penalty);
    EXPECT_EQ(b.sampling.repetition_penalty, a.sampling.repetition_penalty);
    EXPECT_EQ(b.sampling.min_new_tokens, a.sampling.min_new_tokens);
    ASSERT_EQ(b.sampling.logit_bias.size(), a.sampling.logit_bias.size());
    for (size_t k = 0; k < a.sampling.logit_bias.size(); ++k) {
      EXPECT_EQ(b.sampling.logit_bias[k].id, a.sampling.logit_bias[k].id);
      EXPECT_EQ(b.sampling.logit_bias[k].bias, a.sampling.logit_bias[k].bias);
    }
    EXPECT_EQ(b.top_logprobs_num, a.top_logprobs_num);
    EXPECT_EQ(b.return_logprob, a.return_logprob);
    EXPECT_EQ(b.samples, a.samples);
    EXPECT_EQ(b.next_input_id, a.next_input_id);
    EXPECT_EQ(b.sample_rows, a.sample_rows);
    EXPECT_EQ(b.process_logits, a.process_logits);
    EXPECT_EQ(b.prompt_len, a.prompt_len);
    EXPECT_EQ(b.cached_prefix_ids, a.cached_prefix_ids);
    EXPECT_EQ(b.min_tokens_stop_ids, a.min_tokens_stop_ids);
    EXPECT_EQ(b.logprob_begin, a.logprob_begin);
    EXPECT_EQ(b.logprob_targets, a.logprob_targets);
    EXPECT_EQ(b.token_ids_logprob, a.token_ids_logprob);
    EXPECT_EQ(b.return_hidden_states, a.return_hidden_states);
    EXPECT_EQ(b.return_routed_experts, a.return_routed_experts);
    EXPECT_EQ(b.lora_id, a.lora_id);
  }
  EXPECT_EQ(out.out_cache_loc, in.out_cache_loc);
  ASSERT_EQ(out.req_to_token_writes.writes.size(), in.req_to_token_writes.writes.size());
  for (size_t i = 0; i < in.req_to_token_writes.writes.size(); ++i) {
    EXPECT_EQ(out.req_to_token_writes.writes[i].row, in.req_to_token_writes.writes[i].row);
    EXPECT_EQ(out.req_to_token_writes.writes[i].start, in.req_to_token_writes.writes[i].start);
    EXPECT_EQ(out.req_to_token_writes.writes[i].count, in.req_to_token_writes.writes[i].count);
  }
  EXPECT_EQ(out.req_to_token_writes.slots, in.req_to_token_writes.slots);
  ASSERT_TRUE(out.vocab_mask.valid());
  EXPECT_EQ(out.vocab_mask.get().words, 2);
  EXPECT_EQ(out.vocab_mask.get().rows, in.vocab_mask.get().rows);
  EXPECT_EQ(out.vocab_mask.get().bits, in.vocab_mask.get().bits);
  EXPECT_TRUE(out.skip_draft);
  // And the bytes again: nothing the decoder dropped.
  EXPECT_EQ(encode_exec_batch(out), message);

  // The defaults too (no requests, no mask).
  Result<ExecBatch> empty = decode_exec_batch(encode_exec_batch(ExecBatch{}));
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_TRUE(empty.value().requests.empty());
  EXPECT_FALSE(empty.value().vocab_mask.valid());
}

TEST(ExecBatchWire, BadMessagesAreErrorsNamingWhere) {
  const std::vector<uint8_t> message = encode_exec_batch(full_batch());
  for (size_t n = 0; n < message.size(); ++n) {  // every truncation
    Result<ExecBatch> r = decode_exec_batch(std::span(message).first(n));
    ASSERT_FALSE(r.ok()) << "a message cut at " << n << " of " << message.size() << " bytes";
    EXPECT_NE(r.status().message().find("batch message: "), std::string::npos);
  }
  std::vector<uint8_t> longer = message;
  longer.push_back(0);
  EXPECT_NE(decode_exec_batch(longer).status().message().find("bytes after the batch"),
            std::string::npos);
  std::vector<uint8_t> bad_mode = message;
  bad_mode[4 + 4 + 8] = 200;  // after the magic, the version and the id
  EXPECT_NE(decode_exec_batch(bad_mode).status().message().find("mode is not a known value"),
            std::string::npos);
  ExecBatch inconsistent = full_batch();
  inconsistent.out_cache_loc.pop_back();
  EXPECT_NE(decode_exec_batch(encode_exec_batch(inconsistent))
                .status()
                .message()
                .find("out_cache_loc does not hold a slot for every new token"),
            std::string::npos);
  inconsistent = full_batch();
  inconsistent.requests[1].sample_rows = 4;
  EXPECT_FALSE(decode_exec_batch(encode_exec_batch(inconsistent)).ok());
  std::vector<uint8_t> bad_magic = message;
  bad_magic[0] = 'X';
  EXPECT_NE(decode_exec_batch(bad_magic).status().message().find("header"), std::string::npos);
  // Random bytes, and random flips of a real message: errors or batches, never a crash.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> bytes = trial % 2 == 0 ? message : std::vector<uint8_t>(rng() % 400);
    for (uint8_t& b : bytes) {
      if (trial % 2 == 1 || rng() % 50 == 0) b = static_cast<uint8_t>(rng());
    }
    (void)decode_exec_batch(bytes);
  }
}

}  // namespace
}  // namespace sgl::runner
