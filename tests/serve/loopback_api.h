// LoopbackApiTest: a gtest fixture that runs an in-process Service and its HttpApi behind
// a real HttpServer on a loopback port, in a temporary data directory of its own (named
// after the test), torn down after each test. The HTTP tests (workflow API, scheduler,
// OpenAI front, several models) derive from it and add their own helpers.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "http/http_server.h"
#include "serve/http_api.h"
#include "tests/http/http_test_client.h"

namespace switchyard::testing {

class LoopbackApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = ::testing::TempDir() + "/sy_" + t->test_suite_name() + "_" + std::to_string(::getpid()) +
           "_" + t->name();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    StopServing();
    std::filesystem::remove_all(dir_);
  }

  // A config with one tenant "t" holding `token`, and the admin token.
  static v1::ServiceConfig OneTenant(const std::string& token, const std::string& admin) {
    v1::ServiceConfig cfg;
    auto* t = cfg.add_tenants();
    t->set_name("t");
    t->set_token(token);
    cfg.set_admin_token(admin);
    return cfg;
  }
  // Opens the service (data_dir is this test's directory; writes are not synced — crash
  // tests check durability) with `cfg`'s tokens and serves it on a loopback port
  // (HttpServerOptions::port is set to 0). `async`: the server calls HandleAsync (streams,
  // many requests at once) rather than Handle.
  void Serve(service::ServiceOptions so, const v1::ServiceConfig& cfg,
             serve::HttpApiOptions ao = {}, http::HttpServerOptions ho = {}, bool async = true) {
    so.data_dir = dir_;
    so.sync_writes = false;
    auto svc = service::Service::Open(so, RealClock::Default());
    ASSERT_TRUE(svc.ok()) << svc.status();
    service_ = std::move(*svc);
    auto auth = service::Auth::Create(cfg, dir_);
    ASSERT_TRUE(auth.ok()) << auth.status();
    api_ = std::make_unique<serve::HttpApi>(service_.get(), std::move(*auth), RealClock::Default(),
                                            ao);
    ho.port = 0;
    if (async)
      server_ = std::make_unique<http::HttpServer>(
          ho, [this](const http::HttpRequest& r, http::HttpServer::Respond done) {
            api_->HandleAsync(r, std::move(done));
          });
    else
      server_ = std::make_unique<http::HttpServer>(
          ho, [this](const http::HttpRequest& r) { return api_->Handle(r); });
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
  }
  // Stops the server, then the API and the service (a restart test serves again after).
  void StopServing() {
    // The server stops first (no new request), then the API and the service answer what
    // they still owe (the answers are dropped), then the server goes: it must outlive every
    // answer callback it handed out (http/http_server.h).
    if (server_) server_->Stop();
    api_.reset();
    service_.reset();
    server_.reset();
  }
  // A request with `token` as its bearer token (none when null) and `headers`.
  ClientResponse Send(const std::string& method, const std::string& target, const std::string& body,
                      const char* token, std::map<std::string, std::string> headers = {}) {
    if (token) headers["Authorization"] = std::string("Bearer ") + token;
    return Request(port_, method, target, body, headers);
  }

  std::string dir_;
  std::unique_ptr<service::Service> service_;
  std::unique_ptr<serve::HttpApi> api_;
  std::unique_ptr<http::HttpServer> server_;
  uint16_t port_ = 0;
};

}  // namespace switchyard::testing
