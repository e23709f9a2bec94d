// CUDA sampling against the CPU Sampler: next ids equal on thousands of rows (logprobs within
// 1e-5), top logprobs, token_ids_logprob gathers, strided rows, graph replay, and a printed
// timing. Label: cuda.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_stream.h"
#include "core/buffer.h"
#include "kernels/copy.h"
#include "kernels/sampling.h"
#include "kernels/token_ids_logprobs.h"
#include "sampling/sampler.h"
#include "sampling/vocab_mask.h"

namespace sgl::kernels {
namespace {

using sampling::SamplingParams;

enum class Shape { kPeaked, kFlat, kDuplicated, kMaskedTies };
const char* shape_name(Shape s) {
  switch (s) {
    case Shape::kPeaked:
      return "peaked";
    case Shape::kFlat:
      return "flat";
    case Shape::kDuplicated:
      return "duplicated";
    case Shape::kMaskedTies:
      return "masked-ties";
  }
  return "?";
}

// Runs fn(i) for i in [0, n) on all cores.
void parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  const int64_t threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int64_t i = t; i < n; i += threads) fn(i);
    });
  }
  for (auto& th : pool) th.join();
}

// One logits row.
//   peaked: a broad background and a few strong tokens (LLM-like)
//   flat: nearly uniform (big top-p sets, crowded weight buckets)
//   duplicated: 16 distinct values, so tie groups of V/16 tokens
//   masked-ties: about a third equal to 1, the rest -inf (one tie group, masked tokens)
void fill_row(float* row, int64_t vocab, Shape shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  switch (shape) {
    case Shape::kPeaked:
      for (int64_t i = 0; i < vocab; ++i) row[i] = 2.f * normal(rng);
      for (int j = 0; j < 8; ++j) row[rng() % vocab] = 12.f + 4.f * normal(rng);
      break;
    case Shape::kFlat:
      for (int64_t i = 0; i < vocab; ++i) row[i] = 0.05f * normal(rng);
      break;
    case Shape::kDuplicated:
      for (int64_t i = 0; i < vocab; ++i) row[i] = 0.5f * static_cast<float>(rng() % 16) - 3.f;
      break;
    case Shape::kMaskedTies:
      for (int64_t i = 0; i < vocab; ++i) row[i] = rng() % 3 == 0 ? 1.f : -INFINITY;
      row[rng() % vocab] = 1.f;
      break;
  }
}

struct Row {
  Shape shape;
  SamplingParams params;
  uint64_t step = 0;
  int32_t top_logprobs_num = 0;
};

class CudaSampling : public ::testing::Test {
 protected:
  backend::CudaAllocator gpu_{0};
  backend::CudaStream stream_{0};

  // Host rows -> device; runs sample_tokens; returns host copies of the outputs.
  struct Outputs {
    std::vector<int32_t> ids;
    std::vector<float> logprobs;
    std::vector<int32_t> top_ids;  // [bs, k_max]
    std::vector<float> top_logprobs;
  };

  // Device copy of host f32 [bs, vocab].
  Buffer upload(const std::vector<float>& host, int64_t bs, int64_t vocab) {
    Buffer dev(gpu_, DType::kF32, {bs, vocab});
    copy(Tensor(const_cast<float*>(host.data()), DType::kF32, {bs, vocab}), dev, stream_.get());
    return dev;
  }

  // Packed parameters of `rows`, uploaded; `block` keeps the device memory alive.
  SamplingRows upload_rows(const std::vector<Row>& rows, Buffer& block) {
    const auto bs = static_cast<int64_t>(rows.size());
    const int64_t bytes = packed_sampling_rows_bytes(bs);
    std::vector<int64_t> host_block((bytes + 7) / 8);
    SamplingRows h = packed_sampling_rows(host_block.data(), Device::cpu(), bs, bs);
    for (int64_t b = 0; b < bs; ++b) {
      const SamplingParams& p = rows[b].params;
      h.temperature.data<float>()[b] = p.temperature;
      h.top_k.data<int32_t>()[b] = p.top_k;
      h.top_p.data<float>()[b] = p.top_p;
      h.min_p.data<float>()[b] = p.min_p;
      h.seed.data<int64_t>()[b] = std::bit_cast<int64_t>(p.seed.value_or(0));
      h.step.data<int64_t>()[b] = std::bit_cast<int64_t>(rows[b].step);
      h.top_logprobs_num.data<int32_t>()[b] = rows[b].top_logprobs_num;
    }
    block = Buffer(gpu_, DType::kI64, {static_cast<int64_t>(host_block.size())});
    copy(Tensor(host_block.data(), DType::kI64, {static_cast<int64_t>(host_block.size())}), block,
         stream_.get());
    return packed_sampling_rows(block.tensor().raw(), Device::cuda(0), bs, bs);
  }

  Outputs run(const Tensor& logits, const std::vector<Row>& rows, int32_t k_max) {
    const int64_t bs = logits.size(0);
    Buffer block;
    const SamplingRows dev_rows = upload_rows(rows, block);
    Buffer ids(gpu_, DType::kI32, {bs}), logprobs(gpu_, DType::kF32, {bs});
    SampledTokens out{ids, logprobs, Tensor(), Tensor()};
    Buffer top_ids, top_logprobs;
    if (k_max > 0) {
      top_ids = Buffer(gpu_, DType::kI32, {bs, k_max});
      top_logprobs = Buffer(gpu_, DType::kF32, {bs, k_max});
      out.top_logprob_ids = top_ids;
      out.top_logprobs = top_logprobs;
    }
    sample_tokens(logits, dev_rows, out, stream_.get());
    Outputs host;
    host.ids = to_host<int32_t>(ids, DType::kI32);
    host.logprobs = to_host<float>(logprobs, DType::kF32);
    if (k_max > 0) {
      host.top_ids = to_host<int32_t>(top_ids, DType::kI32);
      host.top_logprobs = to_host<float>(top_logprobs, DType::kF32);
    }
    return host;
  }

  template <typename T>
  std::vector<T> to_host(const Tensor& dev, DType dtype) {
    std::vector<T> host(dev.numel());
    copy(dev, Tensor(host.data(), dtype, dev.shape()), stream_.get());
    return host;
  }
};

// The CPU reference for each row (in parallel): ids, logprobs, top logprobs.
sampling::SampleOutput cpu_reference(const float* logits, int64_t vocab,
                                     const std::vector<Row>& rows) {
  sampling::SampleOutput all;
  const auto bs = static_cast<int64_t>(rows.size());
  all.next_token_ids.resize(bs);
  all.next_token_logprobs.resize(bs);
  all.top_logprobs.resize(bs);
  parallel_for(bs, [&](int64_t b) {
    sampling::SamplingBatch one{{rows[b].params}, {rows[b].step}, {rows[b].top_logprobs_num}, true};
    Tensor row(const_cast<float*>(logits + b * vocab), DType::kF32, {1, vocab});
    sampling::SampleOutput out = sampling::Sampler().sample(row, one);
    all.next_token_ids[b] = out.next_token_ids[0];
    all.next_token_logprobs[b] = out.next_token_logprobs[0];
    all.top_logprobs[b] = std::move(out.top_logprobs[0]);
  });
  return all;
}

std::string describe(const Row& r) {
  char text[256];
  std::snprintf(text, sizeof(text), "%s T=%g top_k=%d top_p=%g min_p=%g seed=%llu step=%llu",
                shape_name(r.shape), r.params.temperature, r.params.top_k, r.params.top_p,
                r.params.min_p, static_cast<unsigned long long>(r.params.seed.value_or(0)),
                static_cast<unsigned long long>(r.step));
  return text;
}

bool logprob_close(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || a == b || std::abs(a - b) <= 1e-5f;
}

// Every combination of the swept parameters, on every shape, twice with other seeds.
std::vector<Row> sweep_rows(std::mt19937_64& rng) {
  std::vector<Row> rows;
  for (Shape shape : {Shape::kPeaked, Shape::kFlat, Shape::kDuplicated, Shape::kMaskedTies}) {
    for (float t : {0.f, 0.3f, 1.f, 2.f}) {
      for (int32_t k : {-1, 1, 5, 50}) {
        for (float top_p : {1.f, 0.9f, 0.5f, 0.01f}) {
          for (float min_p : {0.f, 0.05f, 0.5f}) {
            Row r{shape, {}, rng() % 100000, 0};
            r.params.temperature = t;
            r.params.top_k = k;
            r.params.top_p = top_p;
            r.params.min_p = min_p;
            r.params.seed = rng();
            rows.push_back(r);
          }
        }
      }
    }
  }
  return rows;
}

TEST_F(CudaSampling, IdsEqualTheCpuSamplerOnTheParameterSweep) {
  std::mt19937_64 rng(2024);
  int64_t total_rows = 0, sampled_rows = 0;
  for (int64_t vocab : {5, 111, 32000, 128256, 151936}) {
    std::vector<Row> all = sweep_rows(rng);     // 768 rows
    std::shuffle(all.begin(), all.end(), rng);  // every shape and mode in the small batches too
    const auto n = static_cast<int64_t>(all.size());
    // Batches of every width of a row's cluster: up to 8 CTAs per row for small batches, one
    // for large ones (sample_tokens sizes it by the SM count).
    int64_t start = 0;
    for (const int64_t batch : {1, 3, 8, 16, 33, 195, 512}) {
      const int64_t first = start;
      start = std::min(n, first + batch);
      const std::vector<Row> rows(all.begin() + first, all.begin() + start);
      const auto bs = static_cast<int64_t>(rows.size());
      std::vector<float> logits(bs * vocab);
      parallel_for(bs, [&](int64_t b) {
        fill_row(logits.data() + b * vocab, vocab, rows[b].shape, 1000003 * vocab + first + b);
      });
      const Buffer dev = upload(logits, bs, vocab);
      const Outputs got = run(dev, rows, 0);
      const sampling::SampleOutput want = cpu_reference(logits.data(), vocab, rows);
      int mismatches = 0;
      for (int64_t b = 0; b < bs; ++b) {
        sampled_rows += rows[b].params.is_greedy() ? 0 : 1;
        if (got.ids[b] != want.next_token_ids[b] && ++mismatches <= 10) {
          ADD_FAILURE() << "V " << vocab << " row " << first + b << " " << describe(rows[b])
                        << ": gpu " << got.ids[b] << " cpu " << want.next_token_ids[b];
        }
        EXPECT_PRED2(logprob_close, got.logprobs[b], want.next_token_logprobs[b])
            << "V " << vocab << " row " << first + b << " " << describe(rows[b]);
      }
      total_rows += bs;
    }
  }
  std::printf("compared %lld rows (%lld sampled, the rest greedy)\n",
              static_cast<long long>(total_rows), static_cast<long long>(sampled_rows));
}

TEST_F(CudaSampling, DrawsFollowTheSteps) {
  // One row, many steps: the device draws must track the CPU draw by draw.
  const int64_t vocab = 32000, steps = 256;
  std::vector<float> logits(steps * vocab);
  for (int64_t b = 0; b < steps; ++b) fill_row(logits.data() + b * vocab, vocab, Shape::kPeaked, 7);
  std::vector<Row> rows(steps);
  for (int64_t b = 0; b < steps; ++b) {
    rows[b] = {Shape::kPeaked, {}, static_cast<uint64_t>(b), 0};
    rows[b].params.temperature = 1.5f;
    rows[b].params.top_p = 0.95f;
    rows[b].params.seed = 99;
  }
  const Outputs got = run(upload(logits, steps, vocab), rows, 0);
  const sampling::SampleOutput want = cpu_reference(logits.data(), vocab, rows);
  EXPECT_EQ(got.ids, want.next_token_ids);
  EXPECT_GT(std::set<int32_t>(got.ids.begin(), got.ids.end()).size(), 3u);
}

TEST_F(CudaSampling, TopLogprobsEqualTheCpu) {
  std::mt19937_64 rng(5);
  for (int64_t vocab : {7, 111, 32000, 151936}) {
    std::vector<Row> rows;
    for (Shape shape : {Shape::kPeaked, Shape::kFlat, Shape::kDuplicated, Shape::kMaskedTies}) {
      for (int32_t num : {0, 1, 5, 19, 20}) {
        Row r{shape, {}, rng() % 1000, num};
        r.params.temperature = 0.8f;
        r.params.seed = rng();
        rows.push_back(r);
      }
    }
    const auto bs = static_cast<int64_t>(rows.size());
    std::vector<float> logits(bs * vocab);
    for (int64_t b = 0; b < bs; ++b) fill_row(logits.data() + b * vocab, vocab, rows[b].shape, b);
    const int32_t k_max = kMaxTopLogprobs;
    const Outputs got = run(upload(logits, bs, vocab), rows, k_max);
    const sampling::SampleOutput want = cpu_reference(logits.data(), vocab, rows);
    for (int64_t b = 0; b < bs; ++b) {
      const auto& expected = want.top_logprobs[b];
      const auto n = static_cast<int32_t>(expected.size());
      EXPECT_EQ(n, std::min<int64_t>(rows[b].top_logprobs_num, vocab));
      for (int32_t j = 0; j < k_max; ++j) {
        const int32_t id = got.top_ids[b * k_max + j];
        const float lp = got.top_logprobs[b * k_max + j];
        if (j < n) {
          EXPECT_EQ(id, expected[j].id) << "V " << vocab << " row " << b << " rank " << j;
          EXPECT_PRED2(logprob_close, lp, expected[j].logprob) << "V " << vocab << " row " << b;
        } else {
          EXPECT_EQ(id, -1);
          EXPECT_EQ(lp, -INFINITY);
        }
      }
    }
  }
}

TEST_F(CudaSampling, StridedRowsAndTinyShapes) {
  std::mt19937_64 rng(9);
  for (int64_t vocab : {1, 2, 33, 4097}) {
    for (int64_t bs : {1, 7, 257}) {
      std::vector<Row> rows(bs);
      for (auto& r : rows) {
        r = {Shape::kDuplicated, {}, rng() % 50, 0};
        r.params.temperature = 0.5f + static_cast<float>(rng() % 4);
        r.params.top_k = static_cast<int32_t>(rng() % 4) - 1;
        r.params.top_p = rng() % 2 ? 1.f : 0.7f;
        r.params.seed = rng();
      }
      // Rows `vocab + 5` apart on the device.
      std::vector<float> logits(bs * vocab), padded(bs * (vocab + 5), 100.f);
      for (int64_t b = 0; b < bs; ++b) {
        fill_row(logits.data() + b * vocab, vocab, Shape::kDuplicated, rng());
        std::copy_n(logits.data() + b * vocab, vocab, padded.data() + b * (vocab + 5));
      }
      const Buffer dev = upload(padded, bs, vocab + 5);
      const Outputs got = run(dev.tensor().slice_last(0, vocab), rows, 0);
      const sampling::SampleOutput want = cpu_reference(logits.data(), vocab, rows);
      EXPECT_EQ(got.ids, want.next_token_ids) << "V " << vocab << " bs " << bs;
    }
  }
}

// Grammar masks: the device kernel writes exactly what the host reference does, on masked rows
// chosen at random (others untouched), words that allow all, none or some tokens, vocabularies
// that end inside a word, and rows further apart than the vocabulary.
TEST_F(CudaSampling, TokenBitmaskEqualsTheHostMask) {
  std::mt19937_64 rng(31);
  for (int64_t vocab : {1, 31, 33, 4097, 128256}) {
    for (int64_t bs : {1, 7, 64}) {
      const int64_t words = (vocab + 31) / 32, stride = vocab + 3;
      std::vector<float> logits(bs * vocab);
      for (int64_t b = 0; b < bs; ++b)
        fill_row(logits.data() + b * vocab, vocab, Shape::kPeaked, rng());
      sampling::VocabMask mask;
      mask.words = static_cast<int32_t>(words);
      for (int64_t b = 0; b < bs; ++b) {
        if (rng() % 3 == 0) continue;  // unconstrained row
        mask.rows.push_back(static_cast<int32_t>(b));
        for (int64_t w = 0; w < words; ++w) {
          const uint64_t kind = rng() % 4;
          mask.bits.push_back(kind == 0 ? 0u : kind == 1 ? ~0u : static_cast<uint32_t>(rng()));
        }
      }
      std::vector<float> padded(bs * stride, 7.f);
      for (int64_t b = 0; b < bs; ++b) {
        std::copy_n(logits.data() + b * vocab, vocab, padded.data() + b * stride);
      }
      const Buffer dev = upload(padded, bs, stride);
      const auto n = static_cast<int64_t>(mask.rows.size());
      Buffer rows(gpu_, DType::kI32, {n}), bits(gpu_, DType::kI32, {n, words});
      if (n > 0) {
        copy(Tensor(mask.rows.data(), DType::kI32, {n}), rows, stream_.get());
        copy(Tensor(mask.bits.data(), DType::kI32, {n, words}), bits, stream_.get());
      }
      apply_token_bitmask(dev.tensor().slice_last(0, vocab), rows, bits, stream_.get());
      std::vector<float> got(bs * stride);
      copy(dev, Tensor(got.data(), DType::kF32, {bs, stride}), stream_.get());

      sampling::apply_vocab_mask(Tensor(logits.data(), DType::kF32, {bs, vocab}), mask);
      for (int64_t b = 0; b < bs; ++b) {
        for (int64_t t = 0; t < vocab; ++t) {
          ASSERT_EQ(std::bit_cast<uint32_t>(got[b * stride + t]),
                    std::bit_cast<uint32_t>(logits[b * vocab + t]))
              << "V " << vocab << " bs " << bs << " row " << b << " token " << t;
        }
        for (int64_t t = vocab; t < stride; ++t) ASSERT_EQ(got[b * stride + t], 7.f) << "padding";
      }
    }
  }
}

// A model that produces NaN logits (broken weights, an overflow) must not make the sampler
// return an id outside the vocabulary: the next step would embed it (the GPU faulted). A row
// with no comparable logit gives id 0, as the CPU sampler does; partly-NaN rows pick among the
// numbers.
TEST_F(CudaSampling, NanLogitsGiveIdsInTheVocabulary) {
  const int64_t vocab = 32000;
  std::mt19937_64 rng(5);
  std::vector<Row> rows;
  std::vector<float> logits;
  for (int64_t b = 0; b < 8; ++b) {
    Row r{Shape::kPeaked, {}, rng() % 50, 5};
    if (b % 2 == 1) {
      r.params.temperature = 0.8f;
      r.params.top_k = b % 4 == 1 ? 40 : -1;
      r.params.top_p = 0.9f;
      r.params.seed = rng();
    } else {
      r.params.temperature = 0.f;
    }
    rows.push_back(r);
    std::vector<float> row(vocab, std::nanf(""));
    if (b >= 4) {  // partly NaN: every other logit a number
      fill_row(row.data(), vocab, Shape::kPeaked, rng());
      for (int64_t i = 0; i < vocab; i += 2) row[i] = std::nanf("");
    }
    logits.insert(logits.end(), row.begin(), row.end());
  }
  const Buffer dev = upload(logits, 8, vocab);
  const int32_t k_max = 5;
  const Outputs got = run(dev.tensor(), rows, k_max);
  ASSERT_EQ(got.ids.size(), 8u);
  for (int64_t b = 0; b < 8; ++b) {
    EXPECT_GE(got.ids[b], 0) << "row " << b;
    EXPECT_LT(got.ids[b], vocab) << "row " << b;
    for (int32_t j = 0; j < k_max; ++j) {  // NaN ranks as -inf: the top ids stay in the vocab
      EXPECT_GE(got.top_ids[b * k_max + j], 0) << "row " << b << " top " << j;
      EXPECT_LT(got.top_ids[b * k_max + j], vocab) << "row " << b << " top " << j;
    }
    if (b < 4 && b % 2 == 0) EXPECT_EQ(got.ids[b], 0) << "greedy, row " << b;
    if (b >= 4 && b % 2 == 0) EXPECT_EQ(got.ids[b] % 2, 1) << "greedy picks a number, row " << b;
  }
}

// token_ids_logprobs against sampling::logprobs_of_ids: every shape, rows with no ids, repeats,
// the first and last ids, rows one stride apart wider than the vocabulary; the sampled token's
// logprob where a row asks for it.
TEST_F(CudaSampling, TokenIdsLogprobsMatchTheHost) {
  for (const int64_t vocab : {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{128256}}) {
    const int64_t bs = 9, stride = vocab + 3;
    std::mt19937_64 rng(static_cast<uint64_t>(vocab));
    std::vector<float> logits(bs * stride, 1e30f);  // the padding must never be read
    std::vector<Row> rows;
    for (int64_t b = 0; b < bs; ++b) {
      const auto shape = static_cast<Shape>(b % 4);
      fill_row(logits.data() + b * stride, vocab, shape, 100 + b);
      rows.push_back({shape, SamplingParams{.temperature = 0.f}});
    }
    std::vector<std::vector<int32_t>> asked(bs);
    std::vector<int32_t> offsets{0}, ids;
    for (int64_t b = 0; b < bs; ++b) {
      if (b % 3 != 1) {  // rows 1, 4, 7 ask for none
        const int32_t n = b == 0 ? sampling::kMaxTokenIdsLogprob : static_cast<int32_t>(1 + b);
        for (int32_t j = 0; j < n; ++j) asked[b].push_back(static_cast<int32_t>(rng() % vocab));
        asked[b].push_back(0);
        asked[b].push_back(static_cast<int32_t>(vocab - 1));
        asked[b].push_back(asked[b][0]);  // a repeat
      }
      ids.insert(ids.end(), asked[b].begin(), asked[b].end());
      offsets.push_back(static_cast<int32_t>(ids.size()));
    }
    Buffer dev(gpu_, DType::kF32, {bs, stride});
    copy(Tensor(logits.data(), DType::kF32, {bs, stride}), dev, stream_.get());
    const Tensor view = dev.tensor().slice_last(0, vocab);
    const auto n = static_cast<int64_t>(ids.size());
    Buffer dev_offsets(gpu_, DType::kI32, {bs + 1}), dev_ids(gpu_, DType::kI32, {n});
    Buffer dev_out(gpu_, DType::kF32, {n});
    copy(Tensor(offsets.data(), DType::kI32, {bs + 1}), dev_offsets, stream_.get());
    copy(Tensor(ids.data(), DType::kI32, {n}), dev_ids, stream_.get());
    token_ids_logprobs(view, dev_offsets, dev_ids, dev_out, stream_.get());
    const std::vector<float> got = to_host<float>(dev_out, DType::kF32);
    const Outputs sampled = run(view, rows, 0);
    for (int64_t b = 0; b < bs; ++b) {
      const std::vector<float> want =
          sampling::logprobs_of_ids(logits.data() + b * stride, vocab, asked[b]);
      for (size_t j = 0; j < asked[b].size(); ++j) {
        const float lp = got[offsets[b] + j];
        EXPECT_PRED2(logprob_close, lp, want[j])
            << "V " << vocab << " row " << b << " id " << asked[b][j];
        if (asked[b][j] == sampled.ids[b]) {
          EXPECT_PRED2(logprob_close, lp, sampled.logprobs[b]) << "V " << vocab << " row " << b;
        }
      }
    }
  }
}

TEST_F(CudaSampling, GraphReplayMatchesEagerRuns) {
  const int64_t bs = 64, vocab = 32000;
  std::mt19937_64 rng(17);
  std::vector<Row> rows = sweep_rows(rng);
  rows.resize(bs);
  std::vector<float> logits(bs * vocab);
  for (int64_t b = 0; b < bs; ++b) fill_row(logits.data() + b * vocab, vocab, rows[b].shape, b);
  const Buffer dev = upload(logits, bs, vocab);
  Buffer block;
  const SamplingRows dev_rows = upload_rows(rows, block);
  Buffer ids(gpu_, DType::kI32, {bs}), logprobs(gpu_, DType::kF32, {bs});
  Buffer top_ids(gpu_, DType::kI32, {bs, 5}), top_lp(gpu_, DType::kF32, {bs, 5});
  const SampledTokens out{ids, logprobs, top_ids, top_lp};
  auto native = static_cast<cudaStream_t>(stream_.get().native);
  SGL_CUDA_CHECK(cudaStreamSynchronize(native));
  cudaGraph_t graph = nullptr;
  SGL_CUDA_CHECK(cudaStreamBeginCapture(native, cudaStreamCaptureModeThreadLocal));
  sample_tokens(dev, dev_rows, out, stream_.get());
  SGL_CUDA_CHECK(cudaStreamEndCapture(native, &graph));
  cudaGraphExec_t exec = nullptr;
  SGL_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  SGL_CUDA_CHECK(cudaGraphLaunch(exec, native));
  const auto replay_ids = to_host<int32_t>(ids, DType::kI32);
  const auto replay_lp = to_host<float>(logprobs, DType::kF32);
  const Outputs eager = run(dev, rows, 5);
  EXPECT_EQ(replay_ids, eager.ids);
  EXPECT_EQ(replay_lp, eager.logprobs);
  EXPECT_EQ(to_host<int32_t>(top_ids, DType::kI32), eager.top_ids);
  SGL_CUDA_CHECK(cudaGraphExecDestroy(exec));
  SGL_CUDA_CHECK(cudaGraphDestroy(graph));
}

// Not a check: prints the op's time at bs 1 and 256 x V 128256 (speed is measured, not asserted).
TEST_F(CudaSampling, PrintTimingAtBs1And256) {
  const int64_t vocab = 128256;
  struct Case {
    const char* name;
    Shape shape;
    float temperature;
    int32_t top_k;
    float top_p;
    float min_p;
  };
  const Case cases[] = {
      {"greedy", Shape::kPeaked, 0.f, -1, 1.f, 0.f},
      {"T=1 (no filter)", Shape::kPeaked, 1.f, -1, 1.f, 0.f},
      {"T=0.7 top_p=0.9", Shape::kPeaked, 0.7f, -1, 0.9f, 0.f},
      {"T=1 top_k=50 top_p=0.95", Shape::kPeaked, 1.f, 50, 0.95f, 0.f},
      {"T=1 min_p=0.05 top_p=0.9", Shape::kPeaked, 1.f, -1, 0.9f, 0.05f},
      {"flat T=1 top_p=0.9", Shape::kFlat, 1.f, -1, 0.9f, 0.f},
      {"duplicated T=1 top_p=0.5", Shape::kDuplicated, 1.f, -1, 0.5f, 0.f},
  };
  for (const int64_t bs : {1, 256}) {
    for (const Case& c : cases) {
      std::vector<Row> rows(bs);
      for (int64_t b = 0; b < bs; ++b) {
        rows[b] = {c.shape, {}, 3, 0};
        rows[b].params.temperature = c.temperature;
        rows[b].params.top_k = c.top_k;
        rows[b].params.top_p = c.top_p;
        rows[b].params.min_p = c.min_p;
        rows[b].params.seed = b;
      }
      std::vector<float> logits(bs * vocab);
      parallel_for(bs, [&](int64_t b) { fill_row(logits.data() + b * vocab, vocab, c.shape, b); });
      const Buffer dev = upload(logits, bs, vocab);
      Buffer block;
      const SamplingRows dev_rows = upload_rows(rows, block);
      Buffer ids(gpu_, DType::kI32, {bs}), logprobs(gpu_, DType::kF32, {bs});
      auto native = static_cast<cudaStream_t>(stream_.get().native);
      cudaEvent_t begin, end;
      SGL_CUDA_CHECK(cudaEventCreate(&begin));
      SGL_CUDA_CHECK(cudaEventCreate(&end));
      float ms[2] = {0, 0};
      for (int with_logprobs = 0; with_logprobs < 2; ++with_logprobs) {
        const SampledTokens out{ids, with_logprobs ? logprobs.tensor() : Tensor(), Tensor(),
                                Tensor()};
        sample_tokens(dev, dev_rows, out, stream_.get());  // warm-up
        const int reps = 20;
        SGL_CUDA_CHECK(cudaEventRecord(begin, native));
        for (int r = 0; r < reps; ++r) sample_tokens(dev, dev_rows, out, stream_.get());
        SGL_CUDA_CHECK(cudaEventRecord(end, native));
        SGL_CUDA_CHECK(cudaEventSynchronize(end));
        SGL_CUDA_CHECK(cudaEventElapsedTime(&ms[with_logprobs], begin, end));
        ms[with_logprobs] /= reps;
      }
      std::printf("sample_tokens bs %lld x V %lld  %-28s %7.1f us  (+logprob %7.1f us)\n",
                  static_cast<long long>(bs), static_cast<long long>(vocab), c.name, ms[0] * 1e3,
                  ms[1] * 1e3);
      SGL_CUDA_CHECK(cudaEventDestroy(begin));
      SGL_CUDA_CHECK(cudaEventDestroy(end));
    }
  }
  cudaDeviceProp prop{};
  SGL_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s\n", prop.name);
}

}  // namespace
}  // namespace sgl::kernels
