// /metrics of a live server after a small workload (an LLM node, a tool wait long enough
// for a demotion under a small HBM, a second LLM node): every family an operator needs is
// there with the right TYPE and non-empty samples, `promtool check metrics` accepts the
// scrape without a complaint, and every metric the Grafana dashboard
// (configs/grafana/switchyard.json) queries is a family the scrape exposes.
//
// promtool comes from Debian's `prometheus` package (scripts/bootstrap.sh). Without it the
// promtool check skips, unless SY_REQUIRE_PROMTOOL=1 (scripts/test.sh sets it): then it
// fails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "http/http_server.h"
#include "proto/json.h"
#include "serve/http_api.h"
#include "tests/common/wait_until.h"
#include "tests/http/http_test_client.h"

namespace switchyard::serve {
namespace {

constexpr char kMetricsToken[] = "metrics-tenant-token-0123456789";

// llm-0 creates "main" (8000 tokens: 1 GiB of KV in a 1.25 GiB HBM), a long tool wait
// makes the scheduler demote it, llm-1 extends it after the tool.
constexpr char kBig[] =
    R"({"id":"big","nodes":[
      {"id":"llm-0","kind":"LLM","modelId":"Llama-3.1-8B","cacheRefs":[{"context":"main","mode":"CREATE"}],
       "hints":{"promptTokens":8000,"extendTokens":8000,"maxOutputTokens":4}},
      {"id":"bash","kind":"TOOL","toolName":"Bash","deps":["llm-0"],"hints":{"expectedDurationMs":600000}},
      {"id":"llm-1","kind":"LLM","modelId":"Llama-3.1-8B","deps":["bash"],
       "cacheRefs":[{"context":"main","mode":"EXTEND"}],
       "hints":{"promptTokens":8300,"extendTokens":300,"maxOutputTokens":4}}]})";

// The family names and types of a scrape ("# TYPE name type" lines).
std::map<std::string, std::string> Families(const std::string& scrape) {
  std::map<std::string, std::string> out;
  std::istringstream in(scrape);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    std::istringstream f(line.substr(7));
    std::string name, type;
    f >> name >> type;
    out[name] = type;
  }
  return out;
}

// The value of the first sample line starting with `prefix` (name and labels), or -1.
double Value(const std::string& scrape, const std::string& prefix) {
  std::istringstream in(scrape);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) return std::atof(line.substr(line.rfind(' ') + 1).c_str());
  return -1;
}

std::string PromtoolPath() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string p = dir + "/promtool";
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

class MetricsPromtoolTest : public ::testing::Test {
 protected:
  // One server and one workload for the whole suite (the scheduler runs in real time).
  static void SetUpTestSuite() {
    dir_ = new std::string(::testing::TempDir() + "/sy_metrics_" + std::to_string(::getpid()));
    std::filesystem::remove_all(*dir_);
    service::ServiceOptions so;
    so.data_dir = *dir_;
    so.sync_writes = false;
    so.scheduler.hbm_bytes_per_worker = 1280ULL << 20;  // small: the tool wait demotes "main"
    so.scheduler.host_bytes = 4ULL << 30;
    so.scheduler.disk_bytes = 4ULL << 30;
    so.scheduler.kv_bytes_scale = 256;
    auto svc = service::Service::Open(so, RealClock::Default());
    ASSERT_TRUE(svc.ok()) << svc.status();
    service_ = svc->release();
    v1::ServiceConfig cfg;
    auto* t = cfg.add_tenants();
    t->set_name("t");
    t->set_token(kMetricsToken);
    api_ = new HttpApi(service_, *service::Auth::Create(cfg, *dir_), RealClock::Default());
    http::HttpServerOptions ho;
    ho.port = 0;
    server_ = new http::HttpServer(ho, [](const http::HttpRequest& r) { return api_->Handle(r); });
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
    RunWorkload();
    scrape_ = new std::string(testing::Request(port_, "GET", "/metrics").body);
  }
  static void TearDownTestSuite() {
    if (server_) server_->Stop();
    delete api_;
    delete service_;
    delete server_;  // outlives every answer callback it handed out
    if (dir_) std::filesystem::remove_all(*dir_);
    delete dir_;
    delete scrape_;
  }
  static testing::ClientResponse Call(const std::string& method, const std::string& target,
                                      const std::string& body = "") {
    return testing::Request(port_, method, target, body,
                            {{"Authorization", std::string("Bearer ") + kMetricsToken}});
  }
  static v1::WorkflowStatus WaitFor(const std::function<bool(const v1::WorkflowStatus&)>& pred) {
    v1::WorkflowStatus s;
    if (!testing::WaitUntil([&] {
          s = v1::WorkflowStatus();
          auto r = Call("GET", "/v1/workflows/big");
          EXPECT_TRUE(proto::ParseJson(r.body, &s).ok()) << r.body;
          return pred(s);
        }))
      ADD_FAILURE() << "timed out; last status: " << *proto::ToJson(s);
    return s;
  }
  static bool NodeSucceeded(const v1::WorkflowStatus& s, const std::string& id) {
    for (const auto& n : s.nodes())
      if (n.id() == id) return n.state() == v1::NODE_SUCCEEDED;
    return false;
  }
  static void Event(const std::string& type) {
    auto r =
        Call("POST", "/v1/workflows/big/events", "{\"nodeId\":\"bash\",\"type\":\"" + type + "\"}");
    ASSERT_EQ(r.status, 200) << r.body;
  }
  static void RunWorkload() {
    ASSERT_EQ(Call("POST", "/v1/workflows", kBig).status, 201);
    WaitFor([](const auto& s) { return NodeSucceeded(s, "llm-0"); });
    Event("TOOL_STARTED");
    WaitFor([](const auto& s) {
      for (const auto& kv : s.kv())
        if (kv.context() == "main" && !kv.in_flight() &&
            (kv.tier() == "host" || kv.tier() == "disk"))
          return true;
      return false;
    });
    Event("TOOL_FINISHED");
    ASSERT_EQ(Call("POST", "/v1/workflows/big:close").status, 200);
    WaitFor([](const auto& s) { return s.state() == v1::WORKFLOW_COMPLETED; });
    ASSERT_TRUE(service_->Flush().ok());
  }

  static inline std::string* dir_ = nullptr;
  static inline service::Service* service_ = nullptr;
  static inline HttpApi* api_ = nullptr;
  static inline http::HttpServer* server_ = nullptr;
  static inline uint16_t port_ = 0;
  static inline std::string* scrape_ = nullptr;
};

TEST_F(MetricsPromtoolTest, FamiliesAreTypedAndCarrySamples) {
  ASSERT_NE(scrape_, nullptr) << "the server or its workload failed (see above)";
  const std::string& m = *scrape_;
  const std::map<std::string, std::string> want = {
      {"switchyard_http_requests_total", "counter"},
      {"switchyard_http_request_seconds", "histogram"},
      {"switchyard_http_inflight", "gauge"},
      {"switchyard_workflows", "gauge"},
      {"switchyard_archived_reads_total", "counter"},
      {"switchyard_node_events_total", "counter"},
      {"switchyard_store_records_total", "counter"},
      {"switchyard_store_commit_seconds", "histogram"},
      {"switchyard_store_record_seconds", "histogram"},
      {"switchyard_tier_used_bytes", "gauge"},
      {"switchyard_tier_capacity_bytes", "gauge"},
      {"switchyard_kv_moved_bytes_total", "counter"},
      {"switchyard_link_moved_bytes_total", "counter"},
      {"switchyard_link_granted_bytes_total", "counter"},
      {"switchyard_link_grants_in_flight", "gauge"},
      {"switchyard_transfer_seconds", "histogram"},
      {"switchyard_link_grant_wait_seconds", "histogram"},
      // Declared here, sampled where workers with KV stores joined (tests/workers).
      {"switchyard_credit_granted_bytes", "gauge"},
      {"switchyard_credit_in_use_bytes", "gauge"},
      {"switchyard_credit_refused_puts_total", "counter"},
      {"switchyard_decisions_total", "counter"},
      {"switchyard_scheduler_queued_nodes", "gauge"},
      {"switchyard_scheduler_running_nodes", "gauge"},
      {"switchyard_kv_tier_hits_total", "counter"},
      {"switchyard_kv_misses_total", "counter"},
      {"switchyard_kv_recomputed_tokens_total", "counter"},
      {"switchyard_engine_step_seconds", "histogram"},
      {"switchyard_engine_step_batch_size", "histogram"},
      {"switchyard_engine_step_tokens", "histogram"},
      {"switchyard_llm_ttft_seconds", "histogram"},
      {"switchyard_workflow_seconds", "histogram"},
      {"switchyard_tool_wait_seconds", "histogram"},
  };
  auto families = Families(m);
  for (const auto& [name, type] : want) {
    ASSERT_TRUE(families.count(name)) << name << " missing from:\n" << m;
    EXPECT_EQ(families[name], type) << name;
  }
  // What the workload did, as the families report it.
  EXPECT_GT(Value(m, "switchyard_decisions_total{kind=\"demote\",policy=\""), 0) << m;
  EXPECT_GT(Value(m, "switchyard_decisions_total{kind=\"place\",policy=\""), 1) << m;
  EXPECT_GE(Value(m, "switchyard_link_moved_bytes_total{link=\"pcie0\","), 8004.0 * 131072) << m;
  EXPECT_GT(Value(m, "switchyard_transfer_seconds_count{class="), 0) << m;
  // Every grant observed its wait for the link budget: the demotion's (background) and
  // the prefetch's (latency).
  EXPECT_GE(Value(m, "switchyard_link_grant_wait_seconds_count{class=\"background\"}"), 1) << m;
  EXPECT_GE(Value(m, "switchyard_link_grant_wait_seconds_count{class=\"latency\"}"), 1) << m;
  // The demoted context came back by a prefetch: a hit in the tier it was kept in.
  EXPECT_GE(Value(m, "switchyard_kv_tier_hits_total{tier="), 1) << m;
  EXPECT_EQ(Value(m, "switchyard_tool_wait_seconds_count{tenant=\"t\"}"), 1) << m;
  EXPECT_EQ(Value(m, "switchyard_llm_ttft_seconds_count{tenant=\"t\"}"), 2) << m;
  EXPECT_EQ(Value(m, "switchyard_workflow_seconds_count{tenant=\"t\",state=\"completed\"}"), 1)
      << m;
  EXPECT_GT(Value(m, "switchyard_engine_step_seconds_count{worker=\"0\"}"), 0) << m;
  EXPECT_EQ(Value(m, "switchyard_tier_capacity_bytes{tier=\"hbm\",worker=\"0\"}"),
            double(1280ULL << 20))
      << m;
  EXPECT_EQ(Value(m, "switchyard_tier_capacity_bytes{tier=\"host\"}"), double(4ULL << 30)) << m;
  EXPECT_EQ(Value(m, "switchyard_scheduler_queued_nodes"), 0) << m;
  EXPECT_EQ(Value(m, "switchyard_scheduler_running_nodes"), 0) << m;
  // The store's histogram: count = the commits, +Inf bucket = count.
  double commits = Value(m, "switchyard_store_commit_seconds_count");
  EXPECT_GT(commits, 0) << m;
  EXPECT_EQ(Value(m, "switchyard_store_commit_seconds_bucket{le=\"+Inf\"}"), commits) << m;
  EXPECT_GE(Value(m, "switchyard_store_commit_seconds_sum"), 0) << m;
}

TEST_F(MetricsPromtoolTest, PromtoolAcceptsTheScrape) {
  ASSERT_NE(scrape_, nullptr) << "the server or its workload failed (see above)";
  std::string promtool = PromtoolPath();
  if (promtool.empty()) {
    const char* req = std::getenv("SY_REQUIRE_PROMTOOL");
    if (req && std::string(req) == "1")
      FAIL() << "promtool not found on PATH and SY_REQUIRE_PROMTOOL=1 (install Debian's "
                "prometheus: scripts/bootstrap.sh)";
    GTEST_SKIP() << "promtool not found on PATH (Debian's prometheus package; "
                    "scripts/bootstrap.sh installs it)";
  }
  const std::string file = *dir_ + "/scrape.prom";
  std::ofstream(file) << *scrape_;
  std::string cmd = promtool + " check metrics < " + file + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  EXPECT_EQ(rc, 0) << "promtool check metrics failed:\n" << out;
  EXPECT_EQ(out, "") << "promtool complained:\n" << out;
}

// Every switchyard_* metric a dashboard expression or variable queries is a family of the
// scrape (a `_bucket` / `_sum` / `_count` series: of a histogram family).
TEST_F(MetricsPromtoolTest, DashboardQueriesOnlyExposedFamilies) {
  ASSERT_NE(scrape_, nullptr) << "the server or its workload failed (see above)";
  const std::string path = std::string(SY_SOURCE_DIR) + "/configs/grafana/switchyard.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  nlohmann::json d = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(d.is_discarded()) << path << " is not valid JSON";
  ASSERT_TRUE(d.contains("panels") && d["panels"].is_array()) << path << ": no panels array";
  std::vector<std::string> exprs;
  for (const auto& panel : d["panels"]) {
    ASSERT_TRUE(panel.contains("targets"))
        << path << ": panel '" << panel.value("title", "?") << "' has no targets";
    for (const auto& t : panel["targets"]) exprs.push_back(t.value("expr", ""));
  }
  for (const auto& v : d["templating"]["list"])
    if (v.contains("definition")) exprs.push_back(v["definition"].get<std::string>());
  ASSERT_GE(exprs.size(), 12u);
  const auto families = Families(*scrape_);
  const std::regex metric("switchyard_[a-zA-Z0-9_:]+");
  std::set<std::string> used;
  for (const std::string& e : exprs) {
    for (std::sregex_iterator it(e.begin(), e.end(), metric), end; it != end; ++it) {
      std::string name = it->str();
      used.insert(name);
      if (families.count(name)) continue;
      bool series = false;
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        std::string s(suffix);
        if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
          auto f = families.find(name.substr(0, name.size() - s.size()));
          series = f != families.end() && f->second == "histogram";
        }
        if (series) break;
      }
      EXPECT_TRUE(series) << path << ": '" << name << "' in `" << e
                          << "` is not a family /metrics exposes";
    }
  }
  // The panels the operator needs are there.
  for (const char* need :
       {"switchyard_tier_used_bytes", "switchyard_link_moved_bytes_total",
        "switchyard_decisions_total", "switchyard_scheduler_queued_nodes",
        "switchyard_engine_step_seconds_bucket", "switchyard_llm_ttft_seconds_bucket",
        "switchyard_workflow_seconds_bucket", "switchyard_http_request_seconds_bucket"})
    EXPECT_TRUE(used.count(need)) << path << " has no panel on " << need;
}

}  // namespace
}  // namespace switchyard::serve
