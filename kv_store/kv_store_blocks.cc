#include "kv_store/kv_store_blocks.h"

namespace switchyard::kv_store {

KvStoreBlocks::KvStoreBlocks(uint64_t capacity_bytes, uint64_t communicator_epoch)
    : capacity_(capacity_bytes), communicator_epoch_(communicator_epoch) {}

size_t KvStoreBlocks::SetModelEpoch(uint64_t epoch) {
  model_epoch_ = epoch;
  size_t dropped = 0;
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    if (it->second.model_epoch != epoch) {
      committed_ -= it->second.bytes;
      it = blocks_.erase(it);
      ++dropped;
    } else {
      ++it;
    }
  }
  return dropped;
}

bool KvStoreBlocks::Reserve(uint64_t bytes) {
  if (bytes > capacity_ || used_bytes() > capacity_ - bytes) return false;
  reserved_ += bytes;
  return true;
}

void KvStoreBlocks::Unreserve(uint64_t bytes) { reserved_ -= std::min(bytes, reserved_); }

RejectReason KvStoreBlocks::CheckIdentity(const BlockHeader& h) const {
  if (h.communicator_epoch != communicator_epoch_) return RejectReason::kStaleCommEpoch;
  if (h.model_epoch != model_epoch_) return RejectReason::kStaleModelEpoch;
  if (h.blocks.empty()) return RejectReason::kMalformed;
  for (const auto& b : h.blocks) {
    const StoredBlock* s = Find(b.block_id);
    if (s == nullptr) continue;
    if (s->workflow_id != h.workflow_id || s->context_id != h.context_id) {
      return RejectReason::kWrongOwner;
    }
    if (h.generation <= s->generation) return RejectReason::kStaleGeneration;
  }
  return RejectReason::kNone;
}

RejectReason KvStoreBlocks::ValidateAndCommit(const BlockHeader& h, SharedBuffer data,
                                              uint64_t received, bool* validated) {
  if (!data || data->size < received) {
    Unreserve(h.length);
    *validated = false;
    return RejectReason::kShortLength;
  }
  return CommitChecked(h, data, CheckLengthAndChecksum(h, received, data->data.get()), validated);
}

RejectReason KvStoreBlocks::CommitChecked(const BlockHeader& h, SharedBuffer data,
                                          RejectReason checked, bool* validated) {
  Unreserve(h.length);
  *validated = false;
  RejectReason r = checked;
  if (r == RejectReason::kNone) r = CheckIdentity(h);
  if (r != RejectReason::kNone) return r;
  *validated = true;
  uint64_t offset = 0;
  for (const auto& b : h.blocks) {
    auto it = blocks_.find(b.block_id);
    if (it != blocks_.end()) {
      committed_ -= it->second.bytes;
      blocks_.erase(it);
    }
    StoredBlock s{b.block_id, h.workflow_id, h.context_id, h.model_epoch, h.generation,
                  data,       offset,        b.bytes,      b.checksum};
    blocks_.emplace(b.block_id, std::move(s));
    committed_ += b.bytes;
    offset += b.bytes;
  }
  return RejectReason::kNone;
}

RejectReason KvStoreBlocks::Lookup(const GetRequest& g, std::vector<StoredBlock>* out) const {
  if (g.communicator_epoch != communicator_epoch_) return RejectReason::kStaleCommEpoch;
  if (g.model_epoch != model_epoch_) return RejectReason::kStaleModelEpoch;
  if (g.block_ids.empty()) return RejectReason::kMalformed;
  out->clear();
  for (uint64_t id : g.block_ids) {
    const StoredBlock* s = Find(id);
    if (s == nullptr) return RejectReason::kNotFound;
    if (s->workflow_id != g.workflow_id || s->context_id != g.context_id) {
      return RejectReason::kWrongOwner;
    }
    if (s->generation != g.generation) return RejectReason::kStaleGeneration;
    out->push_back(*s);
  }
  return RejectReason::kNone;
}

const StoredBlock* KvStoreBlocks::Find(uint64_t block_id) const {
  auto it = blocks_.find(block_id);
  return it == blocks_.end() ? nullptr : &it->second;
}

RejectReason KvStoreBlocks::Free(const GetRequest& g, size_t* freed) {
  *freed = 0;
  if (g.communicator_epoch != communicator_epoch_) return RejectReason::kStaleCommEpoch;
  for (uint64_t id : g.block_ids) {
    auto it = blocks_.find(id);
    if (it == blocks_.end()) continue;
    if (it->second.workflow_id != g.workflow_id || it->second.context_id != g.context_id) {
      return RejectReason::kWrongOwner;
    }
  }
  for (uint64_t id : g.block_ids) {
    auto it = blocks_.find(id);
    if (it == blocks_.end()) continue;
    committed_ -= it->second.bytes;
    blocks_.erase(it);
    ++*freed;
  }
  return RejectReason::kNone;
}

}  // namespace switchyard::kv_store
