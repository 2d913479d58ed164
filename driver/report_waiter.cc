#include "driver/report_waiter.h"

namespace switchyard::driver {
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

Status ReportedEngine::Admit(const executors::SequenceSpec& seq) {
  if (runs_.count(seq.key)) return Status::AlreadyExists("sequence " + seq.key + " is running");
  runs_[seq.key] = Run{loop_->Now()};
  for (const executors::SeqContext& c : seq.contexts) contexts_[c.key] = c.tokens;
  auto it = early_->find(seq.key);
  if (it == early_->end()) return Status::OK();
  while (!it->second.empty()) {
    NodeReport r = std::move(it->second.front());
    it->second.pop_front();
    if (r.type != v1::LLM_STARTED) {
      Finish(seq.key, r);
      break;
    }
  }
  if (it->second.empty()) early_->erase(it);
  return Status::OK();
}

void ReportedEngine::Finish(const std::string& key, const NodeReport& r) {
  runs_.erase(key);
  executors::StepReport rep;
  rep.worker = worker_;
  rep.start = rep.end = loop_->Now();
  executors::SeqProgress p;
  p.key = key;
  p.finished = true;
  p.status = r.type == v1::LLM_FINISHED ? Status::OK() : FailureOf(r, "LLM call");
  p.output_done = r.output_tokens;
  rep.seqs.push_back(std::move(p));
  // Posted: never inside Admit() or Report().
  loop_->Post([this, rep = std::move(rep)]() {
    if (listener_) listener_(rep);
  });
}

Result<executors::SeqProgress> ReportedEngine::Preempt(const std::string& key) {
  auto it = runs_.find(key);
  if (it == runs_.end()) return Status::NotFound("no running sequence " + key);
  runs_.erase(it);
  executors::SeqProgress p;
  p.key = key;
  return p;
}

Status ReportedEngine::Import(const std::string& context, int64_t tokens) {
  contexts_[context] = tokens;
  return Status::OK();
}

Status ReportedEngine::Release(const std::string& context) {
  contexts_.erase(context);
  return Status::OK();
}

int64_t ReportedEngine::context_tokens(const std::string& context) const {
  auto it = contexts_.find(context);
  return it == contexts_.end() ? -1 : it->second;
}

void ReportedEngine::Report(const std::string& key, NodeReport report) {
  if (!runs_.count(key)) {
    (*early_)[key].push_back(std::move(report));
    return;
  }
  if (report.type != v1::LLM_STARTED) Finish(key, report);
}

void ReportedEngine::Forget(const std::string& workflow_id) {
  EraseWorkflow(runs_, workflow_id);
  EraseWorkflow(*early_, workflow_id);
  EraseWorkflow(contexts_, workflow_id);
}

}  // namespace switchyard::driver
