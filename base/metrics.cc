#include "base/metrics.h"

#include <cmath>
#include <cstdio>

#include "base/mutex.h"

namespace switchyard {
namespace {

bool ValidName(const std::string& n) {
  if (n.empty() || (n[0] >= '0' && n[0] <= '9')) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == ':'))
      return false;
  return true;
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string Sample(const std::string& name, const std::string& labels, double v) {
  return name + (labels.empty() ? "" : "{" + labels + "}") + " " + Metrics::Number(v) + "\n";
}

std::string Join(const std::string& labels, const std::string& extra) {
  return labels.empty() ? extra : labels + "," + extra;
}

// HELP text escapes only \ and newline (the text format's rule).
std::string EscapeHelp(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

void RenderHistogram(const std::string& name, const std::vector<double>& bounds,
                     const std::string& labels, const HistogramValue& h, std::string* out) {
  if (h.counts.size() != bounds.size() + 1) return;  // malformed: never written half
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds.size(); ++i) {
    cum += h.counts[i];
    *out += Sample(name + "_bucket", Join(labels, "le=\"" + Metrics::Number(bounds[i]) + "\""),
                   double(cum));
  }
  *out += Sample(name + "_bucket", Join(labels, "le=\"+Inf\""), double(cum + h.counts.back()));
  *out += Sample(name + "_sum", labels, h.sum);
  *out += Sample(name + "_count", labels, double(h.count));
}

}  // namespace

void HistogramValue::Observe(const std::vector<double>& bounds, double v) {
  if (counts.empty()) counts.assign(bounds.size() + 1, 0);
  size_t i = 0;
  while (i < bounds.size() && v > bounds[i]) ++i;
  ++counts[i];
  sum += v;
  ++count;
}

void HistogramSeries::Observe(const std::string& labels, double v) {
  MutexLock lock(&mu_);
  series_[labels].Observe(bounds_, v);
}

std::vector<std::pair<std::string, HistogramValue>> HistogramSeries::Snapshot() const {
  MutexLock lock(&mu_);
  return {series_.begin(), series_.end()};
}

std::string Metrics::Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}

std::string Metrics::Label(std::string_view key, std::string_view value) {
  std::string out(key);
  out += "=\"";
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out + "\"";
}

std::string Metrics::Labels(
    std::initializer_list<std::pair<std::string_view, std::string_view>> kv) {
  std::string out;
  for (const auto& [k, v] : kv) out += (out.empty() ? "" : ",") + Label(k, v);
  return out;
}

Status Metrics::Add(const std::string& name, Family f) {
  const std::string where = "metric family '" + name + "': ";
  if (!ValidName(name))
    return Status::InvalidArgument(where + "not a Prometheus name ([a-zA-Z_:][a-zA-Z0-9_:]*)");
  if (f.type == "counter" && !EndsWith(name, "_total"))
    return Status::InvalidArgument(where + "a counter's name must end in _total");
  if (f.type != "counter" && EndsWith(name, "_total"))
    return Status::InvalidArgument(where + "only counters end in _total (this is a " + f.type +
                                   ")");
  for (size_t i = 0; i < f.bounds.size(); ++i)
    if (!std::isfinite(f.bounds[i]) || (i > 0 && f.bounds[i] <= f.bounds[i - 1]))
      return Status::InvalidArgument(where + "bucket bound " + std::to_string(i) +
                                     " is not finite and above the one before");
  if (f.type == "histogram" && f.bounds.empty())
    return Status::InvalidArgument(where + "a histogram needs at least one bound");
  MutexLock lock(&mu_);
  if (!families_.emplace(name, std::move(f)).second)
    return Status::InvalidArgument(where + "registered twice");
  return Status::OK();
}

Status Metrics::Counter(const std::string& name, const std::string& help) {
  return Add(name, Family{"counter", help, {}, {}, {}, nullptr, nullptr});
}

Status Metrics::Histogram(const std::string& name, const std::string& help,
                          std::vector<double> bounds) {
  return Add(name, Family{"histogram", help, std::move(bounds), {}, {}, nullptr, nullptr});
}

Status Metrics::Gauge(const std::string& name, const std::string& help, GaugeFn fn) {
  return Add(name, Family{"gauge", help, {}, {}, {}, std::move(fn), nullptr});
}

Status Metrics::CounterCallback(const std::string& name, const std::string& help, CounterFn fn) {
  return Add(name, Family{"counter", help, {}, {}, {}, std::move(fn), nullptr});
}

Status Metrics::HistogramCallback(const std::string& name, const std::string& help,
                                  std::vector<double> bounds, HistogramFn fn) {
  return Add(name, Family{"histogram", help, std::move(bounds), {}, {}, nullptr, std::move(fn)});
}

void Metrics::BeforeRender(std::function<void()> fn) {
  MutexLock lock(&mu_);
  before_render_.push_back(std::move(fn));
}

void Metrics::Inc(const std::string& name, const std::string& labels, double v) {
  MutexLock lock(&mu_);
  auto it = families_.find(name);
  if (it != families_.end()) it->second.values[labels] += v;
}

void Metrics::Observe(const std::string& name, const std::string& labels, double v) {
  MutexLock lock(&mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return;
  it->second.hists[labels].Observe(it->second.bounds, v);
}

std::string Metrics::Render() const {
  std::map<std::string, Family> copy;
  std::vector<std::function<void()>> before;
  {
    MutexLock lock(&mu_);
    copy = families_;
    before = before_render_;
  }
  for (const auto& fn : before) fn();
  std::string out;
  for (const auto& [name, f] : copy) {
    out += "# HELP " + name + " " + EscapeHelp(f.help) + "\n# TYPE " + name + " " + f.type + "\n";
    if (f.samples) {
      for (const auto& [labels, v] : f.samples()) out += Sample(name, labels, v);
    }
    for (const auto& [labels, v] : f.values) out += Sample(name, labels, v);
    if (f.hist_fn) {
      for (const auto& [labels, h] : f.hist_fn()) RenderHistogram(name, f.bounds, labels, h, &out);
    }
    for (const auto& [labels, h] : f.hists) RenderHistogram(name, f.bounds, labels, h, &out);
  }
  return out;
}

}  // namespace switchyard
