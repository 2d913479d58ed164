// Service reads: a workflow's status, paged lists of live and archived workflows,
// idempotency lookups and the counts behind /metrics.
#include <algorithm>
#include <future>
#include <tuple>

#include "base/ids.h"
#include "base/mutex.h"
#include "service/service.h"

namespace switchyard::service {

namespace pg = program_graph;

v1::WorkflowStatus Service::StatusOf(const std::string& id, const Entry& e) {
  const pg::Workflow& g = *e.graph;
  v1::WorkflowStatus s;
  s.set_workflow_id(id);
  s.set_tenant(e.tenant);
  s.set_state(g.state());
  s.set_closed(g.closed());
  s.set_failure_reason(g.failure_reason());
  s.set_arrival_ms(e.arrival_ms);
  if (auto d = g.deadline()) s.set_deadline_ms(d->millis());
  s.set_critical_path_s(ToSeconds(g.CriticalPathLength()));
  s.set_archived(e.restored);
  for (pg::NodeIndex i = 0; i < g.size(); ++i) {
    auto* n = s.add_nodes();
    n->set_id(g.node_id(i));
    n->set_kind(g.node(i).kind());
    n->set_state(g.state(i));
    n->set_attempts(g.attempts(i));
    n->set_reason(g.reason(i));
    n->set_retryable(g.retryable(i));
    if (!g.node(i).tool_name().empty()) n->set_tool_name(g.node(i).tool_name());
    if (g.node(i).hints().retain_ms() > 0) n->set_retain_ms(g.node(i).hints().retain_ms());
    if (auto t = e.times.find(g.node_id(i)); t != e.times.end()) {
      n->set_started_ms(t->second.first);
      n->set_finished_ms(t->second.second);
      if (t->second.first > 0 && t->second.second >= t->second.first)
        n->set_duration_ms(t->second.second - t->second.first);
    }
    for (auto& c : g.ContextsOf(i)) n->add_contexts(c);
  }
  for (const v1::WorkerLoss& l : e.losses) *s.add_worker_losses() = l;
  return s;
}

void Service::GetAsync(const std::string& tenant, const std::string& workflow_id,
                       StatusDone done) const {
  auto entry = Find(tenant, workflow_id);
  if (!entry.ok() && entry.status().code() == StatusCode::kNotFound) {
    if (auto snap = ReadSnapshot(tenant, workflow_id)) return done(std::move(*snap));
    entry = ReadArchived(tenant, workflow_id);  // durable: nothing of it is pending
    if (entry.ok()) archived_reads_replay_.fetch_add(1, std::memory_order_relaxed);
  }
  if (!entry.ok()) return done(entry.status());
  v1::WorkflowStatus s;
  bool pending = false;
  {
    MutexLock lock(&(*entry)->mu);
    if (!(*entry)->graph) return done(Status::NotFound("no workflow '" + workflow_id + "'"));
    s = StatusOf(workflow_id, **entry);
    pending = (*entry)->pending > 0;
  }
  if (driver_ && !s.archived()) driver_->Fill(workflow_id, &s);
  if (!pending) return done(std::move(s));
  // It shows records not yet durable: answer once they are (they are queued before this).
  auto shared = std::make_shared<v1::WorkflowStatus>(std::move(s));
  store_->Barrier([shared, done = std::move(done)](const Status& st) {
    if (st.ok()) return done(std::move(*shared));
    done(Status::Unavailable("state store write failed: " + st.message()));
  });
}

Result<v1::WorkflowStatus> Service::Get(const std::string& tenant,
                                        const std::string& workflow_id) const {
  std::promise<Result<v1::WorkflowStatus>> p;
  auto f = p.get_future();
  GetAsync(tenant, workflow_id, [&p](Result<v1::WorkflowStatus> r) { p.set_value(std::move(r)); });
  return f.get();
}

Result<v1::WorkflowTimeline> Service::Timeline(const std::string& tenant,
                                               const std::string& workflow_id) const {
  v1::WorkflowTimeline t;
  t.set_workflow_id(workflow_id);
  auto entry = Find(tenant, workflow_id);
  if (!entry.ok()) {
    if (entry.status().code() != StatusCode::kNotFound) return entry.status();
    if (!ReadSnapshot(tenant, workflow_id))
      SY_RETURN_IF_ERROR(ReadArchived(tenant, workflow_id).status());
    t.set_archived(true);
    return t;
  }
  if (driver_) (void)driver_->FillTimeline(workflow_id, &t);
  return t;
}

namespace {

// A list page token: "<arrival ms in hex>.<workflow id>" of the last workflow listed.
std::string PageToken(int64_t arrival_ms, const std::string& id) {
  return HexId(static_cast<uint64_t>(arrival_ms)) + "." + id;
}

Result<std::pair<int64_t, std::string>> ParsePageToken(const std::string& token) {
  size_t dot = token.find('.');
  if (dot != 16 || dot + 1 >= token.size() || token.find_first_not_of("0123456789abcdef") < dot) {
    return Status::InvalidArgument("pageToken: malformed (pass the nextPageToken of a page)");
  }
  return std::make_pair(static_cast<int64_t>(std::stoull(token.substr(0, dot), nullptr, 16)),
                        token.substr(dot + 1));
}

}  // namespace

Result<v1::WorkflowList> Service::List(const std::string& tenant, const ListQuery& q) const {
  std::optional<std::pair<int64_t, std::string>> after;
  if (!q.page_token.empty()) {
    SY_ASSIGN_OR_RETURN(auto cursor, ParsePageToken(q.page_token));
    after = std::move(cursor);
  }
  // One candidate per workflow: live ones by entry, archived ones by their summary.
  struct Item {
    int64_t arrival_ms;
    std::string id;
    std::shared_ptr<Entry> live;
    Archived archived;
  };
  // List order: by (arrival, id), reversed for newest first.
  auto before = [&q](int64_t a1, const std::string& i1, int64_t a2, const std::string& i2) {
    return q.newest_first ? std::tie(a2, i2) < std::tie(a1, i1)
                          : std::tie(a1, i1) < std::tie(a2, i2);
  };
  std::vector<Item> items;
  {
    ReaderMutexLock lock(&mu_);
    auto t = tenant_index_.find(tenant);
    auto keep = [&](int64_t arrival, const std::string& id) {
      return !after || before(after->first, after->second, arrival, id);
    };
    for (const auto& [id, e] : workflows_) {
      if (e->tenant == tenant && keep(e->arrival_ms, id))
        items.push_back({e->arrival_ms, id, e, {}});
    }
    if (t != tenant_index_.end()) {
      for (const auto& [id, a] : archived_) {
        if (a.tenant != t->second || (q.state && a.state != *q.state)) continue;
        if (keep(a.arrival_ms, id)) items.push_back({a.arrival_ms, id, nullptr, a});
      }
    }
  }
  std::sort(items.begin(), items.end(), [&before](const Item& a, const Item& b) {
    return before(a.arrival_ms, a.id, b.arrival_ms, b.id);
  });
  v1::WorkflowList out;
  const Item* last = nullptr;
  for (const Item& it : items) {
    v1::WorkflowStatus status;
    if (it.live) {
      MutexLock lock(&it.live->mu);
      if (!it.live->graph) continue;  // still being registered
      if (q.state && it.live->graph->state() != *q.state) continue;
      status = StatusOf(it.id, *it.live);
    } else {
      status.set_workflow_id(it.id);
      status.set_tenant(tenant);
      status.set_state(it.archived.state);
      status.set_closed(it.archived.closed);
      status.set_arrival_ms(it.arrival_ms);
      status.set_archived(true);
    }
    // A token only when a matching workflow follows the page.
    if (q.page_size > 0 && static_cast<size_t>(out.workflows_size()) == q.page_size) {
      out.set_next_page_token(PageToken(last->arrival_ms, last->id));
      break;
    }
    *out.add_workflows() = std::move(status);
    last = &it;
  }
  return out;
}

v1::WorkflowList Service::List(const std::string& tenant,
                               std::optional<v1::WorkflowState> state) const {
  ListQuery q;
  q.state = state;
  auto page = List(tenant, q);  // no token: cannot fail
  return page.ok() ? std::move(page).value() : v1::WorkflowList();
}

Result<std::optional<v1::IdempotencyEntry>> Service::LookupIdempotent(
    const std::string& tenant, const std::string& key) const {
  SY_ASSIGN_OR_RETURN(auto e, store_->GetIdempotent(tenant, key));
  if (!e || Expired(e->entry)) return std::optional<v1::IdempotencyEntry>();
  if (e->pending) SY_RETURN_IF_ERROR(store_->Flush());
  return std::optional<v1::IdempotencyEntry>(std::move(e->entry));
}

Result<std::optional<Store::Idempotent>> Service::PeekIdempotent(const std::string& tenant,
                                                                 const std::string& key) const {
  SY_ASSIGN_OR_RETURN(auto e, store_->GetIdempotent(tenant, key));
  if (e && Expired(e->entry)) return std::optional<Store::Idempotent>();
  return e;
}

bool Service::Expired(const v1::IdempotencyEntry& e) const {
  return options_.idempotency_retention_s > 0 && e.time_ms() > 0 &&
         e.time_ms() + options_.idempotency_retention_s * 1000 < clock_->Now().millis();
}

Service::Counts Service::counts() const {
  Counts c;
  std::vector<std::shared_ptr<Entry>> all;
  {
    ReaderMutexLock lock(&mu_);
    for (const auto& [id, e] : workflows_) all.push_back(e);
  }
  for (const auto& e : all) {
    MutexLock lock(&e->mu);
    if (!e->graph) continue;
    ++c.workflows;
    switch (e->graph->state()) {
      case v1::WORKFLOW_COMPLETED:
        ++c.completed;
        break;
      case v1::WORKFLOW_FAILED:
        ++c.failed;
        break;
      case v1::WORKFLOW_CANCELLED:
        ++c.cancelled;
        break;
      default:
        ++c.running;
    }
  }
  {
    ReaderMutexLock lock(&mu_);
    c.completed += archived_by_state_[0];
    c.failed += archived_by_state_[1];
    c.cancelled += archived_by_state_[2];
    c.archived = archived_.size();
    c.archived_reads_snapshot = archived_reads_snapshot_.load(std::memory_order_relaxed);
    c.archived_reads_replay = archived_reads_replay_.load(std::memory_order_relaxed);
  }
  c.workflows += c.archived;
  c.events_applied = events_applied_.load();
  return c;
}

size_t Service::in_memory() const {
  ReaderMutexLock lock(&mu_);
  return workflows_.size();
}

size_t Service::archived() const {
  ReaderMutexLock lock(&mu_);
  return archived_.size();
}

}  // namespace switchyard::service
