#include "kv_tiers/tier_registry.h"

#include <algorithm>

#include "base/logging.h"
#include "base/mutex.h"
#include "kv_tiers/internal/builtin.h"

namespace switchyard::kv_tiers {

TierRegistry& TierRegistry::Global() {
  static TierRegistry* registry = [] {
    auto* r = new TierRegistry();
    internal::RegisterBuiltinTiers(*r);
    return r;
  }();
  return *registry;
}

void TierRegistry::Register(TierImplementation impl) {
  MutexLock lock(&mu_);
  impls_.push_back(std::move(impl));
}

std::vector<TierImplementation> TierRegistry::Implementations() const {
  MutexLock lock(&mu_);
  return impls_;
}

Status TierRegistry::Probe(const std::string& name) const {
  for (const auto& impl : Implementations()) {
    if (impl.name == name) return impl.probe ? impl.probe() : Status::OK();
  }
  return Status::NotFound("tier registry: no implementation named '" + name + "'");
}

Result<std::unique_ptr<Tier>> TierRegistry::Create(const std::string& kind,
                                                   const TierOptions& options) {
  std::vector<TierImplementation> impls;
  for (auto& impl : Implementations()) {
    if (impl.kind == kind) impls.push_back(impl);
  }
  if (impls.empty()) {
    return Status::NotFound("tier registry: no implementation of tier kind '" + kind + "'");
  }
  std::stable_sort(impls.begin(), impls.end(),
                   [](const auto& a, const auto& b) { return a.preference > b.preference; });
  std::string reasons;
  for (const auto& impl : impls) {
    Status probe = impl.probe ? impl.probe() : Status::OK();
    if (!probe.ok()) {
      reasons += " " + impl.name + ": " + probe.message() + ";";
      continue;
    }
    if (!reasons.empty()) {
      Log(LogLevel::kInfo, "kv_tiers: tier implementation chosen after unavailable ones",
          LogKeys().With("kind", kind).With("chosen", impl.name).With("skipped", reasons));
    }
    return impl.factory(options);
  }
  return Status::Unavailable(
      "tier registry: no available implementation of '" + kind + "':" + reasons, ErrorScope::kTier);
}

Result<std::unique_ptr<Tier>> TierRegistry::CreateNamed(const std::string& name,
                                                        const TierOptions& options) {
  for (const auto& impl : Implementations()) {
    if (impl.name != name) continue;
    Status probe = impl.probe ? impl.probe() : Status::OK();
    if (!probe.ok()) return probe.Annotate("tier " + name);
    return impl.factory(options);
  }
  return Status::NotFound("tier registry: no implementation named '" + name + "'");
}

TierRegistrar::TierRegistrar(TierImplementation impl) {
  TierRegistry::Global().Register(std::move(impl));
}

}  // namespace switchyard::kv_tiers
