// Test helpers for model loading: scratch directories and hand-built safetensors files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/status.h"
#include "test_data.h"

namespace sgl::model::test_util {

// Asserts an error `status` with `code` whose message holds every one of `substrings`.
inline void expect_status(const Status& status, StatusCode code,
                          const std::vector<std::string>& substrings) {
  ASSERT_FALSE(status.ok()) << "expected " << status_code_name(code) << ", got OK";
  EXPECT_EQ(status.code(), code) << status.to_string();
  for (const std::string& s : substrings) {
    EXPECT_NE(status.message().find(s), std::string::npos)
        << "'" << s << "' not in: " << status.message();
  }
}

// ../shared/testdata/models, or $SGL_TESTDATA_DIR/models (binaries carried to the GPU machine).
inline std::filesystem::path testdata_models_dir() { return test::testdata_dir() / "models"; }

// A unique directory under the system temp path, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("sgl_model_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) +
             "_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Writes `bytes` to <dir>/<name> and returns the full path.
  std::filesystem::path write(const std::string& name, const std::string& bytes) const {
    std::filesystem::path p = path_ / name;
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EXPECT_TRUE(out.good()) << "cannot write " << p;
    return p;
  }

 private:
  std::filesystem::path path_;
};

// The raw layout: 8-byte little-endian header length, header text, data bytes.
inline std::string safetensors_bytes(const std::string& header, const std::string& data,
                                     uint64_t header_len_override = UINT64_MAX) {
  uint64_t len = header_len_override == UINT64_MAX ? header.size() : header_len_override;
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  return out + header + data;
}

struct SyntheticTensor {
  std::string name;
  std::string dtype;  // safetensors spelling: "F32", "BF16", ...
  std::vector<int64_t> shape;
  std::string bytes;
};

template <typename T>
std::string raw_bytes(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// A well-formed safetensors file holding `tensors` in order, with optional metadata JSON text
// (e.g. R"({"format":"pt"})").
inline std::string build_safetensors(const std::vector<SyntheticTensor>& tensors,
                                     const std::string& metadata_json = "") {
  std::string header = "{";
  std::string data;
  bool first = true;
  if (!metadata_json.empty()) {
    header += "\"__metadata__\":" + metadata_json;
    first = false;
  }
  for (const SyntheticTensor& t : tensors) {
    if (!first) header += ",";
    first = false;
    std::string shape;
    for (size_t i = 0; i < t.shape.size(); ++i) {
      shape += (i ? "," : "") + std::to_string(t.shape[i]);
    }
    header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
              std::to_string(data.size() + t.bytes.size()) + "]}";
    data += t.bytes;
  }
  header += "}";
  // Pad like the reference writer so the data section is 8-byte aligned.
  while ((header.size() + 8) % 8 != 0) header += ' ';
  return safetensors_bytes(header, data);
}

}  // namespace sgl::model::test_util
