// The replay driver on small committed fixtures: determinism (same seed -> byte-identical
// report.json), conservation (every workflow ends, bytes moved = the sum over transfers,
// time never runs backwards), every policy on both trace kinds, and the sweep's retiming.
#include "replay/replay.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <set>

#include "base/virtual_event_loop.h"
#include "executors/stack.h"
#include "proto/json.h"
#include "replay/cluster.h"
#include "replay/convert.h"
#include "replay/report.h"
#include "replay/sweep.h"
#include "scheduler/reference_policies.h"
#include "tests/replay/replay_test_util.h"

namespace switchyard::replay {
namespace {

using testing::ReadFixture;

std::vector<v1::TraceRecord> Sessions(double rate, int repeat) {
  ConvertOptions o;
  o.rate_per_s = rate;
  o.repeat = repeat;
  o.tenants = 2;
  o.seed = 7;
  auto recs = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  EXPECT_TRUE(recs.ok()) << recs.status();
  return recs.ok() ? *recs : std::vector<v1::TraceRecord>{};
}

std::vector<v1::TraceRecord> Mooncake(int limit) {
  ConvertOptions o;
  o.limit = limit;
  auto recs = ConvertMooncake(ReadFixture("mooncake_conversation_sample.jsonl"), o);
  EXPECT_TRUE(recs.ok()) << recs.status();
  return recs.ok() ? *recs : std::vector<v1::TraceRecord>{};
}

// A small, tight cluster: 2 workers of an 8B model with ~9 GB of KV each, so contexts
// compete for HBM and policies must evict, demote or recompute.
v1::ReplayCluster Tight() {
  v1::ReplayCluster c = DefaultCluster();
  c.set_name("tight");
  c.set_gpus_per_node(2);
  c.set_max_num_seqs(8);
  c.mutable_gpu()->set_hbm_bytes(28'000'000'000ULL);
  return c;
}

TEST(Replay, SameSeedGivesByteIdenticalReport) {
  std::vector<v1::TraceRecord> t = Sessions(0.5, 2);
  ReportMeta meta{"fixture", "tight", "", 3, ""};
  std::string a, b;
  for (std::string* out : {&a, &b}) {
    std::vector<PolicyReport> runs;
    for (const char* p : {"switchyard", "vllm-fcfs"}) {
      ReplayOptions o;
      o.seed = 3;
      auto r = RunReplay(t, Tight(), p, o);
      ASSERT_TRUE(r.ok()) << r.status();
      runs.push_back(std::move(*r));
    }
    *out = ReportJson(meta, runs);
  }
  EXPECT_EQ(a, b);
  EXPECT_GT(a.size(), 1000u);
}

void ExpectConserved(const PolicyReport& r, size_t workflows) {
  SCOPED_TRACE(r.policy);
  EXPECT_EQ(r.workflows, static_cast<int64_t>(workflows));
  EXPECT_EQ(r.unfinished, 0);
  EXPECT_EQ(r.completed + r.failed, r.workflows);
  EXPECT_TRUE(r.time_monotonic);
  EXPECT_TRUE(r.bytes_conserved);
  // The HBM ledger held at every event: engine blocks == the core's accounting.
  EXPECT_GT(r.ledger_checks, 0u);
  EXPECT_EQ(r.ledger_violations, 0u) << r.ledger_first_violation;
  uint64_t by_class = 0, by_link = 0;
  for (const auto& [c, b] : r.bytes_moved_by_class) by_class += b;
  for (const auto& [l, b] : r.bytes_moved_by_link) by_link += b;
  // Every granted transfer crosses at least one link; links count granted bytes.
  EXPECT_GE(by_link, by_class);
  EXPECT_EQ(r.jct_s.size(), static_cast<size_t>(r.completed));
  EXPECT_TRUE(std::is_sorted(r.jct_s.begin(), r.jct_s.end()));
  EXPECT_GE(r.hbm_util_mean, 0.0);
  EXPECT_LE(r.hbm_util_mean, 1.0);
  for (double v : r.hbm_util.values) EXPECT_LE(v, 1.0 + 1e-9);
  double series_bytes = 0;
  for (const auto& [name, s] : r.link_bytes)
    for (double v : s.values) series_bytes += v;
  EXPECT_DOUBLE_EQ(series_bytes, static_cast<double>(by_link));
  EXPECT_GT(r.events, 0u);
}

TEST(Replay, EveryPolicyEndsEveryWorkflowAndConservesBytes) {
  std::vector<v1::TraceRecord> sessions = Sessions(0.5, 2);
  std::vector<v1::TraceRecord> chats = Mooncake(120);
  uint64_t moved_any = 0;
  for (std::string_view p : scheduler::PolicyNames()) {
    for (const auto* t : {&sessions, &chats}) {
      auto r = RunReplay(*t, Tight(), std::string(p), {});
      ASSERT_TRUE(r.ok()) << p << ": " << r.status();
      ExpectConserved(*r, t->size());
      for (const auto& [c, b] : r->bytes_moved_by_class) moved_any += b;
      EXPECT_GT(r->completed, 0) << p;
      EXPECT_GT(r->ttft_s.size(), 0u) << p;
    }
  }
  EXPECT_GT(moved_any, 0u) << "the tight cluster should make some policy move KV";
}

TEST(Replay, UnloadedJobsTakeAboutTheirOwnServiceTime) {
  // One session alone on a big cluster: JCT >= the sum of its recorded tool time on the
  // critical path, and nothing is recomputed or moved.
  std::vector<v1::TraceRecord> t = Sessions(0.001, 1);
  t.resize(1);
  auto r = RunReplay(t, DefaultCluster(), "switchyard", {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->completed, 1);
  EXPECT_EQ(r->recompute_tokens, 0u);
  EXPECT_EQ(r->transfers, 0u);
  EXPECT_EQ(r->deadline_miss_rate, 0.0);
  EXPECT_GT(r->jct_mean_s, 1.0);
}

// A shared harness preamble is computed once per worker and reused by every session there.
TEST(Replay, ASharedPreambleIsPrefilledOncePerWorker) {
  ConvertOptions o;
  o.rate_per_s = 0.05;
  o.repeat = 2;
  o.seed = 7;
  const std::string text = ReadFixture("agent_sessions_sample.jsonl");
  auto plain = ConvertAgentSessions(text, o);
  o.shared_preamble_tokens = 8000;
  auto preamble = ConvertAgentSessions(text, o);
  ASSERT_TRUE(plain.ok() && preamble.ok());
  auto a = RunReplay(*plain, DefaultCluster(), "switchyard", {});
  auto b = RunReplay(*preamble, DefaultCluster(), "switchyard", {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->prefix_hits, 0u);
  EXPECT_GT(b->prefix_hits, 0u);
  EXPECT_GT(b->prefill_tokens_saved, 0u);
  EXPECT_LT(b->prefill_tokens, a->prefill_tokens);
}

// The oracle needs the recorded future only a replay has: a stack without it (serve's) is
// refused, naming the policy and where it runs.
TEST(Replay, TheOracleIsRefusedWithoutARecordedFuture) {
  executors::StackSpec spec;
  spec.policy = "oracle";
  VirtualEventLoop loop;
  auto s = executors::BuildStack(spec, &loop);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("oracle"), std::string::npos) << s.status();
  EXPECT_NE(s.status().message().find("replay"), std::string::npos) << s.status();
}

// Each record carries its session's recorded tool time and LLM calls, as the trace holds
// them; alone on the cluster, its JCT is at least that tool time.
TEST(Replay, RecordsCarryToolTimeAndLlmCalls) {
  std::vector<v1::TraceRecord> t = Sessions(0.001, 1);
  auto r = RunReplay(t, DefaultCluster(), "switchyard", {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->workflow_records.size(), t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    int64_t llm = 0, tool_ms = 0;
    std::set<std::string> tools;
    for (const auto& n : t[i].workflow().nodes()) {
      llm += n.kind() == v1::LLM ? 1 : 0;
      if (n.kind() == v1::TOOL) tools.insert(n.id());
    }
    for (const auto& a : t[i].actuals()) tool_ms += tools.count(a.node_id()) ? a.duration_ms() : 0;
    const WorkflowRecord& w = r->workflow_records[i];
    EXPECT_EQ(w.llm_calls, llm) << w.id;
    EXPECT_DOUBLE_EQ(w.tool_s, static_cast<double>(tool_ms) / 1e3) << w.id;
    EXPECT_GT(w.llm_calls, 0) << w.id;
    EXPECT_GT(w.tool_s, 0) << w.id << ": the fixture's sessions run tools";
  }
}

// Replays `t` under switchyard on the default cluster (`base`) and on it with `tweak`
// applied (`tweaked`); every workflow of the tweaked run completes, in the same order.
void ReplayWithAndWithout(const std::vector<v1::TraceRecord>& t,
                          const std::function<void(v1::ReplayCluster*)>& tweak,
                          std::optional<PolicyReport>* base, std::optional<PolicyReport>* tweaked) {
  v1::ReplayCluster c = DefaultCluster();
  auto b = RunReplay(t, c, "switchyard", ReplayOptions{});
  ASSERT_TRUE(b.ok()) << b.status();
  tweak(&c);
  auto s = RunReplay(t, c, "switchyard", ReplayOptions{});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->completed, s->workflows);
  ASSERT_EQ(b->workflow_records.size(), s->workflow_records.size());
  *base = std::move(*b);
  *tweaked = std::move(*s);
}

// ReplayCluster.call_overhead_s delays every revealed batch (an agent's next call and its
// tools) by that much after its predecessor: on an uncontended cluster each workflow ends
// later by up to the overhead times its reveals (at least half of that on these chains).
TEST(Replay, CallOverheadDelaysEveryRevealedCall) {
  std::vector<v1::TraceRecord> t = Sessions(0.05, 1);
  ASSERT_FALSE(t.empty());
  std::optional<PolicyReport> base, slow;
  ASSERT_NO_FATAL_FAILURE(ReplayWithAndWithout(
      t, [](v1::ReplayCluster* c) { c->set_call_overhead_s(0.25); }, &base, &slow));
  for (size_t i = 0; i < t.size(); ++i) {
    // The reveals in a chain: every distinct revealed_after of the record (agent sessions
    // reveal each call after the previous call).
    std::set<std::string> triggers;
    for (const v1::NodeActual& a : t[i].actuals())
      if (!a.revealed_after().empty()) triggers.insert(a.revealed_after());
    ASSERT_FALSE(triggers.empty());
    const WorkflowRecord& b = base->workflow_records[i];
    const WorkflowRecord& s = slow->workflow_records[i];
    ASSERT_EQ(b.id, s.id);
    double added = (s.end_s - s.arrival_s) - (b.end_s - b.arrival_s);
    double want = 0.25 * static_cast<double>(triggers.size());
    // At most once per reveal (some reveals are off the critical path), at least half.
    EXPECT_LE(added, want + 0.05) << b.id << ": " << triggers.size() << " reveals";
    EXPECT_GE(added, 0.5 * want) << b.id << ": " << triggers.size() << " reveals";
  }
  EXPECT_EQ(slow->ttft_s.size(), base->ttft_s.size());
  // Calls after a tool: ready when the (delayed) tool ends, their TTFT unchanged; calls
  // with no tool before them wait for the overhead.
  double ttft_base = 0, ttft_slow = 0;
  for (double v : base->ttft_s) ttft_base += v;
  for (double v : slow->ttft_s) ttft_slow += v;
  EXPECT_GT(ttft_slow, ttft_base + 0.2);
}

// ReplayCluster.tool_overhead_s lengthens every tool wait by that much: on an uncontended
// cluster a workflow ends later by the overhead once per call that waits on tools (its
// tools run in parallel) and never by more than once per tool.
TEST(Replay, ToolOverheadLengthensEveryToolWait) {
  std::vector<v1::TraceRecord> t = Sessions(0.05, 1);
  ASSERT_FALSE(t.empty());
  std::optional<PolicyReport> base, slow;
  ASSERT_NO_FATAL_FAILURE(ReplayWithAndWithout(
      t, [](v1::ReplayCluster* c) { c->set_tool_overhead_s(0.2); }, &base, &slow));
  for (size_t i = 0; i < t.size(); ++i) {
    std::set<std::string> tools, gated;  // tools, and the calls that wait on one
    for (const v1::ProgramNode& n : t[i].workflow().nodes()) {
      if (n.kind() == v1::TOOL) tools.insert(n.id());
    }
    for (const v1::ProgramNode& n : t[i].workflow().nodes())
      for (const std::string& d : n.deps())
        if (n.kind() == v1::LLM && tools.count(d)) gated.insert(n.id());
    const WorkflowRecord& b = base->workflow_records[i];
    const WorkflowRecord& s = slow->workflow_records[i];
    ASSERT_EQ(b.id, s.id);
    double added = (s.end_s - s.arrival_s) - (b.end_s - b.arrival_s);
    EXPECT_LE(added, 0.2 * static_cast<double>(tools.size()) + 0.05) << b.id;
    EXPECT_GE(added, 0.2 * static_cast<double>(gated.size()) - 0.05) << b.id;
  }
}

TEST(Replay, RejectsUnknownPolicyAndBadCluster) {
  std::vector<v1::TraceRecord> t = Sessions(0.5, 1);
  auto r = RunReplay(t, DefaultCluster(), "fifo", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown policy 'fifo'"), std::string::npos);
  v1::ReplayCluster c = DefaultCluster();
  c.set_admission_watermark(0.7);
  r = RunReplay(t, c, "switchyard", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("admissionWatermark"), std::string::npos);
}

TEST(Replay, PercentileIsNearestRank) {
  std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(Percentile(v, 50), 5);
  EXPECT_EQ(Percentile(v, 99), 10);
  EXPECT_EQ(Percentile(v, 0), 1);
  EXPECT_EQ(Percentile({}, 50), 0);
}

TEST(Sweep, RetimeKeepsDeadlinesRelativeAndHitsTheRate) {
  std::vector<v1::TraceRecord> t = Sessions(0.05, 10);
  ASSERT_EQ(t.size(), 40u);
  for (RetimeMode m : {RetimeMode::kPoisson, RetimeMode::kGamma, RetimeMode::kScale}) {
    std::vector<v1::TraceRecord> r = Retime(t, 2.0, m, 5, /*cv=*/3.0);
    ASSERT_EQ(r.size(), t.size());
    std::map<std::string, int64_t> slack;
    for (const auto& x : t) slack[x.workflow().id()] = x.workflow().deadline_ms() - x.arrival_ms();
    for (size_t i = 0; i < r.size(); ++i) {
      EXPECT_EQ(r[i].workflow().deadline_ms() - r[i].arrival_ms(), slack[r[i].workflow().id()]);
      EXPECT_EQ(r[i].workflow().arrival_ms(), r[i].arrival_ms());
      if (i) {
        EXPECT_LE(r[i - 1].arrival_ms(), r[i].arrival_ms());
      }
    }
    // Gamma gaps of CV 3 over 39 gaps: the mean rate is checked over 40,000 draws
    // (SynthesiseArrivalsTest), not here.
    if (m == RetimeMode::kGamma) continue;
    double rate = TraceRate(r);
    EXPECT_NEAR(rate, 2.0, m == RetimeMode::kScale ? 0.01 : 1.0);
  }
}

TEST(Sweep, RunsEveryCellAndStatesTheGoal) {
  std::vector<v1::TraceRecord> t = Sessions(0.05, 1);
  SweepOptions o;
  auto s = RunSweep(t, Tight(), {0.01, 1.0}, {"switchyard", "vllm-fcfs"}, o, "fixture");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->cells.size(), 4u);
  EXPECT_EQ(s->cells[0].rate_per_s, 0.01);
  EXPECT_EQ(s->cells[3].report.policy, "vllm-fcfs");
  std::string table = SweepTable(*s);
  EXPECT_NE(table.find("vllm-fcfs"), std::string::npos);
  std::string verdict = GoalVerdict(*s);
  EXPECT_NE(verdict.find("rate 0.01"), std::string::npos);
  EXPECT_NE(verdict.find("rate 1"), std::string::npos);
  std::string html = SweepHtml({*s}, "switchyard sweep ...");
  EXPECT_NE(html.find("P99 JCT vs load"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::replay
