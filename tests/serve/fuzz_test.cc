// Bounded fuzzing of the request path: mutated JSON bodies, targets and headers through
// the handlers, and raw mutated bytes through the HTTP parser of a live server. Asserts
// no crash or hang, only well-formed error statuses, and a healthy server afterwards
// (run under ASan+UBSan by scripts/test.sh).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>

#include "http/http_server.h"
#include "serve/http_api.h"
#include "tests/http/http_test_client.h"
#include "tests/serve/in_process_api.h"

namespace switchyard::serve {
namespace {

const char* kSeeds[] = {
    R"({"nodes":[{"id":"a","kind":"LLM","cacheRefs":[{"context":"m","mode":"CREATE"}],"hints":{"promptTokens":10}},{"id":"b","kind":"TOOL","deps":["a"]}]})",
    R"({"nodeId":"a","type":"LLM_STARTED","attempt":1})",
    R"({"nodes":[{"id":"c","kind":"LLM","deps":["b"],"cacheRefs":[{"context":"m","mode":"EXTEND"}]}]})",
    R"({"id":"x","deadlineMs":"99999999999999","priority":"BATCH","labels":{"k":"v"}})",
};

// A seed or count from the environment, else `fallback`: SY_FUZZ_SEED, SY_FUZZ_ITERS and
// SY_FUZZ_RAW_ITERS widen a campaign run by hand; CI runs the fixed defaults.
uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

std::string Mutate(std::string s, std::mt19937_64& rng) {
  static const std::string kTokens[] = {
      "{",    "}",  "[",     "]",       ",",    ":",       "\"",
      "null", "-1", "1e309", "\\u0000", "true", "\"LLM\"", "99999999999999999999"};
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    size_t pos = rng() % s.size();
    switch (rng() % 5) {
      case 0:
        s[pos] = static_cast<char>(rng() % 256);
        break;
      case 1:
        s.erase(pos, 1 + rng() % 8);
        break;
      case 2:
        s.insert(pos, kTokens[rng() % (sizeof(kTokens) / sizeof(kTokens[0]))]);
        break;
      case 3:
        s = s.substr(0, pos);
        break;
      default:
        s.insert(pos, s.substr(rng() % s.size(), 1 + rng() % 16));
        break;
    }
  }
  return s;
}

TEST(ApiFuzzTest, HandlersSurviveMutatedRequests) {
  testing::InProcessApi env("fuzz", "fuzz-tenant-token-0123", /*rate_per_s=*/1e9);
  HttpApi& api = *env.api;
  const std::set<int> allowed = {200, 201, 400, 401, 403, 404, 405, 409, 429};
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 12345));
  const uint64_t iters = EnvOr("SY_FUZZ_ITERS", 4000);
  const char* targets[] = {"/v1/workflows",         "/v1/workflows/w/events",
                           "/v1/workflows/w/nodes", "/v1/workflows/w:close",
                           "/v1/workflows/w",       "/v1/cluster"};
  const char* methods[] = {"POST", "GET", "DELETE", "PUT"};
  http::HttpRequest base;
  base.method = "POST";
  base.target = "/v1/workflows";
  base.body = std::string(kSeeds[0]).replace(1, 0, "\"id\":\"w\",");
  base.headers["authorization"] = "Bearer fuzz-tenant-token-0123";
  ASSERT_EQ(api.Handle(base).status, 201);
  for (uint64_t i = 0; i < iters; ++i) {
    http::HttpRequest r = base;
    r.method = methods[rng() % 4];
    r.target = targets[rng() % 6];
    if (rng() % 8 == 0) r.target = Mutate(r.target, rng);
    r.body = Mutate(kSeeds[rng() % 4], rng);
    if (rng() % 10 == 0) r.headers["idempotency-key"] = Mutate("key-abc", rng);
    if (rng() % 20 == 0) r.headers["authorization"] = Mutate(r.headers["authorization"], rng);
    http::HttpResponse resp = api.Handle(r);
    ASSERT_TRUE(allowed.count(resp.status)) << resp.status << " for " << r.method << " " << r.target
                                            << " " << r.body << " -> " << resp.body;
    ASSERT_FALSE(resp.body.empty());
  }
}

TEST(ApiFuzzTest, ParserSurvivesRawGarbage) {
  http::HttpServerOptions ho;
  ho.port = 0;
  ho.read_timeout_ms = 500;
  http::HttpServer server(ho, [](const http::HttpRequest&) {
    return http::HttpResponse{200, "text/plain", {}, "ok"};
  });
  auto port = server.Start();
  ASSERT_TRUE(port.ok());
  std::mt19937_64 rng(EnvOr("SY_FUZZ_SEED", 777));
  const uint64_t iters = EnvOr("SY_FUZZ_RAW_ITERS", 300);
  std::string valid = "POST /v1/workflows HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
  for (uint64_t i = 0; i < iters; ++i) {
    std::string raw = Mutate(valid, rng);
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(*port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
    char buf[4096];
    while (::recv(fd, buf, sizeof(buf), 0) > 0) {
    }
    ::close(fd);
  }
  EXPECT_EQ(testing::Request(*port, "GET", "/healthz").status, 200) << "server still serves";
  server.Stop();
}

}  // namespace
}  // namespace switchyard::serve
