// BlockManager internals shared by block_manager.cc and block_manager_moves.cc.
#pragma once

#include <optional>
#include <string>

#include "kv_tiers/block_manager.h"

namespace switchyard::kv_tiers {

struct BlockManager::Record {
  BlockId id;
  v1::KvBlockMeta meta;  // owner, index, generation, epoch, checksum, state
  Tier* tier = nullptr;
  Extent extent;
  int readers = 0;     // live ReadLeases
  int move_pins = 0;   // in-flight moves reading (source) or writing (destination) it
  int refs = 1;        // users of a shared prefix block (1 for a private block)
  bool stale = false;  // invalidated while pinned: freed when the last pin goes
  // BlockChecksum of the bytes as WriteBytes stored them (the tier hashed them as it copied);
  // cleared by anything else that may write them (WritableBytes).
  std::optional<uint64_t> written_checksum;

  v1::BlockState state() const { return meta.state(); }
  bool pinned() const { return readers > 0 || move_pins > 0; }
  std::string Name() const { return "block " + std::to_string(id.value); }
};

struct BlockManager::InFlight {
  TransferId id;
  BlockId src;
  BlockId dst;
  uint64_t checksum = 0;  // the source's, at post time
  bool demote = false;
  bool cancelled = false;
  TransferCallback done;
  MoveHandle handle;
};

// Whether `from -> to` is an edge of the block state machine.
bool AllowedTransition(v1::BlockState from, v1::BlockState to);

}  // namespace switchyard::kv_tiers
