// ExecBatch on the wire: what node 0's scheduler will send the ranks of other nodes (serving
// across nodes, issue #24), one message a batch. Fixed-width integers and IEEE floats in the
// machine's byte order (the nodes of one deployment share an architecture), every array after
// its length. The grammar masks travel resolved: encoding waits for them.
// Decoding checks the header, every length against what is left, every enum and flag, and that
// nothing is left over: a bad message is InvalidArgument saying where, never a read past it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "runner/batch_executor.h"

namespace sgl::runner {

std::vector<uint8_t> encode_exec_batch(const ExecBatch& batch);
Result<ExecBatch> decode_exec_batch(std::span<const uint8_t> message);

}  // namespace sgl::runner
