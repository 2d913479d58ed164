#include "net_budget/link_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace switchyard::net_budget {

Result<double> Percentile(std::vector<double> values, double q) {
  if (values.empty()) return Status::InvalidArgument("percentile of an empty set");
  if (!(q >= 0 && q <= 1)) {
    return Status::InvalidArgument("percentile q=" + std::to_string(q) + " is outside [0, 1]");
  }
  std::sort(values.begin(), values.end());
  double pos = q * static_cast<double>(values.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, values.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

Result<std::vector<SizePercentiles>> PercentilesBySize(std::span<const Sample> samples) {
  if (samples.empty()) return Status::InvalidArgument("no samples");
  std::map<uint64_t, std::vector<double>> by_size;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    if (!std::isfinite(s.seconds) || s.seconds < 0) {
      return Status::InvalidArgument(
          "sample " + std::to_string(i) + " (bytes " + std::to_string(s.bytes) +
          "): time must be finite and >= 0, got " + std::to_string(s.seconds));
    }
    by_size[s.bytes].push_back(s.seconds);
  }
  std::vector<SizePercentiles> out;
  out.reserve(by_size.size());
  for (auto& [bytes, times] : by_size) {
    SizePercentiles p;
    p.bytes = bytes;
    p.samples = static_cast<uint32_t>(times.size());
    p.p50_s = *Percentile(times, 0.50);
    p.p95_s = *Percentile(times, 0.95);
    p.p99_s = *Percentile(times, 0.99);
    out.push_back(p);
  }
  return out;
}

namespace {

double RSquared(const std::vector<SizePercentiles>& pts, const AlphaBeta& m) {
  double mean = 0;
  for (const auto& p : pts) mean += p.p50_s;
  mean /= static_cast<double>(pts.size());
  double ss_tot = 0, ss_res = 0;
  for (const auto& p : pts) {
    double r = p.p50_s - m.Seconds(p.bytes);
    ss_res += r * r;
    ss_tot += (p.p50_s - mean) * (p.p50_s - mean);
  }
  return ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
}

}  // namespace

Result<LinkFit> FitAlphaBeta(std::span<const Sample> samples) {
  SY_ASSIGN_OR_RETURN(std::vector<SizePercentiles> pts, PercentilesBySize(samples));
  if (pts.size() < 2) {
    return Status::InvalidArgument(
        "alpha-beta fit needs samples of at least two distinct sizes, got " +
        std::to_string(pts.size()));
  }
  // Ordinary least squares of median time on size, in centred form for precision.
  double n = static_cast<double>(pts.size());
  double mx = 0, my = 0;
  for (const auto& p : pts) {
    mx += static_cast<double>(p.bytes);
    my += p.p50_s;
  }
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0;
  for (const auto& p : pts) {
    double dx = static_cast<double>(p.bytes) - mx;
    sxx += dx * dx;
    sxy += dx * (p.p50_s - my);
  }
  AlphaBeta m;
  m.beta_s_per_byte = sxy / sxx;
  m.alpha_s = my - m.beta_s_per_byte * mx;
  if (m.alpha_s < 0) {
    // Clamp alpha to 0 and refit beta through the origin: beta = sum(xy) / sum(xx).
    double xy = 0, xx = 0;
    for (const auto& p : pts) {
      double x = static_cast<double>(p.bytes);
      xy += x * p.p50_s;
      xx += x * x;
    }
    m.alpha_s = 0;
    m.beta_s_per_byte = xx > 0 ? xy / xx : 0;
  }
  if (!(m.beta_s_per_byte > 0)) {
    return Status::InvalidArgument(
        "alpha-beta fit gives a non-positive time per byte: median times do not grow with "
        "size, so these samples do not describe a link");
  }
  LinkFit fit;
  fit.model = m;
  fit.samples = samples.size();
  fit.r_squared = RSquared(pts, m);
  fit.per_size = std::move(pts);
  return fit;
}

v1::LinkCalibration ToProto(const LinkFit& fit) {
  v1::LinkCalibration c;
  c.set_alpha_s(fit.model.alpha_s);
  c.set_beta_s_per_byte(fit.model.beta_s_per_byte);
  c.set_samples(fit.samples);
  c.set_r_squared(fit.r_squared);
  for (const auto& p : fit.per_size) {
    auto* s = c.add_per_size();
    s->set_bytes(p.bytes);
    s->set_samples(p.samples);
    s->set_p50_s(p.p50_s);
    s->set_p95_s(p.p95_s);
    s->set_p99_s(p.p99_s);
  }
  return c;
}

Result<LinkFit> FromProto(const v1::LinkCalibration& c) {
  if (!(c.beta_s_per_byte() > 0) || !std::isfinite(c.beta_s_per_byte())) {
    return Status::InvalidArgument("calibration.beta_s_per_byte must be > 0, got " +
                                   std::to_string(c.beta_s_per_byte()));
  }
  if (!(c.alpha_s() >= 0) || !std::isfinite(c.alpha_s())) {
    return Status::InvalidArgument("calibration.alpha_s must be >= 0, got " +
                                   std::to_string(c.alpha_s()));
  }
  LinkFit fit;
  fit.model = {c.alpha_s(), c.beta_s_per_byte()};
  fit.samples = c.samples();
  fit.r_squared = c.r_squared();
  for (const auto& s : c.per_size()) {
    fit.per_size.push_back({s.bytes(), s.samples(), s.p50_s(), s.p95_s(), s.p99_s()});
  }
  return fit;
}

}  // namespace switchyard::net_budget
