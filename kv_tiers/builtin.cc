#include "kv_tiers/internal/builtin.h"
#include "kv_tiers/arena_tier.h"
#include "kv_tiers/disk_tier.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/tier_registry.h"

namespace switchyard::kv_tiers::internal {
namespace {

template <typename T>
Result<std::unique_ptr<Tier>> Upcast(Result<std::unique_ptr<T>> r) {
  if (!r.ok()) return r.status();
  return std::unique_ptr<Tier>(std::move(r).value());
}

}  // namespace

void RegisterBuiltinTiers(TierRegistry& registry) {
  registry.Register({"hbm", "emulated-hbm", 0, nullptr, [](const TierOptions& o) {
                       return Upcast(ArenaTier::Create(o, EmulatedHbmBackend()));
                     }});
  registry.Register({"host", "host", 0, nullptr, [](const TierOptions& o) {
                       return Upcast(ArenaTier::Create(o, HostBackend()));
                     }});
  registry.Register({"disk", "rocksdb", 0, nullptr,
                     [](const TierOptions& o) { return Upcast(DiskTier::Open(o)); }});
}

void RegisterBuiltinMovers(MoverRegistry& registry) {
  registry.Register(
      {"local", 10, nullptr, [](const MoverEnv& env) -> Result<std::unique_ptr<Mover>> {
         return std::unique_ptr<Mover>(new LocalMover(env));
       }});
  registry.Register({"disk", 5, nullptr, [](const MoverEnv& env) -> Result<std::unique_ptr<Mover>> {
                       return std::unique_ptr<Mover>(new DiskMover(env));
                     }});
  registry.Register({"peer", 4, nullptr, [](const MoverEnv& env) -> Result<std::unique_ptr<Mover>> {
                       return std::unique_ptr<Mover>(new PeerMover(env));
                     }});
}

}  // namespace switchyard::kv_tiers::internal
