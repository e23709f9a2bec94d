// ForwardMode: what kind of batch a forward pass runs (as SGLang's ForwardMode).
#pragma once

namespace sgl {

enum class ForwardMode {
  kExtend,        // prefill of new tokens, possibly after a cached prefix
  kDecode,        // one new token per request
  kMixed,         // a prefill chunk and running decodes together
  kIdle,          // nothing to run (keeps collective ops in step under parallelism)
  kTargetVerify,  // speculative decoding: verify draft tokens
  kDraftExtend,   // speculative decoding: extend the draft model
};

inline bool is_extend_like(ForwardMode mode) {
  return mode == ForwardMode::kExtend || mode == ForwardMode::kMixed ||
         mode == ForwardMode::kTargetVerify || mode == ForwardMode::kDraftExtend;
}

// SGLang's spelling, lower case: "extend", "decode", "mixed", ...
inline const char* forward_mode_name(ForwardMode mode) {
  switch (mode) {
    case ForwardMode::kExtend:
      return "extend";
    case ForwardMode::kDecode:
      return "decode";
    case ForwardMode::kMixed:
      return "mixed";
    case ForwardMode::kIdle:
      return "idle";
    case ForwardMode::kTargetVerify:
      return "target_verify";
    case ForwardMode::kDraftExtend:
      return "draft_extend";
  }
  return "?";
}

}  // namespace sgl
