// Converters on the committed fixtures (tests/fixtures/README.md): counts, chain
// reconstruction and exact preservation of durations and token counts. Expected figures
// were computed independently from the fixture files.
#include "replay/convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "proto/json.h"
#include "proto/switchyard/v1/trace_sources.pb.h"
#include "tests/replay/replay_test_util.h"

namespace switchyard::replay {
namespace {

using testing::ReadFixture;

const v1::NodeActual* ActualOf(const v1::TraceRecord& r, const std::string& node) {
  for (const auto& a : r.actuals()) {
    if (a.node_id() == node) return &a;
  }
  return nullptr;
}

const v1::ProgramNode* NodeOf(const v1::TraceRecord& r, const std::string& node) {
  for (const auto& n : r.workflow().nodes()) {
    if (n.id() == node) return &n;
  }
  return nullptr;
}

// --think-time: a user request before about one call in think_every, after a log-normal
// think time (a "human" tool node between the previous call with its tools and the call).
TEST(ConvertAgentSessionsTest, ThinkTimePutsAHumanBetweenSomeCalls) {
  const std::string text = ReadFixture("agent_sessions_sample.jsonl");
  ConvertOptions o;
  o.repeat = 20;
  auto plain = ConvertAgentSessions(text, o);
  o.think_time_s = 60;
  auto human = ConvertAgentSessions(text, o);
  auto again = ConvertAgentSessions(text, o);
  ASSERT_TRUE(plain.ok() && human.ok() && again.ok());
  int64_t calls = 0, thinks = 0;
  std::vector<double> seconds;
  for (size_t r = 0; r < human->size(); ++r) {
    const v1::TraceRecord& rec = (*human)[r];
    std::map<std::string, const v1::ProgramNode*> nodes;
    for (const auto& n : rec.workflow().nodes()) nodes[n.id()] = &n;
    for (const auto& [id, n] : nodes) {
      if (n->kind() == v1::LLM && id != "llm-0") ++calls;
      if (id.rfind("think-", 0) != 0) continue;
      ++thinks;
      EXPECT_EQ(n->kind(), v1::TOOL);
      EXPECT_EQ(n->tool_name(), "human");
      const std::string i = id.substr(6);
      EXPECT_EQ(n->deps(0), "llm-" + std::to_string(std::stoi(i) - 1)) << "after the call before";
      const v1::ProgramNode* call = nodes.at("llm-" + i);
      EXPECT_NE(std::find(call->deps().begin(), call->deps().end(), id), call->deps().end())
          << "the call waits for its request";
    }
    for (const auto& a : rec.actuals())
      if (a.node_id().rfind("think-", 0) == 0) seconds.push_back(a.duration_ms() / 1e3);
    int here = 0;
    for (const auto& [id, n] : nodes) here += id.rfind("think-", 0) == 0 ? 1 : 0;
    EXPECT_EQ(rec.workflow().nodes_size(), (*plain)[r].workflow().nodes_size() + here)
        << "the think nodes are all that is added";
  }
  ASSERT_GT(calls, 1000);
  const double share = static_cast<double>(thinks) / static_cast<double>(calls);
  EXPECT_GT(share, 0.08) << thinks << " of " << calls;
  EXPECT_LT(share, 0.17) << thinks << " of " << calls;
  ASSERT_EQ(seconds.size(), static_cast<size_t>(thinks));
  std::sort(seconds.begin(), seconds.end());
  EXPECT_GT(seconds[seconds.size() / 2], 40) << "the median is the one asked for";
  EXPECT_LT(seconds[seconds.size() / 2], 90);
  EXPECT_GT(seconds.back(), 600) << "heavy-tailed";
  ASSERT_EQ(human->size(), again->size());
  auto thinks_of = [](const v1::TraceRecord& rec) {
    std::vector<std::pair<std::string, int64_t>> out;
    for (const auto& a : rec.actuals())
      if (a.node_id().rfind("think-", 0) == 0) out.emplace_back(a.node_id(), a.duration_ms());
    return out;
  };
  for (size_t r = 0; r < human->size(); ++r)
    EXPECT_EQ(thinks_of((*human)[r]), thinks_of((*again)[r])) << "seeded";
  for (const auto& rec : *plain)
    for (const auto& n : rec.workflow().nodes()) EXPECT_NE(n.tool_name(), "human");
}

// --shared-preamble: every context a session creates starts with the same tokens, a
// tenant-wide shared prefix; the contexts it extends name none.
TEST(ConvertAgentSessionsTest, SharedPreambleStartsEveryCreatedContext) {
  ConvertOptions o;
  o.shared_preamble_tokens = 13000;
  auto recs = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  ASSERT_TRUE(recs.ok()) << recs.status();
  int created = 0;
  for (const auto& rec : *recs) {
    EXPECT_EQ(rec.workflow().labels().at("shared_preamble"), "13000");
    for (const auto& n : rec.workflow().nodes()) {
      if (n.kind() != v1::LLM) continue;
      const v1::CacheRef& ref = n.cache_refs(0);
      if (ref.mode() == v1::CacheRef::CREATE) {
        ++created;
        EXPECT_EQ(ref.shared_prefix(), "agent-preamble") << n.id();
        EXPECT_EQ(ref.shared_prefix_tokens(), std::min<int64_t>(13000, n.hints().prompt_tokens()));
      } else {
        EXPECT_TRUE(ref.shared_prefix().empty()) << n.id();
      }
    }
  }
  EXPECT_GE(created, static_cast<int>(recs->size()));
}

TEST(ConvertAgentSessionsTest, CountsAndExactDurations) {
  ConvertOptions o;
  o.rate_per_s = 0.1;
  auto recs = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  ASSERT_TRUE(recs.ok()) << recs.status();
  ASSERT_EQ(recs->size(), 4u);
  std::map<std::string, std::pair<int, int>> expected = {{"46c4e6b23c25", {9, 8}},
                                                         {"657e7b640d49", {48, 57}},
                                                         {"58401c0ee559", {9, 9}},
                                                         {"180179e7eb4d", {16, 17}}};
  // Each session's source line, to compare durations and tokens one by one.
  std::map<std::string, v1::AgentSessionRecord> src;
  std::string text = ReadFixture("agent_sessions_sample.jsonl");
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    v1::AgentSessionRecord s;
    ASSERT_TRUE(proto::ParseJson(text.substr(pos, end - pos), &s).ok());
    src[s.session()] = s;
    pos = end + 1;
  }
  for (const auto& r : *recs) {
    std::string session = r.source().substr(std::string("agent-sessions:").size());
    ASSERT_TRUE(expected.count(session)) << session;
    const auto& s = src[session];
    int llm = 0, tool = 0;
    for (const auto& n : r.workflow().nodes()) (n.kind() == v1::LLM ? llm : tool)++;
    EXPECT_EQ(llm, expected[session].first) << session;
    EXPECT_EQ(tool, expected[session].second) << session;
    for (int j = 0; j < s.tool_calls_size(); ++j) {
      const auto* a = ActualOf(r, "tool-" + std::to_string(j));
      ASSERT_NE(a, nullptr);
      EXPECT_EQ(a->duration_ms(), std::llround(s.tool_calls(j).dur_s() * 1000)) << j;
      EXPECT_EQ(NodeOf(r, "tool-" + std::to_string(j))->tool_name(), s.tool_calls(j).tool());
    }
    for (int i = 0; i < s.llm_calls_size(); ++i) {
      const auto* n = NodeOf(r, "llm-" + std::to_string(i));
      ASSERT_NE(n, nullptr);
      EXPECT_EQ(n->hints().prompt_tokens(), s.llm_calls(i).prompt_tokens());
      EXPECT_EQ(ActualOf(r, n->id())->output_tokens(), s.llm_calls(i).output_tokens());
      if (i > 0) {
        EXPECT_EQ(ActualOf(r, n->id())->revealed_after(), "llm-" + std::to_string(i - 1));
      }
    }
  }
}

TEST(ConvertAgentSessionsTest, ChainsContextsAndSubagents) {
  auto recs = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), {});
  ASSERT_TRUE(recs.ok());
  for (const auto& r : *recs) {
    const auto& nodes = r.workflow().nodes();
    EXPECT_EQ(nodes[0].cache_refs(0).mode(), v1::CacheRef::CREATE);
    EXPECT_EQ(nodes[0].cache_refs(0).context(), "main");
    std::set<std::string> created;
    for (const auto& n : nodes) {
      if (n.kind() != v1::LLM) continue;
      const auto& ref = n.cache_refs(0);
      if (ref.mode() == v1::CacheRef::CREATE) {
        EXPECT_TRUE(created.insert(ref.context()).second) << ref.context();
      } else {
        EXPECT_TRUE(created.count(ref.context())) << "extends before create: " << n.id();
        EXPECT_GE(n.hints().extend_tokens(), 0);
      }
      if (n.id() != "llm-0") {
        EXPECT_GE(n.deps_size(), 1) << n.id();
      }
    }
    if (r.source() == "agent-sessions:657e7b640d49") {
      EXPECT_TRUE(created.count("subagent-0")) << "subagent calls use their own context";
    }
  }
}

// A prompt that repeats the previous prompt but not all of its answer continues the context
// from the previous prompt (keep_tokens) by default, and starts a new context with
// --context-reuse exact. Session 58401c0ee559's calls, from the fixture (prompt, output):
// llm-0 13681+327, llm-1 13936 (keeps 13681, +255), llm-2 13981 (keeps 13936, +45), llm-3
// 21281 (holds 13981+35: extends by 7265), llm-4 21530 (keeps 21281, +249).
TEST(ConvertAgentSessionsTest, APromptRepeatingOnlyThePreviousPromptKeepsThatPrefix) {
  const std::string text = ReadFixture("agent_sessions_sample.jsonl");
  auto find = [](const std::vector<v1::TraceRecord>& recs) -> const v1::TraceRecord* {
    for (const auto& r : recs)
      if (r.source() == "agent-sessions:58401c0ee559") return &r;
    return nullptr;
  };
  auto reuse = ConvertAgentSessions(text, {});
  ASSERT_TRUE(reuse.ok()) << reuse.status();
  const v1::TraceRecord* r = find(*reuse);
  ASSERT_NE(r, nullptr);
  struct Want {
    const char* node;
    v1::CacheRef::Mode mode;
    int64_t keep, extend;
  };
  for (const Want& w : {Want{"llm-0", v1::CacheRef::CREATE, 0, 13681},
                        Want{"llm-1", v1::CacheRef::EXTEND, 13681, 255},
                        Want{"llm-2", v1::CacheRef::EXTEND, 13936, 45},
                        Want{"llm-3", v1::CacheRef::EXTEND, 0, 7265},
                        Want{"llm-4", v1::CacheRef::EXTEND, 21281, 249}}) {
    const v1::ProgramNode* n = NodeOf(*r, w.node);
    ASSERT_NE(n, nullptr) << w.node;
    EXPECT_EQ(n->cache_refs(0).context(), "main") << w.node;
    EXPECT_EQ(n->cache_refs(0).mode(), w.mode) << w.node;
    EXPECT_EQ(n->cache_refs(0).keep_tokens(), w.keep) << w.node;
    EXPECT_EQ(n->hints().extend_tokens(), w.extend) << w.node;
  }
  ConvertOptions exact;
  exact.prefix_reuse = false;
  auto fresh = ConvertAgentSessions(text, exact);
  ASSERT_TRUE(fresh.ok());
  r = find(*fresh);
  ASSERT_NE(r, nullptr);
  const v1::ProgramNode* n1 = NodeOf(*r, "llm-1");
  EXPECT_EQ(n1->cache_refs(0).context(), "main-1");
  EXPECT_EQ(n1->cache_refs(0).mode(), v1::CacheRef::CREATE);
  EXPECT_EQ(n1->cache_refs(0).keep_tokens(), 0);
  EXPECT_EQ(n1->hints().extend_tokens(), 13936);
  // Every kept prefix is the previous call's prompt, never more than the context holds.
  for (const auto& rec : *reuse)
    for (const auto& n : rec.workflow().nodes())
      if (n.kind() == v1::LLM && n.cache_refs(0).keep_tokens() > 0) {
        EXPECT_LT(n.cache_refs(0).keep_tokens(), n.hints().prompt_tokens()) << n.id();
      }
}

// The cap a call's hints carry does not give its recorded output away: by default every
// LLM node's max_output_tokens is max(16384, the recorded output) (labelled output_cap);
// --output-cap recorded makes it the recorded output, which the actuals keep either way.
TEST(ConvertAgentSessionsTest, TheOutputCapHidesTheRecordedLengthUnlessAskedFor) {
  const std::string text = ReadFixture("agent_sessions_sample.jsonl");
  auto hidden = ConvertAgentSessions(text, {});
  ASSERT_TRUE(hidden.ok());
  ConvertOptions o;
  o.output_cap = 0;
  auto recorded = ConvertAgentSessions(text, o);
  ASSERT_TRUE(recorded.ok());
  ASSERT_EQ(hidden->size(), recorded->size());
  int llm = 0;
  for (size_t i = 0; i < hidden->size(); ++i) {
    const v1::TraceRecord& h = (*hidden)[i];
    EXPECT_EQ(h.workflow().labels().at("output_cap"), "16384");
    EXPECT_FALSE((*recorded)[i].workflow().labels().contains("output_cap"));
    for (const auto& n : h.workflow().nodes()) {
      if (n.kind() != v1::LLM) continue;
      ++llm;
      const int64_t out = ActualOf(h, n.id())->output_tokens();
      EXPECT_EQ(n.hints().max_output_tokens(), std::max<int64_t>(16384, out)) << n.id();
      EXPECT_EQ(NodeOf((*recorded)[i], n.id())->hints().max_output_tokens(),
                std::max<int64_t>(1, out))
          << n.id();
    }
  }
  EXPECT_EQ(llm, 82);
}

TEST(ConvertAgentSessionsTest, ArrivalsDeadlinesTenantsAndDeterminism) {
  ConvertOptions o;
  o.rate_per_s = 0.5;
  o.seed = 7;
  o.repeat = 5;
  o.tenants = 2;
  o.deadline = DeadlineRule::kOracleSpan;
  o.deadline_factor = 2.0;
  auto a = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  auto b = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), 20u);
  EXPECT_EQ(*ToJsonLines(*a), *ToJsonLines(*b)) << "same seed, same trace";
  std::set<std::string> tenants, ids;
  for (size_t i = 0; i < a->size(); ++i) {
    const auto& r = (*a)[i];
    if (i > 0) {
      EXPECT_GE(r.arrival_ms(), (*a)[i - 1].arrival_ms());
    }
    tenants.insert(r.workflow().tenant());
    EXPECT_TRUE(ids.insert(r.workflow().id()).second);
    if (r.source() == "agent-sessions:46c4e6b23c25") {  // span 49.86 s
      EXPECT_EQ(r.workflow().deadline_ms() - r.arrival_ms(), 99720);
    }
    EXPECT_EQ(r.workflow().labels().at("deadline_rule"), "oracle-span:2");
    EXPECT_EQ(r.workflow().labels().at("output_cap"), "16384");
    EXPECT_EQ(r.workflow().labels().size(), 2u);  // ToJsonLines sorts them (same text twice)
  }
  EXPECT_EQ(tenants, (std::set<std::string>{"tenant-0", "tenant-1"}));
  o.seed = 8;
  auto c = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  EXPECT_NE(*ToJsonLines(*a), *ToJsonLines(*c));
}

TEST(ConvertAgentSessionsTest, DefaultDeadlinesArePerTenantClassesNotSize) {
  ConvertOptions o;
  o.repeat = 3;
  o.tenants = 3;
  auto recs = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  ASSERT_TRUE(recs.ok()) << recs.status();
  ASSERT_EQ(recs->size(), 12u);
  // tenant-<i> -> class i mod 2: tenant-0 and tenant-2 interactive (900 s), tenant-1 batch.
  std::map<std::string, int64_t> slack = {
      {"tenant-0", 900'000}, {"tenant-1", 10'800'000}, {"tenant-2", 900'000}};
  std::map<std::string, std::string> label = {{"tenant-0", "class:interactive"},
                                              {"tenant-1", "class:batch"},
                                              {"tenant-2", "class:interactive"}};
  for (const auto& r : *recs) {
    const std::string& t = r.workflow().tenant();
    ASSERT_TRUE(slack.count(t)) << t;
    EXPECT_EQ(r.workflow().deadline_ms() - r.arrival_ms(), slack[t]) << r.workflow().id();
    EXPECT_EQ(r.workflow().labels().at("deadline_rule"), label[t]);
    EXPECT_EQ(r.workflow().labels().size(), 2u);  // and output_cap
  }
  // An explicit mapping wins over the rule; three classes rotate over the tenants.
  o.deadline_classes = {{"a", 60}, {"b", 120}, {"c", 180}};
  o.tenant_class = {{"tenant-2", "a"}};
  recs = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  ASSERT_TRUE(recs.ok()) << recs.status();
  for (const auto& r : *recs) {
    int64_t expect = r.workflow().tenant() == "tenant-1" ? 120'000 : 60'000;
    EXPECT_EQ(r.workflow().deadline_ms() - r.arrival_ms(), expect) << r.workflow().tenant();
  }
  o.tenant_class = {{"tenant-0", "nope"}};
  recs = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  ASSERT_FALSE(recs.ok());
  EXPECT_NE(recs.status().message().find("--tenant-class: tenant 'tenant-0' has class 'nope'"),
            std::string::npos)
      << recs.status();
  // --deadline none: no deadline, no deadline label (the output cap's only).
  o = ConvertOptions{};
  o.deadline = DeadlineRule::kNone;
  recs = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  ASSERT_TRUE(recs.ok());
  for (const auto& r : *recs) {
    EXPECT_EQ(r.workflow().deadline_ms(), 0);
    EXPECT_FALSE(r.workflow().labels().contains("deadline_rule"));
    EXPECT_EQ(r.workflow().labels().size(), 1u);
  }
}

TEST(DeadlineOptionsTest, ClassForTenantAndParsing) {
  ConvertOptions o;
  EXPECT_EQ(*DeadlineClassFor("tenant-0", o), 0u);
  EXPECT_EQ(*DeadlineClassFor("tenant-1", o), 1u);
  EXPECT_EQ(*DeadlineClassFor("tenant-7", o), 1u);
  EXPECT_EQ(*DeadlineClassFor("background", o), 1u) << "other tenants: the last class";
  EXPECT_EQ(*DeadlineClassFor("tenant-x", o), 1u);
  o.deadline_classes.clear();
  EXPECT_FALSE(DeadlineClassFor("tenant-0", o).ok());

  EXPECT_DOUBLE_EQ(*ParseDurationS("900s", "--f"), 900);
  EXPECT_DOUBLE_EQ(*ParseDurationS("15m", "--f"), 900);
  EXPECT_DOUBLE_EQ(*ParseDurationS("1.5h", "--f"), 5400);
  for (const char* bad : {"900", "s", "0s", "-1m", "3d", "xh", ""}) {
    auto r = ParseDurationS(bad, "--deadline-class");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().rfind("--deadline-class: ", 0), 0u) << r.status();
  }
  auto classes = ParseDeadlineClasses("interactive:900s,batch:3h");
  ASSERT_TRUE(classes.ok());
  ASSERT_EQ(classes->size(), 2u);
  EXPECT_EQ((*classes)[1].name, "batch");
  EXPECT_DOUBLE_EQ((*classes)[1].slack_s, 10800);
  EXPECT_NE(ParseDeadlineClasses("a:1s,a:2s").status().message().find("'a' appears twice"),
            std::string::npos);
  EXPECT_NE(ParseDeadlineClasses("a").status().message().find("NAME:DURATION"), std::string::npos);
  EXPECT_NE(ParseDeadlineClasses("a:1s,").status().message().find("--deadline-class"),
            std::string::npos);
  auto tc = ParseTenantClasses("tenant-0=interactive,tenant-3=batch");
  ASSERT_TRUE(tc.ok());
  EXPECT_EQ(tc->at("tenant-3"), "batch");
  EXPECT_NE(ParseTenantClasses("tenant-0").status().message().find("--tenant-class"),
            std::string::npos);
  EXPECT_FALSE(ParseTenantClasses("t=a,t=b").ok());

  ConvertOptions d;
  ASSERT_TRUE(ParseDeadlineOption("oracle-span:3", &d).ok());
  EXPECT_EQ(d.deadline, DeadlineRule::kOracleSpan);
  EXPECT_DOUBLE_EQ(d.deadline_factor, 3);
  EXPECT_NE(DescribeDeadlines(d).find("ORACLE"), std::string::npos);
  ASSERT_TRUE(ParseDeadlineOption("none", &d).ok());
  EXPECT_EQ(d.deadline, DeadlineRule::kNone);
  ASSERT_TRUE(ParseDeadlineOption("gold:10m", &d).ok());
  EXPECT_EQ(d.deadline, DeadlineRule::kClasses);
  EXPECT_EQ(d.deadline_classes.size(), 1u);
  EXPECT_NE(DescribeDeadlines(d).find("gold:10m"), std::string::npos);
  for (const char* bad : {"oracle-span:0", "oracle-span:", "oracle-span:x", "span", "gold:10"})
    EXPECT_NE(ParseDeadlineOption(bad, &d).message().find("--deadline"), std::string::npos) << bad;
  EXPECT_EQ(ParseDeadlineOption("gold:10", &d).message(),
            "--deadline: '10' is not a duration > 0 with a unit s, m or h");
  EXPECT_NE(DescribeDeadlines(ConvertOptions{}).find("interactive:15m,batch:3h"), std::string::npos)
      << DescribeDeadlines(ConvertOptions{});
}

TEST(ConvertAgentSessionsTest, BadInputNamesLineAndField) {
  auto r = ConvertAgentSessions("{\"session\":\"x\",\"llm_calls\":[]}\n", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "agent-sessions line 1: llm_calls is empty");
  r = ConvertAgentSessions("\n{\"session\":\"x\",\"llm_callz\":[]}\n", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("agent-sessions line 2"), std::string::npos);
  EXPECT_NE(r.status().message().find("llm_callz"), std::string::npos) << r.status();
}

TEST(SynthesiseArrivalsTest, PoissonAndBurstyMeanRate) {
  for (auto process : {ArrivalProcess::kPoisson, ArrivalProcess::kBursty}) {
    ConvertOptions o;
    o.arrival = process;
    o.rate_per_s = 2.0;
    auto t = SynthesiseArrivals(20000, o);
    double rate = t.size() / (t.back() / 1000.0);
    EXPECT_NEAR(rate, 2.0, 0.2) << static_cast<int>(process);
    for (size_t i = 1; i < t.size(); ++i) ASSERT_GE(t[i], t[i - 1]);
  }
}

// The coefficient of variation of the gaps between arrival times `t` (ms).
double GapCv(const std::vector<int64_t>& t) {
  double sum = 0, sq = 0;
  for (size_t i = 1; i < t.size(); ++i) sum += t[i] - t[i - 1];
  double mean = sum / (t.size() - 1);
  for (size_t i = 1; i < t.size(); ++i) sq += (t[i] - t[i - 1] - mean) * (t[i] - t[i - 1] - mean);
  return std::sqrt(sq / (t.size() - 1)) / mean;
}

TEST(SynthesiseArrivalsTest, BurstyIsBurstierThanPoisson) {
  ConvertOptions o;
  o.rate_per_s = 1.0;
  double poisson = GapCv(SynthesiseArrivals(20000, o));
  o.arrival = ArrivalProcess::kBursty;
  double bursty = GapCv(SynthesiseArrivals(20000, o));
  EXPECT_NEAR(poisson, 1.0, 0.1);
  EXPECT_GT(bursty, 1.5);
}

// Gamma gaps: the asked coefficient of variation (1: Poisson's), the asked mean rate, and
// the same draws for the same seed.
TEST(SynthesiseArrivalsTest, GammaGapsHaveTheAskedVariationAndRate) {
  ConvertOptions o;
  o.arrival = ArrivalProcess::kGamma;
  o.rate_per_s = 0.5;
  for (double want : {1.0, 2.0, 3.0}) {
    o.arrival_cv = want;
    auto t = SynthesiseArrivals(40000, o);
    for (size_t i = 1; i < t.size(); ++i) ASSERT_GE(t[i], t[i - 1]);
    EXPECT_NEAR(GapCv(t), want, 0.12 * want) << want;
    EXPECT_NEAR(t.size() / (t.back() / 1000.0), 0.5, 0.05) << want;
  }
  EXPECT_EQ(SynthesiseArrivals(100, o), SynthesiseArrivals(100, o));
  ConvertOptions other = o;
  other.seed = 2;
  EXPECT_NE(SynthesiseArrivals(100, o), SynthesiseArrivals(100, other));
}

TEST(ConvertMooncakeTest, RebuildsConversationChains) {
  auto recs = ConvertMooncake(ReadFixture("mooncake_conversation_sample.jsonl"), {});
  ASSERT_TRUE(recs.ok()) << recs.status();
  EXPECT_EQ(recs->size(), 366u);  // 400 requests, 34 continue an earlier one
  size_t turns = 0, users = 0;
  for (const auto& r : *recs) {
    for (const auto& n : r.workflow().nodes()) (n.kind() == v1::LLM ? turns : users)++;
  }
  EXPECT_EQ(turns, 400u);
  EXPECT_EQ(users, 34u);
  // Request 133 (0-based) continues request 66, 27 s later.
  const v1::TraceRecord* conv = nullptr;
  for (const auto& r : *recs) {
    if (r.workflow().id() == "mc-66") conv = &r;
  }
  ASSERT_NE(conv, nullptr);
  const auto* child = NodeOf(*conv, "turn-133");
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->deps(0), "user-133");
  EXPECT_EQ(NodeOf(*conv, "user-133")->deps(0), "turn-66");
  EXPECT_EQ(ActualOf(*conv, "user-133")->duration_ms(), 27000);
  EXPECT_EQ(child->cache_refs(0).mode(), v1::CacheRef::EXTEND);
  EXPECT_EQ(child->cache_refs(0).context(), "conv-66");
}

TEST(ConvertMooncakeTest, SharedPrefixAndBadLines) {
  auto recs = ConvertMooncake(ReadFixture("mooncake_conversation_sample.jsonl"), {});
  ASSERT_TRUE(recs.ok());
  // Every request starts with block 0 (a prefix shared across conversations).
  for (const auto& r : *recs) {
    const auto& ref = r.workflow().nodes(0).cache_refs(0);
    EXPECT_FALSE(ref.shared_prefix().empty()) << r.workflow().id();
    EXPECT_GE(ref.shared_prefix_tokens(), 512);
  }
  // Default deadlines: the tenant's class, not the conversation's size.
  ConvertOptions o;
  o.tenants = 2;
  recs = ConvertMooncake(ReadFixture("mooncake_conversation_sample.jsonl"), o);
  ASSERT_TRUE(recs.ok());
  for (const auto& r : *recs) {
    int64_t expect = r.workflow().tenant() == "tenant-0" ? 900'000 : 10'800'000;
    EXPECT_EQ(r.workflow().deadline_ms() - r.arrival_ms(), expect) << r.workflow().id();
  }
  o.deadline = DeadlineRule::kOracleSpan;  // old rule: 3 × (last turn's offset + service)
  recs = ConvertMooncake(ReadFixture("mooncake_conversation_sample.jsonl"), o);
  ASSERT_TRUE(recs.ok());
  for (const auto& r : *recs) EXPECT_EQ(r.workflow().labels().at("deadline_rule"), "oracle-span:3");
  auto bad = ConvertMooncake("{\"timestamp\":5,\"input_length\":0,\"output_length\":1}\n", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "mooncake line 1: input_length <= 0");
}

TEST(ConvertAzureTest, RowsBecomeSingleNodeWorkflows) {
  auto recs = ConvertAzure(ReadFixture("azure_conv_sample.csv"), {});
  ASSERT_TRUE(recs.ok()) << recs.status();
  ASSERT_EQ(recs->size(), 200u);
  const auto& first = (*recs)[0];
  EXPECT_EQ(first.arrival_ms(), 0);
  EXPECT_EQ(first.workflow().nodes(0).hints().prompt_tokens(), 374);
  EXPECT_EQ(first.actuals(0).output_tokens(), 44);
  // Second row: 18:15:50.9951690 - 18:15:46.6805900 = 4314.579 ms.
  EXPECT_EQ((*recs)[1].arrival_ms(), 4315);
  // Tenant "background" takes the last class (batch: 3 h) by default.
  EXPECT_EQ(first.workflow().deadline_ms(), 3 * 3600 * 1000);
  EXPECT_EQ(first.workflow().labels().at("deadline_rule"), "class:batch");
  ConvertOptions o;
  o.deadline = DeadlineRule::kOracleSpan;  // 3 × (374 / 10000 + 44 × 0.02) s = 2.7522 s
  recs = ConvertAzure(ReadFixture("azure_conv_sample.csv"), o);
  ASSERT_TRUE(recs.ok());
  EXPECT_EQ((*recs)[0].workflow().deadline_ms(), 2752);
  auto bad = ConvertAzure("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 x,1,2\n", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("azure line 2: bad TIMESTAMP"), std::string::npos);
  bad = ConvertAzure("time,in,out\n", {});
  ASSERT_FALSE(bad.ok());
}

TEST(TraceRoundTripTest, JsonLinesParseBack) {
  auto recs = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), {});
  ASSERT_TRUE(recs.ok());
  auto text = ToJsonLines(*recs);
  ASSERT_TRUE(text.ok());
  auto back = ParseTrace(*text);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), recs->size());
  for (size_t i = 0; i < recs->size(); ++i) {
    // Deterministic serialisation: a map's entries in key order on both sides.
    auto bytes = [](const v1::TraceRecord& r) {
      std::string out;
      {
        google::protobuf::io::StringOutputStream raw(&out);
        google::protobuf::io::CodedOutputStream coded(&raw);
        coded.SetSerializationDeterministic(true);
        r.SerializeToCodedStream(&coded);
      }  // flushed and trimmed into `out`
      return out;
    };
    EXPECT_EQ(bytes((*back)[i]), bytes((*recs)[i]));
  }
}

}  // namespace
}  // namespace switchyard::replay
