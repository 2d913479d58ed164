// TierRegistry: creates tiers by kind ("hbm", "host", "disk", "peer") from whichever
// implementations registered themselves, by capability, with no #ifdef chains.
//
// Each implementation registers (kind, implementation name, preference, probe, factory).
// Create(kind) tries the implementations of that kind in descending preference and uses
// the first whose probe says it is available. CUDA implementations (compiled only when
// SWITCHYARD_WITH_CUDA is ON) register with a high preference and probe
// cudaGetDeviceCount(); without a device they report Unavailable ("no CUDA device:
// cudaGetDeviceCount returned 0") and the host implementations ("emulated-hbm", "host")
// are chosen, with a log line naming the emulated arena.
//
// Thread-safety: registration and creation are thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "kv_tiers/tier.h"

namespace switchyard::kv_tiers {

struct TierImplementation {
  std::string kind;  // "hbm", "host", "disk", "peer"
  std::string name;  // "cuda-hbm", "emulated-hbm", "pinned-host", "host", "rocksdb"
  int preference = 0;
  // OK when the implementation can run here (e.g. a CUDA device answers).
  std::function<Status()> probe;
  std::function<Result<std::unique_ptr<Tier>>(const TierOptions&)> factory;
};

class TierRegistry {
 public:
  // The process-wide registry, with the built-in implementations registered.
  static TierRegistry& Global();

  void Register(TierImplementation impl);
  // The best available implementation of `kind`; NotFound for an unknown kind,
  // Unavailable (with every probe's reason) when none is available.
  Result<std::unique_ptr<Tier>> Create(const std::string& kind, const TierOptions& options);
  // Creates the implementation named `name` regardless of preference (tests, benches).
  Result<std::unique_ptr<Tier>> CreateNamed(const std::string& name, const TierOptions& options);
  // Registered implementations (in registration order), for contract tests.
  std::vector<TierImplementation> Implementations() const;
  // Probe result of the implementation named `name` (NotFound when unknown).
  Status Probe(const std::string& name) const;

 private:
  mutable Mutex mu_;
  std::vector<TierImplementation> impls_ GUARDED_BY(mu_);
};

// Static-registration helper: `static TierRegistrar r({...});` in an implementation file.
struct TierRegistrar {
  explicit TierRegistrar(TierImplementation impl);
};

}  // namespace switchyard::kv_tiers
