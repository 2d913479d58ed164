// SLO capacity (replay/slo.h): attainment and the warm-up/drain window on hand-made
// records, capacity interpolation and its edge cases on hand-made curves, slowdown
// percentiles, the auto rate grid, and a small end-to-end RunSloCapacity on the committed
// agent-session fixture (shape and monotone-ish attainment).
#include "replay/slo.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <cmath>

#include "proto/json.h"
#include "replay/cluster.h"
#include "replay/convert.h"

namespace switchyard::replay {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The SLO is on the LLM part: tool time, the same alone and under load, is taken out.
TEST(SloAttainment, IsOnTheLlmPartOfTheSession) {
  // JCT⁰ 10 s of which 8 s tools: 2 s of LLM work. Under load the JCT is 12 s: the whole
  // JCT grew 1.2x, the LLM part 2x.
  WorkflowRecord r{"a", 0, 12, "completed", -1, /*tool_s=*/8, /*llm_calls=*/3};
  EXPECT_DOUBLE_EQ(LlmSlowdown(r, 10), 2.0);
  EXPECT_EQ(Attainment({r}, {{"a", 10}}, 2, SloWindow{}).attained, 1);
  EXPECT_EQ(Attainment({r}, {{"a", 10}}, 1.9, SloWindow{}).attained, 0)
      << "on whole JCTs (1.2x) it would attain";
  // Without tool time, or (almost) all tool time alone: the whole JCT.
  EXPECT_DOUBLE_EQ(LlmSlowdown(WorkflowRecord{"b", 0, 12, "completed", -1}, 10), 1.2);
  EXPECT_DOUBLE_EQ(LlmSlowdown(WorkflowRecord{"c", 0, 12, "completed", -1, 10, 1}, 10), 1.2);
  EXPECT_EQ(LlmSlowdown(WorkflowRecord{"d", 0, -1, "unfinished", -1, 8, 3}, 10), kInf);
  EXPECT_EQ(LlmSlowdown(WorkflowRecord{"e", 0, 12, "failed", -1, 8, 3}, 10), kInf);
  SlowdownStats s = SlowdownPercentiles({r}, {{"a", 10}}, SloWindow{});
  EXPECT_DOUBLE_EQ(s.p50, 2.0);
}

// The steady-state rules: span >= 10x and warm-up >= 2x the mean JCT of what completed.
TEST(SloSteadyState, SpanAndWarmupAgainstTheMeanJct) {
  std::vector<WorkflowRecord> recs;
  for (int i = 0; i <= 100; ++i) {  // arrivals over 1,000 s, each taking 10 s
    recs.push_back({"w" + std::to_string(i), 10.0 * i, 10.0 * i + 10, "completed", -1});
  }
  SteadyState st = SteadyStateOf(recs, 0.1);
  EXPECT_DOUBLE_EQ(st.span_s, 1000);
  EXPECT_DOUBLE_EQ(st.warmup_s, 100);
  EXPECT_DOUBLE_EQ(st.mean_jct_s, 10);
  EXPECT_TRUE(st.ok());
  for (auto& r : recs) r.end_s = r.arrival_s + 60;  // warm-up 100 s < 2 x 60 s
  EXPECT_FALSE(SteadyStateOf(recs, 0.1).ok());
  for (auto& r : recs) r.end_s = r.arrival_s + 40, r.state = "unfinished";
  EXPECT_FALSE(SteadyStateOf(recs, 0.1).ok()) << "nothing completed: no steady state";
  EXPECT_FALSE(SteadyStateOf({}, 0.1).ok());
}

TEST(SloAttainment, CountsOnlyCompletedWithinKTimesJct0) {
  std::vector<WorkflowRecord> recs = {
      {"a", 0, 10, "completed", -1},    // JCT 10 = 2 × 5: attains (boundary)
      {"b", 1, 12, "completed", -1},    // JCT 11 > 10
      {"c", 2, 3, "failed", -1},        // failed: never attains
      {"d", 3, -1, "unfinished", -1},   // did not end
      {"e", 4, 5, "cancelled", -1},     // cancelled
      {"f", 5, 6, "completed", -1},     // no JCT0: not counted
      {"g", 100, 101, "completed", -1}  // outside the window: not counted
  };
  Jct0Map jct0 = {{"a", 5}, {"b", 5}, {"c", 5}, {"d", 5}, {"e", 5}, {"g", 5}};
  SloWindow w{0, 50};
  AttainmentResult r = Attainment(recs, jct0, 2, w);
  EXPECT_EQ(r.counted, 5);
  EXPECT_EQ(r.attained, 1);
  EXPECT_DOUBLE_EQ(r.fraction, 0.2);
  r = Attainment(recs, jct0, 3, w);  // k = 3: b attains too
  EXPECT_EQ(r.attained, 2);
  r = Attainment(recs, jct0, 2, SloWindow{});  // whole line: g counts
  EXPECT_EQ(r.counted, 6);
  EXPECT_EQ(r.attained, 2);
  r = Attainment({}, jct0, 2, w);
  EXPECT_EQ(r.counted, 0);
  EXPECT_EQ(r.fraction, 0);
}

TEST(SloAttainment, MiddleWindowDropsWarmupAndDrain) {
  std::vector<WorkflowRecord> recs;
  Jct0Map jct0;
  for (int i = 0; i <= 10; ++i) {  // arrivals 100, 110, ..., 200, in shuffled order
    int k = (i * 7) % 11;
    recs.push_back({"w" + std::to_string(k), 100.0 + 10 * k, 101.0 + 10 * k, "completed", -1});
    jct0["w" + std::to_string(k)] = 1;
  }
  SloWindow w = MiddleWindow(recs, 0.1, 0.1);
  EXPECT_DOUBLE_EQ(w.begin_s, 110);
  EXPECT_DOUBLE_EQ(w.end_s, 190);
  EXPECT_TRUE(w.Contains(110));
  EXPECT_FALSE(w.Contains(109.99));
  EXPECT_TRUE(w.Contains(190));
  EXPECT_FALSE(w.Contains(190.01));
  EXPECT_EQ(Attainment(recs, jct0, 2, w).counted, 9);  // 110..190
  w = MiddleWindow(recs, 0.25, 0.5);
  EXPECT_DOUBLE_EQ(w.begin_s, 125);
  EXPECT_DOUBLE_EQ(w.end_s, 150);
  EXPECT_EQ(Attainment(recs, jct0, 2, w).counted, 3);  // 130, 140, 150
  w = MiddleWindow(recs, 0, 0);
  EXPECT_EQ(Attainment(recs, jct0, 2, w).counted, 11);
  w = MiddleWindow({}, 0.1, 0.1);
  EXPECT_TRUE(w.Contains(-1e12) && w.Contains(1e12));
}

TEST(SloCapacity, InterpolatesAtTheFirstCrossing) {
  auto c = CapacityFromCurve({0.1, 0.2, 0.4}, {1.0, 0.95, 0.5});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->bound, CapacityBound::kInterpolated);
  EXPECT_NEAR(c->rate_per_s, 0.2 + 0.05 / 0.45 * 0.2, 1e-12);
  // Exactly on the target at a rate, below after: that rate.
  c = CapacityFromCurve({1, 2}, {0.9, 0.7});
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->rate_per_s, 1);
  EXPECT_EQ(c->bound, CapacityBound::kInterpolated);
  // Non-monotone: cut at the first crossing (1 → 2), not the later recovery.
  c = CapacityFromCurve({1, 2, 3, 4}, {1, 0.8, 0.95, 0.5});
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->rate_per_s, 1.5);
  // Another target.
  c = CapacityFromCurve({1, 2}, {1, 0}, 0.5);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->rate_per_s, 1.5);
  EXPECT_EQ(CapacityText(*c), "1.5");
}

TEST(SloCapacity, EdgeCasesAreBounds) {
  auto c = CapacityFromCurve({0.05, 0.1, 0.2}, {0.85, 0.5, 0.1});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->bound, CapacityBound::kBelowLowest);
  EXPECT_DOUBLE_EQ(c->rate_per_s, 0.05);
  EXPECT_EQ(CapacityText(*c), "< 0.05");
  EXPECT_STREQ(BoundName(c->bound), "below_lowest");
  c = CapacityFromCurve({0.05, 0.1, 0.2}, {1, 0.95, 0.9});  // all attain (0.9 included)
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->bound, CapacityBound::kAtLeastHighest);
  EXPECT_DOUBLE_EQ(c->rate_per_s, 0.2);
  EXPECT_EQ(CapacityText(*c), ">= 0.2");
  EXPECT_STREQ(BoundName(c->bound), "at_least_highest");
  EXPECT_EQ(CapacityFromCurve({1}, {0.95})->bound, CapacityBound::kAtLeastHighest);
  EXPECT_EQ(CapacityFromCurve({1}, {0.5})->bound, CapacityBound::kBelowLowest);
  EXPECT_FALSE(CapacityFromCurve({}, {}).ok());
  EXPECT_NE(CapacityFromCurve({1, 2}, {1}).status().message().find("attainment has 1 values"),
            std::string::npos);
  EXPECT_NE(CapacityFromCurve({2, 1}, {1, 1}).status().message().find("ascending"),
            std::string::npos);
  EXPECT_NE(CapacityFromCurve({1, 1}, {1, 1}).status().message().find("ascending"),
            std::string::npos);
  EXPECT_NE(CapacityFromCurve({0, 1}, {1, 1}).status().message().find("> 0"), std::string::npos);
  EXPECT_NE(CapacityFromCurve({1}, {1}, 0).status().message().find("target"), std::string::npos);
}

TEST(SloSlowdown, PercentilesByNearestRankWithUnfinishedAsInfinite) {
  std::vector<WorkflowRecord> recs;
  Jct0Map jct0;
  for (int i = 1; i <= 100; ++i) {  // slowdown i: JCT 2i, JCT0 2
    recs.push_back({"w" + std::to_string(i), 10.0 * i, 10.0 * i + 2 * i, "completed", -1});
    jct0["w" + std::to_string(i)] = 2;
  }
  SlowdownStats s = SlowdownPercentiles(recs, jct0, SloWindow{});
  EXPECT_EQ(s.counted, 100);
  EXPECT_DOUBLE_EQ(s.p50, 50);
  EXPECT_DOUBLE_EQ(s.p90, 90);
  EXPECT_DOUBLE_EQ(s.p99, 99);
  // Outside the window, without JCT0, or with JCT0 = 0: left out.
  recs.push_back({"late", 5000, 5001, "completed", -1});
  recs.push_back({"nojct0", 20, 30, "completed", -1});
  recs.push_back({"zero", 20, 30, "completed", -1});
  jct0["late"] = 1;
  jct0["zero"] = 0;
  s = SlowdownPercentiles(recs, jct0, SloWindow{0, 1001});
  EXPECT_EQ(s.counted, 100);
  EXPECT_DOUBLE_EQ(s.p99, 99);
  // Two of ten did not complete: P90 and P99 are unbounded, P50 is not.
  std::vector<WorkflowRecord> few;
  Jct0Map j;
  for (int i = 0; i < 10; ++i) {
    std::string id = "x" + std::to_string(i);
    j[id] = 1;
    if (i == 3)
      few.push_back({id, 0, -1, "unfinished", -1});
    else if (i == 7)
      few.push_back({id, 0, 4, "failed", -1});
    else
      few.push_back({id, 0, 1.5, "completed", -1});
  }
  s = SlowdownPercentiles(few, j, SloWindow{});
  EXPECT_EQ(s.counted, 10);
  EXPECT_DOUBLE_EQ(s.p50, 1.5);
  EXPECT_EQ(s.p90, kInf);  // rank 9 of 10: 8 × 1.5 then 2 × inf
  EXPECT_EQ(s.p99, kInf);
  s = SlowdownPercentiles({}, j, SloWindow{});
  EXPECT_EQ(s.counted, 0);
  EXPECT_EQ(s.p99, 0);
}

TEST(SloRates, AutoGridAndSpread) {
  std::vector<double> r = AutoRates(0.1);
  ASSERT_EQ(r.size(), 9u);
  EXPECT_DOUBLE_EQ(r.front(), 0.025);
  EXPECT_DOUBLE_EQ(r[4], 0.1);
  EXPECT_DOUBLE_EQ(r.back(), 0.4);
  for (size_t i = 1; i < r.size(); ++i) EXPECT_NEAR(r[i] / r[i - 1], std::sqrt(2.0), 1e-3);
  EXPECT_TRUE(AutoRates(0).empty());
  Spread s = SpreadOf({1, 2, 3});
  EXPECT_DOUBLE_EQ(s.mean, 2);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 3);
  EXPECT_DOUBLE_EQ(s.stddev, 1);  // sample standard deviation
  EXPECT_DOUBLE_EQ(SpreadOf({4}).stddev, 0);
  EXPECT_DOUBLE_EQ(SpreadOf({}).mean, 0);
}

std::vector<v1::TraceRecord> SessionsAtLowRate(int repeat) {
  auto text = proto::ReadFile(std::string(SY_SOURCE_DIR) + "/tests/fixtures/" +
                              "agent_sessions_sample.jsonl");
  EXPECT_TRUE(text.ok()) << text.status();
  ConvertOptions o;
  o.rate_per_s = 0.05;
  o.repeat = repeat;
  o.seed = 3;
  auto recs = ConvertAgentSessions(text.ok() ? *text : "", o);
  EXPECT_TRUE(recs.ok()) << recs.status();
  return recs.ok() ? *recs : std::vector<v1::TraceRecord>{};
}

// One worker running at most 2 sequences at once: a burst of sessions has to queue.
v1::ReplayCluster Small() {
  v1::ReplayCluster c = DefaultCluster();
  c.set_name("small");
  c.set_gpus_per_node(1);
  c.set_max_num_seqs(2);
  return c;
}

TEST(SloDriver, RejectsBadOptionsNamingTheFlag) {
  std::vector<v1::TraceRecord> t = SessionsAtLowRate(1);
  auto err = [&](SloOptions o, std::vector<std::string> p = {"keep-during-tool"}) {
    o.rates = o.rates.empty() ? std::vector<double>{0.1} : o.rates;
    auto r = RunSloCapacity(t, Small(), p, o);
    return r.ok() ? std::string() : r.status().message();
  };
  SloOptions o;
  o.k = 0.5;
  EXPECT_NE(err(o).find("--slo-k"), std::string::npos);
  o = {};
  o.target = 0;
  EXPECT_NE(err(o).find("--slo-target"), std::string::npos);
  o = {};
  o.seeds = 0;
  EXPECT_NE(err(o).find("--seeds"), std::string::npos);
  o = {};
  o.warmup_frac = 0.6;
  o.drain_frac = 0.5;
  EXPECT_NE(err(o).find("--warmup-frac + --drain-frac"), std::string::npos);
  o = {};
  o.rates = {0.2, 0.1};
  EXPECT_NE(err(o).find("--rates"), std::string::npos);
  EXPECT_NE(err({}, {}).find("--policy"), std::string::npos);
  std::vector<v1::TraceRecord> dup = {t[0], t[0]};
  auto r = RunSloCapacity(dup, Small(), {"keep-during-tool"}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("appears twice"), std::string::npos);
  r = RunSloCapacity({t[0]}, Small(), {"keep-during-tool"}, {});  // one arrival: no auto grid
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--rates auto"), std::string::npos);
}

TEST(SloDriver, EndToEndOnATinyTrace) {
  std::vector<v1::TraceRecord> t = SessionsAtLowRate(2);  // 8 workflows, 4 distinct
  ASSERT_EQ(t.size(), 8u);
  SloOptions o;
  o.name = "fixture on small";
  o.rates = {0.0002, 5.0};  // effectively alone; all at once
  o.seeds = 2;
  o.seed = 11;
  std::vector<std::string> stages;
  o.progress = [&](const std::string& stage, size_t, size_t) {
    if (stages.empty() || stages.back() != stage) stages.push_back(stage);
  };
  auto r = RunSloCapacity(t, Small(), {"keep-during-tool", "vllm-fcfs"}, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(stages, (std::vector<std::string>{"jct0", "curve", "slowdown"}));
  EXPECT_EQ(r->workflows, 8);
  EXPECT_EQ(r->jct0_missing, 0);
  EXPECT_EQ(r->jct0_s.size(), 8u);
  EXPECT_EQ(r->jct0_policy, "keep-during-tool");
  EXPECT_EQ(r->seeds, (std::vector<uint64_t>{11, 12}));
  EXPECT_EQ(r->rates, o.rates);
  for (const auto& [id, v] : r->jct0_s) EXPECT_GT(v, 1.0) << id;
  // Repeats of one session share its JCT0.
  for (const v1::TraceRecord& a : t) {
    for (const v1::TraceRecord& b : t) {
      if (a.source() == b.source()) {
        EXPECT_DOUBLE_EQ(r->jct0_s.at(a.workflow().id()), r->jct0_s.at(b.workflow().id()));
      }
    }
  }
  ASSERT_EQ(r->policies.size(), 2u);
  for (const SloPolicyResult& p : r->policies) {
    SCOPED_TRACE(p.policy);
    ASSERT_EQ(p.seeds.size(), 2u);
    ASSERT_EQ(p.attainment_mean.size(), 2u);
    for (const SloSeedCurve& c : p.seeds) {
      ASSERT_EQ(c.attainment.size(), 2u);
      for (const AttainmentResult& a : c.attainment) {
        EXPECT_GT(a.counted, 0);
        EXPECT_LT(a.counted, 8) << "warm-up and drain are dropped";
      }
      EXPECT_GE(c.attainment[0].fraction, c.attainment[1].fraction) << "more load, less SLO";
      ASSERT_EQ(c.steady.size(), 2u);
      EXPECT_FALSE(c.steady[1].ok()) << "all at once: a transient, never a steady state";
      EXPECT_GE(c.capacity.rate_per_s, o.rates.front());
      EXPECT_LE(c.capacity.rate_per_s, o.rates.back());
    }
    EXPECT_GE(p.capacity.max, p.capacity.min);
    EXPECT_EQ(p.below_lowest + p.at_least_highest <= 2, true);
    ASSERT_EQ(p.slowdown.size(), 4u);
    for (size_t i = 0; i < p.slowdown.size(); ++i) {
      const SloSlowdown& d = p.slowdown[i];
      EXPECT_DOUBLE_EQ(d.rate_per_s, d.load_fraction * p.capacity.mean);
      EXPECT_GT(d.stats.counted, 0);
      EXPECT_LE(d.stats.p50, d.stats.p90);
      EXPECT_LE(d.stats.p90, d.stats.p99);
    }
  }
  // The reference alone at a negligible rate is its own JCT0: full attainment, slowdown 1.
  const SloPolicyResult& ref = r->policies[0];
  EXPECT_DOUBLE_EQ(ref.attainment_mean[0], 1.0);
  EXPECT_GE(ref.slowdown[0].stats.p50, 1.0 - 1e-9);

  std::string json = SloJson(*r);
  google::protobuf::Struct s;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &s).ok()) << json;
  EXPECT_EQ(s.fields().at("policies").list_value().values_size(), 2);
  const auto& p0 = s.fields().at("policies").list_value().values(0).struct_value().fields();
  for (const char* f : {"policy", "attainment_mean", "capacity", "seeds", "slowdown"})
    EXPECT_TRUE(p0.count(f)) << f;
  EXPECT_EQ(s.fields().at("jct0_s").struct_value().fields_size(), 8);
  std::string table = SloTable(*r);
  for (const char* x : {"SLO capacity", "keep-during-tool", "vllm-fcfs", "slowdown", "attainment",
                        "steady state per point", "workflows counted at a point (< 2,000"})
    EXPECT_NE(table.find(x), std::string::npos) << x;
  const auto& seed0 = p0.at("seeds").list_value().values(0).struct_value().fields();
  ASSERT_EQ(seed0.at("steady").list_value().values_size(), 2);
  EXPECT_FALSE(
      seed0.at("steady").list_value().values(1).struct_value().fields().at("ok").bool_value());
  std::string html = SloHtml(*r, "switchyard sweep --slo-capacity");
  for (const char* x : {"<svg", "<polyline", "SLO attainment vs load", "target 90%"})
    EXPECT_NE(html.find(x), std::string::npos) << x;
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::replay
