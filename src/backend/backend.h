// Backend: device allocators, streams and events (no-ops on CPU), CUDA RAII handles.
#pragma once
