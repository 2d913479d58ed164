#include "kv_store/kv_store_server.h"

#include <algorithm>
#include <random>

#include "kv_store/internal/kv_store_server_impl.h"

namespace switchyard::kv_store {
using internal::BufferPool;

uint64_t RandomEpoch() {
  std::random_device rd;
  uint64_t v = 0;
  while (v == 0) v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return v;
}

namespace {

ReceiverCreditLimits CreditLimitsOf(const KvStoreServerOptions& o) {
  return {std::min(o.max_inflight_bytes, o.total_inflight_bytes), o.total_inflight_bytes,
          o.max_inflight_transfers};
}

}  // namespace

KvStoreServer::KvStoreServer(const KvStoreServerOptions& options, uint64_t epoch)
    : options_(options), store_(options.capacity_bytes, epoch), impl_(std::make_unique<Impl>()) {
  impl_->credit = std::make_unique<ReceiverCredit>(CreditLimitsOf(options));
  // Keep up to the credit granted to one sender: what may be in flight at once.
  impl_->pool = std::make_shared<BufferPool>(options.max_inflight_bytes);
}

KvStoreServer::~KvStoreServer() {
  // Handles first (they cancel and wait), then the transport.
  impl_.reset();
  transport_.reset();
}

Result<std::unique_ptr<KvStoreServer>> KvStoreServer::Start(const KvStoreServerOptions& options) {
  if (options.capacity_bytes == 0) return Status::InvalidArgument("worker: capacity must be > 0");
  if (options.max_inflight_bytes == 0 || options.total_inflight_bytes == 0 ||
      options.max_inflight_transfers == 0) {
    return Status::InvalidArgument(
        "worker: credit per sender, credit total and transfers per sender must be > 0");
  }
  std::unique_ptr<KvStoreServer> w(new KvStoreServer(options, RandomEpoch()));
  SY_ASSIGN_OR_RETURN(w->transport_, transport::TransportRegistry::Global().Create(
                                         options.transport, options.transport_config));
  SY_ASSIGN_OR_RETURN(w->address_, w->transport_->Listen(options.listen));
  if (!w->options_.verify_offload_bytes) {
    w->options_.verify_offload_bytes =
        w->transport_->usesSocketStreams() ? kVerifyOffloadSockets : kVerifyOffloadNoSockets;
  }
  return w;
}

KvStoreServerStats KvStoreServer::stats() const {
  ReceiverCreditState c = impl_->credit->State();
  MutexLock lock(&impl_->stats_mu);
  KvStoreServerStats s = impl_->stats;
  s.puts_refused_credit = c.refused;
  s.credit_in_use_bytes = c.in_use_bytes;
  s.max_credit_in_use_bytes = c.max_in_use_bytes;
  s.max_sender_credit_in_use_bytes = c.max_sender_in_use_bytes;
  s.max_sender_credit_in_use_transfers = c.max_sender_in_use_transfers;
  return s;
}

const ReceiverCreditLimits& KvStoreServer::credit_limits() const { return impl_->credit->limits(); }

RejectReason KvStoreServer::ReadCommitted(const GetRequest& g,
                                          std::vector<StoredBlock>* out) const {
  MutexLock lock(&impl_->store_mu);
  return store_.Lookup(g, out);
}

RejectReason KvStoreServer::CommitLocal(const BlockHeader& h, SharedBuffer data) {
  const uint64_t received = data ? data->size : 0;
  const RejectReason r = CheckLengthAndChecksum(h, received, data ? data->data.get() : nullptr);
  return CommitLocalChecked(h, std::move(data), r);
}

RejectReason KvStoreServer::CommitLocalHashing(BlockHeader* h, SharedBuffer data) {
  const RejectReason r = data ? CheckLength(*h, data->size) : RejectReason::kShortLength;
  if (r != RejectReason::kNone) return CommitLocalChecked(*h, std::move(data), r);
  const auto* p = static_cast<const uint8_t*>(data->data.get());
  for (BlockRef& b : h->blocks) {
    b.checksum = ChecksumOf(p, b.bytes);
    p += b.bytes;
  }
  return CommitLocalChecked(*h, std::move(data), RejectReason::kNone);
}

RejectReason KvStoreServer::CommitLocalChecked(const BlockHeader& h, SharedBuffer data,
                                               RejectReason r) {
  {
    MutexLock lock(&impl_->store_mu);
    if (r == RejectReason::kNone) r = store_.CheckIdentity(h);
    if (r == RejectReason::kNone && !store_.Reserve(h.length)) r = RejectReason::kCapacity;
    bool validated = false;
    if (r == RejectReason::kNone) r = store_.CommitChecked(h, std::move(data), r, &validated);
  }
  MutexLock stats(&impl_->stats_mu);
  ++(r == RejectReason::kNone ? impl_->stats.puts_committed : impl_->stats.puts_rejected);
  return r;
}

}  // namespace switchyard::kv_store
