// EngineRegistry: how the driver makes the engines of a served model, by engine kind
// (executors/engine_kind.h: "simulated", "cpu"). For each kind it registers how to load a
// served model once (its cost model; for a kind that computes, the model, its tokenizer
// and the record of every context's token ids) and how to make one engine worker's
// engine — returned as one EngineWorker record (the engine, its HBM tier, its KV pool's
// bytes) instead of parallel per-worker lists. The driver adds what is not chosen by
// kind: an embedder's engines (SchedulerConfig::engine_factory) and, when an outside
// engine reports LLM results, a ReportedEngine per worker.
//
// Thread-safety: Builtin() is immutable; `load` and `make` run on the driver's start.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "executors/engine.h"
#include "executors/engine_kind.h"
#include "executors/engine_kv.h"
#include "proto/switchyard/v1/model.pb.h"

namespace switchyard {
class EventLoop;
}  // namespace switchyard
namespace switchyard::executors {
class RooflineCostModel;
class StepCostModel;
}  // namespace switchyard::executors
namespace switchyard::cpu_engine {
class Model;
class TokenLog;
class Tokenizer;
}  // namespace switchyard::cpu_engine
namespace switchyard::kv_tiers {
class Tier;
}  // namespace switchyard::kv_tiers
namespace switchyard::scheduler {
class ComputeCostModel;
}  // namespace switchyard::scheduler

namespace switchyard::driver {

class ReportedEngine;

// A served model as configured (SchedulerConfig's first model, or one of extra_models).
struct ServedModelSpec {
  std::string id;  // empty: the model's own name
  std::vector<std::string> aliases;
  std::string engine = "simulated";  // an executors::EngineKind name
  std::string model_path;            // kinds that compute: a shape file or checkpoint dir
  // Engine cpu: how the weights and the KV are stored ("f32" | "bf16"; "": the model's).
  std::string weight_dtype, kv_dtype;
  uint64_t kv_pool_bytes = 256ULL << 20;
  uint64_t kv_offload_bytes = 0;  // engine cpu: its host offload tier per worker (0: none)
  bool prefix_caching = true;     // engine cpu: automatic prefix caching
  // Engines simulated and reported: a step-time table (configs/step_tables) that prices the
  // model's calls and times the simulated engine's steps; "": the roofline.
  std::string step_table;
  std::optional<v1::ModelConfig> model_config;  // engine "simulated" (unset: the default)
  std::optional<v1::GpuSpec> gpu;
  int workers = 1;
  uint64_t hbm_bytes_per_worker = 0;  // 0: the GPU's HBM less the weights
};

// What a served model's engines share, loaded once; it outlives the engines.
struct ServedModel {
  const executors::EngineKind* kind = nullptr;
  v1::ModelConfig model;
  std::unique_ptr<executors::RooflineCostModel> cost;   // the core's estimates
  std::shared_ptr<executors::StepCostModel> step_cost;  // simulated engines' step times
  // The scheduler's prices when a step table gives them (else `cost`'s roofline).
  std::unique_ptr<scheduler::ComputeCostModel> table_cost;
  const scheduler::ComputeCostModel* core_cost() const;
  // Kinds that compute: the model, its tokenizer, the token ids of every context.
  std::unique_ptr<cpu_engine::Model> cpu_model;
  std::shared_ptr<cpu_engine::TokenLog> token_log;
  std::unique_ptr<cpu_engine::Tokenizer> tokenizer;
  // Random weights: the outputs its engines may emit (cpu_engine::TextMasks).
  std::vector<std::vector<bool>> text_masks;
  // Engine "cpu": each token id's bytes, for forced tool calls' constrained decoding.
  std::vector<std::string> token_bytes;
  uint64_t offload_bytes = 0;    // engine cpu: ServedModelSpec::kv_offload_bytes
  bool prefix_caching = true;    // engine cpu: ServedModelSpec::prefix_caching
  uint64_t kv_bytes_scale = 64;  // 1: real bytes
  bool computes() const { return kind && kind->computes; }
  ServedModel();
  ~ServedModel();
};

// One engine worker as the driver holds it.
struct EngineWorker {
  std::unique_ptr<executors::Engine> engine;
  // Its HBM tier in the block manager: an emulated arena, a joined worker's KV store, or
  // the pool of a computing engine (null until the tiers are made).
  kv_tiers::Tier* hbm = nullptr;
  // Its KV pool's real bytes in this process (a computing engine, an embedder's pool).
  executors::EngineKv* kv = nullptr;
  // A joined computing engine's pool, reached through its worker's KV store.
  std::shared_ptr<executors::RemoteEngineKv> remote_kv;
  ReportedEngine* reported = nullptr;  // the engine, when an outside engine reports results
};

struct EngineImplementation {
  const executors::EngineKind* kind = nullptr;
  // Loads the model of `spec` into `out` (kind, model, cost, ...); resolves spec->id (the
  // model's own name when empty) and spec->hbm_bytes_per_worker. `token_log`: the record
  // of token ids to share (null: a new one).
  std::function<Status(ServedModelSpec* spec, std::shared_ptr<cpu_engine::TokenLog> token_log,
                       ServedModel* out)>
      load;
  // The engine of `worker` (`loop`: its event loop; `limits`: what the core plans with).
  std::function<Result<EngineWorker>(
      EventLoop* loop, int worker, const executors::EngineLimits& limits, const ServedModel& model)>
      make;
};

class EngineRegistry {
 public:
  // The kinds the driver runs: "simulated" and "cpu".
  static const EngineRegistry& Builtin();
  // The implementation of the kind named `name`; InvalidArgument naming `what`.
  Result<const EngineImplementation*> Find(const std::string& name, std::string_view what) const;

 private:
  std::vector<EngineImplementation> impls_;
};

// The embedded defaults the driver prices with when a model names no shape / GPU:
// Llama-3.1-8B on an H100-SXM (what a joined simulated worker is told to price).
v1::ModelConfig EmbeddedDefaultModel();
v1::GpuSpec EmbeddedDefaultGpu();

}  // namespace switchyard::driver
