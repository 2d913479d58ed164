#include "scheduler/policy.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "scheduler/internal/policy_math.h"
#include "scheduler/oracle_policy.h"
#include "scheduler/reference_policies.h"

namespace switchyard::scheduler {

size_t Policy::ChoosePoolVictim(const std::vector<PoolVictimInfo>& running) const {
  size_t v = 0;
  for (size_t i = 1; i < running.size(); ++i)
    if (running[i].admitted_seq > running[v].admitted_seq) v = i;
  return v;
}

namespace {

using internal::MeanOf;
using internal::Median;
using internal::S;

// A reload "on demand" is planned this far out; the node's placement reloads it first.
constexpr double kOnDemandS = 1e6;

}  // namespace

double Policy::EvictionPriority(const IdleContextInfo& c) const {
  // Superseded contexts first, then the farthest next use (unknown counts as farthest,
  // capped at 10^6 s); older idle first on ties (the tie term stays below 1 for idle
  // times under 10^6 s, so it never outweighs a second of predicted use).
  double lru = 1e-6 * c.idle_since.seconds();
  if (c.superseded) return -1e8 + lru;
  double until = c.until_next_use == Duration::max() ? 1e6 : std::min(1e6, S(c.until_next_use));
  return -until + lru;
}

OrderKey SwitchyardPolicy::Order(const ReadyNodeInfo& n) const {
  // score(now) = service - aging * (now - ready_since); ordering by service + aging *
  // ready_since is the same at every `now`, so the key is time-invariant.
  int band = n.priority_class == 1 ? 0 : (n.priority_class == 3 ? 2 : 1);
  switch (options_.order) {
    case Options::OrderBy::kArrival:
      return {band, n.workflow_arrival.seconds()};
    case Options::OrderBy::kDeadline:
      if (n.deadline == Time::Max())
        return {band, n.workflow_arrival.seconds() + options_.deadline_cap_s};
      return {band, n.workflow_arrival.seconds() +
                        std::min(options_.deadline_cap_s,
                                 options_.deadline_weight * S(n.deadline - n.workflow_arrival))};
    case Options::OrderBy::kAtlas:
      break;
  }
  return {band, S(n.program_service) + options_.aging_per_second * n.ready_since.seconds()};
}

double SwitchyardPolicy::Urgency(const WaitInput& in) const {
  if (in.slack == Duration::max()) return 1.0;
  double slack = std::max(S(in.slack), 0.01);
  return 1.0 + options_.urgency_scale_s / slack;
}

double SwitchyardPolicy::Pressure(const WaitInput& in) const {
  double occ = 0;
  if (options_.occupancy_knee < 1)
    occ = std::clamp((in.hbm_occupancy - options_.occupancy_knee) / (1 - options_.occupancy_knee),
                     0.0, 1.0);
  double p = std::max({in.hbm_pressure, options_.pressure_floor, occ});
  // Memory held through a wait costs only what freeing it would add to throughput.
  if (options_.batch_aware && in.batch_headroom >= 0)
    p *= std::clamp((in.batch_headroom - options_.headroom_knee) / (1 - options_.headroom_knee),
                    0.0, 1.0);
  return p;
}

double SwitchyardPolicy::KeepCost(const WaitInput& in) const {
  return Pressure(in) * in.hbm_fraction * MeanOf(in.wait_quantiles);
}

double SwitchyardPolicy::DemoteCost(const WaitInput& in, const WaitOption& o,
                                    Duration* prefetch_after) const {
  double out = S(o.out), back = S(o.in);
  double pressure = Pressure(in);
  double urgency = Urgency(in);
  double n = in.wait_quantiles.empty() ? 1.0 : static_cast<double>(in.wait_quantiles.size());
  // Expected memory-time after an early reload plus stall, for a reload starting at `start`
  // (infinity: reload on demand when the node is ready).
  auto timing_cost = [&](double start, double* idle_out) {
    double stall = 0, idle = 0;
    for (Duration qd : in.wait_quantiles) {
      double r = S(qd);
      // The tool returns at r: the reload starts at `start`, or at r if that is earlier
      // (and not before the demotion finished).
      double begin = r >= start ? start : std::max(out, r);
      stall += std::max(0.0, begin + back - r);
      idle += std::max(0.0, r - (begin + back));
    }
    *idle_out = idle / n;
    return pressure * in.hbm_fraction * idle / n + urgency * stall / n;
  };
  // Candidate reload times: the median rule, each quantile, and on demand; the cheapest
  // wins (under pressure a wide duration spread makes an early reload hold idle HBM).
  double margin = 1 + options_.prefetch_margin;
  std::vector<double> starts = {std::max(out, Median(in.wait_quantiles) - back * margin)};
  if (options_.choose_reload_time) {
    for (Duration qd : in.wait_quantiles) starts.push_back(std::max(out, S(qd) - back * margin));
    starts.push_back(std::numeric_limits<double>::infinity());
  }
  double best_start = starts[0], best_idle = 0;
  double best = timing_cost(starts[0], &best_idle);
  for (size_t i = 1; i < starts.size(); ++i) {
    double idle = 0, c = timing_cost(starts[i], &idle);
    if (c < best - 1e-12) best = c, best_start = starts[i], best_idle = idle;
  }
  if (prefetch_after)
    *prefetch_after = std::isinf(best_start) ? Seconds(kOnDemandS) : Seconds(best_start);
  double mem = pressure * in.hbm_fraction * (out + back) + pressure * in.hbm_fraction * best_idle;
  double link = (options_.link_weight + o.path_load) * (out + back);
  double remote = o.dst_pressure * o.dst_fraction * MeanOf(in.wait_quantiles);
  return mem + link + remote + (best - pressure * in.hbm_fraction * best_idle);
}

double SwitchyardPolicy::DiscardCost(const WaitInput& in) const {
  return options_.discard_weight * S(in.recompute) * (1.0 + Urgency(in));
}

WaitDecision SwitchyardPolicy::OnWait(const WaitInput& in) const {
  WaitDecision best;
  best.action = WaitAction::kKeep;
  best.cost = KeepCost(in);
  best.why = "keep";
  if (in.reason == WaitReason::kEviction) best.cost = std::numeric_limits<double>::infinity();
  for (const WaitOption& o : in.options) {
    if (!options_.peer_demotion && o.dst.tier == Tier::kPeer) continue;
    Duration after{0};
    double c = DemoteCost(in, o, &after);
    if (c < best.cost) {
      best = {WaitAction::kDemote, o.dst, after, c,
              std::string("demote to ") + TierName(o.dst.tier)};
    }
  }
  double d = DiscardCost(in);
  if (d < best.cost) best = {WaitAction::kDiscard, {}, Duration(0), d, "recompute is cheapest"};
  return best;
}

std::optional<size_t> SwitchyardPolicy::ChoosePreemptionVictim(
    const PreemptionInput& in, const std::vector<RunningInfo>& running) const {
  // Preempt only when waiting would miss the urgent node's deadline, and (skip_hopeless)
  // when running now would still meet it.
  if (in.urgent_wait <= in.urgent_slack) return std::nullopt;
  if (options_.skip_hopeless && in.urgent_slack < Duration(0)) return std::nullopt;
  std::optional<size_t> victim;
  for (size_t i = 0; i < running.size(); ++i) {
    const RunningInfo& r = running[i];
    if (r.prefill_remaining_tokens <= 0) continue;
    if (r.rebuild_lost_tokens > 0 && !options_.preempt_rebuilds) continue;
    // The victim must be able to absorb the urgent node's run time.
    if (r.slack != Duration::max() && r.slack < in.urgent_run) continue;
    if (!victim || r.remaining_time > running[*victim].remaining_time) victim = i;
  }
  return victim;
}

OrderKey KeepDuringToolPolicy::Order(const ReadyNodeInfo& n) const {
  return {0, n.workflow_arrival.seconds()};
}

WaitDecision KeepDuringToolPolicy::OnWait(const WaitInput& in) const {
  if (in.reason == WaitReason::kEviction)
    return {WaitAction::kDiscard, {}, Duration(0), 0, "evict"};
  return {WaitAction::kKeep, {}, Duration(0), 0, "keep during tool"};
}

std::unique_ptr<Policy> MakePolicy(std::string_view name) {
  if (name == "switchyard") return std::make_unique<SwitchyardPolicy>();
  if (name == "keep-during-tool") return std::make_unique<KeepDuringToolPolicy>();
  if (name == "vllm-fcfs") return std::make_unique<VllmFcfsPolicy>();
  if (name == "infercept") return std::make_unique<InferCeptPolicy>();
  if (name == "continuum") return std::make_unique<ContinuumPolicy>();
  if (name == "autellix") return std::make_unique<AutellixPolicy>();
  if (name == "kvflow") return std::make_unique<KvFlowPolicy>();
  if (name == "lmcache") return std::make_unique<LmCachePolicy>();
  if (name == "oracle") return std::make_unique<OraclePolicy>();
  return nullptr;
}

}  // namespace switchyard::scheduler

namespace switchyard::scheduler {
namespace {

Status SetSwitchyardOption(SwitchyardPolicy::Options* o, std::string_view key,
                           std::string_view value, std::string_view spec) {
  struct Field {
    const char* name;
    double* target;
  };
  const Field fields[] = {{"aging_per_second", &o->aging_per_second},
                          {"link_weight", &o->link_weight},
                          {"urgency_scale_s", &o->urgency_scale_s},
                          {"prefetch_margin", &o->prefetch_margin},
                          {"pressure_floor", &o->pressure_floor},
                          {"occupancy_knee", &o->occupancy_knee},
                          {"headroom_knee", &o->headroom_knee},
                          {"deadline_weight", &o->deadline_weight},
                          {"deadline_cap_s", &o->deadline_cap_s},
                          {"placement_load_weight", &o->placement_load_weight},
                          {"discard_weight", &o->discard_weight}};
  std::string v(value);
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  bool numeric = !v.empty() && end == v.c_str() + v.size() && std::isfinite(x);
  if (key == "order") {
    using O = SwitchyardPolicy::Options::OrderBy;
    if (value == "atlas") {
      o->order = O::kAtlas;
    } else if (value == "arrival") {
      o->order = O::kArrival;
    } else if (value == "deadline") {
      o->order = O::kDeadline;
    } else {
      return Status::InvalidArgument("policy '" + std::string(spec) +
                                     "': order must be atlas, arrival or deadline, got '" + v +
                                     "'");
    }
    return Status::OK();
  }
  for (auto [name, flag] :
       {std::pair{"choose_reload_time", &o->choose_reload_time},
        std::pair{"skip_hopeless", &o->skip_hopeless}, std::pair{"batch_aware", &o->batch_aware},
        std::pair{"peer_demotion", &o->peer_demotion},
        std::pair{"preempt_rebuilds", &o->preempt_rebuilds}}) {
    if (key != name) continue;
    if (value != "0" && value != "1")
      return Status::InvalidArgument("policy '" + std::string(spec) + "': " + name +
                                     " must be 0 or 1, got '" + v + "'");
    *flag = value == "1";
    return Status::OK();
  }
  for (const Field& f : fields) {
    if (key != f.name) continue;
    if (!numeric || x < 0)
      return Status::InvalidArgument("policy '" + std::string(spec) + "': " + f.name +
                                     " must be a non-negative number, got '" + v + "'");
    *f.target = x;
    return Status::OK();
  }
  return Status::InvalidArgument(
      "policy '" + std::string(spec) + "': unknown option '" + std::string(key) +
      "' (known: aging_per_second, link_weight, urgency_scale_s, "
      "prefetch_margin, pressure_floor, occupancy_knee, deadline_weight, deadline_cap_s, "
      "choose_reload_time, skip_hopeless, batch_aware, peer_demotion, preempt_rebuilds, "
      "headroom_knee, placement_load_weight, discard_weight, order)");
}

}  // namespace

Result<std::unique_ptr<Policy>> CreatePolicy(std::string_view spec) {
  size_t colon = spec.find(':');
  std::string_view name = spec.substr(0, colon);
  if (colon == std::string_view::npos) {
    std::unique_ptr<Policy> p = MakePolicy(name);
    if (p) return p;
    std::string names;
    for (std::string_view n : PolicyNames()) names += (names.empty() ? "" : ", ") + std::string(n);
    return Status::InvalidArgument("unknown policy '" + std::string(spec) + "' (known: " + names +
                                   ")");
  }
  if (name == "infercept") {
    std::string_view opt = spec.substr(colon + 1);
    if (opt == "t_int=learned")
      return std::unique_ptr<Policy>(
          std::make_unique<InferCeptPolicy>(InferCeptPolicy::Estimator::kLearned));
    if (opt == "t_int=elapsed") return std::unique_ptr<Policy>(std::make_unique<InferCeptPolicy>());
    return Status::InvalidArgument("policy '" + std::string(spec) +
                                   "': infercept takes t_int=elapsed or t_int=learned");
  }
  if (name != "switchyard")
    return Status::InvalidArgument("policy '" + std::string(spec) +
                                   "': only 'switchyard' and 'infercept' take options");
  SwitchyardPolicy::Options o;
  std::string_view rest = spec.substr(colon + 1);
  while (!rest.empty()) {
    size_t comma = rest.find(':');
    std::string_view item = rest.substr(0, comma);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return Status::InvalidArgument("policy '" + std::string(spec) + "': option '" +
                                     std::string(item) + "' is not key=value");
    SY_RETURN_IF_ERROR(SetSwitchyardOption(&o, item.substr(0, eq), item.substr(eq + 1), spec));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (o.occupancy_knee > 1)
    return Status::InvalidArgument("policy '" + std::string(spec) +
                                   "': occupancy_knee must be in [0, 1]");
  return std::unique_ptr<Policy>(std::make_unique<SwitchyardPolicy>(o, std::string(spec)));
}

}  // namespace switchyard::scheduler
