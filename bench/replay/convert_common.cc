#include <cmath>
#include <random>

#include "bench/replay/convert.h"
#include "bench/replay/convert_internal.h"
#include "proto/json.h"

namespace switchyard::replay {

std::vector<int64_t> SynthesiseArrivals(size_t n, const ConvertOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::vector<int64_t> out;
  out.reserve(n);
  double t = 0;
  if (o.arrival == ArrivalProcess::kBursty) {
    // On/off Markov-modulated Poisson: bursts at burst_factor × mean rate for a
    // burst_fraction of the time; the quiet rate keeps the overall mean at rate_per_s.
    double hi = o.rate_per_s * o.burst_factor;
    double lo = std::max(0.0, o.rate_per_s * (1 - o.burst_fraction * o.burst_factor) /
                                  std::max(1e-9, 1 - o.burst_fraction));
    double mean_burst_s = 10.0 / std::max(1e-9, hi);  // ~10 arrivals per burst
    double mean_quiet_s = mean_burst_s * (1 - o.burst_fraction) / o.burst_fraction;
    std::exponential_distribution<double> burst_len(1 / mean_burst_s);
    std::exponential_distribution<double> quiet_len(1 / mean_quiet_s);
    bool in_burst = false;
    double phase_end = quiet_len(rng);
    while (out.size() < n) {
      double rate = in_burst ? hi : lo;
      double step = rate > 0 ? std::exponential_distribution<double>(rate)(rng) : INFINITY;
      if (t + step >= phase_end) {
        t = phase_end;
        in_burst = !in_burst;
        phase_end = t + (in_burst ? burst_len(rng) : quiet_len(rng));
        continue;
      }
      t += step;
      out.push_back(static_cast<int64_t>(std::llround(t * 1000)));
    }
  } else {
    std::exponential_distribution<double> gap(o.rate_per_s);
    for (size_t i = 0; i < n; ++i) {
      t += gap(rng);
      out.push_back(static_cast<int64_t>(std::llround(t * 1000)));
    }
  }
  return out;
}

Result<std::string> ToJsonLines(const std::vector<v1::TraceRecord>& records) {
  std::string out;
  proto::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  for (const auto& r : records) {
    SY_ASSIGN_OR_RETURN(std::string line, proto::ToJson(r, opts));
    out += line;
    out += '\n';
  }
  return out;
}

Result<std::vector<v1::TraceRecord>> ParseTrace(const std::string& jsonl) {
  std::vector<v1::TraceRecord> out;
  Status st = ForEachLine(jsonl, [&](size_t line_no, std::string_view line) -> Status {
    v1::TraceRecord r;
    std::string where = "trace line " + std::to_string(line_no);
    proto::JsonParseOptions opts;
    opts.source = where;
    SY_RETURN_IF_ERROR(proto::ParseJson(line, &r, opts));
    out.push_back(std::move(r));
    return Status::OK();
  });
  if (!st.ok()) return st;
  return out;
}

Status ForEachLine(const std::string& text,
                   const std::function<Status(size_t, std::string_view)>& fn) {
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    ++line_no;
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    SY_RETURN_IF_ERROR(fn(line_no, line));
  }
  return Status::OK();
}

std::string TenantFor(size_t index, const ConvertOptions& o) {
  int n = std::max(1, o.tenants);
  return "tenant-" + std::to_string(index % static_cast<size_t>(n));
}

void SortByArrival(std::vector<v1::TraceRecord>* records) {
  std::stable_sort(records->begin(), records->end(),
                   [](const v1::TraceRecord& a, const v1::TraceRecord& b) {
                     return a.arrival_ms() < b.arrival_ms();
                   });
}

int64_t SecondsToMs(double s) { return static_cast<int64_t>(std::llround(s * 1000.0)); }

}  // namespace switchyard::replay
