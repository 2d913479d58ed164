// Shared prefixes in the replay: the Mooncake sample's hash_ids give conversations and
// branches that start with the same prefix, so replaying it with sharing computes fewer
// prefill tokens than without (the engines' own count), with the HBM ledger intact; a trace
// without shared prefixes replays the same either way.
#include <gtest/gtest.h>

#include "proto/json.h"
#include "replay/cluster.h"
#include "replay/convert.h"
#include "replay/replay.h"
#include "replay/report.h"
#include "tests/replay/replay_test_util.h"

namespace switchyard::replay {
namespace {

using testing::ReadFixture;

PolicyReport Replay(const std::vector<v1::TraceRecord>& trace, bool shared,
                    const std::string& policy = "switchyard") {
  ReplayOptions o;
  o.shared_prefixes = shared;
  auto r = RunReplay(trace, DefaultCluster(), policy, o);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  EXPECT_EQ(r->completed, static_cast<int64_t>(trace.size())) << policy;
  EXPECT_EQ(r->ledger_violations, 0u) << r->ledger_first_violation;
  EXPECT_GT(r->ledger_checks, 0u);
  return *r;
}

TEST(ReplaySharedPrefix, MooncakeSampleComputesFewerPrefillTokensWithSharing) {
  auto trace = ConvertMooncake(ReadFixture("mooncake_conversation_sample.jsonl"), {});
  ASSERT_TRUE(trace.ok()) << trace.status();
  for (const std::string policy : {"switchyard", "vllm-fcfs"}) {
    PolicyReport with = Replay(*trace, true, policy);
    PolicyReport without = Replay(*trace, false, policy);
    EXPECT_TRUE(with.shared_prefixes);
    EXPECT_FALSE(without.shared_prefixes);
    EXPECT_GT(with.prefill_tokens_saved, 0u) << policy;
    EXPECT_GT(with.prefix_hits, 0u) << policy;
    EXPECT_EQ(without.prefill_tokens_saved, 0u) << policy;
    EXPECT_EQ(without.prefix_builds, 0u) << policy;
    EXPECT_LT(with.prefill_tokens, without.prefill_tokens) << policy;
    // Saved is what the run without computed on top: exactly, when neither run computed
    // anything twice (no preemption, retry or evicted prefix).
    if (with.preemptions + without.preemptions + with.retries + without.retries +
            with.prefix_evictions ==
        0)
      EXPECT_EQ(with.prefill_tokens + with.prefill_tokens_saved, without.prefill_tokens) << policy;
    else
      EXPECT_GE(with.prefill_tokens + with.prefill_tokens_saved, without.prefill_tokens) << policy;
    // The report carries both figures.
    std::string line = SummaryJsonLine(with);
    EXPECT_NE(line.find("\"prefill_tokens_saved\":" + std::to_string(with.prefill_tokens_saved)),
              std::string::npos);
    EXPECT_NE(line.find("\"shared_prefixes\":true"), std::string::npos);
  }
}

TEST(ReplaySharedPrefix, ATraceWithoutSharedPrefixesReplaysTheSameEitherWay) {
  ConvertOptions o;
  o.rate_per_s = 0.5;
  o.tenants = 2;
  o.seed = 7;
  auto trace = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  ASSERT_TRUE(trace.ok()) << trace.status();
  for (const v1::TraceRecord& r : *trace)
    for (const v1::ProgramNode& n : r.workflow().nodes())
      for (const v1::CacheRef& ref : n.cache_refs()) ASSERT_TRUE(ref.shared_prefix().empty());
  PolicyReport with = Replay(*trace, true);
  PolicyReport without = Replay(*trace, false);
  EXPECT_GT(with.prefill_tokens, 0u);
  EXPECT_EQ(with.prefill_tokens, without.prefill_tokens);
  EXPECT_EQ(with.prefill_tokens_saved, 0u);
  EXPECT_EQ(with.jct_s, without.jct_s);
  EXPECT_EQ(with.ttft_s, without.ttft_s);
}

}  // namespace
}  // namespace switchyard::replay
