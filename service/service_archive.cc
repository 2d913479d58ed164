// Service: ended workflows leave memory (archived: a snapshot and a summary stay), expire
// after the retention period, and come back from their snapshot or history when read.
#include <algorithm>

#include "base/logging.h"
#include "base/mutex.h"
#include "service/service.h"

namespace switchyard::service {

namespace pg = program_graph;

namespace {
// archived_by_state_ slot of an ended state: completed, failed, cancelled.
int EndedSlot(v1::WorkflowState s) {
  return s == v1::WORKFLOW_COMPLETED ? 0 : s == v1::WORKFLOW_FAILED ? 1 : 2;
}
}  // namespace

void Service::NoteEnded(const std::string& id) {
  std::vector<std::string> victims;
  {
    WriterMutexLock lock(&mu_);
    ended_.push_back(id);
    while (ended_.size() > options_.ended_in_memory) {
      victims.push_back(std::move(ended_.front()));
      ended_.pop_front();
    }
  }
  for (const std::string& v : victims) {
    if (Archive(v, /*tell_scheduler=*/driver_ != nullptr, /*snapshot=*/!recovering_)) continue;
    WriterMutexLock lock(&mu_);  // a record of it is still pending: look again later
    ended_.push_back(v);
  }
  Sweep(/*force=*/false);
}

void Service::Sweep(bool force) {
  if (options_.ended_retention_s <= 0) return;
  const int64_t now = clock_->Now().millis();
  size_t expired = 0;
  {
    WriterMutexLock lock(&mu_);
    if (!force && now - last_sweep_ms_ < 1000) return;
    last_sweep_ms_ = now;
    const int64_t cutoff = now - options_.ended_retention_s * 1000;
    while (!archive_order_.empty()) {
      auto a = archived_.find(archive_order_.front());
      if (a != archived_.end() && a->second.ended_ms > cutoff) break;  // the rest is newer
      if (a != archived_.end()) {  // (a restored workflow left a stale id here)
        // Queued under mu_, before the id is free: a new workflow with this id (SubmitAsync
        // checks archived_ under mu_) queues its record 0 after the erase, never before it.
        Status st = store_->EnqueueErase(a->first, a->second.records);
        if (!st.ok()) {
          Log(LogLevel::kError, "retention: cannot delete an expired workflow's history",
              LogKeys().With("workflow", a->first).With("error", st.ToString()));
        }
        ++expired;
        --archived_by_state_[EndedSlot(a->second.state)];
        archived_.erase(a);
      }
      archive_order_.pop_front();
    }
  }
  if (expired > 0) {
    Log(LogLevel::kInfo, "retention: expired workflows deleted",
        LogKeys().With("workflows", std::to_string(expired)));
  }
}

bool Service::Archive(const std::string& id, bool tell_scheduler, bool snapshot) {
  std::shared_ptr<Entry> e = Lookup(id);
  if (!e) return true;  // gone already
  MutexLock elock(&e->mu);
  if (!e->graph || !e->graph->done() || e->pending > 0) return false;
  if (snapshot) {
    // Its records are all durable (pending == 0): the snapshot claims nothing more. It is
    // queued before the workflow leaves memory, so a GET that misses it replays history.
    v1::ArchiveSnapshot snap;
    snap.set_records(e->next_seq);
    *snap.mutable_status() = StatusOf(id, *e);
    snap.mutable_status()->set_archived(true);
    std::string value;
    snap.SerializeToString(&value);
    Status st = store_->EnqueueSnapshot(id, std::move(value));
    if (!st.ok()) {
      Log(LogLevel::kDebug, "archive: snapshot not stored",
          LogKeys().With("workflow", id).With("error", st.ToString()));
    }
  }
  {
    WriterMutexLock lock(&mu_);
    auto it = workflows_.find(id);
    if (it == workflows_.end() || it->second != e) return true;
    workflows_.erase(it);
    auto [t, added] = tenant_index_.try_emplace(e->tenant, uint32_t(tenant_names_.size()));
    if (added) tenant_names_.push_back(e->tenant);
    archived_[id] = Archived{t->second,  e->graph->state(), e->arrival_ms,
                             e->last_ms, e->next_seq,       e->graph->closed()};
    archive_order_.push_back(id);
    ++archived_by_state_[EndedSlot(e->graph->state())];
  }
  e->archived = true;
  if (tell_scheduler) driver_->Forget(id);
  return true;
}

std::optional<v1::WorkflowStatus> Service::ReadSnapshot(const std::string& tenant,
                                                        const std::string& id) const {
  uint64_t records = 0;
  {
    ReaderMutexLock lock(&mu_);
    auto a = archived_.find(id);
    if (a == archived_.end() || tenant_names_[a->second.tenant] != tenant) return std::nullopt;
    records = a->second.records;
  }
  auto bytes = store_->GetSnapshot(id);
  if (!bytes.ok() || !*bytes) return std::nullopt;
  v1::ArchiveSnapshot snap;
  if (!snap.ParseFromString(**bytes) || snap.status().workflow_id() != id ||
      snap.status().tenant() != tenant) {
    Log(LogLevel::kWarn, "archive: unreadable snapshot, replaying history",
        LogKeys().With("workflow", id));
    return std::nullopt;
  }
  if (snap.records() != records) return std::nullopt;  // stale: history grew after it
  archived_reads_snapshot_.fetch_add(1, std::memory_order_relaxed);
  return std::move(*snap.mutable_status());
}

Result<std::shared_ptr<Service::Entry>> Service::ReadArchived(const std::string& tenant,
                                                              const std::string& id) const {
  {
    ReaderMutexLock lock(&mu_);
    auto a = archived_.find(id);
    if (a == archived_.end() || tenant_names_[a->second.tenant] != tenant) {
      return Status::NotFound("no workflow '" + id + "'");
    }
  }
  auto e = std::make_shared<Entry>();
  e->restored = true;  // before it is shared: never changes
  MutexLock lock(&e->mu);
  SY_RETURN_IF_ERROR(Replay(id, e.get()));
  if (!e->graph) return Status::DataLoss("archived workflow " + id + " has no history");
  return e;
}

Result<std::shared_ptr<Service::Entry>> Service::Restore(const std::string& tenant,
                                                         const std::string& id) {
  SY_ASSIGN_OR_RETURN(std::shared_ptr<Entry> e, ReadArchived(tenant, id));
  WriterMutexLock lock(&mu_);
  auto it = workflows_.find(id);
  if (it != workflows_.end()) return it->second;  // another caller restored it first
  auto a = archived_.find(id);
  if (a == archived_.end()) return Status::NotFound("no workflow '" + id + "'");
  --archived_by_state_[EndedSlot(a->second.state)];
  archived_.erase(a);
  workflows_[id] = e;
  ended_.push_back(id);  // archived again by a later NoteEnded
  return e;
}

}  // namespace switchyard::service
