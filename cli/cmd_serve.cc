// `switchyard serve [--config FILE] [--listen HOST:PORT] [--data-dir DIR] [--llm MODE]`:
// the HTTP/JSON service with embedded defaults (127.0.0.1:8470, ./var, a `default` tenant
// whose token is printed and written to <data-dir>/tokens/default, mode 0600) driving the
// scheduler: one simulated worker, emulated HBM/host/disk tiers sized from the machine,
// loopback topology, LLM nodes on the simulated engine (--engine cpu [--model F]: on the
// reference CPU engine, computed for real — with no --model, the embedded demo model,
// random weights over Qwen3's vocabulary; --llm reported: an engine or the clients report
// LLM results; --links FILE: the figures `switchyard calibrate --links-out` measured, on the
// links it names; --response-retention-s N: stored OpenAI Responses are deleted N seconds
// after they were stored, default 30 days, 0 keeps them; --remote-workers N
// [--control-listen HOST:PORT] [--local-workers N]: N more workers, each a `switchyard
// worker --join` process, waited for before serving — serve/serve_workers.h; --upstream
// URL[#API],... [--upstream-api same|chat]: proxy mode, LLM calls forwarded to upstream
// servers, translated to Chat Completions for those that speak only that). Stops on
// SIGINT/SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/logging.h"
#include "cli/command.h"
#include "cpu_engine/model_shape.h"
#include "executors/engine_kind.h"
#include "http/http_server.h"
#include "proto/json.h"
#include "serve/http_api.h"
#include "serve/serve_config.h"
#include "serve/serve_workers.h"

namespace {

using namespace switchyard;

int Fail(const Status& s) {
  std::fprintf(stderr, "switchyard serve: %s\n", s.ToString().c_str());
  return 1;
}

// --response-retention-s: a whole number of seconds >= 0 into `out`; false (and a message)
// otherwise.
bool ParseRetention(const std::string& text, int64_t* out) {
  char* end = nullptr;
  long long n = std::strtoll(text.c_str(), &end, 10);
  constexpr long long kMax = 100LL * 365 * 24 * 3600;  // 100 years
  if (text.empty() || *end != '\0' || n < 0 || n > kMax) {
    std::fprintf(stderr,
                 "switchyard serve: --response-retention-s needs a whole number of seconds "
                 "from 0 (keep stored responses forever) to %lld, got '%s'\n",
                 kMax, text.c_str());
    return false;
  }
  *out = n;
  return true;
}

// The usage (on stdout for --help, with the long help; else on stderr after naming the
// option that was not understood); returns the exit code.
// Appends the comma-separated items of `list` to `out`; empty items only when
// `keep_empty` (a worker role may be empty: mixed).
void SplitCommas(const std::string& list, bool keep_empty, std::vector<std::string>* out) {
  for (size_t at = 0; at <= list.size();) {
    size_t comma = std::min(list.find(',', at), list.size());
    if (keep_empty || comma > at) out->push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
}

int ServeUsage(const std::string& arg, bool has_value) {
  const bool help = arg == "--help" || arg == "-h";
  if (!help)
    std::fprintf(stderr, "switchyard serve: %s '%s'\n",
                 has_value ? "unknown option" : "unknown option, or no value after", arg.c_str());
  std::fprintf(help ? stdout : stderr,
               "usage: switchyard serve [--config FILE] [--listen HOST:PORT] "
               "[--data-dir DIR] [--llm engine|reported] [--engine simulated|cpu] "
               "[--model FILE_OR_DIR] [--weight-dtype f32|bf16] [--kv-dtype f32|bf16] "
               "[--kv-pool-mib N] [--kv-offload-mib N] [--prefix-caching on|off] [--upstream "
               "URL[#API][,URL[#API]...]] "
               "[--upstream-api same|chat] [--upstream-kind generic|vllm|sglang|llamacpp] "
               "[--upstream-steering on|off] [--upstream-load-interval-ms N] "
               "[--upstream-kv-events ENDPOINT[,ENDPOINT...]] "
               "[--upstream-key TOKEN] [--links FILE] [--policy NAME] "
               "[--disaggregation colocated|always|auto] [--worker-roles ROLE[,ROLE...]] "
               "[--local-workers N] "
               "[--remote-workers N] [--spare-workers K] [--control-listen HOST:PORT] "
               "[--join-timeout-s S] [--response-retention-s N] "
               "[--heartbeat-ms MS] [--etcd URL] [--cluster NAME]\n");
  if (help)
    std::printf(
        "  --response-retention-s N  stored OpenAI Responses (store: true, the default) "
        "and their input items are deleted N seconds after they were created: GET "
        "/v1/responses/{id} and previous_response_id then answer not found (default "
        "2592000, 30 days; 0 keeps them forever)\n"
        "  --policy NAME  the scheduler policy: switchyard (default), keep-during-tool, or a "
        "reference policy\n                 (vllm-fcfs, infercept, continuum, autellix, "
        "kvflow) as replay runs it; config `policy`\n"
        "  --disaggregation MODE  prefill/decode disaggregation: colocated (default), always "
        "(each fresh\n                 call prefills on a prefill worker, its KV then moves to "
        "a decode worker) or\n                 auto (decided per call); config "
        "`disaggregation`\n"
        "  --worker-roles ROLE[,ROLE...]  serve's own workers' roles in order: prefill, decode "
        "or mixed\n                 (config `workerRoles`); a joined worker names its own "
        "(worker --role)\n"
        "\nproxy mode: --upstream URL[,URL...] forwards every LLM call, ordered and admitted "
        "here, to\nupstream servers (http://host:port). --upstream-api says which API they "
        "speak:\n  same  the API each call came in by (default): calls are forwarded "
        "unchanged\n  chat  OpenAI Chat Completions only: Anthropic Messages and OpenAI "
        "Responses calls are\n        translated to Chat Completions and the answers back, "
        "streaming included\nA URL ending in #chat or #same says its own API "
        "(--upstream http://a:8000#chat,http://b:8000).\n"
        "--upstream-kind says what engine they are, for steering (default generic; per URL: "
        "#vllm,\n#chat+llamacpp, with declared capabilities: #vllm+priority, "
        "#llamacpp+slot_files+slots=4).\n"
        "--upstream-steering on (default): the scheduler's KV decisions act on the "
        "upstreams through\ntheir adapters (session ids, priorities, KV controls, llama.cpp "
        "slot save/restore, warm-ups\ntimed to the predicted tool return) and calls go to "
        "where their session's KV is; off: advisory.\n"
        "--upstream-load-interval-ms N: each upstream's Prometheus /metrics is read every N "
        "ms (default\n1000; 0: never) and the load it reports (vLLM, SGLang, llama.cpp or "
        "Switchyard gauges:\nrequests running and waiting, KV cache in use, every client's) "
        "weighs in where calls go.\n"
        "--upstream-kv-events tcp://host:5557[,...]: each upstream's KV event publisher, in "
        "order (vLLM's\n--kv-events-config endpoint; an empty entry for an upstream without "
        "one). A session's next turn\nthen checks that its upstream still holds its last "
        "turn's tokens (returned by a vLLM upstream\ndeclared #vllm+token_ids); where it "
        "does not, the turn is placed as a recompute, by load.\n");
  return help ? 0 : 2;
}

// The flags into `flags` and `config_path`; returns -1 to go on, else the exit code.
int ParseServeArgs(const std::vector<std::string>& args, serve::ServeFlags* flags,
                   std::string* config_path) {
  for (size_t i = 0; i < args.size(); ++i) {
    bool v = i + 1 < args.size();
    if (args[i] == "--config" && v)
      *config_path = args[++i];
    else if (args[i] == "--listen" && v)
      flags->listen = args[++i];
    else if (args[i] == "--data-dir" && v)
      flags->data_dir = args[++i];
    else if (args[i] == "--llm" && v)
      flags->llm = args[++i];
    else if (args[i] == "--engine" && v)
      flags->engine = args[++i];
    else if (args[i] == "--model" && v)
      flags->model = args[++i];
    else if (args[i] == "--weight-dtype" && v)
      flags->weight_dtype = args[++i];
    else if (args[i] == "--kv-dtype" && v)
      flags->kv_dtype = args[++i];
    else if (args[i] == "--upstream" && v)
      SplitCommas(args[++i], false, &flags->upstreams);
    else if (args[i] == "--upstream-api" && v)
      flags->upstream_api = args[++i];
    else if (args[i] == "--upstream-key" && v)
      flags->upstream_key = args[++i];
    else if (args[i] == "--upstream-kind" && v)
      flags->upstream_kind = args[++i];
    else if (args[i] == "--upstream-steering" && v)
      flags->upstream_steering = args[++i];
    else if (args[i] == "--prefix-caching" && v)
      flags->prefix_caching = args[++i];
    else if (args[i] == "--upstream-kv-events" && v)
      SplitCommas(args[++i], true, &flags->upstream_kv_events);
    else if (args[i] == "--links" && v)
      flags->links = args[++i];
    else if (args[i] == "--policy" && v)
      flags->policy = args[++i];
    else if (args[i] == "--disaggregation" && v)
      flags->disaggregation = args[++i];
    else if (args[i] == "--worker-roles" && v)
      SplitCommas(args[++i], true, &flags->worker_roles);
    else if (args[i] == "--response-retention-s" && v) {
      if (!ParseRetention(args[++i], &flags->response_retention_s)) return 2;
    } else if (args[i] == "--upstream-load-interval-ms" && v) {
      const std::string& t = args[++i];
      char* end = nullptr;
      long long n = std::strtoll(t.c_str(), &end, 10);
      if (t.empty() || *end != '\0' || n < 0 || n > 3'600'000) {
        std::fprintf(stderr,
                     "switchyard serve: --upstream-load-interval-ms needs 0..3600000 (ms), "
                     "got '%s'\n",
                     t.c_str());
        return 2;
      }
      flags->upstream_load_interval_ms = n;
    } else if ((args[i] == "--kv-pool-mib" || args[i] == "--kv-offload-mib") && v) {
      const std::string& flag = args[i];
      const std::string& t = args[++i];
      char* end = nullptr;
      long long n = std::strtoll(t.c_str(), &end, 10);
      if (t.empty() || *end != '\0' || n <= 0) {
        std::fprintf(stderr, "switchyard serve: %s needs a whole number > 0, got '%s'\n",
                     flag.c_str(), t.c_str());
        return 2;
      }
      (flag == "--kv-pool-mib" ? flags->kv_pool_mib : flags->kv_offload_mib) = n;
    } else {
      return ServeUsage(args[i], v);
    }
  }
  return -1;
}

void PrintBanner(const serve::ServeSetup& setup, uint16_t port, service::Service& service,
                 const serve::HttpApi& api) {
  const std::string& host = setup.http.host;
  std::printf("switchyard serving on http://%s:%u (data dir %s)\n", host.c_str(), port,
              setup.data_dir.c_str());
  if (auto* d = service.scheduler(); d && executors::EngineComputes(d->config().engine)) {
    std::printf(
        "scheduler: %d worker(s), LLM nodes on the cpu engine (%s), KV of real bytes: a "
        "%.0f MiB KV pool per worker, moved through kv_tiers (host memory, RocksDB disk) "
        "under net_budget link budgets\n",
        d->config().workers,
        d->config().model_path == cpu_engine::kDemoModel
            ? "demo-qwen3-random, the embedded demo model: RANDOM weights, Qwen3's vocabulary"
            : d->config().model_path.c_str(),
        static_cast<double>(d->config().kv_pool_bytes) / (1 << 20));
  } else if (d) {
    std::printf(
        "scheduler: %d worker(s), LLM nodes on the %s, KV moves through kv_tiers "
        "(emulated HBM %.1f GiB per worker, host and RocksDB disk tiers; emulated KV at 1/%d "
        "of its bytes) under net_budget link budgets\n",
        d->config().workers, d->model_executor_name().c_str(),
        static_cast<double>(d->config().hbm_bytes_per_worker) / (1 << 30),
        static_cast<int>(d->config().kv_bytes_scale));
  }
  std::printf("dashboard: http://%s:%u/\n", host.c_str(), port);
  if (api.auth().generated_default()) {
    std::printf("tenant 'default' token: %s (also in %s)\n",
                api.auth().Tenant("default")->token().c_str(),
                api.auth().default_token_path().c_str());
  }
  std::fflush(stdout);
}

int RunServe(const std::vector<std::string>& all_args) {
  std::vector<std::string> args = all_args;
  serve::ServeWorkerFlags worker_flags;  // --local-workers, --remote-workers, ... (serve_workers.h)
  if (int rc = serve::TakeServeWorkerFlags(&args, &worker_flags); rc >= 0) return rc;
  serve::ServeFlags flags;
  std::string config_path;
  if (int rc = ParseServeArgs(args, &flags, &config_path); rc >= 0) return rc;
  v1::ServiceConfig config;
  if (!config_path.empty()) {
    Status st = proto::ParseJsonFile(config_path, &config);
    if (!st.ok()) return Fail(st);
  }
  auto setup = serve::MakeServeSetup(config, flags);
  if (!setup.ok()) return Fail(setup.status());
  // Joined workers first: the scheduler's worker count covers them (serve/serve_join.h).
  // Destruction runs in reverse, and its order matters (serve_join.h "Teardown"): the HTTP
  // server and API, then `attached` (detaches the join server: its rejoin loop ends, no
  // loss, rejoin or put order callback reaches the driver after), then `service` (the
  // driver, its loop and tiers), then `joined` (its bye to the workers), then `setup`.
  auto joined = serve::SetUpServeWorkers(worker_flags, &setup->service.scheduler);
  if (!joined.ok()) return Fail(joined.status());
  auto service = service::Service::Open(setup->service, RealClock::Default());
  if (!service.ok()) return Fail(service.status());
  serve::WorkersAttached attached(joined->get(), (*service)->scheduler());
  auto auth = service::Auth::Create(config, setup->data_dir);
  if (!auth.ok()) return Fail(auth.status());
  auto api = std::make_unique<serve::HttpApi>(service->get(), std::move(*auth),
                                              RealClock::Default(), setup->api);
  // Reads are answered on the I/O threads; mutations once their group commit is durable.
  http::HttpServer server(
      setup->http, http::HttpServer::AsyncHandler(
                       [api = api.get()](const http::HttpRequest& r, http::HttpServer::Respond d) {
                         api->HandleAsync(r, std::move(d));
                       }));

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // server threads inherit the mask
  auto port = server.Start();
  if (!port.ok()) return Fail(port.status());
  PrintBanner(*setup, *port, **service, *api);
  int sig = 0;
  sigwait(&set, &sig);
  std::printf("switchyard: signal %d, shutting down\n", sig);
  server.Stop();
  // Complete every answer still owed (its write is dropped) before the server goes: the
  // service's, then the fronts' (the API's destructor ends their threads after their last
  // task). The server must outlive every answer callback it handed out.
  (void)(*service)->Flush();
  api.reset();
  return 0;
}

}  // namespace

SY_REGISTER_COMMAND(serve, "serve", "run the HTTP/JSON service", RunServe);
