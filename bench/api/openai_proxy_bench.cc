// bench_api, reporter openai_proxy: what Switchyard's proxy mode costs an OpenAI client.
//
// Starts two `switchyard serve` processes (next to this binary, or SWITCHYARD_BIN) on free
// loopback ports, each with a temporary data dir (durability on, the defaults):
//   - the upstream: `--engine cpu --model configs/models/tiny-llama-4l.json --kv-pool-mib 64`
//     (a tiny model with RANDOM weights computed on the CPU; its text is meaningless);
//   - the proxy: `--upstream http://127.0.0.1:<upstream port> --upstream-key <upstream token>`,
//     which orders and admits each chat completion through its scheduler, then forwards it
//     unchanged to the upstream and passes the answer back.
// Then C client threads of this process (plain sockets, one keep-alive HTTP/1.1 connection
// each, closed loop) send POST /v1/chat/completions (max_tokens 4, temperature 0, short
// prompts) directly to the upstream, then the same through the proxy, in phases:
//   1. stateless: no session header, so each request is a one-node workflow; N requests
//      per phase;
//   2. sessions: an `x-session-id` per client and session, T turns per session (each turn's
//      prompt is the previous prompt, its answer and a new user message), S sessions per
//      client per phase; the sessions are deleted after the phase (not timed).
// The direct and proxy phases alternate in R rounds (direct, proxy; proxy, direct; ...) so
// that the machine's drift (a shared machine) falls on both; the samples of all rounds are
// pooled. After a short warmup of both paths. Reported for each kind: requests/s through
// the proxy against direct requests/s (goal ratio >= 0.9), P50 latency through the proxy
// against direct P50 (lower is better), the P50 Switchyard adds (proxy P50 - direct P50, ms,
// no baseline), and the proxy's and the upstream's CPU per request (from /proc).
// Skips (a line on stderr, no results) when the switchyard binary or the model file is
// missing, or a server does not start.
// Environment: SY_BENCH_PROXY_CLIENTS (C, default 8), SY_BENCH_PROXY_REQUESTS (N, 480),
// SY_BENCH_PROXY_TURNS (T, 4), SY_BENCH_PROXY_SESSIONS (S, 8), SY_BENCH_PROXY_ROUNDS (R, 4);
// SY_BENCH_API_ONLY=openai_proxy runs only this reporter of the suite (the api reporter takes
// minutes), =api only that one:
//   SY_BENCH_API_ONLY=openai_proxy build-pbench/bin/bench_api --json --benchmark_filter=none
//
// Thread-safety: single-threaded bench code; the client threads share nothing but their
// result slots, read after join.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/process.h"
#include "bench/common/report.h"

namespace switchyard::bench {
namespace {

constexpr char kModelId[] = "tiny-llama-4l";
constexpr double kGoalRatio = 0.9;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

std::string RandomHex(size_t n) {
  std::random_device rd;
  std::string s;
  while (s.size() < n) s += "0123456789abcdef"[rd() % 16];
  return s;
}

double SelfCpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

struct Answer {
  int status = 0;
  std::string body;
};

// One keep-alive HTTP/1.1 connection to 127.0.0.1:port (blocking socket). Answers with
// Content-Length, chunked or close-delimited bodies are read whole.
class Connection {
 public:
  explicit Connection(int port) : port_(port) {}
  ~Connection() { Close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // False when no answer came back. A reused connection the server had closed while idle
  // (nothing of the answer read) is retried once on a fresh one.
  bool Send(const std::string& method, const std::string& target, const std::string& headers,
            const std::string& body, Answer* out) {
    std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers +
                      "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    for (int attempt = 0; attempt < 2; ++attempt) {
      bool fresh = fd_ < 0;
      if (fresh && !Connect()) return false;
      bool got_bytes = false;
      if (SendAll(req) && Read(out, &got_bytes)) return true;
      Close();
      if (fresh || got_bytes) return false;
    }
    return false;
  }

 private:
  bool Connect() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      Close();
      return false;
    }
    buf_.clear();
    return true;
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    buf_.clear();
  }
  bool SendAll(const std::string& s) {
    for (size_t sent = 0; sent < s.size();) {
      ssize_t n = ::send(fd_, s.data() + sent, s.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  bool Fill(bool* got_bytes) {
    char b[16384];
    ssize_t n = ::recv(fd_, b, sizeof(b), 0);
    if (n <= 0) return false;
    buf_.append(b, static_cast<size_t>(n));
    *got_bytes = true;
    return true;
  }
  bool Read(Answer* out, bool* got_bytes) {
    size_t head_end;
    while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!Fill(got_bytes)) return false;
    std::string head = buf_.substr(0, head_end + 2);
    buf_.erase(0, head_end + 4);
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (head.size() < 12) return false;
    out->status = std::atoi(head.c_str() + 9);
    out->body.clear();
    bool close = head.find("\r\nconnection: close\r\n") != std::string::npos;
    size_t cl = head.find("\r\ncontent-length:");
    if (cl != std::string::npos) {
      size_t n = std::strtoull(head.c_str() + cl + 17, nullptr, 10);
      while (buf_.size() < n)
        if (!Fill(got_bytes)) return false;
      out->body = buf_.substr(0, n);
      buf_.erase(0, n);
    } else if (head.find("\r\ntransfer-encoding: chunked\r\n") != std::string::npos) {
      for (;;) {
        size_t eol;
        while ((eol = buf_.find("\r\n")) == std::string::npos)
          if (!Fill(got_bytes)) return false;
        size_t n = std::strtoull(buf_.c_str(), nullptr, 16);
        while (buf_.size() < eol + 2 + n + 2)
          if (!Fill(got_bytes)) return false;
        out->body.append(buf_, eol + 2, n);
        buf_.erase(0, eol + 2 + n + 2);
        if (n == 0) break;  // no trailers expected
      }
    } else {
      while (Fill(got_bytes)) {
      }
      out->body = std::move(buf_);
      close = true;
    }
    if (close) Close();
    return true;
  }

  int port_;
  int fd_ = -1;
  std::string buf_;
};

// `switchyard serve ARGS --listen 127.0.0.1:<free port> --data-dir <tmp>/data` as a child
// process (output to <tmp>/serve.log), stopped with SIGTERM by the destructor.
class ServeProcess {
 public:
  bool Start(const std::string& binary, const std::vector<std::string>& args,
             const std::string& what) {
    dir_ = std::filesystem::temp_directory_path() / ("sy_bench_proxy_" + RandomHex(8));
    std::filesystem::create_directories(dir_);
    port_ = FreeLoopbackPort();
    std::vector<std::string> argv = {binary, "serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--listen", "127.0.0.1:" + std::to_string(port_), "--data-dir",
                             (dir_ / "data").string()});
    std::string log = (dir_ / "serve.log").string();
    pid_ = Spawn(argv, log);
    std::filesystem::path token_file = dir_ / "data" / "tokens" / "default";
    for (int i = 0; i < 1200; ++i) {  // 60 s
      Answer a;
      if (Connection(port_).Send("GET", "/healthz", "Connection: close\r\n", "", &a) &&
          a.status == 200 && std::filesystem::exists(token_file)) {
        std::ifstream(token_file) >> token_;
        if (!token_.empty()) return true;
      }
      if (Exited(pid_)) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::fprintf(stderr, "bench openai_proxy: the %s did not start; its log:\n%s\n", what.c_str(),
                 ReadText(log).c_str());
    return false;
  }
  ~ServeProcess() {
    if (pid_ > 0) Terminate(pid_);
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& token() const { return token_; }

 private:
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string token_;
};

// The raw JSON string (quotes and escapes kept) of the first "content" after "message" in
// a chat completion; "\"\"" when there is none (e.g. content null with tool calls).
std::string AnswerContentJson(const std::string& body) {
  size_t m = body.find("\"message\"");
  size_t c = m == std::string::npos ? m : body.find("\"content\"", m);
  if (c == std::string::npos) return "\"\"";
  size_t q = body.find_first_not_of(" :", c + 9);
  if (q == std::string::npos || body[q] != '"') return "\"\"";
  size_t i = q + 1;
  while (i < body.size() && body[i] != '"') i += body[i] == '\\' ? 2 : 1;
  return i < body.size() ? body.substr(q, i - q + 1) : "\"\"";
}

std::string Body(const std::string& messages) {
  return std::string("{\"model\":\"") + kModelId + "\",\"messages\":[" + messages +
         "],\"max_tokens\":4,\"temperature\":0}";
}

std::string UserMessage(const std::string& text) {
  return "{\"role\":\"user\",\"content\":\"" + text + "\"}";
}

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

// Closed loop on `clients` threads: `requests` stateless completions in all, or, when
// `turns` > 0, `sessions_per_client` sessions of `turns` turns per client.
Phase RunPhase(const Target& t, const ServeProcess& up, const ServeProcess& proxy, int clients,
               int requests, int turns, int sessions_per_client, const std::string& tag) {
  std::vector<Phase> per(static_cast<size_t>(clients));
  const std::string auth =
      "Authorization: Bearer " + t.token + "\r\nContent-Type: application/json\r\n";
  auto client = [&](int c) {
    Phase& p = per[static_cast<size_t>(c)];
    Connection conn(t.port);
    auto timed = [&](const std::string& headers, const std::string& body, Answer* a) {
      auto t0 = std::chrono::steady_clock::now();
      bool ok = conn.Send("POST", "/v1/chat/completions", headers, body, a) && a->status == 200;
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (ok)
        p.latency_ms.push_back(ms);
      else
        ++p.failed;
      return ok;
    };
    Answer a;
    if (turns == 0) {
      for (int i = c; i < requests; i += clients)
        timed(auth,
              Body(UserMessage("client " + std::to_string(c) + " asks question " +
                               std::to_string(i) + ": what next?")),
              &a);
      return;
    }
    for (int s = 0; s < sessions_per_client; ++s) {
      std::string sid = tag + "-c" + std::to_string(c) + "-s" + std::to_string(s);
      p.sessions.push_back(sid);
      std::string msgs = UserMessage("session " + sid + ": plan the next step");
      for (int k = 0; k < turns; ++k) {
        if (!timed(auth + "x-session-id: " + sid + "\r\n", Body(msgs), &a)) break;
        msgs += ",{\"role\":\"assistant\",\"content\":" + AnswerContentJson(a.body) + "}," +
                UserMessage("tool result " + std::to_string(k) + ": ok, continue");
      }
    }
  };
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
  Answer a;
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

void Log(const char* kind, int round, int mode, const Phase& p) {
  std::fprintf(stderr, "bench openai_proxy: round %d %s %s: %zu answers (%d failed) in %.2f s\n",
               round, kind, mode == 0 ? "direct" : "proxy", p.latency_ms.size(), p.failed,
               p.wall_s);
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
  const int clients = EnvInt("SY_BENCH_PROXY_CLIENTS", 8);
  const int requests = EnvInt("SY_BENCH_PROXY_REQUESTS", 480);
  const int turns = EnvInt("SY_BENCH_PROXY_TURNS", 4);
  const int per_client = EnvInt("SY_BENCH_PROXY_SESSIONS", 8);
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
  const Target direct{up.port(), up.token()}, via{proxy.port(), proxy.token()};
  const std::string run = RandomHex(6);
  // Warmup: both paths, both kinds (connections, the engine's first batches).
  for (const Target* t : {&direct, &via}) {
    RunPhase(*t, up, proxy, clients, 4 * clients, 0, 0, "");
    Phase w = RunPhase(*t, up, proxy, clients, 0, 2, 1, "warm-" + run + std::to_string(t->port));
    DeleteSessions(*t, w.sessions);
    if (t == &via) DeleteSessions(direct, w.sessions);
  }
  Pooled stateless[2], sessions[2];  // [0] direct, [1] proxy
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < 2; ++i) {
      int mode = (r % 2 == 0) ? i : 1 - i;  // direct, proxy; then proxy, direct
      const Target& t = mode == 0 ? direct : via;
      Phase p = RunPhase(t, up, proxy, clients, requests, 0, 0, "");
      Log("stateless", r, mode, p);
      stateless[mode].Add(p);
    }
    for (int i = 0; i < 2; ++i) {
      int mode = (r % 2 == 0) ? i : 1 - i;
      const Target& t = mode == 0 ? direct : via;
      Phase p = RunPhase(t, up, proxy, clients, 0, turns, per_client,
                         run + "-r" + std::to_string(r) + (mode == 0 ? "-direct" : "-proxy"));
      Log("sessions", r, mode, p);
      sessions[mode].Add(p);
      DeleteSessions(t, p.sessions);
      if (mode == 1) DeleteSessions(direct, p.sessions);  // the upstream's own sessions
    }
  }
  const std::string common = std::to_string(clients) + " clients (keep-alive, closed loop), " +
                             std::to_string(rounds) + " rounds alternating direct/proxy";
  ReportKind("openai_proxy",
             "stateless chat completions (max_tokens 4), " + std::to_string(requests) +
                 " per phase, " + common,
             stateless[0], stateless[1], report);
  ReportKind("openai_proxy_session",
             "x-session-id sessions of " + std::to_string(turns) + " turns, " +
                 std::to_string(per_client) + " per client per phase, " + common,
             sessions[0], sessions[1], report);
}

SY_BENCH_REPORT(openai_proxy, ReportOpenAiProxy);

}  // namespace
}  // namespace switchyard::bench
