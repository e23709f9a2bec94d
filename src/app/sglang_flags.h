// The SGLang launch flags sgl.cpp does not implement: each accepted without effect (with the
// reason, logged at start) or refused with a one-line reason naming the missing feature, so a
// copied SGLang command line either serves or says why not, never "unknown flag".
#pragma once

#include <span>

#include "app/flag_spec.h"

namespace sgl::app {

std::span<const FlagSpec> sglang_compat_flag_table();

}  // namespace sgl::app
