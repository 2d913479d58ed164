// executors::Engine: one worker's model engine, continuously batching (the Engines model).
//
// A worker is one model replica. The runtime hands its engine *sequences* (one per placed
// LLM node: the contexts it reads and extends, the tokens to prefill — the node's new
// tokens plus any recompute of a discarded context — and the output cap); the engine forms
// every step's batch from the sequences it holds, under a per-step token budget
// (`max_num_batched_tokens`) and a sequence cap (`max_num_seqs`), with chunked prefill
// mixed into decode steps, as vLLM V1 and SGLang do. KV lives in a pool of fixed-size
// blocks (`block_tokens` tokens each) owned by the engine, keyed by context:
//
//   * Admit allocates the blocks for every non-resident context the sequence reads and for
//     its whole prefill at once (FailedPrecondition, nothing allocated, when the pool does
//     not hold them). The scheduler core admits by the same block count, so a refused
//     admit means the core and the engine disagree (the replay's ledger check catches it).
//   * Decode allocates one block whenever a sequence's primary context crosses a block
//     boundary. When the pool has no free block for a running sequence, that sequence
//     does not run in the step and the step report says `exhausted` with its key: the
//     scheduler core's policy then picks a victim to preempt (vLLM: the most recently
//     admitted, recomputed later), and the runtime carries it out with Preempt + Release.
//   * A finished or preempted sequence's blocks stay in the pool under its contexts (the
//     KV kept for the next call) until Release: the core decides keep / demote / discard.
//   * Import allocates blocks for a context arriving by a KV move (prefetch, or a peer
//     demotion into this worker's HBM); the move commits them (commit rule) before any
//     sequence may read them; a failed move Releases them.
//   * Automatic prefix caching (engines that compute, as vLLM's APC): Admit may find the KV
//     of the prefill's first tokens by their token ids — in a held context or among freed
//     blocks the engine still keeps — and copy it instead of computing it; those tokens
//     count as prefill done from the first report (SeqProgress::cached_tokens). A kept
//     freed block is free in the block count: it changes no accounting above.
//
// Every step produces one StepReport to the listener, on the engine's event loop, never
// synchronously inside Admit/Preempt. Output lengths are not known to the scheduler: the
// engine stops a sequence at EOS (a real engine) or at the trace's recorded length (the
// simulated engine, which hides it from policies) and at the cap.
//
// Implementations: SimulatedEngine (executors/simulated_engine.h: step time from a
// StepCostModel), CpuEngine (cpu_engine/cpu_engine.h: a Llama decoder computed on the
// CPU, real KV bytes), both on BatchingEngine (batching_engine.h); and what an embedder
// writes for its own engine.
// Thread-safety: loop-thread only (the thread of the EventLoop the engine was built on).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "base/time.h"

namespace switchyard::executors {

// Batch limits of one engine (vLLM's names).
struct EngineLimits {
  int64_t max_num_batched_tokens = 8192;  // tokens per step: decodes + prefill chunks
  // The most prefill tokens one sequence computes in a step (vLLM's
  // long_prefill_token_threshold): a long prompt takes several steps and leaves the rest of
  // the step's budget to other sequences' chunks. 0: only the step's budget bounds it.
  int64_t max_chunk_tokens = 0;
  int max_num_seqs = 256;     // sequences running at once
  int64_t block_tokens = 16;  // tokens per KV block
  int64_t pool_blocks = 0;    // KV blocks in the pool
};

// One context a sequence reads (and, for the primary, extends).
struct SeqContext {
  std::string key;       // "<workflow>/<context>"
  int64_t tokens = 0;    // tokens of KV the context holds before this sequence
  bool resident = true;  // already in this engine's pool (false: rebuilt by the prefill)
  // The sequence continues the context from exactly its first `tokens` tokens: a resident
  // context holding more drops the rest first (CacheRef.keep_tokens; primary only).
  bool keep_only = false;
};

// vLLM's per-request controls of its CPU offloading (`kv_transfer_params` of the offloading
// connector): engines with a host offload tier (the CPU engine's, cpu_engine/offload_cache.h)
// honour them; others ignore them.
struct KvTransferParams {
  // Of the prompt, at most this many tokens loaded back from the host tier (-1: no limit;
  // 0: recompute what the pool no longer holds instead of loading it).
  int64_t max_load_tokens = -1;
  // Loads from the host tier allowed at all (false: `kv_load_tiers` named no "CPU").
  bool load_from_host = true;
  // Of the sequence's contexts, only blocks ending within the first this many tokens are
  // stored in the host tier when freed (-1: all; 0: none).
  int64_t max_offload_tokens = -1;
};

struct SequenceSpec {
  std::string key;                   // "<workflow>/<node>", unique among running sequences
  std::vector<SeqContext> contexts;  // contexts[0] is the primary (extended), if any
  bool extends_primary = true;       // false: the node only READs its contexts
  int64_t prefill_tokens = 0;        // new tokens + recompute of non-resident contexts
  int64_t output_done = 0;           // tokens already decoded by an earlier attempt
  int64_t max_output_tokens = 256;   // the cap (counting output_done)
  // Simulated engines only: the output length the trace recorded (an oracle the engine
  // uses to stop; never shown to the scheduler). 0: decode to the cap.
  int64_t actual_output_tokens = 0;
  // Engines that compute: the token ids of the node's new tokens (prefill_tokens minus the
  // rebuilt contexts' tokens), when the caller has them (the OpenAI front). Empty: the
  // engine makes deterministic synthetic ids (the workflow API carries token counts only).
  std::vector<int32_t> prompt_token_ids;
  double temperature = 0.0;  // 0: greedy
  double top_p = 1.0;
  uint64_t sampling_seed = 0;
  bool stop_at_eos = true;  // engines that compute: the end-of-sequence token ends it
  int token_mask = -1;      // engines that compute: a set of allowed output tokens (-1: default)
  // Engines that compute: non-empty, a JSON schema of an object; the output is kept inside
  // the language of cpu_engine/json_constraint.h (one object with the schema's required
  // keys) and the sequence ends when the object closes, as at an end-of-sequence token
  // (which is not allowed before). An engine that cannot constrain refuses the sequence.
  std::string json_schema;
  // Engines that compute: (token id, bias) added to the logits before sampling, as OpenAI's
  // logit_bias (-100 bans a token, +100 all but forces it).
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Engines that compute: non-empty, the output is exactly one of these texts (guided
  // choice: only tokens whose bytes keep it a prefix of one are allowed) and the sequence
  // ends once it equals one. Not with json_schema.
  std::vector<std::string> choices;
  // Lower is more important (vLLM's request priority). Engines with a prefix cache keep it
  // with the sequence's blocks: once freed, those of less important sequences (a higher
  // number) are reused first.
  int priority = 0;
  // Host offload controls (above), as vLLM takes them per request.
  KvTransferParams kv_transfer;
};

// Progress of one sequence in a step.
struct SeqProgress {
  std::string key;
  int64_t prefill_done = 0;  // prefill tokens computed so far (of prefill_tokens)
  int64_t output_done = 0;   // output tokens decoded so far
  bool finished = false;     // ended this step (EOS, recorded length or cap)
  // This step took a KV block for it or advanced its prefill: what the scheduler's ledger
  // and preemption decisions need. A decode token that stayed in its block is not (a
  // runtime may leave such steps out of what it forwards).
  bool changed = true;
  int32_t token = -1;  // engines that compute: the token this step emitted (-1: none)
  Status status;       // non-OK: the sequence failed (finished is true)
  // Prefill tokens of this admission the engine did not compute: the KV its contexts held
  // (resident) plus what its prefix cache supplied (automatic prefix caching). Constant for
  // an admission.
  int64_t cached_tokens = 0;
};

struct StepReport {
  int worker = -1;
  Time start{0}, end{0};
  int64_t prefill_tokens = 0;          // computed in this step
  int decode_seqs = 0;                 // sequences that decoded one token
  int64_t kv_tokens_read = 0;          // KV tokens the step's attention read
  std::vector<SeqProgress> seqs;       // every sequence that ran in this step
  std::vector<std::string> exhausted;  // running sequences that found no free block
  int64_t blocks_used = 0, blocks_total = 0;
  // Admissions since the previous report, on engines with a prefix cache (0 elsewhere):
  // prefill tokens looked up in it and tokens it supplied (not computed).
  int64_t prefix_query_tokens = 0, prefix_hit_tokens = 0;
};

class Engine {
 public:
  using Listener = std::function<void(const StepReport&)>;
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  virtual const EngineLimits& limits() const = 0;
  virtual void SetListener(Listener l) = 0;

  // Starts a sequence (see above); FailedPrecondition when its blocks do not fit,
  // AlreadyExists for a running key, InvalidArgument for a bad spec.
  virtual Status Admit(const SequenceSpec& seq) = 0;
  // Stops a running sequence at once (no further progress is reported for it); the KV it
  // computed stays with its contexts. Returns its progress; NotFound for an unknown key.
  virtual Result<SeqProgress> Preempt(const std::string& key) = 0;
  // Allocates blocks for `tokens` of a context arriving by a KV move. FailedPrecondition
  // when the pool lacks them; a context already in the pool is resized to `tokens`.
  virtual Status Import(const std::string& context, int64_t tokens) = 0;
  // Frees every block of a context (discard, a demotion that committed elsewhere, a failed
  // import). No running sequence may use it (FailedPrecondition); unknown: OK, no-op.
  virtual Status Release(const std::string& context) = 0;

  virtual int64_t blocks_used() const = 0;
  virtual int64_t context_tokens(const std::string& context) const = 0;  // -1: not held
  virtual size_t running() const = 0;

  // Drops every context and block: the worker came back as a new incarnation (a new
  // process) after a loss, so nothing this engine held is there any more. Called with no
  // running sequence (the loss preempted them; FailedPrecondition otherwise). The default
  // refuses (NotSupported): an engine that cannot start over keeps its worker lost.
  virtual Status Reset() {
    return Status::NotSupported(std::string(name()) + " cannot start over after a loss");
  }
  // The served model's weights changed (the driver's BumpModelEpoch): an engine with a
  // prefix cache never again matches KV computed before. The default does nothing.
  virtual void SetModelEpoch(uint64_t epoch) {}
};

// Blocks for `tokens` tokens (ceil).
inline int64_t BlocksFor(int64_t tokens, int64_t block_tokens) {
  return tokens <= 0 ? 0 : (tokens + block_tokens - 1) / block_tokens;
}

}  // namespace switchyard::executors
