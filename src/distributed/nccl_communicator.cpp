// The NCCL communicator (CUDA builds with NCCL), or factories that say why there is none.
#include "distributed/nccl_communicator.h"

#include <string>

#include "core/check.h"

#ifdef SGL_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/logging.h"
#include "distributed/peer_all_reduce.h"
#endif

namespace sgl::distributed {

#ifdef SGL_WITH_NCCL

namespace {

#define SGL_NCCL_CHECK(expr)                                            \
  do {                                                                  \
    const ncclResult_t sgl_nccl_result = (expr);                        \
    SGL_CHECK(sgl_nccl_result == ncclSuccess)                           \
        << #expr << ": " << ncclGetErrorString(sgl_nccl_result) << " (" \
        << ncclGetLastError(nullptr) << ")";                            \
  } while (0)

#define SGL_NCCL_CUDA_CHECK(expr)                                \
  do {                                                           \
    const cudaError_t sgl_cuda_result = (expr);                  \
    SGL_CHECK(sgl_cuda_result == cudaSuccess)                    \
        << #expr << ": " << cudaGetErrorString(sgl_cuda_result); \
  } while (0)

Status nccl_status(ncclResult_t result, const std::string& what) {
  if (result == ncclSuccess) return Status::ok_status();
  return internal_error(what + ": " + ncclGetErrorString(result) + " (" +
                        ncclGetLastError(nullptr) + ")");
}

Status cuda_status(cudaError_t result, const std::string& what) {
  if (result == cudaSuccess) return Status::ok_status();
  return internal_error(what + ": " + cudaGetErrorString(result));
}

cudaStream_t native(backend::Stream stream) { return static_cast<cudaStream_t>(stream.native); }

class NcclCommunicator final : public Communicator {
 public:
  // peer: the group's one-shot all-reduce for small sums (null: NCCL for all).
  NcclCommunicator(ncclComm_t comm, int rank, int size, int device,
                   std::shared_ptr<PeerAllReduce> peer = nullptr)
      : comm_(comm), rank_(rank), size_(size), device_(device), peer_(std::move(peer)) {
    SGL_NCCL_CUDA_CHECK(cudaSetDevice(device_));
    SGL_NCCL_CUDA_CHECK(cudaStreamCreateWithFlags(&barrier_stream_, cudaStreamNonBlocking));
    SGL_NCCL_CUDA_CHECK(cudaMalloc(&barrier_word_, sizeof(float)));
    SGL_NCCL_CUDA_CHECK(cudaMemset(barrier_word_, 0, sizeof(float)));
  }
  ~NcclCommunicator() override {
    if (!aborted_) ncclCommDestroy(comm_);
    cudaFree(barrier_word_);
    cudaStreamDestroy(barrier_stream_);
  }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int device() const { return device_; }

  void all_reduce(const Tensor& buffer, ReduceOp op, backend::Stream stream) override {
    check(buffer, "all_reduce");
    SGL_CHECK(buffer.dtype() == DType::kF32 || buffer.dtype() == DType::kBF16)
        << "all_reduce: f32 or bf16, got " << dtype_name(buffer.dtype());
    if (buffer.numel() == 0) return;
    // After an abort (of any rank's communicator: the group is shared) the sum goes to NCCL, as
    // the rank's other collectives do, while the failing rank takes every communicator down.
    // (One that slips past this check into the peer kernel returns at its first wait.)
    if (peer_ != nullptr && !peer_->aborted() && peer_->applies(buffer, op)) {
      peer_->all_reduce(rank_, buffer, stream);
      return;
    }
    SGL_NCCL_CHECK(ncclAllReduce(buffer.raw(), buffer.raw(), static_cast<size_t>(buffer.numel()),
                                 buffer.dtype() == DType::kF32 ? ncclFloat32 : ncclBfloat16,
                                 op == ReduceOp::kSum ? ncclSum : ncclMax, comm_, native(stream)));
  }

  // The custom all-reduce's fused kernel for decode-sized sums (as all_reduce's routing; it
  // checks the residual and the weight).
  bool all_reduce_add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& weight,
                               float eps, backend::Stream stream) override {
    check(x, "all_reduce_add_rms_norm");
    if (peer_ == nullptr || peer_->aborted() || !peer_->applies_add_rms_norm(x, residual, weight)) {
      return false;
    }
    peer_->all_reduce_add_rms_norm(rank_, x, residual, weight, eps, stream);
    return true;
  }

  void all_gather(const Tensor& in, const Tensor& out, backend::Stream stream) override {
    check(in, "all_gather");
    check(out, "all_gather");
    SGL_CHECK(out.dtype() == in.dtype() && out.numel() == in.numel() * size_)
        << "all_gather: out must hold size x in (" << in.numel() << " x " << size_ << "), got "
        << out.numel();
    if (in.numel() == 0) return;
    // Bytes: any dtype.
    SGL_NCCL_CHECK(
        ncclAllGather(in.raw(), out.raw(), in.nbytes(), ncclInt8, comm_, native(stream)));
  }

  void all_to_all(const Tensor& in, const Tensor& out, backend::Stream stream) override {
    check(in, "all_to_all");
    check(out, "all_to_all");
    SGL_CHECK(out.dtype() == in.dtype() && out.numel() == in.numel() && in.numel() % size_ == 0)
        << "all_to_all: in and out of one size, a multiple of the ranks; got " << in.numel()
        << " and " << out.numel();
    if (in.numel() == 0) return;
    const size_t chunk = in.nbytes() / static_cast<size_t>(size_);
    const auto* from = static_cast<const char*>(in.raw());
    auto* to = static_cast<char*>(out.raw());
    SGL_NCCL_CHECK(ncclGroupStart());
    for (int peer = 0; peer < size_; ++peer) {
      SGL_NCCL_CHECK(ncclSend(from + peer * chunk, chunk, ncclInt8, peer, comm_, native(stream)));
      SGL_NCCL_CHECK(ncclRecv(to + peer * chunk, chunk, ncclInt8, peer, comm_, native(stream)));
    }
    SGL_NCCL_CHECK(ncclGroupEnd());
  }

  void broadcast(const Tensor& buffer, int root, backend::Stream stream) override {
    check(buffer, "broadcast");
    SGL_CHECK(root >= 0 && root < size_) << "broadcast: root " << root << " of " << size_;
    if (buffer.numel() == 0) return;
    SGL_NCCL_CHECK(ncclBroadcast(buffer.raw(), buffer.raw(), buffer.nbytes(), ncclInt8, root, comm_,
                                 native(stream)));
  }

  // A one-word all-reduce on a stream of our own, waited for on the host.
  void barrier() override {
    SGL_NCCL_CUDA_CHECK(cudaSetDevice(device_));
    SGL_NCCL_CHECK(ncclAllReduce(barrier_word_, barrier_word_, 1, ncclFloat32, ncclSum, comm_,
                                 barrier_stream_));
    SGL_NCCL_CUDA_CHECK(cudaStreamSynchronize(barrier_stream_));
  }

  // Any thread, once (each failing rank's loader may call it). The custom all-reduce's waiting
  // kernels first: NCCL's abort does not reach them.
  void abort() {
    if (aborted_.exchange(true)) return;
    if (peer_ != nullptr) peer_->abort();
    ncclCommAbort(comm_);
  }

 private:
  void check(const Tensor& t, const char* op) const {
    SGL_CHECK(t.device().is_cuda() && t.device().index == device_ && t.is_contiguous())
        << op << ": the NCCL communicator of rank " << rank_
        << " takes contiguous tensors on cuda:" << device_ << ", got " << t.device().to_string();
  }

  ncclComm_t comm_;
  int rank_, size_, device_;
  cudaStream_t barrier_stream_ = nullptr;
  float* barrier_word_ = nullptr;
  std::atomic<bool> aborted_{false};
  std::shared_ptr<PeerAllReduce> peer_;
};

}  // namespace

bool nccl_available() { return true; }

void keep_nvlink_multicast_off() {
  const char* value = std::getenv("NCCL_NVLS_ENABLE");
  if (value == nullptr || std::strcmp(value, "0") != 0) setenv("NCCL_NVLS_ENABLE", "0", 1);
}
const char* nccl_unavailable_reason() { return ""; }

Result<NcclUniqueId> nccl_unique_id() {
  keep_nvlink_multicast_off();
  ncclUniqueId id;
  SGL_RETURN_IF_ERROR(nccl_status(ncclGetUniqueId(&id), "ncclGetUniqueId"));
  NcclUniqueId out;
  static_assert(sizeof(id.internal) == sizeof(NcclUniqueId));
  std::memcpy(out.data(), id.internal, out.size());
  return out;
}

Result<std::unique_ptr<Communicator>> nccl_communicator(const NcclUniqueId& id, int rank, int size,
                                                        int device_index) {
  if (size < 1 || rank < 0 || rank >= size) {
    return invalid_argument("NCCL rank " + std::to_string(rank) + " of " + std::to_string(size));
  }
  SGL_RETURN_IF_ERROR(cuda_status(cudaSetDevice(device_index),
                                  "cudaSetDevice(" + std::to_string(device_index) + ")"));
  keep_nvlink_multicast_off();
  ncclUniqueId nid;
  std::memcpy(nid.internal, id.data(), id.size());
  ncclComm_t comm = nullptr;
  SGL_RETURN_IF_ERROR(nccl_status(
      ncclCommInitRank(&comm, size, nid, rank),
      "ncclCommInitRank (rank " + std::to_string(rank) + " of " + std::to_string(size) + ")"));
  return std::unique_ptr<Communicator>(new NcclCommunicator(comm, rank, size, device_index));
}

Result<std::vector<std::unique_ptr<Communicator>>> nccl_group(const std::vector<int>& devices,
                                                              bool custom_all_reduce) {
  if (devices.empty()) return invalid_argument("a NCCL group of no devices");
  for (size_t i = 0; i < devices.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (devices[i] == devices[j]) {
        return invalid_argument("NCCL ranks " + std::to_string(j) + " and " + std::to_string(i) +
                                " both on cuda:" + std::to_string(devices[i]) +
                                " (NCCL needs one GPU per rank)");
      }
    }
  }
  keep_nvlink_multicast_off();
  const int n = static_cast<int>(devices.size());
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  SGL_RETURN_IF_ERROR(nccl_status(ncclCommInitAll(comms.data(), n, devices.data()),
                                  "ncclCommInitAll over " + std::to_string(n) + " GPUs"));
  std::shared_ptr<PeerAllReduce> peer;
  if (custom_all_reduce && n > 1) {
    Result<std::shared_ptr<PeerAllReduce>> made = PeerAllReduce::create(devices);
    if (made.ok()) {
      peer = std::move(made).value();
      SGL_LOG_INFO << "custom all-reduce: one-shot over peer memory between " << n
                   << " GPUs for sums up to " << peer->max_bytes() / 1024 << " KB, NCCL beyond";
    } else {
      SGL_LOG_WARN << "custom all-reduce unavailable, NCCL for every all-reduce: "
                   << made.status().to_string();
    }
  }
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < n; ++r) {
    out.push_back(std::make_unique<NcclCommunicator>(comms[static_cast<size_t>(r)], r, n,
                                                     devices[static_cast<size_t>(r)], peer));
  }
  return out;
}

void abort_nccl(Communicator& comm) {
  if (auto* nccl = dynamic_cast<NcclCommunicator*>(&comm)) nccl->abort();
}

int nccl_device(const Communicator& comm) {
  const auto* nccl = dynamic_cast<const NcclCommunicator*>(&comm);
  return nccl != nullptr ? nccl->device() : -1;
}

#else  // no NCCL in this build

namespace {
constexpr const char* kReason =
#ifdef SGL_WITH_CUDA
    "this CUDA build found no NCCL (nccl.h and libnccl) at configure time";
#else
    "this binary was built without CUDA, so without NCCL";
#endif
}  // namespace

bool nccl_available() { return false; }
const char* nccl_unavailable_reason() { return kReason; }
void keep_nvlink_multicast_off() {}

Result<NcclUniqueId> nccl_unique_id() { return unimplemented(kReason); }

Result<std::unique_ptr<Communicator>> nccl_communicator(const NcclUniqueId&, int, int, int) {
  return unimplemented(kReason);
}

Result<std::vector<std::unique_ptr<Communicator>>> nccl_group(const std::vector<int>&, bool) {
  return unimplemented(kReason);
}

void abort_nccl(Communicator&) {}
int nccl_device(const Communicator&) { return -1; }

#endif

}  // namespace sgl::distributed
