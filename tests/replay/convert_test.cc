// Converters on the committed fixtures (tests/fixtures/README.md): counts, chain
// reconstruction and exact preservation of durations and token counts. Expected figures
// were computed independently from the fixture files.
#include "bench/replay/convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "proto/json.h"
#include "proto/switchyard/v1/trace_sources.pb.h"

namespace switchyard::replay {
namespace {

std::string Fixture(const std::string& name) {
  auto text = proto::ReadFile(std::string(SY_SOURCE_DIR) + "/tests/fixtures/" + name);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

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

TEST(ConvertAgentSessionsTest, CountsAndExactDurations) {
  ConvertOptions o;
  o.rate_per_s = 0.1;
  auto recs = ConvertAgentSessions(Fixture("agent_sessions_sample.jsonl"), o);
  ASSERT_TRUE(recs.ok()) << recs.status();
  ASSERT_EQ(recs->size(), 4u);
  std::map<std::string, std::pair<int, int>> expected = {{"46c4e6b23c25", {9, 8}},
                                                         {"657e7b640d49", {48, 57}},
                                                         {"58401c0ee559", {9, 9}},
                                                         {"180179e7eb4d", {16, 17}}};
  // Each session's source line, to compare durations and tokens one by one.
  std::map<std::string, v1::AgentSessionRecord> src;
  std::string text = Fixture("agent_sessions_sample.jsonl");
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
  auto recs = ConvertAgentSessions(Fixture("agent_sessions_sample.jsonl"), {});
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

TEST(ConvertAgentSessionsTest, ArrivalsDeadlinesTenantsAndDeterminism) {
  ConvertOptions o;
  o.rate_per_s = 0.5;
  o.seed = 7;
  o.repeat = 5;
  o.tenants = 2;
  o.deadline_factor = 2.0;
  auto a = ConvertAgentSessions(Fixture("agent_sessions_sample.jsonl"), o);
  auto b = ConvertAgentSessions(Fixture("agent_sessions_sample.jsonl"), o);
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
  }
  EXPECT_EQ(tenants, (std::set<std::string>{"tenant-0", "tenant-1"}));
  o.seed = 8;
  auto c = ConvertAgentSessions(Fixture("agent_sessions_sample.jsonl"), o);
  EXPECT_NE(*ToJsonLines(*a), *ToJsonLines(*c));
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

TEST(SynthesiseArrivalsTest, BurstyIsBurstierThanPoisson) {
  auto cv = [](const std::vector<int64_t>& t) {  // coefficient of variation of the gaps
    double sum = 0, sq = 0;
    for (size_t i = 1; i < t.size(); ++i) sum += t[i] - t[i - 1];
    double mean = sum / (t.size() - 1);
    for (size_t i = 1; i < t.size(); ++i) sq += (t[i] - t[i - 1] - mean) * (t[i] - t[i - 1] - mean);
    return std::sqrt(sq / (t.size() - 1)) / mean;
  };
  ConvertOptions o;
  o.rate_per_s = 1.0;
  double poisson = cv(SynthesiseArrivals(20000, o));
  o.arrival = ArrivalProcess::kBursty;
  double bursty = cv(SynthesiseArrivals(20000, o));
  EXPECT_NEAR(poisson, 1.0, 0.1);
  EXPECT_GT(bursty, 1.5);
}

TEST(ConvertMooncakeTest, RebuildsConversationChains) {
  auto recs = ConvertMooncake(Fixture("mooncake_conversation_sample.jsonl"), {});
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
  auto recs = ConvertMooncake(Fixture("mooncake_conversation_sample.jsonl"), {});
  ASSERT_TRUE(recs.ok());
  // Every request starts with block 0 (a prefix shared across conversations).
  for (const auto& r : *recs) {
    const auto& ref = r.workflow().nodes(0).cache_refs(0);
    EXPECT_FALSE(ref.shared_prefix().empty()) << r.workflow().id();
    EXPECT_GE(ref.shared_prefix_tokens(), 512);
  }
  auto bad = ConvertMooncake("{\"timestamp\":5,\"input_length\":0,\"output_length\":1}\n", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "mooncake line 1: input_length <= 0");
}

TEST(ConvertAzureTest, RowsBecomeSingleNodeWorkflows) {
  auto recs = ConvertAzure(Fixture("azure_conv_sample.csv"), {});
  ASSERT_TRUE(recs.ok()) << recs.status();
  ASSERT_EQ(recs->size(), 200u);
  const auto& first = (*recs)[0];
  EXPECT_EQ(first.arrival_ms(), 0);
  EXPECT_EQ(first.workflow().nodes(0).hints().prompt_tokens(), 374);
  EXPECT_EQ(first.actuals(0).output_tokens(), 44);
  // Second row: 18:15:50.9951690 - 18:15:46.6805900 = 4314.579 ms.
  EXPECT_EQ((*recs)[1].arrival_ms(), 4315);
  auto bad = ConvertAzure("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 x,1,2\n", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("azure line 2: bad TIMESTAMP"), std::string::npos);
  bad = ConvertAzure("time,in,out\n", {});
  ASSERT_FALSE(bad.ok());
}

TEST(TraceRoundTripTest, JsonLinesParseBack) {
  auto recs = ConvertAgentSessions(Fixture("agent_sessions_sample.jsonl"), {});
  ASSERT_TRUE(recs.ok());
  auto text = ToJsonLines(*recs);
  ASSERT_TRUE(text.ok());
  auto back = ParseTrace(*text);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), recs->size());
  for (size_t i = 0; i < recs->size(); ++i) {
    EXPECT_EQ((*back)[i].SerializeAsString(), (*recs)[i].SerializeAsString());
  }
}

}  // namespace
}  // namespace switchyard::replay
