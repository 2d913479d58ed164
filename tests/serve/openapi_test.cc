// The OpenAPI document is valid JSON, lists every endpoint, and every POST example is
// accepted by the live service.
#include <google/protobuf/struct.pb.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "proto/json.h"
#include "serve/http_api.h"
#include "tests/serve/in_process_api.h"

namespace switchyard::serve {
namespace {

TEST(OpenApiTest, DocumentListsEveryEndpoint) {
  google::protobuf::Struct doc;
  ASSERT_TRUE(proto::ParseJson(OpenApiDocument(), &doc).ok());
  const auto& paths = doc.fields().at("paths").struct_value().fields();
  for (const char* p :
       {"/healthz", "/metrics", "/openapi.json", "/v1/cluster", "/v1/workflows",
        "/v1/workflows/{id}", "/v1/workflows/{id}/nodes", "/v1/workflows/{id}/events",
        "/v1/workflows/{id}:close", "/v1/messages", "/v1/messages/count_tokens", "/v1/responses",
        "/v1/responses/{id}", "/v1/responses/{id}/cancel", "/v1/responses/{id}/input_items"}) {
    EXPECT_TRUE(paths.count(p)) << p;
  }
  EXPECT_EQ(doc.fields().at("openapi").string_value(), "3.0.3");
}

TEST(OpenApiTest, EveryPostExampleIsAccepted) {
  google::protobuf::Struct doc;
  ASSERT_TRUE(proto::ParseJson(OpenApiDocument(), &doc).ok());
  testing::InProcessApi env("openapi", "tenant-token-0123456789");
  HttpApi& api = *env.api;
  auto example = [&](const std::string& path) {
    const auto& op = doc.fields().at("paths").struct_value().fields().at(path).struct_value();
    const auto& ex = op.fields()
                         .at("post")
                         .struct_value()
                         .fields()
                         .at("requestBody")
                         .struct_value()
                         .fields()
                         .at("content")
                         .struct_value()
                         .fields()
                         .at("application/json")
                         .struct_value()
                         .fields()
                         .at("example");
    return *proto::ToJson(ex);
  };
  auto post = [&](const std::string& target, const std::string& body) {
    http::HttpRequest r;
    r.method = "POST";
    r.target = target;
    r.body = body;
    r.headers["authorization"] = "Bearer tenant-token-0123456789";
    return api.Handle(r);
  };
  auto created = post("/v1/workflows", example("/v1/workflows"));
  ASSERT_EQ(created.status, 201) << created.body;
  v1::SubmitResponse s;
  ASSERT_TRUE(proto::ParseJson(created.body, &s).ok());
  std::string base = "/v1/workflows/" + s.workflow_id();
  auto ev = post(base + "/events", example("/v1/workflows/{id}/events"));
  EXPECT_EQ(ev.status, 200) << ev.body;
  auto nodes = post(base + "/nodes", example("/v1/workflows/{id}/nodes"));
  EXPECT_EQ(nodes.status, 200) << nodes.body;
  auto close = post(base + ":close", example("/v1/workflows/{id}:close"));
  EXPECT_EQ(close.status, 200) << close.body;
}

}  // namespace
}  // namespace switchyard::serve
