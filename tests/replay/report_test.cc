// Report writers: JSON lines and report.json parse as JSON, carry the required fields, and
// report.html is self-contained with the four charts.
#include "replay/report.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

namespace switchyard::replay {
namespace {

PolicyReport Sample(const std::string& policy) {
  PolicyReport r;
  r.policy = policy;
  r.cluster = "c";
  r.workflows = 3;
  r.completed = 3;
  r.jct_s = {1, 2, 4};
  r.ttft_s = {0.1, 0.2};
  r.jct_mean_s = 7.0 / 3;
  r.jct_p99_s = 4;
  r.bytes_moved_by_class = {{"background", 100}, {"latency", 5}};
  r.bytes_moved_by_link = {{"node0/w0<->node0/cpu", 105}};
  r.hbm_util = {1.0, {0.1, 0.5}};
  r.link_bytes["pcie/background"] = {1.0, {100, 0}};
  r.events_per_s = 1234.5;
  return r;
}

google::protobuf::Struct Parse(const std::string& json) {
  google::protobuf::Struct s;
  auto st = google::protobuf::util::JsonStringToMessage(json, &s);
  EXPECT_TRUE(st.ok()) << st.ToString() << "\n" << json;
  return s;
}

TEST(Report, JsonLineHasTheIssueFields) {
  google::protobuf::Struct s = Parse(SummaryJsonLine(Sample("switchyard")));
  for (const char* f :
       {"policy", "workflows", "jct_mean_s", "jct_p50_s", "jct_p95_s", "jct_p99_s", "ttft_p50_s",
        "ttft_p99_s", "deadline_miss_rate", "throughput_wf_per_min", "hbm_util_mean",
        "bytes_moved_by_class", "recompute_tokens", "preemptions", "retries", "events_per_s"})
    EXPECT_TRUE(s.fields().count(f)) << f;
  EXPECT_EQ(s.fields().at("policy").string_value(), "switchyard");
  EXPECT_EQ(
      s.fields().at("bytes_moved_by_class").struct_value().fields().at("latency").number_value(),
      5);
}

TEST(Report, ReportJsonIsDeterministicAndLeavesOutWallClock) {
  ReportMeta meta{"t \"quoted\"", "c", "desc", 4, ""};
  std::vector<PolicyReport> runs = {Sample("switchyard"), Sample("vllm-fcfs")};
  std::string a = ReportJson(meta, runs);
  runs[0].events_per_s = 99;  // wall-clock figures must not change the file
  runs[0].wall_s = 7;
  EXPECT_EQ(a, ReportJson(meta, runs));
  google::protobuf::Struct s = Parse(a);
  EXPECT_EQ(s.fields().at("policies").list_value().values_size(), 2);
  EXPECT_EQ(a.find("events_per_s"), std::string::npos);
}

TEST(Report, ReportJsonHasWorkflowRecordsWithNullForNone) {
  PolicyReport r = Sample("switchyard");
  r.workflow_records = {{"wf-a", 1.5, 12.25, "completed", 901.5, 7.5, 4},
                        {"wf-b", 86400.123, -1, "unfinished", -1},
                        {"wf-c", 3, 7, "failed", -1}};
  std::string json = ReportJson({"t", "c", "d", 1, ""}, {r});
  EXPECT_EQ(json, ReportJson({"t", "c", "d", 1, ""}, {r})) << "deterministic";
  google::protobuf::Struct s = Parse(json);
  const auto& policy = s.fields().at("policies").list_value().values(0).struct_value().fields();
  EXPECT_EQ(policy.at("workflows").number_value(), 3) << "workflows stays the count";
  const auto& recs = policy.at("workflow_records").list_value();
  ASSERT_EQ(recs.values_size(), 3);
  const auto& a = recs.values(0).struct_value().fields();
  EXPECT_EQ(a.at("id").string_value(), "wf-a");
  EXPECT_DOUBLE_EQ(a.at("arrival_s").number_value(), 1.5);
  EXPECT_DOUBLE_EQ(a.at("end_s").number_value(), 12.25);
  EXPECT_EQ(a.at("state").string_value(), "completed");
  EXPECT_DOUBLE_EQ(a.at("deadline_s").number_value(), 901.5);
  EXPECT_DOUBLE_EQ(a.at("tool_s").number_value(), 7.5);
  EXPECT_EQ(a.at("llm_calls").number_value(), 4);
  const auto& b = recs.values(1).struct_value().fields();
  EXPECT_EQ(b.at("state").string_value(), "unfinished");
  EXPECT_EQ(b.at("end_s").kind_case(), google::protobuf::Value::kNullValue);
  EXPECT_EQ(b.at("deadline_s").kind_case(), google::protobuf::Value::kNullValue);
  EXPECT_DOUBLE_EQ(b.at("arrival_s").number_value(), 86400.123) << "millisecond precision";
  EXPECT_NE(json.find("\"end_s\":null"), std::string::npos);
  // The per-policy JSON line stays a summary.
  EXPECT_EQ(SummaryJsonLine(r).find("workflow_records"), std::string::npos);
}

TEST(Report, HtmlIsSelfContainedWithTheCharts) {
  std::string html = ReportHtml({"t", "c", "d", 1, ""}, {Sample("switchyard"), Sample("kvflow")});
  for (const char* s : {"JCT CDF", "TTFT CDF", "HBM occupancy over time", "link traffic", "<svg",
                        "<polyline", "kvflow"})
    EXPECT_NE(html.find(s), std::string::npos) << s;
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // only the xmlns
}

TEST(Report, NumbersAndStringsAreEscaped) {
  EXPECT_EQ(Num(0.5), "0.5");
  EXPECT_EQ(Num(1.0 / 0.0), "null");
  EXPECT_EQ(JsonString("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
  std::string svg = SvgLineChart("<t>", "x", "y", {{"a&b", {1, 2}, {3, 4}}});
  EXPECT_NE(svg.find("&lt;t&gt;"), std::string::npos);
  EXPECT_NE(svg.find("a&amp;b"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::replay
