// bench_api, reporter proxy_steering: what steering an upstream's KV buys agent sessions in
// proxy mode (upstream/proxy_steering.h), steering on against steering off, same run.
//
// Starts `switchyard serve` processes on free loopback ports (serve_client.h):
//   - the upstream, which behaves as vLLM does: `--engine cpu --model
//     configs/models/tiny-llama-4l.json` (RANDOM weights: its text is meaningless)
//     `--policy vllm-fcfs --kv-pool-mib N`: a pool of P tokens with automatic prefix
//     caching, too small for the idle sessions, which keeps a finished request's KV only as
//     its prefix cache's LRU does;
//   - two proxies in front of it, `--upstream URL --upstream-steering on` and `... off`,
//     each with `hbmBytesPerWorker` set so that its scheduler models the upstream's pool
//     (its prompts are estimated at 4 bytes a token and priced as Llama-3.1-8B's KV).
// Then A agent threads run sessions of T turns through one proxy: a long system prompt of
// their own, a user message, and after each answer a tool wait of W ms (the agent's tool)
// and the tool's output as the next user message. Each call asks for one token (not
// streamed), so its latency is its time to first token. The proxies take turns in R rounds
// (off, on; on, off; ...), each round on a fresh session set.
// Reported: the resumed turns' (every turn after a session's first) latency P50 and P90 with
// steering on against off (goal P50 <= 0.6x), the prompt tokens the upstream computed (its
// engine's step tokens, warm-ups included, less the one decoded token per call) on against
// off (goal <= 0.5x), and the cached share of the resumed turns' prompts as the upstream's
// usage reports it.
// SY_BENCH_STEER_UPSTREAM=URL[#WORDS] puts both proxies in front of that upstream instead
// (e.g. a llama-server started by hand: `http://127.0.0.1:8080#chat+llamacpp+slots+slot_files`,
// with SY_BENCH_STEER_MODEL_ID its model name); its computed tokens are then not reported.
// SY_BENCH_STEER_OFFLOAD_MIB=N gives the upstream a host offload tier of N MiB
// (`--kv-offload-mib N`, vLLM's native CPU offloading) and the proxies the vLLM adapter,
// declared with it (`#chat+vllm+kv_transfer_params+prefix_caching`): each forwarded turn
// carries kv_transfer_params from its wait's decision, and warm-ups load from the host tier.
// Environment: SY_BENCH_STEER_AGENTS (A, 8), SY_BENCH_STEER_TURNS (T, 5),
// SY_BENCH_STEER_WAIT_MS (W, 400), SY_BENCH_STEER_ROUNDS (R, 2), SY_BENCH_STEER_MODEL
// (tiny-llama-4l), SY_BENCH_STEER_POOL_TOKENS (P, 2048), SY_BENCH_STEER_SYSTEM_CHARS (the
// system prompt, 1200 bytes = tokens of these byte vocabularies);
// SY_BENCH_API_ONLY=proxy_steering runs only this reporter:
//   SY_BENCH_API_ONLY=proxy_steering build-release/bin/bench_api --json --benchmark_filter=none
//
// Thread-safety: single-threaded bench code; agent threads write only their own slots.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/api/serve_client.h"
#include "bench/common/process.h"
#include "bench/common/report.h"

namespace switchyard::bench {
namespace {

using nlohmann::json;

// The upstream's model (a configs/models file, RANDOM weights) and its KV pool in tokens.
struct UpstreamModel {
  std::string id, path;
  int64_t pool_tokens = 2048;
  int64_t kv_bytes_per_token = 0;  // from the file's shape (fp32 KV)
};

// The model named by SY_BENCH_STEER_MODEL (default tiny-llama-4l) and its KV bytes a token.
bool LoadUpstreamModel(UpstreamModel* m) {
  const char* name = std::getenv("SY_BENCH_STEER_MODEL");
  m->id = name && *name ? name : "tiny-llama-4l";
  m->path = std::string(SY_SOURCE_DIR) + "/configs/models/" + m->id + ".json";
  std::ifstream in(m->path);
  const json shape = json::parse(in, nullptr, false);
  if (!shape.is_object()) return false;
  m->kv_bytes_per_token = shape.value("numLayers", 0) * 2 * shape.value("numKvHeads", 0) *
                          shape.value("headDim", 0) * 4;
  m->pool_tokens = EnvInt("SY_BENCH_STEER_POOL_TOKENS", 2048);
  return m->kv_bytes_per_token > 0;
}

struct Agents {
  int agents = 8, turns = 5, wait_ms = 400, system_chars = 1200;
  std::string model;
};

struct Sample {
  std::vector<double> resumed_ms;
  int64_t resumed_prompt = 0, resumed_cached = 0, calls = 0;
  int failed = 0;
};

// One agent's session through `port`.
void RunAgent(int port, const std::string& token, const std::string& session, int id,
              const Agents& a, Sample* out) {
  Connection conn(port);
  std::string system = "You are agent " + std::to_string(id) + " of run " + session + ". ";
  while (system.size() < static_cast<size_t>(a.system_chars))
    system += "Rule " + std::to_string(system.size()) + ": be exact. ";
  json messages = {{{"role", "system"}, {"content", system}},
                   {{"role", "user"},
                    {"content", "Fix the failing test in module " + std::to_string(id) + "."}}};
  const std::string headers = "Authorization: Bearer " + token +
                              "\r\nContent-Type: application/json\r\nx-session-id: " + session +
                              "\r\n";
  for (int turn = 0; turn < a.turns; ++turn) {
    const json body = {
        {"model", a.model}, {"messages", messages}, {"max_tokens", 1}, {"temperature", 0}};
    double ms = 0;
    json answer = TimedChat(&conn, headers, body, &ms);
    if (!answer.is_object()) {
      ++out->failed;
      return;
    }
    ++out->calls;
    if (turn > 0) {
      const json& u = answer["usage"];
      out->resumed_ms.push_back(ms);
      out->resumed_prompt += u.value("prompt_tokens", int64_t{0});
      if (u.contains("prompt_tokens_details"))
        out->resumed_cached += u["prompt_tokens_details"].value("cached_tokens", int64_t{0});
    }
    messages.push_back(answer["choices"][0]["message"]);
    std::this_thread::sleep_for(std::chrono::milliseconds(a.wait_ms));  // the agent's tool
    messages.push_back({{"role", "user"},
                        {"content", "Tool output " + std::to_string(turn) + ": " +
                                        std::string(120, char('a' + (id + turn) % 26))}});
  }
}

struct Mode {
  Sample pooled;
  double upstream_prompt_tokens = 0;
};

// The upstream: this bench's own `switchyard serve` (its metrics read), or one given by
// SY_BENCH_STEER_UPSTREAM (a llama-server started by hand: no metrics read).
struct Upstream {
  std::string spec;  // --upstream URL[#WORDS]
  std::string key;   // --upstream-key
  const ServeProcess* ours = nullptr;
};

double StepTokensOf(const Upstream& up) {
  return up.ours ? EngineStepTokens(up.ours->port(), up.ours->token()) : 0;
}

void RunAgentsRound(const Upstream& up, const ServeProcess& proxy, const Agents& a,
                    const std::string& run, Mode* mode) {
  const double before = StepTokensOf(up);
  std::vector<Sample> samples(static_cast<size_t>(a.agents));
  std::vector<std::thread> threads;
  for (int i = 0; i < a.agents; ++i)
    threads.emplace_back([&, i] {
      RunAgent(proxy.port(), proxy.token(), run + "-" + std::to_string(i), i, a, &samples[i]);
    });
  for (auto& t : threads) t.join();
  int64_t calls = 0;
  for (const Sample& s : samples) {
    Sample& p = mode->pooled;
    p.resumed_ms.insert(p.resumed_ms.end(), s.resumed_ms.begin(), s.resumed_ms.end());
    p.resumed_prompt += s.resumed_prompt;
    p.resumed_cached += s.resumed_cached;
    p.failed += s.failed;
    calls += s.calls;
  }
  // Each call decoded one token; the rest of the step tokens are prompt tokens computed.
  if (up.ours) mode->upstream_prompt_tokens += StepTokensOf(up) - before - calls;
}

bool StartProxy(const std::string& bin, const Upstream& up, bool steering,
                const std::filesystem::path& config, ServeProcess* proxy) {
  std::vector<std::string> args = {
      "--upstream", up.spec,        "--upstream-steering", steering ? "on" : "off",
      "--config",   config.string()};
  if (!up.key.empty()) args.insert(args.end(), {"--upstream-key", up.key});
  return proxy->Start(bin, args, steering ? "proxy (steering on)" : "proxy (steering off)");
}

void ReportModes(const Mode& off, const Mode& on, const Agents& a, int rounds, Report* report) {
  const std::string what = std::to_string(a.agents) + " agents x " + std::to_string(a.turns) +
                           " turns, " + std::to_string(a.wait_ms) + " ms tool waits, " +
                           std::to_string(rounds) + " rounds";
  for (double q : {0.5, 0.9}) {
    const std::string p = q == 0.5 ? "P50" : "P90";
    report->Add({"proxy_steering/resumed_ttft_" + p, Quantile(on.pooled.resumed_ms, q), "ms", false,
                 "steering off", Quantile(off.pooled.resumed_ms, q),
                 "resumed turns' time to first token (max_tokens 1), " + what +
                     (q == 0.5 ? "; goal ratio >= 1/0.6" : "")});
  }
  if (off.upstream_prompt_tokens > 0)
    report->Add({"proxy_steering/upstream_prompt_tokens", on.upstream_prompt_tokens, "tokens",
                 false, "steering off", off.upstream_prompt_tokens,
                 "prompt tokens the upstream computed, warm-ups included; goal ratio >= 2"});
  auto share = [](const Mode& m) {
    return m.pooled.resumed_prompt ? double(m.pooled.resumed_cached) / m.pooled.resumed_prompt : 0;
  };
  report->Add({"proxy_steering/resumed_cached_share", share(on), "fraction", true, "steering off",
               share(off), "cached share of the resumed turns' prompts (upstream usage)"});
  if (off.pooled.failed + on.pooled.failed > 0)
    std::fprintf(stderr, "bench proxy_steering: %d sessions failed (off), %d (on)\n",
                 off.pooled.failed, on.pooled.failed);
}

void ReportProxySteering(const std::map<std::string, Measured>&, Report* report) {
  if (const char* only = std::getenv("SY_BENCH_API_ONLY");
      only && std::string(only) != "proxy_steering")
    return;
  const std::string bin = SwitchyardBinary();
  UpstreamModel um;
  if (!std::filesystem::exists(bin) || !LoadUpstreamModel(&um)) {
    std::fprintf(stderr, "bench proxy_steering: skipped: no %s\n",
                 std::filesystem::exists(bin) ? um.path.c_str() : bin.c_str());
    return;
  }
  Agents a{EnvInt("SY_BENCH_STEER_AGENTS", 8), EnvInt("SY_BENCH_STEER_TURNS", 5),
           EnvInt("SY_BENCH_STEER_WAIT_MS", 400), EnvInt("SY_BENCH_STEER_SYSTEM_CHARS", 1200),
           um.id};
  const int rounds = EnvInt("SY_BENCH_STEER_ROUNDS", 2);
  const std::filesystem::path config =
      std::filesystem::temp_directory_path() / ("sy_steer_" + RandomHex(6) + ".json");
  // The upstream's pool in the proxy's terms: its tokens / 4 (the proxy estimates 4 bytes
  // a token; the tiny models' vocabularies are bytes), at Llama-3.1-8B's 128 KiB a token.
  std::ofstream(config) << R"({"hbmBytesPerWorker": )" << (um.pool_tokens / 4) * (128LL << 10)
                        << R"(, "hostBytes": )" << (64LL << 30) << "}";
  const int64_t pool_mib =
      std::max<int64_t>(1, (um.pool_tokens * um.kv_bytes_per_token + (1 << 20) - 1) >> 20);
  ServeProcess ours, off, on;
  Upstream up;
  bool started = true;
  if (const char* external = std::getenv("SY_BENCH_STEER_UPSTREAM"); external && *external) {
    up.spec = external;  // e.g. http://127.0.0.1:8080#chat+llamacpp+slots+slot_files
    if (const char* id = std::getenv("SY_BENCH_STEER_MODEL_ID")) a.model = id;
  } else {
    std::vector<std::string> args = {"--engine", "cpu",           "--model",
                                     um.path,    "--kv-pool-mib", std::to_string(pool_mib),
                                     "--policy", "vllm-fcfs"};
    std::string words;
    if (const char* mib = std::getenv("SY_BENCH_STEER_OFFLOAD_MIB"); mib && std::atoi(mib) > 0) {
      args.insert(args.end(), {"--kv-offload-mib", mib});
      words = "#chat+vllm+kv_transfer_params+prefix_caching";
    }
    started = ours.Start(bin, args, "upstream (CPU engine, vllm-fcfs)");
    up = {"http://127.0.0.1:" + std::to_string(ours.port()) + words, ours.token(), &ours};
  }
  started =
      started && StartProxy(bin, up, false, config, &off) && StartProxy(bin, up, true, config, &on);
  std::filesystem::remove(config);
  if (!started) return;
  Mode m_off, m_on;
  const std::string run = RandomHex(6);
  for (int r = 0; r < rounds; ++r) {
    const std::string id = run + "-" + std::to_string(r);
    if (r % 2 == 0) {
      RunAgentsRound(up, off, a, id + "-off", &m_off);
      RunAgentsRound(up, on, a, id + "-on", &m_on);
    } else {
      RunAgentsRound(up, on, a, id + "-on", &m_on);
      RunAgentsRound(up, off, a, id + "-off", &m_off);
    }
  }
  ReportModes(m_off, m_on, a, rounds, report);
}

}  // namespace

SY_BENCH_REPORT(proxy_steering, ReportProxySteering);

}  // namespace switchyard::bench
