// `switchyard loadgen`: an HTTP/1.1 load generator for a running `switchyard serve`
// (used by bench/api, usable by hand). It runs in its own process, opens --connections
// keep-alive connections and drives them from one epoll loop per --threads:
//   - closed loop (no --rate): every connection sends its next request as soon as the
//     previous answer arrives; measures the sustained rate; latency = answer - send;
//   - open loop (--rate R): requests are due on a constant schedule (R/s in total),
//     whatever the answers do; a due request waits for a free connection in a client-side
//     backlog, and its latency is measured from the time it was DUE (no coordinated
//     omission).
// Workloads: `events` (each connection walks its own workflows: create, then per node
// append / TOOL_STARTED / TOOL_FINISHED, close after --nodes nodes, repeat: every request
// is a durable mutation), `healthz` (GET /healthz: the no-work baseline).
// A 429/503 answer is counted and the same request is sent again on a later turn.
// Prints one JSON object with counts by status, rates and latency percentiles.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/command.h"

namespace {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
constexpr auto kTick = std::chrono::microseconds(200);

struct Options {
  std::string host = "127.0.0.1";
  int port = 8470;
  std::string token;
  std::string workload = "events";
  int connections = 64;
  int threads = 1;
  double duration_s = 5;
  double warmup_s = 1;
  double rate = 0;  // 0: closed loop
  int nodes = 100;  // per workflow (events)
};

// What one worker measured (after warmup).
struct Tally {
  std::map<int, uint64_t> status;  // HTTP status -> answers
  uint64_t acked_events = 0;       // 2xx on /events and /nodes
  uint64_t acked_other = 0;        // other 2xx (create, close, healthz)
  uint64_t conn_errors = 0;        // connect/read/write failures, unparsable answers
  uint64_t unsent = 0;             // open loop: due but never sent (backlog at the end)
  size_t backlog_max = 0;
  std::vector<uint32_t> latency_us;
  // Open loop: how late each measured request went out after its due time (the load
  // generator's own delay, part of latency_us), and the rest (written to answered).
  std::vector<uint32_t> send_lag_us, service_us;
};

enum class Step { kCreate, kAppend, kStarted, kFinished, kClose, kHealthz };

struct Conn {
  int fd = -1;
  bool busy = false;
  std::string out;
  size_t out_off = 0;
  std::string in;
  TimePoint t0;  // send time (closed loop) or due time (open loop)
  TimePoint sent;
  Step step = Step::kCreate;
  std::string wf;
  int node = 0;
};

int Connect(const Options& o) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);  // blocking connect, then non-blocking I/O
  if (fd < 0) return -1;
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(o.port));
  if (::inet_pton(AF_INET, o.host.c_str(), &a.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

std::string Request(const Options& o, const std::string& method, const std::string& target,
                    const std::string& body) {
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: " + o.host + "\r\n";
  if (!o.token.empty()) r += "Authorization: Bearer " + o.token + "\r\n";
  if (method != "GET") {
    r +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return r + "\r\n" + body;
}

std::string NodeJson(int k) {
  std::string j = std::string("{\"id\":\"n").append(std::to_string(k));
  j += "\",\"kind\":\"TOOL\",\"toolName\":\"bench\"";
  if (k > 0) j.append(",\"deps\":[\"n").append(std::to_string(k - 1)).append("\"]");
  return j + "}";
}

// The request for the connection's current step.
std::string NextRequest(const Options& o, const Conn& c) {
  const std::string base = "/v1/workflows/" + c.wf;
  const std::string node = std::string("n").append(std::to_string(c.node));
  switch (c.step) {
    case Step::kHealthz:
      return Request(o, "GET", "/healthz", "");
    case Step::kCreate:
      return Request(o, "POST", "/v1/workflows", "{\"nodes\":[" + NodeJson(0) + "]}");
    case Step::kAppend:
      return Request(o, "POST", base + "/nodes", "{\"nodes\":[" + NodeJson(c.node) + "]}");
    case Step::kStarted:
      return Request(o, "POST", base + "/events",
                     "{\"nodeId\":\"" + node + "\",\"type\":\"TOOL_STARTED\"}");
    case Step::kFinished:
      return Request(o, "POST", base + "/events",
                     "{\"nodeId\":\"" + node + "\",\"type\":\"TOOL_FINISHED\"}");
    case Step::kClose:
      return Request(o, "POST", base + ":close", "");
  }
  return "";
}

// Advances the workflow walk after a 2xx answer.
void Advance(const Options& o, Conn* c, const std::string& body) {
  switch (c->step) {
    case Step::kHealthz:
      return;
    case Step::kCreate: {
      static constexpr char kKey[] = "\"workflowId\":\"";
      size_t at = body.find(kKey);
      size_t end = at == std::string::npos ? at : body.find('"', at + sizeof(kKey) - 1);
      if (end == std::string::npos) return;  // stays in kCreate
      c->wf = body.substr(at + sizeof(kKey) - 1, end - at - sizeof(kKey) + 1);
      c->node = 0;
      c->step = Step::kStarted;
      return;
    }
    case Step::kAppend:
      c->step = Step::kStarted;
      return;
    case Step::kStarted:
      c->step = Step::kFinished;
      return;
    case Step::kFinished:
      if (++c->node >= o.nodes) {
        c->step = Step::kClose;
      } else {
        c->step = Step::kAppend;
      }
      return;
    case Step::kClose:
      c->step = Step::kCreate;
      return;
  }
}

// Parses one complete response at the front of `in`: status and body; 0 when incomplete,
// -1 when malformed. Removes it from `in`.
int TakeResponse(std::string* in, std::string* body) {
  size_t head = in->find("\r\n\r\n");
  if (head == std::string::npos) return 0;
  if (in->size() < 12 || in->compare(0, 5, "HTTP/") != 0) return -1;
  int status = std::atoi(in->c_str() + 9);
  size_t length = 0;
  for (size_t p = in->find("\r\n") + 2; p < head;) {
    size_t eol = in->find("\r\n", p);
    if (eol - p > 15 && strncasecmp(in->c_str() + p, "content-length:", 15) == 0) {
      length = std::strtoull(in->c_str() + p + 15, nullptr, 10);
    }
    p = eol + 2;
  }
  if (in->size() < head + 4 + length) return 0;
  body->assign(*in, head + 4, length);
  in->erase(0, head + 4 + length);
  return status;
}

class Worker {
 public:
  Worker(const Options& o, int connections, double rate) : o_(o), rate_(rate) {
    ep_ = ::epoll_create1(0);
    conns_.resize(static_cast<size_t>(connections));
  }
  ~Worker() {
    for (auto& c : conns_)
      if (c.fd >= 0) ::close(c.fd);
    ::close(ep_);
  }

  void Run(TimePoint start, TimePoint measure_from, TimePoint end) {
    measure_from_ = measure_from;
    for (size_t i = 0; i < conns_.size(); ++i) Open(i);
    const auto interval =
        rate_ > 0 ? std::chrono::duration<double>(1.0 / rate_) : Clock::duration(0);
    double due_n = 0;
    TimePoint next_due = start;
    epoll_event evs[256];
    for (;;) {
      TimePoint now = Clock::now();
      if (now >= end) break;
      if (rate_ > 0) {
        while (next_due <= now && next_due < end) {
          backlog_.push_back(next_due);
          due_n += 1;
          next_due = start + std::chrono::duration_cast<Clock::duration>(interval * due_n);
        }
        tally_.backlog_max = std::max(tally_.backlog_max, backlog_.size());
        for (size_t i = 0; i < conns_.size() && !backlog_.empty(); ++i) {
          if (!conns_[i].busy && conns_[i].fd >= 0) {
            Send(i, backlog_.front());
            backlog_.pop_front();
          }
        }
      }
      // Open loop: the timer wakes the generator when the next request is due, but no
      // sooner than kTick from now (answers arriving wake it sooner): not once per request,
      // since its CPU is taken from the server it measures on a small machine. A request
      // sent up to kTick late still counts its latency from its due time.
      auto wake = rate_ > 0 ? std::min(std::max(next_due, now + kTick), end) : end;
      auto wait = wake - Clock::now();
      timespec ts{};
      auto ns =
          std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count());
      ts.tv_sec = ns / 1000000000;
      ts.tv_nsec = ns % 1000000000;
      int n = ::epoll_pwait2(ep_, evs, 256, &ts, nullptr);
      for (int k = 0; k < n; ++k) OnEvent(evs[k].data.u64, evs[k].events);
    }
    // Drain: collect the answers to requests already sent (up to 2 s), send nothing new.
    draining_ = true;
    while (Clock::now() < end + std::chrono::seconds(2) &&
           std::any_of(conns_.begin(), conns_.end(), [](const Conn& c) { return c.busy; })) {
      int n = ::epoll_wait(ep_, evs, 256, 10);
      for (int k = 0; k < n; ++k) OnEvent(evs[k].data.u64, evs[k].events);
    }
    for (const auto& t : backlog_)
      if (t >= measure_from_) ++tally_.unsent;
  }

  Tally& tally() { return tally_; }

 private:
  void Open(size_t i) {
    Conn& c = conns_[i];
    if (c.fd >= 0) {
      ::epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd, nullptr);
      ::close(c.fd);
    }
    c.fd = Connect(o_);
    c.busy = false;
    c.in.clear();
    c.out.clear();
    if (o_.workload == "healthz") c.step = Step::kHealthz;
    if (c.fd < 0) {
      ++tally_.conn_errors;
      return;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = i;
    ::epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev);
    if (rate_ <= 0 && !draining_) Send(i, Clock::now());
  }

  void Send(size_t i, TimePoint t0) {
    Conn& c = conns_[i];
    c.busy = true;
    c.t0 = t0;
    c.sent = Clock::now();
    c.out = NextRequest(o_, c);
    c.out_off = 0;
    Flush(i);
  }

  void Flush(size_t i) {
    Conn& c = conns_[i];
    while (c.out_off < c.out.size()) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_off += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
        ev.data.u64 = i;
        ::epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &ev);
        return;
      } else {
        return Fail(i);
      }
    }
  }

  void Fail(size_t i) {
    if (Clock::now() >= measure_from_) ++tally_.conn_errors;
    Open(i);
  }

  void OnEvent(size_t i, uint32_t events) {
    Conn& c = conns_[i];
    if (events & EPOLLOUT) {
      Flush(i);
      if (c.out_off == c.out.size()) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.u64 = i;
        ::epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &ev);
      }
    }
    if (!(events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) return;
    char buf[16384];
    for (;;) {
      ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        // A short read drained the socket: skip the recv that would only say EAGAIN
        // (level-triggered epoll reports whatever arrives later).
        if (static_cast<size_t>(n) < sizeof(buf)) break;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      return Fail(i);  // closed or error
    }
    std::string body;
    int status = TakeResponse(&c.in, &body);
    if (status == 0) return;
    if (status < 0 || !c.busy) return Fail(i);
    OnAnswer(i, status, body);
  }

  void OnAnswer(size_t i, int status, const std::string& body) {
    Conn& c = conns_[i];
    TimePoint now = Clock::now();
    bool measured = c.t0 >= measure_from_;
    if (measured) {
      ++tally_.status[status];
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - c.t0).count();
      tally_.latency_us.push_back(static_cast<uint32_t>(std::min<int64_t>(us, UINT32_MAX)));
      auto lag = std::chrono::duration_cast<std::chrono::microseconds>(c.sent - c.t0).count();
      tally_.send_lag_us.push_back(static_cast<uint32_t>(std::clamp<int64_t>(lag, 0, us)));
      tally_.service_us.push_back(static_cast<uint32_t>(us - tally_.send_lag_us.back()));
    }
    if (status >= 200 && status < 300) {
      bool event = c.step == Step::kAppend || c.step == Step::kStarted || c.step == Step::kFinished;
      if (measured) ++(event ? tally_.acked_events : tally_.acked_other);
      Advance(o_, &c, body);
    } else if (status != 429 && status != 503 && c.step != Step::kHealthz) {
      c.step = Step::kCreate;  // unexpected refusal: start a fresh workflow
    }
    c.busy = false;
    if (draining_) return;
    if (rate_ <= 0) {
      Send(i, now);
    } else if (!backlog_.empty()) {
      Send(i, backlog_.front());
      backlog_.pop_front();
    }
  }

  const Options& o_;
  double rate_;
  int ep_;
  std::vector<Conn> conns_;
  std::deque<TimePoint> backlog_;
  TimePoint measure_from_;
  bool draining_ = false;
  Tally tally_;
};

double Percentile(const std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)] / 1000.0;
}

void PrintJson(const Options& o, const Tally& t) {
  std::vector<uint32_t> lat = t.latency_us, lag = t.send_lag_us, svc = t.service_us;
  std::sort(lat.begin(), lat.end());
  std::sort(lag.begin(), lag.end());
  std::sort(svc.begin(), svc.end());
  uint64_t answers = 0;
  std::string by_status;
  for (const auto& [s, n] : t.status) {
    answers += n;
    by_status += (by_status.empty() ? "\"" : ",\"") + std::to_string(s) + "\":" + std::to_string(n);
  }
  std::printf(
      "{\"workload\":\"%s\",\"mode\":\"%s\",\"connections\":%d,\"threads\":%d,\"durationS\":%.3f,"
      "\"offeredPerS\":%.1f,\"answers\":%llu,\"answersPerS\":%.1f,\"ackedEvents\":%llu,"
      "\"ackedEventsPerS\":%.1f,\"ackedOther\":%llu,\"status\":{%s},\"connErrors\":%llu,"
      "\"unsent\":%llu,\"backlogMax\":%zu,\"p50Ms\":%.3f,\"p90Ms\":%.3f,\"p99Ms\":%.3f,"
      "\"p999Ms\":%.3f,\"maxMs\":%.3f,\"sendLagP99Ms\":%.3f,\"sentToAnswerP50Ms\":%.3f,"
      "\"sentToAnswerP99Ms\":%.3f}\n",
      o.workload.c_str(), o.rate > 0 ? "open" : "closed", o.connections, o.threads, o.duration_s,
      o.rate, static_cast<unsigned long long>(answers), answers / o.duration_s,
      static_cast<unsigned long long>(t.acked_events), t.acked_events / o.duration_s,
      static_cast<unsigned long long>(t.acked_other), by_status.c_str(),
      static_cast<unsigned long long>(t.conn_errors), static_cast<unsigned long long>(t.unsent),
      t.backlog_max, Percentile(lat, 0.50), Percentile(lat, 0.90), Percentile(lat, 0.99),
      Percentile(lat, 0.999), lat.empty() ? 0.0 : lat.back() / 1000.0, Percentile(lag, 0.99),
      Percentile(svc, 0.50), Percentile(svc, 0.99));
}

constexpr char kLoadgenUsage[] =
    "usage: switchyard loadgen [--target HOST:PORT] [--token TOKEN] "
    "[--workload events|healthz]\n"
    "         [--connections N] [--threads N] [--duration S] [--warmup S] "
    "[--rate R] [--nodes K]\n"
    "  closed loop without --rate, open loop at R requests/s with it; prints one "
    "JSON object\n";

int LoadgenUsage(const std::string& why) {
  std::fprintf(stderr, "loadgen: %s\n%s", why.c_str(), kLoadgenUsage);
  return 2;
}

// `v` as a whole number in [lo, hi], or false.
bool WholeIn(const std::string& v, long lo, long hi, int* out) {
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || n < lo || n > hi) return false;
  *out = static_cast<int>(n);
  return true;
}

// `v` as a finite number >= lo, or false.
bool NumberAtLeast(const std::string& v, double lo, double* out) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x) || x < lo) return false;
  *out = x;
  return true;
}

// Parses the options into `o`; an error names the option and the value.
std::string ParseArgs(const std::vector<std::string>& args, Options* o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& k = args[i];
    if (i + 1 >= args.size()) return "missing value after " + k;
    const std::string& v = args[++i];
    const std::string bad = k + ": bad value '" + v + "'";
    if (k == "--target") {
      size_t colon = v.rfind(':');
      if (colon == std::string::npos || colon == 0 ||
          !WholeIn(v.substr(colon + 1), 1, 65535, &o->port))
        return k + ": want HOST:PORT (port 1-65535), not '" + v + "'";
      o->host = v.substr(0, colon);
    } else if (k == "--token") {
      o->token = v;
    } else if (k == "--workload") {
      if (v != "events" && v != "healthz") return k + ": want events or healthz, not '" + v + "'";
      o->workload = v;
    } else if (k == "--connections" || k == "--threads" || k == "--nodes") {
      int* dst = k == "--connections" ? &o->connections
                 : k == "--threads"   ? &o->threads
                                      : &o->nodes;
      if (!WholeIn(v, 1, 1000000, dst)) return bad + " (want a whole number >= 1)";
    } else if (k == "--duration") {
      if (!NumberAtLeast(v, 0, &o->duration_s) || o->duration_s <= 0)
        return bad + " (want seconds > 0)";
    } else if (k == "--warmup" || k == "--rate") {
      if (!NumberAtLeast(v, 0, k == "--warmup" ? &o->warmup_s : &o->rate))
        return bad + " (want a number >= 0)";
    } else {
      return "unknown option " + k;
    }
  }
  if (o->threads > o->connections)
    return "--threads (" + std::to_string(o->threads) + ") must not exceed --connections (" +
           std::to_string(o->connections) + ")";
  return "";
}

int RunLoadgen(const std::vector<std::string>& args) {
  Options o;
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help"))
    return std::printf("%s", kLoadgenUsage), 0;
  if (std::string why = ParseArgs(args, &o); !why.empty()) return LoadgenUsage(why);
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < o.threads; ++t) {
    int conns = o.connections / o.threads + (t < o.connections % o.threads ? 1 : 0);
    workers.push_back(std::make_unique<Worker>(o, conns, o.rate * conns / o.connections));
  }
  TimePoint start = Clock::now();
  auto from = start + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(o.warmup_s));
  auto end = from + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(o.duration_s));
  std::vector<std::thread> threads;
  for (auto& w : workers)
    threads.emplace_back([&w, start, from, end] { w->Run(start, from, end); });
  for (auto& t : threads) t.join();
  Tally all;
  for (auto& w : workers) {
    Tally& t = w->tally();
    for (const auto& [s, n] : t.status) all.status[s] += n;
    all.acked_events += t.acked_events;
    all.acked_other += t.acked_other;
    all.conn_errors += t.conn_errors;
    all.unsent += t.unsent;
    all.backlog_max += t.backlog_max;
    all.latency_us.insert(all.latency_us.end(), t.latency_us.begin(), t.latency_us.end());
    all.send_lag_us.insert(all.send_lag_us.end(), t.send_lag_us.begin(), t.send_lag_us.end());
    all.service_us.insert(all.service_us.end(), t.service_us.begin(), t.service_us.end());
  }
  PrintJson(o, all);
  return all.status.empty() ? 1 : 0;
}

}  // namespace

SY_REGISTER_COMMAND(loadgen, "loadgen",
                    "HTTP load generator for a running server (closed or open loop)", RunLoadgen);
