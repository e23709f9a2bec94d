// DeviceSampler: pack parameters, one upload (copy stream), the sampling kernels, one download.
#include "runner/device_sampler.h"

#include <algorithm>
#include <bit>

#include "backend/backend.h"
#include "kernels/copy.h"
#include "kernels/sampling.h"
#include "kernels/token_ids_logprobs.h"

namespace sgl::runner {
namespace {

constexpr int64_t kTop = kernels::kMaxTopLogprobs;
constexpr int64_t kMaxIds = sampling::kMaxTokenIdsLogprob;

// Offsets (in 32-bit words) of the result arrays in a block for `capacity` rows.
struct ResultLayout {
  int64_t ids = 0, logprobs, top_ids, top_logprobs, words;
  explicit ResultLayout(int64_t capacity)
      : logprobs(capacity),
        top_ids(2 * capacity),
        top_logprobs((2 + kTop) * capacity),
        words((2 + 2 * kTop) * capacity) {}
};

kernels::SampledTokens result_views(const Buffer& block, int64_t capacity, int64_t bs,
                                    bool logprobs, bool top) {
  const ResultLayout at(capacity);
  auto* base = static_cast<int32_t*>(block.tensor().raw());
  const Device device = block.tensor().device();
  kernels::SampledTokens out;
  out.next_token_ids = Tensor(base + at.ids, DType::kI32, {bs}, device);
  if (logprobs) out.next_token_logprobs = Tensor(base + at.logprobs, DType::kF32, {bs}, device);
  if (top) {
    out.top_logprob_ids = Tensor(base + at.top_ids, DType::kI32, {bs, kTop}, device);
    out.top_logprobs = Tensor(base + at.top_logprobs, DType::kF32, {bs, kTop}, device);
  }
  return out;
}

}  // namespace

DeviceSampler::DeviceSampler(Allocator& allocator, Allocator& pinned, int64_t capacity)
    : allocator_(allocator),
      pinned_(pinned),
      capacity_(capacity),
      copy_stream_(backend::create_copy_stream(allocator.device())) {
  const int64_t param_words = (kernels::packed_sampling_rows_bytes(capacity) + 3) / 4;
  const ResultLayout layout(capacity);
  for (Slot& slot : slots_) {
    slot.params_host = Buffer(pinned, DType::kI32, {param_words});
    slot.params_device = Buffer(allocator, DType::kI32, {param_words});
    slot.results_host = Buffer(pinned, DType::kI32, {layout.words});
  }
  results_device_ = Buffer(allocator, DType::kI32, {layout.words});
}

DeviceSampler::~DeviceSampler() = default;

bool DeviceSampler::supports(const sampling::SamplingBatch& batch) {
  return std::all_of(batch.top_logprobs_num.begin(), batch.top_logprobs_num.end(),
                     [](int32_t k) { return k <= kTop; }) &&
         std::all_of(batch.token_ids_logprob.begin(), batch.token_ids_logprob.end(),
                     [](const std::vector<int32_t>& ids) {
                       return static_cast<int64_t>(ids.size()) <= kMaxIds;
                     });
}

DeviceSampler::Ticket DeviceSampler::stage(const sampling::SamplingBatch& batch) {
  Ticket ticket;
  ticket.bs = static_cast<int64_t>(batch.size());
  SGL_CHECK(ticket.bs <= capacity_) << "device sampling of " << ticket.bs << " rows";
  ticket.slot = next_slot_;
  Slot& slot = slots_[ticket.slot];
  SGL_CHECK(!slot.busy) << "device sampler: more than " << kSlots << " samplings in flight";
  slot.busy = true;
  next_slot_ = (next_slot_ + 1) % kSlots;
  ticket.top = std::any_of(batch.top_logprobs_num.begin(), batch.top_logprobs_num.end(),
                           [](int32_t k) { return k > 0; });
  if (ticket.top) ticket.top_logprobs_num = batch.top_logprobs_num;
  ticket.logprobs = batch.return_logprob || ticket.top;

  // Parameters: filled in pinned memory (free: the slot's last upload was collected), uploaded
  // in one copy on the copy stream, so it runs beside the forward instead of after it.
  const kernels::SamplingRows host = kernels::packed_sampling_rows(
      slot.params_host.tensor().raw(), Device::cpu(), capacity_, ticket.bs);
  for (int64_t b = 0; b < ticket.bs; ++b) {
    const sampling::SamplingParams& p = batch.params[b];
    SGL_CHECK(p.is_greedy() || p.seed.has_value())
        << "device sampler: request " << b << " has no seed";
    host.temperature.data<float>()[b] = p.temperature;
    host.top_k.data<int32_t>()[b] = p.top_k;
    host.top_p.data<float>()[b] = p.top_p;
    host.min_p.data<float>()[b] = p.min_p;
    host.seed.data<int64_t>()[b] = std::bit_cast<int64_t>(p.seed.value_or(0));
    host.step.data<int64_t>()[b] = std::bit_cast<int64_t>(batch.steps[b]);
    host.top_logprobs_num.data<int32_t>()[b] = batch.top_logprobs_num[b];
  }
  const backend::Stream copy_stream = copy_stream_->get();
  kernels::copy_async(slot.params_host, slot.params_device, copy_stream);
  size_t asked = 0;
  for (const std::vector<int32_t>& row : batch.token_ids_logprob) asked += row.size();
  if (asked > 0) {
    SGL_CHECK_EQ(batch.token_ids_logprob.size(), static_cast<size_t>(ticket.bs));
    if (!slot.token_ids_host.tensor().defined()) {
      // Made on first use, for `capacity` rows of kMaxIds ids, and kept: the slot's earlier
      // samplings were collected, and later ones never outgrow them.
      const int64_t words = capacity_ + 1 + capacity_ * kMaxIds;
      slot.token_ids_host = Buffer(pinned_, DType::kI32, {words});
      slot.token_ids_device = Buffer(allocator_, DType::kI32, {words});
      slot.token_ids_results_host = Buffer(pinned_, DType::kF32, {capacity_ * kMaxIds});
      slot.token_ids_results_device = Buffer(allocator_, DType::kF32, {capacity_ * kMaxIds});
    }
    // offsets [bs + 1], then every row's ids: one upload of what this batch asks.
    int32_t* words = slot.token_ids_host.data<int32_t>();
    int32_t* ids = words + ticket.bs + 1;
    int32_t n = 0;
    for (int64_t b = 0; b < ticket.bs; ++b) {
      words[b] = n;
      const std::vector<int32_t>& row = batch.token_ids_logprob[b];
      SGL_CHECK_LE(static_cast<int64_t>(row.size()), kMaxIds);
      std::copy(row.begin(), row.end(), ids + n);
      n += static_cast<int32_t>(row.size());
    }
    words[ticket.bs] = n;
    ticket.token_ids_offsets.assign(words, words + ticket.bs + 1);
    const int64_t upload = ticket.bs + 1 + n;
    kernels::copy_async(slot.token_ids_host.tensor().slice_rows(0, upload),
                        slot.token_ids_device.tensor().slice_rows(0, upload), copy_stream);
  }
  slot.uploaded.record(copy_stream);
  return ticket;
}

void DeviceSampler::launch(const Tensor& logits, const Ticket& ticket, backend::Stream stream) {
  Slot& slot = slots_[ticket.slot];
  SGL_CHECK(slot.busy && logits.size(0) == ticket.bs) << "device sampler: launch of an unstaged "
                                                         "sampling";
  slot.uploaded.make_wait(stream);
  const kernels::SamplingRows rows =
      kernels::packed_sampling_rows(slot.params_device.tensor().raw(),
                                    slot.params_device.tensor().device(), capacity_, ticket.bs);
  kernels::sample_tokens(
      logits, rows,
      result_views(results_device_, capacity_, ticket.bs, ticket.logprobs, ticket.top), stream);
  latest_rows_ = ticket.bs;
  // Results: one download (the ids and logprobs, plus the top-k block when asked for).
  const ResultLayout at(capacity_);
  const int64_t words = ticket.top ? at.words : at.top_ids;
  kernels::copy_async(results_device_.tensor().slice_rows(0, words),
                      slot.results_host.tensor().slice_rows(0, words), stream);
  if (!ticket.token_ids_offsets.empty()) {
    const int64_t bs = ticket.bs, n = ticket.token_ids_offsets.back();
    auto* packed = static_cast<int32_t*>(slot.token_ids_device.tensor().raw());
    const Device device = logits.device();
    const Tensor results = slot.token_ids_results_device.tensor().slice_rows(0, n);
    kernels::token_ids_logprobs(logits, Tensor(packed, DType::kI32, {bs + 1}, device),
                                Tensor(packed + bs + 1, DType::kI32, {n}, device), results, stream);
    kernels::copy_async(results, slot.token_ids_results_host.tensor().slice_rows(0, n), stream);
  }
  slot.downloaded.record(stream);
}

void DeviceSampler::apply_vocab_mask(const Tensor& logits, const Ticket& ticket,
                                     const sampling::VocabMask& mask, backend::Stream stream) {
  if (mask.empty()) return;
  Slot& slot = slots_[ticket.slot];
  SGL_CHECK(slot.busy && logits.size(0) == ticket.bs) << "device sampler: mask for an unstaged "
                                                         "sampling";
  const auto n = static_cast<int64_t>(mask.rows.size());
  const int64_t words = mask.words;
  SGL_CHECK(n <= ticket.bs && mask.bits.size() == static_cast<size_t>(n * words))
      << "device sampler: a mask of " << n << " rows for " << ticket.bs;
  const int64_t needed = capacity_ * (1 + words);
  if (slot.mask_host.tensor().numel() < needed) {
    // The slot's earlier samplings were collected (stage() checked): nothing reads these now.
    slot.mask_host = Buffer(pinned_, DType::kI32, {needed});
    slot.mask_device = Buffer(allocator_, DType::kI32, {needed});
  }
  auto* host = static_cast<int32_t*>(slot.mask_host.tensor().raw());
  std::copy(mask.rows.begin(), mask.rows.end(), host);
  std::copy(mask.bits.begin(), mask.bits.end(), reinterpret_cast<uint32_t*>(host + n));
  const int64_t used = n * (1 + words);
  kernels::copy_async(slot.mask_host.tensor().slice_rows(0, used),
                      slot.mask_device.tensor().slice_rows(0, used), stream);
  auto* device = static_cast<int32_t*>(slot.mask_device.tensor().raw());
  const Device where = slot.mask_device.tensor().device();
  kernels::apply_token_bitmask(logits, Tensor(device, DType::kI32, {n}, where),
                               Tensor(device + n, DType::kI32, {n, words}, where), stream);
}

const int32_t* DeviceSampler::latest_ids() const {
  return static_cast<const int32_t*>(results_device_.tensor().raw());  // ResultLayout::ids = 0
}

sampling::SampleOutput DeviceSampler::collect(const Ticket& ticket) {
  Slot& slot = slots_[ticket.slot];
  SGL_CHECK(slot.busy) << "device sampler: collect of a sampling not in flight";
  slot.downloaded.synchronize();
  const int64_t bs = ticket.bs;
  const kernels::SampledTokens got =
      result_views(slot.results_host, capacity_, bs, ticket.logprobs, ticket.top);
  sampling::SampleOutput out;
  const int32_t* ids = got.next_token_ids.data<int32_t>();
  out.next_token_ids.assign(ids, ids + bs);
  if (ticket.logprobs) {
    const float* lp = got.next_token_logprobs.data<float>();
    out.next_token_logprobs.assign(lp, lp + bs);
    out.top_logprobs.resize(bs);
  }
  if (ticket.top) {
    for (int64_t b = 0; b < bs; ++b) {
      const int32_t k = std::min<int32_t>(ticket.top_logprobs_num[b], kTop);
      for (int32_t i = 0; i < k; ++i) {
        const int32_t id = got.top_logprob_ids.data<int32_t>()[b * kTop + i];
        if (id < 0) break;
        out.top_logprobs[b].push_back({id, got.top_logprobs.data<float>()[b * kTop + i]});
      }
    }
  }
  if (!ticket.token_ids_offsets.empty()) {
    const std::vector<int32_t>& at = ticket.token_ids_offsets;
    const float* lp = slot.token_ids_results_host.data<float>();
    out.token_ids_logprobs.resize(bs);
    for (int64_t b = 0; b < bs; ++b) out.token_ids_logprobs[b].assign(lp + at[b], lp + at[b + 1]);
  }
  slot.busy = false;  // its pinned results are read: the slot may be staged again
  return out;
}

}  // namespace sgl::runner
