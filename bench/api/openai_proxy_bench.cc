// bench_api, reporter openai_proxy: what Switchyard's proxy mode costs a client of each
// front door (Chat Completions, Anthropic Messages, OpenAI Responses; proxy_fronts.h).
//
// Starts two `switchyard serve` processes (next to this binary, or SWITCHYARD_BIN) on free
// loopback ports, each with a temporary data dir (durability on, the defaults;
// serve_client.h):
//   - the upstream: `--engine cpu --model configs/models/tiny-llama-4l.json --kv-pool-mib 64`
//     (a tiny model with RANDOM weights computed on the CPU; its text is meaningless);
//   - the proxy: `--upstream http://127.0.0.1:<upstream port> --upstream-key <upstream token>`,
//     which orders and admits each call through its scheduler, then forwards it unchanged to
//     the upstream and passes the answer back.
// Then C client threads of this process (plain sockets, one keep-alive HTTP/1.1 connection
// each, closed loop) send each front's requests (4 output tokens, temperature 0, short
// prompts) directly to the upstream, then the same through the proxy, in phases:
//   1. stateless: no session header, so each request is a one-node workflow; N requests
//      per phase;
//   2. sessions: a session header per client and session, T turns per session (each turn's
//      conversation is the previous one, its answer and a new user message), S sessions per
//      client per phase; the sessions are deleted after the phase (not timed).
// The direct and proxy phases alternate in R rounds (direct, proxy; proxy, direct; ...), the
// fronts taking their turn in each round, so that the machine's drift (a shared machine)
// falls on all; the samples of all rounds are pooled. After a short warmup of both paths of
// every front. Reported for each front and kind: requests/s through the proxy against direct
// requests/s (goal ratio >= 0.9), P50 latency through the proxy against direct P50 (lower is
// better), the P50 Switchyard adds (proxy P50 - direct P50, ms, no baseline), and the
// proxy's and the upstream's CPU per request (from /proc); for the Messages and Responses
// fronts also their direct stateless P50 against the chat front's (same upstream, same run):
// what the protocol itself costs on the engine's server.
// Skips (a line on stderr, no results) when the switchyard binary or the model file is
// missing, or a server does not start.
// Environment: SY_BENCH_PROXY_CLIENTS (C, default 8), SY_BENCH_PROXY_REQUESTS (N, 480),
// SY_BENCH_PROXY_TURNS (T, 4), SY_BENCH_PROXY_SESSIONS (S, 8), SY_BENCH_PROXY_ROUNDS (R, 4),
// SY_BENCH_PROXY_FRONTS (comma-separated prefixes: openai_proxy, anthropic_proxy,
// responses_proxy; default all); SY_BENCH_API_ONLY=openai_proxy runs only this reporter of
// the suite (the api reporter takes minutes), =api only that one; SY_BENCH_PROXY_PIN (1:
// the upstream and the proxy on separate cores, the default; 0: shared, see PinServers):
//   SY_BENCH_API_ONLY=openai_proxy build-pbench/bin/bench_api --json --benchmark_filter=none
//
// Thread-safety: single-threaded bench code; the client threads share nothing but their
// result slots, read after join.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench/api/proxy_fronts.h"
#include "bench/api/serve_client.h"
#include "bench/common/process.h"
#include "bench/common/report.h"

namespace switchyard::bench {
namespace {

constexpr char kModelId[] = "tiny-llama-4l";
constexpr double kGoalRatio = 0.9;

std::string UserMessage(const std::string& text) { return MessageJson("user", "\"" + text + "\""); }

// One phase's measurements, summed over the clients.
struct Phase {
  std::vector<double> latency_ms;  // answered 200
  int failed = 0;
  double wall_s = 0;
  double upstream_cpu_s = 0, proxy_cpu_s = 0, client_cpu_s = 0;
  std::vector<std::string> sessions;
};

struct Target {
  int port;
  std::string token;
};

// How a phase loads the server: `clients` threads, `requests` stateless calls in all, or,
// when `turns` > 0, `sessions_per_client` sessions of `turns` turns per client.
struct Load {
  int clients = 8, requests = 0, turns = 0, sessions_per_client = 0;
};

// The two servers: the upstream, and the proxy in front of it.
struct Servers {
  const ServeProcess& up;
  const ServeProcess& proxy;
};

// Closed loop of `load` on front `f` of server `t`; session ids start with `tag`.
Phase RunPhase(const ProxyFront& f, const Target& t, const Servers& s, const Load& load,
               const std::string& tag) {
  const int clients = load.clients;
  std::vector<Phase> per(static_cast<size_t>(clients));
  const std::string auth =
      "Authorization: Bearer " + t.token + "\r\nContent-Type: application/json\r\n";
  auto client = [&](int c) {
    Phase& p = per[static_cast<size_t>(c)];
    Connection conn(t.port);
    auto timed = [&](const std::string& headers, const std::string& body, HttpAnswer* a) {
      auto t0 = std::chrono::steady_clock::now();
      bool ok = conn.Send("POST", f.path, headers, body, a) && a->status == 200;
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (ok)
        p.latency_ms.push_back(ms);
      else
        ++p.failed;
      return ok;
    };
    HttpAnswer a;
    if (load.turns == 0) {
      for (int i = c; i < load.requests; i += clients)
        timed(auth,
              f.body(kModelId, UserMessage("client " + std::to_string(c) + " asks question " +
                                           std::to_string(i) + ": what next?")),
              &a);
      return;
    }
    for (int k = 0; k < load.sessions_per_client; ++k) {
      std::string sid = tag + "-c" + std::to_string(c) + "-s" + std::to_string(k);
      p.sessions.push_back(sid);
      std::string msgs = UserMessage("session " + sid + ": plan the next step");
      for (int turn = 0; turn < load.turns; ++turn) {
        if (!timed(auth + f.session_header + ": " + sid + "\r\n", f.body(kModelId, msgs), &a))
          break;
        msgs += "," + MessageJson("assistant", f.answer_text(a.body)) + "," +
                UserMessage("tool result " + std::to_string(turn) + ": ok, continue");
      }
    }
  };
  const ServeProcess &up = s.up, &proxy = s.proxy;
  double up0 = ProcessCpuSeconds(up.pid()), px0 = ProcessCpuSeconds(proxy.pid());
  double self0 = SelfCpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) threads.emplace_back(client, c);
  for (auto& th : threads) th.join();
  Phase out;
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.upstream_cpu_s = ProcessCpuSeconds(up.pid()) - up0;
  out.proxy_cpu_s = ProcessCpuSeconds(proxy.pid()) - px0;
  out.client_cpu_s = SelfCpuSeconds() - self0;
  for (auto& p : per) {
    out.latency_ms.insert(out.latency_ms.end(), p.latency_ms.begin(), p.latency_ms.end());
    out.failed += p.failed;
    out.sessions.insert(out.sessions.end(), p.sessions.begin(), p.sessions.end());
  }
  return out;
}

// Ends the phase's sessions on `server` (not timed; 404 where the server has none).
void DeleteSessions(const Target& t, const std::vector<std::string>& sessions) {
  Connection conn(t.port);
  HttpAnswer a;
  for (const auto& s : sessions)
    conn.Send("DELETE", "/v1/sessions/" + s, "Authorization: Bearer " + t.token + "\r\n", "", &a);
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank > 0 ? rank - 1 : 0)];
}

std::string Fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.*f", digits, v);
  return b;
}

void Log(const ProxyFront& f, const char* kind, int round, int mode, const Phase& p) {
  std::fprintf(stderr, "bench openai_proxy: round %d %s %s %s: %zu answers (%d failed) in %.2f s\n",
               round, f.prefix.c_str(), kind, mode == 0 ? "direct" : "proxy", p.latency_ms.size(),
               p.failed, p.wall_s);
}

// The phases of one mode (direct or proxy) pooled over the rounds.
struct Pooled {
  std::vector<double> latency_ms;
  std::vector<double> rates;  // per round
  int failed = 0;
  double wall_s = 0, upstream_cpu_s = 0, proxy_cpu_s = 0, client_cpu_s = 0;
  void Add(const Phase& p) {
    latency_ms.insert(latency_ms.end(), p.latency_ms.begin(), p.latency_ms.end());
    rates.push_back(static_cast<double>(p.latency_ms.size()) / p.wall_s);
    failed += p.failed;
    wall_s += p.wall_s;
    upstream_cpu_s += p.upstream_cpu_s;
    proxy_cpu_s += p.proxy_cpu_s;
    client_cpu_s += p.client_cpu_s;
  }
  double Rate() const { return static_cast<double>(latency_ms.size()) / wall_s; }
  double CpuUs(double s) const { return 1e6 * s / static_cast<double>(latency_ms.size()); }
  std::string RatesText() const {
    std::string s;
    for (double r : rates) {
      if (!s.empty()) s += '/';
      s += Fixed(r, 1);
    }
    return s;
  }
};

void ReportKind(const std::string& prefix, const std::string& what, const Pooled& direct,
                const Pooled& proxy, Report* report) {
  if (direct.latency_ms.empty() || proxy.latency_ms.empty()) {
    std::fprintf(stderr, "bench openai_proxy: %s: no answers (direct %d failed, proxy %d)\n",
                 prefix.c_str(), direct.failed, proxy.failed);
    return;
  }
  const std::string failed = direct.failed + proxy.failed > 0
                                 ? "; FAILED answers: direct " + std::to_string(direct.failed) +
                                       ", proxy " + std::to_string(proxy.failed)
                                 : "";
  double rate = proxy.Rate(), base_rate = direct.Rate();
  report->Add({prefix + "_requests_per_s", rate, "requests/s", true,
               "direct to the upstream (same clients, same run)", base_rate,
               what + "; per round proxy " + proxy.RatesText() + ", direct " + direct.RatesText() +
                   "; goal ratio >= 0.9: " + (rate >= kGoalRatio * base_rate ? "met" : "NOT met") +
                   failed});
  double p50 = Percentile(proxy.latency_ms, 0.5), base_p50 = Percentile(direct.latency_ms, 0.5);
  report->Add({prefix + "_p50_ms", p50, "ms", false, "direct P50", base_p50,
               what + "; P99 proxy " + Fixed(Percentile(proxy.latency_ms, 0.99), 1) +
                   " ms, direct " + Fixed(Percentile(direct.latency_ms, 0.99), 1) + " ms"});
  report->Add({prefix + "_added_p50_ms", p50 - base_p50, "ms", false, "", std::nullopt,
               "proxy P50 - direct P50; " + what});
  report->Add({prefix + "_proxy_cpu_us_per_request", proxy.CpuUs(proxy.proxy_cpu_s), "us", false,
               "upstream CPU per request (direct phases)", direct.CpuUs(direct.upstream_cpu_s),
               "user+system CPU of the proxy process / answers; upstream " +
                   Fixed(proxy.CpuUs(proxy.upstream_cpu_s), 0) + " us and clients " +
                   Fixed(proxy.CpuUs(proxy.client_cpu_s), 0) + " us per proxied request, " +
                   Fixed(direct.CpuUs(direct.client_cpu_s), 0) + " us per direct one"});
}

// A front's phases: [0] direct, [1] proxy, pooled over the rounds.
struct FrontRuns {
  Pooled stateless[2], sessions[2];
};

// One round of front `f`: stateless, then sessions, each direct and through the proxy (in
// the order the round's parity says).
void RunRound(const ProxyFront& f, const Servers& s, const Load& stateless, const Load& sessions,
              int round, const std::string& run, FrontRuns* out) {
  const Target direct{s.up.port(), s.up.token()}, via{s.proxy.port(), s.proxy.token()};
  for (int i = 0; i < 2; ++i) {
    int mode = (round % 2 == 0) ? i : 1 - i;  // direct, proxy; then proxy, direct
    Phase p = RunPhase(f, mode == 0 ? direct : via, s, stateless, "");
    Log(f, "stateless", round, mode, p);
    out->stateless[mode].Add(p);
  }
  for (int i = 0; i < 2; ++i) {
    int mode = (round % 2 == 0) ? i : 1 - i;
    const Target& t = mode == 0 ? direct : via;
    Phase p = RunPhase(
        f, t, s, sessions,
        run + "-" + f.prefix + "-r" + std::to_string(round) + (mode == 0 ? "-direct" : "-proxy"));
    Log(f, "sessions", round, mode, p);
    out->sessions[mode].Add(p);
    DeleteSessions(t, p.sessions);
    if (mode == 1) DeleteSessions(direct, p.sessions);  // the upstream's own sessions
  }
}

// Warmup of front `f`: both paths, both kinds (connections, the engine's first batches).
void Warm(const ProxyFront& f, const Servers& s, int clients, const std::string& run) {
  const Target direct{s.up.port(), s.up.token()}, via{s.proxy.port(), s.proxy.token()};
  for (const Target* t : {&direct, &via}) {
    RunPhase(f, *t, s, Load{clients, 4 * clients, 0, 0}, "");
    Phase w = RunPhase(f, *t, s, Load{clients, 0, 2, 1},
                       "warm-" + run + "-" + f.prefix + std::to_string(t->port));
    DeleteSessions(*t, w.sessions);
    if (t == &via) DeleteSessions(direct, w.sessions);
  }
}

// Every front's rows; for the fronts after the first (chat), also their direct stateless
// P50 against the first's.
void ReportFronts(const std::vector<ProxyFront>& fronts, const std::vector<FrontRuns>& runs,
                  const Load& stateless, const Load& sessions, int rounds, const std::string& cores,
                  Report* report) {
  const std::string common = std::to_string(stateless.clients) +
                             " clients (keep-alive, closed loop), " + std::to_string(rounds) +
                             " rounds alternating direct/proxy, " + cores;
  for (size_t i = 0; i < fronts.size(); ++i) {
    const ProxyFront& f = fronts[i];
    const FrontRuns& r = runs[i];
    ReportKind(f.prefix,
               "stateless " + f.what + " (4 output tokens), " + std::to_string(stateless.requests) +
                   " per phase, " + common,
               r.stateless[0], r.stateless[1], report);
    ReportKind(f.prefix + "_session",
               f.what + " sessions (" + f.session_header + ") of " +
                   std::to_string(sessions.turns) + " turns, " +
                   std::to_string(sessions.sessions_per_client) + " per client per phase, " +
                   common,
               r.sessions[0], r.sessions[1], report);
    const Pooled& base = runs[0].stateless[0];
    if (i == 0 || base.latency_ms.empty() || r.stateless[0].latency_ms.empty()) continue;
    report->Add({f.prefix + "_direct_p50_ms", Percentile(r.stateless[0].latency_ms, 0.5), "ms",
                 false, fronts[0].what + " direct P50 (same upstream, same run)",
                 Percentile(base.latency_ms, 0.5),
                 "stateless " + f.what +
                     " straight to the upstream: the protocol's own cost "
                     "on the engine's server against " +
                     fronts[0].what});
  }
}

// Where the processes run. By default (SY_BENCH_PROXY_PIN unset or 1, and at least two
// CPUs) the upstream is pinned to the upper half of the CPUs and the proxy and this
// process's clients to the lower half, in both the direct and the proxied phases: the
// upstream computes on the same cores either way, as a GPU engine would, and the proxy does
// not take its CPU. SY_BENCH_PROXY_PIN=0 lets the three share every core; the ratio then
// measures how the proxy's CPU competes with a CPU-bound upstream's (bench/RESULTS.md,
// "what bounds the ratio on this machine"). Returns the setup in words for the notes.
std::string PinServers(const ServeProcess& up, const ServeProcess& proxy) {
  const int n = static_cast<int>(std::thread::hardware_concurrency());
  if (EnvInt("SY_BENCH_PROXY_PIN", 1) == 0 || n < 2) return "processes share every core";
  const int half = n / 2;
  const std::string where = "upstream pinned to cores " + std::to_string(half) + "-" +
                            std::to_string(n - 1) + ", proxy and clients to 0-" +
                            std::to_string(half - 1);
  if (PinProcess(up.pid(), half, n - 1) && PinProcess(proxy.pid(), 0, half - 1) &&
      PinProcess(0, 0, half - 1))
    return where;
  std::fprintf(stderr, "bench openai_proxy: could not pin the processes; they share the cores\n");
  return "processes share every core (pinning failed)";
}

void ReportOpenAiProxy(const std::map<std::string, Measured>&, Report* report) {
  if (const char* only = std::getenv("SY_BENCH_API_ONLY");
      only && std::string(only) != "openai_proxy")
    return;
  std::string bin = SwitchyardBinary();
  const std::string model = std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-4l.json";
  if (!std::filesystem::exists(bin) || !std::filesystem::exists(model)) {
    std::fprintf(stderr,
                 "bench openai_proxy: skipped: no %s at %s (build `switchyard` or set "
                 "SWITCHYARD_BIN)\n",
                 std::filesystem::exists(bin) ? "model file" : "server binary",
                 std::filesystem::exists(bin) ? model.c_str() : bin.c_str());
    return;
  }
  const char* only = std::getenv("SY_BENCH_PROXY_FRONTS");
  const std::vector<ProxyFront> fronts = ProxyFronts(only ? only : "");
  const int clients = EnvInt("SY_BENCH_PROXY_CLIENTS", 8);
  const Load stateless{clients, EnvInt("SY_BENCH_PROXY_REQUESTS", 480), 0, 0};
  const Load sessions{clients, 0, EnvInt("SY_BENCH_PROXY_TURNS", 4),
                      EnvInt("SY_BENCH_PROXY_SESSIONS", 8)};
  const int rounds = EnvInt("SY_BENCH_PROXY_ROUNDS", 4);
  ServeProcess up, proxy;
  if (!up.Start(bin, {"--engine", "cpu", "--model", model, "--kv-pool-mib", "64"},
                "upstream (CPU engine)"))
    return;
  if (!proxy.Start(bin,
                   {"--upstream", "http://127.0.0.1:" + std::to_string(up.port()), "--upstream-key",
                    up.token()},
                   "proxy"))
    return;
  const std::string cores = PinServers(up, proxy);
  const Servers servers{up, proxy};
  const std::string run = RandomHex(6);
  for (const ProxyFront& f : fronts) Warm(f, servers, clients, run);
  std::vector<FrontRuns> runs(fronts.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < fronts.size(); ++i)
      RunRound(fronts[i], servers, stateless, sessions, r, run, &runs[i]);
  ReportFronts(fronts, runs, stateless, sessions, rounds, cores, report);
  // The suite's other reporters run in this process: every core again.
  PinProcess(0, 0, static_cast<int>(std::thread::hardware_concurrency()) - 1);
}

SY_BENCH_REPORT(openai_proxy, ReportOpenAiProxy);

}  // namespace
}  // namespace switchyard::bench
