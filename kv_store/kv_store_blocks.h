// KvStoreBlocks: the block memory behind a KV store (KvStoreServer, `switchyard worker`): its
// block table.
//
// It holds committed KV blocks keyed by block id, each with its owner (workflow id,
// context id), model epoch and generation, and enforces the receiver half of the commit
// rule (docs/design.md invariant 1): a put is committed only after its length and checksum
// verify, its communicator and model epochs are current, no block id belongs to another
// owner and every generation is newer than what is committed. Until Commit the bytes
// live in a staging buffer nobody can read (invariant 2: nothing partial is exposed).
// A model epoch change drops every block of older epochs (invariant 4). Capacity covers
// committed bytes plus reservations for puts still arriving.
//
// Ownership: the store owns the block bytes (shared buffers, so that a get in flight
// keeps its source alive until its send completes).
// Thread-safety: not thread-safe; its user (KvStoreServer) serialises the calls.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kv_store/kv_store_protocol.h"

namespace switchyard::kv_store {

// An uninitialised byte buffer (staging for received data; no zero-fill).
struct ByteBuffer {
  explicit ByteBuffer(uint64_t n) : data(new uint8_t[n]), size(n) {}
  std::unique_ptr<uint8_t[]> data;
  uint64_t size;
};
using SharedBuffer = std::shared_ptr<ByteBuffer>;

struct StoredBlock {
  uint64_t block_id = 0;
  std::string workflow_id;
  std::string context_id;
  uint64_t model_epoch = 0;
  uint64_t generation = 0;
  SharedBuffer buffer;  // shared with the put that brought it
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t checksum = 0;  // XXH3-64 of the bytes, verified when the put was committed
  const uint8_t* data() const { return buffer->data.get() + offset; }
};

class KvStoreBlocks {
 public:
  KvStoreBlocks(uint64_t capacity_bytes, uint64_t communicator_epoch);

  uint64_t capacity_bytes() const { return capacity_; }
  uint64_t used_bytes() const { return committed_ + reserved_; }
  uint64_t committed_bytes() const { return committed_; }
  size_t block_count() const { return blocks_.size(); }
  uint64_t model_epoch() const { return model_epoch_; }
  uint64_t communicator_epoch() const { return communicator_epoch_; }

  // Sets the model epoch; blocks of any other epoch are dropped. Returns how many.
  size_t SetModelEpoch(uint64_t epoch);

  // Reserves staging space for a put; false when it would exceed the capacity.
  bool Reserve(uint64_t bytes);
  void Unreserve(uint64_t bytes);

  // Epochs, owner and generation of a put header against the table.
  RejectReason CheckIdentity(const BlockHeader& h) const;
  // Full receiver validation of a received put (length, checksum, identity). On success
  // commits every block (replacing older generations) and releases the reservation of
  // h.length either way. `validated` tells whether validation passed.
  RejectReason ValidateAndCommit(const BlockHeader& h, SharedBuffer data, uint64_t received,
                                 bool* validated);
  // ValidateAndCommit with the length and checksum check already done: `checked` is what
  // CheckLengthAndChecksum said of `data` (so that a caller can hash outside the lock it
  // keeps this store under). Checks identity, commits, releases the reservation.
  RejectReason CommitChecked(const BlockHeader& h, SharedBuffer data, RejectReason checked,
                             bool* validated);

  // The committed blocks a get asks for, in order; a reason when any is missing or its
  // owner, epoch or generation differ (stale blocks are never served).
  RejectReason Lookup(const GetRequest& g, std::vector<StoredBlock>* out) const;

  const StoredBlock* Find(uint64_t block_id) const;

  // Drops the committed blocks `g` names (communicator epoch and owner must match; ids
  // not present are skipped: freeing is idempotent). Sets *freed to how many went.
  RejectReason Free(const GetRequest& g, size_t* freed);

 private:
  uint64_t capacity_;
  uint64_t communicator_epoch_;
  uint64_t model_epoch_ = 0;
  uint64_t committed_ = 0;
  uint64_t reserved_ = 0;
  std::map<uint64_t, StoredBlock> blocks_;
};

}  // namespace switchyard::kv_store
