// What a replay collects as it runs (replay.cc's Replayer): per-workflow and per-node
// times, KV moves and the HBM and link series of the report, and the ledger check of
// --check-ledger. Internal to replay/.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "executors/engine.h"
#include "executors/model_cost.h"
#include "net_budget/topology.h"
#include "replay/replay.h"
#include "scheduler/core.h"
#include "scheduler/net_budget_env.h"

namespace switchyard::replay::internal {

using scheduler::Command;
using scheduler::CommandKind;
using scheduler::Event;
using scheduler::EventKind;
using scheduler::Location;
using scheduler::Tier;

inline std::string Key(const std::string& wf, const std::string& node) { return wf + "/" + node; }

// Kind of a net_budget cluster link (scheduler::BuildClusterTopology ids), for charts.
inline std::string LinkKind(const std::string& id) {
  if (id.find("nvme") != std::string::npos) return "nvme";
  if (id.find("tor") != std::string::npos) return "nic";
  if (id.find("nvswitch") != std::string::npos) return "nvlink";
  if (id.find("/nic") != std::string::npos) return "pcie-gdr";
  return "pcie";
}

// Accumulates a step function (value changes at event times) into equal buckets.
class StepIntegrator {
 public:
  void Set(double t, double v) {
    if (!points_.empty() && points_.back().second == v) return;
    points_.push_back({t, v});
  }
  // Time-weighted mean over [t0, t1].
  double Mean(double t0, double t1) const {
    if (t1 <= t0 || points_.empty()) return 0;
    double area = 0;
    for (size_t i = 0; i < points_.size(); ++i) {
      double a = std::max(t0, points_[i].first);
      double b = std::min(t1, i + 1 < points_.size() ? points_[i + 1].first : t1);
      if (b > a) area += (b - a) * points_[i].second;
    }
    return area / (t1 - t0);
  }
  Series Buckets(double end, int n) const {
    Series s;
    s.bucket_s = end / n;
    size_t i = 0;
    for (int k = 0; k < n; ++k) {
      double t0 = k * s.bucket_s, t1 = t0 + s.bucket_s, area = 0;
      while (i < points_.size() && i + 1 < points_.size() && points_[i + 1].first <= t0) ++i;
      for (size_t j = i; j < points_.size() && points_[j].first < t1; ++j) {
        double a = std::max(t0, points_[j].first);
        double b = std::min(t1, j + 1 < points_.size() ? points_[j + 1].first : t1);
        if (b > a) area += (b - a) * points_[j].second;
      }
      s.values.push_back(s.bucket_s > 0 ? area / s.bucket_s : 0);
    }
    return s;
  }

 private:
  std::vector<std::pair<double, double>> points_;
};

struct PendingWorkflow {
  std::map<std::string, std::vector<v1::ProgramNode>> held;  // revealed_after -> nodes
  size_t held_count = 0;
  bool closed = false;
};

struct Collector {
  const executors::RooflineCostModel* cost = nullptr;
  std::vector<executors::Engine*> engines;
  uint64_t block_bytes = 0;
  const scheduler::Core* core = nullptr;
  const scheduler::NetBudgetEnvironment* env = nullptr;
  int workers = 0;
  double capacity = 1;
  PolicyReport* r = nullptr;
  std::map<uint64_t, Command> inflight;                   // transfer id -> command
  std::unordered_map<std::string, double> finished_at;    // "wf/node" -> virtual seconds
  std::unordered_map<std::string, double> first_token;    // running "wf/node" -> first token
  std::map<std::string, const v1::TraceRecord*> records;  // wf -> record
  std::unordered_map<std::string, std::unordered_map<std::string, const v1::ProgramNode*>> nodes;
  StepIntegrator hbm;
  std::vector<std::tuple<double, std::string, uint64_t>> moved;           // (t, kind/class, bytes)
  std::vector<scheduler::NetBudgetEnvironment::ClassBytes> traffic, cur;  // last snapshot
  std::vector<std::string> series;  // per link x class: "<link kind>/<class>"

  // Bytes granted on every link since the last snapshot, charged at `now`.
  void SampleTraffic(double now) {
    env->TrafficBytes(&cur);
    if (series.empty()) {
      for (size_t i = 0; i < cur.size(); ++i)
        for (size_t k = 0; k < net_budget::kNumClasses; ++k)
          series.push_back(
              LinkKind(env->topology().link(static_cast<net_budget::LinkIndex>(i)).id) + "/" +
              std::string(net_budget::ClassName(net_budget::kAllClasses[k])));
    }
    for (size_t i = 0; i < cur.size(); ++i)
      for (size_t k = 0; k < net_budget::kNumClasses; ++k) {
        uint64_t before = i < traffic.size() ? traffic[i][k] : 0;
        if (cur[i][k] > before)
          moved.push_back({now, series[i * net_budget::kNumClasses + k], cur[i][k] - before});
      }
    traffic.swap(cur);
  }
  double last_t = 0;
  uint64_t command_bytes = 0, completed_bytes = 0, failed_bytes = 0;

  double ReadyAt(const std::string& wf, const v1::ProgramNode& n) {
    double at = static_cast<double>(records[wf]->arrival_ms()) / 1e3;
    for (const std::string& d : n.deps()) {
      auto it = finished_at.find(Key(wf, d));
      if (it != finished_at.end()) at = std::max(at, it->second);
    }
    return at;
  }

  // A call's TTFT (ready -- its deps done -- to the first output token the engine
  // reported; a call that ended in the step of its first token: its end) and its TBT.
  void OnCallEnded(const Event& e, const std::string& key, double now) {
    auto wit = nodes.find(e.workflow_id);
    if (wit == nodes.end()) return;
    auto nit = wit->second.find(e.node_id);
    if (nit == wit->second.end()) return;
    auto ft = first_token.find(key);
    double first = ft != first_token.end() ? ft->second : now;
    r->ttft_s.push_back(std::max(0.0, first - ReadyAt(e.workflow_id, *nit->second)));
    if (e.output_tokens >= 2 && ft != first_token.end())
      r->tbt_s.push_back((now - first) / static_cast<double>(e.output_tokens - 1));
  }

  void OnEvent(const Event& e, const scheduler::Commands& out, Time now_t) {
    double now = now_t.seconds();
    if (now < last_t) r->time_monotonic = false;
    last_t = now;
    if (e.kind == EventKind::kEngineReport)
      for (const scheduler::SeqStep& st : e.steps)
        if (st.output_done == 1) first_token.try_emplace(Key(st.workflow_id, st.node_id), now);
    if ((e.kind == EventKind::kLlmFinished || e.kind == EventKind::kToolFinished) &&
        e.status.ok()) {
      std::string key = Key(e.workflow_id, e.node_id);
      finished_at[key] = now;
      if (e.kind == EventKind::kLlmFinished) OnCallEnded(e, key, now);
      first_token.erase(key);
    }
    if (e.kind == EventKind::kTransferCompleted) {
      auto it = inflight.find(e.transfer_id);
      if (it != inflight.end()) {
        const Command& c = it->second;
        std::string cls = scheduler::TrafficClassName(c.grant.traffic_class);
        r->bytes_moved_by_class[cls] += c.bytes;
        completed_bytes += c.bytes;
        ++r->transfers;
        inflight.erase(it);
      }
    } else if (e.kind == EventKind::kTransferFailed) {
      auto it = inflight.find(e.transfer_id);
      if (it != inflight.end()) {
        failed_bytes += it->second.bytes;
        inflight.erase(it);
      }
    }
    bool granted = false;
    for (const Command& c : out.list) {
      switch (c.kind) {
        case CommandKind::kDemote:
        case CommandKind::kPrefetch:
          inflight[c.transfer_id] = c;
          command_bytes += c.bytes;
          granted = true;
          if (c.kind == CommandKind::kDemote) ++r->demotions;
          if (c.kind == CommandKind::kPrefetch) ++r->prefetches;
          break;
        case CommandKind::kPlace:
          r->recompute_tokens += static_cast<uint64_t>(std::max<int64_t>(0, c.recompute_tokens));
          break;
        case CommandKind::kPreempt:
          if (c.reason.empty()) ++r->preemptions;  // else a prefill's hand-off (pd_handoffs)
          break;
        case CommandKind::kRetry:
          ++r->retries;
          break;
        case CommandKind::kDiscard:
          ++r->discards;
          ++r->discards_by_reason[c.reason.substr(0, c.reason.find(" ("))];
          break;
        case CommandKind::kKeep:
          ++r->keeps;
          break;
        default:
          break;
      }
    }
    if (granted) SampleTraffic(now);
    uint64_t used = 0;
    for (int w = 0; w < workers; ++w) used += core->hbm_used(w);
    hbm.Set(now, static_cast<double>(used) / (capacity * workers));
  }

  // HBM ledger: per worker, the engine's KV blocks in use (running sequences, resident idle
  // contexts, in-flight move destinations) are exactly the core's accounting, after the
  // commands of every event were carried out.
  void CheckLedger(double now) {
    for (int w = 0; w < workers; ++w) {
      uint64_t engine =
          static_cast<uint64_t>(engines[static_cast<size_t>(w)]->blocks_used()) * block_bytes;
      if (engine != core->hbm_used(w)) {
        if (r->ledger_violations++ == 0)
          r->ledger_first_violation = "worker " + std::to_string(w) + " at " + std::to_string(now) +
                                      " s: engine " + std::to_string(engine) + " bytes, core " +
                                      std::to_string(core->hbm_used(w));
      }
    }
    ++r->ledger_checks;
  }
};

}  // namespace switchyard::replay::internal
