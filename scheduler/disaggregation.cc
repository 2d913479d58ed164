// ChoosePrefill (see disaggregation.h): the colocated and disaggregated estimates.
#include "scheduler/disaggregation.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace switchyard::scheduler {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

Duration ToDuration(double s) {
  if (!(s < 9e9)) return Duration::max();
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

double PrefillSeconds(int64_t tokens, const PdModel& m) {
  return static_cast<double>(std::max<int64_t>(0, tokens)) / m.prefill_tokens_per_s;
}

// Whether `d` can hold the call's whole context once decoded.
bool Fits(const PdCall& call, const DecodeCandidate& d, const PdModel& m) {
  const int64_t added = call.prompt_tokens - d.resident_tokens + call.output_tokens;
  return static_cast<double>(std::max<int64_t>(0, added)) * m.kv_bytes_per_token <=
         static_cast<double>(d.kv_free_bytes);
}

double Colocated(const PdCall& call, const DecodeCandidate& d, const PdModel& m) {
  const double prefill = PrefillSeconds(call.prompt_tokens - d.resident_tokens, m);
  const double decode = static_cast<double>(call.output_tokens) * Seconds(m.decode_step);
  return Seconds(d.wait) + prefill + decode + m.interference_weight * d.decoding * prefill;
}

struct Pair {
  double cost = kNever;
  uint64_t bytes = 0;
};

Pair Disaggregated(const PdCall& call, const PrefillCandidate& p, size_t di,
                   const DecodeCandidate& d, const PdModel& m) {
  if (di >= p.link_bytes_per_s.size() || !(p.link_bytes_per_s[di] > 0)) return {};
  const double prefill = PrefillSeconds(call.prompt_tokens - p.cached_tokens, m);
  const double bytes =
      static_cast<double>(std::max<int64_t>(0, call.prompt_tokens - d.resident_tokens)) *
      m.kv_bytes_per_token;
  const double queue = di < p.link_queue.size() ? Seconds(p.link_queue[di]) : 0;
  const double exposed =
      queue + std::max(0.0, bytes / p.link_bytes_per_s[di] - m.streaming_overlap * prefill);
  const double decode = static_cast<double>(call.output_tokens) * Seconds(m.decode_step);
  return {std::max(Seconds(p.wait) + prefill + exposed, Seconds(d.wait)) + decode +
              m.interference_weight * p.decoding * prefill,
          static_cast<uint64_t>(bytes)};
}

std::string Why(double colocated, double disaggregated) {
  char b[128];
  std::snprintf(b, sizeof(b), "colocated %.3f s, disaggregated %.3f s", colocated, disaggregated);
  return b;
}

}  // namespace

Result<Disaggregation> ParseDisaggregation(const std::string& name) {
  if (name == "colocated") return Disaggregation::kColocated;
  if (name == "always") return Disaggregation::kAlways;
  if (name == "auto") return Disaggregation::kAuto;
  return Status::InvalidArgument("disaggregation needs colocated, always or auto, not '" + name +
                                 "'");
}

const char* DisaggregationName(Disaggregation mode) {
  switch (mode) {
    case Disaggregation::kAlways:
      return "always";
    case Disaggregation::kAuto:
      return "auto";
    default:
      return "colocated";
  }
}

Result<WorkerRole> ParseWorkerRole(const std::string& name) {
  if (name.empty() || name == "mixed") return WorkerRole::kMixed;
  if (name == "prefill") return WorkerRole::kPrefill;
  if (name == "decode") return WorkerRole::kDecode;
  return Status::InvalidArgument("a worker role is prefill, decode or mixed, not '" + name + "'");
}

const char* WorkerRoleName(WorkerRole role) {
  switch (role) {
    case WorkerRole::kPrefill:
      return "prefill";
    case WorkerRole::kDecode:
      return "decode";
    default:
      return "mixed";
  }
}

PrefillChoice ChoosePrefill(const PdCall& call, const std::vector<DecodeCandidate>& decode,
                            const std::vector<PrefillCandidate>& prefill, const PdModel& m,
                            Disaggregation mode) {
  PrefillChoice out;
  double best_c = kNever, best_d = kNever;
  int c_worker = -1, d_prefill = -1, d_decode = -1;
  uint64_t d_bytes = 0;
  for (size_t di = 0; di < decode.size(); ++di) {
    const DecodeCandidate& d = decode[di];
    if (!Fits(call, d, m)) continue;
    if (const double c = Colocated(call, d, m); c < best_c) {
      best_c = c;
      c_worker = d.worker;
    }
    if (mode == Disaggregation::kColocated) continue;
    for (const PrefillCandidate& p : prefill) {
      if (p.worker == d.worker) continue;  // no hand-off to itself: that is colocated
      const Pair pair = Disaggregated(call, p, di, d, m);
      if (pair.cost < best_d) {
        best_d = pair.cost;
        d_prefill = p.worker;
        d_decode = d.worker;
        d_bytes = pair.bytes;
      }
    }
  }
  out.colocated = ToDuration(best_c);
  out.disaggregated = ToDuration(best_d);
  out.why = Why(best_c, best_d);
  const bool split = d_decode >= 0 && (mode == Disaggregation::kAlways ||
                                       (mode == Disaggregation::kAuto && best_d < best_c));
  if (split) {
    out.disaggregate = true;
    out.prefill_worker = d_prefill;
    out.decode_worker = d_decode;
    out.move_bytes = d_bytes;
  } else {
    out.decode_worker = c_worker;
  }
  return out;
}

}  // namespace switchyard::scheduler
