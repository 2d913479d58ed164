// OffloadCache (offload_cache.h).
#include "cpu_engine/offload_cache.h"

#include <cstring>

namespace switchyard::cpu_engine {

OffloadCache::OffloadCache(uint64_t block_bytes, uint64_t capacity_bytes)
    : block_bytes_(block_bytes),
      capacity_(block_bytes == 0 || capacity_bytes == 0
                    ? 0
                    : std::max<uint64_t>(1, capacity_bytes / block_bytes)),
      bytes_(capacity_ ? std::make_unique<std::byte[]>(capacity_ * block_bytes) : nullptr) {
  free_.reserve(capacity_);
  for (uint64_t s = capacity_; s > 0; --s) free_.push_back(static_cast<size_t>(s - 1));
}

void OffloadCache::Store(uint64_t hash, const void* data) {
  if (capacity_ == 0 || hash == 0) return;
  if (auto it = index_.find(hash); it != index_.end()) {  // same hash, same bytes
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  if (free_.empty()) {  // the least recently used block makes room
    const Entry victim = lru_.back();
    lru_.pop_back();
    index_.erase(victim.hash);
    free_.push_back(victim.slot);
    ++evicted_;
  }
  const size_t slot = free_.back();
  free_.pop_back();
  std::memcpy(bytes_.get() + slot * block_bytes_, data, block_bytes_);
  lru_.push_front(Entry{hash, slot});
  index_[hash] = lru_.begin();
  ++stored_;
}

const void* OffloadCache::Load(uint64_t hash) {
  auto it = index_.find(hash);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  ++loaded_;
  return bytes_.get() + it->second->slot * block_bytes_;
}

void OffloadCache::Clear() {
  for (const Entry& e : lru_) free_.push_back(e.slot);
  lru_.clear();
  index_.clear();
}

}  // namespace switchyard::cpu_engine
