// The correlation keys in the logs (docs/design.md invariant 8), captured from a JSON file
// sink at debug level while a workflow runs through a demotion: a scheduler decision line
// with workflow_id, node_id, transfer_id and model_epoch; the transfer's commit line with
// the same transfer_id; a request line with the request id the answer's x-request-id names
// (the client's when it is a safe token, else one made by the server), route, status and
// latency.
#include <google/protobuf/struct.pb.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/logging.h"
#include "tests/serve/scheduler_api_env.h"

namespace switchyard::serve {
namespace {

using testing::SchedulerApiEnv;

// One captured line's fields (values as strings; numbers unquoted in the JSON).
struct Line {
  std::map<std::string, std::string> f;
  std::string get(const std::string& k) const {
    auto it = f.find(k);
    return it == f.end() ? "" : it->second;
  }
};

// The log is one flat JSON object per line (FormatLogLine): parsed through protobuf's
// Struct, which takes any JSON object.
std::vector<Line> ReadLog(const std::string& path) {
  std::vector<Line> out;
  std::ifstream in(path);
  std::string text;
  while (std::getline(in, text)) {
    google::protobuf::Struct s;
    EXPECT_TRUE(proto::ParseJson(text, &s).ok()) << "not a JSON line: " << text;
    Line l;
    for (const auto& [k, v] : s.fields())
      l.f[k] = v.has_string_value() ? v.string_value() : std::to_string(int64_t(v.number_value()));
    out.push_back(std::move(l));
  }
  return out;
}

class ObservabilityLog : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/sy_obs_log_" + std::to_string(::getpid()) + ".jsonl";
    std::remove(path_.c_str());
    LogOptions o;
    o.format = LogFormat::kJson;
    o.level = LogLevel::kDebug;
    o.file = path_;
    InitLogging(o);
  }
  void TearDown() override {
    InitLogging(LogOptions{});  // back to stderr, info
    std::remove(path_.c_str());
  }
  std::vector<Line> Captured() {
    FlushLogs();
    return ReadLog(path_);
  }
  std::string path_;
};

TEST_F(ObservabilityLog, DecisionTransferAndRequestLinesCarryTheirKeys) {
  SchedulerApiEnv env("obs_log");
  ASSERT_TRUE(env.ok());
  v1::WorkflowStatus done = env.RunBig();
  ASSERT_EQ(done.state(), v1::WORKFLOW_COMPLETED);
  http::HttpResponse tagged =
      env.Call("GET", "/v1/workflows/big", "", {{"x-request-id", "trace-42.a"}});
  EXPECT_EQ(tagged.status, 200);
  EXPECT_EQ(tagged.headers["x-request-id"], "trace-42.a");
  http::HttpResponse unsafe =
      env.Call("GET", "/v1/workflows/big", "", {{"x-request-id", "bad id\"{}<script>"}});
  const std::string made = unsafe.headers["x-request-id"];
  EXPECT_EQ(made.rfind("req_", 0), 0u) << made;
  EXPECT_EQ(made.size(), 4u + 16u) << made;
  // A mutation's request line names the workflow it changed (invariant 8).
  http::HttpResponse cancel =
      env.Call("DELETE", "/v1/workflows/big", "", {{"x-request-id", "trace-43.cancel"}});
  EXPECT_EQ(cancel.headers["x-request-id"], "trace-43.cancel");
  http::HttpResponse missing = env.Call("GET", "/v1/workflows/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.headers["x-request-id"], made);  // one per request

  std::vector<Line> lines = Captured();
  ASSERT_FALSE(lines.empty());
  std::set<std::string> moved;  // transfer ids of the demote / prefetch decisions
  for (const auto& d : done.decisions())
    if (d.transfer_id() != 0) moved.insert(std::to_string(d.transfer_id()));
  ASSERT_FALSE(moved.empty());
  bool decision = false, place = false, committed = false;
  for (const Line& l : lines) {
    if (l.get("msg") == "scheduler decision" && l.get("workflow_id") == "big") {
      EXPECT_EQ(l.get("level"), "debug");
      EXPECT_FALSE(l.get("model_epoch").empty());
      if (l.get("kind") == "place") place |= l.get("node_id") == "llm-0";
      if (moved.count(l.get("transfer_id"))) decision |= !l.get("node_id").empty();
    }
    if (l.get("msg") == "transfer committed" && moved.count(l.get("transfer_id")))
      committed |= l.get("workflow_id") == "big" && l.get("context") == "main";
  }
  EXPECT_TRUE(decision) << "no decision line with workflow_id, node_id and transfer_id";
  EXPECT_TRUE(place) << "no place decision line naming its node";
  EXPECT_TRUE(committed) << "no transfer committed line with the decision's transfer_id";
  // The request lines: each with its id, route, status and latency.
  std::map<std::string, Line> by_id;
  for (const Line& l : lines)
    if (l.get("msg") == "http request") by_id[l.get("request_id")] = l;
  ASSERT_TRUE(by_id.count("trace-42.a"));
  EXPECT_EQ(by_id["trace-42.a"].get("route"), "/v1/workflows/{id}");
  EXPECT_EQ(by_id["trace-42.a"].get("status"), "200");
  EXPECT_EQ(by_id["trace-42.a"].get("method"), "GET");
  EXPECT_FALSE(by_id["trace-42.a"].get("latency_us").empty());
  ASSERT_TRUE(by_id.count("trace-43.cancel"));
  EXPECT_EQ(by_id["trace-43.cancel"].get("workflow_id"), "big");
  EXPECT_EQ(by_id["trace-43.cancel"].get("method"), "DELETE");
  ASSERT_TRUE(by_id.count(made));
  ASSERT_TRUE(by_id.count(missing.headers["x-request-id"]));
  EXPECT_EQ(by_id[missing.headers["x-request-id"]].get("status"), "404");
  for (const Line& l : lines)  // the client's unsafe id never reaches the log
    EXPECT_EQ(l.get("request_id").find("script"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::serve
