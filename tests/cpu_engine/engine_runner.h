// EngineRunner: a CpuEngine on a virtual-time loop for tests — admits sequences, runs each
// to its end and records the tokens it emitted (the stop id included).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/virtual_event_loop.h"
#include "cpu_engine/cpu_engine.h"
#include "tests/common/wait_until.h"

namespace switchyard::cpu_engine::testing {

class EngineRunner {
 public:
  // `o.model` is `model`, `o.tokens` the runner's own log.
  explicit EngineRunner(const Model* model, CpuEngine::Options o = {}) {
    executors::EngineLimits l;
    l.block_tokens = 16;
    l.pool_blocks = 512;
    l.max_num_seqs = 16;
    l.max_num_batched_tokens = 256;
    o.model = model;
    o.tokens = &log_;
    auto e = CpuEngine::Create(&loop_, 0, l, o);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(*e);
    engine_->SetListener([this](const executors::StepReport& r) {
      for (const executors::SeqProgress& p : r.seqs) {
        if (p.token >= 0) out_[p.key].push_back(p.token);
        if (p.finished) done_[p.key] = p.status.ok();
      }
    });
  }
  Status Admit(const executors::SequenceSpec& s) { return engine_->Admit(s); }
  // Admits `s` and runs it to its end; its tokens.
  std::vector<int32_t> Run(const executors::SequenceSpec& s) {
    EXPECT_TRUE(Admit(s).ok());
    EXPECT_TRUE(::switchyard::testing::WaitUntil(
        [&] {
          loop_.Run();
          return done_.count(s.key) > 0;
        },
        ::switchyard::testing::kWaitSeconds, std::chrono::microseconds(200)));
    EXPECT_TRUE(done_[s.key]) << s.key << " ended with an error";
    return out_[s.key];
  }

 private:
  VirtualEventLoop loop_;
  TokenLog log_;
  std::unique_ptr<CpuEngine> engine_;
  std::map<std::string, std::vector<int32_t>> out_;
  std::map<std::string, bool> done_;
};

}  // namespace switchyard::cpu_engine::testing
