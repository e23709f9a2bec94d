// Weight loading: shape checks, conversion to the compute dtype on the host, upload.
#include "model/weight_loader.h"

#include "kernels/copy.h"
#include "kernels/fill.h"

namespace sgl::model {
namespace {

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

WeightLoader::WeightLoader(const WeightSource* source, Allocator& allocator, DType dtype,
                           backend::Stream stream, uint64_t seed)
    : source_(source), allocator_(allocator), dtype_(dtype), stream_(stream), seed_(seed) {}

bool WeightLoader::has(const std::string& name) const {
  return source_ == nullptr || source_->has(name);
}

Result<Buffer> WeightLoader::upload(const std::vector<float>& host, std::vector<int64_t> shape) {
  Buffer out(allocator_, dtype_, shape);
  if (dtype_ == DType::kF32 && allocator_.device().is_cpu()) {
    kernels::copy(Tensor(const_cast<float*>(host.data()), DType::kF32, shape), out, stream_);
    return out;
  }
  Buffer staging(cpu_allocator(), dtype_, shape);
  kernels::copy(Tensor(const_cast<float*>(host.data()), DType::kF32, shape), staging, stream_);
  kernels::copy(staging, out, stream_);
  backend::synchronize(stream_);  // staging dies at return
  return out;
}

Buffer WeightLoader::dummy(std::vector<int64_t> shape) {
  Buffer out(allocator_, dtype_, std::move(shape));
  kernels::fill_uniform(out, -kDummyRange, kDummyRange, seed_ + dummy_count_++, stream_);
  return out;
}

Status WeightLoader::check(const std::string& name, const std::vector<int64_t>& shape) {
  if (source_ != nullptr) SGL_RETURN_IF_ERROR(source_->check(name, shape));
  checked_bytes_ += numel(shape) * static_cast<int64_t>(dtype_size(dtype_));
  return Status::ok_status();
}

Result<Buffer> WeightLoader::load(const std::string& name, std::vector<int64_t> shape) {
  if (check_only_) {
    SGL_RETURN_IF_ERROR(check(name, shape));
    return Buffer();
  }
  if (source_ == nullptr) return dummy(std::move(shape));
  std::vector<float> host(static_cast<size_t>(numel(shape)));
  SGL_RETURN_IF_ERROR(source_->read_f32(name, shape, host.data()));
  return upload(host, std::move(shape));
}

Result<Buffer> WeightLoader::load_concat(const std::vector<std::string>& names,
                                         const std::vector<std::vector<int64_t>>& shapes) {
  SGL_CHECK_EQ(names.size(), shapes.size());
  if (check_only_) {
    for (size_t i = 0; i < names.size(); ++i) SGL_RETURN_IF_ERROR(check(names[i], shapes[i]));
    return Buffer();
  }
  std::vector<int64_t> fused = shapes.at(0);
  fused[0] = 0;
  for (const auto& s : shapes) fused[0] += s[0];
  if (source_ == nullptr) return dummy(std::move(fused));
  std::vector<float> host(static_cast<size_t>(numel(fused)));
  float* cursor = host.data();
  for (size_t i = 0; i < names.size(); ++i) {
    SGL_RETURN_IF_ERROR(source_->read_f32(names[i], shapes[i], cursor));
    cursor += numel(shapes[i]);
  }
  return upload(host, std::move(fused));
}

Result<Buffer> WeightLoader::load_norm(const std::string& name, int64_t size) {
  if (source_ != nullptr || check_only_) return load(name, {size});
  Buffer out(allocator_, dtype_, {size});
  kernels::fill_constant(out, 1.0f, stream_);
  return out;
}

}  // namespace sgl::model
