// SchedulerDriver's token streams (executors::Generation): node inputs, output watchers
// fed by the engines' step reports, and placement watchers.
#include "base/asio_event_loop.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "driver/scheduler_driver.h"
#include "executors/runtime.h"
#include "executors/tiered_mover.h"
#include "kv_tiers/block_manager.h"
#include "kv_tiers/tier.h"

namespace switchyard::driver {

using scheduler::Command;
using scheduler::CommandKind;
using scheduler::Event;
using scheduler::EventKind;

void SchedulerDriver::SetNodeInput(const std::string& wf, const std::string& node,
                                   NodeInput input) {
  loop_->Post([this, key = wf + "/" + node, input = std::move(input)]() mutable {
    inputs_[key] = std::move(input);
  });
}

void SchedulerDriver::Watch(const std::string& wf, const std::string& node, TokenWatcher watcher) {
  loop_->Post([this, key = wf + "/" + node, watcher = std::move(watcher)]() mutable {
    watchers_[key] = Watcher{std::move(watcher), 0};
  });
}

void SchedulerDriver::WatchPlacement(const std::string& wf, const std::string& node,
                                     std::function<void(int)> fn) {
  loop_->Post([this, key = wf + "/" + node, fn = std::move(fn)]() mutable {
    placements_[key] = std::move(fn);
  });
}

void SchedulerDriver::WatchKv(std::function<void(const KvDecision&)> fn) {
  loop_->Post([this, fn = std::move(fn)]() mutable { kv_watcher_ = std::move(fn); });
}

void SchedulerDriver::ReportKvDecisions(const scheduler::Commands& out) const {
  if (!kv_watcher_) return;
  for (const Command& c : out.list) {
    KvDecision d;
    switch (c.kind) {
      case CommandKind::kKeep:
        d.kind = KvDecision::Kind::kKeep;
        d.worker = c.src.worker;
        break;
      case CommandKind::kDemote:
        d.kind = KvDecision::Kind::kDemote;
        d.worker = c.src.worker;
        if (c.not_before.ns > 0 && c.not_before < Time::Max())
          d.planned_prefetch_ms = c.not_before.millis();
        break;
      case CommandKind::kPrefetch:
        d.kind = KvDecision::Kind::kPrefetch;
        d.worker = c.dst.worker;
        break;
      case CommandKind::kDiscard:
        d.kind = KvDecision::Kind::kDiscard;
        d.worker = c.src.worker;
        break;
      default:
        continue;
    }
    if (c.workflow_id.empty()) continue;  // a shared prefix's copy, of no one workflow
    d.workflow = c.workflow_id;
    d.context = c.context;
    kv_watcher_(d);
  }
}

void SchedulerDriver::OnStep(const executors::StepReport& r) {
  metrics_.OnStep(r);
  for (const executors::SeqProgress& p : r.seqs) {  // time to first token, per node
    if (p.output_done != 1) continue;
    size_t slash = p.key.find('/');
    if (slash == std::string::npos) continue;
    MutexLock lock(&mu_);
    auto wf = wfs_.find(p.key.substr(0, slash));
    if (wf == wfs_.end()) continue;
    wf->second.cached_tokens.emplace(p.key.substr(slash + 1), p.cached_tokens);
    if (wf->second.first_token_ms.emplace(p.key.substr(slash + 1), r.end.millis()).second)
      wf->second.timeline.OnFirstToken(p.key.substr(slash + 1), r.end);
  }
  if (watchers_.empty()) return;
  for (const executors::SeqProgress& p : r.seqs) {
    if (p.token < 0) continue;
    auto it = watchers_.find(p.key);
    if (it == watchers_.end()) continue;
    const int64_t index = p.output_done - 1;  // a retried attempt re-emits nothing twice
    if (index < it->second.next) continue;
    it->second.next = index + 1;
    TokenEvent t;
    t.token = p.token;
    t.index = index;
    it->second.fn(t);
  }
}

std::optional<int64_t> SchedulerDriver::cached_tokens(const std::string& wf,
                                                      const std::string& node) const {
  MutexLock lock(&mu_);
  auto w = wfs_.find(wf);
  if (w == wfs_.end()) return std::nullopt;
  auto n = w->second.cached_tokens.find(node);
  return n == w->second.cached_tokens.end() ? std::nullopt : std::optional<int64_t>(n->second);
}

void SchedulerDriver::EndWatchers(const Event& e, const scheduler::Commands& out) {
  if (e.kind == EventKind::kLlmFinished && e.status.ok())
    inputs_.erase(e.workflow_id + "/" + e.node_id);  // a failed attempt may be retried
  for (const Command& c : out.list) {
    if (placements_.empty()) break;
    bool place = c.kind == CommandKind::kPlace;
    if (!place && c.kind != CommandKind::kFail && c.kind != CommandKind::kComplete) continue;
    std::vector<std::string> keys;
    if (place) {
      keys.push_back(c.workflow_id + "/" + c.node_id);
    } else {
      const std::string prefix = c.workflow_id + "/";
      for (const auto& [key, fn] : placements_)
        if (key.compare(0, prefix.size(), prefix) == 0) keys.push_back(key);
    }
    for (const std::string& key : keys) {
      auto it = placements_.find(key);
      if (it == placements_.end()) continue;
      auto fn = std::move(it->second);
      placements_.erase(it);
      fn(place ? c.worker : -1);
    }
  }
  if (watchers_.empty()) return;
  auto finish = [this](const std::string& key, Status st, int64_t tokens) {
    auto it = watchers_.find(key);
    if (it == watchers_.end()) return;
    TokenWatcher fn = std::move(it->second.fn);
    watchers_.erase(it);
    TokenEvent t;
    t.finished = true;
    t.status = std::move(st);
    t.output_tokens = tokens;
    fn(t);
  };
  if (e.kind == EventKind::kLlmFinished && e.status.ok())
    finish(e.workflow_id + "/" + e.node_id, Status::OK(), e.output_tokens);
  for (const Command& c : out.list) {
    if (c.kind != CommandKind::kFail && c.kind != CommandKind::kComplete) continue;
    const std::string prefix = c.workflow_id + "/";
    std::vector<std::string> keys;
    for (const auto& [key, w] : watchers_)
      if (key.compare(0, prefix.size(), prefix) == 0) keys.push_back(key);
    for (const std::string& key : keys)
      finish(key, Status::Aborted("workflow " + c.workflow_id + " ended: " + c.reason), 0);
    for (auto it = inputs_.begin(); it != inputs_.end();)
      it = it->first.compare(0, prefix.size(), prefix) == 0 ? inputs_.erase(it) : std::next(it);
  }
}

std::string SchedulerDriver::model_executor_name() const {
  // Distinct engine names in worker order ("simulated engine, cpu engine" with two models).
  std::string out;
  for (const EngineWorker& w : workers_) {
    std::string name(w.engine->name());
    if (out.find(name) == std::string::npos) out += (out.empty() ? "" : ", ") + name;
  }
  return out.empty() ? std::string("none") : out;
}

std::string SchedulerDriver::kv_mover_description() const {
  bool all_cpu = true;
  for (const auto& g : groups_) all_cpu = all_cpu && g->computes();
  const std::string emulated = "emulated kv_tiers (emulated HBM, host arena, RocksDB disk) at 1/" +
                               std::to_string(config_.kv_bytes_scale) + " of the KV bytes";
  const std::string real =
      "the cpu engines' real KV blocks copied through kv_tiers (host arena, RocksDB disk, "
      "engine pools), checksummed and committed";
  if (all_cpu) return "tiered kv mover: " + real;
  if (any_computes_)
    return "tiered kv mover: for cpu models " + real + "; for simulated ones " + emulated;
  return "tiered kv mover: blocks moved through " + emulated;
}

}  // namespace switchyard::driver
