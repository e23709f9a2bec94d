// Device names.
#include "core/device.h"

#include <charconv>

namespace sgl {

std::string Device::to_string() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

std::optional<Device> parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  if (text.substr(0, 5) == "cuda:") {
    int index = -1;
    auto digits = text.substr(5);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && ptr == digits.data() + digits.size() && index >= 0) {
      return Device::cuda(index);
    }
  }
  return std::nullopt;
}

bool built_with_cuda() {
#ifdef SGL_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace sgl
