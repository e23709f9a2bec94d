// ReleasableAllocator (the memory saver's): allocations keep their addresses across a release;
// the host's pages really go back to the kernel (resident memory drops) and touching them
// meanwhile faults; contents come back when kept and are zeros (host) when not; small
// allocations share slabs; a resume the device cannot back changes nothing; and a random
// sequence of allocations, frees, releases and resumes never loses a kept byte.
#include "core/releasable_allocator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <vector>

namespace sgl {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

std::unique_ptr<ReleasableAllocator> host_allocator() {
  return std::make_unique<ReleasableAllocator>(std::make_unique<HostVirtualMemory>());
}

// This process's resident bytes (/proc/self/statm).
size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t total = 0, resident = 0;
  statm >> total >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

void fill(void* p, size_t bytes, uint8_t seed) {
  auto* b = static_cast<uint8_t*>(p);
  for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<uint8_t>(seed + i * 131);
}

bool holds(const void* p, size_t bytes, uint8_t seed) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < bytes; ++i) {
    if (b[i] != static_cast<uint8_t>(seed + i * 131)) return false;
  }
  return true;
}

TEST(ReleasableAllocator, KeptContentsComeBackAtTheSameAddresses) {
  auto a = host_allocator();
  void* big = a->allocate(5 * kMiB + 3);
  void* small = a->allocate(1000);
  fill(big, 5 * kMiB + 3, 7);
  fill(small, 1000, 9);
  EXPECT_GT(a->release(/*keep_contents=*/true), 5 * kMiB);
  EXPECT_TRUE(a->released());
  ASSERT_TRUE(a->resume().ok());
  EXPECT_FALSE(a->released());
  EXPECT_TRUE(holds(big, 5 * kMiB + 3, 7));
  EXPECT_TRUE(holds(small, 1000, 9));
  a->deallocate(big);
  a->deallocate(small);
}

TEST(ReleasableAllocator, ContentsNotKeptAreGoneAfterTheResume) {
  auto a = host_allocator();
  auto* p = static_cast<uint8_t*>(a->allocate(3 * kMiB));
  std::memset(p, 0xab, 3 * kMiB);
  a->release(/*keep_contents=*/false);
  ASSERT_TRUE(a->resume().ok());
  // The host's fresh pages are zero-filled.
  std::vector<uint8_t> zeros(3 * kMiB, 0);
  EXPECT_EQ(std::memcmp(p, zeros.data(), zeros.size()), 0);
  p[0] = 1;  // and writable again
  a->deallocate(p);
}

TEST(ReleasableAllocator, ReleasedPagesLeaveTheResidentSet) {
  auto a = host_allocator();
  constexpr size_t kBytes = 64 * kMiB;
  void* p = a->allocate(kBytes);
  std::memset(p, 1, kBytes);
  const size_t touched = resident_bytes();
  a->release(/*keep_contents=*/false);
  const size_t released = resident_bytes();
  EXPECT_GT(touched, released + kBytes * 3 / 4)
      << "resident " << touched << " bytes before the release, " << released << " after";
  ASSERT_TRUE(a->resume().ok());
  EXPECT_LT(resident_bytes(), touched - kBytes * 3 / 4) << "the resume touched the pages";
  a->deallocate(p);
}

using ReleasableAllocatorDeathTest = ::testing::Test;

TEST(ReleasableAllocatorDeathTest, TouchingReleasedMemoryFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto a = host_allocator();
  auto* p = static_cast<volatile uint8_t*>(a->allocate(kMiB));
  p[0] = 1;
  a->release(/*keep_contents=*/true);
  EXPECT_DEATH(p[0] = 2, "");
  ASSERT_TRUE(a->resume().ok());
  EXPECT_EQ(p[0], 1);
  a->deallocate(const_cast<uint8_t*>(p));
}

TEST(ReleasableAllocatorDeathTest, AllocatingWhileReleasedIsABug) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto a = host_allocator();
  void* p = a->allocate(100);
  a->release(/*keep_contents=*/false);
  EXPECT_DEATH(a->allocate(100), "while the memory is released");
  // Freeing while released is fine.
  a->deallocate(p);
  ASSERT_TRUE(a->resume().ok());
}

TEST(ReleasableAllocator, SmallAllocationsShareASlab) {
  auto a = host_allocator();
  std::vector<void*> ptrs;
  for (int i = 0; i < 200; ++i) ptrs.push_back(a->allocate(4096));
  EXPECT_EQ(a->committed_bytes(), 2 * kMiB);  // 200 x 4 KiB in one 2 MiB slab
  for (void* p : ptrs) EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  for (void* p : ptrs) a->deallocate(p);
  // The current slab stays for the next ones; a large allocation's range goes with it.
  void* big = a->allocate(8 * kMiB);
  EXPECT_EQ(a->committed_bytes(), 10 * kMiB);
  a->deallocate(big);
  EXPECT_EQ(a->committed_bytes(), 2 * kMiB);
}

// Host memory whose commits fail while `refuse` is set (a device whose memory something else
// took while released).
class RefusingMemory final : public VirtualMemory {
 public:
  explicit RefusingMemory(bool* refuse) : refuse_(refuse) {}
  Device device() const override { return host_.device(); }
  size_t granularity() const override { return host_.granularity(); }
  void* reserve(size_t bytes) override { return host_.reserve(bytes); }
  void unreserve(void* base, size_t bytes) override { host_.unreserve(base, bytes); }
  bool commit(void* base, size_t bytes) override {
    if (*refuse_ && ++commits_ > 1) return false;  // the first region comes, the next not
    return host_.commit(base, bytes);
  }
  void decommit(void* base, size_t bytes) override { host_.decommit(base, bytes); }
  void* allocate_host(size_t bytes) override { return host_.allocate_host(bytes); }
  void free_host(void* host) override { host_.free_host(host); }
  void copy_to_host(void* host, const void* src, size_t bytes) override {
    host_.copy_to_host(host, src, bytes);
  }
  void copy_from_host(void* dst, const void* host, size_t bytes) override {
    host_.copy_from_host(dst, host, bytes);
  }

 private:
  HostVirtualMemory host_;
  bool* refuse_;
  int commits_ = 0;
};

TEST(ReleasableAllocator, AResumeWithoutTheMemoryChangesNothing) {
  bool refuse = false;
  ReleasableAllocator a(std::make_unique<RefusingMemory>(&refuse));
  void* x = a.allocate(4 * kMiB);
  void* y = a.allocate(4 * kMiB);
  fill(x, 4 * kMiB, 1);
  fill(y, 4 * kMiB, 2);
  a.release(/*keep_contents=*/true);
  refuse = true;
  const Status failed = a.resume();
  EXPECT_EQ(failed.code(), StatusCode::kResourceExhausted) << failed.to_string();
  EXPECT_TRUE(a.released());
  refuse = false;
  ASSERT_TRUE(a.resume().ok());
  EXPECT_TRUE(holds(x, 4 * kMiB, 1));
  EXPECT_TRUE(holds(y, 4 * kMiB, 2));
  a.deallocate(x);
  a.deallocate(y);
}

// Random allocations (slab-sized and large), frees, and releases with contents kept: every live
// allocation holds its pattern after every resume.
TEST(ReleasableAllocator, RandomSequencesKeepEveryKeptByte) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 20; ++trial) {
    auto a = host_allocator();
    struct Live {
      void* p;
      size_t bytes;
      uint8_t seed;
    };
    std::vector<Live> live;
    for (int step = 0; step < 60; ++step) {
      const int op = static_cast<int>(rng() % 10);
      if (op < 6) {
        const size_t bytes = rng() % 4 == 0 ? 1 + rng() % (3 * kMiB) : 1 + rng() % 20000;
        const auto seed = static_cast<uint8_t>(rng());
        void* p = a->allocate(bytes);
        fill(p, bytes, seed);
        live.push_back({p, bytes, seed});
      } else if (op < 9 && !live.empty()) {
        const size_t i = rng() % live.size();
        a->deallocate(live[i].p);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        a->release(/*keep_contents=*/true);
        if (!live.empty() && rng() % 2 == 0) {  // a free while released
          a->deallocate(live.back().p);
          live.pop_back();
        }
        ASSERT_TRUE(a->resume().ok());
        for (const Live& l : live) {
          ASSERT_TRUE(holds(l.p, l.bytes, l.seed)) << "trial " << trial << " step " << step;
        }
      }
    }
    for (const Live& l : live) a->deallocate(l.p);
    EXPECT_LE(a->committed_bytes(), 2 * kMiB) << "only the current slab may stay";
  }
}

}  // namespace
}  // namespace sgl
