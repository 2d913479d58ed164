// bench_api: the HTTP service under load, measured from a separate process.
//
// Starts `switchyard serve` (next to this binary, or SWITCHYARD_BIN) on a free loopback
// port with a temporary data dir and durability on (every acknowledged write fsynced to
// the RocksDB WAL), then runs `switchyard loadgen` phases against it (each its own
// process, keep-alive HTTP/1.1):
//   1. GET /healthz, closed loop, 192 connections: the no-work baseline rate of the same
//      server and client;
//   2. events (appends, TOOL_STARTED, TOOL_FINISHED, all durable), closed loop, 192
//      connections: the sustained acknowledged events/s S; then 64 connections, where the
//      closed loop is bound by group-commit latency rather than by the server;
//   3. /healthz and events open loop at S/2, 192 connections: P50/P99 from the due time;
//      then events at S/2 for 60 s (SY_BENCH_API_LONG_SECONDS): the P99 with flushes and
//      compactions of the state store at their steady-state rate;
//   4. events open loop at 2*S from an uncapped tenant over 8x the connections (512: many
//      agents, so the server's bound of 256 requests admitted and not yet answered is what
//      stops the excess: 503 with Retry-After; server RSS before/after), then on a fresh
//      server from a tenant whose rate limit is S: answers by status (429/503), whether
//      the servers still answer.
// Also the server's CPU time per answer (from /proc), for events and for /healthz, closed
// loop and at half load; the disk's own append+fdatasync P50/P99 under the data dir, and the
// store's mean group-commit time during the half-load phase (from /metrics), so the P99 can
// be read against what the disk allows; and, from the server's histograms over that phase, the
// shares of event handlers and of records done within 5 ms, so the client's P99 can be split
// between the server's work and what happens outside it; and the machine's loopback TCP
// round trip between two threads on different CPUs against both on one (machine_probe.h),
// what this machine charges for a wake-up across CPUs. Phase length: SY_BENCH_API_SECONDS
// (default 5) after 1 s of warmup; the server's I/O threads: SY_BENCH_API_THREADS (default 2).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench/common/machine_probe.h"
#include "bench/common/process.h"
#include "bench/common/report.h"

namespace switchyard::bench {
namespace {

constexpr int kConnections = 64;
// The sustained rate is measured with enough agents to saturate the server: with 64
// connections each waiting for its group commit, the closed loop is bound by commit latency
// (64 / latency), not by the server (reported as a reference row).
constexpr int kSustainConnections = 192;
constexpr int kOverloadConnections = 512;
constexpr int kMaxInflight = 256;  // the server's default, written to its config
constexpr double kGoalEventsPerS = 20000;
constexpr double kGoalP99Ms = 5;

std::string Hex(size_t n) {
  std::random_device rd;
  std::string s;
  while (s.size() < n) s += "0123456789abcdef"[rd() % 16];
  return s;
}

double RssMiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  }
  return 0;
}

// A number field of loadgen's flat JSON output ("key":value); NaN when absent.
double Field(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nan("");
  return std::atof(json.c_str() + at + key.size() + 3);
}

// The body of GET `path` on the server (Connection: close); "" on any failure.
std::string HttpGet(int port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) out.append(buf, size_t(n));
    }
  }
  ::close(fd);
  size_t body = out.find("\r\n\r\n");
  return body == std::string::npos ? "" : out.substr(body + 4);
}

// One sample of a Prometheus text exposition ("name{labels} value"); NaN when absent.
double MetricValue(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return std::nan("");
  return std::atof(text.c_str() + at + series.size() + 2);
}

// The disk under the server's data dir, measured on its own in the same run: P50 and P99 of
// appending 4 KiB and fdatasync-ing it (what one group commit asks of the disk at least).
std::pair<double, double> FsyncProbe(const std::filesystem::path& dir, int n) {
  std::filesystem::path file = dir / "fsync_probe";
  int fd = ::open(file.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (fd < 0) return {std::nan(""), std::nan("")};
  std::string block(4096, 'x');
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) break;
    auto t0 = std::chrono::steady_clock::now();
    ::fdatasync(fd);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  ::close(fd);
  std::filesystem::remove(file);
  if (ms.empty()) return {std::nan(""), std::nan("")};
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)]};
}

// The machine's price of a wake-up on another CPU, from a loopback TCP ping-pong between
// two pinned threads (bench/common/machine_probe.h), the server idle. A request pays it when
// the client and the server's thread sit on different CPUs (how often is up to the kernel).
void ReportPingPong(Report* report) {
  if (std::thread::hardware_concurrency() < 2) return;
  constexpr int kRoundTrips = 20000;
  PingPong same, cross;
  if (!LoopbackPingPong(0, 0, kRoundTrips, &same) || !LoopbackPingPong(0, 1, kRoundTrips, &cross))
    return;
  const std::string note = "200-byte loopback TCP ping-pong, " + std::to_string(kRoundTrips) +
                           " round trips, threads on CPUs 0 and 1; server idle";
  report->Add({"loopback_round_trip_us_cross_cpu", cross.round_trip_us, "us", false,
               "both threads on CPU 0", same.round_trip_us, note});
  report->Add({"loopback_round_trip_cpu_us_cross_cpu", cross.cpu_us, "us", false,
               "both threads on CPU 0", same.cpu_us, note + "; CPU time of both threads"});
}

class Server {
 public:
  bool Start(const std::string& binary, double capped_rate) {
    dir_ = std::filesystem::temp_directory_path() / ("sy_bench_api_" + Hex(8));
    std::filesystem::create_directories(dir_);
    port_ = FreeLoopbackPort();
    token_ = Hex(32);
    capped_token_ = Hex(32);
    std::string cfg = (dir_ / "config.json").string();
    const char* threads = std::getenv("SY_BENCH_API_THREADS");  // the server's I/O threads
    std::ofstream(cfg) << "{\"threads\":" << (threads ? std::atoi(threads) : 2)
                       << ",\"maxInflight\":" << kMaxInflight << ",\"tenants\":["
                       << "{\"name\":\"bench\",\"token\":\"" << token_
                       << "\",\"rateLimitPerS\":10000000,\"rateBurst\":10000000,"
                          "\"maxWorkflows\":1000000},"
                       << "{\"name\":\"capped\",\"token\":\"" << capped_token_
                       << "\",\"rateLimitPerS\":" << capped_rate << ",\"rateBurst\":" << capped_rate
                       << ",\"maxWorkflows\":1000000}]}";
    std::string listen = "127.0.0.1:" + std::to_string(port_);
    std::string data = (dir_ / "data").string();
    std::string log = (dir_ / "server.log").string();
    pid_ = Spawn({binary, "serve", "--config", cfg, "--listen", listen, "--data-dir", data}, log);
    for (int i = 0; i < 600; ++i) {
      if (Healthy(port_)) return true;
      if (!Alive()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::fprintf(stderr, "bench api: server did not start; log in %s\n", log.c_str());
    return false;
  }
  bool Alive() const { return pid_ > 0 && !Exited(pid_); }
  ~Server() {
    if (pid_ > 0) Terminate(pid_);
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::filesystem::path& dir() const { return dir_; }
  const std::string& token() const { return token_; }
  const std::string& capped_token() const { return capped_token_; }

 private:
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string token_, capped_token_;
};

std::string RunLoadgen(const std::string& binary, const Server& s, const std::string& workload,
                       const std::string& token, double rate, double seconds,
                       int connections = kConnections, int nodes = 0) {
  std::string cmd = binary + " loadgen --target 127.0.0.1:" + std::to_string(s.port()) +
                    " --workload " + workload + " --connections " + std::to_string(connections) +
                    " --duration " + std::to_string(seconds) + " --warmup 1";
  if (nodes > 0) cmd += " --nodes " + std::to_string(nodes);
  if (!token.empty()) cmd += " --token " + token;
  if (rate > 0) cmd += " --rate " + std::to_string(rate);
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof(buf), p)) out += buf;
    ::pclose(p);
  }
  std::fprintf(
      stderr, "bench api: %s%s -> %s", workload.c_str(),
      rate > 0 ? (" @" + std::to_string(static_cast<long>(rate)) + "/s").c_str() : " closed",
      out.empty() ? "(no output)\n" : out.c_str());
  return out;
}

// Memory as workflows end: on a fresh server, two closed-loop runs of short (10-node)
// workflows; the server's RSS growth over the second run per workflow ended in it. Ended
// workflows beyond the in-memory bound are archived, so this stays near zero once the
// memtables and caches have filled in the first run.
void ReportMemory(const std::string& bin, double secs, Report* report) {
  Server server;
  if (!server.Start(bin, 1e7)) return;
  const std::string completed = "switchyard_workflows{state=\"completed\"}";
  RunLoadgen(bin, server, "events", server.token(), 0, secs, kConnections, 10);
  double rss1 = RssMiB(server.pid());
  double ended1 = MetricValue(HttpGet(server.port(), "/metrics"), completed);
  RunLoadgen(bin, server, "events", server.token(), 0, secs, kConnections, 10);
  double rss2 = RssMiB(server.pid());
  std::string m = HttpGet(server.port(), "/metrics");
  double ended2 = MetricValue(m, completed);
  double archived = MetricValue(m, "switchyard_workflows_memory{where=\"archived\"}");
  if (!(ended2 > ended1)) return;
  report->Add({"server_rss_kib_per_ended_workflow", 1024 * (rss2 - rss1) / (ended2 - ended1), "KiB",
               false, "", std::nullopt,
               "10-node workflows, closed loop; RSS " + std::to_string(int(rss1)) + " -> " +
                   std::to_string(int(rss2)) + " MiB over " + std::to_string(int(ended2 - ended1)) +
                   " ended workflows; " + std::to_string(int(archived)) + " archived"});
}

// Phase 2, closed loop: the sustained acknowledged events/s S against /healthz on the same
// server, S at 64 connections, and the server's CPU per answer. S, or 0 when no throughput
// was measured (said on stderr).
double ReportSustained(const std::string& bin, const Server& server, double secs, Report* report) {
  // Server CPU per request, from /proc: the work behind each answer, whatever else runs on
  // the machine (the 1 s warmup is counted at the measured rate).
  double cpu0 = ProcessCpuSeconds(server.pid());
  std::string health = RunLoadgen(bin, server, "healthz", "", 0, secs, kSustainConnections);
  double cpu1 = ProcessCpuSeconds(server.pid());
  std::string events =
      RunLoadgen(bin, server, "events", server.token(), 0, secs, kSustainConnections);
  double cpu2 = ProcessCpuSeconds(server.pid());
  std::string events64 = RunLoadgen(bin, server, "events", server.token(), 0, secs);
  double h_rate = Field(health, "answersPerS");
  double s_rate = Field(events, "ackedEventsPerS");
  if (!(s_rate > 0) || !(h_rate > 0)) {
    std::fprintf(stderr, "bench api: no throughput measured\n");
    return 0;
  }
  double h_cpu_us = 1e6 * (cpu1 - cpu0) / (h_rate * (secs + 1));
  double e_cpu_us = 1e6 * (cpu2 - cpu1) / (Field(events, "answersPerS") * (secs + 1));
  const std::string base = "GET /healthz, same server, client and connections";
  report->Add(
      {"events_acked_per_s_durable", s_rate, "events/s", true, base + " (requests/s)", h_rate,
       "closed loop, " + std::to_string(kSustainConnections) + " connections; goal >= 20000/s; " +
           std::string(s_rate >= kGoalEventsPerS ? "goal met" : "goal NOT met")});
  report->Add({"events_acked_per_s_durable_64_connections", Field(events64, "ackedEventsPerS"),
               "events/s", true,
               "sustained rate (" + std::to_string(kSustainConnections) + " connections)", s_rate,
               "closed loop, 64 connections: bound by group-commit latency"});
  report->Add({"server_cpu_us_per_event", e_cpu_us, "us", false, "server CPU per GET /healthz",
               h_cpu_us, "user+system CPU of the server process / answers (approx.)"});
  return s_rate;
}

// What phase 3 (open loop at half the sustained rate) measured: loadgen's output for
// /healthz and events, /metrics around the events run, the server's CPU seconds around
// both runs, and the disk's own fdatasync P50/P99 just before.
struct HalfLoad {
  double rate = 0;
  std::string at;  // " at <rate>/s", for names and notes
  std::string health, events;
  std::string metrics_before, metrics_after;  // around `events`
  double cpu_before = 0, cpu_between = 0, cpu_after = 0;
  double fsync_p50 = 0, fsync_p99 = 0;
};

HalfLoad MeasureHalfLoad(const std::string& bin, const Server& server, double secs, double s_rate) {
  HalfLoad h;
  h.rate = s_rate / 2;
  std::tie(h.fsync_p50, h.fsync_p99) = FsyncProbe(server.dir(), 400);
  // At the sustained rate's concurrency: 64 connections at S/2 are already at 60-80 % of
  // what 64 connections can carry closed-loop, so their own queueing (one request in flight
  // per connection, latency from the due time) would dominate the tail.
  h.cpu_before = ProcessCpuSeconds(server.pid());
  h.health = RunLoadgen(bin, server, "healthz", "", h.rate, secs, kSustainConnections);
  h.cpu_between = ProcessCpuSeconds(server.pid());
  h.metrics_before = HttpGet(server.port(), "/metrics");
  h.events = RunLoadgen(bin, server, "events", server.token(), h.rate, secs, kSustainConnections);
  h.metrics_after = HttpGet(server.port(), "/metrics");
  h.cpu_after = ProcessCpuSeconds(server.pid());
  h.at = " at " + std::to_string(static_cast<long>(h.rate)) + "/s";
  return h;
}

// Phase 3's figures from the client and the disk, with the machine's ping-pong among them.
void ReportHalfLoad(const HalfLoad& h, double secs, Report* report) {
  const std::string& at = h.at;
  auto delta = [&](const std::string& series) {
    return MetricValue(h.metrics_after, series) - MetricValue(h.metrics_before, series);
  };
  double batches = delta("switchyard_store_commit_seconds_count");
  double records = delta("switchyard_store_records_total");
  double write_s = delta("switchyard_store_commit_seconds_sum");
  // At half load each wake-up finds fewer requests and each group commit fewer records than
  // at the sustained rate: the server's CPU per event is higher there.
  report->Add({"server_cpu_us_per_event_at_half_load",
               1e6 * (h.cpu_after - h.cpu_between) / (Field(h.events, "answersPerS") * (secs + 1)),
               "us", false, "server CPU per GET /healthz" + at,
               1e6 * (h.cpu_between - h.cpu_before) / (Field(h.health, "answersPerS") * (secs + 1)),
               "user+system CPU of the server process / answers (approx.)"});
  report->Add({"disk_fdatasync_p50_ms", h.fsync_p50, "ms", false, "", std::nullopt,
               "4 KiB append + fdatasync under the data dir, same run, server idle"});
  report->Add({"disk_fdatasync_p99_ms", h.fsync_p99, "ms", false, "", std::nullopt,
               "4 KiB append + fdatasync under the data dir, same run, server idle"});
  ReportPingPong(report);
  report->Add({"store_commit_ms_mean_at_half_load", batches > 0 ? 1e3 * write_s / batches : 0, "ms",
               false, "disk fdatasync P50 (same run)", h.fsync_p50,
               "WriteBatch + WAL fdatasync per group commit" + at + "; " +
                   std::to_string(batches > 0 ? records / batches : 0.0).substr(0, 5) +
                   " records per commit"});
  report->Add({"events_p50_ms_at_half_load", Field(h.events, "p50Ms"), "ms", false,
               "GET /healthz P50" + at, Field(h.health, "p50Ms"), "open loop" + at});
  report->Add(
      {"events_p99_ms_at_half_load", Field(h.events, "p99Ms"), "ms", false, "GET /healthz P99" + at,
       Field(h.health, "p99Ms"),
       "open loop" + at + "; goal <= 5 ms; " +
           std::string(Field(h.events, "p99Ms") <= kGoalP99Ms ? "goal met" : "goal NOT met")});
  // Where the client's P99 goes: the load generator's own lateness in sending (its
  // process shares the 2 cores) and the time from send to answer.
  report->Add({"events_send_lag_p99_ms_at_half_load", Field(h.events, "sendLagP99Ms"), "ms", false,
               "", std::nullopt, "load generator: send time - due time" + at});
  report->Add({"events_sent_to_answer_p99_ms_at_half_load", Field(h.events, "sentToAnswerP99Ms"),
               "ms", false, "GET /healthz same measure" + at, Field(h.health, "sentToAnswerP99Ms"),
               "answer time - send time" + at});
}

// The server's own view of phase 3, from its histograms: the share of events whose handler
// (request parsed -> answer handed back once durable) took <= 5 ms, and of records durable
// <= 5 ms after they were queued. Near 100 % with the client's P99 over 5 ms: the client's
// tail builds up outside the handler (socket buffers, I/O-thread queues, both processes
// waiting for a CPU).
void ReportServerView(const HalfLoad& h, Report* report) {
  auto within_5ms = [&](const std::string& series, const std::string& labels) {
    auto bucket = [&](const std::string& m, const std::string& le) {
      return MetricValue(m, series + "{" + labels + "le=\"" + le + "\"}");
    };
    double all = bucket(h.metrics_after, "+Inf") - bucket(h.metrics_before, "+Inf");
    return all > 0
               ? 100 * (bucket(h.metrics_after, "0.005") - bucket(h.metrics_before, "0.005")) / all
               : std::nan("");
  };
  report->Add(
      {"events_handled_within_5ms_pct_at_half_load",
       within_5ms("switchyard_http_request_seconds_bucket", "route=\"/v1/workflows/{id}/events\","),
       "%", true, "", std::nullopt, "server side: events-route handler time <= 5 ms" + h.at});
  report->Add({"records_durable_within_5ms_pct_at_half_load",
               within_5ms("switchyard_store_record_seconds_bucket", ""), "%", true, "",
               std::nullopt, "server side: enqueue to durable <= 5 ms" + h.at});
}

// The same open loop held longer (SY_BENCH_API_LONG_SECONDS, default 60; 0 skips it):
// several memtable flushes and a compaction of the log fall in it at their steady-state
// rate, where a 5-s phase holds one or none by chance.
void ReportLongHalfLoad(const std::string& bin, const Server& server, double secs,
                        const HalfLoad& h, Report* report) {
  const char* long_env = std::getenv("SY_BENCH_API_LONG_SECONDS");
  double long_secs = long_env ? std::atof(long_env) : 60;
  if (!(long_secs > 0)) return;
  std::string e_long =
      RunLoadgen(bin, server, "events", server.token(), h.rate, long_secs, kSustainConnections);
  double p99 = Field(e_long, "p99Ms");
  report->Add({"events_p99_ms_at_half_load_long", p99, "ms", false,
               "events P99 over the " + std::to_string(static_cast<int>(secs)) + "-s phase" + h.at,
               Field(h.events, "p99Ms"),
               "open loop" + h.at + " for " + std::to_string(static_cast<int>(long_secs)) +
                   " s (flushes and compactions at their steady rate); goal <= 5 ms; " +
                   std::string(p99 <= kGoalP99Ms ? "goal met" : "goal NOT met")});
}

// Phase 4: twice the sustained rate from the uncapped tenant over many connections, then on
// a fresh server from a tenant capped at S/2; answers by status, RSS, whether both answer.
void ReportOverload(const std::string& bin, const Server& server, double secs, double s_rate,
                    Report* report) {
  double rss0 = RssMiB(server.pid());
  std::string over =
      RunLoadgen(bin, server, "events", server.token(), 2 * s_rate, secs, kOverloadConnections);
  double rss1 = RssMiB(server.pid());
  bool alive = server.Alive() && Healthy(server.port());
  // A tenant whose rate limit is half the sustained rate, offered twice the sustained
  // rate: a fresh server (the limit is configuration), so about three quarters of the
  // requests should get 429 even when the (shared) machine serves less than S this time.
  std::string capped;
  {
    Server limited;
    if (limited.Start(bin, s_rate / 2)) {
      capped = RunLoadgen(bin, limited, "events", limited.capped_token(), 2 * s_rate, secs);
      alive = alive && limited.Alive() && Healthy(limited.port());
    }
  }
  auto count = [](const std::string& j, const char* code) {
    double v = Field(j, code);
    return std::isnan(v) ? 0.0 : v;
  };
  report->Add({"overload_2x_acked_per_s", Field(over, "ackedEventsPerS"), "events/s", true,
               "sustained rate (closed loop)", s_rate, "open loop at 2x the sustained rate"});
  report->Add({"overload_2x_p99_ms", Field(over, "p99Ms"), "ms", false, "", std::nullopt,
               "from due time: includes the client-side backlog"});
  report->Add({"overload_2x_429", count(over, "429"), "answers", false, "", std::nullopt,
               "uncapped tenant, " + std::to_string(kOverloadConnections) + " connections"});
  report->Add({"overload_2x_503", count(over, "503"), "answers", false, "", std::nullopt,
               "uncapped tenant, " + std::to_string(kOverloadConnections) +
                   " connections, server bound " + std::to_string(kMaxInflight) +
                   " requests not yet answered"});
  report->Add({"overload_2x_capped_tenant_503", count(capped, "503"), "answers", false, "",
               std::nullopt, "tenant rate limit = sustained rate / 2"});
  report->Add({"overload_2x_capped_tenant_429", count(capped, "429"), "answers", false, "",
               std::nullopt, "tenant rate limit = sustained rate / 2"});
  report->Add({"overload_2x_capped_tenant_2xx_per_s",
               (Field(capped, "ackedEventsPerS") + Field(capped, "ackedOther") / secs),
               "requests/s", true, "", std::nullopt, "tenant rate limit = sustained rate / 2"});
  report->Add({"server_rss_mib_before_overload", rss0, "MiB", false, "", std::nullopt, ""});
  report->Add({"server_rss_mib_after_overload", rss1, "MiB", false, "RSS before overload", rss0,
               "uncapped tenant, 2x for " + std::to_string(static_cast<int>(secs + 1)) + " s"});
  report->Add({"server_alive_after_overload", alive ? 1.0 : 0.0, "bool", true, "", std::nullopt,
               alive ? "answers /healthz" : "DOWN"});
}

void ReportApi(const std::map<std::string, Measured>&, Report* report) {
  // SY_BENCH_API_ONLY=NAME runs only that reporter of the suite (openai_proxy_bench.cc).
  if (const char* only = std::getenv("SY_BENCH_API_ONLY"); only && std::string(only) != "api")
    return;
  std::string bin = SwitchyardBinary();
  if (!std::filesystem::exists(bin)) {
    std::fprintf(stderr,
                 "bench api: no server binary at %s (build `switchyard` or set SWITCHYARD_BIN)\n",
                 bin.c_str());
    return;
  }
  double secs =
      std::getenv("SY_BENCH_API_SECONDS") ? std::atof(std::getenv("SY_BENCH_API_SECONDS")) : 5;
  Server server;
  if (!server.Start(bin, 1e7)) return;
  double s_rate = ReportSustained(bin, server, secs, report);
  if (!(s_rate > 0)) return;
  HalfLoad half = MeasureHalfLoad(bin, server, secs, s_rate);
  ReportHalfLoad(half, secs, report);
  ReportServerView(half, report);
  ReportLongHalfLoad(bin, server, secs, half, report);
  ReportOverload(bin, server, secs, s_rate, report);
  ReportMemory(bin, secs, report);
}

SY_BENCH_REPORT(api, ReportApi);

}  // namespace
}  // namespace switchyard::bench
