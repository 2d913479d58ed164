#include "net_budget/credit.h"

#include <deque>
#include <map>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"

namespace switchyard::net_budget {
namespace internal {

struct Waiter {
  CreditWaitId id;
  uint64_t bytes;
  std::string sender;
  CreditManager::CreditCallback done;
};

struct Destination {
  CreditLimits limits;
  uint64_t inflight_bytes = 0;
  uint32_t inflight_transfers = 0;
  std::map<std::string, uint32_t> sender_leases;  // sender -> leases held
  std::deque<Waiter> waiters;
};

struct CreditCore : std::enable_shared_from_this<CreditCore> {
  EventLoop* loop;
  std::optional<CreditLimits> defaults;
  Mutex mu;
  std::unordered_map<std::string, Destination> dests;
  CreditWaitId next_id = 1;

  Destination* Find(const std::string& dest) {
    auto it = dests.find(dest);
    if (it != dests.end()) return &it->second;
    if (!defaults) return nullptr;
    Destination& d = dests[dest];
    d.limits = *defaults;
    return &d;
  }

  static Status NoCredit(const std::string& dest) {
    return Status::FailedPrecondition("destination '" + dest +
                                      "' has granted no credit (no limits set)");
  }

  // Why `bytes` from `sender` cannot be granted now (OK if it can).
  static Status Check(const std::string& dest, const Destination& d, uint64_t bytes,
                      const std::string& sender) {
    const auto& L = d.limits;
    if (d.inflight_bytes + bytes > L.max_inflight_bytes) {
      return Status::ResourceExhausted("destination '" + dest + "': credit exhausted (" +
                                       std::to_string(d.inflight_bytes) + " of " +
                                       std::to_string(L.max_inflight_bytes) +
                                       " bytes in flight, asked " + std::to_string(bytes) + ")");
    }
    if (d.inflight_transfers + 1 > L.max_inflight_transfers) {
      return Status::ResourceExhausted("destination '" + dest + "': all " +
                                       std::to_string(L.max_inflight_transfers) +
                                       " transfer slots in use");
    }
    if (!d.sender_leases.count(sender) && d.sender_leases.size() + 1 > L.max_senders) {
      return Status::ResourceExhausted("destination '" + dest + "': incast limit of " +
                                       std::to_string(L.max_senders) +
                                       " concurrent senders reached (sender '" + sender + "')");
    }
    return Status::OK();
  }

  static Status CheckSize(const std::string& dest, const Destination& d, uint64_t bytes) {
    if (bytes > d.limits.max_inflight_bytes) {
      return Status::InvalidArgument("destination '" + dest + "': request of " +
                                     std::to_string(bytes) + " bytes exceeds its credit limit of " +
                                     std::to_string(d.limits.max_inflight_bytes) + " bytes");
    }
    return Status::OK();
  }

  CreditLease Take(const std::string& dest, Destination& d, uint64_t bytes,
                   const std::string& sender) {
    d.inflight_bytes += bytes;
    d.inflight_transfers += 1;
    d.sender_leases[sender] += 1;
    CreditLease lease;
    lease.core_ = weak_from_this();
    lease.held_ = true;
    lease.dest_ = dest;
    lease.sender_ = sender;
    lease.bytes_ = bytes;
    return lease;
  }

  using Ready = std::vector<std::pair<CreditManager::CreditCallback, Result<CreditLease>>>;

  // Serves waiters of `dest` strictly in order while the head fits.
  void Serve(const std::string& dest, Destination& d, Ready* out) {
    while (!d.waiters.empty()) {
      Waiter& w = d.waiters.front();
      Status size = CheckSize(dest, d, w.bytes);  // limits may have shrunk
      if (!size.ok()) {
        out->emplace_back(std::move(w.done), size);
      } else if (Check(dest, d, w.bytes, w.sender).ok()) {
        out->emplace_back(std::move(w.done), Take(dest, d, w.bytes, w.sender));
      } else {
        break;
      }
      d.waiters.pop_front();
    }
  }

  void Deliver(Ready ready) {
    for (auto& [done, result] : ready) {
      auto r = std::make_shared<Result<CreditLease>>(std::move(result));
      loop->Post([done = std::move(done), r] { done(std::move(*r)); });
    }
  }

  void Return(const CreditLease& lease) {
    Ready ready;
    {
      MutexLock lock(&mu);
      auto it = dests.find(lease.dest_);
      if (it == dests.end()) return;
      Destination& d = it->second;
      d.inflight_bytes -= lease.bytes_;
      d.inflight_transfers -= 1;
      auto s = d.sender_leases.find(lease.sender_);
      if (s != d.sender_leases.end() && --s->second == 0) d.sender_leases.erase(s);
      Serve(lease.dest_, d, &ready);
    }
    Deliver(std::move(ready));
  }
};

}  // namespace internal

CreditLease::CreditLease(CreditLease&& o) noexcept { *this = std::move(o); }

CreditLease& CreditLease::operator=(CreditLease&& o) noexcept {
  if (this != &o) {
    Release();
    core_ = std::move(o.core_);
    held_ = o.held_;
    dest_ = std::move(o.dest_);
    sender_ = std::move(o.sender_);
    bytes_ = o.bytes_;
    o.held_ = false;
    o.core_.reset();
  }
  return *this;
}

CreditLease::~CreditLease() { Release(); }

void CreditLease::Release() {
  if (!held_) return;
  held_ = false;
  if (auto core = core_.lock()) core->Return(*this);
  core_.reset();
}

CreditManager::CreditManager(EventLoop* loop, std::optional<CreditLimits> default_limits)
    : core_(std::make_shared<internal::CreditCore>()) {
  core_->loop = loop;
  core_->defaults = default_limits;
}

CreditManager::~CreditManager() = default;

Status CreditManager::SetLimits(const std::string& dest, CreditLimits limits) {
  if (limits.max_inflight_bytes == 0 || limits.max_inflight_transfers == 0 ||
      limits.max_senders == 0) {
    return Status::InvalidArgument("destination '" + dest +
                                   "': credit limits must all be > 0 (bytes, transfers, senders)");
  }
  internal::CreditCore::Ready ready;
  {
    MutexLock lock(&core_->mu);
    auto& d = core_->dests[dest];
    d.limits = limits;
    core_->Serve(dest, d, &ready);
  }
  core_->Deliver(std::move(ready));
  return Status::OK();
}

Result<CreditLease> CreditManager::AcquireCredit(const std::string& dest, uint64_t bytes,
                                                 const std::string& sender) {
  MutexLock lock(&core_->mu);
  internal::Destination* d = core_->Find(dest);
  if (!d) return internal::CreditCore::NoCredit(dest);
  SY_RETURN_IF_ERROR(internal::CreditCore::CheckSize(dest, *d, bytes));
  if (!d->waiters.empty()) {
    return Status::ResourceExhausted("destination '" + dest +
                                     "': " + std::to_string(d->waiters.size()) +
                                     " earlier requests are waiting for credit");
  }
  SY_RETURN_IF_ERROR(internal::CreditCore::Check(dest, *d, bytes, sender));
  return core_->Take(dest, *d, bytes, sender);
}

CreditWaitId CreditManager::AcquireCreditAsync(const std::string& dest, uint64_t bytes,
                                               const std::string& sender, CreditCallback done) {
  internal::CreditCore::Ready ready;
  CreditWaitId id = 0;
  {
    MutexLock lock(&core_->mu);
    internal::Destination* d = core_->Find(dest);
    Status st =
        d ? internal::CreditCore::CheckSize(dest, *d, bytes) : internal::CreditCore::NoCredit(dest);
    if (!st.ok()) {
      ready.emplace_back(std::move(done), st);
    } else {
      id = core_->next_id++;
      d->waiters.push_back({id, bytes, sender, std::move(done)});
      core_->Serve(dest, *d, &ready);
    }
  }
  core_->Deliver(std::move(ready));
  return id;
}

bool CreditManager::Cancel(CreditWaitId id) {
  internal::CreditCore::Ready ready;
  {
    MutexLock lock(&core_->mu);
    bool found = false;
    for (auto& [name, d] : core_->dests) {
      for (auto it = d.waiters.begin(); it != d.waiters.end(); ++it) {
        if (it->id != id) continue;
        ready.emplace_back(std::move(it->done),
                           Status::Cancelled("credit wait " + std::to_string(id) + " cancelled"));
        d.waiters.erase(it);
        core_->Serve(name, d, &ready);  // the next waiter may fit now
        found = true;
        break;
      }
      if (found) break;
    }
    if (!found) return false;
  }
  core_->Deliver(std::move(ready));
  return true;
}

Result<CreditState> CreditManager::State(const std::string& dest) const {
  MutexLock lock(&core_->mu);
  auto it = core_->dests.find(dest);
  if (it == core_->dests.end()) {
    if (core_->defaults) return CreditState{*core_->defaults, 0, 0, 0, 0};
    return Status::NotFound("destination '" + dest + "' has no credit limits");
  }
  const auto& d = it->second;
  return CreditState{d.limits, d.inflight_bytes, d.inflight_transfers,
                     static_cast<uint32_t>(d.sender_leases.size()),
                     static_cast<uint32_t>(d.waiters.size())};
}

}  // namespace switchyard::net_budget
