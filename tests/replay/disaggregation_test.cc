// Disaggregation in the replay (--disaggregation, the pd2x4-h200-llama8b cluster: 2 prefill
// + 6 decode workers on 2 nodes): colocated ignores the roles; always prefills every call on
// a prefill worker and moves its KV to a decode worker over the simulated NVLink or NIC,
// with the HBM ledger and byte conservation intact; auto splits no more calls than always;
// the report carries the mode and what moved.
#include <gtest/gtest.h>

#include "replay/cluster.h"
#include "replay/convert.h"
#include "replay/replay.h"
#include "replay/report.h"
#include "tests/replay/replay_test_util.h"

namespace switchyard::replay {
namespace {

using scheduler::Disaggregation;
using testing::ReadFixture;

std::vector<v1::TraceRecord> PdSessions() {
  ConvertOptions o;
  o.rate_per_s = 1;  // the four sessions overlap
  auto trace = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? *trace : std::vector<v1::TraceRecord>{};
}

PolicyReport ReplayPd(const std::vector<v1::TraceRecord>& trace, Disaggregation mode) {
  auto cluster = LoadCluster("pd2x4-h200-llama8b", std::string(SY_SOURCE_DIR) + "/replay/clusters");
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  if (!cluster.ok()) return {};
  ReplayOptions o;
  o.disaggregation = mode;
  auto r = RunReplay(trace, *cluster, "switchyard", o);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  EXPECT_EQ(r->completed, static_cast<int64_t>(trace.size()));
  EXPECT_EQ(r->ledger_violations, 0u) << r->ledger_first_violation;
  EXPECT_TRUE(r->bytes_conserved);
  return *r;
}

TEST(ReplayDisaggregation, ModesRouteCallsAsNamedAndTheReportSaysWhatMoved) {
  std::vector<v1::TraceRecord> trace = PdSessions();
  ASSERT_FALSE(trace.empty());
  uint64_t llm_calls = 0;
  for (const v1::TraceRecord& rec : trace)
    for (const v1::ProgramNode& n : rec.workflow().nodes()) llm_calls += n.kind() == v1::LLM;

  PolicyReport colocated = ReplayPd(trace, Disaggregation::kColocated);
  EXPECT_EQ(colocated.disaggregation, "colocated");
  EXPECT_EQ(colocated.pd_calls, llm_calls);
  EXPECT_EQ(colocated.pd_disaggregated, 0u);
  EXPECT_EQ(colocated.pd_bytes_moved, 0u);

  PolicyReport always = ReplayPd(trace, Disaggregation::kAlways);
  EXPECT_EQ(always.pd_calls, llm_calls);
  EXPECT_EQ(always.pd_disaggregated, llm_calls);
  EXPECT_DOUBLE_EQ(always.pd_share, 1.0);
  // Every hand-off moved its context (NVLink or the NIC beat recomputing it) unless the call
  // ended in its prefill step; the moves are latency-class KV moves like any other.
  EXPECT_GT(always.pd_handoffs, 0u);
  EXPECT_LE(always.pd_handoffs, always.pd_disaggregated);
  EXPECT_EQ(always.pd_moves + always.pd_recomputed, always.pd_handoffs);
  EXPECT_GT(always.pd_bytes_moved, 0u);
  EXPECT_GE(always.bytes_moved_by_class["latency"], always.pd_bytes_moved);
  // A handoff is not a preemption.
  EXPECT_EQ(always.preemptions, colocated.preemptions);
  EXPECT_GT(always.tbt_p50_s, 0);

  PolicyReport automatic = ReplayPd(trace, Disaggregation::kAuto);
  EXPECT_EQ(automatic.pd_calls, llm_calls);
  EXPECT_LE(automatic.pd_disaggregated, always.pd_disaggregated);

  const std::string line = SummaryJsonLine(always);
  for (const std::string field : {"\"disaggregation\":\"always\"", "\"pd_share\":1",
                                  "\"pd_bytes_moved\":", "\"pd_handoffs\":", "\"tbt_p50_s\":"})
    EXPECT_NE(line.find(field), std::string::npos) << field;
}

}  // namespace
}  // namespace switchyard::replay
