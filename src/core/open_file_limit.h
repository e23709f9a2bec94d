// Each connection is a file descriptor: servers and load generators with thousands of concurrent
// streams lift the soft RLIMIT_NOFILE to the hard limit at start.
#pragma once

namespace sgl {

// False when the limit could not be read or raised (already at the hard limit is success).
bool raise_open_file_limit();

}  // namespace sgl
