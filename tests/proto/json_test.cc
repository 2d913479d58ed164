#include "proto/json.h"

#include <gtest/gtest.h>

#include "proto/switchyard/v1/events.pb.h"
#include "proto/switchyard/v1/kv.pb.h"
#include "proto/switchyard/v1/workflow.pb.h"

namespace switchyard::proto {
namespace {

TEST(JsonTest, ParsesWorkflowInCamelAndSnakeCase) {
  v1::Workflow wf;
  ASSERT_TRUE(ParseJson(R"({"id":"w","tenant":"t","deadlineMs":5000,
      "nodes":[{"id":"a","kind":"LLM","hints":{"prompt_tokens":100}},
               {"id":"b","kind":"TOOL","deps":["a"],"sideEffect":true}]})",
                        &wf)
                  .ok());
  EXPECT_EQ(wf.deadline_ms(), 5000);
  ASSERT_EQ(wf.nodes_size(), 2);
  EXPECT_EQ(wf.nodes(0).kind(), v1::LLM);
  EXPECT_EQ(wf.nodes(0).hints().prompt_tokens(), 100);
  EXPECT_TRUE(wf.nodes(1).side_effect());
}

TEST(JsonTest, UnknownFieldIsRejectedWithItsName) {
  v1::Workflow wf;
  wf.set_id("stale");
  JsonParseOptions opts;
  opts.source = "request body";
  Status s = ParseJson(R"({"id":"w","nodes":[{"id":"a","dependz":["x"]}]})", &wf, opts);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("dependz"), std::string::npos) << s;
  EXPECT_NE(s.message().find("request body"), std::string::npos) << s;
  EXPECT_EQ(wf.id(), "") << "a failed parse leaves the message cleared";
}

TEST(JsonTest, WrongTypeAndBadEnumAreRejected) {
  v1::Workflow wf;
  EXPECT_FALSE(ParseJson(R"({"deadlineMs":"soon"})", &wf).ok());
  EXPECT_FALSE(ParseJson(R"({"nodes":[{"kind":"ROBOT"}]})", &wf).ok());
  EXPECT_FALSE(ParseJson(R"({"id":)", &wf).ok());
}

TEST(JsonTest, RoundTripKeepsTransferMeta) {
  v1::TransferMeta t;
  t.set_transfer_id(7);
  t.set_request_id("r1");
  t.set_model_epoch(2);
  t.mutable_layer_range()->set_end(32);
  t.add_block_ids(1);
  t.add_block_ids(2);
  t.set_completion_state(v1::COMMITTED);
  t.set_traffic_class(v1::LATENCY);
  auto json = ToJson(t);
  ASSERT_TRUE(json.ok());
  EXPECT_NE(json->find("\"completionState\":\"COMMITTED\""), std::string::npos) << *json;
  v1::TransferMeta back;
  ASSERT_TRUE(ParseJson(*json, &back).ok());
  EXPECT_EQ(back.SerializeAsString(), t.SerializeAsString());
}

TEST(JsonTest, SnakeCaseOutputOption) {
  v1::NodeEvent e;
  e.set_workflow_id("w");
  JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  EXPECT_EQ(*ToJson(e, o), R"({"workflow_id":"w"})");
}

TEST(JsonTest, ReadFileNamesMissingPath) {
  auto r = ReadFile("/nonexistent/switchyard.json");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsNotFound());
  EXPECT_NE(r.status().message().find("/nonexistent/switchyard.json"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::proto
