// ModelRunner: owns the model weights, the KV pool and the attention backend of one device, and
// runs forward passes + sampling on ForwardBatches.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention/attention_backend.h"
#include "attention/kv_pool.h"
#include "backend/stream.h"
#include "core/allocator.h"
#include "core/buffer.h"
#include "core/releasable_allocator.h"
#include "distributed/communicator.h"
#include "forward/forward_batch.h"
#include "forward/pooling.h"
#include "model/model.h"
#include "model/model_config.h"
#include "runner/device_sampler.h"
#include "runner/draft_head_memory.h"
#include "sampling/sampler.h"

namespace sgl::runner {

struct ModelRunnerOptions {
  Device device = Device::cpu();
  std::string attention_backend = "auto";
  std::string linear_backend = "auto";  // kernels::set_linear_backend
  // "auto" (the path's weights), "safetensors" / "gguf" (the same, checked to be that format) or
  // "dummy" (random weights).
  std::string load_format = "auto";
  // SGLang's --json-model-override-args: a JSON object replacing config.json's fields.
  std::string json_model_override_args;
  // Weights, activations and KV: "auto" (CPU float32, GPU bfloat16), "bfloat16" (GPU only) or
  // "float32"/"float" (SGLang's names).
  std::string dtype = "auto";
  // SGLang's --kv-cache-dtype: "auto" (the compute dtype), "fp8_e4m3" or "fp8_e5m2"
  // (parse_kv_cache_dtype); FP8 halves the KV cache's bytes a token against bf16.
  std::string kv_cache_dtype = "auto";
  int64_t max_num_tokens = 8192;  // tokens in one forward pass
  int64_t max_batch_size = 256;   // requests in one forward pass
  // Rows of logits one forward may return (f32 x vocab each, on the device and pinned on the
  // host): 0 = max(max_num_tokens, max_batch_size), so any batch may score every token.
  int64_t max_logit_rows = 0;
  int64_t context_length = 0;  // 0 = the model's max_position_embeddings
  // context_length may exceed max_position_embeddings (SGLang's
  // SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN); otherwise that is an error.
  bool allow_longer_context = false;
  int64_t num_kv_slots = 0;  // 0 = size from free memory and mem_fraction_static
  // GPU: fraction of total memory for weights + KV pool (SGLang's meaning; 0 = 0.88). CPU:
  // fraction of available RAM for the KV pool (0 = 0.2).
  double mem_fraction_static = 0;
  uint64_t seed = 0;                // dummy weights
  bool disable_cuda_graph = false;  // GPU: decode (and verify) batches run eagerly
  int64_t cuda_graph_max_bs = 256;  // GPU: largest decode batch captured (capped at max_batch_size)
  // GPU: the decode and verify batch sizes captured (SGLang's --cuda-graph-bs; those past the
  // caps above are left out); empty: cuda_graph_batch_sizes' buckets up to the cap.
  std::vector<int32_t> cuda_graph_bs;
  // GPU, speculative decoding: the verify passes whose every request has T new tokens (its last
  // token and T - 1 drafts; the scheduler's num_draft_tokens when it verifies every draft), for
  // each T > 1 listed, replay graphs too, up to cuda_graph_max_bs requests (and as many as
  // max_num_tokens / max_logit_rows hold). With cuda_graph_verify_tree they read a tree mask
  // (EAGLE trees).
  std::vector<int32_t> cuda_graph_verify_tokens;
  bool cuda_graph_verify_tree = false;
  bool enable_return_routed_experts = false;  // model::ModelOptions' (MoE models)
  // SGLang's --enable-lora (implied by --lora-paths): requests may name lora_paths' adapters.
  bool enable_lora = false;
  std::vector<model::LoraAdapterPath> lora_paths;  // model::ModelOptions' (SGLang's --lora-paths)
  int64_t max_lora_rank = 0;                       // model::ModelOptions'
  // --max-loaded-loras: a /load_lora_adapter past it unloads the least recently used adapter
  // not pinned (the server's LoraRegistry); 0: no bound.
  int64_t max_loaded_loras = 0;
  model::LoraModules lora_target_modules = model::kAllLoraModules;  // model::ModelOptions'
  // SGLang's --enable-nan-detection: every batch samples on the host, where NaN logits become
  // sampling::kNanLogitReplacement (ModelBatchRunner, with a warning).
  bool enable_nan_detection = false;
  std::vector<int64_t> aux_hidden_state_layers;  // model::ModelOptions' (EAGLE-3 targets)
  // SGLang's --is-embedding: load the model to pool hidden states (model::ModelOptions), with the
  // pooling its sentence-transformers files configure (model/pooler_config.h). It generates
  // nothing: no LM head, no sampler, no decode graphs.
  bool is_embedding = false;
  // SGLang's --tp-size: the model's weights and KV heads split over this many ranks (CPU only:
  // a TpWorkerGroup runs them, each a ModelRunner created with its rank's communicator).
  int tp_size = 1;
  // SGLang's --ep-size: the MoE experts split over this many groups of the tp_size ranks
  // (model/expert_parallel.h); it must divide tp_size and the model's experts.
  int ep_size = 1;
  // How tokens reach the other ranks' experts (kAuto: the token exchange on the CPU, an
  // all-reduce of the ranks' experts' outputs on GPUs; tests pick either on the CPU).
  model::ExpertDispatch ep_dispatch = model::ExpertDispatch::kAuto;
  bool fp32_all_reduce = false;  // model::ModelOptions' (--enable-fp32-all-reduce)
  // GPU tensor parallelism: every all-reduce through NCCL, none through the one-shot kernel over
  // peer memory (distributed::nccl_group's custom_all_reduce; --disable-custom-all-reduce).
  bool disable_custom_all_reduce = false;
  // SGLang's --enable-memory-saver: the weights and the KV cache live in memory release_memory
  // gives back to the device and resume_memory takes again, at the same addresses (CUDA graphs
  // over them stay valid).
  bool enable_memory_saver = false;
  // SGLang's --enable-weights-cpu-backup: a release keeps the weights in host memory and the
  // resume writes them back (without it they must be written again: update_weights_from_disk).
  bool enable_weights_cpu_backup = false;
  // An EAGLE head that will draft for this runner (EagleDraftRunner, loaded after it): a pool
  // sized from mem_fraction_static leaves room for the head's weights, activations and KV.
  std::optional<DraftHeadOptions> draft_head;
};

// The memory SGLang's /release_memory_occupation and /resume_memory_occupation name by their
// tags "weights" and "kv_cache".
struct MemoryKinds {
  bool weights = false;
  bool kv_cache = false;
};

class CudaGraphRunner;

class ModelRunner {
 public:
  // At options.tp_size > 1, `tp_group` is this rank's communicator in a group of that size (it
  // must outlive the runner): the runner loads the rank's shard and a KV pool of its KV heads.
  static Result<std::unique_ptr<ModelRunner>> create(const std::filesystem::path& model_path,
                                                     const ModelRunnerOptions& options,
                                                     distributed::Communicator* tp_group = nullptr);
  ~ModelRunner();

  const model::ModelConfig& config() const { return model_->config(); }
  const model::Model& model() const { return *model_; }
  const ModelRunnerOptions& options() const { return options_; }
  int64_t context_length() const { return context_length_; }
  // The checkpoint the weights came from: the model path, or the latest update's.
  const std::filesystem::path& weights_path() const { return weights_path_; }
  // SGLang's update_weights_from_disk: the weights of `path` (a checkpoint of the same network,
  // model::check_same_network; --json-model-override-args apply as at start) written over the
  // served ones, where they are, so CUDA graphs stay valid. No forward may run meanwhile. On an
  // error nothing changed: a read that fails part way loads the previous checkpoint back (and
  // if that fails too, kInternal says the weights are mixed).
  Status update_weights_from_disk(const std::filesystem::path& path);
  // The weight the checkpoint calls `name`, this rank's share of it copied to the host as f32
  // (model::Model::find_weight; NotFound for one this rank does not hold). No forward may run
  // meanwhile.
  struct HostWeight {
    std::vector<float> values;   // the share, row-major
    std::vector<int64_t> shape;  // the whole tensor's
    model::TensorSlice slice;    // which share `values` is
  };
  Result<HostWeight> read_weight(const std::string& name);
  // SGLang's /load_lora_adapter and /unload_lora_adapter on this rank (model::Model's): adapter
  // id `id` loaded beside the weights, or freed. No forward may run meanwhile.
  Status load_lora_adapter(int32_t id, const model::LoraAdapterPath& adapter);
  void unload_lora_adapter(int32_t id);
  // SGLang's release_memory_occupation (--enable-memory-saver): the device memory of `kinds` given
  // back, its addresses kept; returns the bytes given back (0 for kinds already released). The
  // KV cache's contents are lost (no request may hold KV: flush the scheduler's cache first);
  // the weights' too, unless --enable-weights-cpu-backup keeps them on the host, else write them
  // again after the resume (update_weights_from_disk). No forward may run until every kind is
  // resumed, nor a weight update or read while the weights are released.
  Result<size_t> release_memory(MemoryKinds kinds);
  // Takes the memory of the released ones among `kinds` back (kResourceExhausted, changing
  // nothing, when the device has not that much free).
  Status resume_memory(MemoryKinds kinds);
  MemoryKinds released_memory() const;
  // The sizes a draft head beside this runner is planned and loaded for.
  DraftTargetSizes draft_target_sizes() const {
    return {options_.max_num_tokens, options_.max_batch_size, context_length_, options_.tp_size};
  }
  int64_t num_kv_slots() const { return kv_pool_->shape().num_slots; }
  // Weights and activations dtype (--dtype).
  DType compute_dtype() const { return compute_dtype_; }
  // The KV cache's stored dtype (--kv-cache-dtype): compute_dtype() or an FP8 one.
  DType kv_cache_dtype() const { return kv_pool_->shape().dtype; }
  // An embedding model's pooling (type kNone for a generation model).
  const PoolerConfig& pooler() const { return pooler_; }
  Allocator& allocator() { return *allocator_; }
  // The rank's tensor-parallel collectives (null at one rank without a communicator).
  distributed::Communicator* tp_group() const { return tp_group_; }

  // The model's output on the runner's device: f32 logits [fb.num_logit_rows(), vocab] (and the
  // hidden states when fb.capture_hidden_states), queued on stream(), valid until the next
  // forward.
  model::ModelOutput forward(const ForwardBatch& fb);
  // Whether forward(fb) replays a captured CUDA graph (a decode's or a verify's) instead of
  // running eagerly.
  bool replays_graph(const ForwardBatch& fb) const;
  // Host f32 logits [fb.num_logit_rows(), vocab], valid until the next forward; `output`, when
  // given, receives the device output too (its hidden states, for an EAGLE draft).
  Tensor forward_logits(const ForwardBatch& fb, model::ModelOutput* output = nullptr);
  // An embedding model's pooling batch (fb.pooling): host f32 [fb.batch_size, hidden] (see
  // model::ModelOutput::embeddings), valid until the next forward.
  Tensor forward_embeddings(const ForwardBatch& fb);
  // The stream forward passes run on (the batch builder uploads on it too).
  backend::Stream stream() const { return stream_; }
  // forward_logits + sampling (one row per request; fb.logits_mode must be kLastPerRequest).
  sampling::SampleOutput forward_and_sample(const ForwardBatch& fb,
                                            const sampling::SamplingBatch& sampling);

  // forward_and_sample in two halves, for a decode loop that queues step N+1 before step N's
  // ids reach the host: launch returns once the forward and the sampling are queued; the
  // sampled ids stay on the device, where the next forward's sampled_id_ref() inputs read them,
  // and come back from collect(). Only where can_launch(); at most two launches uncollected,
  // collected in order.
  // With `vocab_mask` (grammar masks), launch waits for it once the forward is queued and
  // masks the logits on the device before sampling: the forward runs while the scheduler
  // computes the masks.
  // fb's logits rows are the sampled rows: one per request, or every token when each token is
  // sampled (a batch of decodes and speculative verifies). `output`, when given, receives the
  // forward's device output (its hidden states, for an EAGLE draft).
  using LaunchedSample = DeviceSampler::Ticket;
  bool can_launch(const sampling::SamplingBatch& sampling) const;
  LaunchedSample launch_forward_and_sample(const ForwardBatch& fb,
                                           const sampling::SamplingBatch& sampling,
                                           const sampling::VocabMaskFuture* vocab_mask = nullptr,
                                           model::ModelOutput* output = nullptr);
  sampling::SampleOutput collect(const LaunchedSample& launched);
  // i32 [rows] on the device: the ids the latest launch drew, for work queued on stream() before
  // the next launch (an EAGLE draft extend queued behind its verify).
  Tensor latest_sampled_ids(int64_t rows) const;
  // Samples from host f32 logits [bs, vocab] (forward_and_sample's second half), for callers
  // that gather or process the logits of forward_logits first.
  sampling::SampleOutput sample(const Tensor& logits,
                                const sampling::SamplingBatch& sampling) const {
    return sampler_.sample(logits, sampling);
  }
  // Samples logits on the runner's device, f32 [sampling.size(), vocab] (an EAGLE draft's), and
  // waits for the ids: the device sampler where can_launch(sampling), else the host sampler.
  sampling::SampleOutput sample_now(const Tensor& logits, const sampling::SamplingBatch& sampling);

 private:
  ModelRunner() = default;
  Status init(const std::filesystem::path& model_path, const ModelRunnerOptions& options,
              distributed::Communicator* tp_group);
  // The graphs forward(fb) replays, or null when it runs eagerly.
  CudaGraphRunner* graphs_for(const ForwardBatch& fb) const;

  ModelRunnerOptions options_;
  std::filesystem::path weights_path_;
  distributed::Communicator* tp_group_ = nullptr;  // borrowed; null at one rank
  PoolerConfig pooler_;
  int64_t context_length_ = 0;
  DType compute_dtype_ = DType::kF32;
  std::unique_ptr<Allocator> allocator_;
  // --enable-memory-saver: where the weights and the KV cache live (else in allocator_). Before
  // model_ and kv_pool_, whose memory they hold (members die in reverse).
  std::unique_ptr<ReleasableAllocator> weights_memory_, kv_memory_;
  std::atomic<bool> memory_released_{false};  // any of them (forward checks it)
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<attention::KvPool> kv_pool_;
  std::unique_ptr<attention::AttentionBackend> attention_;
  std::unique_ptr<CudaGraphRunner> graph_runner_;  // GPU decode graphs, unless disabled
  // GPU verify graphs (speculative), one runner per verify length T.
  std::vector<std::unique_ptr<CudaGraphRunner>> verify_graph_runners_;
  sampling::Sampler sampler_;  // CPU logits (and what the GPU op lacks)
  std::unique_ptr<backend::OwnedStream> owned_stream_;
  std::unique_ptr<Allocator> staging_allocator_;  // GPU only: pinned host memory
  backend::Stream stream_;
  Buffer host_logits_;      // GPU generation models only: pinned f32 [max_logit_rows, vocab]
  Buffer host_embeddings_;  // GPU embedding models only: pinned f32 [max_logit_rows, hidden]
  // GPU logits; after staging_allocator_, whose memory it holds (members die in reverse).
  std::unique_ptr<DeviceSampler> device_sampler_;
};

}  // namespace sgl::runner
