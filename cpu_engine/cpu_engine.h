// CpuEngine: an executors::Engine that computes — a Llama-architecture decoder in fp32 on
// the CPU (cpu_engine/model.h) under BatchingEngine's continuous batching and chunked
// prefill (batching_engine.h), with the KV of every context in real bytes.
//
// KV pool. A kv_tiers ArenaTier named "cpu engine KV pool" (the HBM role on this engine:
// kind hbm, host memory, full size — no emulation), of `pool_blocks` slots of one KV block
// each (block_tokens tokens of every layer, the layout of model.h). The engine's block
// accounting (BatchingEngine) drives it: a context that grows gets slots, one that shrinks
// or leaves returns them (slots a running step writes are returned when the step ends).
// A demotion copies a context's blocks out through EngineKv (engine_kv.h) and the
// TieredKvMover; a prefetch fills the blocks Import reserved and commits them before any
// sequence reads them; a discard frees them and a later call recomputes.
//
// Tokens. Every context's token ids are kept in a TokenLog shared by the engines of one
// process (what a recompute or another worker needs): the node's new tokens are the spec's
// prompt_token_ids, or, for the workflow API (token counts only), deterministic synthetic
// ids from the context key and position; output tokens are appended as they are emitted.
// Attention: a token attends over the context it is stored in (its earlier tokens), so a
// context's KV at a position depends only on its token ids up to there, and keeping,
// moving, restoring or recomputing it yields the same bits (the model's batch- and
// chunk-invariance). Contexts a node only reads are held resident for it but are not
// mixed into its attention (combining separately computed KV is outside this engine).
//
// Automatic prefix caching (Options::prefix_caching, on by default; vLLM's APC): the whole
// KV blocks of every context are named by the chained hash of their token ids (the model
// and its epoch in the seed), and freed ones stay in the pool as kept free blocks until an
// allocation needs them (the least important sequences' first, then least recently freed).
// An admission finds the longest run of whole blocks of its prefill from position 0 —
// held by another context or kept — and copies or adopts them instead of computing them
// (BatchingEngine "Prefix caching"; CpuStepRunner); the model's chunk invariance makes the
// result bit-identical to computing them. A kept block is free in every count
// (blocks_used(), pool_used_bytes(), the pool tier's used bytes).
//
// Steps run on the engine's own thread (one per worker), the event loop carrying on; the
// report's times are the loop's clock around the real computation. Decoding: greedy at
// temperature 0, else seeded sampling (model.h's Sample: seed, step), over the allowed
// tokens (Options::token_masks, and for a sequence with a json_schema the tokens that keep
// its JSON object valid, Options::token_bytes); the end-of-sequence token ends a sequence
// when the spec asks for it, and a constrained sequence ends when its object closes.
//
// Thread-safety: loop-thread only (the step thread touches only what a step snapshots).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cpu_engine/model.h"
#include "executors/batching_engine.h"
#include "executors/engine_kv.h"
#include "kv_tiers/arena_tier.h"
#include "proto/switchyard/v1/model.pb.h"

namespace switchyard::cpu_engine {

// Token ids of every context, by context key (shared by a process's CPU engines).
class TokenLog {
 public:
  std::vector<int32_t>& Of(const std::string& context) { return logs_[context]; }
  const std::vector<int32_t>* Find(const std::string& context) const;
  void Forget(const std::string& context) { logs_.erase(context); }
  size_t size() const { return logs_.size(); }
  // The synthetic id of `position` in `context` (workflow API prompts), in [0, vocab).
  static int32_t Synthetic(const std::string& context, int64_t position, int64_t vocab);

 private:
  std::unordered_map<std::string, std::vector<int32_t>> logs_;
};

// The model as the scheduler core and kv_tiers describe one (fp32 KV; the layout of
// model.h's blocks), for the core's estimates and the KV layout of the other tiers.
v1::ModelConfig ToModelConfig(const ModelShape& shape);

class CpuStepRunner;
class OffloadCache;

class CpuEngine final : public executors::BatchingEngine, public executors::EngineKv {
 public:
  struct Options {
    const Model* model = nullptr;  // borrowed; shared by workers
    TokenLog* tokens = nullptr;    // borrowed; shared by workers
    std::string tenant = "default";
    executors::BatchingEngine::Options batching;
    // Sets of token ids the engine may emit, chosen per sequence by
    // SequenceSpec::token_mask (-1: the first set; no sets: any token). The service
    // restricts a byte-level tokenizer's model to printable ASCII, newline, tab and EOS, so
    // that its text is valid UTF-8 a client echoes back unchanged, and generated tool
    // arguments to characters a JSON string holds unescaped.
    std::vector<std::vector<bool>> token_masks;
    // The raw bytes of each token id, from the model's tokenizer (empty for special tokens
    // such as BOS/EOS, which constrained decoding never emits). A sequence with a
    // json_schema (SequenceSpec) samples among the tokens whose bytes keep its output a
    // valid prefix of its JSON object (json_constraint.h). Empty: such a sequence is
    // refused at admission (InvalidArgument naming it).
    std::vector<std::string> token_bytes;
    // Automatic prefix caching (above); false: every prefill token is computed.
    bool prefix_caching = true;
    // With prefix caching: a host offload tier of this many bytes (0: none), where freed
    // blocks are copied and found again once the pool reused them (offload_cache.h; vLLM's
    // native CPU offloading). Requests steer it with SequenceSpec::kv_transfer.
    uint64_t offload_bytes = 0;
  };
  // InvalidArgument without a model or token log; the pool's allocation error.
  static Result<std::unique_ptr<CpuEngine>> Create(EventLoop* loop, int worker,
                                                   executors::EngineLimits limits, Options o);

  const Model& model() const;
  kv_tiers::Tier& pool();
  uint64_t pool_capacity_bytes() const;
  uint64_t pool_used_bytes() const;

  // EngineKv.
  std::string kv_pool_name() const override;
  uint64_t kv_block_bytes() const override;
  Result<executors::ContextKvView> ExportKv(const std::string& context) const override;
  Result<std::vector<void*>> ImportTargets(const std::string& context) override;
  Status CommitImport(const std::string& context, int64_t valid_tokens) override;
  // Tokens of a context with KV computed (-1: not held).
  int64_t valid_tokens(const std::string& context) const;
  // Prefix caching: the tokens of the whole blocks of `ids` (from position 0) an admission
  // would find now (0 without prefix caching); freed blocks kept for it.
  int64_t cached_prefix_tokens(std::span<const int32_t> ids) const;
  size_t kept_blocks() const;
  // The host offload tier (null: none).
  const OffloadCache* offload() const;

 private:
  CpuEngine(EventLoop* loop, int worker, executors::EngineLimits limits,
            std::unique_ptr<CpuStepRunner> r, Options o);
  CpuStepRunner* cpu_;
};

}  // namespace switchyard::cpu_engine
