// Registration of the always-available implementations (host memory, RocksDB, local and
// disk movers). Called once by the registries' Global(); implementations compiled only in
// some builds (CUDA) register themselves with static registrars instead.
#pragma once

namespace switchyard::kv_tiers {
class TierRegistry;
class MoverRegistry;
namespace internal {
void RegisterBuiltinTiers(TierRegistry& registry);
void RegisterBuiltinMovers(MoverRegistry& registry);
}  // namespace internal
}  // namespace switchyard::kv_tiers
