#include "kv_tiers/remote/kv_store_tier.h"

#include <cstring>
#include <vector>

#include "base/mutex.h"

namespace switchyard::kv_tiers::remote {

KvStoreTier::KvStoreTier(const TierOptions& tier_options,
                         std::unique_ptr<kv_store::KvStoreClient> client,
                         KvStoreTierOptions options)
    : PeerTier(tier_options),
      name_("peer:" + (client ? client->address() : "detached-" + options.context)),
      client_(std::move(client)),
      options_(std::move(options)) {}

std::unique_ptr<KvStoreTier> KvStoreTier::Detached(const TierOptions& tier_options,
                                                   KvStoreTierOptions options) {
  return std::unique_ptr<KvStoreTier>(new KvStoreTier(tier_options, nullptr, std::move(options)));
}

Status KvStoreTier::NoWorker() const {
  return Status::Unavailable("peer tier " + name_ + ": no worker connected yet",
                             ErrorScope::kRemote);
}

std::shared_ptr<kv_store::KvStoreClient> KvStoreTier::Client() const {
  MutexLock lock(&mu_);
  return client_;
}

uint64_t KvStoreTier::incarnation() const {
  MutexLock lock(&mu_);
  return incarnation_;
}

Status KvStoreTier::Reconnect(const std::string& address,
                              const kv_store::KvStoreClientOptions& client) {
  SY_ASSIGN_OR_RETURN(std::unique_ptr<kv_store::KvStoreClient> c,
                      kv_store::KvStoreClient::Connect(address, client));
  if (capacity_bytes() > c->hello().capacity_bytes)
    return Status::InvalidArgument("peer tier: capacity " + std::to_string(capacity_bytes()) +
                                   " B exceeds the worker's " +
                                   std::to_string(c->hello().capacity_bytes) + " B at " + address);
  MutexLock lock(&mu_);
  client_ = std::move(c);
  ++incarnation_;
  return Status::OK();
}

Result<std::unique_ptr<KvStoreTier>> KvStoreTier::Connect(
    const std::string& address, const TierOptions& tier_options,
    const kv_store::KvStoreClientOptions& client, KvStoreTierOptions options) {
  if (tier_options.capacity_bytes == 0) {
    return Status::InvalidArgument("peer tier: capacity_bytes must be > 0");
  }
  SY_ASSIGN_OR_RETURN(auto c, kv_store::KvStoreClient::Connect(address, client));
  if (tier_options.capacity_bytes > c->hello().capacity_bytes) {
    return Status::InvalidArgument("peer tier: capacity " +
                                   std::to_string(tier_options.capacity_bytes) +
                                   " B exceeds the worker's " +
                                   std::to_string(c->hello().capacity_bytes) + " B at " + address);
  }
  return std::unique_ptr<KvStoreTier>(
      new KvStoreTier(tier_options, std::move(c), std::move(options)));
}

TierCapabilities KvStoreTier::capabilities() const {
  TierCapabilities c;
  c.remote = true;
  c.verifies_writes = true;  // the worker checks each block's checksum before it commits
  return c;
}

Result<Extent> KvStoreTier::Allocate(const std::string& tenant, uint64_t bytes) {
  if (bytes == 0) return Status::InvalidArgument("peer tier: zero-byte allocation");
  if (tenant.empty()) return Status::InvalidArgument("peer tier: empty tenant");
  SY_RETURN_IF_ERROR(Charge(tenant, bytes));
  MutexLock lock(&mu_);
  uint64_t slot = next_slot_++;
  slots_[slot] = Slot{tenant, bytes, 0, {}, incarnation_};
  return Extent{slot, bytes};
}

Result<KvStoreTier::Slot> KvStoreTier::Lookup(const Extent& extent, uint64_t bytes) const {
  MutexLock lock(&mu_);
  auto it = slots_.find(extent.slot);
  if (it == slots_.end()) {
    return Status::NotFound("peer tier: slot " + std::to_string(extent.slot) + " is not allocated");
  }
  if (bytes > it->second.bytes) {
    return Status::InvalidArgument("peer tier: " + std::to_string(bytes) + " B exceed slot " +
                                   std::to_string(extent.slot) + " of " +
                                   std::to_string(it->second.bytes) + " B");
  }
  return it->second;
}

Status KvStoreTier::Free(const Extent& extent) {
  SY_ASSIGN_OR_RETURN(Slot slot, Lookup(extent, 0));
  {
    MutexLock lock(&mu_);
    slots_.erase(extent.slot);
  }
  Uncharge(slot.tenant, slot.bytes);
  std::shared_ptr<kv_store::KvStoreClient> client;
  {
    MutexLock lock(&mu_);
    // Nothing committed there, or only at an earlier incarnation: nothing to drop.
    if (slot.generation == 0 || slot.incarnation != incarnation_) return Status::OK();
    client = client_;
  }
  if (!client) return Status::OK();  // nothing can be stored without a worker
  return client->Free(slot.tenant, options_.context, {extent.slot}, options_.transfer)
      .Annotate("peer tier: freeing slot " + std::to_string(extent.slot));
}

Status KvStoreTier::Write(std::span<const BlockWrite> writes) {
  for (const auto& w : writes) {
    SY_ASSIGN_OR_RETURN(Slot slot, Lookup(w.extent, w.bytes));
    std::shared_ptr<kv_store::KvStoreClient> client;
    uint64_t incarnation;
    {
      MutexLock lock(&mu_);
      client = client_;
      incarnation = incarnation_;
    }
    if (!client) return NoWorker();
    kv_store::PutRequest req;
    req.workflow_id = slot.tenant;
    req.context_id = options_.context;
    req.model_epoch = client->model_epoch();
    req.generation = slot.generation + 1;  // a rewrite supersedes the committed copy
    req.blocks.push_back({w.extent.slot, w.src, w.bytes, w.checksum});
    const std::string what = "peer tier: put of slot " + std::to_string(w.extent.slot);
    puts_.fetch_add(1, std::memory_order_relaxed);
    auto ev = client->Put(req, options_.transfer);
    if (!ev.ok()) return ev.status().Annotate(what);
    {
      MutexLock lock(&mu_);
      auto it = slots_.find(w.extent.slot);
      if (it != slots_.end()) {
        it->second.last = *ev;
        if (ev->committed) {
          it->second.generation = req.generation;
          it->second.incarnation = incarnation;
          it->second.bytes = std::max(it->second.bytes, w.bytes);
        }
      }
    }
    if (!ev->committed) return kv_store::RejectStatus(ev->reason, what, ev->message);
  }
  return Status::OK();
}

Status KvStoreTier::Read(std::span<const BlockRead> reads) {
  for (const auto& r : reads) {
    SY_ASSIGN_OR_RETURN(Slot slot, Lookup(r.extent, r.bytes));
    const std::string what = "peer tier: get of slot " + std::to_string(r.extent.slot);
    if (slot.generation == 0) {
      return Status::DataLoss(what + ": no bytes stored", ErrorScope::kBlock);
    }
    std::shared_ptr<kv_store::KvStoreClient> client;
    {
      MutexLock lock(&mu_);
      if (slot.incarnation != incarnation_)
        return Status::DataLoss(what + ": stored at an earlier incarnation of the worker",
                                ErrorScope::kBlock);
      client = client_;
    }
    if (!client) return NoWorker();
    kv_store::GetSpec spec;
    spec.workflow_id = slot.tenant;
    spec.context_id = options_.context;
    spec.model_epoch = client->model_epoch();
    spec.generation = slot.generation;
    spec.block_ids = {r.extent.slot};
    // The worker sends the whole block; a shorter read lands in a staging buffer.
    std::vector<uint8_t> staging;
    void* dst = r.dst;
    if (r.bytes < slot.bytes) {
      staging.resize(slot.bytes);
      dst = staging.data();
    }
    spec.dst = {{dst, slot.bytes}};
    gets_.fetch_add(1, std::memory_order_relaxed);
    auto ev = client->Get(spec, options_.transfer);
    if (!ev.ok()) return ev.status().Annotate(what);
    {
      MutexLock lock(&mu_);
      auto it = slots_.find(r.extent.slot);
      if (it != slots_.end()) it->second.last = *ev;
    }
    if (ev->rejected || !ev->validated)
      return kv_store::RejectStatus(ev->reason, what, ev->message);
    if (!staging.empty()) std::memcpy(r.dst, staging.data(), r.bytes);
  }
  return Status::OK();
}

Result<KvStoreTier::DirectEnd> KvStoreTier::DirectSource(const Extent& extent,
                                                         uint64_t bytes) const {
  return DirectEndOf(extent, bytes, /*source=*/true);
}

Result<KvStoreTier::DirectEnd> KvStoreTier::DirectDestination(const Extent& extent,
                                                              uint64_t bytes) const {
  return DirectEndOf(extent, bytes, /*source=*/false);
}

Result<KvStoreTier::DirectEnd> KvStoreTier::DirectEndOf(const Extent& extent, uint64_t bytes,
                                                        bool source) const {
  SY_ASSIGN_OR_RETURN(Slot slot, Lookup(extent, bytes));
  std::shared_ptr<kv_store::KvStoreClient> client;
  DirectEnd end;
  {
    MutexLock lock(&mu_);
    client = client_;
    end.incarnation = incarnation_;
  }
  if (!client) return NoWorker();
  if (source) {
    const std::string what = "peer tier: slot " + std::to_string(extent.slot) + " as a source";
    if (slot.generation == 0)
      return Status::DataLoss(what + ": no bytes stored", ErrorScope::kBlock);
    if (slot.incarnation != end.incarnation)
      return Status::DataLoss(what + ": stored at an earlier incarnation of the worker",
                              ErrorScope::kBlock);
  }
  end.block_id = extent.slot;
  end.generation = source ? slot.generation : slot.generation + 1;
  end.bytes = bytes;
  end.store.address = client->address();
  end.store.transport = client->options().transport;
  end.store.transport_config = client->options().transport_config;
  end.store.communicator_epoch = client->communicator_epoch();
  end.store.model_epoch = client->model_epoch();
  end.store.workflow_id = slot.tenant;
  end.store.context_id = options_.context;
  return end;
}

void KvStoreTier::RecordDirectWrite(const Extent& extent, const DirectEnd& written,
                                    const kv_store::TransferEvents& events) {
  MutexLock lock(&mu_);
  auto it = slots_.find(extent.slot);
  if (it == slots_.end() || written.incarnation != incarnation_) return;
  it->second.last = events;
  it->second.generation = written.generation;
  it->second.incarnation = written.incarnation;
  it->second.bytes = std::max(it->second.bytes, written.bytes);
}

Result<kv_store::TransferEvents> KvStoreTier::LastEvents(uint64_t slot) const {
  MutexLock lock(&mu_);
  auto it = slots_.find(slot);
  if (it == slots_.end()) {
    return Status::NotFound("peer tier: slot " + std::to_string(slot) + " is not allocated");
  }
  return it->second.last;
}

}  // namespace switchyard::kv_tiers::remote
