// BatchingEngine's prefix caching (batching_engine.h "Prefix caching") against a runner
// that says which positions it holds KV for: the prefill stream is matched from its start,
// context after context while each is found whole, never its last token; what was found
// counts as prefill done and is reported (SeqProgress::cached_tokens, the report's prefix
// counters); the block accounting is the same as without a cache. The simulated engine has
// no cache: its cached tokens are what the resident contexts held.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "base/virtual_event_loop.h"
#include "executors/batching_engine.h"
#include "executors/simulated_engine.h"

namespace switchyard::executors {
namespace {

// A runner whose prefix cache holds the first `held[context]` positions of each context;
// its steps end at once (posted).
class CachingRunner final : public StepRunner {
 public:
  explicit CachingRunner(EventLoop* loop) : loop_(loop) {}
  std::string_view engine_name() const override { return "caching runner"; }
  bool computes() const override { return false; }
  bool caches_prefixes() const override { return true; }
  int64_t MatchPrefix(const std::string& context, int64_t from, int64_t to, int) override {
    calls.push_back(context + "[" + std::to_string(from) + "," + std::to_string(to) + ")");
    auto it = held.find(context);
    return it == held.end() ? from : std::max(from, std::min(to, it->second));
  }
  void Run(const StepShape&, std::vector<StepItem>*, std::function<void()> done) override {
    loop_->Post(std::move(done));
  }
  void Stop() override {}

  std::map<std::string, int64_t> held;
  std::vector<std::string> calls;

 private:
  EventLoop* loop_;
};

class ZeroCost final : public StepCostModel {
 public:
  std::string_view name() const override { return "zero"; }
  Duration StepTime(const StepShape&) const override { return Duration(0); }
};

EngineLimits PrefixLimits() {
  EngineLimits l;
  l.max_num_batched_tokens = 1000;
  l.block_tokens = 16;
  l.pool_blocks = 64;
  return l;
}

SequenceSpec Spec(const std::string& key, int64_t prefill, std::vector<SeqContext> contexts) {
  SequenceSpec s;
  s.key = key;
  s.prefill_tokens = prefill;
  s.max_output_tokens = 2;
  s.contexts = std::move(contexts);
  return s;
}

struct PrefixHarness {
  PrefixHarness() {
    auto r = std::make_unique<CachingRunner>(&loop);
    runner = r.get();
    engine = std::make_unique<BatchingEngine>(&loop, 0, PrefixLimits(), std::move(r));
    engine->SetListener([this](const StepReport& r) { reports.push_back(r); });
  }
  VirtualEventLoop loop;
  CachingRunner* runner = nullptr;
  std::unique_ptr<BatchingEngine> engine;
  std::vector<StepReport> reports;
};

TEST(BatchingPrefixTest, RebuiltContextsThenNewTokensMatchInOrderAndTheLastTokenIsComputed) {
  PrefixHarness h;
  h.runner->held = {{"wf/p", 1000}, {"wf/r", 1000}};
  // The stream: p [0, 32) rebuilt, r [0, 16) rebuilt, then 20 new tokens in p [32, 52).
  SequenceSpec s = Spec("wf/n", 68, {{"wf/p", 32, false}, {"wf/r", 16, false}});
  ASSERT_TRUE(h.engine->Admit(s).ok());
  EXPECT_EQ(h.runner->calls, (std::vector<std::string>{"wf/p[0,32)", "wf/r[0,16)", "wf/p[32,51)"}))
      << "the new tokens are matched up to the stream's last token, which is computed";
  EXPECT_EQ(h.engine->blocks_used(), 4 + 1) << "blocks for the whole prefill, as without a cache";
  h.loop.Run();
  ASSERT_GE(h.reports.size(), 1u);
  const StepReport& first = h.reports[0];
  EXPECT_EQ(first.prefill_tokens, 1) << "only the last token is computed";
  EXPECT_EQ(first.prefix_query_tokens, 68);
  EXPECT_EQ(first.prefix_hit_tokens, 67);
  ASSERT_EQ(first.seqs.size(), 1u);
  EXPECT_EQ(first.seqs[0].prefill_done, 68);
  EXPECT_EQ(first.seqs[0].output_done, 1) << "the step that ends the prefill emits";
  EXPECT_EQ(first.seqs[0].cached_tokens, 67);
  for (size_t i = 1; i < h.reports.size(); ++i) EXPECT_EQ(h.reports[i].prefix_query_tokens, 0);
}

TEST(BatchingPrefixTest, AContextNotFoundWholeStopsTheMatch) {
  PrefixHarness h;
  h.runner->held = {{"wf/p", 20}, {"wf/r", 1000}};
  SequenceSpec s = Spec("wf/n", 68, {{"wf/p", 32, false}, {"wf/r", 16, false}});
  ASSERT_TRUE(h.engine->Admit(s).ok());
  EXPECT_EQ(h.runner->calls, (std::vector<std::string>{"wf/p[0,32)"}));
  h.loop.Run();
  ASSERT_GE(h.reports.size(), 1u);
  EXPECT_EQ(h.reports[0].prefill_tokens, 48);
  EXPECT_EQ(h.reports[0].prefix_hit_tokens, 20);
  EXPECT_EQ(h.reports[0].seqs[0].cached_tokens, 20);
}

TEST(BatchingPrefixTest, AResidentPrimaryIsMatchedFromWhatItHoldsAndCountsAsCached) {
  PrefixHarness h;
  // A first call leaves 30 tokens (28 + 2 outputs) in wf/c.
  ASSERT_TRUE(h.engine->Admit(Spec("wf/n1", 28, {{"wf/c", 0, false}})).ok());
  h.loop.Run();
  ASSERT_EQ(h.engine->context_tokens("wf/c"), 30);
  h.runner->calls.clear();
  h.runner->held = {{"wf/c", 64}};
  h.reports.clear();
  ASSERT_TRUE(h.engine->Admit(Spec("wf/n2", 40, {{"wf/c", 30, true}})).ok());
  EXPECT_EQ(h.runner->calls, (std::vector<std::string>{"wf/c[30,69)"}));
  h.loop.Run();
  ASSERT_GE(h.reports.size(), 1u);
  EXPECT_EQ(h.reports[0].prefill_tokens, 40 - 34);
  EXPECT_EQ(h.reports[0].seqs[0].cached_tokens, 30 + 34) << "held + found";
  EXPECT_EQ(h.engine->context_tokens("wf/c"), 30 + 40 + 2);
}

TEST(BatchingPrefixTest, PreemptionKeepsWhatWasFoundAsComputed) {
  PrefixHarness h;
  h.runner->held = {{"wf/c", 32}};
  ASSERT_TRUE(h.engine->Admit(Spec("wf/n", 100, {{"wf/c", 0, false}})).ok());
  Result<SeqProgress> p = h.engine->Preempt("wf/n");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->prefill_done, 32);
  EXPECT_EQ(h.engine->context_tokens("wf/c"), 32) << "the found KV stays with the context";
}

TEST(BatchingPrefixTest, TheSimulatedEngineHasNoCacheAndCountsResidentTokens) {
  VirtualEventLoop loop;
  ZeroCost cost;
  SimulatedEngine e(&loop, 0, PrefixLimits(), &cost);
  std::vector<StepReport> reports;
  e.SetListener([&](const StepReport& r) { reports.push_back(r); });
  ASSERT_TRUE(e.Admit(Spec("wf/n1", 28, {{"wf/c", 0, false}})).ok());
  loop.Run();
  reports.clear();
  ASSERT_TRUE(e.Admit(Spec("wf/n2", 40, {{"wf/c", 30, true}})).ok());
  loop.Run();
  ASSERT_GE(reports.size(), 1u);
  EXPECT_EQ(reports[0].prefill_tokens, 40);
  EXPECT_EQ(reports[0].seqs[0].cached_tokens, 30);
  EXPECT_EQ(reports[0].prefix_query_tokens, 0);
  EXPECT_EQ(reports[0].prefix_hit_tokens, 0);
}

}  // namespace
}  // namespace switchyard::executors
