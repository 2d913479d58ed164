#include "kv_tiers/mover.h"

#include <algorithm>

#include "base/mutex.h"
#include "kv_tiers/internal/builtin.h"

namespace switchyard::kv_tiers {

uint64_t MoveRequest::total_bytes() const {
  uint64_t n = 0;
  for (const auto& s : segments) n += s.bytes;
  return n;
}

bool MoveState::Complete(Status status) {
  MutexLock lock(&mu_);
  if (done_) return false;
  done_ = true;
  status_ = std::move(status);
  // Notify under the mutex: a waiter that saw done_ == false is already waiting.
  cv_.SignalAll();
  return true;
}

bool MoveState::done() const {
  MutexLock lock(&mu_);
  return done_;
}

Status MoveState::status() const {
  MutexLock lock(&mu_);
  return status_;
}

void MoveState::Wait() const {
  MutexLock lock(&mu_);
  while (!done_) cv_.Wait(&mu_);
}

bool MoveState::WaitFor(Duration timeout) const {
  MutexLock lock(&mu_);
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!done_ && cv_.WaitUntil(&mu_, end)) {
  }
  return done_;
}

MoveHandle::~MoveHandle() {
  if (state_ && !state_->done()) {
    state_->RequestCancel();
    state_->Wait();
  }
}

MoveHandle& MoveHandle::operator=(MoveHandle&& other) noexcept {
  if (this != &other) {
    MoveHandle old(std::move(*this));  // cancels and waits for what we held
    state_ = std::move(other.state_);
  }
  return *this;
}

Status MoveHandle::wait() {
  if (!state_) return Status::FailedPrecondition("move handle: empty handle");
  state_->Wait();
  return state_->status();
}

std::optional<Status> MoveHandle::wait_for(Duration timeout) {
  if (!state_) return Status::FailedPrecondition("move handle: empty handle");
  if (!state_->WaitFor(timeout)) return std::nullopt;
  return state_->status();
}

void MoveHandle::Cancel() {
  if (state_) state_->RequestCancel();
}

void MoverSet::Add(std::shared_ptr<Mover> mover, int preference) {
  movers_.emplace_back(preference, std::move(mover));
  std::stable_sort(movers_.begin(), movers_.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
}

Result<Mover*> MoverSet::Select(const Tier& src, const Tier& dst) const {
  for (const auto& [pref, mover] : movers_) {
    if (mover->Supports(src, dst)) return mover.get();
  }
  return Status::NotSupported("no mover supports " + src.name() + " -> " + dst.name());
}

std::vector<Mover*> MoverSet::movers() const {
  std::vector<Mover*> out;
  for (const auto& [pref, mover] : movers_) out.push_back(mover.get());
  return out;
}

MoverRegistry& MoverRegistry::Global() {
  static MoverRegistry* registry = [] {
    auto* r = new MoverRegistry();
    internal::RegisterBuiltinMovers(*r);
    return r;
  }();
  return *registry;
}

void MoverRegistry::Register(MoverImplementation impl) {
  MutexLock lock(&mu_);
  impls_.push_back(std::move(impl));
}

std::vector<MoverImplementation> MoverRegistry::Implementations() const {
  MutexLock lock(&mu_);
  return impls_;
}

Result<std::unique_ptr<Mover>> MoverRegistry::Create(const std::string& name,
                                                     const MoverEnv& env) const {
  if (env.loop == nullptr) return Status::InvalidArgument("mover " + name + ": env.loop is null");
  for (const auto& impl : Implementations()) {
    if (impl.name != name) continue;
    Status probe = impl.probe ? impl.probe() : Status::OK();
    if (!probe.ok()) return probe.Annotate("mover " + name);
    return impl.factory(env);
  }
  return Status::NotFound("mover registry: no mover named '" + name + "'");
}

Result<MoverSet> MoverRegistry::CreateAvailable(const MoverEnv& env) const {
  MoverSet set;
  for (const auto& impl : Implementations()) {
    if (impl.probe && !impl.probe().ok()) continue;
    auto mover = Create(impl.name, env);
    if (!mover.ok()) return mover.status();
    set.Add(std::shared_ptr<Mover>(std::move(mover).value()), impl.preference);
  }
  return set;
}

MoverRegistrar::MoverRegistrar(MoverImplementation impl) {
  MoverRegistry::Global().Register(std::move(impl));
}

}  // namespace switchyard::kv_tiers
