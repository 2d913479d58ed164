// StepRunner: what runs one step of a BatchingEngine (batching_engine.h).
//
// The engine decides each step's batch and keeps the KV block accounting; the runner
// carries the step out. Two kinds exist:
//   * a pricing runner (SimulatedEngine, simulated_engine.h): the step lasts what a
//     StepCostModel says its StepShape costs; nothing is computed (computes() false);
//   * a computing runner (CpuEngine, cpu_engine/cpu_engine.h): it holds the real KV of
//     every context, follows the engine's accounting through OnResize, and computes the
//     rows each StepItem names, emitting real tokens.
//
// Positions. A context's tokens are numbered from 0. A StepItem names, per context a
// batched sequence computes in this step, the half-open range of positions [from, to)
// whose KV the step produces (rebuilt contexts first, in the sequence's order, then the
// primary); `emits`: the primary's row at to - 1 yields the sequence's next token, which
// takes position `emit_position` (= the primary's size before the step's output slot).
// A decode computes one row, the token emitted by the step before. A runner may compute
// more rows than named (KV the previous call left uncomputed: the last output token of a
// finished sequence is only fed in by the next call).
//
// Prefix caching (vLLM's automatic prefix caching). A runner that keeps KV by content
// (caches_prefixes()) is asked at Admit, after OnAdmit recorded the token ids and before the
// OnResize calls the admission causes, for each context the prefill fills, in prefill order
// and while the previous one was found whole: MatchPrefix(context, from, to) — positions
// [0, from) of the context hold computed KV (0 for a rebuilt or new context), [from, to)
// are to be filled. The runner finds the longest run of whole blocks from position 0 whose
// token ids it holds KV for (in another context, or among freed blocks it kept), makes
// [from, h) computed by copying or adopting them, and returns h (from <= h <= to). The
// engine then counts [from, h) as prefill done and never asks the runner to compute it.
// The default (a pricing runner; the remote runner of a joined worker) has no cache.
//
// Thread-safety: every call is made on the engine's loop thread; a runner that computes
// elsewhere copies in Run what it needs (the items' strings are the engine's) and calls
// `done` on the loop.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "executors/engine.h"
#include "executors/step_cost.h"

namespace switchyard::executors {

struct StepSpan {
  const std::string* context = nullptr;
  int64_t from = 0, to = 0;  // positions whose KV this step computes
};

struct StepItem {
  const std::string* seq = nullptr;  // the sequence's key
  const std::string* primary = nullptr;
  std::vector<StepSpan> spans;  // in order; adjacent ranges of one context merged
  bool emits = false;
  int64_t emit_position = 0;
  // Set by a computing runner before `done`: the emitted token and whether it ends the
  // sequence (EOS).
  int32_t token = -1;
  bool eos = false;
  Status status;  // non-OK: the sequence failed in this step (it ends with this status)
};

class StepRunner {
 public:
  virtual ~StepRunner() = default;
  virtual std::string_view engine_name() const = 0;
  // Whether the runner computes rows (the engine then fills StepItems).
  virtual bool computes() const = 0;

  // A sequence is admitted (before any OnResize it causes): a computing runner records the
  // tokens of its new text. An error refuses the admission (nothing allocated yet).
  virtual Status OnAdmit(const SequenceSpec& spec, const std::string& primary, int64_t fresh_from) {
    return Status::OK();
  }
  // A context's KV now holds `tokens` token slots (0: it left the pool). A computing
  // runner allocates or frees block storage to match (frees wait for a running step).
  virtual void OnResize(const std::string& context, int64_t tokens) {}
  // The token an item emitted took its KV slot (the step's end).
  virtual void OnEmitted(const std::string& primary, int64_t position, int32_t token) {}
  // A sequence left the engine (finished or preempted).
  virtual void OnLeave(const std::string& seq) {}

  // Prefix caching (above): whether MatchPrefix can find anything, and the match itself.
  // `priority` is the admitted sequence's (SequenceSpec::priority).
  virtual bool caches_prefixes() const { return false; }
  virtual int64_t MatchPrefix(const std::string& context, int64_t from, int64_t to, int priority) {
    return from;
  }
  // The model's weights changed (Engine::SetModelEpoch): KV computed before never matches.
  virtual void OnModelEpoch(uint64_t epoch) {}

  // Runs one step; calls `done` on the engine's loop when it ended (never synchronously).
  virtual void Run(const StepShape& shape, std::vector<StepItem>* items,
                   std::function<void()> done) = 0;
  // The engine is going away: no `done` may run after this returns.
  virtual void Stop() = 0;
};

}  // namespace switchyard::executors
