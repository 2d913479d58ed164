// bench_api, reporter proxy_load_routing: what reading the upstreams' load buys sessions in
// proxy mode when another client loads one upstream (upstream/upstream_load.h), load read
// against not read, same run.
//
// Starts `switchyard serve` processes on free loopback ports (serve_client.h):
//   - two upstreams, each `--engine cpu --model configs/models/tiny-llama-4l.json`
//     (RANDOM weights: its text is meaningless) `--policy vllm-fcfs`;
//   - two proxies in front of both, `--upstream-load-interval-ms 200` (load read) and `0`
//     (not read; the scheduler sees only the calls it sent).
// While F flood threads send the first upstream long generations of their own, straight
// to it (another client's traffic the proxies do not see), A agent threads run sessions of
// T turns through one proxy (a system prompt of their own, a user message, then after
// each answer a W ms tool wait and its output as the next message); each call asks for 8
// tokens, not streamed. The proxies take turns in R rounds (off, on; on, off; ...), each
// round on a fresh session set.
// Reported: the calls' latency P50 and P90 with the load read against not read, and the
// share of the sessions' calls the busy upstream served.
// Environment: SY_BENCH_LOAD_AGENTS (A, 6), SY_BENCH_LOAD_TURNS (T, 4),
// SY_BENCH_LOAD_WAIT_MS (W, 200), SY_BENCH_LOAD_FLOOD (F, 4), SY_BENCH_LOAD_ROUNDS (R, 2);
// SY_BENCH_LOAD_STEP_TABLE=FILE: both proxies price the upstreams by that step table (a
// `switchyard calibrate --engine cpu` table of the upstreams' engine, config
// models[0].stepTable) instead of Llama-3.1-8B's roofline on an H100; its token columns are
// converted to the proxies' token estimate first (4 bytes a token; the upstreams' byte
// vocabulary is 1 byte a token);
// SY_BENCH_API_ONLY=proxy_load_routing runs only this reporter:
//   SY_BENCH_API_ONLY=proxy_load_routing build-release/bin/bench_api --json --benchmark_filter=none
//
// Thread-safety: single-threaded bench code; agent and flood threads write only their own
// slots and read an atomic stop flag.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/api/serve_client.h"
#include "bench/common/report.h"

namespace switchyard::bench {
namespace {

using nlohmann::json;

constexpr char kRoutingModel[] = "tiny-llama-4l";

struct RoutingShape {
  int agents = 6, turns = 4, wait_ms = 200, flood = 4, rounds = 2;
};

std::string JsonAuth(const std::string& token) {
  return "Authorization: Bearer " + token + "\r\nContent-Type: application/json\r\n";
}

// Another client's traffic on `port` until `stop`: long generations back to back.
void Flood(int port, const std::string& token, int id, const std::atomic<bool>* stop) {
  Connection conn(port);
  std::string text = "Background job " + std::to_string(id) + ": ";
  while (text.size() < 600) text += "summarise the logs of shard " + std::to_string(text.size());
  const json body = {{"model", kRoutingModel},
                     {"messages", {{{"role", "user"}, {"content", text}}}},
                     {"max_tokens", 96},
                     {"temperature", 0}};
  HttpAnswer r;
  while (!stop->load()) conn.Send("POST", "/v1/chat/completions", JsonAuth(token), body.dump(), &r);
}

struct RoutingSample {
  std::vector<double> ms;
  int failed = 0;
};

void RunRoutedAgent(int port, const std::string& token, const std::string& session, int id,
                    const RoutingShape& s, RoutingSample* out) {
  Connection conn(port);
  std::string system = "You are agent " + std::to_string(id) + " of run " + session + ". ";
  while (system.size() < 800) system += "Rule " + std::to_string(system.size()) + ": be exact. ";
  json messages = {{{"role", "system"}, {"content", system}},
                   {{"role", "user"}, {"content", "Fix module " + std::to_string(id) + "."}}};
  const std::string headers = JsonAuth(token) + "x-session-id: " + session + "\r\n";
  for (int turn = 0; turn < s.turns; ++turn) {
    const json body = {{"model", kRoutingModel}, {"messages", messages}, {"max_tokens", 8}};
    double ms = 0;
    json answer = TimedChat(&conn, headers, body, &ms);
    out->ms.push_back(ms);
    if (!answer.is_object()) {
      ++out->failed;
      return;
    }
    messages.push_back(answer["choices"][0]["message"]);
    std::this_thread::sleep_for(std::chrono::milliseconds(s.wait_ms));  // the agent's tool
    messages.push_back({{"role", "user"}, {"content", "Tool output " + std::to_string(turn)}});
  }
}

// Chat calls upstream `i` of `proxy` was sent (its requests less /metrics reads and probes).
double ChatCalls(const ServeProcess& proxy, size_t i) {
  Connection conn(proxy.port());
  HttpAnswer r;
  if (!conn.Send("GET", "/v1/cluster", JsonAuth(proxy.admin_token()), "", &r)) return 0;
  const json c = json::parse(r.body, nullptr, false);
  if (!c.is_object() || !c.contains("upstreams") || c["upstreams"].size() <= i) return 0;
  const json& u = c["upstreams"][i];
  auto num = [](const json& o, const char* k) {
    return o.is_object() && o.contains(k) ? std::atof(o[k].get<std::string>().c_str()) : 0.0;
  };
  const json load = u.value("load", json::object());
  const json actions = u.value("actions", json::object());
  return num(u, "requests") - num(load, "scrapes") - num(load, "failures") - num(actions, "probe");
}

struct RoutingMode {
  RoutingSample pooled;
  double busy_calls = 0, all_calls = 0;
};

void RunRoutingRound(const ServeProcess& proxy, const RoutingShape& s, const std::string& run,
                     RoutingMode* mode) {
  const double busy0 = ChatCalls(proxy, 0), idle0 = ChatCalls(proxy, 1);
  std::vector<RoutingSample> samples(static_cast<size_t>(s.agents));
  std::vector<std::thread> threads;
  for (int i = 0; i < s.agents; ++i)
    threads.emplace_back([&, i] {
      RunRoutedAgent(proxy.port(), proxy.token(), run + "-" + std::to_string(i), i, s, &samples[i]);
    });
  for (auto& t : threads) t.join();
  for (const RoutingSample& x : samples) {
    mode->pooled.ms.insert(mode->pooled.ms.end(), x.ms.begin(), x.ms.end());
    mode->pooled.failed += x.failed;
  }
  const double busy = ChatCalls(proxy, 0) - busy0, idle = ChatCalls(proxy, 1) - idle0;
  mode->busy_calls += busy;
  mode->all_calls += busy + idle;
}

void ReportRoutingModes(const RoutingMode& off, const RoutingMode& on, const RoutingShape& s,
                        Report* report) {
  const std::string what = std::to_string(s.agents) + " agents x " + std::to_string(s.turns) +
                           " turns, " + std::to_string(s.flood) + " flood streams on upstream 0, " +
                           std::to_string(s.rounds) + " rounds";
  for (double q : {0.5, 0.9}) {
    const std::string p = q == 0.5 ? "P50" : "P90";
    report->Add({"proxy_load_routing/call_latency_" + p, Quantile(on.pooled.ms, q), "ms", false,
                 "load not read", Quantile(off.pooled.ms, q),
                 "sessions' call latency (max_tokens 8) through the proxy, " + what});
  }
  auto share = [](const RoutingMode& m) {
    return m.all_calls > 0 ? m.busy_calls / m.all_calls : 0;
  };
  report->Add({"proxy_load_routing/busy_upstream_share", share(on), "fraction", false,
               "load not read", share(off),
               "share of the sessions' calls the busy upstream served"});
  if (off.pooled.failed + on.pooled.failed > 0)
    std::fprintf(stderr, "bench proxy_load_routing: %d sessions failed (not read), %d (read)\n",
                 off.pooled.failed, on.pooled.failed);
}

// `table` with its token columns in the proxies' estimate (a token per 4 bytes where the
// upstream's vocabulary has one per byte), written to `out`; false when unreadable.
bool ToProxyTokens(const std::string& table, const std::filesystem::path& out) {
  std::ifstream in(table);
  std::ofstream o(out);
  if (!in || !o) return false;
  std::vector<double> scale;  // per column
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream cells(line);
    std::string cell, row;
    for (size_t i = 0; std::getline(cells, cell, ','); ++i) {
      if (scale.size() <= i && !std::isdigit(static_cast<unsigned char>(cell[0]))) {
        // The header: prefill and KV tokens / 4, attention (tokens squared) / 16.
        scale.push_back(cell == "prefill_tokens" || cell == "kv_tokens" ? 0.25
                        : cell == "prefill_attention"                   ? 0.0625
                                                                        : 1.0);
        row += (i ? "," : "") + cell;
        continue;
      }
      const double v = std::atof(cell.c_str()) * (i < scale.size() ? scale[i] : 1.0);
      std::ostringstream num;
      num.precision(17);
      num << (i + 1 < scale.size() && scale[i] != 1.0 ? double(int64_t(v)) : v);
      row += (i ? "," : "") + num.str();
    }
    o << row << "\n";
  }
  return !scale.empty();
}

void ReportProxyLoadRouting(const std::map<std::string, Measured>&, Report* report) {
  if (const char* only = std::getenv("SY_BENCH_API_ONLY");
      only && std::string(only) != "proxy_load_routing")
    return;
  const std::string bin = SwitchyardBinary();
  const std::string model =
      std::string(SY_SOURCE_DIR) + "/configs/models/" + kRoutingModel + ".json";
  if (!std::filesystem::exists(bin)) {
    std::fprintf(stderr, "bench proxy_load_routing: skipped: no %s\n", bin.c_str());
    return;
  }
  RoutingShape s{EnvInt("SY_BENCH_LOAD_AGENTS", 6), EnvInt("SY_BENCH_LOAD_TURNS", 4),
                 EnvInt("SY_BENCH_LOAD_WAIT_MS", 200), EnvInt("SY_BENCH_LOAD_FLOOD", 4),
                 EnvInt("SY_BENCH_LOAD_ROUNDS", 2)};
  const std::vector<std::string> engine = {"--engine", "cpu",      "--model",
                                           model,      "--policy", "vllm-fcfs"};
  ServeProcess busy, idle, off, on;
  // One key for both upstreams (the proxies send one --upstream-key to all).
  const std::string key = "bench-upstreams-" + RandomHex(16);
  if (!busy.Start(bin, engine, "upstream 0 (CPU engine, flooded)", key) ||
      !idle.Start(bin, engine, "upstream 1 (CPU engine)", key))
    return;
  const std::string list = "http://127.0.0.1:" + std::to_string(busy.port()) +
                           ",http://127.0.0.1:" + std::to_string(idle.port());
  std::vector<std::string> priced;  // --config FILE with the step table, or nothing
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("sy_bench_load_" + RandomHex(6));
  if (const char* table = std::getenv("SY_BENCH_LOAD_STEP_TABLE"); table && *table) {
    std::filesystem::create_directories(dir);
    if (!ToProxyTokens(table, dir / "table.csv")) {
      std::fprintf(stderr, "bench proxy_load_routing: cannot read step table %s\n", table);
      return;
    }
    std::ofstream(dir / "config.json")
        << nlohmann::json{{"models", {{{"stepTable", (dir / "table.csv").string()}}}}}.dump();
    priced = {"--config", (dir / "config.json").string()};
  }
  auto proxy = [&](const char* interval, ServeProcess* p, const char* what) {
    std::vector<std::string> args = {
        "--upstream", list, "--upstream-key", key, "--upstream-load-interval-ms", interval};
    args.insert(args.end(), priced.begin(), priced.end());
    return p->Start(bin, args, what);
  };
  const bool started =
      proxy("0", &off, "proxy (load not read)") && proxy("200", &on, "proxy (load read)");
  std::filesystem::remove_all(dir);  // read at start
  if (!started) return;
  std::atomic<bool> stop{false};
  std::vector<std::thread> flood;
  for (int i = 0; i < s.flood; ++i)
    flood.emplace_back([&, i] { Flood(busy.port(), busy.token(), i, &stop); });
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the flood in full swing; a read
  RoutingMode m_off, m_on;
  const std::string run = RandomHex(6);
  for (int r = 0; r < s.rounds; ++r) {
    const std::string id = run + "-" + std::to_string(r);
    if (r % 2 == 0) {
      RunRoutingRound(off, s, id + "-off", &m_off);
      RunRoutingRound(on, s, id + "-on", &m_on);
    } else {
      RunRoutingRound(on, s, id + "-on", &m_on);
      RunRoutingRound(off, s, id + "-off", &m_off);
    }
  }
  stop = true;
  for (auto& t : flood) t.join();
  ReportRoutingModes(m_off, m_on, s, report);
}

}  // namespace

SY_BENCH_REPORT(proxy_load_routing, ReportProxyLoadRouting);

}  // namespace switchyard::bench
