// Retention of stored responses through the Responses front over real HTTP: under a
// ManualClock (the service's and the API's), a response stored with store: true is read
// back (GET, input_items, previous_response_id) until the retention has passed, then it is
// not found, in the Responses error shape naming the id, for each of those; the sweep then
// deletes it, and a restart does not bring it back.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "http/http_server.h"
#include "serve/http_api.h"
#include "tests/frontends/fronts_test_util.h"
#include "tests/http/http_test_client.h"

namespace switchyard::frontends {
namespace {

using nlohmann::json;

constexpr char kRetentionToken[] = "retention-tenant-token-0123456789";
using testing::kModel;
constexpr int64_t kRetentionS = 3600;

class ResponsesRetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/sy_responses_retention_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    Serve();
  }
  void TearDown() override {
    Stop();
    std::filesystem::remove_all(dir_);
  }
  void Serve() {
    service::ServiceOptions so;
    so.data_dir = dir_;
    so.sync_writes = false;
    so.document_retention_s = kRetentionS;
    so.scheduler.engine = "cpu";
    so.scheduler.model_path = std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json";
    so.scheduler.kv_pool_bytes = 4ULL << 20;
    so.scheduler.host_bytes = 64ULL << 20;
    so.scheduler.disk_bytes = 64ULL << 20;
    auto svc = service::Service::Open(so, &clock_);
    ASSERT_TRUE(svc.ok()) << svc.status();
    service_ = std::move(*svc);
    v1::ServiceConfig cfg;
    auto* t = cfg.add_tenants();
    t->set_name("t");
    t->set_token(kRetentionToken);
    auto auth = service::Auth::Create(cfg, dir_);
    ASSERT_TRUE(auth.ok()) << auth.status();
    api_ = std::make_unique<serve::HttpApi>(service_.get(), std::move(*auth), &clock_);
    http::HttpServerOptions ho;
    ho.port = 0;
    server_ = std::make_unique<http::HttpServer>(
        ho, [this](const http::HttpRequest& r, http::HttpServer::Respond done) {
          api_->HandleAsync(r, std::move(done));
        });
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
  }
  void Stop() {  // as LoopbackApiTest::StopServing: the server outlives every answer
    if (server_) server_->Stop();
    api_.reset();
    service_.reset();
    server_.reset();
  }
  testing::ClientResponse Call(const std::string& method, const std::string& path,
                               const json& body = nullptr) {
    return testing::Request(port_, method, path, body.is_null() ? "" : body.dump(),
                            {{"Authorization", std::string("Bearer ") + kRetentionToken},
                             {"content-type", "application/json"}});
  }
  // A stored response (store: true is the default) continuing `previous` ("": none).
  std::string Create(const std::string& text, const std::string& previous = "") {
    json body = {{"model", kModel}, {"input", text}, {"max_output_tokens", 4}};
    if (!previous.empty()) body["previous_response_id"] = previous;
    auto r = Call("POST", "/v1/responses", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false).value("id", "");
  }
  // A 404 in the Responses error shape (as for an id never stored): its message names
  // `param` and `id`.
  static void ExpectNotFound(const testing::ClientResponse& r, const std::string& id,
                             const std::string& param) {
    EXPECT_EQ(r.status, 404) << r.body;
    json e = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(e.contains("error")) << r.body;
    EXPECT_EQ(e["error"]["type"], "invalid_request_error") << r.body;
    EXPECT_EQ(e["error"]["code"], "not_found") << r.body;
    const std::string message = e["error"].value("message", "");
    EXPECT_EQ(message.rfind(param + ": ", 0), 0u) << r.body;
    EXPECT_NE(message.find("'" + id + "'"), std::string::npos) << r.body;
  }

  ManualClock clock_{Time::FromSeconds(1'700'000'000)};
  std::string dir_;
  std::unique_ptr<service::Service> service_;
  std::unique_ptr<serve::HttpApi> api_;
  std::unique_ptr<http::HttpServer> server_;
  uint16_t port_ = 0;
};

TEST_F(ResponsesRetentionTest, AStoredResponseExpiresAndAChainToItThenFails) {
  const std::string first = Create("hello");
  ASSERT_FALSE(first.empty());
  clock_.Advance(Seconds(kRetentionS / 2));
  const std::string second = Create("and then", first);
  ASSERT_FALSE(second.empty());
  clock_.Advance(Seconds(kRetentionS / 2));  // `first` is exactly as old as the retention
  EXPECT_EQ(Call("GET", "/v1/responses/" + first).status, 200);
  EXPECT_EQ(Call("GET", "/v1/responses/" + first + "/input_items").status, 200);

  clock_.Advance(Seconds(1));
  ExpectNotFound(Call("GET", "/v1/responses/" + first), first, "response_id");
  ExpectNotFound(Call("GET", "/v1/responses/" + first + "/input_items"), first, "response_id");
  ExpectNotFound(Call("DELETE", "/v1/responses/" + first), first, "response_id");
  json chain = {{"model", kModel}, {"input", "more"}, {"previous_response_id", first}};
  ExpectNotFound(Call("POST", "/v1/responses", chain), first, "previous_response_id");
  // `second` is fresh, but its chain runs through `first`.
  EXPECT_EQ(Call("GET", "/v1/responses/" + second).status, 200);
  chain["previous_response_id"] = second;
  ExpectNotFound(Call("POST", "/v1/responses", chain), first, "previous_response_id");

  // Storing a response sweeps (a second of the clock has passed since the last sweep).
  EXPECT_EQ(service_->documents_expired(), 0u);
  const std::string third = Create("a fresh one");
  EXPECT_EQ(service_->documents_expired(), 1u) << "the expired response is deleted";
  Stop();
  Serve();
  ExpectNotFound(Call("GET", "/v1/responses/" + first), first, "response_id");
  EXPECT_EQ(Call("GET", "/v1/responses/" + second).status, 200);
  EXPECT_EQ(Call("GET", "/v1/responses/" + third).status, 200);
  clock_.Advance(Seconds(kRetentionS + 1));
  Stop();
  Serve();  // the sweep at Open deletes the rest
  EXPECT_EQ(service_->documents_expired(), 2u);
  ExpectNotFound(Call("GET", "/v1/responses/" + third), third, "response_id");
}

}  // namespace
}  // namespace switchyard::frontends
