// Weight loading: shape checks, queueing reads on the uploader, dummy weights.
#include "model/weight_loader.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <numeric>

#include "core/logging.h"
#include "kernels/copy.h"
#include "kernels/fill.h"

namespace sgl::model {

WeightLoader::WeightLoader(const WeightSource* source, Allocator& allocator, DType dtype,
                           backend::Stream stream, uint64_t seed)
    : source_(source),
      allocator_(allocator),
      dtype_(dtype),
      stream_(stream),
      seed_(seed),
      start_(std::chrono::steady_clock::now()) {
  if (source_ != nullptr) {
    uploader_ = std::make_unique<WeightUploader>(allocator_, WeightUploader::Options{});
  }
}

bool WeightLoader::has(const std::string& name) const {
  return source_ == nullptr || source_->has(name);
}

Result<WeightLoader::PendingLoad> WeightLoader::prepare(const std::string& name,
                                                        const std::vector<int64_t>& shape,
                                                        const TensorSlice& slice) const {
  PendingLoad pending{name, shape, slice, {}, 0};
  SGL_RETURN_IF_ERROR(check_slice(name, shape, slice));
  SGL_ASSIGN_OR_RETURN(pending.stored, source_->stored(name, shape));  // checks name and shape
  if (pending.stored) {
    SGL_ASSIGN_OR_RETURN(pending.stored,
                         narrow_stored(std::move(*pending.stored), shape, slice, name));
  }
  if (!pending.stored || !uploader_->can_stage(*pending.stored)) {
    pending.stored.reset();
    SGL_ASSIGN_OR_RETURN(pending.file_bytes, source_->stored_nbytes(name));
  }
  return pending;
}

void WeightLoader::submit(PendingLoad pending, const Tensor& dst) {
  if (pending.stored) return uploader_->enqueue(std::move(*pending.stored), dst);
  if (pending.slice.whole()) {
    uploader_->enqueue_f32(
        [source = source_, name = std::move(pending.name), shape = std::move(pending.shape)](
            float* out) { return source->read_f32(name, shape, out); },
        dst, pending.file_bytes);
    return;
  }
  // NOTE: formats only the host converts are read whole and then cut: F64 and 1-D quantized
  // tensors, none of them large.
  uploader_->enqueue_f32(
      [source = source_, name = std::move(pending.name), shape = std::move(pending.shape),
       slice = pending.slice](float* out) {
        int64_t numel = 1;
        for (int64_t d : shape) numel *= d;
        std::vector<float> whole(static_cast<size_t>(numel));
        SGL_RETURN_IF_ERROR(source->read_f32(name, shape, whole.data()));
        copy_slice_f32(whole.data(), shape, slice, out);
        return Status::ok_status();
      },
      dst, pending.file_bytes);
}

Buffer WeightLoader::dummy(std::vector<int64_t> shape) {
  Buffer out(allocator_, dtype_, std::move(shape));
  kernels::fill_uniform(out, -kDummyRange, kDummyRange, seed_ + dummy_count_++, stream_);
  return out;
}

Status WeightLoader::check(const std::string& name, const std::vector<int64_t>& shape,
                           const TensorSlice& slice) {
  SGL_RETURN_IF_ERROR(check_slice(name, shape, slice));
  if (source_ != nullptr) {
    asked_.insert(name);
    SGL_RETURN_IF_ERROR(source_->check(name, shape));
    if (!slice.whole()) {  // a block format must be cut at whole blocks
      SGL_ASSIGN_OR_RETURN(std::optional<StoredTensor> stored, source_->stored(name, shape));
      if (stored)
        SGL_RETURN_IF_ERROR(narrow_stored(std::move(*stored), shape, slice, name).status());
    }
  }
  int64_t n = 1;
  for (int64_t d : slice.shape_of(shape)) n *= d;
  checked_bytes_ += n * static_cast<int64_t>(dtype_size(dtype_));
  return Status::ok_status();
}

std::vector<std::string> WeightLoader::unread_tensors() const {
  std::vector<std::string> unread;
  if (source_ == nullptr) return unread;
  for (std::string& name : source_->names()) {
    if (!asked_.contains(name)) unread.push_back(std::move(name));
  }
  return unread;
}

Result<Buffer> WeightLoader::load(const std::string& name, std::vector<int64_t> shape,
                                  const TensorSlice& slice) {
  if (check_only_) {
    SGL_RETURN_IF_ERROR(check(name, shape, slice));
    if (weight_map_ != nullptr) {
      std::vector<int64_t> rows = slice.shape_of(shape);
      const int64_t n = rows[0];
      unstored_.push_back({name, {nullptr, std::move(rows), 0, n, shape, slice}});
    }
    return Buffer();
  }
  if (source_ == nullptr) {
    SGL_RETURN_IF_ERROR(check_slice(name, shape, slice));
    return dummy(slice.shape_of(shape));
  }
  SGL_ASSIGN_OR_RETURN(PendingLoad pending, prepare(name, shape, slice));
  Buffer out(allocator_, dtype_, slice.shape_of(shape));
  submit(std::move(pending), out);
  return out;
}

Result<Buffer> WeightLoader::load_concat(const std::vector<std::string>& names,
                                         const std::vector<std::vector<int64_t>>& shapes,
                                         const std::vector<TensorSlice>& slices) {
  SGL_CHECK(!shapes.empty() && (slices.empty() || slices.size() == shapes.size()));
  const std::vector<TensorSlice> parts =
      slices.empty() ? std::vector<TensorSlice>(shapes.size()) : slices;
  std::vector<int64_t> fused = parts[0].shape_of(shapes[0]);
  fused[0] = 0;
  for (size_t i = 0; i < shapes.size(); ++i) fused[0] += parts[i].shape_of(shapes[i])[0];
  return load_rows(names, shapes, parts, std::move(fused));
}

Result<Buffer> WeightLoader::load_stacked(const std::vector<std::string>& names,
                                          const std::vector<int64_t>& part,
                                          std::vector<int64_t> shape, const TensorSlice& slice) {
  return load_rows(names, std::vector<std::vector<int64_t>>(names.size(), part),
                   std::vector<TensorSlice>(names.size(), slice), std::move(shape));
}

Result<Buffer> WeightLoader::load_rows(const std::vector<std::string>& names,
                                       const std::vector<std::vector<int64_t>>& full_shapes,
                                       const std::vector<TensorSlice>& slices,
                                       std::vector<int64_t> shape) {
  SGL_CHECK(!names.empty() && names.size() == full_shapes.size() && names.size() == slices.size());
  for (size_t i = 0; i < names.size(); ++i) {
    SGL_RETURN_IF_ERROR(check_slice(names[i], full_shapes[i], slices[i]));
  }
  // The slices stacked along dim 0; `shape` must hold exactly that many elements.
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < names.size(); ++i) shapes.push_back(slices[i].shape_of(full_shapes[i]));
  std::vector<int64_t> rows = shapes[0];
  rows[0] = 0;
  for (const auto& s : shapes) {
    SGL_CHECK(s.size() == rows.size() && std::equal(s.begin() + 1, s.end(), rows.begin() + 1));
    rows[0] += s[0];
  }
  SGL_CHECK_EQ(std::accumulate(rows.begin(), rows.end(), int64_t{1}, std::multiplies<>()),
               std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()));
  if (check_only_) {
    int64_t row = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      SGL_RETURN_IF_ERROR(check(names[i], full_shapes[i], slices[i]));
      if (weight_map_ != nullptr) {
        unstored_.push_back(
            {names[i], {nullptr, rows, row, shapes[i][0], full_shapes[i], slices[i]}});
      }
      row += shapes[i][0];
    }
    return Buffer();
  }
  if (source_ == nullptr) return dummy(std::move(shape));
  std::vector<PendingLoad> parts;  // every part checked before allocating
  for (size_t i = 0; i < names.size(); ++i) {
    SGL_ASSIGN_OR_RETURN(PendingLoad part, prepare(names[i], full_shapes[i], slices[i]));
    parts.push_back(std::move(part));
  }
  Buffer out(allocator_, dtype_, shape);
  const Tensor stacked = out.tensor().reshape(rows);
  int64_t row = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    submit(std::move(parts[i]), stacked.slice_rows(row, shapes[i][0]));
    row += shapes[i][0];
  }
  return out;
}

Result<Buffer> WeightLoader::load_norm(const std::string& name, int64_t size) {
  if (source_ != nullptr || check_only_) return load(name, {size});
  Buffer out(allocator_, dtype_, {size});
  kernels::fill_constant(out, 1.0f, stream_);
  return out;
}

Status WeightLoader::store(Buffer& slot, Result<Buffer> loaded) {
  SGL_RETURN_IF_ERROR(loaded.status());
  if (check_only_) {
    for (auto& [name, location] : unstored_) {
      location.slot = &slot;
      (*weight_map_)[name] = std::move(location);
    }
    unstored_.clear();
    return Status::ok_status();
  }
  if (!in_place_) {
    slot = std::move(loaded).value();
    return Status::ok_status();
  }
  if (uploader_ != nullptr) SGL_RETURN_IF_ERROR(uploader_->finish());
  const Tensor from = loaded->tensor(), to = slot.tensor();
  if (from.dtype() != to.dtype() || !std::ranges::equal(from.shape(), to.shape())) {
    return internal_error("a weight loaded in place differs in shape or dtype from the one there");
  }
  kernels::copy(from, to, stream_);
  backend::synchronize(stream_);  // before `loaded` is freed
  return Status::ok_status();
}

Status WeightLoader::finish() {
  if (uploader_ == nullptr) return Status::ok_status();
  Status status = uploader_->finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double gb = static_cast<double>(uploader_->bytes_queued()) / 1e9;
  if (status.ok()) {
    char line[160];
    std::snprintf(line, sizeof line, "%.2f GB of weights in %.2f s (%.2f GB/s) from ", gb, seconds,
                  seconds > 0 ? gb / seconds : 0.0);
    SGL_LOG_INFO << "loaded " << line << source_->describe();
  }
  return status;
}

}  // namespace sgl::model
