// Test helpers for GGUF: a small writer of GGUF images (any metadata type, tensors, alignment).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace sgl::model::test_util {

// Little-endian encoders of GGUF's primitive fields.
template <typename T>
std::string le_bytes(T value) {
  std::string out(sizeof(T), '\0');
  std::memcpy(out.data(), &value, sizeof(T));
  return out;
}
inline std::string gguf_str(const std::string& s) { return le_bytes<uint64_t>(s.size()) + s; }

// An encoded metadata value: its GGUF type id and payload bytes.
struct GgufRawValue {
  uint32_t type = 0;
  std::string payload;
};

inline GgufRawValue gguf_u8(uint8_t v) { return {0, le_bytes(v)}; }
inline GgufRawValue gguf_i8(int8_t v) { return {1, le_bytes(v)}; }
inline GgufRawValue gguf_u16(uint16_t v) { return {2, le_bytes(v)}; }
inline GgufRawValue gguf_i16(int16_t v) { return {3, le_bytes(v)}; }
inline GgufRawValue gguf_u32(uint32_t v) { return {4, le_bytes(v)}; }
inline GgufRawValue gguf_i32(int32_t v) { return {5, le_bytes(v)}; }
inline GgufRawValue gguf_f32(float v) { return {6, le_bytes(v)}; }
inline GgufRawValue gguf_bool(bool v) { return {7, std::string(1, v ? '\1' : '\0')}; }
inline GgufRawValue gguf_string(const std::string& v) { return {8, gguf_str(v)}; }
inline GgufRawValue gguf_u64(uint64_t v) { return {10, le_bytes(v)}; }
inline GgufRawValue gguf_i64(int64_t v) { return {11, le_bytes(v)}; }
inline GgufRawValue gguf_f64(double v) { return {12, le_bytes(v)}; }
// An array of items that all have type `element_type` (payloads concatenated).
inline GgufRawValue gguf_array(uint32_t element_type, const std::vector<GgufRawValue>& items) {
  std::string payload = le_bytes(element_type) + le_bytes<uint64_t>(items.size());
  for (const GgufRawValue& item : items) payload += item.payload;
  return {9, payload};
}
inline GgufRawValue gguf_string_array(const std::vector<std::string>& items) {
  std::vector<GgufRawValue> raw;
  for (const std::string& s : items) raw.push_back(gguf_string(s));
  return gguf_array(8, raw);
}
inline GgufRawValue gguf_i32_array(const std::vector<int32_t>& items) {
  std::vector<GgufRawValue> raw;
  for (int32_t v : items) raw.push_back(gguf_i32(v));
  return gguf_array(5, raw);
}
inline GgufRawValue gguf_f32_array(const std::vector<float>& items) {
  std::vector<GgufRawValue> raw;
  for (float v : items) raw.push_back(gguf_f32(v));
  return gguf_array(6, raw);
}

// Builds a GGUF image: header, metadata in insertion order, tensor infos, padding to the
// alignment, then each tensor's data at its aligned offset.
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) : version_(version) {}

  GgufWriter& kv(const std::string& key, const GgufRawValue& value) {
    kvs_.push_back({key, value});
    return *this;
  }
  // `dims` innermost first, as GGUF stores them; `data` the raw (possibly quantized) bytes.
  // `offset_override` replaces the computed data offset (to build broken files).
  GgufWriter& tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type,
                     const std::string& data, uint64_t offset_override = UINT64_MAX) {
    tensors_.push_back({name, dims, type, data, offset_override});
    return *this;
  }
  // Alignment used for the layout (write general.alignment yourself when it is not 32).
  GgufWriter& alignment(uint64_t a) {
    alignment_ = a;
    return *this;
  }

  // Byte offset where the tensor-info section ends (before padding), for targeted corruption.
  size_t header_size() const { return header().size(); }

  std::string bytes() const {
    std::string out = header();
    out += std::string(pad(out.size()), '\0');
    std::string data;
    for (const Tensor& t : tensors_) {
      data += std::string(pad(data.size()), '\0');
      data += t.data;
    }
    return out + data;
  }

 private:
  struct Kv {
    std::string key;
    GgufRawValue value;
  };
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    std::string data;
    uint64_t offset_override;
  };

  size_t pad(size_t n) const { return (alignment_ - n % alignment_) % alignment_; }

  std::string header() const {
    std::string out = "GGUF" + le_bytes(version_) + le_bytes<uint64_t>(tensors_.size()) +
                      le_bytes<uint64_t>(kvs_.size());
    for (const Kv& kv : kvs_) out += gguf_str(kv.key) + le_bytes(kv.value.type) + kv.value.payload;
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
      offset += pad(offset);
      out += gguf_str(t.name) + le_bytes<uint32_t>(t.dims.size());
      for (uint64_t d : t.dims) out += le_bytes(d);
      out += le_bytes(t.type);
      out += le_bytes<uint64_t>(t.offset_override == UINT64_MAX ? offset : t.offset_override);
      offset += t.data.size();
    }
    return out;
  }

  uint32_t version_;
  uint64_t alignment_ = 32;
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
};

}  // namespace sgl::model::test_util
