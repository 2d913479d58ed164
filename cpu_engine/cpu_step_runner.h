// CpuStepRunner: the computing StepRunner (step_runner.h) of the CPU engine — the half of
// CpuEngine (cpu_engine.h) that holds real KV and computes rows. CpuEngine pairs it with a
// BatchingEngine in one process; a joined worker (`switchyard worker --join --engine cpu`,
// workers/worker_agent.h) runs it alone, under the BatchingEngine of serve's scheduler,
// whose calls arrive over the worker control connection.
//
// KV pool. A KvPool (kv_pool.h: an ArenaTier in the HBM role on this engine — kind hbm,
// host memory, full size) of slots of one KV block each (block_tokens tokens of every
// layer, the layout of model.h). The engine's block accounting drives it through OnResize:
// a context that grows gets slots, one that shrinks or leaves returns them (slots a running
// step writes are returned when the step ends). ExportKv / ImportTargets / CommitImport are the
// EngineKv view of the pool (engine_kv.h): until CommitImport nothing reads imported blocks.
//
// Automatic prefix caching (with `prefix_caching`; StepRunner's "Prefix caching"): every
// whole block of a context whose KV is computed is named by the chained hash of its token
// ids (prefix_cache.h) and indexed while held; a freed whole block is kept in the pool
// (KvPool::Keep) with the priority of the last sequence admitted with its context, free in
// every count, until an allocation reuses it. MatchPrefix fills a context from position
// `from` with the blocks of the same hashes: a kept block is adopted as it is when the
// context has no block at that index yet; otherwise the bytes are copied (only the
// positions from `from` on, so nothing a reader of the context uses is rewritten). A
// context a step writes is never matched into. A model epoch (OnModelEpoch) changes the
// hash seed and drops every kept block and every held block's hash. Without it (a joined
// worker's runner: serve's remote runner never asks) freed blocks are simply freed.
//
// Tokens: every context's token ids live in a TokenLog (cpu_engine.h) — a node's prompt
// ids, or deterministic synthetic ids for token-count prompts, then each emitted token.
// Steps run on the runner's own thread; `done` is posted to the loop.
//
// Constrained decoding (SequenceSpec::json_schema): each step, the sequence's allowed
// tokens are those whose bytes (`token_bytes`) keep its output inside its
// JsonObjectConstraint (json_constraint.h), found by one walk of a TokenTrie of the
// vocabulary, intersected with its static token mask; sampling is unchanged among them.
// The emitted token is fed to the constraint (OnEmitted); the token that closes the
// object ends the sequence like an end-of-sequence token. When no token is allowed (a
// restrictive static mask) the sequence ends with the first stop id, which adds no text.
// A readmitted sequence (output_done > 0) rebuilds its constraint from its earlier output
// tokens, the last output_done ids of its primary's token log.
//
// Thread-safety: loop-thread only (the step thread touches only what a step snapshots).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/event_loop.h"
#include "cpu_engine/choice_constraint.h"
#include "cpu_engine/json_constraint.h"
#include "cpu_engine/kv_pool.h"
#include "cpu_engine/model.h"
#include "cpu_engine/offload_cache.h"
#include "cpu_engine/prefix_cache.h"
#include "cpu_engine/token_trie.h"
#include "executors/engine_kv.h"
#include "executors/step_runner.h"

namespace switchyard::cpu_engine {

class TokenLog;

// splitmix64's finaliser (seeds and synthetic ids).
uint64_t SplitMix(uint64_t x);

// Records in `log` the token ids of an admitted sequence (what OnAdmit does before it
// keeps the sequence's sampling parameters; serve does the same for a joined worker's
// engine, whose admissions then carry the ids): each context's ids up to its tokens
// (synthetic ids for positions never seen), the primary's cut to `fresh_from`, then the
// prompt ids (synthetic ones for a token-count prompt). InvalidArgument naming the
// sequence for prompt ids that do not match its new tokens or lie outside the vocabulary.
Status RecordAdmit(TokenLog* log, int64_t vocab, const executors::SequenceSpec& spec,
                   const std::string& primary, int64_t fresh_from);

class CpuStepRunner final : public executors::StepRunner {
 public:
  struct Ctx {
    std::vector<kv_tiers::Extent> extents;
    std::vector<float*> blocks;
    int64_t tokens = 0;  // token slots the engine's accounting gives it
    int64_t valid = 0;   // tokens with KV computed
    // Prefix caching: the hashes of its whole computed blocks [0, hashes.size()), each in
    // the live index; the priority of the last sequence admitted with it; false while its
    // KV comes from an earlier model epoch (never indexed).
    std::vector<uint64_t> hashes;
    int priority = 0;
    // The host offload tier stores its freed blocks ending within its first this many
    // tokens (-1: all): KvTransferParams::max_offload_tokens of that same sequence.
    int64_t offload_limit = -1;
    bool indexable = true;
    uint64_t cuts = 0;  // times `valid` was cut: a running step's rows may be stale then
  };

  // A runner whose pool holds `pool_blocks` blocks of `block_tokens` tokens, named
  // `pool_name` (InvalidArgument without a model or token log; the pool's allocation error).
  // `token_bytes`: each token id's raw bytes (CpuEngine::Options::token_bytes); empty, a
  // sequence with a json_schema is refused at admission. `prefix_caching`: automatic prefix
  // caching (above); `offload_bytes` > 0 (with it): a host offload tier of that size
  // (offload_cache.h).
  static Result<std::unique_ptr<CpuStepRunner>> Create(
      EventLoop* loop, const Model* model, TokenLog* log, int64_t block_tokens, int64_t pool_blocks,
      const std::string& pool_name, std::string tenant, std::vector<std::vector<bool>> masks,
      std::vector<std::string> token_bytes = {}, bool prefix_caching = false,
      uint64_t offload_bytes = 0);

  CpuStepRunner(EventLoop* loop, const Model* model, TokenLog* log, std::unique_ptr<KvPool> pool,
                int64_t block_tokens, std::string tenant, std::vector<std::vector<bool>> masks,
                std::vector<std::string> token_bytes, bool prefix_caching,
                uint64_t offload_bytes = 0)
      : masks_(std::move(masks)),
        token_bytes_(std::move(token_bytes)),
        trie_(token_bytes_.empty() ? nullptr : std::make_unique<TokenTrie>(token_bytes_)),
        loop_(loop),
        model_(model),
        log_(log),
        pool_(std::move(pool)),
        block_tokens_(block_tokens),
        block_bytes_(KvBlockBytes(model->shape(), block_tokens)),
        tenant_(std::move(tenant)),
        prefix_(prefix_caching ? std::make_unique<PrefixCache>(model->shape().Describe())
                               : nullptr),
        offload_(prefix_caching && offload_bytes > 0
                     ? std::make_unique<OffloadCache>(block_bytes_, offload_bytes)
                     : nullptr),
        alive_(std::make_shared<std::atomic<bool>>(true)) {
    thread_ = std::thread([this]() { Work(); });
  }
  ~CpuStepRunner() override { Stop(); }

  std::string_view engine_name() const override { return "cpu engine"; }
  bool computes() const override { return true; }
  Status OnAdmit(const executors::SequenceSpec& spec, const std::string& primary,
                 int64_t fresh_from) override;
  void OnResize(const std::string& context, int64_t tokens) override;
  void OnEmitted(const std::string& primary, int64_t position, int32_t token) override;
  void OnLeave(const std::string& seq) override;
  bool caches_prefixes() const override { return prefix_ != nullptr; }
  int64_t MatchPrefix(const std::string& context, int64_t from, int64_t to, int priority) override;
  void OnModelEpoch(uint64_t epoch) override;
  void Run(const executors::StepShape& shape, std::vector<executors::StepItem>* items,
           std::function<void()> done) override;
  void Stop() override;

  const Model& model() const { return *model_; }
  KvPool& pool() { return *pool_; }
  const KvPool& pool() const { return *pool_; }
  // Prefix caching: the tokens of the whole blocks of `ids` (from position 0) a match would
  // find now, held, kept or in the host offload tier; 0 without prefix caching.
  int64_t CachedPrefix(std::span<const int32_t> ids) const;
  // The host offload tier (null: none).
  const OffloadCache* offload() const { return offload_.get(); }
  // Whole computed blocks of held contexts with a hash (0 without prefix caching).
  size_t indexed_blocks() const { return prefix_ ? prefix_->live_blocks() : 0; }
  uint64_t block_bytes() const { return block_bytes_; }
  const Ctx* Find(const std::string& context) const {
    auto it = ctxs_.find(context);
    return it == ctxs_.end() ? nullptr : &it->second;
  }
  Ctx* Find(const std::string& context) {
    auto it = ctxs_.find(context);
    return it == ctxs_.end() ? nullptr : &it->second;
  }
  bool busy(const std::string& context) const { return busy_.count(context) > 0; }
  // Whether a step is computing (a context it writes is busy until it ends).
  bool stepping() const { return !busy_.empty(); }
  // Gives the context every block its tokens need; ResourceExhausted when the pool has none.
  Status EnsureBlocks(const std::string& key, Ctx& c);

  // The pool as EngineKv (engine_kv.h) sees it; CpuEngine forwards to these, and so does a
  // joined worker (workers/worker_agent.h) when serve moves a context's KV.
  std::string kv_pool_name() const { return pool_->name(); }
  Result<executors::ContextKvView> ExportKv(const std::string& context) const;
  Result<std::vector<void*>> ImportTargets(const std::string& context);
  Status CommitImport(const std::string& context, int64_t valid_tokens);

 private:
  struct Params {
    double temperature = 0, top_p = 1;
    uint64_t seed = 0;
    bool stop_at_eos = true;
    int mask = -1;
    std::optional<JsonObjectConstraint> json;  // the output's constraint, fed as tokens emit
    int64_t answer_start = -1;  // the position its first output token takes (-1: emitted)
    bool text = false;          // it answers prompt token ids (not a token-count workload)
    std::vector<std::pair<int32_t, float>> bias;  // SequenceSpec::logit_bias
    std::optional<ChoiceConstraint> choice;       // SequenceSpec::choices, fed as tokens emit
  };
  struct Emit {
    size_t item = 0;
    Params params;
    int64_t position = 0;
  };
  struct Job {
    std::vector<std::vector<float*>> tables;  // block tables, snapshotted
    std::vector<Row> rows;
    std::vector<Emit> emits;  // in the order of their logits rows
    struct Span {
      std::string context;
      int64_t to = 0;     // valid after the step
      uint64_t cuts = 0;  // Ctx::cuts when it started: the rows are stale if it changed
    };
    std::vector<Span> spans;
    std::vector<int32_t> tokens;  // out: per emit
    std::vector<uint8_t> ends;    // out: per emit, ends the sequence
    Status status;
  };

  // A freed block: kept under its hash (non-zero) or freed, once no step writes it.
  struct Freed {
    kv_tiers::Extent extent;
    uint64_t hash = 0;
    int priority = 0;
    bool offload = false;  // stored in the host offload tier first
  };
  // What an admission gives the blocks of each context it names.
  struct Tags {
    int priority = 0;
    int64_t offload_limit = -1;
  };
  // The context's record, made with the admission's tags (pending_tags_) if it is new.
  Ctx& CtxFor(const std::string& context);
  // Frees the context's last block (kept when it has a hash).
  void FreeLast(const std::string& key, Ctx& c);
  void Return(const Freed& f);
  // Prefix caching (cpu_step_runner_prefix.cc): hashes of the whole computed blocks not yet
  // indexed; index entries of blocks from `keep` on removed; valid cut to `upto`.
  void Index(const std::string& key, Ctx& c);
  void Unindex(Ctx& c, size_t keep);
  void Invalidate(Ctx& c, int64_t upto);
  // Gives block `index` of `c` the KV of the block hashed `hash` from position `from` on —
  // a held or kept block's, else the host offload tier's where the admission allows a
  // load; false when none has that hash (or no slot is left).
  bool Place(Ctx& c, size_t index, uint64_t hash, int64_t from);
  // Whether the admission may load `hash` from the host offload tier (it holds it, and the
  // sequence's load budget covers a block); LoadHost takes it, charging the budget.
  bool HostHas(uint64_t hash) const;
  const float* LoadHost(uint64_t hash);
  void CopyPositions(float* dst, const float* src, int64_t from_in_block) const;
  Status AddSpan(const executors::StepSpan& span, bool logits, Job* job);
  // The sequence's guided choice (SequenceSpec::choices), rebuilt from its earlier output
  // when it is readmitted.
  Result<std::optional<ChoiceConstraint>> ChoiceFor(const executors::SequenceSpec& spec,
                                                    const std::string& primary) const;
  // Masks `row` to what the emit's constraints allow; how many tokens stay.
  size_t MaskRow(const Params& p, float* row, std::vector<uint8_t>* allowed) const;
  Result<std::optional<JsonObjectConstraint>> ConstraintFor(const executors::SequenceSpec& spec,
                                                            const std::string& primary) const;
  const std::vector<bool>* StaticMask(int mask) const;
  int32_t Choose(const Emit& e, float* row, std::vector<uint8_t>* allowed, uint8_t* ends) const;
  bool EndsAnswer(const Params& p, int32_t token, int64_t position) const;
  void Compute(Job* job) const;
  void Finish(std::vector<executors::StepItem>* items, Job& job);
  void Work();

  const std::vector<std::vector<bool>> masks_;
  const std::vector<std::string> token_bytes_;
  const std::unique_ptr<const TokenTrie> trie_;  // of token_bytes_; null without them
  EventLoop* loop_;
  const Model* model_;
  TokenLog* log_;
  std::unique_ptr<KvPool> pool_;
  int64_t block_tokens_;
  uint64_t block_bytes_;
  std::string tenant_;
  std::unique_ptr<PrefixCache> prefix_;    // null: no prefix caching
  std::unique_ptr<OffloadCache> offload_;  // null: no host offload tier
  // The admission being matched (OnAdmit, then MatchPrefix): tokens it may still load from
  // the host tier (-1: no limit), and whether it may load from it at all.
  int64_t load_budget_ = -1;
  bool load_host_ = true;
  std::unordered_map<std::string, Ctx> ctxs_;
  // The admission's tags for contexts it names that its OnResize calls will create.
  std::unordered_map<std::string, Tags> pending_tags_;
  std::unordered_map<std::string, Params> params_;
  std::unordered_map<std::string, std::string> constrained_;  // primary -> constrained sequence
  std::unordered_set<std::string> busy_;                      // contexts the running step writes
  std::vector<Freed> deferred_;  // their freed blocks, returned at its end

  std::shared_ptr<std::atomic<bool>> alive_;  // false once stopped: late completions drop
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace switchyard::cpu_engine
