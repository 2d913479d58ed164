// A test serving engine for the embedding API (tests/service/embedded_test.cc): an
// executors::Engine (BatchingEngine's batching and block accounting) whose steps write a
// pattern into KV blocks of the test's own memory, registered as an
// executors::RegisteredKvPool. The pattern of a position includes a salt that changes
// with every step, so KV restored by a prefetch and KV recomputed differ.
//
// EngineProbe records, for the test thread, what the engines saw: every admitted sequence
// (spec and worker), the bytes Switchyard exported from a pool (demotions) and the bytes
// in the pool's memory after an import committed (prefetches). `hold_next` makes the next
// step of any engine never end (a worker that hangs until it is declared lost).
// `steps_wait_for_admissions` = N holds the end of every step until N sequences have been
// admitted in all (a test that needs sequences to share the pool gets them there before
// any of them makes progress, whatever the machine's speed).
//
// Thread-safety: the engines run on the scheduler's loop; EngineProbe is guarded by `mu`.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "executors/batching_engine.h"
#include "executors/registered_kv.h"
#include "service/embedded.h"

namespace switchyard::testing {

// 2 layers x 2 KV heads x 16 dims x K,V x fp32 = 512 bytes per token; 16-token blocks.
inline v1::ModelConfig PatternModel() {
  v1::ModelConfig m;
  m.set_name("pattern-model");
  m.set_num_layers(2);
  m.set_num_kv_heads(2);
  m.set_head_dim(16);
  m.set_kv_dtype(v1::FP32);
  m.set_hidden_size(64);
  m.set_num_attention_heads(4);
  m.set_intermediate_size(176);
  m.set_vocab_size(300);
  m.set_num_parameters(2000000);
  m.set_tensor_parallel(1);
  return m;
}
constexpr uint64_t kPatternTokenBytes = 512;

// A GPU slow at compute and fast at copies: recomputing a context costs more than moving it.
inline v1::GpuSpec SlowComputeGpu() {
  v1::GpuSpec g;
  g.set_name("test gpu (slow compute)");
  g.set_hbm_bytes(80000000000ULL);
  g.set_hbm_bandwidth_bytes_per_s(1.0e9);
  g.set_bf16_flops(1.0e8);
  g.set_pcie_bandwidth_bytes_per_s(5.0e10);
  g.set_nvlink_bandwidth_bytes_per_s(9.0e11);
  g.set_nic_bandwidth_bits_per_s(4.0e11);
  g.set_compute_efficiency(0.5);
  g.set_memory_efficiency(0.5);
  return g;
}

struct EngineProbe {
  Mutex mu;
  std::vector<std::pair<int, executors::SequenceSpec>> admitted;  // (worker, spec)
  std::map<std::string, std::vector<char>> exported, imported;    // by context key
  int steps = 0;
  std::atomic<bool> hold_next{false};
  int steps_wait_for_admissions = 0;
  std::vector<std::function<void()>> gated;  // step ends held until enough admissions

  // Runs on the loop: `end` now, or once steps_wait_for_admissions sequences are admitted.
  void EndStep(std::function<void()> end) {
    {
      MutexLock lock(&mu);
      if (static_cast<int>(admitted.size()) < steps_wait_for_admissions) {
        gated.push_back(std::move(end));
        return;
      }
    }
    end();
  }
  // Runs on the loop after an admission: the held step ends, once there are enough.
  void ReleaseGated() {
    std::vector<std::function<void()>> ends;
    {
      MutexLock lock(&mu);
      if (static_cast<int>(admitted.size()) < steps_wait_for_admissions) return;
      ends.swap(gated);
    }
    for (auto& end : ends) end();
  }

  int Admissions(const std::string& key) {
    MutexLock lock(&mu);
    int n = 0;
    for (const auto& [w, spec] : admitted) n += spec.key == key;
    return n;
  }
};

// The pool as Switchyard's mover sees it, recording what it read and what an import left.
class RecordingKv final : public executors::EngineKv {
 public:
  RecordingKv(executors::RegisteredKvPool* pool, EngineProbe* probe) : pool_(pool), probe_(probe) {}
  std::string kv_pool_name() const override { return pool_->kv_pool_name(); }
  uint64_t kv_block_bytes() const override { return pool_->kv_block_bytes(); }
  Result<executors::ContextKvView> ExportKv(const std::string& context) const override {
    auto v = pool_->ExportKv(context);
    if (!v.ok()) return v;
    std::vector<char> bytes;
    for (const void* b : v->blocks)
      bytes.insert(bytes.end(), static_cast<const char*>(b),
                   static_cast<const char*>(b) + kv_block_bytes());
    MutexLock lock(&probe_->mu);
    probe_->exported[context] = std::move(bytes);
    return v;
  }
  Result<std::vector<void*>> ImportTargets(const std::string& context) override {
    return pool_->ImportTargets(context);
  }
  Status CommitImport(const std::string& context, int64_t valid_tokens) override {
    SY_RETURN_IF_ERROR(pool_->CommitImport(context, valid_tokens));
    std::vector<char> bytes;
    for (void* b : pool_->Blocks(context))
      bytes.insert(bytes.end(), static_cast<char*>(b), static_cast<char*>(b) + kv_block_bytes());
    MutexLock lock(&probe_->mu);
    probe_->imported[context] = std::move(bytes);
    return Status::OK();
  }

 private:
  executors::RegisteredKvPool* pool_;
  EngineProbe* probe_;
};

// Owns the test memory and its pool; writes the pattern of each computed position.
class PatternRunner final : public executors::StepRunner {
 public:
  PatternRunner(EventLoop* loop, int64_t pool_blocks, int64_t block_tokens, EngineProbe* probe)
      : loop_(loop), probe_(probe), memory_(pool_blocks * block_tokens * kPatternTokenBytes) {
    executors::RegisteredKvPool::Options o;
    o.name = "pattern engine memory";
    o.block_bytes = block_tokens * kPatternTokenBytes;
    o.block_tokens = block_tokens;
    o.regions.push_back({memory_.data(), memory_.size(), "cpu"});
    pool_ = executors::RegisteredKvPool::Create(o).value();
    kv_ = std::make_unique<RecordingKv>(pool_.get(), probe);
  }
  std::string_view engine_name() const override { return "pattern engine (test)"; }
  bool computes() const override { return true; }
  void OnResize(const std::string& context, int64_t tokens) override {
    (void)pool_->Resize(context, tokens);
  }
  void Run(const executors::StepShape&, std::vector<executors::StepItem>* items,
           std::function<void()> done) override {
    ++salt_;
    const int64_t bt = pool_->block_tokens();
    for (executors::StepItem& it : *items) {
      for (const executors::StepSpan& s : it.spans) {
        std::vector<void*> blocks = pool_->Blocks(*s.context);
        for (int64_t p = s.from; p < s.to && p / bt < static_cast<int64_t>(blocks.size()); ++p) {
          char* at = static_cast<char*>(blocks[p / bt]) + (p % bt) * kPatternTokenBytes;
          for (uint64_t i = 0; i < kPatternTokenBytes; ++i)
            at[i] = static_cast<char>(salt_ * 131 + p * 7 + i);
        }
        (void)pool_->SetValid(*s.context, std::max(pool_->valid_tokens(*s.context), s.to));
      }
      if (it.emits) it.token = 1;
    }
    {
      MutexLock lock(&probe_->mu);
      ++probe_->steps;
    }
    if (probe_->hold_next.exchange(false)) {
      held_ = std::move(done);  // never ends: the worker hangs
      return;
    }
    probe_->EndStep([loop = loop_, alive = alive_, done = std::move(done)]() mutable {
      loop->Post([alive, done = std::move(done)]() {
        if (*alive) done();
      });
    });
  }
  void Stop() override {
    *alive_ = false;
    held_ = nullptr;
  }
  executors::EngineKv* kv() { return kv_.get(); }

 private:
  EventLoop* loop_;
  EngineProbe* probe_;
  std::vector<char> memory_;  // the engine's own KV memory
  std::unique_ptr<executors::RegisteredKvPool> pool_;
  std::unique_ptr<RecordingKv> kv_;
  uint64_t salt_ = 0;
  std::function<void()> held_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

class PatternEngine final : public executors::BatchingEngine {
 public:
  PatternEngine(EventLoop* loop, int worker, executors::EngineLimits limits,
                std::unique_ptr<PatternRunner> runner, EngineProbe* probe)
      : BatchingEngine(loop, worker, limits, std::move(runner)), probe_(probe) {}
  Status Admit(const executors::SequenceSpec& seq) override {
    {
      MutexLock lock(&probe_->mu);
      probe_->admitted.emplace_back(worker(), seq);
    }
    Status st = BatchingEngine::Admit(seq);
    probe_->ReleaseGated();
    return st;
  }

 private:
  EngineProbe* probe_;
};

inline driver::EngineFactory PatternEngines(EngineProbe* probe) {
  return [probe](EventLoop* loop, int worker,
                 const executors::EngineLimits& limits) -> Result<driver::WorkerEngine> {
    auto runner =
        std::make_unique<PatternRunner>(loop, limits.pool_blocks, limits.block_tokens, probe);
    driver::WorkerEngine we;
    we.kv = runner->kv();
    we.engine = std::make_unique<PatternEngine>(loop, worker, limits, std::move(runner), probe);
    return we;
  };
}

// Options for an Embedded over pattern engines: `pool_tokens` of KV per worker.
inline service::EmbeddedOptions PatternOptions(const std::string& dir, EngineProbe* probe,
                                               int64_t pool_tokens, int workers = 1) {
  service::EmbeddedOptions o;
  o.data_dir = dir;
  o.durable = false;
  o.engine_factory = PatternEngines(probe);
  o.scheduler.model_config = PatternModel();
  o.scheduler.gpu = SlowComputeGpu();
  o.scheduler.workers = workers;
  o.scheduler.hbm_bytes_per_worker = static_cast<uint64_t>(pool_tokens) * kPatternTokenBytes;
  o.scheduler.host_bytes = 64ULL << 20;
  o.scheduler.disk_bytes = 64ULL << 20;
  return o;
}

}  // namespace switchyard::testing
