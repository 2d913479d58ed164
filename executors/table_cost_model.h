// StepTableCostModel: the scheduler's cost model (scheduler::ComputeCostModel) read from an
// engine's measured step times (a StepCostModel: a TableStepCost fitted to a table in
// configs/step_tables) instead of a model's roofline on a GPU spec. Serve uses it for a
// served model whose config names a `stepTable`: the scheduler then prices that model's
// calls (a recompute's prefill, a batch's decode step) as the engine that table measured
// runs them — in proxy mode, the upstream's own engine, calibrated.
//
//   PrefillTime(n, c)     one step that prefills n tokens on c cached ones (kv_tokens_read
//                         c, causal attention work n * (c + (n + 1) / 2));
//   DecodeTime(s, c)      s steps of one sequence, priced at its middle step:
//                         s * StepTime(decode_seqs 1, kv_tokens_read c + (s - 1) / 2)
//                         (exact for one plane; a two-plane max is convex, so this is a
//                         lower bound within the planes' difference);
//   BatchStepTime(q, k)   one decode step of q sequences reading k KV tokens in all: the
//                         per-sequence cost a CPU engine pays for each sequence it batches,
//                         which a GPU roofline (weights read once) does not.
// KvBytesPerToken is the model's, given.
//
// Thread-safety: immutable; every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>

#include "executors/step_cost.h"
#include "scheduler/environment.h"

namespace switchyard::executors {

class StepTableCostModel final : public scheduler::ComputeCostModel {
 public:
  StepTableCostModel(std::shared_ptr<const StepCostModel> steps, uint64_t kv_bytes_per_token)
      : steps_(std::move(steps)), kv_bytes_per_token_(kv_bytes_per_token) {}

  Duration PrefillTime(int64_t new_tokens, int64_t context_tokens) const override;
  Duration DecodeTime(int64_t steps, int64_t context_tokens) const override;
  Duration BatchStepTime(int64_t seqs, int64_t kv_tokens) const override;
  uint64_t KvBytesPerToken() const override { return kv_bytes_per_token_; }

 private:
  std::shared_ptr<const StepCostModel> steps_;
  uint64_t kv_bytes_per_token_;
};

}  // namespace switchyard::executors
