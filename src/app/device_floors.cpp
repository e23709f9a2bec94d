// Copy-bandwidth and GEMM-rate probes, timed on the host around synchronized batches of launches.
#include "app/device_floors.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "core/buffer.h"
#include "kernels/copy.h"
#include "kernels/fill.h"
#include "kernels/linear.h"

namespace sgl::app {
// Median seconds per call of `op`, over rounds of `calls` back-to-back launches.
double median_seconds(const std::function<void()>& op, backend::Stream stream, int calls,
                      int rounds) {
  op();  // warm-up: handles, workspaces, clocks
  backend::synchronize(stream);
  std::vector<double> per_call;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) op();
    backend::synchronize(stream);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    per_call.push_back(took.count() / calls);
  }
  std::sort(per_call.begin(), per_call.end());
  return per_call[per_call.size() / 2];
}

Result<DeviceFloors> measure_device_floors(Allocator& device_allocator, backend::Stream stream) {
  if (device_allocator.device().is_cpu()) {
    return invalid_argument("device floors are measured on a GPU");
  }
  DeviceFloors floors;
  {
    const int64_t elems = int64_t{1} << 30;  // bf16: 2 GiB per buffer, far beyond L2
    Buffer src(device_allocator, DType::kBF16, {elems});
    Buffer dst(device_allocator, DType::kBF16, {elems});
    kernels::fill_uniform(src, -1.f, 1.f, 1, stream);
    const double s = median_seconds([&] { kernels::copy(src, dst, stream); }, stream, 5, 5);
    floors.copy_bytes_per_s = 2.0 * static_cast<double>(src.tensor().nbytes()) / s;
  }
  {
    const int64_t n = 8192;
    Buffer x(device_allocator, DType::kBF16, {n, n});
    Buffer w(device_allocator, DType::kBF16, {n, n});
    Buffer y(device_allocator, DType::kBF16, {n, n});
    kernels::fill_uniform(x, -1.f, 1.f, 2, stream);  // never time on zeros
    kernels::fill_uniform(w, -1.f, 1.f, 3, stream);
    const double s =
        median_seconds([&] { kernels::linear(x, w, Tensor(), y, stream); }, stream, 10, 5);
    floors.gemm_flops_per_s = 2.0 * static_cast<double>(n) * n * n / s;
  }
  return floors;
}

}  // namespace sgl::app
