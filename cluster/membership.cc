// The key layout, the worker document, and Registration (the worker side).
#include "cluster/membership.h"

#include <nlohmann/json.hpp>

#include "base/logging.h"
#include "base/mutex.h"
#include "base/thread_name.h"

namespace switchyard::cluster {
namespace {

using json = nlohmann::json;

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

Status StringField(const json& j, const char* name, bool required, std::string* out) {
  auto it = j.find(name);
  if (it == j.end()) {
    return required ? Status::InvalidArgument(std::string("worker document: no '") + name + "'")
                    : Status::OK();
  }
  if (!it->is_string()) {
    return Status::InvalidArgument(std::string("worker document: '") + name + "' is not a string");
  }
  *out = it->get<std::string>();
  return Status::OK();
}

Status IntField(const json& j, const char* name, int64_t* out) {
  auto it = j.find(name);
  if (it == j.end()) return Status::OK();
  if (!it->is_number_integer()) {
    return Status::InvalidArgument(std::string("worker document: '") + name +
                                   "' is not an integer");
  }
  *out = it->get<int64_t>();
  return Status::OK();
}

}  // namespace

Status ValidateName(std::string_view what, std::string_view name) {
  if (name.empty()) return Status::InvalidArgument(std::string(what) + " is empty");
  for (char c : name) {
    if (!NameChar(c)) {
      return Status::InvalidArgument(std::string(what) + " '" + std::string(name) +
                                     "' may use only letters, digits, '.', '_' and '-'");
    }
  }
  return Status::OK();
}

std::string WorkersPrefix(std::string_view cluster) {
  return "/switchyard/" + std::string(cluster) + "/workers/";
}

std::string WorkerKey(std::string_view cluster, std::string_view worker_id) {
  return WorkersPrefix(cluster) + std::string(worker_id);
}

std::string EncodeWorkerInfo(const WorkerInfo& info) {
  return json{{"workerId", info.worker_id},
              {"host", info.host},
              {"controlAddress", info.control_address},
              {"engine", info.engine},
              {"model", info.model},
              {"epoch", info.epoch},
              {"startedUnixMs", info.started_unix_ms}}
      .dump();
}

Result<WorkerInfo> DecodeWorkerInfo(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Status::InvalidArgument("worker document: not a JSON object");
  WorkerInfo info;
  SY_RETURN_IF_ERROR(StringField(j, "workerId", true, &info.worker_id));
  SY_RETURN_IF_ERROR(StringField(j, "host", false, &info.host));
  SY_RETURN_IF_ERROR(StringField(j, "controlAddress", false, &info.control_address));
  SY_RETURN_IF_ERROR(StringField(j, "engine", false, &info.engine));
  SY_RETURN_IF_ERROR(StringField(j, "model", false, &info.model));
  SY_RETURN_IF_ERROR(IntField(j, "epoch", &info.epoch));
  SY_RETURN_IF_ERROR(IntField(j, "startedUnixMs", &info.started_unix_ms));
  SY_RETURN_IF_ERROR(ValidateName("worker id", info.worker_id));
  return info;
}

Registration::Registration(std::shared_ptr<const EtcdClient> etcd, std::string cluster,
                           WorkerInfo info, RegistrationOptions options)
    : etcd_(std::move(etcd)),
      cluster_(std::move(cluster)),
      options_(options),
      info_(std::move(info)) {}

Result<std::unique_ptr<Registration>> Registration::Start(std::shared_ptr<const EtcdClient> etcd,
                                                          std::string cluster, WorkerInfo info,
                                                          RegistrationOptions options) {
  SY_RETURN_IF_ERROR(ValidateName("cluster name", cluster));
  SY_RETURN_IF_ERROR(ValidateName("worker id", info.worker_id));
  if (options.ttl.count() < 1) return Status::InvalidArgument("lease TTL must be >= 1 s");
  if (!etcd) return Status::InvalidArgument("no etcd client");
  std::unique_ptr<Registration> r(
      new Registration(std::move(etcd), std::move(cluster), std::move(info), options));
  Status s = r->Register();
  if (!s.ok()) {
    MutexLock lock(&r->mu_);  // no other thread has it yet: for the analysis
    r->done_ = true;          // nothing to revoke
    return s.Annotate("registering worker '" + r->info_.worker_id + "'");
  }
  r->thread_ = std::thread([raw = r.get()] { raw->KeepAliveLoop(); });
  return r;
}

Registration::~Registration() { (void)Stop(); }

Status Registration::Register() {
  WorkerInfo info = this->info();
  const std::string key = WorkerKey(cluster_, info.worker_id);
  Result<EtcdLease> lease = etcd_->LeaseGrant(options_.ttl.count());
  if (!lease.ok()) return lease.status();
  // The epoch: the revision read now, plus one (membership.h).
  Result<EtcdRange> now = etcd_->Range(key);
  if (!now.ok()) {
    (void)etcd_->LeaseRevoke(lease->id);
    return now.status();
  }
  info.epoch = now->revision + 1;
  Result<int64_t> put = etcd_->Put(key, EncodeWorkerInfo(info), lease->id);
  if (!put.ok()) {
    (void)etcd_->LeaseRevoke(lease->id);
    return put.status();
  }
  MutexLock lock(&mu_);
  info_ = std::move(info);
  lease_ = lease->id;
  return Status::OK();
}

void Registration::KeepAliveLoop() {
  SetThreadName("sy-etcd-lease");
  auto interval = options_.keepalive_interval.count() > 0
                      ? options_.keepalive_interval
                      : std::chrono::duration_cast<std::chrono::milliseconds>(options_.ttl) / 3;
  MutexLock lock(&mu_);
  for (;;) {
    const auto end = std::chrono::steady_clock::now() + interval;
    while (!halting_ && cv_.WaitUntil(&mu_, end)) {
    }
    if (halting_) break;
    int64_t lease = lease_;
    lock.Unlock();
    Status s;
    Result<int64_t> ttl = etcd_->LeaseKeepAlive(lease);
    if (!ttl.ok()) s = ttl.status();
    if (s.IsNotFound()) {
      Log(LogLevel::kWarn, "etcd lease expired: registering again with a new epoch",
          LogKeys().With("worker_id", info().worker_id).With("lease", std::to_string(lease)));
      s = Register();
    }
    if (!s.ok()) {
      Log(LogLevel::kWarn, "etcd keep-alive failed",
          LogKeys().With("worker_id", info().worker_id).With("error", s.ToString()));
    }
    lock.Lock();
    last_error_ = s;
  }
}

bool Registration::Halt() {
  bool first;
  {
    MutexLock lock(&mu_);
    first = !done_;
    halting_ = true;
    done_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
  return first;
}

Status Registration::Stop() {
  if (!Halt()) return Status::OK();
  return etcd_->LeaseRevoke(lease());
}

void Registration::Abandon() { (void)Halt(); }

WorkerInfo Registration::info() const {
  MutexLock lock(&mu_);
  return info_;
}

int64_t Registration::lease() const {
  MutexLock lock(&mu_);
  return lease_;
}

Status Registration::last_error() const {
  MutexLock lock(&mu_);
  return last_error_;
}

}  // namespace switchyard::cluster
