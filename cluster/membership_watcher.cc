// MembershipWatcher: list, then watch, the workers prefix; re-list after a failed stream.
#include <optional>
#include <set>

#include "base/logging.h"
#include "base/mutex.h"
#include "base/thread_name.h"
#include "cluster/membership.h"

namespace switchyard::cluster {

std::string_view MembershipEventKindName(MembershipEvent::Kind kind) {
  switch (kind) {
    case MembershipEvent::Kind::kJoined:
      return "joined";
    case MembershipEvent::Kind::kUpdated:
      return "updated";
    case MembershipEvent::Kind::kLost:
      return "lost";
  }
  return "?";
}

MembershipWatcher::MembershipWatcher(std::shared_ptr<const EtcdClient> etcd, std::string cluster,
                                     Callback callback, MembershipWatcherOptions options)
    : etcd_(std::move(etcd)),
      cluster_(std::move(cluster)),
      prefix_(WorkersPrefix(cluster_)),
      callback_(std::move(callback)),
      options_(options) {}

Result<std::unique_ptr<MembershipWatcher>> MembershipWatcher::Start(
    std::shared_ptr<const EtcdClient> etcd, std::string cluster, Callback callback,
    MembershipWatcherOptions options) {
  SY_RETURN_IF_ERROR(ValidateName("cluster name", cluster));
  if (!etcd) return Status::InvalidArgument("no etcd client");
  std::unique_ptr<MembershipWatcher> w(
      new MembershipWatcher(std::move(etcd), std::move(cluster), std::move(callback), options));
  {
    MutexLock lock(&w->cb_mu_);
    Status s = w->ListAndWatch();
    if (!s.ok()) return s.Annotate("watching cluster '" + w->cluster_ + "'");
  }
  w->thread_ = std::thread([raw = w.get()] { raw->SuperviseLoop(); });
  return w;
}

MembershipWatcher::~MembershipWatcher() { Stop(); }

void MembershipWatcher::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
  std::unique_ptr<EtcdWatch> watch;
  {
    MutexLock lock(&cb_mu_);
    watch = std::move(watch_);
  }
  if (watch) watch->Stop();  // outside cb_mu_: its thread may be waiting for it
}

std::map<std::string, WorkerInfo> MembershipWatcher::Members() const {
  MutexLock lock(&mu_);
  return members_;
}

void MembershipWatcher::Report(MembershipEvent::Kind kind, const WorkerInfo& info,
                               int64_t revision) {
  {
    MutexLock lock(&mu_);
    if (kind == MembershipEvent::Kind::kLost) {
      members_.erase(info.worker_id);
    } else {
      members_[info.worker_id] = info;
    }
  }
  Log(LogLevel::kInfo, "cluster member " + std::string(MembershipEventKindName(kind)),
      LogKeys()
          .With("worker_id", info.worker_id)
          .With("epoch", std::to_string(info.epoch))
          .With("host", info.host));
  if (!callback_) return;
  try {
    callback_(MembershipEvent{kind, info, revision});
  } catch (const std::exception& e) {
    Log(LogLevel::kError, "membership callback threw",
        LogKeys().With("error", e.what()).With("worker_id", info.worker_id));
  }
}

void MembershipWatcher::OnPut(const std::string& id, const EtcdKeyValue& kv) {
  Result<WorkerInfo> info = DecodeWorkerInfo(kv.value);
  if (info.ok() && info->worker_id != id) {
    info = Status::InvalidArgument("worker id '" + info->worker_id + "' under key of '" + id + "'");
  }
  if (!info.ok()) {
    Log(LogLevel::kWarn, "skipping a bad worker document",
        LogKeys().With("key", kv.key).With("error", info.status().ToString()));
    return;
  }
  std::optional<WorkerInfo> known;
  {
    MutexLock lock(&mu_);
    if (auto it = members_.find(id); it != members_.end()) known = it->second;
  }
  if (known && known->epoch != info->epoch) {
    Report(MembershipEvent::Kind::kLost, *known, kv.mod_revision);
    known.reset();
  }
  if (!known) {
    Report(MembershipEvent::Kind::kJoined, *info, kv.mod_revision);
  } else if (!(*known == *info)) {
    Report(MembershipEvent::Kind::kUpdated, *info, kv.mod_revision);
  }
}

void MembershipWatcher::OnEvents(const std::vector<EtcdWatchEvent>& events) {
  MutexLock lock(&cb_mu_);
  for (const EtcdWatchEvent& e : events) {
    if (e.kv.key.compare(0, prefix_.size(), prefix_) != 0) continue;
    std::string id = e.kv.key.substr(prefix_.size());
    if (e.type == EtcdWatchEvent::Type::kPut) {
      OnPut(id, e.kv);
      continue;
    }
    std::optional<WorkerInfo> known;
    {
      MutexLock mlock(&mu_);
      if (auto it = members_.find(id); it != members_.end()) known = it->second;
    }
    if (known) Report(MembershipEvent::Kind::kLost, *known, e.kv.mod_revision);
  }
}

Status MembershipWatcher::ListAndWatch() {
  Result<EtcdRange> range = etcd_->Range(prefix_);
  if (!range.ok()) return range.status();
  std::set<std::string> listed;
  for (const EtcdKeyValue& kv : range->kvs) {
    std::string id = kv.key.substr(prefix_.size());
    listed.insert(id);
    OnPut(id, kv);
  }
  for (const auto& [id, info] : Members()) {
    if (!listed.count(id)) Report(MembershipEvent::Kind::kLost, info, 0);
  }
  Result<std::unique_ptr<EtcdWatch>> watch = etcd_->Watch(
      prefix_, range->revision + 1,
      [this](const std::vector<EtcdWatchEvent>& events) { OnEvents(events); },
      [this](const Status& s) {
        Log(LogLevel::kWarn, "membership watch ended",
            LogKeys().With("cluster", cluster_).With("error", s.ToString()));
        MutexLock lock(&mu_);
        watch_failed_ = true;
        cv_.SignalAll();
      });
  if (!watch.ok()) return watch.status();
  watch_ = std::move(*watch);
  return Status::OK();
}

void MembershipWatcher::SuperviseLoop() {
  SetThreadName("sy-membership");
  MutexLock lock(&mu_);
  while (true) {
    while (!stopping_ && !watch_failed_) cv_.Wait(&mu_);
    if (stopping_) return;
    // The stream failed: drop it, wait out the backoff, re-list and watch again.
    lock.Unlock();
    std::unique_ptr<EtcdWatch> old;
    {
      MutexLock cb(&cb_mu_);
      old = std::move(watch_);
    }
    if (old) old->Stop();
    lock.Lock();
    const auto end = std::chrono::steady_clock::now() + options_.reconnect_backoff;
    while (!stopping_ && cv_.WaitUntil(&mu_, end)) {
    }
    if (stopping_) return;
    watch_failed_ = false;
    lock.Unlock();
    Status s;
    {
      MutexLock cb(&cb_mu_);
      s = ListAndWatch();
    }
    lock.Lock();
    if (!s.ok()) {
      Log(LogLevel::kWarn, "membership re-list failed; retrying",
          LogKeys().With("cluster", cluster_).With("error", s.ToString()));
      watch_failed_ = true;
    }
  }
}

}  // namespace switchyard::cluster
