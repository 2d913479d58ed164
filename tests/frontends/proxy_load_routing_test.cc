// Proxy mode routes by the load its upstreams report: two upstreams that answer every call
// at once, one of whose /metrics says it is loaded with other clients' requests (vLLM's
// gauges: 12 running, 6 waiting, 95 % of its KV cache in use), the other idle. With the
// proxy reading /metrics, new sessions go to the idle one; without (the control), every
// call goes where the scheduler's own view puts it — the first upstream, which it sees as
// idle as the second.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <string>

#include "tests/common/wait_until.h"
#include "tests/frontends/proxy_server.h"
#include "tests/http/http_test_client.h"
#include "tests/upstream/recording_upstream.h"

namespace switchyard::frontends {
namespace {

using nlohmann::json;
using testing::kModel;
using testing::kToken;
using upstream::testing::RecordingUpstream;
using upstream::testing::VllmGauges;

struct Routed {
  size_t busy = 0, idle = 0;  // chat calls each upstream got
  json cluster;
};

// Five sessions of one call each, one after the other, through a proxy in front of `busy`
// and `idle` (in that order); `load_interval_ms` 0: the proxy does not read /metrics.
Routed RunSessions(int load_interval_ms, const std::string& tag) {
  RecordingUpstream busy, idle;
  for (RecordingUpstream* u : {&busy, &idle})
    u->Answer("POST /v1/chat/completions", 200, upstream::testing::ChatAnswer(40));
  busy.Answer("GET /metrics", 200, VllmGauges(12, 6, 0.95));
  idle.Answer("GET /metrics", 200, VllmGauges(0, 0, 0.0));
  testing::ProxyTestServer proxy;
  testing::ProxyTestOptions o;
  o.steering = false;
  o.load_interval_ms = load_interval_ms;
  proxy.Start(::testing::TempDir() + "/sy_load_route_" + tag + std::to_string(::getpid()), kToken,
              busy.url() + "," + idle.url(), o);
  auto cluster = [&] {
    auto r = testing::Request(proxy.port, "GET", "/v1/cluster", "",
                              {{"Authorization", std::string("Bearer ") + kToken + "-admin"}});
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  };
  auto call = [&](const std::string& session) {
    json body = {{"model", kModel},
                 {"messages", {{{"role", "user"}, {"content", "hello from " + session}}}},
                 {"max_tokens", 4}};
    auto r = testing::Request(proxy.port, "POST", "/v1/chat/completions", body.dump(),
                              {{"Authorization", std::string("Bearer ") + kToken},
                               {"Content-Type", "application/json"},
                               {"x-session-id", session}});
    EXPECT_EQ(r.status, 200) << r.body;
    // The answer may reach the client before the scheduler saw the call end: wait for that,
    // so that each call finds the one before it finished (and its length learned).
    EXPECT_TRUE(switchyard::testing::WaitUntil([&] {
      auto m = testing::Request(proxy.port, "GET", "/metrics", "", {});
      return m.body.find("\nswitchyard_scheduler_running_nodes 0\n") != std::string::npos;
    }));
  };
  // One call first: the scheduler learns a call's output length, which prices the load.
  call(tag + "-first");
  if (load_interval_ms > 0) {
    // Both upstreams' loads were read (and reported to the scheduler before they show).
    EXPECT_TRUE(switchyard::testing::WaitUntil([&] {
      json c = cluster();
      return c["upstreams"][0]["load"].value("running", 0.0) == 12 &&
             c["upstreams"][1]["load"].value("scrapes", "0") != "0";
    })) << cluster().dump();
  }
  for (int i = 0; i < 4; ++i) call(tag + "-s" + std::to_string(i));
  Routed out;
  out.busy = busy.requests("POST /v1/chat/completions").size();
  out.idle = idle.requests("POST /v1/chat/completions").size();
  out.cluster = cluster();
  return out;
}

TEST(ProxyLoadRouting, NewSessionsGoToTheUpstreamWhoseMetricsReportLessLoad) {
  Routed read = RunSessions(20, "on");
  EXPECT_EQ(read.busy, 1u) << "only the first call, before any load was known";
  EXPECT_EQ(read.idle, 4u);
  const json& busy = read.cluster["upstreams"][0]["load"];
  EXPECT_EQ(busy["engine"], "vllm") << read.cluster.dump();
  EXPECT_EQ(busy.value("waiting", 0.0), 6);
  EXPECT_DOUBLE_EQ(busy.value("kvUsage", 0.0), 0.95);
  // The idle one: read, with nothing running (proto3 JSON leaves zeros out).
  EXPECT_EQ(read.cluster["upstreams"][1]["load"]["engine"], "vllm");
  EXPECT_EQ(read.cluster["upstreams"][1]["load"].value("running", 0.0), 0);

  Routed blind = RunSessions(0, "off");
  EXPECT_EQ(blind.busy, 5u) << "the scheduler alone sees two idle upstreams: the first wins";
  EXPECT_EQ(blind.idle, 0u);
  EXPECT_FALSE(blind.cluster["upstreams"][0].contains("load")) << blind.cluster.dump();
}

}  // namespace
}  // namespace switchyard::frontends
