// `switchyard serve [--config FILE] [--listen HOST:PORT] [--data-dir DIR] [--llm MODE]`:
// the HTTP/JSON service with embedded defaults (127.0.0.1:8470, ./var, a `default` tenant
// whose token is printed and written to <data-dir>/tokens/default, mode 0600) driving the
// scheduler: one simulated worker, emulated HBM/host/disk tiers sized from the machine,
// loopback topology, LLM nodes on the simulated model executor (--llm reported: an engine
// or the clients report LLM results). Stops on SIGINT/SIGTERM.
#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <string>
#include <string_view>

#include "api/http_api.h"
#include "api/http_server.h"
#include "base/logging.h"
#include "cli/command.h"
#include "proto/json.h"

namespace {

using namespace switchyard;

int Fail(const Status& s) {
  std::fprintf(stderr, "switchyard serve: %s\n", s.ToString().c_str());
  return 1;
}

int RunServe(const std::vector<std::string>& args) {
  v1::ServiceConfig config;
  std::string config_path, listen, data_dir, llm;
  for (size_t i = 0; i < args.size(); ++i) {
    bool v = i + 1 < args.size();
    if (args[i] == "--config" && v)
      config_path = args[++i];
    else if (args[i] == "--listen" && v)
      listen = args[++i];
    else if (args[i] == "--data-dir" && v)
      data_dir = args[++i];
    else if (args[i] == "--llm" && v)
      llm = args[++i];
    else {
      std::fprintf(stderr,
                   "usage: switchyard serve [--config FILE] [--listen HOST:PORT] "
                   "[--data-dir DIR] [--llm simulated|reported]\n");
      return args[i] == "--help" ? 0 : 2;
    }
  }
  if (!config_path.empty()) {
    Status st = proto::ParseJsonFile(config_path, &config);
    if (!st.ok()) return Fail(st);
  }
  if (listen.empty()) listen = config.listen().empty() ? "127.0.0.1:8470" : config.listen();
  if (data_dir.empty()) data_dir = config.data_dir().empty() ? "var" : config.data_dir();
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return Fail(Status::InvalidArgument("--listen needs HOST:PORT"));
  api::HttpServerOptions http;
  http.host = listen.substr(0, colon);
  int listen_port = 0;
  std::string_view port_text = std::string_view(listen).substr(colon + 1);
  auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), listen_port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || listen_port < 0 ||
      listen_port > 65535)
    return Fail(Status::InvalidArgument("--listen (listen) port must be 0-65535, got '" +
                                        std::string(port_text) + "'"));
  http.port = static_cast<uint16_t>(listen_port);
  http.threads = config.threads() > 0 ? config.threads() : 2;
  if (config.body_limit_bytes() > 0) http.body_limit_bytes = config.body_limit_bytes();

  api::ServiceOptions so;
  so.data_dir = data_dir;
  so.sync_writes = !config.disable_sync();
  if (config.ended_in_memory() < -1)
    return Fail(Status::InvalidArgument("ended_in_memory must be -1, 0 or more, got " +
                                        std::to_string(config.ended_in_memory())));
  if (config.ended_retention_s() < 0)
    return Fail(Status::InvalidArgument("ended_retention_s must be 0 or more, got " +
                                        std::to_string(config.ended_retention_s())));
  so.ended_retention_s = config.ended_retention_s();
  if (config.idempotency_retention_s() < 0)
    return Fail(Status::InvalidArgument("idempotency_retention_s must be 0 or more, got " +
                                        std::to_string(config.idempotency_retention_s())));
  so.idempotency_retention_s = config.idempotency_retention_s();
  if (config.ended_in_memory() != 0)
    so.ended_in_memory = static_cast<size_t>(std::max<int64_t>(0, config.ended_in_memory()));
  if (llm.empty()) llm = config.llm_executor().empty() ? "simulated" : config.llm_executor();
  if (llm != "simulated" && llm != "reported")
    return Fail(Status::InvalidArgument(
        "--llm (llm_executor) must be 'simulated' or 'reported', got '" + llm + "'"));
  so.scheduler.simulated_llm = llm == "simulated";
  if (config.workers() > 0) so.scheduler.workers = config.workers();
  if (config.hbm_bytes_per_worker() > 0)
    so.scheduler.hbm_bytes_per_worker = static_cast<uint64_t>(config.hbm_bytes_per_worker());
  if (!config.policy().empty()) so.scheduler.policy = config.policy();
  const v1::ServiceLinks& links = config.links();
  so.scheduler.pcie_bytes_per_s = links.pcie_bytes_per_s();
  so.scheduler.pcie_latency_s = links.pcie_latency_us() * 1e-6;
  so.scheduler.nvlink_bytes_per_s = links.nvlink_bytes_per_s();
  so.scheduler.nvlink_latency_s = links.nvlink_latency_us() * 1e-6;
  so.scheduler.disk_bytes_per_s = links.disk_bytes_per_s();
  so.scheduler.disk_latency_s = links.disk_latency_us() * 1e-6;
  for (const auto& t : config.tenants())
    if (t.weight() > 0) so.scheduler.tenant_weights[t.name()] = t.weight();
  auto service = api::Service::Open(so, RealClock::Default());
  if (!service.ok()) return Fail(service.status());
  auto auth = api::Auth::Create(config, data_dir);
  if (!auth.ok()) return Fail(auth.status());
  api::HttpApiOptions ao;
  if (config.max_inflight() > 0) ao.max_inflight = config.max_inflight();
  api::HttpApi api(service->get(), std::move(*auth), RealClock::Default(), ao);
  // Reads are answered on the I/O threads; mutations once their group commit is durable.
  api::HttpServer server(http, api::HttpServer::AsyncHandler(
                                   [&api](const api::HttpRequest& r, api::HttpServer::Respond d) {
                                     api.HandleAsync(r, std::move(d));
                                   }));

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // server threads inherit the mask
  auto port = server.Start();
  if (!port.ok()) return Fail(port.status());
  std::printf("switchyard serving on http://%s:%u (data dir %s)\n", http.host.c_str(), *port,
              data_dir.c_str());
  if (auto* d = (*service)->scheduler()) {
    std::printf(
        "scheduler: %d worker(s), LLM nodes on the %s, KV moves through kv_tiers "
        "(emulated HBM %.1f GiB per worker, host and RocksDB disk tiers; emulated KV at 1/%d "
        "of its bytes) under net_budget link budgets\n",
        d->config().workers, d->model_executor_name().c_str(),
        static_cast<double>(d->config().hbm_bytes_per_worker) / (1 << 30),
        static_cast<int>(d->config().kv_bytes_scale));
  }
  std::printf("dashboard: http://%s:%u/\n", http.host.c_str(), *port);
  if (api.auth().generated_default()) {
    std::printf("tenant 'default' token: %s (also in %s)\n",
                api.auth().Tenant("default")->token().c_str(),
                api.auth().default_token_path().c_str());
  }
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  std::printf("switchyard: signal %d, shutting down\n", sig);
  server.Stop();
  // Complete every answer still owed (its write is dropped) before the server goes.
  (void)(*service)->Flush();
  return 0;
}

}  // namespace

SY_REGISTER_COMMAND(serve, "serve", "run the HTTP/JSON service", RunServe);
