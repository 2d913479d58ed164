// Prometheus text parsing, each engine's load gauges, and the periodic scrape
// (upstream_load.h).
#include "upstream/upstream_load.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "base/mutex.h"
#include "base/thread_name.h"

namespace switchyard::upstream {
namespace {

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}

// The label set of `line` from its '{' at `i` to past its '}' (quotes and escapes kept).
Result<std::string> ReadLabels(std::string_view line, size_t* i) {
  const size_t start = ++*i;
  bool quoted = false;
  for (; *i < line.size(); ++*i) {
    const char c = line[*i];
    if (quoted && c == '\\') {
      ++*i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && c == '}') {
      std::string labels(line.substr(start, *i - start));
      ++*i;
      return labels;
    }
  }
  return Status::InvalidArgument("the label set has no closing '}'");
}

Result<double> ReadValue(std::string_view token) {
  if (token == "+Inf" || token == "Inf") return HUGE_VAL;
  if (token == "-Inf") return -HUGE_VAL;
  if (token == "NaN") return std::nan("");
  std::string s(token);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size())
    return Status::InvalidArgument("'" + s + "' is not a sample value");
  return v;
}

Status ParseLine(std::string_view line, PromSamples* out) {
  size_t i = 0;
  while (i < line.size() && IsNameChar(line[i])) ++i;
  if (i == 0) return Status::InvalidArgument("no metric name");
  std::string name(line.substr(0, i));
  std::string labels;
  if (i < line.size() && line[i] == '{') {
    SY_ASSIGN_OR_RETURN(labels, ReadLabels(line, &i));
  }
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  size_t end = i;
  while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
  if (end == i) return Status::InvalidArgument("'" + name + "' has no value");
  SY_ASSIGN_OR_RETURN(double v, ReadValue(line.substr(i, end - i)));  // a timestamp may follow
  (*out)[name].emplace_back(std::move(labels), v);
  return Status::OK();
}

// The gauges of one engine; `usage` lists the KV-share gauge's names, newest first.
struct EngineGauges {
  const char* engine;
  UpstreamKind kind;
  const char* running;
  const char* waiting;
  std::vector<const char*> usage;
};

const std::vector<EngineGauges>& Engines() {
  static const std::vector<EngineGauges> kEngines = {
      {"vllm",
       UpstreamKind::kVllm,
       "vllm:num_requests_running",
       "vllm:num_requests_waiting",
       {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}},
      {"sglang",
       UpstreamKind::kSglang,
       "sglang:num_running_reqs",
       "sglang:num_queue_reqs",
       {"sglang:token_usage"}},
      {"llamacpp",
       UpstreamKind::kLlamaCpp,
       "llamacpp:requests_processing",
       "llamacpp:requests_deferred",
       {"llamacpp:kv_cache_usage_ratio"}},
      {"switchyard",
       UpstreamKind::kGeneric,
       "switchyard_scheduler_running_nodes",
       "switchyard_scheduler_queued_nodes",
       {}},
  };
  return kEngines;
}

// Σ of `name`'s samples whose label set contains `label` ("" any); -1 when none.
double Sum(const PromSamples& s, const std::string& name, std::string_view label = "") {
  auto it = s.find(name);
  if (it == s.end()) return -1;
  double sum = 0;
  bool any = false;
  for (const auto& [labels, v] : it->second) {
    if (!label.empty() && labels.find(label) == std::string::npos) continue;
    if (std::isfinite(v)) sum += v, any = true;
  }
  return any ? sum : -1;
}

double Mean(const PromSamples& s, const std::string& name) {
  auto it = s.find(name);
  if (it == s.end() || it->second.empty()) return -1;
  const double sum = Sum(s, name);
  return sum < 0 ? -1 : sum / static_cast<double>(it->second.size());
}

std::optional<UpstreamLoad> ReadEngine(const EngineGauges& g, const PromSamples& s) {
  UpstreamLoad out;
  out.engine = g.engine;
  out.running = Sum(s, g.running);
  out.waiting = Sum(s, g.waiting);
  if (out.running < 0 && out.waiting < 0) return std::nullopt;
  for (const char* name : g.usage)
    if ((out.kv_usage = Mean(s, name)) >= 0) break;
  if (out.kv_usage > 1) out.kv_usage = 1;
  return out;
}

}  // namespace

Result<PromSamples> ParsePrometheusText(std::string_view text) {
  PromSamples out;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    Status st = ParseLine(line, &out);
    if (!st.ok())
      return Status::InvalidArgument("metrics line " + std::to_string(line_no) + ": " +
                                     st.message());
  }
  return out;
}

std::optional<UpstreamLoad> LoadOf(UpstreamKind kind, const PromSamples& samples) {
  for (const EngineGauges& g : Engines())
    if (g.kind == kind && kind != UpstreamKind::kGeneric)
      if (auto l = ReadEngine(g, samples)) return l;
  for (const EngineGauges& g : Engines())
    if (auto l = ReadEngine(g, samples)) return l;
  return std::nullopt;
}

struct LoadMonitor::State {
  UpstreamClient* client;
  Options options;
  OnLoad on_load;
  mutable Mutex mu;
  CondVar cv;
  bool stopped GUARDED_BY(mu) = false;
  std::vector<bool> out GUARDED_BY(mu);  // a scrape of upstream i is in flight
  std::vector<Scrapes> status GUARDED_BY(mu);
  std::thread thread;

  void Scrape(const std::shared_ptr<State>& self, size_t i);
  void Read(size_t i, const http::HttpResponse& r);
  void Run(const std::shared_ptr<State>& self);
};

void LoadMonitor::State::Read(size_t i, const http::HttpResponse& r) {
  std::optional<UpstreamLoad> load;
  std::string error;
  if (r.status != 200) {
    error = "GET /metrics answered " + std::to_string(r.status);
  } else if (Result<PromSamples> s = ParsePrometheusText(r.body); !s.ok()) {
    error = s.status().message();
  } else {
    const UpstreamKind kind = i < options.kinds.size() ? options.kinds[i] : UpstreamKind::kGeneric;
    load = LoadOf(kind, *s);
    if (!load) error = "no engine's load gauges in /metrics";
  }
  {
    MutexLock lock(&mu);
    if (stopped) return;
  }
  // Handed on before the status shows it: whoever reads the status next sees a load that
  // was already reported.
  if (load && on_load) on_load(i, *load);
  MutexLock lock(&mu);
  out[i] = false;
  Scrapes& st = status[i];
  st.error = error;
  if (load) {
    ++st.scrapes;
    st.last = load;
  } else {
    ++st.failures;
  }
}

void LoadMonitor::State::Scrape(const std::shared_ptr<State>& self, size_t i) {
  http::HttpRequest req;
  req.method = "GET";
  req.target = "/metrics";
  req.headers["accept"] = "text/plain";
  std::weak_ptr<State> weak = self;
  client->Forward(req, i, options.auth, [weak, i](http::HttpResponse r) {
    if (std::shared_ptr<State> s = weak.lock()) s->Read(i, r);
  });
}

void LoadMonitor::State::Run(const std::shared_ptr<State>& self) {
  SetThreadName("sy-upstream-load");
  const auto period = std::chrono::milliseconds(std::max(1, options.interval_ms));
  MutexLock lock(&mu);
  while (!stopped) {
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i]) continue;
      out[i] = true;
      lock.Unlock();
      Scrape(self, i);
      lock.Lock();
    }
    const auto next = std::chrono::steady_clock::now() + period;
    while (!stopped && std::chrono::steady_clock::now() < next) cv.WaitUntil(&mu, next);
  }
}

LoadMonitor::LoadMonitor(UpstreamClient* client, Options options, OnLoad on_load)
    : state_(std::make_shared<State>()) {
  state_->client = client;
  state_->options = std::move(options);
  state_->on_load = std::move(on_load);
  {
    MutexLock lock(&state_->mu);
    state_->out.assign(client->size(), false);
    state_->status.assign(client->size(), Scrapes());
  }
  state_->thread = std::thread([s = state_.get(), self = state_]() { s->Run(self); });
}

LoadMonitor::~LoadMonitor() {
  {
    MutexLock lock(&state_->mu);
    state_->stopped = true;
    state_->cv.SignalAll();
  }
  state_->thread.join();
}

std::vector<LoadMonitor::Scrapes> LoadMonitor::status() const {
  MutexLock lock(&state_->mu);
  return state_->status;
}

}  // namespace switchyard::upstream
