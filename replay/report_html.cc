// report.html and sweep.html: self-contained pages with inline SVG line charts.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "replay/report.h"
#include "replay/slo.h"

namespace switchyard::replay {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr int kW = 640, kH = 320, kLeft = 64, kRight = 170, kTop = 30, kBottom = 44;

std::string Esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string F(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string Tick(double v) {
  char buf[32];
  if (std::fabs(v) >= 1e9 || (std::fabs(v) < 1e-2 && v != 0))
    std::snprintf(buf, sizeof(buf), "%.1e", v);
  else
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

// Empirical CDF points of a sorted sample, at most ~200 of them.
ChartLine Cdf(const std::string& name, const std::vector<double>& sorted) {
  ChartLine l{name, {}, {}};
  size_t n = sorted.size();
  if (n == 0) return l;
  size_t step = std::max<size_t>(1, n / 200);
  for (size_t i = 0; i < n; i += step) {
    l.x.push_back(sorted[i]);
    l.y.push_back(static_cast<double>(i + 1) / static_cast<double>(n));
  }
  l.x.push_back(sorted.back());
  l.y.push_back(1.0);
  return l;
}

ChartLine FromSeries(const std::string& name, const Series& s, double scale = 1) {
  ChartLine l{name, {}, {}};
  for (size_t i = 0; i < s.values.size(); ++i) {
    l.x.push_back((static_cast<double>(i) + 0.5) * s.bucket_s);
    l.y.push_back(s.values[i] * scale);
  }
  return l;
}

const char* kStyle =
    "<style>body{font-family:sans-serif;margin:24px;max-width:1400px}"
    "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
    "padding:3px 7px;text-align:right}th{background:#f3f3f3}td:first-child{text-align:left}"
    "svg{margin:6px;background:#fff;border:1px solid #ddd}.note{color:#555;font-size:13px}"
    "</style>";

}  // namespace

std::string SvgLineChart(const std::string& title, const std::string& x_label,
                         const std::string& y_label, const std::vector<ChartLine>& lines,
                         bool log_x) {
  double x0 = 1e300, x1 = -1e300, y0 = 0, y1 = -1e300;
  auto tx = [&](double x) { return log_x ? std::log10(std::max(x, 1e-3)) : x; };
  for (const ChartLine& l : lines)
    for (size_t i = 0; i < l.x.size(); ++i) {
      x0 = std::min(x0, tx(l.x[i]));
      x1 = std::max(x1, tx(l.x[i]));
      y1 = std::max(y1, l.y[i]);
    }
  if (x0 > x1) x0 = 0, x1 = 1;
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + 1;
  double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (tx(x) - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return kTop + ph - (y - y0) / (y1 - y0) * ph; };
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(kW) +
                  "\" height=\"" + std::to_string(kH) + "\" font-size=\"11\">";
  s += "<text x=\"" + std::to_string(kLeft) + "\" y=\"18\" font-size=\"13\" font-weight=\"bold\">" +
       Esc(title) + "</text>";
  s += "<rect x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(kTop) + "\" width=\"" +
       F(pw) + "\" height=\"" + F(ph) + "\" fill=\"none\" stroke=\"#999\"/>";
  for (int k = 0; k <= 4; ++k) {
    double fx = x0 + (x1 - x0) * k / 4, fy = y0 + (y1 - y0) * k / 4;
    double vx = log_x ? std::pow(10.0, fx) : fx;
    double gx = kLeft + pw * k / 4, gy = kTop + ph - ph * k / 4;
    s += "<line x1=\"" + F(gx) + "\" y1=\"" + F(kTop) + "\" x2=\"" + F(gx) + "\" y2=\"" +
         F(kTop + ph) + "\" stroke=\"#eee\"/>";
    s += "<text x=\"" + F(gx) + "\" y=\"" + F(kTop + ph + 14) + "\" text-anchor=\"middle\">" +
         Tick(vx) + "</text>";
    s += "<text x=\"" + F(kLeft - 4) + "\" y=\"" + F(gy + 4) + "\" text-anchor=\"end\">" +
         Tick(fy) + "</text>";
  }
  s += "<text x=\"" + F(kLeft + pw / 2) + "\" y=\"" + F(kH - 8) + "\" text-anchor=\"middle\">" +
       Esc(x_label) + (log_x ? " (log)" : "") + "</text>";
  s += "<text x=\"12\" y=\"" + F(kTop + ph / 2) + "\" transform=\"rotate(-90 12 " +
       F(kTop + ph / 2) + ")\" text-anchor=\"middle\">" + Esc(y_label) + "</text>";
  for (size_t i = 0; i < lines.size(); ++i) {
    const ChartLine& l = lines[i];
    const char* color = kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
    std::string pts;
    for (size_t k = 0; k < l.x.size(); ++k) pts += F(px(l.x[k])) + "," + F(py(l.y[k])) + " ";
    s += "<polyline fill=\"none\" stroke=\"" + std::string(color) +
         "\" stroke-width=\"1.6\" points=\"" + pts + "\"/>";
    if (l.x.size() == 1 || l.x.size() < 12)
      for (size_t k = 0; k < l.x.size(); ++k)
        s += "<circle cx=\"" + F(px(l.x[k])) + "\" cy=\"" + F(py(l.y[k])) + "\" r=\"2.5\" fill=\"" +
             color + "\"/>";
    double ly = kTop + 12 + 15 * static_cast<double>(i);
    s += "<line x1=\"" + F(kW - kRight + 10) + "\" y1=\"" + F(ly - 4) + "\" x2=\"" +
         F(kW - kRight + 28) + "\" y2=\"" + F(ly - 4) + "\" stroke=\"" + color +
         "\" stroke-width=\"2\"/>";
    s += "<text x=\"" + F(kW - kRight + 32) + "\" y=\"" + F(ly) + "\">" + Esc(l.name) + "</text>";
  }
  return s + "</svg>";
}

std::string ReportHtml(const ReportMeta& meta, const std::vector<PolicyReport>& runs) {
  std::string s = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Switchyard replay: " +
                  Esc(meta.cluster) + "</title>" + kStyle + "</head><body>";
  s += "<h1>Switchyard replay</h1><p class=\"note\">trace: " + Esc(meta.trace) +
       "<br>cluster: " + Esc(meta.cluster) + " — " + Esc(meta.cluster_description) +
       "<br>seed: " + std::to_string(meta.seed) +
       "<br>Simulated: real scheduler core and runtime on virtual time; LLM calls timed by the "
       "roofline cost model, KV moves by net_budget's planner and budgets, tool waits from the "
       "trace.</p>";
  s += "<table><tr><th>policy</th><th>workflows</th><th>done</th><th>JCT mean s</th>"
       "<th>P50</th><th>P95</th><th>P99</th><th>TTFT P50 s</th><th>TTFT P99</th>"
       "<th>deadline miss</th><th>wf/min</th><th>HBM util</th><th>recompute tokens</th>"
       "<th>GB moved</th><th>preempt</th><th>retries</th></tr>";
  for (const PolicyReport& r : runs) {
    uint64_t bytes = 0;
    for (const auto& [c, b] : r.bytes_moved_by_class) bytes += b;
    s += "<tr><td>" + Esc(r.policy) + "</td><td>" + std::to_string(r.workflows) + "</td><td>" +
         std::to_string(r.completed) + "</td><td>" + Num(r.jct_mean_s) + "</td><td>" +
         Num(r.jct_p50_s) + "</td><td>" + Num(r.jct_p95_s) + "</td><td>" + Num(r.jct_p99_s) +
         "</td><td>" + Num(r.ttft_p50_s) + "</td><td>" + Num(r.ttft_p99_s) + "</td><td>" +
         Num(r.deadline_miss_rate) + "</td><td>" + Num(r.throughput_wf_per_min) + "</td><td>" +
         Num(r.hbm_util_mean) + "</td><td>" + std::to_string(r.recompute_tokens) + "</td><td>" +
         Num(static_cast<double>(bytes) / 1e9) + "</td><td>" + std::to_string(r.preemptions) +
         "</td><td>" + std::to_string(r.retries) + "</td></tr>";
  }
  s += "</table><div>";
  std::vector<ChartLine> jct, ttft, hbm;
  for (const PolicyReport& r : runs) {
    jct.push_back(Cdf(r.policy, r.jct_s));
    ttft.push_back(Cdf(r.policy, r.ttft_s));
    hbm.push_back(FromSeries(r.policy, r.hbm_util));
  }
  s += SvgLineChart("JCT CDF", "job completion time (s)", "fraction of workflows", jct, true);
  s += SvgLineChart("TTFT CDF (per LLM call)", "time to first token (s)", "fraction of calls", ttft,
                    true);
  s += SvgLineChart("HBM occupancy over time", "time (s)", "mean fraction of KV HBM", hbm);
  s += "</div><h2>Bytes per link kind and class over time</h2><div>";
  for (const PolicyReport& r : runs) {
    std::vector<ChartLine> lines;
    for (const auto& [name, series] : r.link_bytes) {
      double per_s = series.bucket_s > 0 ? 1e-9 / series.bucket_s : 0;  // GB/s
      lines.push_back(FromSeries(name, series, per_s));
    }
    if (lines.empty()) lines.push_back({"(no transfers)", {0}, {0}});
    s += SvgLineChart(r.policy + ": link traffic", "time (s)", "GB/s granted", lines);
  }
  s += "</div></body></html>\n";
  return s;
}

std::string SweepHtml(const std::vector<SweepResult>& sweeps, const std::string& command) {
  std::string s =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Switchyard sweep"
      "</title>" +
      std::string(kStyle) + "</head><body><h1>Switchyard sweep</h1>";
  s += "<p class=\"note\">" + Esc(command) + "</p>";
  for (const SweepResult& sw : sweeps) {
    s += "<h2>" + Esc(sw.name) + "</h2><div>";
    std::vector<ChartLine> p99, miss, mean;
    for (const std::string& p : sw.policies) {
      ChartLine a{p, {}, {}}, b{p, {}, {}}, c{p, {}, {}};
      for (const SweepCell& cell : sw.cells)
        if (cell.report.policy == p) {
          a.x.push_back(cell.rate_per_s);
          a.y.push_back(cell.report.jct_p99_s);
          b.x.push_back(cell.rate_per_s);
          b.y.push_back(cell.report.deadline_miss_rate);
          c.x.push_back(cell.rate_per_s);
          c.y.push_back(cell.report.jct_mean_s);
        }
      p99.push_back(a);
      miss.push_back(b);
      mean.push_back(c);
    }
    s += SvgLineChart("P99 JCT vs load", "arrival rate (workflows/s)", "P99 JCT (s)", p99);
    s += SvgLineChart("Deadline-miss rate vs load", "arrival rate (workflows/s)",
                      "deadline-miss rate", miss);
    s += SvgLineChart("Mean JCT vs load", "arrival rate (workflows/s)", "mean JCT (s)", mean);
    s += "</div><pre>" + Esc(SweepTable(sw)) + "</pre>";
  }
  return s + "</body></html>\n";
}

std::string SloHtml(const SloResult& r, const std::string& command) {
  std::string s =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Switchyard SLO capacity: " +
      Esc(r.name) + "</title>" + kStyle + "</head><body><h1>SLO capacity</h1>";
  char buf[1024];
  std::snprintf(buf, sizeof(buf),
                "SLO: the LLM part slows down at most %g times, JCT &minus; tool time &le; k "
                "&times; (JCT<sup>0</sup> &minus; tool time), where JCT<sup>0</sup> is the "
                "workflow's JCT alone on the cluster under %s (the same yardstick for every "
                "policy). Attainment: share of the workflows arriving in the middle of the "
                "arrival span (first %g%% and last %g%% dropped) that meet it; a failed or "
                "unfinished workflow does not. Capacity: highest rate with attainment &ge; "
                "%g%%, interpolated; %zu seed(s) of Poisson re-timing.",
                r.k, Esc(r.jct0_policy).c_str(), r.warmup_frac * 100, r.drain_frac * 100,
                r.target * 100, r.seeds.size());
  s += "<h2>" + Esc(r.name) + "</h2><p class=\"note\">" + std::string(buf) + "<br>" + Esc(command) +
       "</p><div>";
  std::vector<ChartLine> att, p99, p50;
  for (const SloPolicyResult& p : r.policies) {
    att.push_back({p.policy, r.rates, p.attainment_mean});
    ChartLine a{p.policy, {}, {}}, b{p.policy, {}, {}};
    for (const SloSlowdown& d : p.slowdown) {
      if (std::isfinite(d.stats.p99)) {
        a.x.push_back(d.load_fraction * 100);
        a.y.push_back(d.stats.p99);
      }
      if (std::isfinite(d.stats.p50)) {
        b.x.push_back(d.load_fraction * 100);
        b.y.push_back(d.stats.p50);
      }
    }
    p99.push_back(a);
    p50.push_back(b);
  }
  if (!r.rates.empty()) {
    std::snprintf(buf, sizeof(buf), "target %g%%", r.target * 100);
    att.push_back({buf, {r.rates.front(), r.rates.back()}, {r.target, r.target}});
  }
  bool log_x = !r.rates.empty() && r.rates.back() >= 4 * r.rates.front();
  s += SvgLineChart("SLO attainment vs load", "arrival rate (workflows/s)",
                    "attainment (mean over seeds)", att, log_x);
  s += SvgLineChart("P99 slowdown vs load", "load (% of the policy's capacity)", "P99 JCT / JCT0",
                    p99);
  s += SvgLineChart("P50 slowdown vs load", "load (% of the policy's capacity)", "P50 JCT / JCT0",
                    p50);
  s += "</div><pre>" + Esc(SloTable(r)) + "</pre></body></html>\n";
  return s;
}

}  // namespace switchyard::replay
