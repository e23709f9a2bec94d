// Collectives between threads over host memory.
#include "distributed/shared_memory_communicator.h"

#include <cstring>

#include "core/check.h"
#include "core/half.h"

namespace sgl::distributed {

class SharedMemoryCommunicator final : public Communicator {
 public:
  SharedMemoryCommunicator(SharedMemoryGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }

  void all_reduce(const Tensor& buffer, ReduceOp op, backend::Stream) override {
    check_host(buffer, "all_reduce");
    SGL_CHECK(buffer.dtype() == DType::kF32 || buffer.dtype() == DType::kBF16)
        << "all_reduce: f32 or bf16, got " << dtype_name(buffer.dtype());
    const int64_t n = buffer.numel();
    publish(buffer.raw(), n, buffer.dtype());
    // Every rank adds in rank order, so every rank gets the same bits.
    std::vector<float> acc(static_cast<size_t>(n)), row;
    for (int r = 0; r < size(); ++r) {
      const void* in = group_.inputs_[r];
      if (buffer.dtype() == DType::kF32) {
        const auto* x = static_cast<const float*>(in);
        if (r == 0) {
          std::copy(x, x + n, acc.begin());
        } else {
          reduce_into(acc.data(), x, n, op);
        }
      } else {
        const auto* x = static_cast<const uint16_t*>(in);
        row.resize(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) row[i] = bf16_to_float(x[i]);
        if (r == 0) {
          acc = row;
        } else {
          reduce_into(acc.data(), row.data(), n, op);
        }
      }
    }
    group_.arrive_and_wait();  // everyone has read every input: now overwrite ours
    if (buffer.dtype() == DType::kF32) {
      std::copy(acc.begin(), acc.end(), buffer.data<float>());
    } else {
      auto* out = static_cast<uint16_t*>(buffer.raw());
      for (int64_t i = 0; i < n; ++i) out[i] = float_to_bf16(acc[i]);
    }
    group_.arrive_and_wait();  // no rank starts the next collective while one still writes
  }

  void all_gather(const Tensor& in, const Tensor& out, backend::Stream) override {
    check_host(in, "all_gather");
    check_host(out, "all_gather");
    SGL_CHECK(out.dtype() == in.dtype() && out.numel() == in.numel() * size())
        << "all_gather: out must hold size x in (" << in.numel() << " x " << size() << "), got "
        << out.numel();
    publish(in.raw(), in.numel(), in.dtype());
    const size_t bytes = in.nbytes();
    for (int r = 0; r < size(); ++r) {
      char* to = static_cast<char*>(out.raw()) + r * bytes;
      if (to != group_.inputs_[r]) std::memcpy(to, group_.inputs_[r], bytes);  // in place: kept
    }
    group_.arrive_and_wait();
  }

  void all_to_all(const Tensor& in, const Tensor& out, backend::Stream) override {
    check_host(in, "all_to_all");
    check_host(out, "all_to_all");
    SGL_CHECK(out.dtype() == in.dtype() && out.numel() == in.numel() && in.numel() % size() == 0)
        << "all_to_all: in and out of one size, a multiple of the ranks; got " << in.numel()
        << " and " << out.numel();
    publish(in.raw(), in.numel(), in.dtype());
    const size_t chunk = in.nbytes() / static_cast<size_t>(size());
    for (int r = 0; r < size(); ++r) {
      std::memcpy(static_cast<char*>(out.raw()) + r * chunk,
                  static_cast<const char*>(group_.inputs_[r]) + rank_ * chunk, chunk);
    }
    group_.arrive_and_wait();
  }

  void broadcast(const Tensor& buffer, int root, backend::Stream) override {
    check_host(buffer, "broadcast");
    SGL_CHECK(root >= 0 && root < size()) << "broadcast: root " << root << " of " << size();
    publish(buffer.raw(), buffer.numel(), buffer.dtype());
    if (rank_ != root) std::memcpy(buffer.raw(), group_.inputs_[root], buffer.nbytes());
    group_.arrive_and_wait();
  }

  void barrier() override { group_.arrive_and_wait(); }

 private:
  static void check_host(const Tensor& t, const char* op) {
    SGL_CHECK(t.device().is_cpu() && t.is_contiguous())
        << op << ": the shared-memory communicator takes contiguous host tensors";
  }
  // Publishes this rank's input and waits for everyone's; checks they agree.
  void publish(const void* data, int64_t numel, DType dtype) {
    group_.inputs_[rank_] = data;
    group_.numels_[rank_] = numel;
    group_.dtypes_[rank_] = static_cast<int>(dtype);
    group_.arrive_and_wait();
    for (int r = 0; r < size(); ++r) {
      SGL_CHECK(group_.numels_[r] == numel && group_.dtypes_[r] == static_cast<int>(dtype))
          << "collective mismatch: rank " << r << " passed " << group_.numels_[r]
          << " elements, rank " << rank_ << " " << numel;
    }
  }

  SharedMemoryGroup& group_;
  int rank_;
};

SharedMemoryGroup::SharedMemoryGroup(int size)
    : size_(size), inputs_(size), numels_(size), dtypes_(size) {
  SGL_CHECK(size >= 1) << "a group of " << size << " ranks";
}

std::unique_ptr<Communicator> SharedMemoryGroup::communicator(int rank) {
  SGL_CHECK(rank >= 0 && rank < size_) << "rank " << rank << " of " << size_;
  return std::make_unique<SharedMemoryCommunicator>(*this, rank);
}

void SharedMemoryGroup::arrive_and_wait() {
  std::unique_lock lock(mu_);
  const uint64_t generation = generation_;
  if (++arrived_ == size_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != generation; });
}

}  // namespace sgl::distributed
