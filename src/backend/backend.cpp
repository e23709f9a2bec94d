// Backend-level queries that do not need CUDA headers.
#include "backend/backend.h"

namespace sgl::backend {}  // namespace sgl::backend
