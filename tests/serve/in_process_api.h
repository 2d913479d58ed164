// An in-process Service + HttpApi with one tenant, on a fresh temporary data dir, for tests
// that call HttpApi::Handle() directly (no sockets).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "serve/http_api.h"

namespace switchyard::testing {

struct InProcessApi {
  InProcessApi(const std::string& name, const std::string& tenant_token, double rate_per_s = 0)
      : dir(::testing::TempDir() + "/sy_" + name + "_" + std::to_string(::getpid())) {
    std::filesystem::remove_all(dir);
    service::ServiceOptions so;
    so.data_dir = dir;
    so.sync_writes = false;
    so.scheduler.engines_run_llm = false;  // clients report LLM results (llm_executor reported)
    service = std::move(*service::Service::Open(so, RealClock::Default()));
    v1::ServiceConfig cfg;
    auto* t = cfg.add_tenants();
    t->set_name("t");
    t->set_token(tenant_token);
    if (rate_per_s > 0) t->set_rate_limit_per_s(rate_per_s);
    api = std::make_unique<serve::HttpApi>(service.get(), *service::Auth::Create(cfg, dir),
                                           RealClock::Default());
  }
  ~InProcessApi() {
    api.reset();
    service.reset();
    std::filesystem::remove_all(dir);
  }

  std::string dir;
  std::unique_ptr<service::Service> service;
  std::unique_ptr<serve::HttpApi> api;
};

}  // namespace switchyard::testing
