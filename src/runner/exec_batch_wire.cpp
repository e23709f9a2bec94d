// ExecBatch's encoder and checked decoder.
#include "runner/exec_batch_wire.h"

#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <type_traits>

namespace sgl::runner {
namespace {

constexpr char kMagic[4] = {'S', 'G', 'L', 'B'};
constexpr uint32_t kVersion = 4;

// A field added to these structs must be added to the format (and kVersion raised): the sizes
// are those the format was written for (x86-64 with libstdc++).
static_assert(sizeof(void*) != 8 || (sizeof(ExecBatch) == 136 && sizeof(ExecRequest) == 248 &&
                                     sizeof(sampling::SamplingParams) == 72),
              "ExecBatch, ExecRequest or SamplingParams changed: update exec_batch_wire.cpp");

uint32_t magic_word() {
  uint32_t word = 0;
  std::memcpy(&word, kMagic, sizeof(word));
  return word;
}

class Writer {
 public:
  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&value, sizeof(T));
  }
  void put_bool(bool value) { put<uint8_t>(value ? 1 : 0); }
  template <typename T>
  void put_array(const std::vector<T>& values) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<uint64_t>(values.size());
    append(values.data(), values.size() * sizeof(T));
  }
  std::vector<uint8_t> take() { return std::move(out_); }

  // fields()' visitor: a value, a flag, an array, an optional u64.
  template <typename T>
  void field(const T& value, const char*) {
    put(value);
  }
  void field(const bool& value, const char*) { put_bool(value); }
  template <typename T>
  void field(const std::vector<T>& values, const char*) {
    put_array(values);
  }
  void field(const std::optional<uint64_t>& value, const char*) {
    put_bool(value.has_value());
    put<uint64_t>(value.value_or(0));
  }

 private:
  void append(const void* data, size_t bytes) {
    if (bytes == 0) return;
    const size_t at = out_.size();
    out_.resize(at + bytes);
    std::memcpy(out_.data() + at, data, bytes);
  }

  std::vector<uint8_t> out_;
};

// Reads what Writer wrote; the first failure sticks and names the field.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}

  template <typename T>
  T get(const char* field) {
    T value{};
    if (!take(&value, sizeof(T), field)) return T{};
    return value;
  }
  bool get_bool(const char* field) {
    const auto v = get<uint8_t>(field);
    if (v > 1) fail(field, "is not 0 or 1");
    return v == 1;
  }
  template <typename T>
  std::vector<T> get_array(const char* field) {
    const auto n = get<uint64_t>(field);
    if (!ok() || n > (in_.size() - at_) / sizeof(T)) {
      fail(field, "is longer than the message");
      return {};
    }
    std::vector<T> out(n);
    take(out.data(), n * sizeof(T), field);
    return out;
  }
  // An enum stored as u8, in [0, last].
  template <typename E>
  E get_enum(const char* field, E last) {
    const auto v = get<uint8_t>(field);
    if (v > static_cast<uint8_t>(last)) fail(field, "is not a known value");
    return static_cast<E>(v);
  }
  // fields()' visitor, reading what Writer::field wrote.
  template <typename T>
  void field(T& value, const char* name) {
    value = get<T>(name);
  }
  void field(bool& value, const char* name) { value = get_bool(name); }
  template <typename T>
  void field(std::vector<T>& values, const char* name) {
    values = get_array<T>(name);
  }
  void field(std::optional<uint64_t>& value, const char* name) {
    const bool present = get_bool(name);
    const auto v = get<uint64_t>(name);
    value = present ? std::optional<uint64_t>(v) : std::nullopt;
  }
  void fail(const char* field, const char* why) {
    if (error_.empty()) error_ = std::string(field) + " " + why;
  }
  bool ok() const { return error_.empty(); }
  bool at_end() const { return at_ == in_.size(); }
  const std::string& error() const { return error_; }

 private:
  bool take(void* to, size_t bytes, const char* field) {
    if (!ok()) return false;
    if (bytes > in_.size() - at_) {
      fail(field, "runs past the message's end");
      return false;
    }
    if (bytes > 0) std::memcpy(to, in_.data() + at_, bytes);
    at_ += bytes;
    return true;
  }

  std::span<const uint8_t> in_;
  size_t at_ = 0;
  std::string error_;
};

// Every field of a request, in wire order: one list for both directions (Writer and Reader
// visit it, `Request` const or not).
template <typename IO, typename Request>
void request_fields(IO& io, Request& q) {
  io.field(q.req_pool_idx, "request.req_pool_idx");
  io.field(q.prefix_len, "request.prefix_len");
  io.field(q.extend_len, "request.extend_len");
  io.field(q.input_ids, "request.input_ids");
  io.field(q.sampling.temperature, "sampling.temperature");
  io.field(q.sampling.top_k, "sampling.top_k");
  io.field(q.sampling.top_p, "sampling.top_p");
  io.field(q.sampling.min_p, "sampling.min_p");
  io.field(q.sampling.seed, "sampling.seed");
  io.field(q.sampling.presence_penalty, "sampling.presence_penalty");
  io.field(q.sampling.frequency_penalty, "sampling.frequency_penalty");
  io.field(q.sampling.repetition_penalty, "sampling.repetition_penalty");
  io.field(q.sampling.min_new_tokens, "sampling.min_new_tokens");
  io.field(q.sampling.logit_bias, "sampling.logit_bias");
  io.field(q.top_logprobs_num, "request.top_logprobs_num");
  io.field(q.return_logprob, "request.return_logprob");
  io.field(q.samples, "request.samples");
  io.field(q.next_input_id, "request.next_input_id");
  io.field(q.sample_rows, "request.sample_rows");
  io.field(q.process_logits, "request.process_logits");
  io.field(q.prompt_len, "request.prompt_len");
  io.field(q.cached_prefix_ids, "request.cached_prefix_ids");
  io.field(q.min_tokens_stop_ids, "request.min_tokens_stop_ids");
  io.field(q.logprob_begin, "request.logprob_begin");
  io.field(q.logprob_targets, "request.logprob_targets");
  io.field(q.token_ids_logprob, "request.token_ids_logprob");
  io.field(q.return_hidden_states, "request.return_hidden_states");
  io.field(q.return_routed_experts, "request.return_routed_experts");
  io.field(q.lora_id, "request.lora_id");
}

}  // namespace

std::vector<uint8_t> encode_exec_batch(const ExecBatch& batch) {
  Writer w;
  w.put(magic_word());
  w.put(kVersion);
  w.put(batch.id);
  w.put(static_cast<uint8_t>(batch.mode));
  w.put(static_cast<uint8_t>(batch.pooling));
  w.put<uint64_t>(batch.requests.size());
  for (const ExecRequest& q : batch.requests) request_fields(w, q);
  w.put_array(batch.out_cache_loc);
  std::vector<int32_t> writes;  // (row, start, count) triples
  for (const cache::ReqToTokenWrites::Write& x : batch.req_to_token_writes.writes) {
    writes.insert(writes.end(), {x.row, x.start, x.count});
  }
  w.put_array(writes);
  w.put_array(batch.req_to_token_writes.slots);
  w.put_bool(batch.vocab_mask.valid());
  if (batch.vocab_mask.valid()) {
    const sampling::VocabMask& mask = batch.vocab_mask.get();
    w.put(mask.words);
    w.put_array(mask.rows);
    w.put_array(mask.bits);
  }
  w.put_bool(batch.skip_draft);
  return w.take();
}

Result<ExecBatch> decode_exec_batch(std::span<const uint8_t> message) {
  Reader r(message);
  const auto magic = r.get<uint32_t>("header");
  const auto version = r.get<uint32_t>("header");
  if (r.ok() && (magic != magic_word() || version != kVersion)) {
    r.fail("header", "is not an sgl.cpp batch of this version");
  }
  ExecBatch batch;
  batch.id = r.get<int64_t>("id");
  batch.mode = r.get_enum("mode", ForwardMode::kDraftExtend);
  batch.pooling = r.get_enum("pooling", PoolingType::kMean);
  const auto n = r.get<uint64_t>("requests");
  // Each request takes more than 64 bytes: a count past that is a bad message, not an allocation.
  if (r.ok() && n > message.size() / 64) r.fail("requests", "is longer than the message");
  for (uint64_t i = 0; i < n && r.ok(); ++i) request_fields(r, batch.requests.emplace_back());
  batch.out_cache_loc = r.get_array<int32_t>("out_cache_loc");
  const std::vector<int32_t> writes = r.get_array<int32_t>("req_to_token_writes");
  if (writes.size() % 3 != 0) r.fail("req_to_token_writes", "is not (row, start, count) triples");
  int64_t slots_named = 0;
  for (size_t i = 0; i + 2 < writes.size(); i += 3) {
    batch.req_to_token_writes.writes.push_back({writes[i], writes[i + 1], writes[i + 2]});
    if (writes[i + 2] < 0) r.fail("req_to_token_writes", "has a negative count");
    slots_named += writes[i + 2];
  }
  batch.req_to_token_writes.slots = r.get_array<int32_t>("req_to_token_writes.slots");
  if (r.ok() && slots_named != static_cast<int64_t>(batch.req_to_token_writes.slots.size())) {
    r.fail("req_to_token_writes.slots", "does not hold what the writes count");
  }
  if (r.get_bool("vocab_mask")) {
    sampling::VocabMask mask;
    mask.words = r.get<int32_t>("vocab_mask.words");
    mask.rows = r.get_array<int32_t>("vocab_mask.rows");
    mask.bits = r.get_array<uint32_t>("vocab_mask.bits");
    if (r.ok() && (mask.words < 0 ||
                   mask.bits.size() != mask.rows.size() * static_cast<size_t>(mask.words))) {
      r.fail("vocab_mask.bits", "is not rows x words");
    }
    std::promise<sampling::VocabMask> ready;
    ready.set_value(std::move(mask));
    batch.vocab_mask = ready.get_future().share();
  }
  batch.skip_draft = r.get_bool("skip_draft");
  if (r.ok() && !r.at_end()) r.fail("the message", "has bytes after the batch");
  // What the message alone can say is consistent (the receiver checks rows and slots against
  // its own tables).
  int64_t tokens = 0;
  for (const ExecRequest& q : batch.requests) {
    if (q.req_pool_idx < 0 || q.prefix_len < 0 || q.extend_len < 0 || q.sample_rows < 0 ||
        q.sample_rows > q.extend_len ||
        (!q.input_ids.empty() && static_cast<int32_t>(q.input_ids.size()) != q.extend_len)) {
      r.fail("request", "has a negative row or length, more sampled rows than tokens or ids");
    }
    tokens += q.extend_len;
  }
  if (r.ok() && tokens != static_cast<int64_t>(batch.out_cache_loc.size())) {
    r.fail("out_cache_loc", "does not hold a slot for every new token");
  }
  if (r.ok() && batch.vocab_mask.valid()) {
    for (int32_t row : batch.vocab_mask.get().rows) {
      if (row < 0 || row >= static_cast<int32_t>(batch.requests.size())) {
        r.fail("vocab_mask.rows", "names a request the batch does not have");
      }
    }
  }
  if (!r.ok()) return invalid_argument("batch message: " + r.error());
  return batch;
}

}  // namespace sgl::runner
