// bench_api, reporter shared_prefix_serve: what the CPU engine's automatic prefix caching
// buys sessions that share a tenant-wide preamble (a harness's system prompt) in native
// serving, prefix caching on against off, same run.
//
// Starts two `switchyard serve --engine cpu --model configs/models/tiny-llama-4l.json`
// processes (RANDOM weights: the text is meaningless; a byte vocabulary, a token a byte),
// `--prefix-caching on` and `--prefix-caching off`, each with the default policy. Then A
// agent threads each run S sessions one after another through one server: the same
// system prompt of P bytes for every session, a user message of its own, and after each
// answer a W ms tool wait and the tool's output as the next message, T turns. Each call
// asks for one token (not streamed), so its latency is its time to first token. The
// servers take turns in R rounds (off, on; on, off; ...), each on fresh sessions.
// Reported: the sessions' first turns' latency P50 and P90 (where the shared preamble can
// only come from another session), every turn's P50, the prompt tokens the engine computed
// (its step tokens less the one decoded token a call), and the cached share of the prompts
// as the answers' usage reports it, on against off.
// Environment: SY_BENCH_SHARED_AGENTS (A, 4), SY_BENCH_SHARED_SESSIONS (S, 4),
// SY_BENCH_SHARED_TURNS (T, 3), SY_BENCH_SHARED_WAIT_MS (W, 100),
// SY_BENCH_SHARED_PREAMBLE (P, 1500), SY_BENCH_SHARED_ROUNDS (R, 2),
// SY_BENCH_SHARED_POOL_MIB (the KV pool, 64); SY_BENCH_API_ONLY=shared_prefix_serve runs
// only this reporter:
//   SY_BENCH_API_ONLY=shared_prefix_serve build-release/bin/bench_api --json
//     --benchmark_filter=none   (one command line)
//
// Thread-safety: single-threaded bench code; agent threads write only their own slots.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/api/serve_client.h"
#include "bench/common/report.h"

namespace switchyard::bench {
namespace {

using nlohmann::json;

struct SharedWorkload {
  int agents = 4, sessions = 4, turns = 3, wait_ms = 100, preamble = 1500;
};

// What one mode's calls measured.
struct SharedSample {
  std::vector<double> first_ms, all_ms;
  int64_t prompt = 0, cached = 0, calls = 0;
  int failed = 0;
};

// The harness's system prompt, the same for every session of the run.
std::string Preamble(const std::string& run, int bytes) {
  std::string p = "You are a coding agent (run " + run + "). Follow the rules. ";
  while (p.size() < static_cast<size_t>(bytes))
    p += "Rule " + std::to_string(p.size()) + ": read before you edit. ";
  return p.substr(0, static_cast<size_t>(bytes));
}

// One session of T turns through `server`.
void RunSession(const ServeProcess& server, const std::string& preamble, const std::string& id,
                const SharedWorkload& w, SharedSample* out) {
  Connection conn(server.port());
  json messages = {{{"role", "system"}, {"content", preamble}},
                   {{"role", "user"}, {"content", "Task " + id + ": fix the failing test."}}};
  const std::string headers = "Authorization: Bearer " + server.token() +
                              "\r\nContent-Type: application/json\r\nx-session-id: " + id + "\r\n";
  for (int turn = 0; turn < w.turns; ++turn) {
    const json body = {
        {"model", "tiny-llama-4l"}, {"messages", messages}, {"max_tokens", 1}, {"temperature", 0}};
    double ms = 0;
    json answer = TimedChat(&conn, headers, body, &ms);
    if (!answer.is_object()) {
      ++out->failed;
      return;
    }
    ++out->calls;
    if (turn == 0) out->first_ms.push_back(ms);
    out->all_ms.push_back(ms);
    const json& u = answer["usage"];
    out->prompt += u.value("prompt_tokens", int64_t{0});
    if (u.contains("prompt_tokens_details"))
      out->cached += u["prompt_tokens_details"].value("cached_tokens", int64_t{0});
    messages.push_back(answer["choices"][0]["message"]);
    std::this_thread::sleep_for(std::chrono::milliseconds(w.wait_ms));  // the agent's tool
    messages.push_back(
        {{"role", "user"},
         {"content", "Tool output " + std::to_string(turn) + ": " + std::string(80, 'a' + turn)}});
  }
}

// One round through `server`: A agents, S sessions each; returns the prompt tokens computed.
double RunSharedRound(const ServeProcess& server, const std::string& run, const SharedWorkload& w,
                      SharedSample* pooled) {
  const double before = EngineStepTokens(server.port(), server.token());
  const std::string preamble = Preamble(run, w.preamble);
  std::vector<SharedSample> samples(static_cast<size_t>(w.agents));
  std::vector<std::thread> threads;
  for (int a = 0; a < w.agents; ++a)
    threads.emplace_back([&, a] {
      for (int s = 0; s < w.sessions; ++s)
        RunSession(server, preamble, run + "-" + std::to_string(a) + "-" + std::to_string(s), w,
                   &samples[static_cast<size_t>(a)]);
    });
  for (auto& t : threads) t.join();
  int64_t calls = 0;
  for (const SharedSample& s : samples) {
    pooled->first_ms.insert(pooled->first_ms.end(), s.first_ms.begin(), s.first_ms.end());
    pooled->all_ms.insert(pooled->all_ms.end(), s.all_ms.begin(), s.all_ms.end());
    pooled->prompt += s.prompt;
    pooled->cached += s.cached;
    pooled->failed += s.failed;
    calls += s.calls;
  }
  // Each call decoded one token; the rest of the step tokens are prompt tokens computed.
  return EngineStepTokens(server.port(), server.token()) - before - double(calls);
}

void ReportShared(const SharedSample& off, const SharedSample& on, double computed_off,
                  double computed_on, const SharedWorkload& w, int rounds, Report* report) {
  const std::string what = std::to_string(w.agents) + " agents x " + std::to_string(w.sessions) +
                           " sessions x " + std::to_string(w.turns) + " turns, a " +
                           std::to_string(w.preamble) + "-token shared preamble, " +
                           std::to_string(rounds) + " rounds";
  for (double q : {0.5, 0.9}) {
    const std::string p = q == 0.5 ? "P50" : "P90";
    report->Add({"shared_prefix_serve/first_turn_ttft_" + p, Quantile(on.first_ms, q), "ms", false,
                 "prefix caching off", Quantile(off.first_ms, q),
                 "sessions' first turns' time to first token (max_tokens 1), " + what});
  }
  report->Add({"shared_prefix_serve/ttft_P50", Quantile(on.all_ms, 0.5), "ms", false,
               "prefix caching off", Quantile(off.all_ms, 0.5), "every turn, " + what});
  report->Add({"shared_prefix_serve/prompt_tokens_computed", computed_on, "tokens", false,
               "prefix caching off", computed_off, "prompt tokens the engine computed"});
  auto share = [](const SharedSample& m) { return m.prompt ? double(m.cached) / m.prompt : 0; };
  report->Add({"shared_prefix_serve/cached_share", share(on), "fraction", true,
               "prefix caching off", share(off), "cached share of the prompts (usage)"});
  if (off.failed + on.failed > 0)
    std::fprintf(stderr, "bench shared_prefix_serve: %d sessions failed (off), %d (on)\n",
                 off.failed, on.failed);
}

void ReportSharedPrefixServe(const std::map<std::string, Measured>&, Report* report) {
  if (const char* only = std::getenv("SY_BENCH_API_ONLY");
      only && std::string(only) != "shared_prefix_serve")
    return;
  const std::string bin = SwitchyardBinary();
  const std::string model = std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-4l.json";
  if (!std::filesystem::exists(bin) || !std::filesystem::exists(model)) {
    std::fprintf(stderr, "bench shared_prefix_serve: skipped: no %s\n", bin.c_str());
    return;
  }
  const SharedWorkload w{EnvInt("SY_BENCH_SHARED_AGENTS", 4), EnvInt("SY_BENCH_SHARED_SESSIONS", 4),
                         EnvInt("SY_BENCH_SHARED_TURNS", 3), EnvInt("SY_BENCH_SHARED_WAIT_MS", 100),
                         EnvInt("SY_BENCH_SHARED_PREAMBLE", 1500)};
  const int rounds = EnvInt("SY_BENCH_SHARED_ROUNDS", 2);
  const std::string pool = std::to_string(EnvInt("SY_BENCH_SHARED_POOL_MIB", 64));
  ServeProcess off, on;
  auto start = [&](ServeProcess* p, const char* caching) {
    return p->Start(
        bin,
        {"--engine", "cpu", "--model", model, "--kv-pool-mib", pool, "--prefix-caching", caching},
        std::string("serve (prefix caching ") + caching + ")");
  };
  if (!start(&off, "off") || !start(&on, "on")) return;
  SharedSample s_off, s_on;
  double c_off = 0, c_on = 0;
  const std::string run = RandomHex(6);
  for (int r = 0; r < rounds; ++r) {
    const std::string id = run + std::to_string(r);
    if (r % 2 == 0) {
      c_off += RunSharedRound(off, id + "off", w, &s_off);
      c_on += RunSharedRound(on, id + "on", w, &s_on);
    } else {
      c_on += RunSharedRound(on, id + "on", w, &s_on);
      c_off += RunSharedRound(off, id + "off", w, &s_off);
    }
  }
  ReportShared(s_off, s_on, c_off, c_on, w, rounds, report);
}

}  // namespace

SY_BENCH_REPORT(shared_prefix_serve, ReportSharedPrefixServe);

}  // namespace switchyard::bench
