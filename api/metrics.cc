#include "api/metrics.h"

#include <cstdio>

namespace switchyard::api {
namespace {

std::string Num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}

std::string Sample(const std::string& name, const std::string& labels, double v) {
  return name + (labels.empty() ? "" : "{" + labels + "}") + " " + Num(v) + "\n";
}

std::string Join(const std::string& labels, const std::string& extra) {
  return labels.empty() ? extra : labels + "," + extra;
}

}  // namespace

void Metrics::Counter(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  families_[name] = Family{"counter", help, {}, {}, {}, nullptr};
}

void Metrics::Histogram(const std::string& name, const std::string& help,
                        std::vector<double> bounds) {
  std::lock_guard<std::mutex> lock(mu_);
  families_[name] = Family{"histogram", help, std::move(bounds), {}, {}, nullptr};
}

void Metrics::Gauge(const std::string& name, const std::string& help, GaugeFn fn) {
  std::lock_guard<std::mutex> lock(mu_);
  families_[name] = Family{"gauge", help, {}, {}, {}, std::move(fn)};
}

void Metrics::Inc(const std::string& name, const std::string& labels, double v) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) it->second.values[labels] += v;
}

void Metrics::Observe(const std::string& name, const std::string& labels, double v) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return;
  Family& f = it->second;
  Hist& h = f.hists[labels];
  if (h.counts.empty()) h.counts.assign(f.bounds.size() + 1, 0);
  size_t i = 0;
  while (i < f.bounds.size() && v > f.bounds[i]) ++i;
  ++h.counts[i];
  h.sum += v;
  ++h.count;
}

std::string Metrics::Render() const {
  std::map<std::string, Family> copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    copy = families_;
  }
  std::string out;
  for (const auto& [name, f] : copy) {
    out += "# HELP " + name + " " + f.help + "\n# TYPE " + name + " " + f.type + "\n";
    if (f.gauge) {
      for (const auto& [labels, v] : f.gauge()) out += Sample(name, labels, v);
    }
    for (const auto& [labels, v] : f.values) out += Sample(name, labels, v);
    for (const auto& [labels, h] : f.hists) {
      uint64_t cum = 0;
      for (size_t i = 0; i < f.bounds.size(); ++i) {
        cum += h.counts[i];
        out += Sample(name + "_bucket", Join(labels, "le=\"" + Num(f.bounds[i]) + "\""), cum);
      }
      out += Sample(name + "_bucket", Join(labels, "le=\"+Inf\""), h.count);
      out += Sample(name + "_sum", labels, h.sum);
      out += Sample(name + "_count", labels, h.count);
    }
  }
  return out;
}

}  // namespace switchyard::api
