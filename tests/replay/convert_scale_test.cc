// `convert --token-scale` / `--time-scale` (convert.h "Scales"): every token count and
// every duration and arrival offset of the converted workflows scaled, rounded, at least
// one token where there was one; the factors recorded as labels, printed sorted.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "proto/json.h"
#include "replay/convert.h"
#include "tests/replay/replay_test_util.h"

namespace switchyard::replay {
namespace {

using testing::ReadFixture;

// What a count should become, computed here without the converter's helper.
int64_t Expected(int64_t n, double f) {
  if (n <= 0) return n;
  int64_t r = static_cast<int64_t>(std::floor(static_cast<double>(n) * f + 0.5));
  return r < 1 ? 1 : r;
}

std::map<std::string, const v1::TraceRecord*> ById(const std::vector<v1::TraceRecord>& recs) {
  std::map<std::string, const v1::TraceRecord*> out;
  for (const auto& r : recs) out[r.workflow().id()] = &r;
  return out;
}

TEST(ScaleTokensTest, RoundsAndKeepsAtLeastOne) {
  EXPECT_EQ(ScaleTokens(100, 0.02), 2);
  EXPECT_EQ(ScaleTokens(125, 0.02), 3);  // 2.5 rounds away from zero
  EXPECT_EQ(ScaleTokens(124, 0.02), 2);  // 2.48
  EXPECT_EQ(ScaleTokens(10, 0.02), 1);   // 0.2: at least one token where there was one
  EXPECT_EQ(ScaleTokens(1, 0.001), 1);
  EXPECT_EQ(ScaleTokens(0, 0.02), 0);
  EXPECT_EQ(ScaleTokens(50'000, 0.02), 1000);
  EXPECT_EQ(ScaleTokens(7, 1.0), 7);
}

TEST(ConvertScaleTest, AgentSessionsTokensDurationsAndArrivalsScaled) {
  ConvertOptions plain;
  plain.rate_per_s = 0.1;
  ConvertOptions scaled = plain;
  scaled.token_scale = 0.01;
  scaled.time_scale = 0.1;
  auto a = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), plain);
  auto b = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), scaled);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  ASSERT_EQ(a->size(), b->size());
  auto scaled_by_id = ById(*b);
  size_t raised_to_one = 0, tokens_checked = 0;
  for (const auto& r : *a) {
    const v1::TraceRecord& s = *scaled_by_id.at(r.workflow().id());
    EXPECT_EQ(s.arrival_ms(), std::llround(r.arrival_ms() * 0.1)) << r.workflow().id();
    EXPECT_EQ(s.workflow().arrival_ms(), s.arrival_ms());
    // Class deadlines: the scaled arrival + the (unscaled) class slack.
    EXPECT_EQ(s.workflow().deadline_ms() - s.arrival_ms(),
              r.workflow().deadline_ms() - r.arrival_ms());
    ASSERT_EQ(s.workflow().nodes_size(), r.workflow().nodes_size());
    for (int i = 0; i < r.workflow().nodes_size(); ++i) {
      const auto& h0 = r.workflow().nodes(i).hints();
      const auto& h1 = s.workflow().nodes(i).hints();
      EXPECT_EQ(h1.prompt_tokens(), Expected(h0.prompt_tokens(), 0.01));
      EXPECT_EQ(h1.extend_tokens(), Expected(h0.extend_tokens(), 0.01));
      EXPECT_EQ(h1.max_output_tokens(), Expected(h0.max_output_tokens(), 0.01));
      EXPECT_EQ(s.workflow().nodes(i).has_hints(), r.workflow().nodes(i).has_hints())
          << "tool nodes get no hints";
      if (h0.prompt_tokens() > 0) ++tokens_checked;
    }
    ASSERT_EQ(s.actuals_size(), r.actuals_size());
    for (int i = 0; i < r.actuals_size(); ++i) {
      const auto& x0 = r.actuals(i);
      const auto& x1 = s.actuals(i);
      EXPECT_EQ(x1.output_tokens(), Expected(x0.output_tokens(), 0.01));
      EXPECT_LE(x1.output_tokens(), std::max<int64_t>(1, x0.output_tokens()));
      if (x0.output_tokens() > 0 && x0.output_tokens() * 0.01 < 0.5) {
        EXPECT_EQ(x1.output_tokens(), 1);
        ++raised_to_one;
      }
      EXPECT_EQ(x1.duration_ms(), std::llround(x0.duration_ms() * 0.1)) << x0.node_id();
    }
    EXPECT_EQ(s.workflow().labels().at("token_scale"), "0.01");
    EXPECT_EQ(s.workflow().labels().at("time_scale"), "0.1");
    EXPECT_EQ(s.workflow().labels().count("deadline_rule"), 1u);
    EXPECT_EQ(r.workflow().labels().count("token_scale"), 0u) << "no label when unscaled";
  }
  EXPECT_GT(tokens_checked, 50u);
  EXPECT_GT(raised_to_one, 0u) << "the fixture has short outputs that would round to 0";
}

TEST(ConvertScaleTest, SeveralLabelsPrintSortedAndParseBack) {
  ConvertOptions o;
  o.token_scale = 0.5;
  o.time_scale = 0.25;
  o.repeat = 3;
  auto a = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  ASSERT_TRUE(a.ok()) << a.status();
  auto text = ToJsonLines(*a);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, *ToJsonLines(*a)) << "printed the same twice";
  EXPECT_NE(text->find("\"labels\":{\"deadline_rule\":\"class:interactive\","
                       "\"output_cap\":\"16384\",\"time_scale\":\"0.25\","
                       "\"token_scale\":\"0.5\"}"),
            std::string::npos)
      << text->substr(0, 400);
  auto back = ParseTrace(*text);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), a->size());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*back)[i].workflow().labels_size(), 4);
    EXPECT_EQ((*back)[i].workflow().labels().at("time_scale"), "0.25");
    v1::TraceRecord x = (*a)[i], y = (*back)[i];
    x.mutable_workflow()->clear_labels();
    y.mutable_workflow()->clear_labels();
    EXPECT_EQ(x.SerializeAsString(), y.SerializeAsString()) << "record " << i;
  }
}

TEST(ConvertScaleTest, MooncakeAndAzureScaled) {
  ConvertOptions o;
  o.token_scale = 0.1;
  o.time_scale = 0.5;
  auto plain = ConvertMooncake(ReadFixture("mooncake_conversation_sample.jsonl"), {});
  auto mc = ConvertMooncake(ReadFixture("mooncake_conversation_sample.jsonl"), o);
  ASSERT_TRUE(plain.ok() && mc.ok());
  auto by_id = ById(*mc);
  for (const auto& r : *plain) {
    const v1::TraceRecord& s = *by_id.at(r.workflow().id());
    const auto& ref0 = r.workflow().nodes(0).cache_refs(0);
    const auto& ref1 = s.workflow().nodes(0).cache_refs(0);
    EXPECT_EQ(ref1.shared_prefix_tokens(), Expected(ref0.shared_prefix_tokens(), 0.1));
    EXPECT_EQ(s.arrival_ms(), std::llround(r.arrival_ms() * 0.5));
  }
  // mc-66's user turn: 27 s recorded, 13.5 s scaled.
  const v1::TraceRecord& conv = *by_id.at("mc-66");
  for (const auto& a : conv.actuals()) {
    if (a.node_id() == "user-133") {
      EXPECT_EQ(a.duration_ms(), 13500);
    }
  }
  auto az = ConvertAzure(ReadFixture("azure_conv_sample.csv"), o);
  ASSERT_TRUE(az.ok()) << az.status();
  // First row: 374 context tokens, 44 generated; second arrives 4314.579 ms later.
  EXPECT_EQ((*az)[0].workflow().nodes(0).hints().prompt_tokens(), 37);
  EXPECT_EQ((*az)[0].actuals(0).output_tokens(), 4);
  EXPECT_EQ((*az)[1].arrival_ms(), std::llround(4315 * 0.5));
  EXPECT_EQ((*az)[0].workflow().labels().at("token_scale"), "0.1");
}

TEST(ConvertScaleTest, OracleSpanScalesWithTimeAndDescriptionNamesScales) {
  ConvertOptions o;
  o.deadline = DeadlineRule::kOracleSpan;
  o.deadline_factor = 2.0;
  o.time_scale = 0.1;
  auto recs = ConvertAgentSessions(ReadFixture("agent_sessions_sample.jsonl"), o);
  ASSERT_TRUE(recs.ok());
  for (const auto& r : *recs) {
    if (r.source() == "agent-sessions:46c4e6b23c25") {  // span 49.86 s: 2 x 4.986 s
      EXPECT_EQ(r.workflow().deadline_ms() - r.arrival_ms(), 9972);
    }
  }
  EXPECT_NE(DescribeDeadlines(o).find("; trace scaled: tokens x1, times x0.1"), std::string::npos)
      << DescribeDeadlines(o);
  ConvertOptions unscaled;
  EXPECT_EQ(DescribeDeadlines(unscaled).find("scaled"), std::string::npos);
  unscaled.token_scale = 0.02;
  EXPECT_EQ(DescribeScales(unscaled), "tokens x0.02, times x1");
}

}  // namespace
}  // namespace switchyard::replay
