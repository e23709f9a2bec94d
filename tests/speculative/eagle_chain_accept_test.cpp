// apply_chain_accept (runner/eagle_chain_accept.h): over random verifies, each row's accept
// count is the host's (speculative::accepted_drafts, and sgl-bench's forced acceptance), and
// exactly the arrays that depend on it change: the extend's ids and out row, the chain steps'
// positions and lengths, the scratch slots in the row's KV list. On CUDA the kernel writes what
// the host function writes.
#include "runner/eagle_chain_accept.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "forward/forward_batch.h"
#include "speculative/draft_acceptance.h"
#ifdef SGL_TEST_ON_CUDA
#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_stream.h"
#include "device_vectors.h"
#endif

namespace sgl::runner {
namespace {

constexpr int32_t kUntouched = -7;

struct Verify {
  int32_t bs, tokens, steps, capacity, vocab, forced;
  std::vector<int32_t> verify_ids, id_table, sampled, prefix_lens, kv_indptr;
  // Outputs, filled with kUntouched.
  std::vector<int32_t> extend_ids, out_rows, positions, seq_lens, step_prefix_lens, kv_indices;

  // The arrays are where `at` says each vector's copy is (default: the vectors themselves).
  ChainAcceptArgs args(
      int32_t max_position, int32_t scratch_base,
      const std::function<int32_t*(std::vector<int32_t>&)>& at = [](std::vector<int32_t>& v) {
        return v.data();
      }) {
    return {.verify_ids = at(verify_ids),
            .id_table = at(id_table),
            .sampled = at(sampled),
            .bs = bs,
            .tokens = tokens,
            .forced_accept = forced,
            .vocab_size = vocab,
            .steps = steps,
            .capacity = capacity,
            .max_position = max_position,
            .scratch_base = scratch_base,
            .prefix_lens = at(prefix_lens),
            .kv_indptr = at(kv_indptr),
            .extend_ids = at(extend_ids),
            .out_rows = at(out_rows),
            .positions = at(positions),
            .seq_lens = at(seq_lens),
            .step_prefix_lens = at(step_prefix_lens),
            .kv_indices = at(kv_indices)};
  }
};

// A random verify: drafts that match the samples for a random stretch, some of them given as
// sampled_id_ref()s into an id table.
Verify random_verify(std::mt19937& rng, int32_t forced) {
  auto uniform = [&](int32_t lo, int32_t hi) {
    return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
  };
  Verify v{};
  v.bs = uniform(1, 6);
  v.tokens = uniform(2, 7);
  v.steps = uniform(1, 5);
  v.capacity = v.bs + uniform(0, 3);
  v.vocab = 5;  // small: drafts and samples often agree by chance too
  v.forced = forced;
  v.id_table.resize(16);
  for (int32_t& id : v.id_table) id = uniform(0, v.vocab - 1);
  v.kv_indptr.push_back(0);
  for (int32_t b = 0; b < v.bs; ++b) {
    const int32_t prefix = uniform(0, 20);
    v.prefix_lens.push_back(prefix);
    const int32_t stand = uniform(0, v.tokens - 1);  // drafts copied from the samples
    for (int32_t i = 0; i < v.tokens; ++i) v.sampled.push_back(uniform(0, v.vocab - 1));
    v.verify_ids.push_back(uniform(0, v.vocab - 1));  // the last token
    for (int32_t j = 0; j + 1 < v.tokens; ++j) {
      const int32_t id =
          j < stand ? v.sampled[static_cast<size_t>(b * v.tokens + j)] : uniform(0, v.vocab - 1);
      if (uniform(0, 2) == 0) {  // as a reference
        const int32_t row = uniform(0, 15);
        v.id_table[static_cast<size_t>(row)] = id;
        v.verify_ids.push_back(sampled_id_ref(row));
      } else {
        v.verify_ids.push_back(id);
      }
    }
    // The row's list as the host fills it: every draft standing, then the steps.
    v.kv_indptr.push_back(v.kv_indptr.back() + prefix + v.tokens + v.steps);
  }
  v.extend_ids.assign(static_cast<size_t>(v.bs * v.tokens), kUntouched);
  v.out_rows.assign(static_cast<size_t>(v.capacity), kUntouched);
  for (auto* a : {&v.positions, &v.seq_lens, &v.step_prefix_lens}) {
    a->assign(static_cast<size_t>(v.steps * v.capacity), kUntouched);
  }
  v.kv_indices.assign(static_cast<size_t>(v.kv_indptr.back()), kUntouched);
  return v;
}

std::vector<int32_t> drafts_of(const Verify& v, int32_t b) {
  std::vector<int32_t> out;
  for (int32_t j = 1; j < v.tokens; ++j) {
    const int32_t id = v.verify_ids[static_cast<size_t>(b * v.tokens + j)];
    out.push_back(is_sampled_id_ref(id) ? v.id_table[static_cast<size_t>(sampled_id_row(id))] : id);
  }
  return out;
}

void check_arrays(const Verify& v, int32_t b, int32_t accepted, int32_t max_position,
                  int32_t scratch_base) {
  EXPECT_EQ(v.out_rows[static_cast<size_t>(b)], b * v.tokens + accepted);
  const int32_t next_prefix = v.prefix_lens[static_cast<size_t>(b)] + accepted + 1;
  std::vector<int32_t> expected_kv(static_cast<size_t>(v.kv_indptr[static_cast<size_t>(b + 1)] -
                                                       v.kv_indptr[static_cast<size_t>(b)]),
                                   kUntouched);
  for (int32_t j = 1; j <= v.steps; ++j) {
    const auto at = static_cast<size_t>((j - 1) * v.capacity + b);
    EXPECT_EQ(v.positions[at], std::min(next_prefix + j - 1, max_position));
    EXPECT_EQ(v.seq_lens[at], next_prefix + j);
    EXPECT_EQ(v.step_prefix_lens[at], next_prefix + j - 1);
    expected_kv[static_cast<size_t>(next_prefix + j - 1)] = scratch_base + b * v.steps + j - 1;
  }
  const std::vector<int32_t> kv(v.kv_indices.begin() + v.kv_indptr[static_cast<size_t>(b)],
                                v.kv_indices.begin() + v.kv_indptr[static_cast<size_t>(b + 1)]);
  EXPECT_EQ(kv, expected_kv);
}

TEST(ChainAccept, CountsAsTheHostAndWritesOnlyWhatDependsOnIt) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 300; ++trial) {
    Verify v = random_verify(rng, 0);
    const int32_t max_position = 22, scratch_base = 1000;
    const ChainAcceptArgs args = v.args(max_position, scratch_base);
    for (int32_t b = 0; b < v.bs; ++b) apply_chain_accept(args, b);
    for (int32_t b = 0; b < v.bs; ++b) {
      const std::span<const int32_t> sampled(v.sampled.data() + b * v.tokens,
                                             static_cast<size_t>(v.tokens));
      const int32_t accepted = speculative::accepted_drafts(drafts_of(v, b), sampled);
      SCOPED_TRACE(::testing::Message() << "trial " << trial << " row " << b);
      const std::vector<int32_t> ids(v.extend_ids.begin() + b * v.tokens,
                                     v.extend_ids.begin() + (b + 1) * v.tokens);
      EXPECT_EQ(ids, std::vector<int32_t>(sampled.begin(), sampled.end()));
      check_arrays(v, b, accepted, max_position, scratch_base);
    }
    // Rows past bs (a graph's padding) keep what the host filled.
    for (int32_t b = v.bs; b < v.capacity; ++b) {
      EXPECT_EQ(v.out_rows[static_cast<size_t>(b)], kUntouched);
    }
  }
}

TEST(ChainAccept, ForcedAcceptanceTakesTheFirstLMinusOneDraftsAndRejectsTheNext) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 300; ++trial) {
    const int32_t forced = 1 + trial % 6;
    Verify v = random_verify(rng, forced);
    const ChainAcceptArgs args = v.args(40, 0);
    for (int32_t b = 0; b < v.bs; ++b) apply_chain_accept(args, b);
    for (int32_t b = 0; b < v.bs; ++b) {
      SCOPED_TRACE(::testing::Message() << "trial " << trial << " row " << b);
      const int32_t accepted = std::min(forced - 1, v.tokens - 1);
      const std::vector<int32_t> drafts = drafts_of(v, b);
      const std::vector<int32_t> ids(v.extend_ids.begin() + b * v.tokens,
                                     v.extend_ids.begin() + (b + 1) * v.tokens);
      // The ids the draft extend reads are what the host's forced samples say: they accept
      // exactly `accepted` drafts.
      EXPECT_EQ(speculative::accepted_drafts(drafts, ids), accepted);
      for (int32_t i = accepted + 1; i < v.tokens; ++i) {
        EXPECT_EQ(ids[static_cast<size_t>(i)], v.sampled[static_cast<size_t>(b * v.tokens + i)]);
      }
      check_arrays(v, b, accepted, 40, 0);
    }
  }
}

#ifdef SGL_TEST_ON_CUDA
// The CUDA kernel writes what the host function writes, forced or not.
TEST(ChainAcceptCuda, TheKernelWritesWhatTheHostWrites) {
  backend::CudaAllocator gpu(0);
  backend::CudaStream stream(0);
  std::mt19937 rng(3);
  for (int trial = 0; trial < 100; ++trial) {
    Verify host = random_verify(rng, trial % 3 == 0 ? 1 + trial % 5 : 0);
    Verify device = host;
    // A device copy of each of `device`'s vectors, then back over it after the kernel.
    test::DeviceVectors copies(gpu, stream.get());
    const ChainAcceptArgs args =
        device.args(30, 500, [&](std::vector<int32_t>& v) { return copies(v); });
    cuda::apply_chain_accept(args, stream.get());
    copies.copy_back();
    const ChainAcceptArgs host_args = host.args(30, 500);
    for (int32_t b = 0; b < host.bs; ++b) apply_chain_accept(host_args, b);
    SCOPED_TRACE(::testing::Message() << "trial " << trial);
    EXPECT_EQ(device.extend_ids, host.extend_ids);
    EXPECT_EQ(device.out_rows, host.out_rows);
    EXPECT_EQ(device.positions, host.positions);
    EXPECT_EQ(device.seq_lens, host.seq_lens);
    EXPECT_EQ(device.step_prefix_lens, host.step_prefix_lens);
    EXPECT_EQ(device.kv_indices, host.kv_indices);
  }
}
#endif

}  // namespace
}  // namespace sgl::runner
