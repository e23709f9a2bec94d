// Base64 (RFC 4648, standard alphabet, padded) of raw bytes: the API's binary fields
// (embeddings' encoding_format "base64", SGLang's routed_experts).
#pragma once

#include <string>
#include <string_view>

namespace sgl {

std::string base64_encode(std::string_view bytes);

}  // namespace sgl
