// The block state machine, allocation, local writes, reads and invalidation. Moves and
// recovery are in block_manager_moves.cc.
#include "kv_tiers/block_manager.h"

#include <vector>

#include "base/logging.h"
#include "kv_tiers/internal/block_records.h"
#include "kv_tiers/prefix_hash.h"

namespace switchyard::kv_tiers {

bool AllowedTransition(v1::BlockState from, v1::BlockState to) {
  using S = v1::BlockState;
  switch (from) {
    case v1::BLOCK_FREE:
      return to == v1::BLOCK_ALLOCATED;
    case v1::BLOCK_ALLOCATED:
      return to == v1::BLOCK_WRITING || to == v1::BLOCK_TRANSFERRING || to == v1::BLOCK_EVICTING;
    case v1::BLOCK_WRITING:
      return to == v1::BLOCK_VALIDATED || to == v1::BLOCK_ALLOCATED || to == v1::BLOCK_EVICTING;
    case v1::BLOCK_TRANSFERRING:
      return to == v1::BLOCK_VALIDATED || to == v1::BLOCK_EVICTING;
    case v1::BLOCK_VALIDATED:
      return to == v1::BLOCK_COMMITTED || to == v1::BLOCK_EVICTING;
    case v1::BLOCK_COMMITTED:
      return to == v1::BLOCK_DEMOTING || to == v1::BLOCK_EVICTING || to == v1::BLOCK_WRITING;
    case v1::BLOCK_DEMOTING:
      return to == v1::BLOCK_COMMITTED || to == v1::BLOCK_EVICTING;
    case v1::BLOCK_EVICTING:
      return to == v1::BLOCK_FREE;
    default:
      (void)S{};
      return false;
  }
}

// --- ReadLease ---------------------------------------------------------------------------

ReadLease::ReadLease(ReadLease&& o) noexcept
    : manager_(o.manager_), id_(o.id_), data_(o.data_), bytes_(o.bytes_) {
  o.manager_ = nullptr;
}

ReadLease& ReadLease::operator=(ReadLease&& o) noexcept {
  if (this != &o) {
    Release();
    manager_ = o.manager_;
    id_ = o.id_;
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.manager_ = nullptr;
  }
  return *this;
}

void ReadLease::Release() {
  if (manager_ != nullptr) manager_->Unpin(id_);
  manager_ = nullptr;
}

Status ReadLease::CopyTo(void* dst, uint64_t bytes) const {
  if (manager_ == nullptr) return Status::FailedPrecondition("read lease: released");
  auto* r = manager_->Find(id_);
  if (r == nullptr) return Status::NotFound("read lease: block gone");
  if (bytes > r->meta.bytes()) return Status::InvalidArgument("read lease: copy past the block");
  BlockRead read{r->extent, dst, bytes};
  return r->tier->Read(std::span<const BlockRead>(&read, 1));
}

// --- construction ------------------------------------------------------------------------

BlockManager::BlockManager(KvLayout layout, EventLoop* loop, MoverSet movers,
                           std::unique_ptr<EvictionPolicy> eviction, BlockManagerOptions options)
    : layout_(std::move(layout)),
      loop_(loop),
      movers_(std::move(movers)),
      eviction_(eviction ? std::move(eviction) : std::make_unique<LruEvictionPolicy>()),
      options_(options),
      alive_(std::make_shared<bool>(true)) {}

BlockManager::~BlockManager() {
  alive_.reset();  // completions posted from now on are dropped
  for (auto& [tid, f] : in_flight_) f->handle.Cancel();
  in_flight_.clear();  // each handle waits for its move to stop touching buffers
  // Memory extents go back to their tiers; blocks on persistent tiers stay where they
  // are, for Recover() in the next process (their metadata was persisted at commit).
  for (auto& [id, r] : blocks_) {
    if (!r->tier->capabilities().persistent) (void)r->tier->Free(r->extent);
  }
}

Status BlockManager::AddTier(Tier* tier) {
  if (tier == nullptr) return Status::InvalidArgument("block manager: null tier");
  if (!tiers_.emplace(tier->name(), tier).second) {
    return Status::AlreadyExists("block manager: tier '" + tier->name() + "' already added");
  }
  return Status::OK();
}

Tier* BlockManager::tier(const std::string& name) const {
  auto it = tiers_.find(name);
  return it == tiers_.end() ? nullptr : it->second;
}

BlockManager::Record* BlockManager::Find(BlockId id) const {
  auto it = blocks_.find(id);
  return it == blocks_.end() ? nullptr : it->second.get();
}

Status BlockManager::Transition(Record& r, v1::BlockState to) {
  if (!AllowedTransition(r.state(), to)) {
    return Status::FailedPrecondition(r.Name() + ": transition " + v1::BlockState_Name(r.state()) +
                                      " -> " + v1::BlockState_Name(to) + " is not allowed");
  }
  r.meta.set_state(to);
  SyncEviction(r);
  return Status::OK();
}

void BlockManager::SyncEviction(Record& r) {
  bool evictable = r.state() == v1::BLOCK_COMMITTED && !r.pinned() && !r.stale && r.refs <= 1;
  if (evictable) {
    eviction_->Insert({r.id, r.tier->name(), r.meta.tenant(), r.meta.workflow_id(),
                       r.meta.context_id(), r.meta.bytes()});
  } else {
    eviction_->Remove(r.id);
  }
}

BlockManager::Record& BlockManager::NewRecord(const v1::KvBlockMeta& meta, Tier* tier,
                                              const Extent& extent) {
  auto rec = std::make_unique<Record>();
  rec->id = BlockId{next_block_++};
  rec->meta = meta;
  rec->meta.set_block_id(rec->id.value);
  rec->meta.set_tier(tier->kind());
  rec->meta.set_state(v1::BLOCK_FREE);
  rec->tier = tier;
  rec->extent = extent;
  Record& r = *rec;
  blocks_.emplace(r.id, std::move(rec));
  (void)Transition(r, v1::BLOCK_ALLOCATED);
  return r;
}

// --- allocation and eviction -------------------------------------------------------------

Result<Extent> BlockManager::AllocateExtent(Tier* t, const std::string& tenant, uint64_t bytes) {
  auto extent = t->Allocate(tenant, bytes);
  if (!extent.ok() && extent.status().IsResourceExhausted()) {
    // Free the tenant's own blocks when its quota is the limit, anyone's otherwise.
    uint64_t quota = t->tenant_quota(tenant);
    bool quota_bound = quota != 0 && t->tenant_used_bytes(tenant) + bytes > quota;
    Status reclaimed = Reclaim(t->name(), quota_bound ? tenant : "", bytes);
    if (!reclaimed.ok()) return extent.status();
    extent = t->Allocate(tenant, bytes);
  }
  if (extent.ok() && options_.reclaim_on_high_watermark && t->AboveHighWatermark()) {
    (void)Reclaim(t->name(), "", 0);  // best effort, down to the low watermark
  }
  return extent;
}

Status BlockManager::Reclaim(const std::string& tier_name, const std::string& tenant,
                             uint64_t bytes) {
  Tier* t = tier(tier_name);
  if (t == nullptr) return Status::NotFound("block manager: no tier '" + tier_name + "'");
  auto missing = [&]() -> uint64_t {
    if (bytes == 0) return t->BytesAboveLowWatermark();
    uint64_t charge = t->options().slot_bytes ? std::max(bytes, t->options().slot_bytes) : bytes;
    uint64_t free = t->capacity_bytes() - std::min(t->capacity_bytes(), t->used_bytes());
    if (!tenant.empty() && t->tenant_quota(tenant) != 0) {
      uint64_t q = t->tenant_quota(tenant), u = t->tenant_used_bytes(tenant);
      free = std::min(free, q > u ? q - u : 0);
    }
    return charge > free ? charge - free : 0;
  };
  uint64_t need = missing();
  if (need == 0) return Status::OK();
  for (BlockId victim : eviction_->PickVictims(tier_name, tenant, need)) {
    (void)Evict(victim);
  }
  if (missing() > 0) {
    return Status::ResourceExhausted("block manager: tier " + tier_name +
                                     " cannot free enough evictable blocks" +
                                     (tenant.empty() ? "" : " of tenant '" + tenant + "'"));
  }
  return Status::OK();
}

Result<BlockId> BlockManager::Allocate(const BlockSpec& spec, const std::string& tier_name) {
  Tier* t = tier(tier_name);
  if (t == nullptr) return Status::NotFound("block manager: no tier '" + tier_name + "'");
  if (spec.tenant.empty()) return Status::InvalidArgument("block spec: empty tenant");
  if (spec.prefix_hash == 0 && spec.context_id.empty()) {
    return Status::InvalidArgument("block spec: a private block needs a context_id");
  }
  if (spec.prefix_hash != 0 && prefixes_.count({spec.tenant, spec.prefix_hash})) {
    return Status::AlreadyExists("block manager: prefix block " + HexId(spec.prefix_hash) +
                                 " of tenant '" + spec.tenant + "' exists (use FindPrefix)");
  }
  uint64_t bytes = spec.bytes ? spec.bytes : layout_.bytes_per_block();
  SY_ASSIGN_OR_RETURN(Extent extent, AllocateExtent(t, spec.tenant, bytes));
  v1::KvBlockMeta meta;
  meta.set_tenant(spec.tenant);
  meta.set_workflow_id(spec.workflow_id);
  meta.set_context_id(spec.context_id);
  meta.set_index(spec.index);
  meta.set_prefix_hash(spec.prefix_hash);
  meta.set_num_tokens(spec.num_tokens);
  meta.set_bytes(bytes);
  meta.set_model_epoch(options_.model_epoch);
  uint64_t gen = 1;
  if (spec.prefix_hash == 0) {
    auto it = latest_generation_.find({spec.context_id, spec.index});
    if (it != latest_generation_.end()) gen = it->second;  // a new copy of the latest
  }
  meta.set_generation(gen);
  Record& r = NewRecord(meta, t, extent);
  if (spec.prefix_hash != 0) prefixes_[{spec.tenant, spec.prefix_hash}] = r.id;
  return r.id;
}

Status BlockManager::Evict(BlockId id) {
  Record* r = Find(id);
  if (r == nullptr) return Status::NotFound("block manager: no block " + std::to_string(id.value));
  if (r->pinned()) {
    return Status::FailedPrecondition(r->Name() + ": pinned by " + std::to_string(r->readers) +
                                      " reader(s) and " + std::to_string(r->move_pins) +
                                      " move(s)");
  }
  if (r->refs > 1) {
    return Status::FailedPrecondition(r->Name() + ": shared by " + std::to_string(r->refs) +
                                      " users; Release() frees it with the last one");
  }
  SY_RETURN_IF_ERROR(Transition(*r, v1::BLOCK_EVICTING));
  FreeRecord(id);
  return Status::OK();
}

void BlockManager::FreeRecord(BlockId id) {
  auto it = blocks_.find(id);
  if (it == blocks_.end()) return;
  Record& r = *it->second;
  if (r.state() != v1::BLOCK_EVICTING) r.meta.set_state(v1::BLOCK_EVICTING);
  eviction_->Remove(id);
  auto p = prefixes_.find({r.meta.tenant(), r.meta.prefix_hash()});
  if (p != prefixes_.end() && p->second == id) prefixes_.erase(p);
  (void)r.tier->Free(r.extent);
  blocks_.erase(it);  // EVICTING -> FREE
}

void BlockManager::Invalidate(Record& r) {
  r.stale = true;
  auto p = prefixes_.find({r.meta.tenant(), r.meta.prefix_hash()});
  if (p != prefixes_.end() && p->second == r.id) prefixes_.erase(p);
  if (r.state() != v1::BLOCK_EVICTING) (void)Transition(r, v1::BLOCK_EVICTING);
  MaybeFreeStale(r);
}

void BlockManager::MaybeFreeStale(Record& r) {
  SyncEviction(r);
  if (r.stale && !r.pinned()) FreeRecord(r.id);
}

void BlockManager::Unpin(BlockId id) {
  Record* r = Find(id);
  if (r == nullptr) return;
  if (r->readers > 0) --r->readers;
  MaybeFreeStale(*r);
}

// --- local writes ------------------------------------------------------------------------

Status BlockManager::BeginWrite(BlockId id) {
  Record* r = Find(id);
  if (r == nullptr) return Status::NotFound("block manager: no block " + std::to_string(id.value));
  if (r->state() != v1::BLOCK_ALLOCATED) {
    return Status::FailedPrecondition(r->Name() + ": BeginWrite needs ALLOCATED, is " +
                                      v1::BlockState_Name(r->state()) +
                                      " (use Rewrite for a committed block)");
  }
  return Transition(*r, v1::BLOCK_WRITING);
}

Result<std::span<std::byte>> BlockManager::WritableBytes(BlockId id) {
  Record* r = Find(id);
  if (r == nullptr) return Status::NotFound("block manager: no block " + std::to_string(id.value));
  if (r->state() != v1::BLOCK_WRITING) {
    return Status::FailedPrecondition(r->Name() + ": not WRITING (" +
                                      v1::BlockState_Name(r->state()) + ")");
  }
  void* p = r->tier->Data(r->extent);
  if (p == nullptr || r->tier->capabilities().device_memory) {
    return Status::NotSupported(r->Name() + ": tier " + r->tier->name() +
                                " has no host-addressable bytes; use WriteBytes");
  }
  r->written_checksum.reset();  // the caller writes them: hashed at FinishWrite
  return std::span<std::byte>(static_cast<std::byte*>(p), r->meta.bytes());
}

Status BlockManager::WriteBytes(BlockId id, const void* src, uint64_t bytes) {
  Record* r = Find(id);
  if (r == nullptr) return Status::NotFound("block manager: no block " + std::to_string(id.value));
  if (r->state() != v1::BLOCK_WRITING) {
    return Status::FailedPrecondition(r->Name() + ": not WRITING (" +
                                      v1::BlockState_Name(r->state()) + ")");
  }
  if (bytes != r->meta.bytes()) {
    return Status::InvalidArgument(r->Name() + ": write of " + std::to_string(bytes) +
                                   " B into a " + std::to_string(r->meta.bytes()) + " B block");
  }
  BlockWrite w{r->extent, src, bytes};
  SY_ASSIGN_OR_RETURN(r->written_checksum, r->tier->WriteChecksummed(w));
  return Status::OK();
}

Status BlockManager::WriteBytesMany(std::span<const BlockId> ids, std::span<const void* const> srcs,
                                    WorkerPool* pool) {
  if (ids.size() != srcs.size())
    return Status::InvalidArgument("block manager: " + std::to_string(ids.size()) + " blocks but " +
                                   std::to_string(srcs.size()) + " sources");
  std::vector<Record*> recs(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    Record* r = Find(ids[i]);
    if (r == nullptr)
      return Status::NotFound("block manager: no block " + std::to_string(ids[i].value));
    if (r->state() != v1::BLOCK_WRITING)
      return Status::FailedPrecondition(r->Name() + ": not WRITING (" +
                                        v1::BlockState_Name(r->state()) + ")");
    recs[i] = r;
  }
  std::vector<Result<std::optional<uint64_t>>> out(ids.size(), std::optional<uint64_t>());
  ParallelFor(pool, ids.size(), [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i)
      out[i] = recs[i]->tier->WriteChecksummed(
          BlockWrite{recs[i]->extent, srcs[i], recs[i]->meta.bytes()});
  });
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!out[i].ok()) return out[i].status();
    recs[i]->written_checksum = *out[i];
  }
  return Status::OK();
}

Result<uint64_t> BlockManager::ChecksumOf(const Record& r) const {
  void* p = r.tier->Data(r.extent);
  if (p != nullptr && !r.tier->capabilities().device_memory) {
    return BlockChecksum(p, r.meta.bytes());
  }
  std::vector<char> buf(r.meta.bytes());
  BlockRead read{r.extent, buf.data(), buf.size()};
  SY_RETURN_IF_ERROR(r.tier->Read(std::span<const BlockRead>(&read, 1)));
  return BlockChecksum(buf.data(), buf.size());
}

Status BlockManager::AcceptWrite(BlockId id, uint64_t checksum) {
  Record* r = Find(id);
  if (r == nullptr) return Status::NotFound("block manager: no block " + std::to_string(id.value));
  if (r->state() != v1::BLOCK_WRITING)
    return Status::FailedPrecondition(r->Name() + ": AcceptWrite needs WRITING, is " +
                                      v1::BlockState_Name(r->state()));
  if (!r->tier->capabilities().verifies_writes)
    return Status::FailedPrecondition(r->Name() + ": tier " + r->tier->name() +
                                      " does not verify writes; a write made elsewhere must be "
                                      "read back (FinishWrite)");
  r->written_checksum = checksum;
  return Status::OK();
}

Status BlockManager::FinishWrite(BlockId id, std::optional<uint64_t> expected) {
  Record* r = Find(id);
  if (r == nullptr) return Status::NotFound("block manager: no block " + std::to_string(id.value));
  if (r->state() != v1::BLOCK_WRITING) {
    return Status::FailedPrecondition(r->Name() + ": FinishWrite needs WRITING, is " +
                                      v1::BlockState_Name(r->state()));
  }
  // The stored bytes' checksum: hashed as WriteBytes copied them, or read back now.
  uint64_t sum = 0;
  if (r->written_checksum) {
    sum = *r->written_checksum;
  } else {
    SY_ASSIGN_OR_RETURN(sum, ChecksumOf(*r));
  }
  r->written_checksum.reset();
  if (expected && *expected != sum) {
    SY_RETURN_IF_ERROR(Transition(*r, v1::BLOCK_ALLOCATED));
    return Status::DataLoss(r->Name() + ": checksum " + HexId(sum) + " != expected " +
                                HexId(*expected) + "; bytes discarded",
                            ErrorScope::kBlock);
  }
  r->meta.set_checksum(sum);
  return Transition(*r, v1::BLOCK_VALIDATED);
}

Status BlockManager::Commit(BlockId id) {
  Record* r = Find(id);
  if (r == nullptr) return Status::NotFound("block manager: no block " + std::to_string(id.value));
  if (r->state() != v1::BLOCK_VALIDATED) {
    return Status::FailedPrecondition(r->Name() + ": Commit needs VALIDATED, is " +
                                      v1::BlockState_Name(r->state()));
  }
  if (r->stale || r->meta.model_epoch() != options_.model_epoch) {
    Status why = Status::FailedPrecondition(
        r->Name() + ": model_epoch " + std::to_string(r->meta.model_epoch()) +
        " is not the current " + std::to_string(options_.model_epoch) + "; not committed");
    Invalidate(*r);
    return why;
  }
  if (r->tier->capabilities().persistent) {
    v1::KvBlockMeta persisted = r->meta;
    persisted.set_state(v1::BLOCK_COMMITTED);
    SY_RETURN_IF_ERROR(r->tier->PersistMeta(r->extent, persisted));
  }
  SY_RETURN_IF_ERROR(Transition(*r, v1::BLOCK_COMMITTED));
  if (r->meta.prefix_hash() == 0) {
    auto& latest = latest_generation_[{r->meta.context_id(), r->meta.index()}];
    latest = std::max(latest, r->meta.generation());
  }
  return Status::OK();
}

Result<uint64_t> BlockManager::Rewrite(BlockId id) {
  Record* r = Find(id);
  if (r == nullptr) return Status::NotFound("block manager: no block " + std::to_string(id.value));
  if (r->meta.prefix_hash() != 0) {
    return Status::FailedPrecondition(r->Name() +
                                      ": a content-addressed prefix block is "
                                      "immutable; allocate a private block");
  }
  if (r->pinned()) return Status::FailedPrecondition(r->Name() + ": pinned; cannot rewrite");
  SY_RETURN_IF_ERROR(Transition(*r, v1::BLOCK_WRITING));
  auto& latest = latest_generation_[{r->meta.context_id(), r->meta.index()}];
  latest = std::max(latest, r->meta.generation()) + 1;
  r->meta.set_generation(latest);
  r->meta.set_checksum(0);
  InvalidateOlderGenerations(*r);
  return latest;
}

void BlockManager::InvalidateOlderGenerations(const Record& r) {
  std::vector<BlockId> old;
  for (const auto& [id, other] : blocks_) {
    if (id != r.id && other->meta.prefix_hash() == 0 &&
        other->meta.context_id() == r.meta.context_id() && other->meta.index() == r.meta.index() &&
        other->meta.generation() < r.meta.generation()) {
      old.push_back(id);
    }
  }
  for (BlockId id : old) {
    if (Record* o = Find(id)) Invalidate(*o);
  }
}

// --- reads and sharing -------------------------------------------------------------------

Status BlockManager::CheckReadable(const Record& r, const ReadRequest& q) const {
  if (r.stale || (r.state() != v1::BLOCK_COMMITTED && r.state() != v1::BLOCK_DEMOTING)) {
    return Status::FailedPrecondition(r.Name() + ": not committed (" +
                                      v1::BlockState_Name(r.state()) +
                                      (r.stale ? ", invalidated" : "") + ")");
  }
  if (r.meta.prefix_hash() != 0) {
    if (q.tenant != r.meta.tenant()) {
      return Status::PermissionDenied(r.Name() + ": prefix block of another tenant");
    }
  } else if (q.workflow_id != r.meta.workflow_id() || q.context_id != r.meta.context_id()) {
    return Status::PermissionDenied(r.Name() + ": owner mismatch (block of workflow '" +
                                    r.meta.workflow_id() + "', context '" + r.meta.context_id() +
                                    "')");
  }
  if (q.model_epoch != r.meta.model_epoch() || r.meta.model_epoch() != options_.model_epoch) {
    return Status::FailedPrecondition(r.Name() + ": model_epoch mismatch (reader " +
                                      std::to_string(q.model_epoch) + ", block " +
                                      std::to_string(r.meta.model_epoch()) + ", current " +
                                      std::to_string(options_.model_epoch) + ")");
  }
  if (q.generation != r.meta.generation()) {
    return Status::FailedPrecondition(r.Name() + ": generation mismatch (reader " +
                                      std::to_string(q.generation) + ", block " +
                                      std::to_string(r.meta.generation()) + ")");
  }
  return Status::OK();
}

Result<ReadLease> BlockManager::Read(BlockId id, const ReadRequest& request) {
  Record* r = Find(id);
  if (r == nullptr) return Status::NotFound("block manager: no block " + std::to_string(id.value));
  SY_RETURN_IF_ERROR(CheckReadable(*r, request));
  ++r->readers;
  eviction_->Touch(id);
  SyncEviction(*r);
  ReadLease lease;
  lease.manager_ = this;
  lease.id_ = id;
  lease.data_ = r->tier->Data(r->extent);
  lease.bytes_ = r->meta.bytes();
  return lease;
}

Result<BlockId> BlockManager::FindPrefix(const std::string& tenant, uint64_t prefix_hash) {
  auto it = prefixes_.find({tenant, prefix_hash});
  Record* r = it == prefixes_.end() ? nullptr : Find(it->second);
  if (r == nullptr || r->stale || r->meta.model_epoch() != options_.model_epoch ||
      (r->state() != v1::BLOCK_COMMITTED && r->state() != v1::BLOCK_DEMOTING)) {
    return Status::NotFound("block manager: no committed prefix block " + HexId(prefix_hash) +
                            " for tenant '" + tenant + "'");
  }
  ++r->refs;
  SyncEviction(*r);
  return r->id;
}

Status BlockManager::Release(BlockId id) {
  Record* r = Find(id);
  if (r == nullptr) return Status::NotFound("block manager: no block " + std::to_string(id.value));
  if (--r->refs > 0) {
    SyncEviction(*r);
    return Status::OK();
  }
  Invalidate(*r);  // no users left: freed now, or when the last pin goes
  return Status::OK();
}

// --- epochs and introspection ------------------------------------------------------------

uint64_t BlockManager::BumpModelEpoch() {
  const uint64_t old_epoch = options_.model_epoch++;
  std::vector<BlockId> old;
  for (const auto& [id, r] : blocks_) {
    if (r->meta.model_epoch() <= old_epoch) old.push_back(id);
  }
  for (BlockId id : old) {
    if (Record* r = Find(id)) Invalidate(*r);
  }
  LogKeys keys;
  keys.model_epoch = options_.model_epoch;
  keys.With("invalidated", std::to_string(old.size()));
  Log(LogLevel::kInfo, "kv_tiers: model epoch bumped; old blocks invalidated", keys);
  return options_.model_epoch;
}

Result<v1::KvBlockMeta> BlockManager::Meta(BlockId id) const {
  Record* r = Find(id);
  if (r == nullptr) return Status::NotFound("block manager: no block " + std::to_string(id.value));
  return r->meta;
}

Result<Extent> BlockManager::ExtentOf(BlockId id) const {
  Record* r = Find(id);
  if (r == nullptr) return Status::NotFound("block manager: no block " + std::to_string(id.value));
  return r->extent;
}

Result<v1::BlockState> BlockManager::State(BlockId id) const {
  Record* r = Find(id);
  if (r != nullptr) return r->state();
  if (id.value != 0 && id.value < next_block_) return v1::BLOCK_FREE;
  return Status::NotFound("block manager: block " + std::to_string(id.value) + " never existed");
}

std::vector<BlockId> BlockManager::FindBlocks(const std::string& context_id, uint32_t index) const {
  std::vector<BlockId> out;
  for (const auto& [id, r] : blocks_) {
    if (r->meta.context_id() == context_id && r->meta.index() == index) out.push_back(id);
  }
  return out;
}

}  // namespace switchyard::kv_tiers
