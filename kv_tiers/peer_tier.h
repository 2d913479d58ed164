// PeerTier: the interface of a tier that lives on another node (host or HBM of a peer),
// reached through a transport (kv_tiers/remote's KvStoreTier implements it over a KV store,
// kv_store/, on the byte transports of transport/: UCX; NCCL between GPU
// ranks). Its kind() is TIER_PEER and capabilities().remote is true. Block I/O
// (Write/Read) posts to the peer and returns when the peer has acknowledged the data;
// moves into a peer tier go through the transport's Mover, selected by capability.
//
// Ownership: the transport owns connections; the tier owns nothing on the peer beyond
// the extents it allocated there (returned with Free()).
// Thread-safety: as Tier.
#pragma once

#include <string>

#include "base/ids.h"
#include "kv_tiers/tier.h"

namespace switchyard::kv_tiers {

class PeerTier : public Tier {
 public:
  using Tier::Tier;
  TierKind kind() const override { return v1::TIER_PEER; }
  // The peer this tier reaches, and its address in transport terms ("tcp://10.0.0.2:...").
  virtual PeerId peer() const = 0;
  virtual std::string endpoint() const = 0;
  // The memory kind on the peer (TIER_HOST or TIER_HBM).
  virtual TierKind remote_kind() const = 0;
};

}  // namespace switchyard::kv_tiers
