#include "api/report_waiter.h"

namespace switchyard::api {
namespace {

Status FailureOf(const NodeReport& r, const char* what) {
  return Status::Unavailable(r.error.empty() ? std::string(what) + " reported failed" : r.error);
}

// Erases every key "<workflow_id>/..." of a map.
template <typename Map>
void EraseWorkflow(Map& m, const std::string& workflow_id) {
  std::string prefix = workflow_id + "/";
  for (auto it = m.lower_bound(prefix); it != m.end() && it->first.rfind(prefix, 0) == 0;)
    it = m.erase(it);
}

}  // namespace

void ReportedToolWaiter::Start(const std::string& key, const v1::ProgramNode&,
                               std::function<void()> started, std::function<void(Status)> done) {
  Waiting& w = waiting_[key];
  w = Waiting{std::move(started), std::move(done), false};
  auto it = early_.find(key);
  if (it == early_.end()) return;
  while (!it->second.empty()) {
    NodeReport r = std::move(it->second.front());
    it->second.pop_front();
    if (Apply(waiting_[key], r)) {
      waiting_.erase(key);
      break;
    }
  }
  if (it->second.empty()) early_.erase(it);
}

bool ReportedToolWaiter::Apply(Waiting& w, const NodeReport& r) {
  if (!w.started_sent) {  // a finish without a start implies the start
    w.started_sent = true;
    loop_->Post(w.started);
  }
  if (r.type == v1::TOOL_STARTED) return false;
  Status st = r.type == v1::TOOL_FINISHED ? Status::OK() : FailureOf(r, "tool");
  loop_->Post([done = std::move(w.done), st]() { done(st); });
  return true;
}

void ReportedToolWaiter::Report(const std::string& key, NodeReport report) {
  auto it = waiting_.find(key);
  if (it == waiting_.end()) {
    early_[key].push_back(std::move(report));
    return;
  }
  if (Apply(it->second, report)) waiting_.erase(it);
}

void ReportedToolWaiter::Forget(const std::string& workflow_id) {
  EraseWorkflow(waiting_, workflow_id);
  EraseWorkflow(early_, workflow_id);
}

void ReportedModelExecutor::Start(const std::string& key, const scheduler::Command&,
                                  const v1::ProgramNode&, int64_t, executors::LlmReport report) {
  runs_[key] = Run{std::move(report), loop_->Now()};
  auto it = early_.find(key);
  if (it == early_.end()) return;
  while (!it->second.empty()) {
    NodeReport r = std::move(it->second.front());
    it->second.pop_front();
    if (Apply(runs_[key], r)) {
      runs_.erase(key);
      break;
    }
  }
  if (it->second.empty()) early_.erase(it);
}

bool ReportedModelExecutor::Apply(Run& run, const NodeReport& r) {
  if (r.type == v1::LLM_STARTED) return false;
  Status st = r.type == v1::LLM_FINISHED ? Status::OK() : FailureOf(r, "LLM call");
  Duration used = loop_->Now() - run.started;
  loop_->Post([done = std::move(run.report.done), st, out = r.output_tokens, used]() {
    done(st, out, used);
  });
  return true;
}

void ReportedModelExecutor::Stop(const std::string& key) { runs_.erase(key); }

void ReportedModelExecutor::Report(const std::string& key, NodeReport report) {
  auto it = runs_.find(key);
  if (it == runs_.end()) {
    early_[key].push_back(std::move(report));
    return;
  }
  if (Apply(it->second, report)) runs_.erase(it);
}

void ReportedModelExecutor::Forget(const std::string& workflow_id) {
  EraseWorkflow(runs_, workflow_id);
  EraseWorkflow(early_, workflow_id);
}

}  // namespace switchyard::api
