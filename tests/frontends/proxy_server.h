// ProxyTestServer: one Switchyard server on loopback for the proxy-mode tests — a Service,
// its HttpApi and HttpServer — computing with the CPU engine (tiny-llama-2l), or, given an
// upstream ("http://host:port[#API]", conversation/upstream_api.h; several separated by
// commas, one scheduler worker each), proxying to it with kUpToken as the upstream's key.
//
// Thread-safety: Start and the destructor on the test's thread.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "conversation/upstream_api.h"
#include "http/http_server.h"
#include "serve/http_api.h"
#include "tests/frontends/fronts_test_util.h"

namespace switchyard::testing {

inline constexpr char kUpToken[] = "upstream-tenant-token-0123456789";
inline constexpr char kToken[] = "proxy-tenant-token-0123456789";

// What differs between the proxy tests' servers (the defaults: the servers above).
struct ProxyTestOptions {
  std::string policy;                   // the scheduler policy ("": switchyard)
  uint64_t kv_pool_bytes = 4ULL << 20;  // the CPU engine's pool (a server with no upstream)
  uint64_t hbm_bytes = 1ULL << 30;      // the proxy's HBM per worker (its model of the upstream)
  bool steering = true;                 // the proxy's --upstream-steering
  int load_interval_ms = 0;             // the proxy's --upstream-load-interval-ms (0: off)
  std::vector<std::string> kv_events;   // the proxy's --upstream-kv-events
  bool prefix_caching = true;           // the CPU engine's (a server with no upstream)
};

struct ProxyTestServer {
  std::string dir;
  std::unique_ptr<service::Service> service;
  std::unique_ptr<serve::HttpApi> api;
  std::unique_ptr<http::HttpServer> http;
  uint16_t port = 0;

  void Start(const std::string& d, const std::string& token, const std::string& upstream = "",
             const ProxyTestOptions& o = {}) {
    dir = d;
    std::filesystem::remove_all(dir);
    service::ServiceOptions so;
    so.data_dir = dir;
    so.sync_writes = false;
    so.scheduler.host_bytes = 64ULL << 20;
    so.scheduler.disk_bytes = 64ULL << 20;
    if (!o.policy.empty()) so.scheduler.policy = o.policy;
    if (upstream.empty()) {
      so.scheduler.engine = "cpu";
      so.scheduler.model_path = std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json";
      so.scheduler.kv_pool_bytes = o.kv_pool_bytes;
      so.scheduler.cpu_prefix_caching = o.prefix_caching;
    } else {
      so.scheduler.engines_run_llm = false;     // the front reports the proxied calls
      so.scheduler.kv_between_workers = false;  // as serve has it in proxy mode
      so.scheduler.hbm_bytes_per_worker = o.hbm_bytes;
      so.scheduler.workers =
          static_cast<int>(std::count(upstream.begin(), upstream.end(), ',')) + 1;
    }
    auto svc = service::Service::Open(so, RealClock::Default());
    ASSERT_TRUE(svc.ok()) << svc.status();
    service = std::move(*svc);
    v1::ServiceConfig cfg;
    auto* t = cfg.add_tenants();
    t->set_name("t");
    t->set_token(token);
    cfg.set_admin_token(std::string(token) + "-admin");
    serve::HttpApiOptions ao;
    if (!upstream.empty()) {
      std::stringstream list(upstream);
      for (std::string one; std::getline(list, one, ',');) {
        auto spec = conversation::ParseUpstreamSpec(one, conversation::UpstreamApi::kSame);
        ASSERT_TRUE(spec.ok()) << spec.status();
        ao.fronts.upstreams.push_back(spec->url);
        ao.fronts.upstream_apis.push_back(spec->api);
        upstream::SteeringUpstream setup;
        setup.kind = spec->kind;
        setup.declared = spec->declared;
        ao.fronts.upstream_setups.push_back(setup);
      }
      ao.fronts.upstream_api_key = kUpToken;
      ao.fronts.upstream_steering = o.steering;
      ao.fronts.upstream_load_interval_ms = o.load_interval_ms;
      ao.fronts.upstream_kv_events = o.kv_events;
    }
    api = std::make_unique<serve::HttpApi>(service.get(), *service::Auth::Create(cfg, dir),
                                           RealClock::Default(), ao);
    http::HttpServerOptions ho;
    ho.port = 0;
    ho.threads = 4;
    http = std::make_unique<http::HttpServer>(
        ho, [this](const http::HttpRequest& r, http::HttpServer::Respond d) {
          api->HandleAsync(r, std::move(d));
        });
    auto p = http->Start();
    ASSERT_TRUE(p.ok()) << p.status();
    port = *p;
  }
  ~ProxyTestServer() {
    if (http) http->Stop();
    api.reset();
    service.reset();
    http.reset();
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
};

}  // namespace switchyard::testing
