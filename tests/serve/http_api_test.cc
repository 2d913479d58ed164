// Every endpoint and error status over real HTTP on loopback.
#include "serve/http_api.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string_view>

#include "http/http_server.h"
#include "proto/json.h"
#include "tests/http/http_test_client.h"
#include "tests/serve/loopback_api.h"

namespace switchyard::serve {
namespace {

using testing::Request;

constexpr char kAcme[] = "acme-token-0123456789";
constexpr char kGlobex[] = "globex-token-0123456789";
constexpr char kAdmin[] = "admin-token-0123456789";

class HttpApiTest : public testing::LoopbackApiTest {
 protected:
  void Start(int max_inflight = 4096, double acme_rate = 1000) {
    service::ServiceOptions so;
    so.scheduler.engines_run_llm = false;  // the tests report LLM results as a client
    v1::ServiceConfig cfg;
    auto* a = cfg.add_tenants();
    a->set_name("acme");
    a->set_token(kAcme);
    a->set_rate_limit_per_s(acme_rate);
    a->set_rate_burst(acme_rate < 10 ? 3 : 0);
    auto* g = cfg.add_tenants();
    g->set_name("globex");
    g->set_token(kGlobex);
    cfg.set_admin_token(kAdmin);
    HttpApiOptions ao;
    ao.max_inflight = max_inflight;
    http::HttpServerOptions ho;
    ho.body_limit_bytes = 64 * 1024;
    Serve(so, cfg, ao, ho, /*async=*/false);
  }
  testing::ClientResponse Call(const std::string& method, const std::string& target,
                               const std::string& body = "", const char* token = kAcme,
                               std::map<std::string, std::string> headers = {}) {
    return Send(method, target, body, token, std::move(headers));
  }
  std::string Submit(const char* token = kAcme) {
    auto r = Call("POST", "/v1/workflows", kWorkflow, token);
    EXPECT_EQ(r.status, 201) << r.body;
    v1::SubmitResponse s;
    EXPECT_TRUE(proto::ParseJson(r.body, &s).ok()) << r.body;
    return s.workflow_id();
  }

  static constexpr char kWorkflow[] =
      R"({"nodes":[{"id":"plan","kind":"LLM","cacheRefs":[{"context":"main","mode":"CREATE"}],
          "hints":{"promptTokens":500}},{"id":"grep","kind":"TOOL","deps":["plan"]}]})";
};

TEST_F(HttpApiTest, HealthMetricsOpenApiNeedNoToken) {
  Start();
  EXPECT_EQ(Request(port_, "GET", "/healthz").status, 200);
  auto m = Request(port_, "GET", "/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("# TYPE switchyard_http_requests_total counter"), std::string::npos);
  EXPECT_NE(m.body.find("switchyard_workflows{state=\"running\"}"), std::string::npos);
  // The store's latency histograms, bounds in seconds in their shortest form.
  EXPECT_NE(m.body.find("switchyard_store_commit_seconds_bucket{le=\"0.0005\"}"), std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("switchyard_store_record_seconds_bucket{le=\"0.1\"}"), std::string::npos);
  EXPECT_NE(m.body.find("switchyard_store_record_seconds_bucket{le=\"+Inf\"}"), std::string::npos);
  EXPECT_EQ(Request(port_, "GET", "/openapi.json").status, 200);
}

TEST_F(HttpApiTest, WorkflowLifecycleOverHttp) {
  Start();
  std::string id = Submit();
  EXPECT_EQ(
      Call("POST", "/v1/workflows/" + id + "/events", R"({"nodeId":"plan","type":"LLM_STARTED"})")
          .status,
      200);
  EXPECT_EQ(Call("POST", "/v1/workflows/" + id + "/events",
                 R"({"nodeId":"plan","type":"LLM_FINISHED","outputTokens":12})")
                .status,
            200);
  auto app = Call("POST", "/v1/workflows/" + id + "/nodes",
                  R"({"nodes":[{"id":"answer","kind":"LLM","deps":["grep"],
                      "cacheRefs":[{"context":"main","mode":"EXTEND"}]}]})");
  EXPECT_EQ(app.status, 200) << app.body;
  EXPECT_EQ(Call("POST", "/v1/workflows/" + id + ":close").status, 200);
  auto get = Call("GET", "/v1/workflows/" + id);
  ASSERT_EQ(get.status, 200);
  v1::WorkflowStatus st;
  ASSERT_TRUE(proto::ParseJson(get.body, &st).ok()) << get.body;
  EXPECT_EQ(st.nodes_size(), 3);
  EXPECT_EQ(st.nodes(0).state(), v1::NODE_SUCCEEDED);
  EXPECT_EQ(st.nodes(1).state(), v1::NODE_READY);
  EXPECT_TRUE(st.closed());
  auto list = Call("GET", "/v1/workflows?state=RUNNING");
  EXPECT_EQ(list.status, 200);
  EXPECT_NE(list.body.find(id), std::string::npos);
  EXPECT_EQ(Call("GET", "/v1/workflows?state=COMPLETED").body, "{}");
  EXPECT_EQ(Call("DELETE", "/v1/workflows/" + id + "?reason=stop").status, 200);
  EXPECT_NE(Call("GET", "/v1/workflows/" + id).body.find("WORKFLOW_CANCELLED"), std::string::npos);
}

TEST_F(HttpApiTest, AuthErrors) {
  Start();
  EXPECT_EQ(Call("GET", "/v1/workflows", "", nullptr).status, 401);
  EXPECT_EQ(Call("GET", "/v1/workflows", "", "wrong-token-000000000").status, 401);
  EXPECT_EQ(Call("GET", "/v1/workflows", "", kAdmin).status, 403);
  std::string id = Submit();
  auto other = Call("GET", "/v1/workflows/" + id, "", kGlobex);
  EXPECT_EQ(other.status, 404) << "another tenant's workflow does not exist for you";
  EXPECT_EQ(Call("POST", "/v1/workflows/" + id + "/events",
                 R"({"nodeId":"plan","type":"LLM_STARTED"})", kGlobex)
                .status,
            404);
  auto cluster = Call("GET", "/v1/cluster", "", kAdmin);
  EXPECT_EQ(cluster.status, 200);
  EXPECT_NE(cluster.body.find("\"tenants\""), std::string::npos);
  EXPECT_EQ(Call("GET", "/v1/cluster").body.find("\"tenants\""), std::string::npos)
      << "tenant detail is for the admin token only";
}

// POST /v1/models/{model}:bump-epoch: admin only, POST only, names an unknown model, and
// the new epoch is what /v1/cluster reports.
TEST_F(HttpApiTest, BumpEpochIsAdminOnlyAndCounts) {
  Start();
  v1::ClusterState c;
  ASSERT_TRUE(proto::ParseJson(Call("GET", "/v1/cluster", "", kAdmin).body, &c).ok());
  ASSERT_FALSE(c.model().empty());
  EXPECT_EQ(c.model_epoch(), 0u);
  const std::string target = "/v1/models/" + c.model() + ":bump-epoch";
  EXPECT_EQ(Call("POST", target).status, 403) << "a tenant token may not bump the epoch";
  EXPECT_EQ(Call("GET", target, "", kAdmin).status, 405);
  EXPECT_EQ(Call("POST", "/v1/models/" + c.model(), "", kAdmin).status, 404);
  auto unknown = Call("POST", "/v1/models/no-such-model:bump-epoch", "", kAdmin);
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.body.find("no-such-model"), std::string::npos) << unknown.body;
  for (uint64_t want = 1; want <= 2; ++want) {
    auto r = Call("POST", target, "", kAdmin);
    ASSERT_EQ(r.status, 200) << r.body;
    v1::ModelEpoch e;
    ASSERT_TRUE(proto::ParseJson(r.body, &e).ok()) << r.body;
    EXPECT_EQ(e.model(), c.model());
    EXPECT_EQ(e.model_epoch(), want);
  }
  ASSERT_TRUE(proto::ParseJson(Call("GET", "/v1/cluster", "", kAdmin).body, &c).ok());
  EXPECT_EQ(c.model_epoch(), 2u);
}

TEST_F(HttpApiTest, BadRequestsNameTheField) {
  Start();
  auto r = Call("POST", "/v1/workflows", R"({"nodes":[{"id":"a","kind":"LLM","colour":"red"}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("colour"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"code\":\"InvalidArgument\""), std::string::npos) << r.body;
  r = Call("POST", "/v1/workflows", "{not json");
  EXPECT_EQ(r.status, 400);
  r = Call("POST", "/v1/workflows", R"({"nodes":[{"id":"a","kind":"LLM","deps":["zz"]}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("zz"), std::string::npos) << r.body;
  std::string id = Submit();
  r = Call("POST", "/v1/workflows/" + id + "/events", R"({"nodeId":"grep","type":"TOOL_STARTED"})");
  EXPECT_EQ(r.status, 409) << r.body;  // not ready
  EXPECT_EQ(Call("GET", "/v1/nothing").status, 404);
  EXPECT_EQ(Call("PUT", "/v1/workflows").status, 405);
  for (const char* q : {"state=SLEEPING", "pageSize=0", "pageSize=1001", "pageSize=ten",
                        "pageToken=zz", "order=sideways"}) {
    r = Call("GET", std::string("/v1/workflows?") + q);
    EXPECT_EQ(r.status, 400) << q;
    std::string field(q, std::string_view(q).find('='));
    EXPECT_NE(r.body.find(field + ":"), std::string::npos) << q << ": " << r.body;
  }
}

// Ids are 1-128 bytes of [A-Za-z0-9._:-]: a control character in a node id (submitted or
// appended), a workflow id or a context is a 400 naming the field and the character, the
// bad id is not echoed, and nothing is registered.
TEST_F(HttpApiTest, IdsWithControlCharactersAre400NamingTheField) {
  Start();
  auto r = Call("POST", "/v1/workflows",
                R"({"nodes":[{"id":"ok","kind":"LLM"},{"id":"a\u0007b","kind":"TOOL"}]})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("\"code\":\"InvalidArgument\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("node #1: id: character 0x07 at offset 1 is not allowed"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(r.body.find("\\u0007"), std::string::npos) << "not echoed: " << r.body;
  r = Call("POST", "/v1/workflows", R"({"id":"wf\nx","nodes":[{"id":"a","kind":"LLM"}]})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("workflow: id: character 0x0A at offset 2"), std::string::npos) << r.body;
  r = Call(
      "POST", "/v1/workflows",
      R"({"nodes":[{"id":"a","kind":"LLM","cacheRefs":[{"context":"ma\tin","mode":"CREATE"}]}]})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("node 'a': cache_refs[0].context: character 0x09 at offset 2"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(Call("GET", "/v1/workflows").body.find("workflowId"), std::string::npos)
      << "nothing registered";
  std::string id = Submit();
  r = Call("POST", "/v1/workflows/" + id + "/nodes",
           R"({"nodes":[{"id":"next\u001b","kind":"LLM","deps":["grep"]}]})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("node #2: id: character 0x1B at offset 4"), std::string::npos) << r.body;
}

// A body that is not UTF-8 gets a 400 whose error is itself valid UTF-8 JSON (the raw
// bytes used to be echoed into the message).
TEST_F(HttpApiTest, InvalidUtf8BodyGetsAValidJsonError) {
  Start();
  auto r = Call("POST", "/v1/workflows", "{\"id\":\"\xff\xfe\"}");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.body.find('\xff'), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find('\xfe'), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"code\":\"InvalidArgument\""), std::string::npos) << r.body;
}

TEST_F(HttpApiTest, ListPagesFollowTheToken) {
  Start();
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(Submit());
  std::vector<std::string> seen;
  std::string token;
  do {
    auto r = Call("GET", "/v1/workflows?pageSize=2&order=desc" +
                             (token.empty() ? "" : "&pageToken=" + token));
    ASSERT_EQ(r.status, 200) << r.body;
    v1::WorkflowList page;
    ASSERT_TRUE(proto::ParseJson(r.body, &page).ok()) << r.body;
    EXPECT_LE(page.workflows_size(), 2);
    for (const auto& w : page.workflows()) seen.push_back(w.workflow_id());
    token = page.next_page_token();
  } while (!token.empty());
  std::sort(ids.begin(), ids.end());
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, ids) << "every workflow once";
}

TEST_F(HttpApiTest, OversizeBodyIs413) {
  Start();
  std::string big(100 * 1024, 'x');
  auto r = Call("POST", "/v1/workflows", big);
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.body.find("payload_too_large"), std::string::npos);
}

// A client that sends a body far past the limit (more than the sockets buffer) still gets
// the 413: the server reads and drops the rest of the upload before it closes, rather
// than resetting the connection under the client.
TEST_F(HttpApiTest, AHugeUploadStillGetsIts413) {
  Start();
  const size_t body = 16u << 20;  // the limit here is 64 KiB
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port_);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  std::string head = "POST /v1/workflows HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                     std::string(kAcme) + "\r\nContent-Length: " + std::to_string(body) +
                     "\r\n\r\n";
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  std::string chunk(256 * 1024, 'x');
  size_t sent = 0;
  while (sent < body) {  // as a client does: the whole body, then the answer
    ssize_t n = ::send(fd, chunk.data(), std::min(chunk.size(), body - sent), MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  EXPECT_EQ(sent, body) << "the upload was cut off: " << std::strerror(errno);
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) answer.append(buf, n);
  ::close(fd);
  EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 413") << answer;
}

TEST_F(HttpApiTest, RateLimitIs429WithRetryAfter) {
  Start(4096, /*acme_rate=*/0.5);
  int limited = 0;
  std::string retry_after;
  for (int i = 0; i < 6; ++i) {
    auto r = Call("GET", "/v1/workflows");
    if (r.status == 429) {
      ++limited;
      retry_after = r.headers["retry-after"];
    }
  }
  EXPECT_GE(limited, 3);
  EXPECT_FALSE(retry_after.empty());
  EXPECT_EQ(Call("GET", "/v1/workflows", "", kGlobex).status, 200) << "limits are per tenant";
}

TEST_F(HttpApiTest, OverloadIs503WithRetryAfter) {
  Start(/*max_inflight=*/0);
  auto r = Call("GET", "/v1/workflows");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.headers["retry-after"], "1");
}

TEST_F(HttpApiTest, IdempotencyKeyReplaysFirstAnswerAndDoesNothingTwice) {
  Start();
  std::map<std::string, std::string> h = {{"Idempotency-Key", "create-1"}};
  auto a = Call("POST", "/v1/workflows", kWorkflow, kAcme, h);
  auto b = Call("POST", "/v1/workflows", kWorkflow, kAcme, h);
  EXPECT_EQ(a.status, 201);
  EXPECT_EQ(b.status, 201);
  EXPECT_EQ(a.body, b.body);
  EXPECT_EQ(b.headers["idempotent-replay"], "true");
  EXPECT_EQ(service_->counts().workflows, 1u);
  v1::SubmitResponse s;
  ASSERT_TRUE(proto::ParseJson(a.body, &s).ok());
  std::map<std::string, std::string> e = {{"Idempotency-Key", "ev-1"}};
  std::string ev = R"({"nodeId":"plan","type":"LLM_STARTED"})";
  EXPECT_EQ(Call("POST", "/v1/workflows/" + s.workflow_id() + "/events", ev, kAcme, e).status, 200);
  EXPECT_EQ(Call("POST", "/v1/workflows/" + s.workflow_id() + "/events", ev, kAcme, e).status, 200);
  EXPECT_EQ(service_->counts().events_applied, 1u);
  auto reuse = Call("POST", "/v1/workflows", R"({"nodes":[{"id":"x","kind":"TOOL"}]})", kAcme, h);
  EXPECT_EQ(reuse.status, 409) << "same key, different request";
  // Keys are per tenant.
  EXPECT_EQ(Call("POST", "/v1/workflows", kWorkflow, kGlobex, h).status, 201);
}

// DELETE ?reason= with bytes that are not UTF-8 (raw or %-escaped) or a control
// character is a 400 naming `reason`. A raw 0xFF used to be stored in the log's proto3
// string field, which protobuf writes but does not parse back: the server could not
// restart (Service::Open failed with DataLoss).
TEST_F(HttpApiTest, CancelReasonThatIsNotUtf8TextIs400AndTheServerRestarts) {
  Start();
  std::string id = Submit();
  for (const char* query : {"?reason=\xff", "?reason=%FF", "?reason=a%C0%AF", "?reason=%07"}) {
    auto r = Call("DELETE", "/v1/workflows/" + id + query);
    EXPECT_EQ(r.status, 400) << query << ": " << r.body;
    EXPECT_NE(r.body.find("\"message\":\"reason: "), std::string::npos) << query << ": " << r.body;
    EXPECT_EQ(r.body.find('\xff'), std::string::npos) << "not echoed: " << r.body;
  }
  StopServing();
  Start();  // reopens the same data directory
  auto get = Call("GET", "/v1/workflows/" + id);
  ASSERT_EQ(get.status, 200) << get.body;
  EXPECT_NE(get.body.find("WORKFLOW_RUNNING"), std::string::npos) << get.body;
}

// Query values are application/x-www-form-urlencoded (what the Python client's quote()
// and urlencode() send): %XX and '+' are decoded; a malformed escape is a 400 naming the
// parameter.
TEST_F(HttpApiTest, QueryValuesArePercentDecoded) {
  Start();
  std::string id = Submit();
  auto list = Call("GET", "/v1/workflows?state=%52UNNING&pageSize=%31%30&order=de%73c");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_NE(list.body.find(id), std::string::npos) << list.body;
  auto bad = Call("DELETE", "/v1/workflows/" + id + "?reason=50%");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("reason: malformed %-escape"), std::string::npos) << bad.body;
  bad = Call("GET", "/v1/workflows?pageSize=%zz");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("pageSize: malformed"), std::string::npos) << bad.body;
  auto del = Call("DELETE", "/v1/workflows/" + id + "?reason=tool+timed%20out%3A%20caf%C3%A9%2B1");
  ASSERT_EQ(del.status, 200) << del.body;
  v1::WorkflowStatus st;
  ASSERT_TRUE(proto::ParseJson(Call("GET", "/v1/workflows/" + id).body, &st).ok());
  EXPECT_EQ(st.failure_reason(), "tool timed out: caf\xc3\xa9+1");
}

// Ids may contain ':' (README "Identifiers"): a workflow "job:1" is reachable by every
// route (it used to be submitted and then 404 everywhere), and ":close" is the verb only
// at the end of a POST's path, so even an id ending in ":close" is reachable (and closes
// with POST .../{id}:close).
TEST_F(HttpApiTest, WorkflowIdsWithColonsAreReachable) {
  Start();
  for (std::string id : {"job:1", "a:close", "x:y:z"}) {
    auto r = Call(
        "POST", "/v1/workflows",
        R"({"id":")" + id + R"(","nodes":[{"id":"t","kind":"TOOL"},{"id":"u","kind":"TOOL"}]})");
    ASSERT_EQ(r.status, 201) << id << ": " << r.body;
    const std::string base = "/v1/workflows/" + id;
    auto get = Call("GET", base);
    ASSERT_EQ(get.status, 200) << id << ": " << get.body;
    EXPECT_NE(get.body.find("\"workflowId\":\"" + id + "\""), std::string::npos) << get.body;
    EXPECT_EQ(Call("GET", base + "/timeline").status, 200) << id;
    auto ev = Call("POST", base + "/events", R"({"nodeId":"t","type":"TOOL_STARTED"})");
    EXPECT_EQ(ev.status, 200) << id << ": " << ev.body;
    auto app =
        Call("POST", base + "/nodes", R"({"nodes":[{"id":"v","kind":"TOOL","deps":["t"]}]})");
    EXPECT_EQ(app.status, 200) << id << ": " << app.body;
    auto close = Call("POST", base + ":close");
    EXPECT_EQ(close.status, 200) << id << ": " << close.body;
    v1::WorkflowStatus st;
    ASSERT_TRUE(proto::ParseJson(Call("GET", base).body, &st).ok());
    EXPECT_TRUE(st.closed()) << id;
    EXPECT_EQ(st.nodes_size(), 3) << id;
    auto del = Call("DELETE", base + "?reason=done");
    EXPECT_EQ(del.status, 200) << id << ": " << del.body;
    EXPECT_NE(Call("GET", base).body.find("WORKFLOW_CANCELLED"), std::string::npos) << id;
  }
  EXPECT_EQ(Call("GET", "/v1/workflows/job").status, 404) << "no prefix match";
  EXPECT_EQ(Call("PUT", "/v1/workflows/job:1").status, 405);
  // The id in the path is percent-decoded after the split (the dashboard sends
  // encodeURIComponent(id)): an escaped ':' is part of the id, never the verb.
  auto encoded = Call("GET", "/v1/workflows/job%3A1");
  EXPECT_EQ(encoded.status, 200) << encoded.body;
  EXPECT_NE(encoded.body.find("\"workflowId\":\"job:1\""), std::string::npos) << encoded.body;
  EXPECT_EQ(Call("GET", "/v1/workflows/a%3Aclose/timeline").status, 200);
  EXPECT_EQ(Call("POST", "/v1/workflows/a%3Aclose").status, 405) << "a bare id, not the verb";
  auto bad = Call("GET", "/v1/workflows/job%3");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("workflow id: malformed %-escape"), std::string::npos) << bad.body;
}

// The Idempotency-Key fingerprint covers the query: the same key on DELETE with another
// reason is a different request (409), not a replay of the first answer.
TEST_F(HttpApiTest, IdempotencyKeyFingerprintCoversTheQuery) {
  Start();
  std::string id = Submit();
  std::map<std::string, std::string> h = {{"Idempotency-Key", "cancel-1"}};
  auto first = Call("DELETE", "/v1/workflows/" + id + "?reason=first", "", kAcme, h);
  ASSERT_EQ(first.status, 200) << first.body;
  auto replay = Call("DELETE", "/v1/workflows/" + id + "?reason=first", "", kAcme, h);
  EXPECT_EQ(replay.status, 200) << replay.body;
  EXPECT_EQ(replay.headers["idempotent-replay"], "true");
  auto other = Call("DELETE", "/v1/workflows/" + id + "?reason=second", "", kAcme, h);
  EXPECT_EQ(other.status, 409) << other.body;
}

// An event without nodeId is a 400 naming the field (it was a 404 "has no node ''").
TEST_F(HttpApiTest, EventWithoutNodeIdIs400NamingIt) {
  Start();
  std::string id = Submit();
  auto r = Call("POST", "/v1/workflows/" + id + "/events", R"({"type":"LLM_STARTED"})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("\"code\":\"InvalidArgument\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("nodeId"), std::string::npos) << r.body;
}

TEST_F(HttpApiTest, BearerSchemeIsCaseInsensitive) {
  Start();
  auto r = Request(port_, "GET", "/v1/workflows", "",
                   {{"Authorization", std::string("bearer ") + kAcme}});
  EXPECT_EQ(r.status, 200) << r.body;
}

// A clock whose Now() throws while armed: the rate limiter reads it inside Route, so a
// request then stands for a handler that throws.
class ThrowingClock final : public Clock {
 public:
  Time Now() const override {
    if (armed) throw std::runtime_error("clock broke");
    return RealClock::Default()->Now();
  }
  std::atomic<bool> armed{false};
};

// A handler that throws is answered 500 (OpenAI-shaped on the OpenAI front) and gives its
// in-flight slot back: more throwing requests than max_inflight leave the server serving
// (the slots used to leak, and then every request got 503).
TEST(HttpApiExceptionTest, AThrowingHandlerIs500AndFreesItsSlot) {
  std::string dir = ::testing::TempDir() + "/sy_http_api_throw_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  {
    service::ServiceOptions so;
    so.data_dir = dir;
    so.sync_writes = false;
    so.scheduler.engines_run_llm = false;
    auto svc = service::Service::Open(so, RealClock::Default());
    ASSERT_TRUE(svc.ok()) << svc.status();
    v1::ServiceConfig cfg;
    auto* t = cfg.add_tenants();
    t->set_name("t");
    t->set_token(kAcme);
    cfg.set_admin_token(kAdmin);
    ThrowingClock clock;
    HttpApiOptions ao;
    ao.max_inflight = 2;
    HttpApi api(svc->get(), *service::Auth::Create(cfg, dir), &clock, ao);
    auto request = [](const std::string& method, const std::string& target, std::string body) {
      http::HttpRequest r;
      r.method = method;
      r.target = target;
      r.body = std::move(body);
      r.headers["authorization"] = std::string("Bearer ") + kAcme;
      return r;
    };
    clock.armed = true;
    for (int i = 0; i < 5; ++i) {
      http::HttpResponse r;
      EXPECT_NO_THROW(r = api.Handle(request("GET", "/v1/workflows", "")));
      EXPECT_EQ(r.status, 500) << r.body;
      EXPECT_NE(r.body.find("\"code\":\"Internal\""), std::string::npos) << r.body;
      EXPECT_FALSE(r.headers["x-request-id"].empty());
    }
    http::HttpResponse oa;
    EXPECT_NO_THROW(
        oa = api.Handle(request("POST", "/v1/chat/completions", R"({"model":"m","messages":[]})")));
    EXPECT_EQ(oa.status, 500) << oa.body;
    EXPECT_NE(oa.body.find("\"error\""), std::string::npos) << "OpenAI's shape: " << oa.body;
    EXPECT_NE(oa.body.find("server_error"), std::string::npos) << oa.body;
    EXPECT_EQ(api.inflight(), 0);
    clock.armed = false;
    http::HttpResponse ok = api.Handle(request("GET", "/v1/workflows", ""));
    EXPECT_EQ(ok.status, 200) << "not 503: " << ok.body;
    ASSERT_TRUE((*svc)->Flush().ok());
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace switchyard::serve
