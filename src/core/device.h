// Device: where a tensor's memory lives (host CPU or a CUDA GPU).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sgl {

enum class DeviceType { kCpu, kCuda };

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;

  static Device cpu() { return {DeviceType::kCpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::kCuda, index}; }
  bool is_cpu() const { return type == DeviceType::kCpu; }
  bool is_cuda() const { return type == DeviceType::kCuda; }
  bool operator==(const Device&) const = default;
  std::string to_string() const;  // "cpu", "cuda:0"
};

// Parses "cpu", "cuda", "cuda:1".
std::optional<Device> parse_device(std::string_view text);

// True when this binary was compiled with the CUDA backend.
bool built_with_cuda();

}  // namespace sgl
