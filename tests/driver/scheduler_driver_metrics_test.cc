// DriverMetrics (driver/scheduler_driver_metrics.h): engine-step histograms per worker,
// bytes per link and class of completed transfers only, grant-to-end time, first tokens
// taken once and bounded, prefix-cache tokens per worker.
#include "driver/scheduler_driver_metrics.h"

#include <gtest/gtest.h>

#include "executors/engine.h"

namespace switchyard::driver {
namespace {

const HistogramValue* Series(const HistogramSeries& h, const std::string& labels,
                             std::vector<std::pair<std::string, HistogramValue>>* keep) {
  *keep = h.Snapshot();
  for (const auto& [l, v] : *keep)
    if (l == labels) return &v;
  return nullptr;
}

executors::StepReport Step(int worker, int64_t start_ms, int64_t end_ms) {
  executors::StepReport r;
  r.worker = worker;
  r.start = Time::FromMillis(start_ms);
  r.end = Time::FromMillis(end_ms);
  r.prefill_tokens = 100;
  r.decode_seqs = 2;
  executors::SeqProgress a, b, c;
  a.key = "wf/a";
  a.output_done = 1;  // its first token
  b.key = "wf/b";
  b.output_done = 5;
  c.key = "wf/c";
  r.seqs = {a, b, c};
  return r;
}

TEST(DriverMetricsTest, StepsAreObservedPerWorker) {
  DriverMetrics m;
  m.OnStep(Step(1, 1000, 1020));
  std::vector<std::pair<std::string, HistogramValue>> keep;
  const HistogramValue* secs = Series(m.step_seconds(), "worker=\"1\"", &keep);
  ASSERT_NE(secs, nullptr);
  EXPECT_EQ(secs->count, 1u);
  EXPECT_NEAR(secs->sum, 0.020, 1e-9);
  const HistogramValue* batch = Series(m.step_batch_size(), "worker=\"1\"", &keep);
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ(batch->sum, 3);
  const HistogramValue* tokens = Series(m.step_tokens(), "worker=\"1\"", &keep);
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->sum, 102);  // 100 prefill + 2 decoded
}

TEST(DriverMetricsTest, PrefixCacheTokensAreCountedPerWorker) {
  DriverMetrics m;
  executors::StepReport r = Step(1, 1000, 1020);
  r.prefix_query_tokens = 100;
  r.prefix_hit_tokens = 64;
  m.OnStep(r);
  r.prefix_query_tokens = 10;
  r.prefix_hit_tokens = 0;
  m.OnStep(r);
  m.OnStep(Step(0, 1000, 1020));  // an engine without a prefix cache reports none
  const auto p = m.prefix_cache();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p.at(1).queries, 110u);
  EXPECT_EQ(p.at(1).hits, 64u);
}

TEST(DriverMetricsTest, FirstTokenIsTakenOnce) {
  DriverMetrics m;
  m.OnStep(Step(0, 1000, 1020));
  EXPECT_EQ(m.TakeFirstTokenMs("wf/a"), 1020);
  EXPECT_EQ(m.TakeFirstTokenMs("wf/a"), std::nullopt);
  EXPECT_EQ(m.TakeFirstTokenMs("wf/b"), std::nullopt);  // not its first token in this step
}

TEST(DriverMetricsTest, FirstTokensAreBounded) {
  DriverMetrics m;
  for (size_t i = 0; i < DriverMetrics::kMaxFirstTokens + 10; ++i) {
    executors::StepReport r = Step(0, int64_t(i), int64_t(i) + 1);
    r.seqs.resize(1);
    r.seqs[0].key = "wf/n" + std::to_string(i);
    m.OnStep(r);
  }
  EXPECT_EQ(m.TakeFirstTokenMs("wf/n0"), std::nullopt);  // the oldest aged out
  EXPECT_EQ(m.TakeFirstTokenMs("wf/n" + std::to_string(DriverMetrics::kMaxFirstTokens + 9)),
            int64_t(DriverMetrics::kMaxFirstTokens + 10));
}

TEST(DriverMetricsTest, TransfersCountBytesPerLinkAndTheirTime) {
  DriverMetrics m;
  m.OnTransferIssued(7, Time::FromMillis(1000));
  m.OnTransferIssued(8, Time::FromMillis(1000));
  m.OnTransferEnded(7, {0, 2}, /*cls=*/2, 4096, /*completed=*/true, Time::FromMillis(1250));
  m.OnTransferEnded(8, {0}, 2, 1 << 20, /*completed=*/false, Time::FromMillis(1100));
  auto bytes = m.link_bytes();
  EXPECT_EQ(bytes.size(), 2u);
  EXPECT_EQ((bytes[{0, 2}]), 4096u);  // the failed transfer moved nothing
  EXPECT_EQ((bytes[{2, 2}]), 4096u);
  std::vector<std::pair<std::string, HistogramValue>> keep;
  const HistogramValue* done =
      Series(m.transfer_seconds(), "class=\"background\",outcome=\"completed\"", &keep);
  ASSERT_NE(done, nullptr) << (keep.empty() ? "none" : keep[0].first);
  EXPECT_NEAR(done->sum, 0.25, 1e-9);
  const HistogramValue* failed =
      Series(m.transfer_seconds(), "class=\"background\",outcome=\"failed\"", &keep);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->count, 1u);
  // An end never granted here (unknown id) adds bytes but no time.
  m.OnTransferEnded(99, {1}, 0, 10, true, Time::FromMillis(2000));
  EXPECT_EQ((m.link_bytes()[{1, 0}]), 10u);
}

// A prefetch is a hit in its source tier; a placement that recomputes tokens is a miss
// (with its tokens); other commands count as neither.
TEST(DriverMetricsTest, KvHitsAndMissesFromCommands) {
  using scheduler::Command;
  using scheduler::CommandKind;
  DriverMetrics m;
  Command prefetch{.kind = CommandKind::kPrefetch};
  prefetch.src = {scheduler::Tier::kHost, 0};
  m.OnCommand(prefetch);
  prefetch.src = {scheduler::Tier::kDisk, 0};
  m.OnCommand(prefetch);
  m.OnCommand(prefetch);
  Command place{.kind = CommandKind::kPlace, .worker = 0};
  m.OnCommand(place);  // nothing to recompute: neither
  place.recompute_tokens = 1500;
  m.OnCommand(place);
  m.OnCommand(Command{.kind = CommandKind::kDemote});
  DriverMetrics::KvReuse r = m.kv_reuse();
  EXPECT_EQ(r.hits_by_tier, (std::map<std::string, uint64_t>{{"disk", 2}, {"host", 1}}));
  EXPECT_EQ(r.misses, 1u);
  EXPECT_EQ(r.recomputed_tokens, 1500u);
}

// Each granted move observes how long it waited for its link budget, by class; commands
// without a grant observe nothing.
TEST(DriverMetricsTest, GrantWaitIsObservedPerClass) {
  using scheduler::Command;
  using scheduler::CommandKind;
  DriverMetrics m;
  Command demote{.kind = CommandKind::kDemote};
  demote.grant = {.id = 1, .traffic_class = scheduler::TrafficClass::kBackground, .bytes = 8};
  m.OnCommand(demote);  // granted at the first ask
  demote.grant.id = 2;
  demote.grant_wait = Millis(300);
  m.OnCommand(demote);
  m.OnCommand(Command{.kind = CommandKind::kPlace, .worker = 0});
  std::vector<std::pair<std::string, HistogramValue>> keep;
  const HistogramValue* bg = Series(m.grant_wait_seconds(), "class=\"background\"", &keep);
  ASSERT_NE(bg, nullptr) << (keep.empty() ? "none" : keep[0].first);
  EXPECT_EQ(bg->count, 2u);
  EXPECT_NEAR(bg->sum, 0.3, 1e-9);
  EXPECT_EQ(keep.size(), 1u) << "the placement has no grant";
}

TEST(DriverMetricsTest, QueuedNodesIsTheLatest) {
  DriverMetrics m;
  m.SetQueuedNodes(5);
  m.SetQueuedNodes(3);
  EXPECT_EQ(m.queued_nodes(), 3u);
}

}  // namespace
}  // namespace switchyard::driver
