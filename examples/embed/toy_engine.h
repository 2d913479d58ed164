// ToyEngine: the example's own serving engine, plugged into Switchyard through the
// embedding API (EmbeddedOptions::engine_factory).
//
// It is an executors::Engine: Switchyard's BatchingEngine does the continuous batching and
// the block accounting, and the engine's own step runner (ToyRunner) computes each step
// with the reference CPU model (cpu_engine/model.h) — here a shape file with random
// weights, so its text is meaningless. Its KV cache lives in a buffer the engine allocates
// itself, registered with Switchyard as a descriptor list (executors::RegisteredKvPool):
// Switchyard's mover demotes and prefetches those real blocks under the commit rule.
//
// Token ids: the workflow API carries token counts only, so prompts are deterministic
// synthetic ids (a function of the context and the position); outputs are the model's
// greedy tokens.
//
// Ownership: the engine owns its runner, which owns the KV buffer and the pool; the model
// is borrowed. Thread-safety: loop-thread only (the scheduler's loop).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cpu_engine/model.h"
#include "executors/batching_engine.h"
#include "executors/registered_kv.h"

namespace toy {

namespace sy = switchyard;

class ToyRunner final : public sy::executors::StepRunner {
 public:
  ToyRunner(sy::EventLoop* loop, const sy::cpu_engine::Model* model, int64_t pool_blocks,
            int64_t block_tokens);
  // The pool over the runner's own KV buffer; null when registration failed (`error`).
  sy::executors::RegisteredKvPool* pool() { return pool_.get(); }
  const sy::Status& error() const { return error_; }

  std::string_view engine_name() const override { return "toy engine (example, cpu model)"; }
  bool computes() const override { return true; }
  sy::Status OnAdmit(const sy::executors::SequenceSpec& spec, const std::string& primary,
                     int64_t fresh_from) override;
  void OnResize(const std::string& context, int64_t tokens) override;
  void OnEmitted(const std::string& primary, int64_t position, int32_t token) override;
  void Run(const sy::executors::StepShape& shape, std::vector<sy::executors::StepItem>* items,
           std::function<void()> done) override;
  void Stop() override { *alive_ = false; }

 private:
  std::vector<int32_t>& Log(const std::string& context, int64_t at_least);

  sy::EventLoop* loop_;
  const sy::cpu_engine::Model* model_;
  std::vector<float> memory_;  // the engine's own KV buffer
  std::unique_ptr<sy::executors::RegisteredKvPool> pool_;
  sy::Status error_;
  std::map<std::string, std::vector<int32_t>> tokens_;  // token ids by context
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

class ToyEngine final : public sy::executors::BatchingEngine {
 public:
  ToyEngine(sy::EventLoop* loop, int worker, sy::executors::EngineLimits limits,
            std::unique_ptr<ToyRunner> runner)
      : BatchingEngine(loop, worker, limits, std::move(runner)),
        toy_(static_cast<ToyRunner*>(this->runner())) {}
  sy::executors::RegisteredKvPool* pool() { return toy_->pool(); }
  // A checksum (FNV-1a) of the first `blocks` KV blocks of `context` in the engine's memory
  // (all of them with -1), and how many it covered.
  uint64_t Checksum(const std::string& context, int64_t blocks, int64_t* covered);

 private:
  ToyRunner* toy_;
};

}  // namespace toy
