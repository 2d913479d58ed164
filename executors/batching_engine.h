// BatchingEngine: the scheduling half of an executors::Engine (engine.h) — continuous
// batching with chunked prefill and the KV block accounting — with the step itself run by
// a StepRunner: SimulatedEngine (simulated_engine.h) prices it with a StepCostModel and
// waits on a timer; CpuEngine (cpu_engine/cpu_engine.h) computes it.
//
// KV pool. `pool_blocks` blocks of `block_tokens` tokens, held by contexts; blocks_used()
// is the sum over held contexts of BlocksFor(tokens), kept as a running total. A context's
// token count is what its blocks are allocated for: Admit sets every context a sequence
// touches to its size after the prefill at once (the allocation the engine contract asks
// for), decode grows the primary by one token per output token, Preempt shrinks the
// contexts back to what was computed.
//
// Admit. contexts[i].resident: the engine must hold the context (FailedPrecondition naming
// it otherwise, or when it holds fewer tokens than the spec says); the tokens it holds are
// read as cached. Not resident: the prefill rebuilds it from 0 to `tokens` (the engine's
// blocks for it, if any, are reused). The prefill computes the rebuilt contexts first, in
// spec order, then the node's new tokens (prefill_tokens minus the rebuilt tokens), which
// go to the primary (contexts[0] with extends_primary). A sequence that extends no context
// (no contexts, or extends_primary false) holds its new and output tokens in a private
// context under its own key, Released when it finishes or is preempted. Two running
// sequences may not extend the same context. Admit refuses with nothing allocated.
//
// Steps. When sequences are runnable and no step is in flight, a step starts at Now() (from
// a callback posted by whatever made work runnable, so sequences admitted at the same
// instant share the step). Its batch, at most max_num_seqs sequences and
// max_num_batched_tokens tokens: first every decoding sequence, one token each, in
// admission order; then prefill chunks in admission order, min(remaining prefill, budget
// left, max_chunk_tokens when set). The runner gets the step's StepShape (kv_tokens_read sums every
// batched sequence's KV before the step — its cached and rebuilt contexts, its prefill done and its
// outputs —, prefill_attention sums n * (c + (n + 1) / 2) over chunks of n tokens on c
// cached) and, when it computes, the positions of every context each batched sequence
// computes in this step (StepItem, step_runner.h); the step ends when the runner says so.
//
// Prefix caching. With a runner that caches prefixes (StepRunner::caches_prefixes: the CPU
// engine's), Admit asks it, before allocating, to find the KV of the prefill stream's first
// tokens by content (StepRunner::MatchPrefix, step_runner.h): the rebuilt contexts from
// position 0, in order, then the new tokens, each context only when the ones before it
// were found whole, and never the stream's last token. What it found counts as prefill done
// from the start (SeqProgress::prefill_done and cached_tokens; the step's prefill_tokens
// count only what is computed) and is added to the next report's prefix_query_tokens /
// prefix_hit_tokens. The block accounting is the same either way: the blocks are allocated
// for the whole prefill as before. Runners without a cache (the simulated engine, a joined
// worker's remote runner) keep everything computed.
//
// First token (vLLM): the step that completes a sequence's prefill also emits its first
// output token; every later step emits one. Every output token takes a KV slot in the
// primary in the step that emits it, so a finished sequence's primary holds
// old + new + output tokens (what the scheduler core accounts). A sequence admitted with
// prefill_tokens 0 decodes from its first step.
//
// Exhaustion. A sequence whose output token needs a new block (the primary crosses a block
// boundary) when no block is free, counting those the step's earlier sequences will take,
// does not run in the step; the report lists it in `exhausted`. Output slots are allocated
// when the step ends, so between steps the pool holds exactly what the reports said; when
// an Admit or Import took the block during the step, the token is not emitted and the
// report lists the sequence in `exhausted` (and in `seqs`, without output progress). The
// engine never preempts by itself. When every runnable sequence is
// exhausted, the engine emits one report with start == end == Now(), no seqs and the
// exhausted list, then waits: the next step is tried only after an Admit, Preempt, Release
// or Import changes something (each such try may report a stall again; no busy loop).
//
// Step end. Progress is applied; a sequence finishes when output_done reaches
// actual_output_tokens (if > 0, capped by max_output_tokens) or max_output_tokens, or
// when a computing runner's emitted token is its end of sequence, with the
// status of Options::fault (non-OK: it failed). Finished sequences leave the engine (their
// KV stays with their contexts, but for a private context) before the listener sees the
// report. The report's counters describe the batch as launched; `seqs` has every sequence
// that ran and was not preempted meanwhile. The StepReport is a member reused for every
// step: valid during the listener call only (copy what is kept). The listener may call
// Admit, Preempt, Import and Release.
//
// Preempt of a sequence in the in-flight step drops its progress for that step (the step
// still completes for the others and keeps its time); its contexts shrink to what was
// computed before the step (rebuilt contexts first, then the new tokens, then outputs).
//
// Performance: per step O(running sequences), no allocation in steady state (batch and
// report buffers are reused; SeqProgress keys are assigned into reused strings).
// Thread-safety: loop-thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/event_loop.h"
#include "executors/engine.h"
#include "executors/step_cost.h"
#include "executors/step_runner.h"

namespace switchyard::executors {

class BatchingEngine : public Engine {
 public:
  struct Options {
    // Optional fault injection: applied when a sequence finishes; a non-OK status ends it
    // with that status (fault injection in tests and replay).
    std::function<Status(const std::string& key)> fault;
  };

  // `limits` values below 1 (pool_blocks below 0) are raised to 1 (0). `loop` must outlive
  // the engine; the engine owns `runner`.
  BatchingEngine(EventLoop* loop, int worker, EngineLimits limits,
                 std::unique_ptr<StepRunner> runner, Options o = {});
  ~BatchingEngine() override;
  BatchingEngine(const BatchingEngine&) = delete;
  BatchingEngine& operator=(const BatchingEngine&) = delete;

  std::string_view name() const override { return runner_->engine_name(); }
  const EngineLimits& limits() const override { return limits_; }
  void SetListener(Listener l) override { listener_ = std::move(l); }

  Status Admit(const SequenceSpec& seq) override;
  Result<SeqProgress> Preempt(const std::string& key) override;
  Status Import(const std::string& context, int64_t tokens) override;
  Status Release(const std::string& context) override;
  Status Reset() override;
  void SetModelEpoch(uint64_t epoch) override;

  int64_t blocks_used() const override { return blocks_used_; }
  int64_t context_tokens(const std::string& context) const override;
  size_t running() const override { return order_.size(); }

  int worker() const { return worker_; }
  bool step_in_flight() const { return step_running_; }
  StepRunner* runner() const { return runner_.get(); }
  size_t contexts_held() const { return contexts_.size(); }

 private:
  struct Context {
    const std::string* key = nullptr;  // the map's key (stable)
    int64_t tokens = 0;
    int users = 0;          // running sequences that read or extend it
    bool extended = false;  // a running sequence extends it
  };
  // One context a sequence touches.
  struct Member {
    std::string key;
    Context* ctx = nullptr;  // stable: unordered_map nodes do not move
    int64_t base = 0;        // tokens read as cached from the start
    int64_t rebuild = 0;     // tokens the prefill recomputes into it
  };
  struct Seq {
    std::string key;
    std::vector<Member> members;  // spec order; the private context last, if any
    int primary = -1;             // index into members of the extended context
    bool private_ctx = false;     // members[primary] is the sequence's own context
    int64_t cached = 0;           // sum of members' base
    int64_t rebuild = 0;          // sum of members' rebuild
    int64_t hit = 0;              // prefill tokens the prefix cache supplied (done at Admit)
    int64_t prefill_total = 0, prefill_done = 0;
    int64_t output_start = 0, output_done = 0, output_target = 0;
    int batch_index = -1;  // entry in batch_ while a step is in flight
    bool finished = false;
  };
  struct Entry {
    Seq* seq = nullptr;  // null: preempted during the step
    int64_t chunk = 0;   // prefill tokens in this step
    bool emits = false;  // emits an output token (decode, or the prefill's last chunk)
  };
  struct Plan;  // what Admit allocates

  Status Validate(const SequenceSpec& s) const;
  Status PlanAdmit(const SequenceSpec& s, Plan* plan) const;
  // The prefill tokens the runner's prefix cache supplies (see "Prefix caching").
  int64_t MatchPrefixes(const Seq& s, int64_t fresh, int priority);
  void SetTokens(Context* c, int64_t tokens);
  int64_t FreeBlocks() const { return limits_.pool_blocks - blocks_used_; }
  int64_t SeqKv(const Seq& s) const { return s.cached + s.prefill_done + Produced(s); }
  static int64_t Produced(const Seq& s) { return s.output_done - s.output_start; }
  bool TakeOutputSlot(Seq& s);
  void ShrinkToComputed(Seq& s);
  void Leave(Seq& s);

  void Wake();
  void StartStep();
  bool AddDecode(Seq& s, int64_t* budget);
  bool AddChunk(Seq& s, int64_t* budget);
  void EndStep();
  void ApplyProgress(size_t index, size_t* reported);
  void RemoveFinished();
  void Emit(Time start, Time end);
  void BuildItems();
  void SpansOf(const Seq& s, const Entry& e, StepItem* item) const;
  Context* Hold(const std::string& key);
  std::string Who() const;

  EventLoop* loop_;
  int worker_;
  EngineLimits limits_;
  std::unique_ptr<StepRunner> runner_;
  Options options_;
  Listener listener_;

  std::unordered_map<std::string, Context> contexts_;
  std::unordered_map<std::string, std::unique_ptr<Seq>> seqs_;
  std::vector<Seq*> order_;  // running sequences in admission order
  int64_t blocks_used_ = 0;
  int64_t pending_queries_ = 0, pending_hits_ = 0;  // prefix cache, for the next report

  TimerId kick_timer_ = kNoTimer;  // a posted StartStep
  bool step_running_ = false;      // the runner runs a step
  int64_t step_new_blocks_ = 0;    // blocks the step in flight will take when it ends
  Time step_start_{0};
  StepShape shape_;
  std::vector<Entry> batch_;
  std::vector<StepItem> items_;  // batch_[i]'s rows, for a runner that computes
  StepReport report_;
};

}  // namespace switchyard::executors
