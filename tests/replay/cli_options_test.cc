// Parsing of `switchyard replay` and `switchyard sweep` options: defaults and every error.
#include "replay/cli_options.h"

#include <gtest/gtest.h>

namespace switchyard::replay {
namespace {

std::string Err(const Result<ReplayArgs>& r) { return r.ok() ? "" : r.status().message(); }
std::string Err(const Result<SweepArgs>& r) { return r.ok() ? "" : r.status().message(); }

TEST(ReplayArgs, DefaultsAndValues) {
  auto r = ParseReplayArgs({"--trace", "t.jsonl"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->policies, AllPolicies());
  EXPECT_EQ(r->policies.front(), "switchyard");
  EXPECT_EQ(r->seed, 1u);
  EXPECT_TRUE(r->cluster.empty());
  r = ParseReplayArgs({"--trace", "t", "--policy", "vllm-fcfs,switchyard,vllm-fcfs", "--seed", "9",
                       "--cluster", "c.json", "--out", "d", "--json", "--rate", "0.5"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->policies, (std::vector<std::string>{"vllm-fcfs", "switchyard"}));
  EXPECT_EQ(r->seed, 9u);
  EXPECT_EQ(r->cluster, "c.json");
  EXPECT_EQ(r->out, "d");
  EXPECT_TRUE(r->json);
  EXPECT_DOUBLE_EQ(r->rate, 0.5);
  EXPECT_TRUE(ParseReplayArgs({"--help"})->help);
}

TEST(ReplayArgs, ErrorsNameTheFlag) {
  EXPECT_EQ(Err(ParseReplayArgs({})), "--trace is required");
  EXPECT_EQ(Err(ParseReplayArgs({"--trace"})), "--trace needs a value");
  EXPECT_NE(
      Err(ParseReplayArgs({"--trace", "t", "--policy", "fifo"})).find("unknown policy 'fifo'"),
      std::string::npos);
  EXPECT_NE(Err(ParseReplayArgs({"--trace", "t", "--policy", "switchyard,"})).find("empty name"),
            std::string::npos);
  EXPECT_NE(Err(ParseReplayArgs({"--trace", "t", "--seed", "-1"})).find("--seed"),
            std::string::npos);
  EXPECT_NE(Err(ParseReplayArgs({"--trace", "t", "--seed", "1.5"})).find("--seed"),
            std::string::npos);
  EXPECT_NE(Err(ParseReplayArgs({"--trace", "t", "--rate", "0"})).find("--rate"),
            std::string::npos);
  EXPECT_EQ(Err(ParseReplayArgs({"--trace", "t", "--bogus"})), "unexpected argument '--bogus'");
  EXPECT_EQ(Err(ParseReplayArgs({"--trace", "t", "--shared-prefix", "maybe"})),
            "--shared-prefix needs on, off or both, not 'maybe'");
  EXPECT_EQ(Err(ParseReplayArgs({"--trace", "t", "--shared-prefix"})),
            "--shared-prefix needs a value");
}

TEST(ReplayArgs, SharedPrefixModes) {
  using Modes = std::vector<bool>;
  EXPECT_EQ(ParseReplayArgs({"--trace", "t"})->shared_prefix_modes, Modes{true});
  EXPECT_EQ(ParseReplayArgs({"--trace", "t", "--no-shared-prefix"})->shared_prefix_modes,
            Modes{false});
  EXPECT_EQ(ParseReplayArgs({"--trace", "t", "--shared-prefix", "off"})->shared_prefix_modes,
            Modes{false});
  EXPECT_EQ(ParseReplayArgs({"--trace", "t", "--shared-prefix", "on"})->shared_prefix_modes,
            Modes{true});
  EXPECT_EQ(ParseReplayArgs({"--trace", "t", "--shared-prefix", "both"})->shared_prefix_modes,
            (Modes{true, false}));
}

TEST(ReplayArgs, DisaggregationModes) {
  using scheduler::Disaggregation;
  using Modes = std::vector<Disaggregation>;
  EXPECT_EQ(ParseReplayArgs({"--trace", "t"})->disaggregation_modes,
            Modes{Disaggregation::kColocated});
  EXPECT_EQ(ParseReplayArgs({"--trace", "t", "--disaggregation", "auto,always,auto"})
                ->disaggregation_modes,
            (Modes{Disaggregation::kAuto, Disaggregation::kAlways}));
  EXPECT_EQ(Err(ParseReplayArgs({"--trace", "t", "--disaggregation", "split"})),
            "--disaggregation: disaggregation needs colocated, always or auto, not 'split'");
  EXPECT_EQ(Err(ParseReplayArgs({"--trace", "t", "--disaggregation", "auto,"})),
            "--disaggregation has an empty mode in 'auto,'");
  auto s = ParseSweepArgs({"--trace", "t", "--disaggregation", "always"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->disaggregation, Disaggregation::kAlways);
  EXPECT_EQ(ParseSweepArgs({"--trace", "t"})->disaggregation, Disaggregation::kColocated);
  EXPECT_EQ(Err(ParseSweepArgs({"--trace", "t", "--disaggregation", "always,auto"})),
            "--disaggregation: disaggregation needs colocated, always or auto, not "
            "'always,auto'");
}

TEST(SweepArgs, DefaultsValuesAndErrors) {
  auto s = ParseSweepArgs({"--trace", "t", "--rates", "0.4,0.1,0.2", "--arrivals", "scale"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->rates, (std::vector<double>{0.1, 0.2, 0.4}));  // sorted: lowest = unloaded
  EXPECT_EQ(s->arrivals, "scale");
  EXPECT_EQ(s->policies.size(), 9u);
  auto auto_rates = ParseSweepArgs({"--trace", "t"});  // no --rates: auto
  ASSERT_TRUE(auto_rates.ok());
  EXPECT_TRUE(auto_rates->rates_auto);
  EXPECT_TRUE(auto_rates->rates.empty());
  auto_rates = ParseSweepArgs({"--trace", "t", "--rates", "auto"});
  ASSERT_TRUE(auto_rates.ok());
  EXPECT_TRUE(auto_rates->rates_auto);
  EXPECT_FALSE(ParseSweepArgs({"--trace", "t", "--rates", "0.2,0.1,0.2"})->rates_auto);
  EXPECT_EQ(ParseSweepArgs({"--trace", "t", "--rates", "0.2,0.1,0.2"})->rates,
            (std::vector<double>{0.1, 0.2}));
  EXPECT_EQ(Err(ParseSweepArgs({"--rates", "1"})), "--trace is required");
  EXPECT_NE(Err(ParseSweepArgs({"--trace", "t", "--rates", "1,x"})).find("'x'"), std::string::npos);
  EXPECT_NE(Err(ParseSweepArgs({"--trace", "t", "--rates", "1", "--arrivals", "burst"}))
                .find("poisson, gamma:CV or scale"),
            std::string::npos);
  s = ParseSweepArgs({"--trace", "t", "--arrivals", "gamma:2.5", "--slo-capacity"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->arrivals, "gamma");
  EXPECT_DOUBLE_EQ(s->arrival_cv, 2.5);
  EXPECT_EQ(Err(ParseSweepArgs({"--trace", "t", "--arrivals", "gamma:20"})),
            "--arrivals gamma:CV needs a number in [0.1, 10], not '20'");
}

TEST(SweepArgs, SloCapacityFlags) {
  auto s = ParseSweepArgs({"--trace", "t", "--slo-capacity"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->slo_capacity);
  EXPECT_DOUBLE_EQ(s->slo_k, 2);
  EXPECT_DOUBLE_EQ(s->slo_target, 0.9);
  EXPECT_EQ(s->seeds, 1);
  EXPECT_DOUBLE_EQ(s->warmup_frac, 0.1);
  EXPECT_DOUBLE_EQ(s->drain_frac, 0.1);
  s = ParseSweepArgs({"--trace", "t", "--slo-capacity", "--slo-k", "3", "--slo-target", "0.95",
                      "--seeds", "4", "--warmup-frac", "0.2", "--drain-frac", "0", "--rates",
                      "0.1,0.3"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(s->slo_k, 3);
  EXPECT_DOUBLE_EQ(s->slo_target, 0.95);
  EXPECT_EQ(s->seeds, 4);
  EXPECT_DOUBLE_EQ(s->warmup_frac, 0.2);
  EXPECT_DOUBLE_EQ(s->drain_frac, 0);
  std::vector<std::string> base = {"--trace", "t", "--slo-capacity"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return Err(ParseSweepArgs(a));
  };
  EXPECT_EQ(with({"--slo-k", "0.5"}), "--slo-k needs a number >= 1, not '0.5'");
  EXPECT_EQ(with({"--slo-k", "x"}), "--slo-k needs a number >= 1, not 'x'");
  EXPECT_EQ(with({"--slo-target", "0"}), "--slo-target needs a number in (0, 1], not '0'");
  EXPECT_EQ(with({"--slo-target", "1.5"}), "--slo-target needs a number in (0, 1], not '1.5'");
  EXPECT_EQ(with({"--seeds", "0"}), "--seeds needs a whole number >= 1, not '0'");
  EXPECT_EQ(with({"--seeds", "2.5"}), "--seeds needs a whole number >= 1, not '2.5'");
  EXPECT_EQ(with({"--warmup-frac", "1"}), "--warmup-frac needs a number in [0, 1), not '1'");
  EXPECT_EQ(with({"--drain-frac", "-0.1"}), "--drain-frac needs a number in [0, 1), not '-0.1'");
  EXPECT_NE(
      with({"--warmup-frac", "0.5", "--drain-frac", "0.5"}).find("--warmup-frac + --drain-frac"),
      std::string::npos);
  EXPECT_NE(with({"--arrivals", "scale"}).find("--arrivals scale"), std::string::npos);
  EXPECT_EQ(with({"--seeds"}), "--seeds needs a value");
  EXPECT_EQ(Err(ParseSweepArgs({"--trace", "t", "--seeds", "3"})), "--seeds needs --slo-capacity");
  EXPECT_EQ(Err(ParseSweepArgs({"--trace", "t", "--slo-k", "3"})), "--slo-k needs --slo-capacity");
}

std::string Err(const Result<ConvertArgs>& r) { return r.ok() ? "" : r.status().message(); }

TEST(ConvertArgs, DefaultsAndDeadlineFlags) {
  auto c = ParseConvertArgs({"--from", "agent-sessions", "in.jsonl", "-o", "out.jsonl"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->from, "agent-sessions");
  EXPECT_EQ(c->input, "in.jsonl");
  EXPECT_EQ(c->output, "out.jsonl");
  EXPECT_EQ(c->options.deadline, DeadlineRule::kClasses);
  ASSERT_EQ(c->options.deadline_classes.size(), 2u);
  EXPECT_EQ(c->options.deadline_classes[0].name, "interactive");
  EXPECT_DOUBLE_EQ(c->options.deadline_classes[0].slack_s, 900);
  EXPECT_DOUBLE_EQ(c->options.deadline_classes[1].slack_s, 3 * 3600);
  c = ParseConvertArgs({"--from",
                        "mooncake",
                        "in",
                        "-o",
                        "out",
                        "--deadline-class",
                        "gold:5m,silver:1h,bronze:2h",
                        "--tenant-class",
                        "tenant-0=bronze",
                        "--tenants",
                        "4",
                        "--repeat",
                        "2",
                        "--limit",
                        "9",
                        "--rate",
                        "0.2",
                        "--seed",
                        "3",
                        "--arrival",
                        "bursty",
                        "--model",
                        "m"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->options.deadline_classes.size(), 3u);
  EXPECT_EQ(c->options.tenant_class.at("tenant-0"), "bronze");
  EXPECT_EQ(c->options.tenants, 4);
  EXPECT_EQ(c->options.repeat, 2);
  EXPECT_EQ(c->options.limit, 9);
  EXPECT_DOUBLE_EQ(c->options.rate_per_s, 0.2);
  EXPECT_EQ(c->options.seed, 3u);
  EXPECT_EQ(c->options.arrival, ArrivalProcess::kBursty);
  EXPECT_EQ(c->options.model_id, "m");
  c = ParseConvertArgs({"--from", "azure", "in", "-o", "out", "--arrival", "gamma:3"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->options.arrival, ArrivalProcess::kGamma);
  EXPECT_DOUBLE_EQ(c->options.arrival_cv, 3);
  for (const char* bad : {"gamma:0", "gamma:11", "gamma:x", "gamma"}) {
    c = ParseConvertArgs({"--from", "azure", "in", "-o", "out", "--arrival", bad});
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(c.status().message().find("--arrival"), std::string::npos) << c.status();
  }
  c = ParseConvertArgs({"--from", "azure", "in", "-o", "out", "--deadline", "oracle-span:3"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->options.deadline, DeadlineRule::kOracleSpan);
  EXPECT_DOUBLE_EQ(c->options.deadline_factor, 3);
  c = ParseConvertArgs({"--from", "azure", "in", "-o", "out", "--deadline", "none"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->options.deadline, DeadlineRule::kNone);
  // The old flag: 0 = none, F > 0 = the oracle rule.
  c = ParseConvertArgs({"--from", "azure", "in", "-o", "out", "--deadline-factor", "0"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->options.deadline, DeadlineRule::kNone);
  c = ParseConvertArgs({"--from", "azure", "in", "-o", "out", "--deadline-factor", "2"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->options.deadline, DeadlineRule::kOracleSpan);
  EXPECT_DOUBLE_EQ(c->options.deadline_factor, 2);
  EXPECT_TRUE(ParseConvertArgs({"--help"})->help);
  EXPECT_DOUBLE_EQ(c->options.token_scale, 1);
  EXPECT_DOUBLE_EQ(c->options.time_scale, 1);
  c = ParseConvertArgs({"--from", "agent-sessions", "in", "-o", "out", "--token-scale", "0.02",
                        "--time-scale", "0.1"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->options.token_scale, 0.02);
  EXPECT_DOUBLE_EQ(c->options.time_scale, 0.1);
}

TEST(ConvertArgs, ScaleFlagsRejectBadValuesNamingTheFlag) {
  for (const char* flag : {"--token-scale", "--time-scale"}) {
    for (const char* v : {"0", "-1", "nan", "inf", "x", ""}) {
      auto c = ParseConvertArgs({"--from", "azure", "in", "-o", "out", flag, v});
      EXPECT_EQ(Err(c), std::string(flag) + " needs a number > 0, not '" + v + "'");
    }
    EXPECT_EQ(Err(ParseConvertArgs({"--from", "azure", "in", "-o", "out", flag})),
              std::string(flag) + " needs a value");
  }
}

TEST(ConvertArgs, ThinkTimeFlags) {
  std::vector<std::string> base = {"--from", "agent-sessions", "in", "-o", "out"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return ParseConvertArgs(a);
  };
  auto c = with({"--think-time", "120:2", "--think-every", "5"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->options.think_time_s, 120);
  EXPECT_EQ(c->options.think_sigma, 2);
  EXPECT_EQ(c->options.think_every, 5);
  c = with({"--think-time", "30"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->options.think_sigma, 1.5) << "the default shape";
  EXPECT_EQ(Err(with({"--think-time", "0"})),
            "--think-time needs a number > 0 and <= 86400, not '0'");
  EXPECT_EQ(Err(with({"--think-time", "60:9"})),
            "--think-time sigma needs a number > 0 and <= 4, not '9'");
  EXPECT_EQ(Err(with({"--think-every", "0.5"})), "--think-every needs a number >= 1, not '0.5'");
}

TEST(ConvertArgs, ContextReuseAndOutputCap) {
  std::vector<std::string> base = {"--from", "agent-sessions", "in", "-o", "out"};
  auto parse = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return ParseConvertArgs(a);
  };
  auto d = parse({});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->options.prefix_reuse);
  EXPECT_EQ(d->options.output_cap, 16384);
  auto c = parse({"--context-reuse", "exact", "--output-cap", "recorded"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->options.prefix_reuse);
  EXPECT_EQ(c->options.output_cap, 0);
  c = parse({"--output-cap", "4096"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->options.output_cap, 4096);
  EXPECT_EQ(Err(parse({"--context-reuse", "some"})),
            "--context-reuse must be prefix or exact, not 'some'");
  EXPECT_EQ(Err(parse({"--output-cap", "0"})), "--output-cap needs a whole number >= 1, not '0'");
}

TEST(ConvertArgs, ErrorsNameTheFlag) {
  std::vector<std::string> base = {"--from", "agent-sessions", "in", "-o", "out"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return Err(ParseConvertArgs(a));
  };
  EXPECT_EQ(Err(ParseConvertArgs({"in", "-o", "out"})), "--from is required");
  EXPECT_EQ(Err(ParseConvertArgs({"--from", "azure", "-o", "out"})), "INPUT is required");
  EXPECT_EQ(Err(ParseConvertArgs({"--from", "azure", "in"})), "-o is required");
  EXPECT_NE(Err(ParseConvertArgs({"--from", "sharegpt", "in", "-o", "o"})).find("--from must be"),
            std::string::npos);
  EXPECT_EQ(with({"--rate", "0"}), "--rate needs a number > 0, not '0'");
  EXPECT_EQ(with({"--tenants", "0"}), "--tenants needs a whole number >= 1, not '0'");
  EXPECT_EQ(with({"--repeat", "1.5"}), "--repeat needs a whole number >= 1, not '1.5'");
  EXPECT_EQ(with({"--arrival", "x"}), "--arrival must be poisson, bursty or gamma:CV, not 'x'");
  EXPECT_EQ(with({"--deadline-class", "interactive:900"}),
            "--deadline-class: '900' is not a duration > 0 with a unit s, m or h");
  EXPECT_NE(with({"--deadline-class", "interactive"})
                .find("--deadline-class: 'interactive' is not "
                      "NAME:DURATION"),
            std::string::npos);
  EXPECT_NE(with({"--tenant-class", "tenant-0"}).find("--tenant-class"), std::string::npos);
  EXPECT_NE(with({"--tenant-class", "tenant-0=gold"})
                .find("--tenant-class: tenant 'tenant-0' has "
                      "class 'gold'"),
            std::string::npos);
  EXPECT_NE(with({"--deadline", "oracle-span:0"}).find("--deadline: oracle-span needs a factor"),
            std::string::npos);
  EXPECT_NE(with({"--deadline", "sometimes"}).find("--deadline must be"), std::string::npos);
  EXPECT_EQ(with({"--deadline", "none", "--deadline-class", "a:1s"}),
            "--deadline-class sets class deadlines, which --deadline none replaces");
  EXPECT_EQ(with({"--deadline", "oracle-span:3", "--tenant-class", "tenant-0=batch"}),
            "--tenant-class sets class deadlines, which --deadline oracle-span:3 replaces");
  EXPECT_EQ(with({"--deadline-factor", "-1"}), "--deadline-factor needs a number >= 0, not '-1'");
  EXPECT_EQ(with({"--deadline"}), "--deadline needs a value");
  EXPECT_EQ(with({"extra"}), "unexpected argument 'extra'");
}

}  // namespace
}  // namespace switchyard::replay
