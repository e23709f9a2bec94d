// ModelRunner: load weights, size and allocate the KV pool, run forward passes.
#include "runner/model_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>

#include "backend/backend.h"
#include "backend/devices.h"
#include "core/byte_size.h"
#include "core/logging.h"
#include "distributed/nccl_communicator.h"
#include "kernels/copy.h"
#include "kernels/linear.h"
#include "model/config_bounds.h"
#include "model/model_checks.h"
#include "model/model_registry.h"
#include "model/model_source.h"
#include "model/pooler_config.h"
#include "model/tensor_parallel.h"
#include "model/weight_loader.h"
#include "runner/compute_dtype.h"
#include "runner/device_sampler.h"
#include "runner/kv_cache_scales.h"
#ifdef SGL_WITH_CUDA
#include "backend/cuda/cuda_allocator.h"
#include "runner/cuda/sampled_id_refs.h"
#include "runner/cuda_graph_runner.h"
#else
namespace sgl::runner {
class CudaGraphRunner {};  // never created without CUDA
}  // namespace sgl::runner
#endif

namespace sgl::runner {
namespace {

// The refusal of what needs the weights while their memory is released.
Status weights_released(const std::string& what) {
  return invalid_argument(what +
                          " while the weights' memory is released: resume it first "
                          "(/resume_memory_occupation with tag \"weights\")");
}

std::unique_ptr<Allocator> make_allocator(Device device) {
  if (device.is_cpu()) return std::make_unique<CpuAllocator>();
#ifdef SGL_WITH_CUDA
  return std::make_unique<backend::CudaAllocator>(device.index);
#else
  SGL_CHECK(false) << "CUDA allocator in a build without CUDA";
  return nullptr;
#endif
}

// KV slots from memory (SGLang's mem_fraction_static), or options.num_kv_slots
// (--max-total-tokens) where the memory holds them. GPU: the fraction of the device's total
// memory for static use (weights, graphs, KV pool), so the pool gets that minus what is already
// used. CPU: a fraction of the available RAM. Capped at what max_batch_size full-length
// requests need. A draft head to load beside the runner (`beside`) takes its share first: its
// fixed bytes out of the budget, its KV layer's bytes on every slot.
Result<int64_t> size_kv_pool(const ModelRunnerOptions& options, const attention::KvPoolShape& shape,
                             int64_t context_length, const DraftHeadMemory& beside) {
  SGL_ASSIGN_OR_RETURN(backend::MemoryInfo mem, backend::memory_info(options.device));
  const bool gpu = !options.device.is_cpu();
  const double fraction = options.mem_fraction_static > 0 ? options.mem_fraction_static
                          : gpu                           ? 0.88
                                                          : 0.2;
  const auto total = static_cast<double>(mem.total_bytes),
             free = static_cast<double>(mem.free_bytes);
  const double budget = (gpu ? total * fraction - (total - free) : free * fraction) -
                        static_cast<double>(beside.fixed_bytes);
  const auto per_slot = static_cast<int64_t>(shape.bytes_per_token()) + beside.bytes_per_kv_slot;
  const auto by_memory =
      static_cast<int64_t>(std::max(0.0, budget) / static_cast<double>(per_slot));
  // KV slot ids are int32.
  const int64_t cap = std::min<int64_t>(options.max_batch_size * context_length + 1,
                                        std::numeric_limits<int32_t>::max() - 1);
  const int64_t slots = std::min(by_memory, cap);
  const auto mib = [](double bytes) { return static_cast<int64_t>(bytes / (1 << 20)); };
  std::string formula =
      gpu ? "total " + std::to_string(mib(total)) + " MiB x " + std::to_string(fraction) +
                " - in use " + std::to_string(mib(total - free)) + " MiB"
          : "free " + std::to_string(mib(free)) + " MiB x " + std::to_string(fraction);
  std::string per_token = std::to_string(per_slot) + " B per token";
  if (beside.fixed_bytes > 0 || beside.bytes_per_kv_slot > 0) {
    formula +=
        " - draft head " + std::to_string(mib(static_cast<double>(beside.fixed_bytes))) + " MiB";
    per_token += " (" + std::to_string(beside.bytes_per_kv_slot) + " B the draft head's)";
  }
  if (options.num_kv_slots > 0) {
    // --max-total-tokens: the pool's size, within the memory budget (SGLang takes the smaller
    // and warns).
    if (options.num_kv_slots <= by_memory) return options.num_kv_slots;
    SGL_LOG_WARN << "--max-total-tokens " << options.num_kv_slots << " exceeds what the memory "
                 << "budget holds (" << formula << " = " << mib(budget) << " MiB / " << per_token
                 << " = " << by_memory << " slots); using " << by_memory;
    if (by_memory < 2) return resource_exhausted("no memory left for the KV cache");
    return by_memory;
  }
  SGL_LOG_INFO << "KV pool: " << formula << " = " << mib(budget) << " MiB / " << per_token << " = "
               << by_memory << " slots; capped at " << cap << " -> " << slots;
  if (slots < 2) return resource_exhausted("no memory left for the KV cache");
  return slots;
}

// What was loaded, in one line: architecture, parameters, compute dtype, shape, context.
void log_model_summary(const model::ModelConfig& c, const model::ModelMemoryPlan& plan,
                       DType compute, int64_t context_length) {
  // Weights live in the compute dtype (GGUF quants are dequantized where they land).
  const double count = static_cast<double>(plan.weights) / static_cast<double>(dtype_size(compute));
  char params[32];
  std::snprintf(params, sizeof params, count >= 1e9 ? "%.2fB" : "%.2fM",
                count >= 1e9 ? count / 1e9 : count / 1e6);
  std::string experts;
  if (c.num_experts > 0) {
    experts = ", " + std::to_string(c.num_experts) + " experts (top " +
              std::to_string(c.num_experts_per_tok) + ")";
  }
  SGL_LOG_INFO << "model: " << c.architecture << ", " << params << " parameters in "
               << dtype_name(compute) << ", " << c.num_hidden_layers << " layers, hidden "
               << c.hidden_size << experts << ", context " << context_length << " tokens";
}

// The smallest of the ranks' `mine` (every rank of `group` calls it), through the group's
// all_gather on the runner's device.
int64_t agree_on_fewest(distributed::Communicator& group, Allocator& allocator,
                        backend::Stream stream, int64_t mine) {
  const int n = group.size();
  Buffer device_value(allocator, DType::kI64, {1});
  Buffer device_all(allocator, DType::kI64, {n});
  std::vector<int64_t> all(static_cast<size_t>(n));
  kernels::copy(Tensor(&mine, DType::kI64, {1}), device_value, stream);
  group.all_gather(device_value, device_all, stream);
  kernels::copy(device_all, Tensor(all.data(), DType::kI64, {n}), stream);  // synchronizes
  return *std::min_element(all.begin(), all.end());
}

}  // namespace

ModelRunner::~ModelRunner() = default;

Result<std::unique_ptr<ModelRunner>> ModelRunner::create(const std::filesystem::path& model_path,
                                                         const ModelRunnerOptions& options,
                                                         distributed::Communicator* tp_group) {
  std::unique_ptr<ModelRunner> runner(new ModelRunner());
  // NOTE: init checks sizes before allocating, but an allocation can still fail (other processes,
  // memory limits); at this boundary that is an error for the caller, not an abort.
  try {
    SGL_RETURN_IF_ERROR(runner->init(model_path, options, tp_group));
  } catch (const std::bad_alloc& e) {
    return resource_exhausted("out of memory loading the model: " + model_path.string() + " (" +
                              e.what() + ")");
  }
  return runner;
}

Status ModelRunner::update_weights_from_disk(const std::filesystem::path& path) {
  if (released_memory().weights) return weights_released("updating the weights");
  if (options_.load_format == "dummy") {
    return invalid_argument(
        "the served weights are dummy (--load-format dummy): there is no "
        "checkpoint to update from or roll back to");
  }
  backend::set_current_device(options_.device);  // the caller may be any thread (a rank's GPU)
  model::ModelSourceOptions source_options;
  source_options.config_overrides = options_.json_model_override_args;
  // Reads `from` over the served weights; `overwritten`: whether any was written.
  auto write = [&](const std::filesystem::path& from, bool& overwritten) -> Status {
    overwritten = false;
    SGL_ASSIGN_OR_RETURN(model::ModelSource source, model::open_model_source(from, source_options));
    SGL_RETURN_IF_ERROR(model::check_same_network(config(), source.config, from.string()));
    // Each tensor is read into host memory and copied over the served one: the device needs no
    // room for a second copy of even one tensor (its memory is the KV pool's).
    model::WeightLoader weights(source.weights.get(), cpu_allocator(), compute_dtype(), stream_,
                                options_.seed);
    return model_->update_weights(weights, overwritten);
  };
  bool overwritten = false;
  const Status updated = write(path, overwritten);
  if (updated.ok()) {
    weights_path_ = path;
    return updated;
  }
  if (overwritten) {
    SGL_LOG_ERROR << "updating the weights from " << path.string() << " failed part way ("
                  << updated.message() << "); loading " << weights_path_.string() << " back";
    bool unused = false;
    if (const Status restored = write(weights_path_, unused); !restored.ok()) {
      return internal_error("updating the weights from " + path.string() + " failed part way (" +
                            updated.message() + ") and loading " + weights_path_.string() +
                            " back failed too (" + restored.message() +
                            "): the served weights are mixed; restart the server");
    }
  }
  return updated;
}

Result<ModelRunner::HostWeight> ModelRunner::read_weight(const std::string& name) {
  if (released_memory().weights) return weights_released("reading a weight");
  backend::set_current_device(options_.device);
  SGL_ASSIGN_OR_RETURN(model::WeightView view, model_->find_weight(name));
  const Tensor& v = view.values;
  Buffer stored(cpu_allocator(), v.dtype(), v.shape());
  kernels::copy(v, stored, stream_);
  backend::synchronize(stream_);
  HostWeight out{std::vector<float>(static_cast<size_t>(v.numel())), std::move(view.shape),
                 view.slice};
  const Tensor f32(out.values.data(), DType::kF32, stored.tensor().shape());
  kernels::copy(stored, f32, backend::Stream{Device::cpu(), nullptr});
  return out;
}

Status ModelRunner::load_lora_adapter(int32_t id, const model::LoraAdapterPath& adapter) {
  if (released_memory().weights) return weights_released("loading a LoRA adapter");
  backend::set_current_device(options_.device);
  return model_->load_lora_adapter(id, adapter, weights_memory_ ? *weights_memory_ : *allocator_);
}

void ModelRunner::unload_lora_adapter(int32_t id) {
  backend::set_current_device(options_.device);
  model_->unload_lora_adapter(id);
}

Result<size_t> ModelRunner::release_memory(MemoryKinds kinds) {
  if (weights_memory_ == nullptr) {
    return invalid_argument("releasing memory needs the server started with --enable-memory-saver");
  }
  backend::set_current_device(options_.device);
  backend::synchronize(stream_);  // nothing queued may read what goes
  memory_released_ = true;
  size_t bytes = 0;
  if (kinds.weights && !weights_memory_->released()) {
    bytes += weights_memory_->release(options_.enable_weights_cpu_backup);
  }
  if (kinds.kv_cache && !kv_memory_->released()) bytes += kv_memory_->release(false);
  memory_released_ = weights_memory_->released() || kv_memory_->released();
  return bytes;
}

Status ModelRunner::resume_memory(MemoryKinds kinds) {
  if (weights_memory_ == nullptr) {
    return invalid_argument("resuming memory needs the server started with --enable-memory-saver");
  }
  backend::set_current_device(options_.device);
  if (kinds.weights && weights_memory_->released()) SGL_RETURN_IF_ERROR(weights_memory_->resume());
  if (kinds.kv_cache && kv_memory_->released()) SGL_RETURN_IF_ERROR(kv_memory_->resume());
  memory_released_ = weights_memory_->released() || kv_memory_->released();
  return Status::ok_status();
}

MemoryKinds ModelRunner::released_memory() const {
  if (weights_memory_ == nullptr) return {};
  return {weights_memory_->released(), kv_memory_->released()};
}

Status ModelRunner::init(const std::filesystem::path& model_path, const ModelRunnerOptions& options,
                         distributed::Communicator* tp_group) {
  options_ = options;
  weights_path_ = model_path;
  tp_group_ = tp_group;
  if (options.tp_size < 1) {
    return invalid_argument("--tp-size must be >= 1, got " + std::to_string(options.tp_size));
  }
  if (options.tp_size > 1 && !options.device.is_cpu() && !distributed::nccl_available()) {
    return unimplemented("--tp-size " + std::to_string(options.tp_size) + " on " +
                         options.device.to_string() +
                         " needs NCCL: " + distributed::nccl_unavailable_reason());
  }
  if (options.tp_size > 1 && (tp_group == nullptr || tp_group->size() != options.tp_size)) {
    return invalid_argument("--tp-size " + std::to_string(options.tp_size) +
                            " needs the tensor-parallel runner (sgl-server, sgl-generate); this "
                            "tool runs one rank");
  }
  if (tp_group != nullptr && tp_group->size() != options.tp_size) {
    return invalid_argument("a communicator of " + std::to_string(tp_group->size()) +
                            " ranks for --tp-size " + std::to_string(options.tp_size));
  }
  if (tp_group != nullptr && distributed::nccl_device(*tp_group) >= 0 &&
      (!options.device.is_cuda() || distributed::nccl_device(*tp_group) != options.device.index)) {
    return invalid_argument("NCCL rank " + std::to_string(tp_group->rank()) +
                            " is on cuda:" + std::to_string(distributed::nccl_device(*tp_group)) +
                            ", its runner on " + options.device.to_string());
  }
  SGL_RETURN_IF_ERROR(backend::check_device_available(options.device));
  const std::string& format = options.load_format;
  if (format != "auto" && format != "safetensors" && format != "gguf" && format != "dummy") {
    return invalid_argument("load format '" + format +
                            "' (expected auto, safetensors, gguf or dummy)");
  }
  // A Hugging Face directory or a .gguf file; dummy weights need only the config.
  model::ModelSourceOptions source_options;
  source_options.open_weights = format != "dummy";
  source_options.config_overrides = options.json_model_override_args;
  SGL_ASSIGN_OR_RETURN(model::ModelSource source,
                       model::open_model_source(model_path, source_options));
  const bool is_gguf = source.format == model::ModelFormat::kGguf;
  if ((format == "gguf" && !is_gguf) ||
      (format == "safetensors" && source.format != model::ModelFormat::kHuggingFace)) {
    return invalid_argument("--load-format " + format + ": " + model_path.string() + " is " +
                            (is_gguf ? "a GGUF file" : "not a GGUF file"));
  }
  const model::ModelConfig& config = source.config;
  context_length_ =
      options.context_length > 0 ? options.context_length : config.max_position_embeddings;
  if (context_length_ > config.max_position_embeddings && !options.allow_longer_context) {
    return invalid_argument(
        "--context-length " + std::to_string(context_length_) +
        " is longer than the model's max_position_embeddings (" +
        std::to_string(config.max_position_embeddings) +
        "); set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 to allow it (outputs past the "
        "trained length may be wrong)");
  }
  SGL_RETURN_IF_ERROR(model::check_context_length(config, context_length_, model_path.string()));
  SGL_RETURN_IF_ERROR(model::check_tensor_parallel(config, options.tp_size, options.ep_size));
  allocator_ = make_allocator(options.device);
  owned_stream_ = backend::create_stream(options.device);
  stream_ = owned_stream_->get();
  SGL_RETURN_IF_ERROR(kernels::set_linear_backend(stream_, options.linear_backend));

  SGL_ASSIGN_OR_RETURN(const DType compute, parse_compute_dtype(options.dtype, options.device));
  SGL_ASSIGN_OR_RETURN(const DType kv_dtype, parse_kv_cache_dtype(options.kv_cache_dtype, compute));
  compute_dtype_ = compute;
  if (options.dtype == "auto" && compute == DType::kBF16 && config.torch_dtype == "float16") {
    // SGLang would compute in the checkpoint's float16; bfloat16 keeps its range, not all of its
    // precision (3 mantissa bits fewer).
    SGL_LOG_WARN << "the checkpoint is float16; --dtype auto computes in bfloat16 here (float16 "
                    "compute is not implemented; --dtype float32 keeps every bit)";
  }
  if (options.enable_memory_saver) {
    weights_memory_ =
        std::make_unique<ReleasableAllocator>(backend::create_virtual_memory(options.device));
    kv_memory_ =
        std::make_unique<ReleasableAllocator>(backend::create_virtual_memory(options.device));
  }
  model::WeightLoader weights(source.weights.get(),
                              weights_memory_ ? *weights_memory_ : *allocator_, compute, stream_,
                              options.seed);
  model::ModelOptions model_options;
  model_options.max_num_tokens = options.max_num_tokens;
  model_options.max_logit_rows = options.max_logit_rows > 0
                                     ? std::max(options.max_logit_rows, options.max_batch_size)
                                     : std::max(options.max_num_tokens, options.max_batch_size);
  model_options.max_positions = context_length_;
  model_options.enable_return_routed_experts = options.enable_return_routed_experts;
  model_options.enable_lora = options.enable_lora;
  model_options.lora_paths = options.lora_paths;
  model_options.max_lora_rank = options.max_lora_rank;
  model_options.lora_target_modules = options.lora_target_modules;
  model_options.aux_hidden_state_layers = options.aux_hidden_state_layers;
  model_options.is_embedding = options.is_embedding;
  if (options.tp_size > 1) model_options.tp = {tp_group->rank(), tp_group->size()};
  model_options.ep_size = options.ep_size;
  model_options.ep_dispatch = options.ep_dispatch;
  model_options.fp32_all_reduce = options.fp32_all_reduce;
  if (config.has_task_head()) {
    // Its score head reads each request's last token (SGLang's LAST pooling, not normalised).
    pooler_ = {.type = PoolingType::kLast, .normalize = false};
  } else if (options.is_embedding) {
    SGL_ASSIGN_OR_RETURN(pooler_, model::read_pooler_config(model_path, config.hidden_size));
  }
  SGL_ASSIGN_OR_RETURN(model_, model::create_model(config, weights, *allocator_, model_options));
  const model::ModelMemoryPlan plan = model_->memory_plan();
  log_model_summary(config, plan, compute, context_length_);
  if (config.has_task_head()) {
    SGL_LOG_INFO << config.architecture << ": scores each prompt's last token ("
                 << config.labels.size() << (config.labels.size() == 1 ? " output)" : " labels)");
  } else if (pooler_.is_embedding()) {
    SGL_LOG_INFO << "embedding model: "
                 << (pooler_.type == PoolingType::kLast ? "last-token" : "mean") << " pooling"
                 << (pooler_.normalize ? ", L2-normalised" : ", not normalised");
  }

  // The rank's heads: its KV pool holds only its KV heads.
  const int64_t kv_heads = model::kv_heads_per_rank(config.num_key_value_heads, options.tp_size);
  attention::KvPoolShape shape{config.num_hidden_layers, 0, kv_heads, config.head_dim, kv_dtype};
  DraftHeadMemory draft_head;
  // Counted whether the pool is sized by memory or by --max-total-tokens (checked against the
  // budget too): the head is allocated after the pool either way.
  if (options.draft_head.has_value()) {
    SGL_ASSIGN_OR_RETURN(
        draft_head,
        plan_draft_head_memory(*options.draft_head, draft_target_sizes(), compute, *allocator_));
  }
  SGL_ASSIGN_OR_RETURN(shape.num_slots, size_kv_pool(options, shape, context_length_, draft_head));
  if (tp_group != nullptr && tp_group->size() > 1 && !options.device.is_cpu()) {
    // Each GPU sized its pool from its own free memory (--max-total-tokens too: a rank may cap
    // it); the scheduler's slot ids index every rank's pool, so all take the smallest. (The CPU
    // group is loaded rank after rank: rank 0 sizes, the others must hold its count.)
    shape.num_slots = agree_on_fewest(*tp_group, *allocator_, stream_, shape.num_slots);
  }
  kv_pool_ = std::make_unique<attention::KvPool>(kv_memory_ ? *kv_memory_ : *allocator_, shape);
  if (attention::is_fp8_kv(kv_dtype)) {
    std::vector<attention::KvScales> scales;  // none with dummy weights
    if (source.weights != nullptr) {
      SGL_ASSIGN_OR_RETURN(scales, read_kv_cache_scales(*source.weights, config.num_hidden_layers));
    }
    for (size_t layer = 0; layer < scales.size(); ++layer) {
      kv_pool_->set_scales(static_cast<int>(layer), scales[layer]);
    }
    // Without the checkpoint's scales, SGLang's default: 1.0.
    SGL_LOG_INFO << "KV cache in " << options.kv_cache_dtype << ": K and V stored at "
                 << (scales.empty() ? "scale 1.0 in every layer (the checkpoint has no k_scale / "
                                      "v_scale)"
                                    : "the checkpoint's k_scale / v_scale");
  }
  attention::AttentionConfig attn{.num_q_heads = config.num_attention_heads / options.tp_size,
                                  .num_kv_heads = kv_heads,
                                  .head_dim = config.head_dim,
                                  .scale = 1.0f / std::sqrt(static_cast<float>(config.head_dim)),
                                  .projection_rows = config.hidden_size,
                                  .dtype = compute};
  SGL_ASSIGN_OR_RETURN(
      attention_, attention::create_attention_backend(options.attention_backend, options.device,
                                                      attn, *kv_pool_, stream_));
  std::string graphs;
#ifdef SGL_WITH_CUDA
  // Decode graphs serve generation; an embedding model only runs prefills.
  if (options.device.is_cuda() && !options.disable_cuda_graph && !options.is_embedding) {
    SGL_ASSIGN_OR_RETURN(const backend::MemoryInfo before, backend::memory_info(options.device));
    const int64_t max_bs =
        std::min({options.cuda_graph_max_bs, options.max_batch_size, options.max_num_tokens});
    if (std::vector<int32_t> sizes = graph_batch_sizes(options.cuda_graph_bs, max_bs);
        !sizes.empty()) {
      SGL_ASSIGN_OR_RETURN(
          graph_runner_,
          CudaGraphRunner::create(*model_, *attention_, *allocator_, stream_, std::move(sizes),
                                  static_cast<int32_t>(context_length_), tp_group_));
    }
    // Verify graphs, one set per length: every token of a verify pass is a logits row. (Routed
    // experts are not returned from a graph.)
    std::vector<int32_t> lengths = options.cuda_graph_verify_tokens;
    std::sort(lengths.begin(), lengths.end());
    lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
    for (const int32_t tokens : lengths) {
      const int64_t verify_bs =
          tokens > 1
              ? std::min({options.cuda_graph_max_bs, options.max_batch_size,
                          options.max_num_tokens / tokens, model_options.max_logit_rows / tokens})
              : 0;
      std::vector<int32_t> sizes = graph_batch_sizes(options.cuda_graph_bs, verify_bs);
      if (sizes.empty() || options.enable_return_routed_experts) continue;
      SGL_ASSIGN_OR_RETURN(
          std::unique_ptr<CudaGraphRunner> verify_graphs,
          CudaGraphRunner::create(*model_, *attention_, *allocator_, stream_, std::move(sizes),
                                  static_cast<int32_t>(context_length_), tp_group_,
                                  GraphPassShape{tokens, options.cuda_graph_verify_tree}));
      verify_graph_runners_.push_back(std::move(verify_graphs));
    }
    if (graph_runner_ != nullptr || !verify_graph_runners_.empty()) {
      SGL_ASSIGN_OR_RETURN(const backend::MemoryInfo after, backend::memory_info(options.device));
      graphs = ", CUDA graphs " + format_gib(static_cast<double>(before.free_bytes) -
                                             static_cast<double>(after.free_bytes));
    }
  }
#endif
  SGL_LOG_INFO << "memory: weights " << format_gib(static_cast<double>(plan.weights))
               << ", activations " << format_gib(static_cast<double>(plan.activations))
               << ", RoPE table " << format_gib(static_cast<double>(plan.rope_table))
               << ", KV cache "
               << format_gib(static_cast<double>(shape.bytes_per_token()) *
                             static_cast<double>(shape.num_slots))
               << " (" << shape.num_slots << " tokens)" << graphs;
  if (!options.device.is_cpu() && options.is_embedding) {
    staging_allocator_ = backend::create_staging_allocator(options.device);
    host_embeddings_ = Buffer(*staging_allocator_, DType::kF32,
                              {model_options.max_logit_rows, config.pooled_size()});
  } else if (!options.device.is_cpu()) {
    staging_allocator_ = backend::create_staging_allocator(options.device);
    // Any logits row may be sampled on the device (speculative verifies sample several rows a
    // request).
    device_sampler_ = std::make_unique<DeviceSampler>(*allocator_, *staging_allocator_,
                                                      model_options.max_logit_rows);
    host_logits_ =
        Buffer(*staging_allocator_, DType::kF32, {model_options.max_logit_rows, config.vocab_size});
  }
  return Status::ok_status();
}

CudaGraphRunner* ModelRunner::graphs_for(const ForwardBatch& fb) const {
#ifdef SGL_WITH_CUDA
  if (graph_runner_ != nullptr && graph_runner_->can_run(fb)) return graph_runner_.get();
  for (const auto& graphs : verify_graph_runners_) {
    if (graphs->can_run(fb)) return graphs.get();
  }
#endif
  return nullptr;
}

bool ModelRunner::replays_graph(const ForwardBatch& fb) const { return graphs_for(fb) != nullptr; }

model::ModelOutput ModelRunner::forward(const ForwardBatch& fb) {
  SGL_CHECK(!memory_released_.load(std::memory_order_relaxed))
      << "a forward pass while the memory is released (resume_memory first)";
  const int32_t* sampled = nullptr;  // where sampled_id_ref() inputs resolve
  if (fb.id_ref_table.defined()) {
    SGL_CHECK(fb.id_ref_table.device() == options_.device &&
              fb.sampled_id_rows <= fb.id_ref_table.numel())
        << "sampled id references past the batch's id table";
    sampled = fb.id_ref_table.data<int32_t>();
  } else if (fb.sampled_id_rows > 0) {
    SGL_CHECK(device_sampler_ != nullptr && fb.sampled_id_rows <= device_sampler_->latest_rows())
        << "sampled id references to rows the latest device sampling does not have";
    sampled = device_sampler_->latest_ids();
  }
  if (fb.sampled_id_rows > 0 && options_.device.is_cpu()) {
    int32_t* ids = fb.input_ids.data<int32_t>();
    for (int32_t i = 0; i < fb.num_tokens; ++i) {
      if (is_sampled_id_ref(ids[i])) ids[i] = sampled[sampled_id_row(ids[i])];
    }
  }
#ifdef SGL_WITH_CUDA
  if (CudaGraphRunner* graphs = graphs_for(fb)) return graphs->replay(fb, sampled);
  if (fb.sampled_id_rows > 0 && !options_.device.is_cpu()) {
    cuda::resolve_sampled_id_refs(fb.input_ids.data<int32_t>(), fb.num_tokens, sampled, stream_);
  }
#endif
  attention_->plan(fb);
  model::ModelContext ctx{*attention_, stream_, tp_group_};
  return model_->forward(fb, ctx);
}

Tensor ModelRunner::forward_logits(const ForwardBatch& fb, model::ModelOutput* output) {
  model::ModelOutput out = forward(fb);
  const Tensor logits = out.logits;
  if (output != nullptr) *output = std::move(out);
  if (logits.device().is_cpu()) return logits;
  // GPU: the host sampler or logit processing needs host logits; the copy synchronizes.
  const Tensor host = host_logits_.tensor().slice_rows(0, logits.size(0));
  kernels::copy(logits, host, stream_);
  return host;
}

Tensor ModelRunner::forward_embeddings(const ForwardBatch& fb) {
  SGL_CHECK(fb.pooling != PoolingType::kNone) << "forward_embeddings of a batch that does not pool";
  const Tensor pooled = forward(fb).embeddings;
  if (pooled.device().is_cpu()) return pooled;
  const Tensor host = host_embeddings_.tensor().slice_rows(0, pooled.size(0));
  kernels::copy(pooled, host, stream_);  // synchronizes
  return host;
}

sampling::SampleOutput ModelRunner::forward_and_sample(const ForwardBatch& fb,
                                                       const sampling::SamplingBatch& sampling) {
  SGL_CHECK(fb.logits_mode == LogitsMode::kLastPerRequest) << "sampling needs one row per request";
  if (can_launch(sampling)) return collect(launch_forward_and_sample(fb, sampling));
  const Tensor logits = forward_logits(fb);
  return sampler_.sample(logits, sampling);
}

bool ModelRunner::can_launch(const sampling::SamplingBatch& sampling) const {
  return device_sampler_ != nullptr && DeviceSampler::supports(sampling) &&
         static_cast<int64_t>(sampling.size()) <= device_sampler_->capacity();
}

sampling::SampleOutput ModelRunner::sample_now(const Tensor& logits,
                                               const sampling::SamplingBatch& sampling) {
  if (logits.device().is_cpu()) return sampler_.sample(logits, sampling);
  if (can_launch(sampling)) {
    const LaunchedSample launched = device_sampler_->stage(sampling);
    device_sampler_->launch(logits, launched, stream_);
    return device_sampler_->collect(launched);
  }
  // The staging buffer holds max_logit_rows x vocab floats; a draft's rows are no wider.
  SGL_CHECK_LE(logits.numel(), host_logits_.tensor().numel());
  const Tensor host(host_logits_.tensor().raw(), DType::kF32, logits.shape(), Device::cpu());
  kernels::copy(logits, host, stream_);  // synchronizes
  return sampler_.sample(host, sampling);
}

ModelRunner::LaunchedSample ModelRunner::launch_forward_and_sample(
    const ForwardBatch& fb, const sampling::SamplingBatch& sampling,
    const sampling::VocabMaskFuture* vocab_mask, model::ModelOutput* output) {
  SGL_CHECK(fb.num_logit_rows() == static_cast<int32_t>(sampling.size()) && can_launch(sampling))
      << "launch_forward_and_sample needs one logits row per sampled row and device sampling";
  // The parameters' upload goes out first, so it runs beside the forward.
  LaunchedSample launched = device_sampler_->stage(sampling);
  model::ModelOutput out = forward(fb);
  const Tensor logits = out.logits;
  if (output != nullptr) *output = std::move(out);
  if (vocab_mask != nullptr) {
    device_sampler_->apply_vocab_mask(logits, launched, vocab_mask->get(), stream_);
  }
  device_sampler_->launch(logits, launched, stream_);
  return launched;
}

Tensor ModelRunner::latest_sampled_ids(int64_t rows) const {
  SGL_CHECK(device_sampler_ != nullptr && rows <= device_sampler_->latest_rows())
      << "latest_sampled_ids: " << rows << " rows; the latest launch drew "
      << (device_sampler_ != nullptr ? device_sampler_->latest_rows() : 0);
  return Tensor(const_cast<int32_t*>(device_sampler_->latest_ids()), DType::kI32, {rows},
                options_.device);
}

sampling::SampleOutput ModelRunner::collect(const LaunchedSample& launched) {
  SGL_CHECK(device_sampler_ != nullptr) << "collect on a runner without device sampling";
  return device_sampler_->collect(launched);
}

}  // namespace sgl::runner
