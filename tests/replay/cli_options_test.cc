// Parsing of `switchyard replay` and `switchyard sweep` options: defaults and every error.
#include "bench/replay/cli_options.h"

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
}

TEST(SweepArgs, DefaultsValuesAndErrors) {
  auto s = ParseSweepArgs({"--trace", "t", "--rates", "0.4,0.1,0.2", "--arrivals", "scale"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->rates, (std::vector<double>{0.1, 0.2, 0.4}));  // sorted: lowest = unloaded
  EXPECT_EQ(s->arrivals, "scale");
  EXPECT_EQ(s->policies.size(), 7u);
  EXPECT_EQ(Err(ParseSweepArgs({"--trace", "t"})), "--rates is required");
  EXPECT_EQ(Err(ParseSweepArgs({"--rates", "1"})), "--trace is required");
  EXPECT_NE(Err(ParseSweepArgs({"--trace", "t", "--rates", "1,x"})).find("'x'"), std::string::npos);
  EXPECT_NE(Err(ParseSweepArgs({"--trace", "t", "--rates", "1", "--arrivals", "burst"}))
                .find("poisson or scale"),
            std::string::npos);
}

}  // namespace
}  // namespace switchyard::replay
