// WeightLoader: weight-source tensors -> device Buffers, with dtype conversion, fusion and checks.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "backend/stream.h"
#include "core/allocator.h"
#include "core/buffer.h"
#include "model/weight_source.h"
#include "model/weight_uploader.h"

namespace sgl::model {

// Where one checkpoint tensor sits in a loaded model (WeightLoader::set_weight_map).
struct WeightLocation {
  const Buffer* slot = nullptr;  // the block's Buffer that holds it
  std::vector<int64_t> rows;     // the slot viewed as its parts stacked along dim 0
  int64_t first_row = 0;         // this tensor's rows in that view
  int64_t num_rows = 0;
  std::vector<int64_t> shape;  // the whole tensor's shape in the checkpoint
  TensorSlice slice;           // the share of it the slot holds (whole at one rank)
};
using WeightMap = std::map<std::string, WeightLocation>;

// Where weights come from: a WeightSource (safetensors checkpoint, GGUF file), or random values
// (--load-format dummy).
//
// Loads are asynchronous: load() checks the name and shape, allocates the Buffer and queues the
// copy (on a WeightUploader's threads); the Buffer holds the weights once finish() returns OK.
// Stored formats the destination device converts (f32 / f16 / bf16, GGUF Q8_0) travel as they
// are stored; others are converted to f32 on the host first.
class WeightLoader {
 public:
  // Reads from `source` (borrowed; must outlive the loader); nullptr means dummy weights drawn
  // from `seed`.
  WeightLoader(const WeightSource* source, Allocator& allocator, DType dtype,
               backend::Stream stream, uint64_t seed = 0);

  // Loads `name`, which must have exactly `shape` (checked before anything is allocated). With
  // `slice` (a tensor-parallel shard), only that range of it: the Buffer has slice's shape and,
  // where the stored format allows (everything but F64 and 1-D quantized GGUF tensors), only
  // the slice's bytes are read.
  Result<Buffer> load(const std::string& name, std::vector<int64_t> shape,
                      const TensorSlice& slice = {});
  // Loads tensors of shapes [rows_i, ...] (each narrowed to slices[i] when given) and stacks
  // them along dim 0 (fused qkv, gate_up).
  Result<Buffer> load_concat(const std::vector<std::string>& names,
                             const std::vector<std::vector<int64_t>>& shapes,
                             const std::vector<TensorSlice>& slices = {});
  // Loads tensors that all have shape `part`, each narrowed to `slice`, and lays them one after
  // another, in order, into one Buffer of `shape` (as many elements as all the slices): a MoE
  // layer's per-expert matrices as one [E, rows, cols] tensor.
  Result<Buffer> load_stacked(const std::vector<std::string>& names,
                              const std::vector<int64_t>& part, std::vector<int64_t> shape,
                              const TensorSlice& slice = {});
  // RMSNorm weights in dummy mode are ones (random norms make activations explode).
  Result<Buffer> load_norm(const std::string& name, int64_t size);

  // Where a model keeps what it loaded: `*slot = loaded` normally; nothing while check-only; in
  // place, the loaded values copied into the Buffer `slot` already holds (its memory stays where
  // it is, so CUDA graphs captured over it read the new values), which must have the same shape
  // and dtype. Every model writes its weights through this, so one load function serves both.
  Status store(Buffer& slot, Result<Buffer> loaded);
  // While on, store() overwrites the model's Buffers instead of replacing them (a weight update,
  // /update_weights_from_disk); each tensor is read and copied before the next is queued, so the
  // update needs memory for one tensor, not a second model (host memory, with a loader over
  // the host allocator: the copy crosses to the device).
  void set_in_place(bool on) { in_place_ = on; }

  bool has(const std::string& name) const;
  DType dtype() const { return dtype_; }
  Device device() const { return allocator_.device(); }
  // The weights' source; nullptr for dummy weights.
  const WeightSource* source() const { return source_; }

  // While on, load / load_concat / load_norm only check each tensor (WeightSource::check: there,
  // with its shape and a convertible dtype), add its bytes to checked_bytes() and return an
  // empty Buffer: nothing is read or allocated. Models run their load once this way first, so
  // that a wrong checkpoint fails before gigabytes are allocated for it.
  void set_check_only(bool on) { check_only_ = on; }
  // Bytes (in dtype()) of the tensors loaded while check-only.
  int64_t checked_bytes() const { return checked_bytes_; }
  // While check-only with a map, store() records in `*map` where each tensor checked since the
  // previous store() sits in `slot` (a model's load run this way over its loaded Buffers maps
  // checkpoint names to its memory: /get_weights_by_name). Null: none.
  void set_weight_map(WeightMap* map) { weight_map_ = map; }
  // The source's tensors that no check-only load asked for and that expect_unread() did not
  // name, sorted: what the model never reads (empty for dummy weights).
  std::vector<std::string> unread_tensors() const;
  // `name` stays unread on purpose (another rank's expert, a tied LM head's copy).
  void expect_unread(const std::string& name) { asked_.insert(name); }
  // File bytes of the reads queued so far (a tensor-parallel rank's: only its shards', but for
  // tensors only the host converts, which are read whole).
  uint64_t bytes_read() const { return uploader_ ? uploader_->bytes_queued() : 0; }

  // Waits until every loaded Buffer holds its weights; the first read error, if any. Call it
  // before the Buffers are used or destroyed, on error paths too. Logs the time and rate.
  Status finish();

 private:
  static constexpr float kDummyRange = 0.02f;  // dummy weights are uniform in +-kDummyRange

  // Random weights filled on the weights' device (fast for 8B-sized dummy models).
  Buffer dummy(std::vector<int64_t> shape);
  // A tensor checked and ready to queue: its stored bytes (narrowed to `slice`) when the
  // uploader can stage them, else read_f32 of `file_bytes` bytes of its file, then the slice.
  struct PendingLoad {
    std::string name;
    std::vector<int64_t> shape;  // the stored tensor's
    TensorSlice slice;
    std::optional<StoredTensor> stored;
    size_t file_bytes = 0;
  };
  // Checks `name` against `shape` and `slice` (nothing allocated or read).
  Result<PendingLoad> prepare(const std::string& name, const std::vector<int64_t>& shape,
                              const TensorSlice& slice) const;
  // Queues the read into dst.
  void submit(PendingLoad pending, const Tensor& dst);
  // load_concat into a Buffer of `shape` (the stacked slices' element count).
  Result<Buffer> load_rows(const std::vector<std::string>& names,
                           const std::vector<std::vector<int64_t>>& shapes,
                           const std::vector<TensorSlice>& slices, std::vector<int64_t> shape);
  // The check-only load of `name`: checks it and its slice (unless dummy) and counts the
  // slice's bytes.
  Status check(const std::string& name, const std::vector<int64_t>& shape,
               const TensorSlice& slice);

  const WeightSource* source_;
  Allocator& allocator_;
  DType dtype_;
  backend::Stream stream_;
  uint64_t seed_;
  uint64_t dummy_count_ = 0;  // each dummy tensor draws from its own seed
  bool check_only_ = false;
  bool in_place_ = false;
  WeightMap* weight_map_ = nullptr;
  // With a weight map: the tensors checked since the last store(), where they will sit.
  std::vector<std::pair<std::string, WeightLocation>> unstored_;
  int64_t checked_bytes_ = 0;
  std::unordered_set<std::string> asked_;     // checked or expected unread (unread_tensors())
  std::unique_ptr<WeightUploader> uploader_;  // with a source
  std::chrono::steady_clock::time_point start_;
};

}  // namespace sgl::model
