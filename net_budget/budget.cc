#include "net_budget/budget.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <string>

#include "base/mutex.h"

namespace switchyard::net_budget {

Result<BudgetPolicy> BudgetPolicy::FromProto(const v1::BudgetPolicyConfig& cfg) {
  BudgetPolicy p;
  if (cfg.has_weights()) {
    const auto& w = cfg.weights();
    std::array<double, kNumClasses> in = {w.latency(), w.throughput(), w.background(), w.control()};
    for (size_t i = 0; i < kNumClasses; ++i) {
      if (in[i] == 0) continue;  // unset: keep the default
      p.weights[i] = in[i];
    }
  }
  if (cfg.control_reserve() != 0) p.control_reserve = cfg.control_reserve();
  if (cfg.background_floor() != 0) p.background_floor = cfg.background_floor();
  if (cfg.latency_yield_backlog_bytes() != 0) {
    p.latency_yield_backlog_bytes = cfg.latency_yield_backlog_bytes();
  }
  if (cfg.burst_s() != 0) p.burst_s = cfg.burst_s();
  for (const auto& [kind, reserve] : cfg.control_reserve_by_link_kind()) {
    bool known = false;
    for (int k = v1::LinkKind_MIN; k <= v1::LinkKind_MAX; ++k)
      known |= v1::LinkKind_IsValid(k) && kind == LinkKindName(static_cast<v1::LinkKind>(k)) &&
               kind != "unspecified";
    if (!known)
      return Status::InvalidArgument("budget.controlReserveByLinkKind: '" + kind +
                                     "' is not a link kind (nvlink, pcie, nic_port, loopback, "
                                     "veth, ethernet, infiniband)");
    if (!(reserve >= 0 && reserve < 1))
      return Status::InvalidArgument("budget.controlReserveByLinkKind." + kind +
                                     " must be in [0, 1), got " + std::to_string(reserve));
    p.control_reserve_by_link_kind[kind] = reserve;
  }
  for (size_t i = 0; i < kNumClasses; ++i) {
    if (!(p.weights[i] > 0) || !std::isfinite(p.weights[i])) {
      return Status::InvalidArgument("budget.weights." + std::string(ClassName(kAllClasses[i])) +
                                     " must be > 0, got " + std::to_string(p.weights[i]));
    }
  }
  if (!(p.control_reserve >= 0 && p.control_reserve < 1)) {
    return Status::InvalidArgument("budget.control_reserve must be in [0, 1), got " +
                                   std::to_string(p.control_reserve));
  }
  if (!(p.background_floor > 0 && p.background_floor <= 1)) {
    return Status::InvalidArgument("budget.background_floor must be in (0, 1], got " +
                                   std::to_string(p.background_floor));
  }
  if (!(p.latency_yield_backlog_bytes > 0)) {
    return Status::InvalidArgument("budget.latency_yield_backlog_bytes must be > 0");
  }
  if (!(p.burst_s >= 0)) return Status::InvalidArgument("budget.burst_s must be >= 0");
  return p;
}

namespace internal {

// Class state on one channel. tokens < 0 is a debt being paid at `rate`.
struct ClassChannel {
  double tokens = 0;
  std::deque<RequestId> queue;
  double queued_bytes = 0;
  uint64_t granted = 0;
  uint64_t inflight = 0;
  double rate = 0;
  double prospective = 0;
};

struct Channel {
  double cap = 0;      // bytes/s; 0 = unknown bandwidth (cannot be budgeted)
  double reserve = 0;  // control's reserve here (BudgetPolicy, by the link's kind)
  Time last;
  std::array<ClassChannel, kNumClasses> cls;
};

struct Request {
  TrafficClass cls;
  std::vector<ChannelIndex> chans;
  uint64_t bytes;
  LinkBudgets::GrantCallback done;
};

// Grants within a byte of zero balance, so float rounding of accrual never stalls a wake.
constexpr double kTolerance = 1.0;

struct BudgetCore : std::enable_shared_from_this<BudgetCore> {
  const Topology* topo;
  EventLoop* loop;
  BudgetPolicy policy;
  mutable Mutex mu;
  std::vector<Channel> ch;
  std::map<RequestId, Request> pending;  // ordered by id = arrival (FIFO)
  RequestId next_id = 1;
  uint64_t next_grant = 1;
  TimerId timer = kNoTimer;
  Time timer_at = Time::Max();

  bool Active(const Channel& c, size_t k) const {
    return !c.cls[k].queue.empty() || c.cls[k].tokens < -kTolerance;
  }

  // Shares of the classes on `c` if the classes in `active` are active.
  void Shares(const Channel& c, const std::array<bool, kNumClasses>& active,
              std::array<double, kNumClasses>* share) const {
    std::array<double, kNumClasses> w = policy.weights;
    const auto& lat = c.cls[ClassIndex(TrafficClass::kLatency)];
    double backlog = lat.queued_bytes + std::max(0.0, -lat.tokens);
    double pressure = std::min(1.0, backlog / policy.latency_yield_backlog_bytes);
    w[ClassIndex(TrafficClass::kBackground)] *= std::max(policy.background_floor, 1.0 - pressure);
    const size_t ctrl = ClassIndex(TrafficClass::kControl);
    double pool = 0;
    for (size_t k = 0; k < kNumClasses; ++k) {
      if (k != ctrl && active[k]) pool += w[k];
    }
    double ctrl_share = 0;
    if (active[ctrl]) {
      ctrl_share = pool > 0 ? std::max(c.reserve, w[ctrl] / (w[ctrl] + pool)) : 1.0;
    }
    for (size_t k = 0; k < kNumClasses; ++k) {
      if (k == ctrl) {
        (*share)[k] = ctrl_share;
      } else {
        (*share)[k] = active[k] && pool > 0 ? (1.0 - ctrl_share) * w[k] / pool : 0.0;
      }
    }
  }

  void Recompute(Channel& c) {
    std::array<bool, kNumClasses> active;
    for (size_t k = 0; k < kNumClasses; ++k) active[k] = Active(c, k);
    std::array<double, kNumClasses> share;
    Shares(c, active, &share);
    for (size_t k = 0; k < kNumClasses; ++k) c.cls[k].rate = share[k] * c.cap;
    for (size_t k = 0; k < kNumClasses; ++k) {
      if (active[k]) {
        c.cls[k].prospective = c.cls[k].rate;
        continue;
      }
      auto with = active;
      with[k] = true;
      std::array<double, kNumClasses> s2;
      Shares(c, with, &s2);
      c.cls[k].prospective = s2[k] * c.cap;
    }
  }

  // Accrues tokens on `c` up to `now` at the rates set at the last event.
  void Touch(Channel& c, Time now) {
    double dt = ToSeconds(now - c.last);
    c.last = now;
    if (dt <= 0) return;
    double cap_tokens = policy.burst_s * c.cap;
    for (auto& cc : c.cls) {
      if (cc.rate <= 0) continue;
      cc.tokens = std::min(cc.tokens + cc.rate * dt, std::max(cap_tokens, cc.tokens));
    }
  }

  bool Grantable(const Request& r, RequestId id) const {
    size_t k = ClassIndex(r.cls);
    for (ChannelIndex i : r.chans) {
      const auto& cc = ch[i].cls[k];
      if (id != 0 ? (cc.queue.empty() || cc.queue.front() != id) : !cc.queue.empty()) return false;
      if (cc.tokens < -kTolerance) return false;
    }
    return true;
  }

  Grant Debit(const Request& r, Time now) {
    size_t k = ClassIndex(r.cls);
    for (ChannelIndex i : r.chans) {
      auto& cc = ch[i].cls[k];
      cc.tokens -= static_cast<double>(r.bytes);
      cc.granted += r.bytes;
      cc.inflight += r.bytes;
    }
    Grant g;
    g.core_ = weak_from_this();
    g.held_ = true;
    g.id_ = next_grant++;
    g.cls_ = r.cls;
    g.channels_ = r.chans;
    g.bytes_ = r.bytes;
    g.granted_at_ = now;
    return g;
  }

  void Dequeue(RequestId id, const Request& r) {
    size_t k = ClassIndex(r.cls);
    for (ChannelIndex i : r.chans) {
      auto& cc = ch[i].cls[k];
      auto it = std::find(cc.queue.begin(), cc.queue.end(), id);
      if (it != cc.queue.end()) cc.queue.erase(it);
      cc.queued_bytes -= static_cast<double>(r.bytes);
    }
  }

  // Grants every queued request that can go now; returns the callbacks to post.
  void GrantReady(Time now, std::vector<std::pair<LinkBudgets::GrantCallback, Grant>>* out) {
    bool progress = true;
    while (progress) {
      progress = false;
      for (auto it = pending.begin(); it != pending.end();) {
        if (!Grantable(it->second, it->first)) {
          ++it;
          continue;
        }
        Dequeue(it->first, it->second);
        out->emplace_back(std::move(it->second.done), Debit(it->second, now));
        for (ChannelIndex i : it->second.chans) Recompute(ch[i]);
        it = pending.erase(it);
        progress = true;
      }
    }
  }

  // Earliest time something changes: a queued head can be granted, or a debt is paid off
  // (the class goes idle and its share must be lent out).
  Time NextWake(Time now) const {
    double best = std::numeric_limits<double>::infinity();
    for (const auto& c : ch) {
      for (size_t k = 0; k < kNumClasses; ++k) {
        const auto& cc = c.cls[k];
        if (cc.tokens < -kTolerance && cc.rate > 0) best = std::min(best, -cc.tokens / cc.rate);
      }
    }
    if (!std::isfinite(best)) return Time::Max();
    return now + Duration(static_cast<int64_t>(std::ceil(best * 1e9)) + 1);
  }

  void Rearm(Time now) {
    Time wake = NextWake(now);
    if (wake == timer_at) return;
    if (timer != kNoTimer) loop->Cancel(timer);
    timer = kNoTimer;
    timer_at = wake;
    if (wake == Time::Max()) return;
    std::weak_ptr<BudgetCore> self = weak_from_this();
    timer = loop->PostAt(wake, [self] {
      if (auto core = self.lock()) core->OnTimer();
    });
  }

  void TouchAll(Time now) {
    for (auto& c : ch) {
      Touch(c, now);
      Recompute(c);
    }
  }

  // Runs after any state change: accrue, grant what can go, re-arm, deliver.
  void Process() {
    std::vector<std::pair<LinkBudgets::GrantCallback, Grant>> ready;
    {
      MutexLock lock(&mu);
      Time now = loop->Now();
      TouchAll(now);
      GrantReady(now, &ready);
      Rearm(now);
    }
    Deliver(std::move(ready));
  }

  void OnTimer() {
    {
      MutexLock lock(&mu);
      timer = kNoTimer;
      timer_at = Time::Max();
    }
    Process();
  }

  void Deliver(std::vector<std::pair<LinkBudgets::GrantCallback, Grant>> ready) {
    for (auto& [done, grant] : ready) {
      auto g = std::make_shared<Grant>(std::move(grant));
      loop->Post([done = std::move(done), g] { done(std::move(*g)); });
    }
  }

  void Release(const Grant& g) {
    MutexLock lock(&mu);
    size_t k = ClassIndex(g.cls_);
    for (ChannelIndex i : g.channels_) ch[i].cls[k].inflight -= g.bytes_;
  }
};

}  // namespace internal

Grant::Grant(Grant&& o) noexcept { *this = std::move(o); }

Grant& Grant::operator=(Grant&& o) noexcept {
  if (this != &o) {
    Release();
    core_ = std::move(o.core_);
    held_ = o.held_;
    id_ = o.id_;
    cls_ = o.cls_;
    channels_ = std::move(o.channels_);
    bytes_ = o.bytes_;
    granted_at_ = o.granted_at_;
    o.held_ = false;
    o.core_.reset();
  }
  return *this;
}

Grant::~Grant() { Release(); }

void Grant::Release() {
  if (!held_) return;
  held_ = false;
  if (auto core = core_.lock()) core->Release(*this);
  core_.reset();
}

LinkBudgets::LinkBudgets(const Topology& topo, EventLoop* loop, BudgetPolicy policy)
    : topo_(topo), policy_(policy), core_(std::make_shared<internal::BudgetCore>()) {
  core_->topo = &topo;
  core_->loop = loop;
  core_->policy = policy;
  core_->ch.resize(topo.num_channels());
  for (LinkIndex i = 0; i < topo.num_links(); ++i) {
    const Link& l = topo.link(i);
    double cap =
        l.calibration ? l.calibration->model.bandwidth() : l.bandwidth_bytes_per_s.value_or(0.0);
    auto by_kind = policy.control_reserve_by_link_kind.find(std::string(LinkKindName(l.kind)));
    const double reserve = by_kind == policy.control_reserve_by_link_kind.end()
                               ? policy.control_reserve
                               : by_kind->second;
    for (int dir = 0; dir < 2; ++dir) {
      auto& c = core_->ch[i * 2 + dir];
      c.cap = (dir == 1 && !l.duplex) ? 0.0 : cap;
      c.reserve = reserve;
      c.last = loop->Now();
      core_->Recompute(c);
    }
  }
}

LinkBudgets::~LinkBudgets() {
  MutexLock lock(&core_->mu);
  if (core_->timer != kNoTimer) core_->loop->Cancel(core_->timer);
  core_->timer = kNoTimer;
}

namespace {

Status CheckRequest(const Topology& topo, const Path& path, uint64_t bytes,
                    const std::vector<internal::Channel>& ch) {
  if (bytes == 0) return Status::InvalidArgument("grant request for 0 bytes");
  if (path.hops.empty()) {
    return Status::InvalidArgument("grant request on an empty path (src == dst needs no link)");
  }
  for (const Hop& h : path.hops) {
    if (h.link >= topo.num_links())
      return Status::InvalidArgument("grant path has a bad link index");
    if (ch[h.channel()].cap <= 0) {
      const Link& l = topo.link(h.link);
      if (h.reverse && !l.duplex) {
        return Status::InvalidArgument("link '" + l.id +
                                       "' is directed and cannot be crossed in reverse");
      }
      return Status::FailedPrecondition("link '" + l.id +
                                        "': bandwidth unknown (not discovered, configured or "
                                        "calibrated); it cannot be budgeted");
    }
  }
  return Status::OK();
}

std::vector<ChannelIndex> Channels(const Path& path) {
  std::vector<ChannelIndex> out;
  out.reserve(path.hops.size());
  for (const Hop& h : path.hops) out.push_back(h.channel());
  return out;
}

}  // namespace

Result<Grant> LinkBudgets::TryAcquire(const Path& path, TrafficClass cls, uint64_t bytes) {
  MutexLock lock(&core_->mu);
  SY_RETURN_IF_ERROR(CheckRequest(topo_, path, bytes, core_->ch));
  Time now = core_->loop->Now();
  internal::Request r{cls, Channels(path), bytes, nullptr};
  for (ChannelIndex i : r.chans) core_->Touch(core_->ch[i], now);
  if (!core_->Grantable(r, 0)) {
    for (ChannelIndex i : r.chans) {
      const auto& cc = core_->ch[i].cls[ClassIndex(cls)];
      if (!cc.queue.empty() || cc.tokens < -internal::kTolerance) {
        return Status::ResourceExhausted(
            "class " + std::string(ClassName(cls)) + " is over its budget on link '" +
            topo_.link(i / 2).id + "' (" + std::to_string(cc.queue.size()) + " queued, " +
            std::to_string(static_cast<uint64_t>(std::max(0.0, -cc.tokens))) + " bytes owed)");
      }
    }
  }
  Grant g = core_->Debit(r, now);
  for (ChannelIndex i : r.chans) core_->Recompute(core_->ch[i]);
  core_->Rearm(now);
  return g;
}

RequestId LinkBudgets::Acquire(const Path& path, TrafficClass cls, uint64_t bytes,
                               GrantCallback done) {
  RequestId id;
  {
    MutexLock lock(&core_->mu);
    Status st = CheckRequest(topo_, path, bytes, core_->ch);
    if (!st.ok()) {
      core_->loop->Post([done = std::move(done), st] { done(st); });
      return 0;
    }
    id = core_->next_id++;
    internal::Request r{cls, Channels(path), bytes, std::move(done)};
    Time now = core_->loop->Now();
    for (ChannelIndex i : r.chans) {
      core_->Touch(core_->ch[i], now);
      auto& cc = core_->ch[i].cls[ClassIndex(cls)];
      cc.queue.push_back(id);
      cc.queued_bytes += static_cast<double>(bytes);
      core_->Recompute(core_->ch[i]);
    }
    core_->pending.emplace(id, std::move(r));
  }
  core_->Process();
  return id;
}

bool LinkBudgets::Cancel(RequestId id) {
  GrantCallback done;
  {
    MutexLock lock(&core_->mu);
    auto it = core_->pending.find(id);
    if (it == core_->pending.end()) return false;
    core_->Dequeue(id, it->second);
    done = std::move(it->second.done);
    core_->pending.erase(it);
  }
  core_->loop->Post([done = std::move(done), id] {
    done(Status::Cancelled("grant request " + std::to_string(id) + " cancelled"));
  });
  core_->Process();
  return true;
}

ClassState LinkBudgets::State(ChannelIndex ch, TrafficClass cls) const {
  MutexLock lock(&core_->mu);
  const auto& c = core_->ch.at(ch);
  const auto& cc = c.cls[ClassIndex(cls)];
  double tokens = cc.tokens + cc.rate * ToSeconds(core_->loop->Now() - c.last);
  ClassState s;
  s.rate_bytes_per_s = cc.rate;
  s.prospective_rate = cc.prospective;
  s.backlog_bytes = cc.queued_bytes + std::max(0.0, -tokens);
  s.granted_bytes = cc.granted;
  s.inflight_bytes = cc.inflight;
  s.queued = static_cast<uint32_t>(cc.queue.size());
  return s;
}

void LinkBudgets::Snapshot(const Path& path, TrafficClass cls, double* rates,
                           double* backlog) const {
  MutexLock lock(&core_->mu);
  Time now = core_->loop->Now();
  size_t k = ClassIndex(cls);
  for (size_t i = 0; i < path.hops.size(); ++i) {
    const auto& c = core_->ch[path.hops[i].channel()];
    const auto& cc = c.cls[k];
    double tokens = cc.tokens + cc.rate * ToSeconds(now - c.last);
    rates[i] = cc.prospective;
    backlog[i] = cc.queued_bytes + std::max(0.0, -tokens);
  }
}

}  // namespace switchyard::net_budget
