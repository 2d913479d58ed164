// Cluster membership across hosts, kept in etcd (docs/design.md "Cluster").
//
// Key layout: one key per live worker,
//     /switchyard/<cluster>/workers/<worker id>
// whose value is a small JSON document (EncodeWorkerInfo):
//     {"workerId":"w1","host":"gpu-07","controlAddress":"10.0.0.7:7400","engine":"cpu",
//      "model":"llama-3.1-8b","epoch":42,"startedUnixMs":1796000000000}
// The key is attached to a lease that the worker keeps alive: default TTL 5 s, a
// keep-alive every TTL/3. A worker that stops renewing (killed, partitioned, hung) loses
// its key when the lease expires, at most TTL after its last renewal; Registration::Stop
// revokes the lease, which deletes the key at once.
//
// Epoch: each registration of a worker carries a new, larger epoch: the etcd revision it
// read just before writing its key, plus one. Any earlier registration of the same id was
// written at a revision at least as large as its own epoch, hence below the new one.
// The scheduler treats a worker that comes back (a new epoch) as a new member: what the
// old epoch held went through the failure sequence (invariant 5) when it was lost.
//
// Registration (the worker side) and MembershipWatcher (the scheduler side) each own one
// thread; both are thread-safe. They hold the EtcdClient by shared_ptr.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "base/status.h"
#include "cluster/etcd_client.h"

namespace switchyard::cluster {

inline constexpr std::chrono::seconds kDefaultLeaseTtl{5};

// What a worker announces about itself.
struct WorkerInfo {
  std::string worker_id;        // unique in the cluster; [A-Za-z0-9._-]
  std::string host;             // the machine it runs on
  std::string control_address;  // host:port of its control endpoint
  std::string engine;           // "sim", "cpu", ...
  std::string model;            // the model id it serves
  int64_t epoch = 0;            // set by Registration (see above)
  int64_t started_unix_ms = 0;  // when the worker process started

  friend bool operator==(const WorkerInfo&, const WorkerInfo&) = default;
};

// "/switchyard/<cluster>/workers/" and that plus the id. The cluster name and worker id
// must be non-empty and use only [A-Za-z0-9._-] (checked by ValidateName).
std::string WorkersPrefix(std::string_view cluster);
std::string WorkerKey(std::string_view cluster, std::string_view worker_id);
Status ValidateName(std::string_view what, std::string_view name);

std::string EncodeWorkerInfo(const WorkerInfo& info);
Result<WorkerInfo> DecodeWorkerInfo(std::string_view json);

struct RegistrationOptions {
  std::chrono::seconds ttl = kDefaultLeaseTtl;
  std::chrono::milliseconds keepalive_interval{0};  // 0: ttl / 3
};

// A worker's membership: its key under a lease, renewed from a thread. When the lease is
// found expired (e.g. after a partition longer than the TTL) the thread registers again
// under a new lease with a new epoch. Stop() ends it cleanly (lease revoked, key gone);
// Abandon() only stops renewing, as if the process had been killed: the key expires with
// the lease. The destructor calls Stop() unless Stop() or Abandon() ran; both are
// idempotent.
class Registration {
 public:
  static Result<std::unique_ptr<Registration>> Start(std::shared_ptr<const EtcdClient> etcd,
                                                     std::string cluster, WorkerInfo info,
                                                     RegistrationOptions options = {});
  ~Registration();

  // The registered info (with its epoch) and lease, as of now.
  WorkerInfo info() const;
  int64_t lease() const;
  // The last keep-alive or re-registration error (OK while all is well).
  Status last_error() const;

  Status Stop();
  void Abandon();

 private:
  Registration(std::shared_ptr<const EtcdClient> etcd, std::string cluster, WorkerInfo info,
               RegistrationOptions options);
  Status Register();  // grant, read the revision, put (mu_ not held)
  void KeepAliveLoop();
  bool Halt();  // stops the thread; false when Stop or Abandon ran already

  const std::shared_ptr<const EtcdClient> etcd_;
  const std::string cluster_;
  const RegistrationOptions options_;
  mutable Mutex mu_;
  CondVar cv_;
  WorkerInfo info_ GUARDED_BY(mu_);       // guarded by mu_
  int64_t lease_ GUARDED_BY(mu_) = 0;     // guarded by mu_
  Status last_error_ GUARDED_BY(mu_);     // guarded by mu_
  bool halting_ GUARDED_BY(mu_) = false;  // guarded by mu_
  bool done_ GUARDED_BY(mu_) = false;     // Stop or Abandon ran (mu_)
  std::thread thread_;
};

// A change in membership, as the scheduler sees it.
struct MembershipEvent {
  enum class Kind { kJoined, kUpdated, kLost };
  Kind kind = Kind::kJoined;
  WorkerInfo worker;     // for kLost: the last info known
  int64_t revision = 0;  // the etcd revision of the change (0 when found by a re-list)
};
std::string_view MembershipEventKindName(MembershipEvent::Kind kind);

struct MembershipWatcherOptions {
  std::chrono::milliseconds reconnect_backoff{500};  // after the watch stream fails
};

// The scheduler side: lists /switchyard/<cluster>/workers/, reports every worker found as
// joined, then watches the prefix and reports joined / updated / lost (key deleted:
// revoked or its lease expired). A worker registered again under a new epoch is reported
// lost (if its old key was not seen going) and then joined. When the watch stream fails
// (etcd restarted, connection lost) the watcher re-lists after a backoff, reports the
// difference, and watches again from the listing's revision.
//
// Callbacks run one at a time, on the watcher's thread (the first listing's on the thread
// calling Start), and must not call Stop(). Values that are not a valid WorkerInfo are
// skipped with a warning.
class MembershipWatcher {
 public:
  using Callback = std::function<void(const MembershipEvent&)>;
  // Fails (naming the endpoint) when the first listing or watch cannot be made.
  static Result<std::unique_ptr<MembershipWatcher>> Start(std::shared_ptr<const EtcdClient> etcd,
                                                          std::string cluster, Callback callback,
                                                          MembershipWatcherOptions options = {});
  ~MembershipWatcher();

  // The members known now, by worker id.
  std::map<std::string, WorkerInfo> Members() const;
  void Stop();

 private:
  MembershipWatcher(std::shared_ptr<const EtcdClient> etcd, std::string cluster, Callback callback,
                    MembershipWatcherOptions options);
  Status ListAndWatch() REQUIRES(cb_mu_);  // cb_mu_ held by the caller
  void OnEvents(const std::vector<EtcdWatchEvent>& events);
  void OnPut(const std::string& id, const EtcdKeyValue& kv);
  void Report(MembershipEvent::Kind kind, const WorkerInfo& info, int64_t revision);
  void SuperviseLoop();

  const std::shared_ptr<const EtcdClient> etcd_;
  const std::string cluster_;
  const std::string prefix_;
  const Callback callback_;
  const MembershipWatcherOptions options_;
  Mutex cb_mu_;  // serializes callbacks and the member map's updates
  mutable Mutex mu_;
  CondVar cv_;
  std::map<std::string, WorkerInfo> members_
      GUARDED_BY(mu_);  // guarded by mu_ (written under cb_mu_ too)
  std::unique_ptr<EtcdWatch> watch_ GUARDED_BY(cb_mu_);  // guarded by cb_mu_
  bool watch_failed_ GUARDED_BY(mu_) = false;            // guarded by mu_
  bool stopping_ GUARDED_BY(mu_) = false;                // guarded by mu_
  std::thread thread_;
};

}  // namespace switchyard::cluster
