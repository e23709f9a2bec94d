// CPU embedding lookup.
#include <cstring>

#include "kernels/cpu/cpu_ops.h"

namespace sgl::kernels::cpu {

void embedding(const Tensor& ids, const Tensor& table, const Tensor& out) {
  const int32_t* id = ids.data<int32_t>();
  const int64_t vocab = table.size(0);
  const size_t row_bytes = static_cast<size_t>(table.size(1)) * dtype_size(table.dtype());
  const char* src = static_cast<const char*>(table.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t t = 0; t < ids.size(0); ++t) {
    SGL_CHECK(id[t] >= 0 && id[t] < vocab)
        << "embedding: token id " << id[t] << " not in [0, " << vocab << ")";
    std::memcpy(dst + t * row_bytes, src + id[t] * row_bytes, row_bytes);
  }
}

void embedding_shard(const Tensor& ids, const Tensor& table, int64_t vocab_start,
                     int64_t vocab_size, const Tensor& out) {
  const int32_t* id = ids.data<int32_t>();
  const int64_t rows = table.size(0);
  const size_t row_bytes = static_cast<size_t>(table.size(1)) * dtype_size(table.dtype());
  const char* src = static_cast<const char*>(table.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t t = 0; t < ids.size(0); ++t) {
    SGL_CHECK(id[t] >= 0 && id[t] < vocab_size)
        << "embedding: token id " << id[t] << " not in [0, " << vocab_size << ")";
    const int64_t row = id[t] - vocab_start;
    if (row >= 0 && row < rows) {
      std::memcpy(dst + t * row_bytes, src + row * row_bytes, row_bytes);
    } else {
      std::memset(dst + t * row_bytes, 0, row_bytes);
    }
  }
}

}  // namespace sgl::kernels::cpu
